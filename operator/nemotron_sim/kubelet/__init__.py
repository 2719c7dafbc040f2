"""The simulated kubelet: runs the pods kube-scheduler binds to the simulated GPU nodes.

Containers run as local processes (``vllm serve`` as the stand-in vLLM of
:mod:`nemotron_sim.vllm`); probes, restarts with back-off, graceful termination, projected
tokens, ConfigMap/Secret/downward-API files and container logs follow the kubelet's rules. It
reads the cluster through a :class:`~nemotron_sim.kubeapi.mirror.Mirror` of kube-apiserver and
writes pod status and Events back through it. Each module keeps its decisions in small functions
over plain dicts (unit-tested without a cluster). A simulation: no images, GPUs or containers.
"""
