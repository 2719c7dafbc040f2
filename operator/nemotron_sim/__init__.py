"""A simulated GPU cluster on loopback for tests and the demo.

API stand-in, GPU nodes, scheduler, kubelet and a stand-in vLLM. A simulation: no real GPU or
Kubernetes API server is involved.
"""
