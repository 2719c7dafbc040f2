"""The `vllm serve` command: flags from typed fields and the plan, defaults from the model, and
every rendered flag one the pinned vLLM accepts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nemotron_operator.catalog.vllm_flags import parse_serve_command
from tests.unit.render.fakes import FakeModel, flag_value, make_plan, of_kind, render, vllm

NANO = FakeModel(
    hf_id="nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    vision=False,
    mtp_layers=0,
    max_position_embeddings=262_144,
    trained_context=262_144,
)


def argv(container: dict[str, Any]) -> list[str]:
    env = {e["name"]: "1" for e in container["env"]}
    words = [*container["command"], *container["args"]]
    # The kubelet expands $(VAR) from the container's environment.
    return [w.replace("$(NODE_RANK)", env["NODE_RANK"]) if "$(" in w else w for w in words]


SPECS: dict[str, dict[str, Any]] = {
    "minimal": {},
    "everything": {
        "model": {"servedName": "chat"},
        "engine": {
            "maxNumSeqs": 64,
            "maxNumBatchedTokens": 8192,
            "kvCacheDtype": "fp8",
            "mambaSsmCacheDtype": "float16",
            "speculativeDecoding": {"method": "mtp", "numSpeculativeTokens": 3},
            "reasoningParser": "nemotron_v3",
            "toolCallParser": "qwen3_coder",
            "multimodal": {"images": 4, "videos": 1},
            "enableThinking": False,
            "enablePrefixCaching": False,
            "extraArgs": ["--async-scheduling", "--max-cudagraph-capture-size=512"],
        },
    },
    "lora": {
        "engine": {"lora": {"maxLoras": 4, "maxLoraRank": 64, "maxCpuLoras": 8}},
        "adapters": [
            {"name": "sql", "rank": 16, "source": {"huggingFace": {"id": "org/sql-lora"}}},
            {"name": "law", "rank": 64, "source": {"pvc": {"claimName": "loras", "path": "/l"}}},
        ],
    },
    "lora-static": {
        "engine": {"lora": {"runtimeUpdates": False}},
        "adapters": [{"name": "sql", "rank": 8, "source": {"huggingFace": {"id": "org/sql"}}}],
    },
    "plugin": {
        "engine": {
            "reasoningParserPlugin": {
                "configMapName": "parsers",
                "fileName": "super_v3_reasoning_parser.py",
                "parserName": "super_v3",
            }
        }
    },
}


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("nodes", [1, 2])
def test_every_rendered_flag_is_accepted_by_the_pinned_vllm(name: str, nodes: int) -> None:
    plan = make_plan(nodes_per_replica=nodes, gpus_per_replica=8 * nodes, tensor_parallel=8)
    plan = plan.model_copy(update={"pipeline_parallel": nodes})
    objects = render(SPECS[name], plan=plan)
    for index in range(len(of_kind(objects, "StatefulSet"))):
        model, uses = parse_serve_command(argv(vllm(objects, index)))
        assert model.startswith("/models/")
        names = [u.flag.name for u in uses]
        assert len(names) == len(set(names)), f"a flag is given twice: {names}"


def test_typed_fields_become_flags() -> None:
    # The plan carries the spec's prefix-caching decision (the planner's, as in the operator).
    plan = make_plan(speculative_tokens=3, prefix_caching=False)
    args = vllm(render(SPECS["everything"], plan=plan))["args"]
    assert flag_value(args, "--served-model-name") == "chat"
    assert flag_value(args, "--max-num-seqs") == "64"
    assert flag_value(args, "--max-num-batched-tokens") == "8192"
    assert flag_value(args, "--kv-cache-dtype") == "fp8"
    assert flag_value(args, "--mamba-ssm-cache-dtype") == "float16"
    assert json.loads(flag_value(args, "--speculative-config") or "") == {
        "method": "mtp",
        "num_speculative_tokens": 3,
    }
    assert flag_value(args, "--reasoning-parser") == "nemotron_v3"
    assert flag_value(args, "--tool-call-parser") == "qwen3_coder"
    assert "--enable-auto-tool-choice" in args
    assert json.loads(flag_value(args, "--limit-mm-per-prompt") or "") == {"image": 4, "video": 1}
    assert json.loads(flag_value(args, "--default-chat-template-kwargs") or "") == {
        "enable_thinking": False
    }
    assert "--no-enable-prefix-caching" in args
    assert "--enable-prefix-caching" not in args
    # extraArgs come last, unchanged
    assert args[-2:] == ["--async-scheduling", "--max-cudagraph-capture-size=512"]


def test_a_planned_pool_passes_the_plans_pool_to_vllm() -> None:
    measured = vllm(render())["args"]
    assert "--kv-cache-memory-bytes" not in measured  # default: vLLM sizes the pool itself
    plan = make_plan()
    planned = vllm(render({"engine": {"kvCacheMemory": "Planned"}}, plan=plan))["args"]
    assert flag_value(planned, "--kv-cache-memory-bytes") == str(50 * 2**30)
    _, uses = parse_serve_command(["vllm", "serve", *planned])
    assert [u.value for u in uses if u.flag.name == "--kv-cache-memory-bytes"] == [str(50 * 2**30)]


def test_plan_decides_the_layout_flags() -> None:
    plan = make_plan(tensor_parallel=2, gpus_per_replica=2, expert_parallel=False)
    args = vllm(render(plan=plan.model_copy(update={"max_model_len": 131_072})))["args"]
    assert flag_value(args, "--tensor-parallel-size") == "2"
    assert flag_value(args, "--pipeline-parallel-size") == "1"
    assert "--enable-expert-parallel" not in args
    assert flag_value(args, "--max-model-len") == "131072"
    ep = vllm(render(plan=make_plan(expert_parallel=True)))["args"]
    assert "--enable-expert-parallel" in ep


def test_defaults_come_from_the_model() -> None:
    args = vllm(render())["args"]
    assert flag_value(args, "--served-model-name") == "super-vl"  # the object's name
    assert flag_value(args, "--gpu-memory-utilization") == "0.9"
    assert flag_value(args, "--reasoning-parser") == "nemotron_v3"
    assert flag_value(args, "--tool-call-parser") == "qwen3_coder"
    assert json.loads(flag_value(args, "--limit-mm-per-prompt") or "") == {"image": 8, "video": 2}
    assert flag_value(args, "--mamba-ssm-cache-dtype") == "float32"  # always explicit
    assert "--enable-prefix-caching" in args
    assert "--default-chat-template-kwargs" not in args  # unset: the template's own default
    assert "--trust-remote-code" not in args


def test_a_text_model_gets_no_multimodal_limits_and_no_mtp() -> None:
    spec = {"model": {"id": NANO.hf_id}, "engine": {"maxModelLen": 131_072}}
    plan = make_plan(model_id=NANO.hf_id, speculative_tokens=0, max_model_len=131_072)
    args = vllm(render(spec, plan=plan, model=NANO))["args"]
    assert "--limit-mm-per-prompt" not in args
    assert "--speculative-config" not in args


@pytest.mark.parametrize("field", ["reasoningParser", "toolCallParser"])
def test_none_switches_a_defaulted_parser_off(field: str) -> None:
    args = vllm(render({"engine": {field: "none"}}))["args"]
    flag = "--reasoning-parser" if field == "reasoningParser" else "--tool-call-parser"
    assert flag not in args
    if field == "toolCallParser":
        assert "--enable-auto-tool-choice" not in args


def test_a_model_without_default_parsers_gets_none() -> None:
    bare = FakeModel(default_reasoning_parser=None, default_tool_call_parser=None)
    args = vllm(render(model=bare))["args"]
    assert "--reasoning-parser" not in args
    assert "--tool-call-parser" not in args


def test_plugin_parser_is_mounted_and_passed() -> None:
    objects = render(SPECS["plugin"])
    container = vllm(objects)
    path = "/etc/nemotron/reasoning-parser/super_v3_reasoning_parser.py"
    assert flag_value(container["args"], "--reasoning-parser-plugin") == path
    assert flag_value(container["args"], "--reasoning-parser") == "super_v3"
    mount = next(m for m in container["volumeMounts"] if m["name"] == "reasoning-parser")
    assert mount == {
        "name": "reasoning-parser",
        "mountPath": "/etc/nemotron/reasoning-parser",
        "readOnly": True,
    }
    volumes = of_kind(objects, "StatefulSet")[0]["spec"]["template"]["spec"]["volumes"]
    volume = next(v for v in volumes if v["name"] == "reasoning-parser")
    assert volume["configMap"] == {
        "name": "parsers",
        "items": [{"key": "super_v3_reasoning_parser.py", "path": "super_v3_reasoning_parser.py"}],
    }


def test_trust_remote_code_only_when_the_model_needs_it() -> None:
    args = vllm(render(model=FakeModel(trust_remote_code=True)))["args"]
    assert "--trust-remote-code" in args


@pytest.mark.parametrize(
    ("max_model_len", "long"),
    [(262_144, False), (262_145, True), (1_048_576, True)],
)
def test_long_context_env_only_beyond_the_configs_limit(max_model_len: int, long: bool) -> None:
    plan = make_plan(max_model_len=max_model_len)
    env = {e["name"]: e.get("value") for e in vllm(render(plan=plan))["env"]}
    assert ("VLLM_ALLOW_LONG_MAX_MODEL_LEN" in env) is long
    if long:
        assert env["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] == "1"


def test_model_path_follows_the_source() -> None:
    hub = vllm(render())["args"][0]
    assert hub == "/models/nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
    spec = {"model": {"source": {"pvc": {"claimName": "w", "path": "/ckpt/step-1/"}}}}
    assert vllm(render(spec))["args"][0] == "/models/ckpt/step-1"
    root = {"model": {"source": {"pvc": {"claimName": "w"}}}}
    assert vllm(render(root))["args"][0] == "/models"


def test_the_command_has_the_vllm_serve_form() -> None:
    container = vllm(render())
    assert container["command"] == ["vllm", "serve"]
    assert not container["args"][0].startswith("-")
