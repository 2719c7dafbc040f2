"""Pure decisions of the reconcile, no I/O: the desired objects (``desired``: parse, plan,
render), and what holds children back — a rollout (``rollout``), a shared cache's download
(``download``), a Gateway that cannot be applied whole (``gateway``), KEDA (``keda``). No
Kubernetes client, no aiohttp, no kopf (an import-linter contract checks it)."""
