"""Pure observability arithmetic: vLLM's /metrics text → per-pod samples → throughput figures,
the plan checked against vLLM's own cache allocation, and the autoscaler's decision.

No I/O and no clock: the controller scrapes, passes the text and the time in, and writes what
these functions return (docs/observability.md).
"""
