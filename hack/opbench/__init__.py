"""The parts of ``hack/bench-operator.py``: processes, API client, convergence collector, the
floor client, the planner figures and the report. Benchmark code: prints figures, asserts none."""
