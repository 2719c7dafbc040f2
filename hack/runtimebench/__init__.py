"""The parts of ``hack/bench-runtime.py``: the watcher process it measures, and the workload."""
