"""The runtime: what runs for the operator's whole life — kopf (``kopf_wiring``, the only module
that imports it), the ``Controller`` that builds every part and runs the workers and timers, the
Lease, ``/healthz`` and ``/metrics`` (with their guard), and the bounded stop. It may import every
other room; no room imports it."""
