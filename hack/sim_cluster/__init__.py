"""The simulated GPU cluster the tests, the demo and the benchmarks run on.

Real: etcd, kube-apiserver, kube-controller-manager and kube-scheduler, built from Kubernetes' Go
modules (:mod:`sim_cluster.controlplane`), and the real neighbours the operator talks to when a
test asks for them — Karpenter, LeaderWorkerSet, Prometheus, KEDA, the endpoint picker with
Envoy, real kubelets with containerd (:mod:`sim_cluster.karpenter`, :mod:`sim_cluster.lws`,
:mod:`sim_cluster.addons`, :mod:`sim_cluster.realnodes`) and tiny real checkpoints for vLLM's CPU
build (:mod:`sim_cluster.checkpoints`) with the launcher the engine's containers run in
(:mod:`sim_cluster.container_root`, :mod:`sim_cluster.real_engine`). Simulated: the core in
:mod:`nemotron_sim` (the GPU nodes, the kubelets, the stand-in vLLM, the fault proxy) and three
add-ons (:mod:`sim_cluster.simulated_addons`: the service proxy, the storage provisioner, the DRA
driver's slices), which :mod:`sim_cluster.kubecluster` composes with the rest
(:mod:`sim_cluster.wiring`; its command line reads ``--nodes`` with :mod:`sim_cluster.node_spec`
and maps images to local programs with :mod:`sim_cluster.programs`), all in the network
namespace of :mod:`sim_cluster.netns`. It is test tooling, not the product: it lives
under ``hack/``, and neither the operator's package nor the simulator imports it.
"""
