"""LoRA adapters in the manifest: the flags, the runtime-loading set on the StatefulSet, the
adapter cache and claims, and what is refused (render/adapters.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nemotron_operator.catalog import vllm_lora
from nemotron_operator.catalog.vllm_flags import parse_serve_command
from nemotron_operator.render import RenderError, names
from tests.unit.render.fakes import flag_value, make_plan, of_kind, pod_spec, render, vllm

HF = {"name": "sql", "rank": 16, "source": {"huggingFace": {"id": "org/sql-lora"}}}
PVC = {"name": "law", "rank": 64, "source": {"pvc": {"claimName": "loras", "path": "/law/v2"}}}
LIMITS = {"maxLoras": 4, "maxLoraRank": 64, "maxCpuLoras": 8}


def env(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in vllm(objects)["env"]}


def annotation(objects: list[dict[str, Any]]) -> Any:
    sts = of_kind(objects, "StatefulSet")[0]
    value = sts["metadata"]["annotations"].get(names.ADAPTERS)
    return None if value is None else json.loads(value)


def test_runtime_loading_keeps_the_adapters_out_of_the_pod_template() -> None:
    objects = render({"engine": {"lora": LIMITS}, "adapters": [HF, PVC]})
    args = vllm(objects)["args"]
    assert "--enable-lora" in args
    assert flag_value(args, "--max-loras") == "4"
    assert flag_value(args, "--max-lora-rank") == "64"
    assert flag_value(args, "--max-cpu-loras") == "8"
    assert "--lora-modules" not in args
    assert annotation(objects) == [
        {"name": "sql", "path": "org/sql-lora", "rank": 16},
        {"name": "law", "path": "/adapters/adapter-loras/law/v2", "rank": 64},
    ]
    variables = env(objects)
    assert variables["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    assert variables["HF_HUB_OFFLINE"] == "0"  # vLLM's adapter loader fetches from the Hub
    assert variables["HF_HUB_CACHE"] == "/adapter-cache"
    # Adding an adapter changes only the annotation: the pod template (and its hash) stay.
    fewer = render({"engine": {"lora": LIMITS}, "adapters": [PVC]})
    template = of_kind(objects, "StatefulSet")[0]["spec"]["template"]
    assert of_kind(fewer, "StatefulSet")[0]["spec"]["template"] == template


def test_hugging_face_adapters_are_cached_on_the_weight_cache() -> None:
    objects = render({"engine": {"lora": LIMITS}, "adapters": [HF, PVC]})
    mounts = {m["mountPath"]: m for m in vllm(objects)["volumeMounts"]}
    assert mounts["/adapter-cache"] == {
        "name": "weights",
        "mountPath": "/adapter-cache",
        "subPath": ".adapter-cache",
    }
    assert mounts["/adapters/adapter-loras"]["readOnly"] is True
    volumes = {v["name"]: v for v in pod_spec(objects)["volumes"]}
    assert volumes["adapter-loras"]["persistentVolumeClaim"] == {
        "claimName": "loras",
        "readOnly": True,
    }


def test_a_read_only_weight_claim_gets_an_empty_dir_adapter_cache() -> None:
    source = {"model": {"source": {"pvc": {"claimName": "weights-ro"}}}}
    objects = render({**source, "adapters": [HF]})
    volumes = {v["name"]: v for v in pod_spec(objects)["volumes"]}
    assert "emptyDir" in volumes["adapter-cache"]


def test_without_runtime_updates_the_adapters_are_lora_modules() -> None:
    spec = {"engine": {"lora": LIMITS | {"runtimeUpdates": False}}, "adapters": [HF, PVC]}
    objects = render(spec, name="chat")
    args = vllm(objects)["args"]
    start = args.index("--lora-modules")
    modules = [vllm_lora.parse_lora_module(v) for v in args[start + 1 : start + 3]]
    assert modules == [
        # Fetched by the download step (test_adapter_downloads.py), loaded from the cache.
        vllm_lora.LoraModule("sql", "/adapter-cache/fetched/org--sql-lora/main", "chat"),
        vllm_lora.LoraModule("law", "/adapters/adapter-loras/law/v2", "chat"),
    ]
    assert annotation(objects) is None
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING" not in env(objects)
    _, uses = parse_serve_command(["vllm", "serve", *args])
    assert [u.flag.name for u in uses].count("--lora-modules") == 1


def test_adapters_alone_enable_lora_with_vllms_defaults() -> None:
    args = vllm(render({"adapters": [{**HF, "rank": 8}]}))["args"]
    assert flag_value(args, "--max-loras") == "1"
    assert flag_value(args, "--max-lora-rank") == "16"
    assert flag_value(args, "--max-cpu-loras") == "1"


def test_no_lora_no_flags_and_the_hub_stays_offline() -> None:
    objects = render({})
    assert not [a for a in vllm(objects)["args"] if "lora" in a]
    assert env(objects)["HF_HUB_OFFLINE"] == "1"
    assert annotation(objects) is None


def refused(spec: dict[str, Any]) -> RenderError:
    with pytest.raises(RenderError) as info:
        render(spec, name="chat")
    return info.value


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ({"adapters": [{**HF, "rank": 32}]}, "spec.adapters[0].rank", "maxLoraRank (16)"),
        ({"adapters": [HF, {**HF, "rank": 8}]}, "spec.adapters[1].name", "listed twice"),
        ({"adapters": [{**HF, "name": "chat"}]}, "spec.adapters[0].name", "served name"),
        (
            {
                "adapters": [
                    {
                        **HF,
                        "source": {"huggingFace": {"id": "o/a", "tokenSecretRef": {"name": "a"}}},
                    },
                    {
                        **HF,
                        "name": "b",
                        "source": {"huggingFace": {"id": "o/b", "tokenSecretRef": {"name": "b"}}},
                    },
                ],
            },
            "spec.adapters[1].source.huggingFace.tokenSecretRef",
            "same Secret key",
        ),
    ],
)
def test_refusals_name_the_field(spec: dict[str, Any], field: str, words: str) -> None:
    error = refused(spec)
    assert [e.path for e in error.errors] == [field]
    assert words in str(error)


def test_the_token_reaches_the_serving_container() -> None:
    token = {"id": "o/a", "tokenSecretRef": {"name": "hf", "key": "t"}}
    objects = render({"adapters": [{**HF, "source": {"huggingFace": token}}]})
    assert env(objects)["HF_TOKEN"] == {"secretKeyRef": {"name": "hf", "key": "t"}}


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"--enable-lora": True, "--max-lora-rank": "24"}, "invalid choice: 24"),
        ({"--enable-lora": True, "--max-loras": "4", "--max-cpu-loras": "2"}, "must be >="),
        ({"--enable-lora": True, "--max-loras": "0"}, "greater than or equal to 1"),
        ({"--enable-lora": True, "--lora-modules": ["no-path"]}, "expected name=path"),
        ({"--enable-lora": True, "--lora-modules": ['{"name": "a"}']}, "Invalid JSON format"),
    ],
)
def test_vllms_lora_rules_refuse(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(vllm_lora.LoraConfigError, match=problem):
        vllm_lora.lora_limits(options)


def test_vllms_lora_defaults() -> None:
    limits = vllm_lora.lora_limits({"--enable-lora": True, "--lora-modules": ["a=/x"]})
    assert (limits.max_loras, limits.max_lora_rank, limits.max_cpu_loras) == (1, 16, 1)
    assert limits.modules == (vllm_lora.LoraModule("a", "/x"),)
    assert vllm_lora.runtime_updates_allowed({"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"})
    assert not vllm_lora.runtime_updates_allowed({"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "yes"})


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--fully-sharded-loras"], "--fully-sharded-loras with expert parallelism"),
        (["--all2all-backend", "deepep_low_latency"], "supports only allgather_reducescatter"),
        (["--all2all-backend=naive"], "--all2all-backend naive"),
    ],
)
def test_lora_with_expert_parallelism_refuses_what_vllms_moe_lora_layer_refuses(
    extra: list[str], words: str
) -> None:
    spec = {"engine": {"lora": LIMITS, "extraArgs": ["--seed", "7", *extra]}}
    error = refused({**spec, "adapters": [HF]})
    assert [e.path for e in error.errors] == ["spec.engine.extraArgs[2]"]
    assert words in str(error)
    assert "spec.capacity.parallelism.expert: false" in str(error)
    # Without expert parallelism, or without LoRA, vLLM takes the same arguments.
    render({**spec, "adapters": [HF]}, plan=make_plan(expert_parallel=False))
    render({"engine": {"extraArgs": extra}})


@pytest.mark.parametrize(
    "extra",
    [
        ["--all2all-backend", "allgather_reducescatter"],
        ["--no-fully-sharded-loras"],
        [],
    ],
)
def test_lora_with_expert_parallelism_keeps_what_vllm_accepts(extra: list[str]) -> None:
    objects = render({"engine": {"lora": LIMITS, "extraArgs": extra}, "adapters": [HF]})
    args = vllm(objects)["args"]
    assert "--enable-expert-parallel" in args  # the plan's layout
    assert args[-len(extra) :] == extra if extra else "--all2all-backend" not in args
