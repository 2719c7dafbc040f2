"""The Kubernetes resources the simulated kubelet and node agents read and write."""

from __future__ import annotations

from nemotron_sim.kubeapi.resources import ResourceKey

NODES = ResourceKey("", "v1", "nodes")
PODS = ResourceKey("", "v1", "pods")
EVENTS = ResourceKey("", "v1", "events")
DEPLOYMENTS = ResourceKey("apps", "v1", "deployments")
REPLICASETS = ResourceKey("apps", "v1", "replicasets")
SECRETS = ResourceKey("", "v1", "secrets")
CONFIGMAPS = ResourceKey("", "v1", "configmaps")
SERVICEACCOUNTS = ResourceKey("", "v1", "serviceaccounts")
RESOURCE_CLAIMS = ResourceKey("resource.k8s.io", "v1", "resourceclaims")
RESOURCE_SLICES = ResourceKey("resource.k8s.io", "v1", "resourceslices")
