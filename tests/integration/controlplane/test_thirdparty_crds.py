"""What the operator renders for Karpenter, the Prometheus Operator, the Inference Gateway and KEDA,
checked by their own CRDs (taken from their Go modules at pinned versions, installed in the test
control plane): the schemas and CEL rules of kube-apiserver decide, not ours."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kube import KubeHandle

ROOT = Path(__file__).resolve().parents[3]
# The objects that ask for a NodePool or a PodMonitor.
SOURCES = [
    ROOT / "tests" / "golden" / "inputs" / "karpenter-h200.yaml",
    ROOT / "examples" / "super-vl-bf16-h200.yaml",
]
KEDA_SOURCE = ROOT / "examples" / "nano-keda.yaml"  # autoscaling.provider KEDA: a ScaledObject


GATEWAY_SOURCES = [
    ROOT / "examples" / "nano-gateway.yaml",
    ROOT / "tests" / "golden" / "inputs" / "gateway-multi-node-no-prefix.yaml",
]


def rendered(
    source: Path, namespace: str, kinds: tuple[str, ...] = ("NodePool", "PodMonitor")
) -> list[dict[str, Any]]:
    nodes = ROOT / "tests" / "golden" / "inputs" / "nodes-h200.yaml"
    text = subprocess.run(
        [sys.executable, "-m", "nemotron_operator.cli", "render", "-f", str(source),
         "--gpu-inventory", str(nodes)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    out = []
    for doc in yaml.safe_load_all(text):
        if doc and (not kinds or doc["kind"] in kinds):
            if doc["metadata"].get("namespace"):
                doc["metadata"]["namespace"] = namespace
            out.append(doc)
    return out


def test_the_crds_are_the_projects_own(kube_cluster: KubeHandle) -> None:
    crds = kube_cluster.kubectl_json("get", "crd")["items"]
    names = {c["metadata"]["name"] for c in crds}
    assert {
        "nodepools.karpenter.sh",
        "podmonitors.monitoring.coreos.com",
        "inferencepools.inference.networking.k8s.io",
        "httproutes.gateway.networking.k8s.io",
        "scaledobjects.keda.sh",
    } <= names
    nodepool = next(c for c in crds if c["metadata"]["name"] == "nodepools.karpenter.sh")
    schema = nodepool["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert "x-kubernetes-validations" in str(schema)  # Karpenter's CEL rules came with it


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_rendered_node_pools_and_pod_monitors_pass_their_own_crds(
    kube_cluster: KubeHandle, kube_namespace: str, source: Path
) -> None:
    objects = rendered(source, kube_namespace)
    assert objects, f"{source.name} renders neither a NodePool nor a PodMonitor"
    for obj in objects:
        result = kube_cluster.kubectl(
            "apply", "--server-side", "--field-manager=test", "-f", "-",
            input=yaml.safe_dump(obj), check=False,
        )  # fmt: skip
        assert result.returncode == 0, f"{obj['kind']} {obj['metadata']['name']}: {result.stderr}"
        if obj["kind"] == "NodePool":
            kube_cluster.kubectl("delete", "nodepool", obj["metadata"]["name"])


def test_a_bad_node_pool_is_refused_by_karpenters_schema(kube_cluster: KubeHandle) -> None:
    """A positive control: the schema is enforced, so the test above means something."""
    (pool,) = [o for o in rendered(SOURCES[0], "default") if o["kind"] == "NodePool"]
    pool["spec"]["disruption"]["consolidationPolicy"] = "Sometimes"
    result = kube_cluster.kubectl(
        "apply", "--server-side", "--field-manager=test", "--dry-run=server", "-f", "-",
        input=yaml.safe_dump(pool), check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "spec.disruption.consolidationPolicy" in result.stderr
    assert "Unsupported value" in result.stderr


@pytest.mark.parametrize("source", GATEWAY_SOURCES, ids=lambda p: p.stem)
def test_every_object_of_a_gateway_deployment_is_accepted_by_kube_apiserver(
    kube_cluster: KubeHandle, kube_namespace: str, source: Path
) -> None:
    """The InferencePool and HTTPRoute against the Inference Extension's and the Gateway API's
    own CRDs (CEL rules included), and the picker's Deployment, Service, ConfigMap and RBAC
    against kube-apiserver's built-in validation: a server-side dry-run of every object."""
    objects = rendered(source, kube_namespace, kinds=())
    kinds = {o["kind"] for o in objects}
    assert {"InferencePool", "Deployment", "Role", "RoleBinding", "ConfigMap"} <= kinds
    for obj in objects:
        result = kube_cluster.kubectl(
            "apply", "--server-side", "--field-manager=test", "--dry-run=server", "-f", "-",
            input=yaml.safe_dump(obj), check=False,
        )  # fmt: skip
        assert result.returncode == 0, f"{obj['kind']} {obj['metadata']['name']}: {result.stderr}"


def test_a_bad_inference_pool_is_refused_by_its_crd(
    kube_cluster: KubeHandle, kube_namespace: str
) -> None:
    """A positive control: the InferencePool's CEL rule (a Service reference needs a port)."""
    (pool,) = rendered(GATEWAY_SOURCES[0], kube_namespace, kinds=("InferencePool",))
    del pool["spec"]["endpointPickerRef"]["port"]
    result = kube_cluster.kubectl(
        "apply", "--server-side", "--field-manager=test", "--dry-run=server", "-f", "-",
        input=yaml.safe_dump(pool), check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "port is required" in result.stderr


def test_the_rendered_scaled_object_passes_kedas_own_crd(
    kube_cluster: KubeHandle, kube_namespace: str
) -> None:
    """KEDA's ScaledObject CRD (github.com/kedacore/keda/v2 v2.20.2) admits what the operator
    renders for autoscaling.provider KEDA; a broken copy (a number where KEDA's trigger metadata
    takes strings) is refused, so the first answer means something."""
    (scaled,) = rendered(KEDA_SOURCE, kube_namespace, kinds=("ScaledObject",))
    assert scaled["spec"]["scaleTargetRef"]["kind"] == "NemotronDeployment"
    result = kube_cluster.kubectl(
        "apply", "--server-side", "--field-manager=test", "--dry-run=server", "-f", "-",
        input=yaml.safe_dump(scaled), check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    scaled["spec"]["triggers"][0]["metadata"]["threshold"] = 2
    result = kube_cluster.kubectl(
        "apply", "--server-side", "--field-manager=test", "--dry-run=server", "-f", "-",
        input=yaml.safe_dump(scaled), check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "spec.triggers[0].metadata.threshold" in result.stderr
