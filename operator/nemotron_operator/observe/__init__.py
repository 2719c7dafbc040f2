"""Observing the serving pods, pure: vLLM's /metrics text → per-pod samples → throughput
figures, the change rule for status, and the plan checked against vLLM's own cache allocation.

No I/O and no clock: the controller scrapes (``controller/pods/scraper.py``), passes the text and
the time in, and writes what these functions return (docs/observability.md). The autoscaler's rule,
which acts on these figures, is ``nemotron_operator.autoscale``.
"""
