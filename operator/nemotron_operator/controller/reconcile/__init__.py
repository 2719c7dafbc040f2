"""The reconcile: ``Reconciler`` (read → decide → apply → status), applying and pruning the
children (``apply``), the finalizer, the Events of condition changes, the fingerprint of a
reconcile's inputs (``unchanged``) and what one reconcile did (``outcome``). It may import the
watches, the per-pod parts and the pure decisions; writes go through ``kube.writes``."""
