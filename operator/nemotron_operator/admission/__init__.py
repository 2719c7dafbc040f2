"""Admission of custom resources as the API server does it: unknown-field rejection, null
pruning, defaulting, OpenAPI v3 schema validation and CEL rules. Used by the tests (to prove every
CRD rule) and by the simulated cluster's API stand-in (so ``kubectl apply`` of a bad object is
refused with the field path)."""

from nemotron_operator.admission.errors import AdmissionError, Cause
from nemotron_operator.admission.validate import unknown_fields, validate_object, version_schema

__all__ = ["AdmissionError", "Cause", "unknown_fields", "validate_object", "version_schema"]
