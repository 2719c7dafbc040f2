"""A simulated GPU cluster on a real Kubernetes control plane, for tests, the demo and benchmarks.

Real: etcd, kube-apiserver, kube-controller-manager and kube-scheduler, built from Kubernetes' Go
modules (:mod:`nemotron_sim.controlplane`). Simulated: the GPU nodes and their Leases, the kubelet
(containers as local processes), the service proxy, a volume provisioner and a stand-in vLLM. It
all runs in a network namespace of its own; no real GPU is involved.
"""
