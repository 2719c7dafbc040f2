"""The effectful controller: kopf watches, the work queue, the one reconcile, the Lease and the
health/metrics server. ``run_operator(config)`` is what ``nemotron-operator run`` calls."""
