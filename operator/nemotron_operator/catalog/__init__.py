"""Model architectures and GPU products as data, each number with its source."""

from nemotron_operator.catalog.gpus import GPUS, GpuProduct, lookup_gpu
from nemotron_operator.catalog.model_data import MODELS, lookup_model, sibling
from nemotron_operator.catalog.models import ModelEntry, ParameterSplit, model_from_architecture
from nemotron_operator.catalog.params import Dims, VisionTower

__all__ = [
    "GPUS",
    "MODELS",
    "Dims",
    "GpuProduct",
    "ModelEntry",
    "ParameterSplit",
    "VisionTower",
    "lookup_gpu",
    "lookup_model",
    "model_from_architecture",
    "sibling",
]
