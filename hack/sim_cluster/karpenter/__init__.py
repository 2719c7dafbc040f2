"""Karpenter with its kwok cloud provider, run beside the simulated cluster.

Karpenter's scheduler, provisioner, limits, registration and disruption are its own
(``hack/build-karpenter.sh`` builds ``sigs.k8s.io/karpenter/kwok``); its "cloud" creates a Node
object per NodeClaim instead of an instance. The simulator plays the rest of a real node: the
kubelet that makes it Ready, renews its Lease and runs its pods, and GPU Feature Discovery's labels
(``adopt``). The instance types it may launch come from the simulator's GPU table (``catalog``,
from ``nemotron_sim.gpus``).
"""
