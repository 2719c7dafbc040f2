"""CRD generation from the API models."""

from nemotron_operator.crd.definition import CRD_FILE_NAME, CRD_NAME, build_crd, render_crd_yaml

__all__ = ["CRD_FILE_NAME", "CRD_NAME", "build_crd", "render_crd_yaml"]
