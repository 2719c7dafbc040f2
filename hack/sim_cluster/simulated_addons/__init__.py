"""The cluster add-ons the simulated cluster simulates rather than runs: what kubeadm installs as
its ``kube-proxy`` add-on (``service_proxy``, ``tcp_proxy``: Service addresses that reach the
ready endpoints), a storage provisioner as kind installs one (``volumes``: the default
StorageClass and its volumes) and the publication half of NVIDIA's DRA driver, which its Helm
chart installs (``resource_slices``: ResourceSlices and the DeviceClass of DRA nodes).

They are add-ons, not the simulator's core (nodes, kubelet, processes, stand-in vLLM, fault
proxy: :mod:`nemotron_sim`); like every add-on, the simulated cluster composes them
(:mod:`sim_cluster.kubecluster`). They use the simulator's watch caches and node objects; the
simulator does not import them (the kubelet's side of DRA, :mod:`nemotron_sim.kubelet.claims`,
names the driver and kinds itself).
"""
