"""Per-pod work beside the reconcile, each a ``DeploymentPart``: the scraper of ``/metrics``
(``scraper``), the behavioural check before traffic (``verifier``), LoRA adapters loaded at run
time (``adapters``) and the autoscaler (``autoscaler``). They talk to the serving pods (aiohttp)
and, for the autoscaler, write through ``kube.writes``; they import no watch, no reconcile and
no runtime."""
