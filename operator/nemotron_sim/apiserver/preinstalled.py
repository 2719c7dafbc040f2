"""CRDs a GPU cluster of this project's users typically has: the Prometheus Operator's monitors
and Karpenter's node pools. Their schemas keep unknown fields (the real ones are large); the
operator under test only needs the types to exist, and can be tested without them by deleting
the CRD."""

from __future__ import annotations

from typing import Any


def _crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    status: bool = False,
) -> dict[str, Any]:
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = list(short_names)
    if categories:
        names["categories"] = list(categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "labels": {"nemotron.io/simulated": "true"},
        },
        "spec": {
            "group": group,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": names,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                    "subresources": {"status": {}} if status else {},
                }
            ],
        },
    }


PREINSTALLED_CRDS: tuple[dict[str, Any], ...] = (
    _crd("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors", namespaced=True,
         short_names=("smon",), categories=("prometheus-operator",)),
    _crd("monitoring.coreos.com", "v1", "PodMonitor", "podmonitors", namespaced=True,
         short_names=("pmon",), categories=("prometheus-operator",)),
    _crd("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules", namespaced=True,
         short_names=("promrule",), categories=("prometheus-operator",)),
    _crd("karpenter.sh", "v1", "NodePool", "nodepools", namespaced=False,
         categories=("karpenter",), status=True),
    _crd("karpenter.sh", "v1", "NodeClaim", "nodeclaims", namespaced=False,
         categories=("karpenter",), status=True),
    _crd("karpenter.k8s.aws", "v1", "EC2NodeClass", "ec2nodeclasses", namespaced=False,
         short_names=("ec2nc", "ec2ncs"), categories=("karpenter",), status=True),
)  # fmt: skip
