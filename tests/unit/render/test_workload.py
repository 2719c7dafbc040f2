"""StatefulSets, pods, Services and the PDB: layout, sizing rules, config hash, determinism,
ownership and validity against the Kubernetes schemas."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from nemotron_operator.render import KIND_ORDER, Owner, RenderOptions, names
from nemotron_operator.render.pod import shm_gib, startup_budget_seconds
from tests.unit.render.fakes import GIB, make_plan, of_kind, pod_spec, render, vllm
from tests.unit.render.schemas import validate_object

TWO_NODES = make_plan(
    nodes_per_replica=2, gpus_per_replica=16, tensor_parallel=8, pipeline_parallel=2, nodes=4
)


def kinds(objects: list[dict[str, Any]]) -> list[str]:
    return [o["kind"] for o in objects]


def test_single_node_replicas_share_one_statefulset() -> None:
    objects = render({"replicas": 3})
    (sts,) = of_kind(objects, "StatefulSet")
    assert sts["spec"]["replicas"] == 3
    assert sts["spec"]["serviceName"] == "super-vl-headless"
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    assert kinds(objects) == ["Service", "Service", "StatefulSet", "PodDisruptionBudget"]


def test_a_pod_disruption_budget_only_where_more_than_one_serving_pod_can_run() -> None:
    # One pod: maxUnavailable 1 would allow every eviction anyway.
    assert "PodDisruptionBudget" not in kinds(render({"replicas": 1}))
    assert "PodDisruptionBudget" in kinds(render({"replicas": 2}))
    assert "PodDisruptionBudget" in kinds(render({"replicas": 1}, plan=TWO_NODES))
    scaled = {"replicas": 1, "autoscaling": {"minReplicas": 1, "maxReplicas": 2}}
    assert "PodDisruptionBudget" in kinds(render(scaled))
    single = {"replicas": 1, "autoscaling": {"minReplicas": 0, "maxReplicas": 1}}
    assert "PodDisruptionBudget" not in kinds(render(single))


def test_multi_node_replica_has_a_leader_and_a_worker_statefulset() -> None:
    objects = render({"replicas": 2}, plan=TWO_NODES)
    statefulsets = of_kind(objects, "StatefulSet")
    assert [s["metadata"]["name"] for s in statefulsets] == [
        "super-vl-0",
        "super-vl-0-w",
        "super-vl-1",
        "super-vl-1-w",
    ]
    leader, worker = statefulsets[2], statefulsets[3]
    assert leader["spec"]["replicas"] == 1
    assert worker["spec"]["replicas"] == 1
    assert worker["spec"]["ordinals"] == {"start": 1}  # pod ordinal = node rank
    lead_args = leader["spec"]["template"]["spec"]["containers"][0]["args"]
    work = worker["spec"]["template"]["spec"]["containers"][0]
    master = "super-vl-1-0.super-vl-headless.ai.svc"  # leader pod via the headless Service
    for args in (lead_args, work["args"]):
        assert args[args.index("--nnodes") + 1] == "2"
        assert args[args.index("--master-addr") + 1] == master
        assert args[args.index("--master-port") + 1] == "29501"
        assert args[args.index("--distributed-executor-backend") + 1] == "mp"
    assert lead_args[lead_args.index("--node-rank") + 1] == "0"
    assert "--headless" not in lead_args
    assert "--headless" in work["args"]
    assert work["args"][work["args"].index("--node-rank") + 1] == "$(NODE_RANK)"
    rank = next(e for e in work["env"] if e["name"] == "NODE_RANK")
    field = "metadata.labels['apps.kubernetes.io/pod-index']"
    assert rank["valueFrom"]["fieldRef"]["fieldPath"] == field
    # workers run no API server: no port, no HTTP probes
    assert "ports" not in work
    assert "readinessProbe" not in work
    # each pod takes a whole share of the replica's GPUs
    assert work["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_service_selects_leaders_and_headless_service_publishes_not_ready_pods() -> None:
    objects = render(plan=TWO_NODES)
    headless, service = of_kind(objects, "Service")
    assert service["spec"]["selector"][names.ROLE] == names.ROLE_LEADER
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}
    ]
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert names.ROLE not in headless["spec"]["selector"]
    for sts in of_kind(objects, "StatefulSet"):
        template_labels = sts["spec"]["template"]["metadata"]["labels"]
        selector = sts["spec"]["selector"]["matchLabels"]
        assert selector.items() <= template_labels.items()
        assert headless["spec"]["selector"].items() <= template_labels.items()


def test_statefulset_selectors_do_not_overlap() -> None:
    objects = render({"replicas": 2}, plan=TWO_NODES)
    selectors = [s["spec"]["selector"]["matchLabels"] for s in of_kind(objects, "StatefulSet")]
    templates = [
        s["spec"]["template"]["metadata"]["labels"] for s in of_kind(objects, "StatefulSet")
    ]
    for i, selector in enumerate(selectors):
        matching = [j for j, labels in enumerate(templates) if selector.items() <= labels.items()]
        assert matching == [i]


def test_gpu_requests_node_selector_and_tolerations() -> None:
    spec = {
        "scheduling": {
            "nodeSelector": {"topology.kubernetes.io/zone": "a"},
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "priorityClassName": "inference",
            "affinity": {"nodeAffinity": {}},
        }
    }
    pod = pod_spec(render(spec))
    gpus = pod["containers"][0]["resources"]
    assert gpus["requests"]["nvidia.com/gpu"] == gpus["limits"]["nvidia.com/gpu"] == "4"
    assert pod["nodeSelector"] == {
        "topology.kubernetes.io/zone": "a",
        "nvidia.com/gpu.product": "NVIDIA-H200",
    }
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists"},
    ]
    assert pod["priorityClassName"] == "inference"
    assert pod["affinity"] == {"nodeAffinity": {}}


@pytest.mark.parametrize(("gpus", "shm"), [(1, 8), (2, 8), (4, 16), (8, 32), (16, 64), (32, 64)])
def test_shm_size_per_gpu(gpus: int, shm: int) -> None:
    assert shm_gib(gpus) == shm


def test_shm_is_memory_backed_with_a_limit_and_counted_in_the_memory_request() -> None:
    pod = pod_spec(render())
    dshm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert dshm["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Gi"}
    requests = pod["containers"][0]["resources"]["requests"]
    assert requests["memory"] == f"{16 + 8 * 4 + 16}Gi"
    assert requests["cpu"] == "10"
    assert "memory" not in pod["containers"][0]["resources"]["limits"]


def test_startup_budget_grows_with_the_weights() -> None:
    budgets = [startup_budget_seconds(int(g * GIB)) for g in (1, 20, 85, 232, 500)]
    assert budgets == sorted(budgets)
    assert len(set(budgets)) == len(budgets)
    assert startup_budget_seconds(0) == 600
    assert startup_budget_seconds(100_000_000_000) == 600 + 1000  # 100 GB at 100 MB/s


def test_probes_on_health_and_startup_budget_from_the_plan() -> None:
    small = vllm(render(plan=make_plan(weights_total_bytes=10 * GIB)))
    large = vllm(render(plan=make_plan(weights_total_bytes=250 * GIB)))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert large[probe]["httpGet"] == {"path": "/health", "port": "http"}
    startup = large["startupProbe"]
    budget = startup["periodSeconds"] * startup["failureThreshold"]
    assert budget >= startup_budget_seconds(250 * GIB)
    assert budget - startup["periodSeconds"] < startup_budget_seconds(250 * GIB)
    assert small["startupProbe"]["failureThreshold"] < startup["failureThreshold"]


def test_restricted_pod_security() -> None:
    pod = pod_spec(render())
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in [*pod["initContainers"], *pod["containers"]]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert "privileged" not in context


def test_download_init_container_uses_a_secret_reference() -> None:
    spec = {
        "model": {
            "revision": "v1.1",
            "source": {"huggingFace": {"tokenSecretRef": {"name": "hf", "key": "tok"}}},
        }
    }
    pod = pod_spec(render(spec))
    (download,) = pod["initContainers"]
    env = {e["name"]: e for e in download["env"]}
    assert env["HF_TOKEN"] == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf", "key": "tok"}},
    }
    assert env["MODEL_REVISION"]["value"] == "v1.1"
    script = download["command"][-1]
    assert 'hf download "$MODEL_ID" --revision "$MODEL_REVISION" --local-dir "$MODEL_DIR"' in script
    assert "already complete in $MODEL_DIR" in script  # skips a download that already completed
    assert "resources" in download
    assert "limits" not in download["resources"]


def test_cache_claims_follow_the_storage_spec() -> None:
    per_pod = render(plan=make_plan(weights_total_bytes=100 * GIB))
    (template,) = of_kind(per_pod, "StatefulSet")[0]["spec"]["volumeClaimTemplates"]
    assert template["spec"]["resources"]["requests"]["storage"] == "110Gi"  # +10 %
    shared_spec = {
        "storage": {"cache": {"shared": True, "accessModes": ["ReadWriteMany"], "size": "500Gi"}}
    }
    shared = render(shared_spec)
    (claim,) = of_kind(shared, "PersistentVolumeClaim")
    assert claim["spec"]["resources"]["requests"]["storage"] == "500Gi"
    assert "volumeClaimTemplates" not in of_kind(shared, "StatefulSet")[0]["spec"]
    volume = next(v for v in pod_spec(shared)["volumes"] if v["name"] == "weights")
    assert volume["persistentVolumeClaim"] == {"claimName": claim["metadata"]["name"]}
    existing = render({"model": {"source": {"pvc": {"claimName": "w"}}}})
    assert of_kind(existing, "PersistentVolumeClaim") == []
    assert "initContainers" not in pod_spec(existing)
    volume = next(v for v in pod_spec(existing)["volumes"] if v["name"] == "weights")
    assert volume["persistentVolumeClaim"] == {"claimName": "w", "readOnly": True}


def config_hash(objects: list[dict[str, Any]]) -> str:
    sts = of_kind(objects, "StatefulSet")[0]
    value: str = sts["spec"]["template"]["metadata"]["annotations"][names.CONFIG_HASH]
    return value


BASE: dict[str, Any] = {"engine": {"maxModelLen": 262_144}}


@pytest.mark.parametrize(
    "change",
    [
        {"replicas": 5},
        {"capacity": {"minConcurrency": 1}},
        {"monitoring": {"podMonitor": {"enabled": True}}},
    ],
)
def test_config_hash_ignores_what_does_not_reach_the_pods(change: dict[str, Any]) -> None:
    assert config_hash(render(change)) == config_hash(render(BASE))


@pytest.mark.parametrize(
    "change",
    [
        {"engine": {"maxNumSeqs": 32}},
        {"engine": {"image": "vllm/vllm-openai:v0.33.0"}},
        {"scheduling": {"nodeSelector": {"zone": "b"}}},
        {"model": {"servedName": "other"}},
    ],
)
def test_config_hash_changes_with_what_reaches_the_pods(change: dict[str, Any]) -> None:
    assert config_hash(render(change)) != config_hash(render(BASE))


def test_config_hash_covers_the_plugin_file_digest() -> None:
    one = render(options=RenderOptions(plugin_digest="a"))
    two = render(options=RenderOptions(plugin_digest="b"))
    assert config_hash(one) != config_hash(two)
    assert config_hash(render()) != config_hash(one)


def test_plan_is_annotated_on_the_workload() -> None:
    sts = of_kind(render(), "StatefulSet")[0]
    plan = json.loads(sts["metadata"]["annotations"][names.PLAN])
    assert plan["gpuProduct"] == "NVIDIA-H200"
    assert plan["tensorParallel"] == 4
    assert "rejected" not in plan


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def test_output_does_not_depend_on_input_dict_order() -> None:
    spec = {
        "engine": {"maxModelLen": 262_144, "maxNumSeqs": 8, "enableThinking": True},
        "scheduling": {
            "nodeSelector": {"a": "1", "b": "2", "c": "3"},
            "affinity": {"nodeAffinity": {"x": 1, "y": {"p": 1, "q": 2}}, "podAffinity": {}},
        },
        "monitoring": {"podMonitor": {"enabled": True, "labels": {"x": "1", "y": "2"}}},
    }
    reference = json.dumps(render(spec))
    rng = random.Random(4)  # noqa: S311 - a fixed shuffle, not a secret
    for _ in range(5):
        shuffled = _shuffled(copy.deepcopy(spec), rng)
        assert json.dumps(render(shuffled)) == reference


def test_owner_references_only_on_namespaced_objects() -> None:
    karpenter = {"provisioner": "Karpenter", "karpenter": {"nodeClassRef": {"name": "gpu"}}}
    spec = {"nodePool": karpenter, "monitoring": {"podMonitor": {"enabled": True}}}
    objects = render(spec, options=RenderOptions(owner=Owner("super-vl", "uid-1")))
    assert kinds(objects)[0] == "NodePool"
    for obj in objects:
        refs = obj["metadata"].get("ownerReferences")
        if obj["kind"] == "NodePool":
            assert refs is None
            assert obj["metadata"]["annotations"][names.OWNER] == "ai/super-vl"
        else:
            assert refs == [
                {
                    "apiVersion": "serving.nemotron.io/v1alpha1",
                    "kind": "NemotronDeployment",
                    "name": "super-vl",
                    "uid": "uid-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
    assert all("ownerReferences" not in o["metadata"] for o in render(spec))


def test_objects_come_in_kind_order() -> None:
    karpenter = {"provisioner": "Karpenter", "karpenter": {"nodeClassRef": {"name": "gpu"}}}
    spec = {
        "nodePool": karpenter,
        "monitoring": {"podMonitor": {"enabled": True}},
        "storage": {"cache": {"shared": True, "accessModes": ["ReadWriteMany"]}},
    }
    order = [KIND_ORDER.index(k) for k in kinds(render(spec, plan=TWO_NODES))]
    assert order == sorted(order)


CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "shared-cache": {"storage": {"cache": {"shared": True, "accessModes": ["ReadWriteMany"]}}},
    "pvc": {"model": {"source": {"pvc": {"claimName": "w", "path": "/m"}}}},
    # Features whose objects no golden case renders (mutation testing found their containers'
    # fields unchecked): each must still be valid Kubernetes.
    "node-local-cache": {"storage": {"cache": {"nodeLocal": {"path": "/var/lib/nemotron"}}}},
    "object-store": {
        "model": {
            "source": {
                "objectStore": {
                    "uri": "gs://models/nvidia/super",
                    "credentialsSecretRef": {"name": "gcs"},
                }
            }
        }
    },
    "adapters-and-download-job": {
        "storage": {"cache": {"shared": True, "accessModes": ["ReadWriteMany"]}},
        "model": {"source": {"huggingFace": {"tokenSecretRef": {"name": "hf", "key": "token"}}}},
        "engine": {"lora": {"maxLoras": 4, "maxLoraRank": 64}},
        "adapters": [
            {"name": "sql", "rank": 16, "source": {"huggingFace": {"id": "org/sql-lora"}}},
            {"name": "law", "rank": 64, "source": {"pvc": {"claimName": "loras", "path": "/l"}}},
        ],
    },
    "network-policy-and-gateway": {
        "networkPolicy": {"enabled": True, "apiFromNamespaces": ["clients"]},
        "gateway": {"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}},
    },
    "dra": {"capacity": {"gpu": {"allocation": "DRA"}}},
    "karpenter-types": {
        "nodePool": {
            "provisioner": "Karpenter",
            "karpenter": {
                "nodeClassRef": {"name": "gpu"},
                "instanceTypes": ["p5en.48xlarge"],
                "capacityType": "spot",
            },
        },
        "monitoring": {"podMonitor": {"enabled": True, "interval": "15s"}},
    },
    "scheduling": {
        "scheduling": {
            "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]}
                        ]
                    }
                }
            },
        }
    },
}


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("multi_node", [False, True])
def test_every_object_is_valid(config: str, multi_node: bool) -> None:
    plan = TWO_NODES if multi_node else make_plan()
    options = RenderOptions(owner=Owner("super-vl", "0d9c6f0e-3f5b-4a8e-9a57-7b2f1c3d4e5f"))
    for obj in render(CONFIGS[config] | {"replicas": 2}, plan=plan, options=options):
        validate_object(obj)


def _compile_cache(objects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    container = vllm(objects)
    mounts = [m for m in container["volumeMounts"] if m["name"] == "weights"]
    env = {e["name"]: e.get("value", "") for e in container["env"]}
    return mounts, env


def test_the_compile_cache_lives_on_the_weight_cache_keyed_by_image_model_and_layout() -> None:
    mounts, env = _compile_cache(render(plan=make_plan(tensor_parallel=4)))
    assert mounts == [
        {"name": "weights", "mountPath": "/models", "readOnly": True},
        {"name": "weights", "mountPath": "/compile-cache", "subPath": ".compile-cache"},
    ]
    root = env["VLLM_CACHE_ROOT"].removesuffix("/vllm")
    assert root.startswith("/compile-cache/tp4-pp1-")
    assert env["TRITON_CACHE_DIR"] == f"{root}/triton"
    keys = {
        root,
        _compile_cache(render(plan=make_plan(tensor_parallel=8)))[1]["VLLM_CACHE_ROOT"],
        _compile_cache(render({"engine": {"image": "vllm/vllm-openai:v0.32.0"}}))[1][
            "VLLM_CACHE_ROOT"
        ],
        _compile_cache(render({"model": {"revision": "v2"}}))[1]["VLLM_CACHE_ROOT"],
    }
    assert len(keys) == 4  # a new layout, vLLM build or checkpoint compiles afresh
    same = _compile_cache(render({"engine": {"maxModelLen": 65536}}))[1]["VLLM_CACHE_ROOT"]
    assert same == env["VLLM_CACHE_ROOT"]  # vLLM hashes the rest of its config itself


def test_an_existing_read_only_claim_gets_no_compile_cache() -> None:
    mounts, env = _compile_cache(render({"model": {"source": {"pvc": {"claimName": "w"}}}}))
    assert [m["mountPath"] for m in mounts] == ["/models"]
    assert "VLLM_CACHE_ROOT" not in env


def test_the_validated_configs_render_the_objects_they_are_there_for() -> None:
    def kinds_and_init(config: str) -> tuple[set[str], set[str]]:
        objects = render(CONFIGS[config] | {"replicas": 2})
        init = {
            c["name"]
            for o in objects
            if o["kind"] == "StatefulSet"
            for c in o["spec"]["template"]["spec"].get("initContainers", [])
        }
        return {o["kind"] for o in objects}, init

    assert "cache-owner" in kinds_and_init("node-local-cache")[1]
    assert "Job" in kinds_and_init("adapters-and-download-job")[0]
    assert {"NetworkPolicy", "InferencePool", "HTTPRoute"} <= kinds_and_init(
        "network-policy-and-gateway"
    )[0]
    assert "ResourceClaimTemplate" in kinds_and_init("dra")[0]
