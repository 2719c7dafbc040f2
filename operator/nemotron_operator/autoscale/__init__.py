"""The built-in autoscaler's rule: pure (the time and the remembered state are passed in). The
running operator applies it in ``controller/pods/autoscaler.py`` after each scrape."""

from nemotron_operator.autoscale.decision import (
    TOLERANCE,
    AutoscaleDecision,
    AutoscaleInputs,
    AutoscaleState,
    decide,
)

__all__ = ["TOLERANCE", "AutoscaleDecision", "AutoscaleInputs", "AutoscaleState", "decide"]
