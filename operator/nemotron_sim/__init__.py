"""The simulator: the simulated parts of the test cluster, a witness against the operator.

Simulated: the GPU nodes and their Leases (``agents``), the kubelet (containers as local
processes or in-process stand-ins: ``kubelet``), the service proxy and the volume provisioner,
a stand-in vLLM (``vllm``) and a fault-injecting proxy in front of kube-apiserver
(``faultproxy``), in the network namespace ``sim_cluster.netns`` makes; no real GPU is involved.
The real control plane and the real neighbours they are composed with live in ``sim_cluster``
(hack/sim_cluster), which this package never imports.
"""
