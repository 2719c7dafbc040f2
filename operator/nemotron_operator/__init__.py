"""nemotron-operator: right-sized, validated, observable vLLM serving of NVIDIA Nemotron models."""

__version__ = "0.1.0"
