"""The watches a reconcile reads instead of the API server: the NemotronDeployments kopf
delivers (``deployment_store``), the children and their pods (``child_cache``), the optional
kinds served (``served_kinds``) and the GPU inventory (``inventory``). They may read through
the ``kube`` client; they never write, and import no other room of the controller."""
