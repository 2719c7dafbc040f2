"""The parts of ``hack/bench-sim.py``: the objects it creates and the phases it times. Benchmark
code: prints figures, asserts none."""
