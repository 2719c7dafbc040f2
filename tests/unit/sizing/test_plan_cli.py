"""``nemotron-operator plan``: output formats, exit codes, flags over -f, errors naming fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nemotron_operator.api import Plan
from nemotron_operator.cli import main
from nemotron_operator.sizing import plan_deployment

from .helpers import H8B, H100, SUPER_BF16, SUPER_FP8, SUPER_VL_BF16, spec
from .test_inventory import node

Capture = pytest.CaptureFixture[str]


def run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    code = main(["plan", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_is_exactly_status_plan(capsys: Capture) -> None:
    code, out, _ = run(capsys, SUPER_FP8, "--gpu", H100, "-o", "json", "--vllm-version", "0.31.0")
    assert code == 0
    wire = json.loads(out)
    expected = plan_deployment(spec(SUPER_FP8, capacity={"gpu": {"products": [H100]}})).plan
    assert wire == expected.to_wire()
    assert Plan.model_validate(wire) == expected
    assert {"perGPU", "totalGPUs", "kvBytesPerToken", "rejected"} <= set(wire)


def test_yaml_matches_json(capsys: Capture) -> None:
    _, as_json, _ = run(capsys, H8B, "-o", "json")
    _, as_yaml, _ = run(capsys, H8B, "-o", "yaml")
    assert yaml.safe_load(as_yaml) == json.loads(as_json)


def test_table_without_gpu_lists_every_product_then_the_choice(capsys: Capture) -> None:
    code, out, _ = run(capsys, SUPER_VL_BF16)
    assert code == 0
    assert "Best layout per GPU product" in out
    for product in ("NVIDIA-H100-80GB-HBM3", "NVIDIA-B200", "NVIDIA-L40S", "NVIDIA-GB10"):
        assert product in out
    assert "Chosen" in out
    assert "Per-GPU memory (GiB)" in out
    assert "activations" in out
    assert "max concurrency" in out
    assert "Rejected layouts:" in out


def test_table_with_one_gpu_skips_the_product_table(capsys: Capture) -> None:
    code, out, _ = run(capsys, SUPER_BF16, "--gpu", "h100", "--max-num-seqs", "512")
    assert code == 0
    assert "Best layout per GPU product" not in out
    assert "NVIDIA-H100-80GB-HBM3: 4 GPU(s) per replica (TP 4" in out


def test_sweep_shows_the_four_context_lengths(capsys: Capture) -> None:
    code, out, _ = run(capsys, SUPER_VL_BF16, "--gpu", "NVIDIA-H200", "--sweep-max-model-len")
    assert code == 0
    sweep = out[out.index("Context sweep") :]
    for length in ("32768", "131072", "262144", "1048576"):
        assert length in sweep
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in sweep


def test_sweep_concurrency_falls_with_context(capsys: Capture) -> None:
    _, out, _ = run(capsys, H8B, "--gpu", "l40s", "--sweep-max-model-len")
    sweep = out[out.index("Context sweep") :].splitlines()
    assert any("beyond the trained 8192" in line for line in sweep)


def test_flags_set_the_spec(capsys: Capture) -> None:
    code, out, _ = run(
        capsys,
        SUPER_VL_BF16,
        "--gpu",
        "NVIDIA-H200",
        "--max-model-len",
        "131072",
        "--min-concurrency",
        "3",
        "--tp",
        "8",
        "--replicas",
        "2",
        "--kv-cache-dtype",
        "fp8",
        "-o",
        "json",
    )
    assert code == 0
    plan = json.loads(out)
    assert plan["maxModelLen"] == 131072
    assert plan["tensorParallel"] == 8
    assert plan["replicas"] == 2
    assert plan["totalGPUs"] == 16
    assert plan["kvBytesPerToken"] == 9 * 256  # FP8: 9 layers × 2 × 1 head × 128 × 1 B


def test_precision_switches_to_the_sibling_checkpoint(capsys: Capture) -> None:
    code, out, _ = run(capsys, SUPER_BF16, "--precision", "NVFP4", "-o", "json")
    assert code == 0
    plan = json.loads(out)
    assert plan["modelId"] == "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
    assert plan["precision"] == "NVFP4"


def test_precision_without_such_a_checkpoint_is_bad_input(capsys: Capture) -> None:
    code, _, err = run(capsys, H8B, "--precision", "NVFP4")
    assert code == 2
    assert "no NVFP4 checkpoint" in err


def test_file_with_flags_on_top(capsys: Capture, tmp_path: Path) -> None:
    path = tmp_path / "deployment.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "serving.nemotron.io/v1alpha1",
                "kind": "NemotronDeployment",
                "metadata": {"name": "super", "namespace": "ai"},
                "spec": {
                    "model": {"id": SUPER_BF16},
                    "engine": {"maxModelLen": 65536},
                    "capacity": {"gpu": {"products": ["NVIDIA-B200"]}},
                },
            }
        )
    )
    code, out, _ = run(capsys, "-f", str(path), "--gpu", "NVIDIA-H200", "-o", "json")
    assert code == 0
    plan = json.loads(out)
    assert plan["maxModelLen"] == 65536  # from the file
    assert plan["gpuProduct"] == "NVIDIA-H200"  # the flag wins


def test_invalid_file_names_the_field(capsys: Capture, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: serving.nemotron.io/v1alpha1\nkind: NemotronDeployment\n"
        "metadata: {name: bad}\nspec:\n  model: {id: " + SUPER_BF16 + "}\n"
        "  engine: {maxModelLenn: 4096}\n"
    )
    code, _, err = run(capsys, "-f", str(path))
    assert code == 2
    assert "spec.engine.maxModelLenn" in err


def test_nothing_fits_exits_1_with_the_rejected_layouts(capsys: Capture) -> None:
    code, out, err = run(capsys, SUPER_BF16, "--gpu", "NVIDIA-L40S", "--tp", "2", "--pp", "1")
    assert code == 1
    assert out == ""
    assert "InsufficientGPUMemory" in err
    assert "Rejected layouts:" in err
    assert "weights need" in err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["example/unknown"], "spec.model.id"),
        ([H8B, "--max-model-len", "100000"], "spec.engine.maxModelLen"),
        ([H8B, "--gpu", "NVIDIA-X1"], "spec.capacity.gpu.products[0]"),
        ([SUPER_BF16, "--tp", "3"], "spec.capacity.parallelism.tensor"),
        ([H8B, "--min-concurrency", "0"], "spec.capacity.minConcurrency"),
        ([], "MODEL_ID"),
    ],
)
def test_bad_input_exits_2_naming_the_field(capsys: Capture, argv: list[str], needle: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert needle in err


def test_gpu_inventory_plans_on_the_cluster_s_gpus(capsys: Capture, tmp_path: Path) -> None:
    path = tmp_path / "nodes.json"
    nodes = [node(f"gpu-{i}", "NVIDIA-H200", 8, memory_mib=143771) for i in range(2)]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    code, out, _ = run(capsys, SUPER_VL_BF16, "--gpu-inventory", str(path), "-o", "json")
    assert code == 0
    assert json.loads(out)["gpuProduct"] == "NVIDIA-H200"


def test_inventory_without_gpus_is_infeasible(capsys: Capture, tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump({"items": [node("cpu-0", None, 0)]}))
    code, _, err = run(capsys, H8B, "--gpu-inventory", str(path))
    assert code == 1
    assert "no GPU nodes" in err


def test_gpu_inventory_with_resource_slices_plans_a_dra_deployment_on_them(
    capsys: Capture, tmp_path: Path
) -> None:
    from nemotron_sim.agents.node_objects import NodeGroup, build_node, gpu_facts
    from sim_cluster.simulated_addons.resource_slices import build_resource_slice

    b200 = NodeGroup("NVIDIA-B200", 8, 1, dra=True)
    items = [
        node("gpu-0", "NVIDIA-H200", 8, memory_mib=143771),
        build_node(b200, 0, gpu_facts("NVIDIA-B200"), "10.1.0.3"),
        build_resource_slice(b200, 0, "uid"),
    ]
    inventory = tmp_path / "cluster.yaml"
    inventory.write_text(yaml.safe_dump({"items": items}))
    for allocation, product in (("DRA", "NVIDIA-B200"), ("DevicePlugin", "NVIDIA-H200")):
        path = tmp_path / f"{allocation}.yaml"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "serving.nemotron.io/v1alpha1",
                    "kind": "NemotronDeployment",
                    "metadata": {"name": "x", "namespace": "ai"},
                    "spec": {
                        "model": {"id": SUPER_VL_BF16},
                        "capacity": {"gpu": {"allocation": allocation}},
                    },
                }
            )
        )
        code, out, _ = run(capsys, "-f", str(path), "--gpu-inventory", str(inventory), "-o", "json")
        assert code == 0
        assert json.loads(out)["gpuProduct"] == product


def test_vllm_version_picks_the_engine_profile(capsys: Capture) -> None:
    # The "done when": 0.34 shows its block size, 0.31 today's numbers.
    args = (SUPER_VL_BF16, "--gpu", "NVIDIA-H200", "-o", "json")
    _, new, _ = run(capsys, *args, "--vllm-version", "0.34.0")
    _, old, _ = run(capsys, *args, "--vllm-version", "0.31.0")
    new_plan, old_plan = json.loads(new), json.loads(old)
    assert (new_plan["engineVersion"], new_plan["blockSizeTokens"]) == ("0.34", 2112)
    assert (old_plan["engineVersion"], old_plan["blockSizeTokens"]) == ("0.31", 2096)
    pinned = spec(
        SUPER_VL_BF16,
        engine={"image": "vllm/vllm-openai:v0.31.0"},
        capacity={"gpu": {"products": ["NVIDIA-H200"]}},
    )
    assert old_plan == plan_deployment(pinned).plan.to_wire()
    _, default, _ = run(capsys, *args)
    assert json.loads(default) == new_plan  # the default image is v0.34.0


def test_the_table_header_names_the_profile(capsys: Capture) -> None:
    code, out, _ = run(capsys, H8B, "--vllm-version", "0.33.0")
    assert code == 0
    assert out.splitlines()[0].startswith("Engine    vLLM 0.33.0, profile 0.33 (block size 16;")


def test_vllm_version_with_an_untagged_image_sets_the_version_field(
    capsys: Capture, tmp_path: Path
) -> None:
    path = tmp_path / "d.yaml"
    body = {
        "kind": "NemotronDeployment",
        "metadata": {"name": "d"},
        "spec": {"model": {"id": H8B}, "engine": {"image": "registry.example/vllm@sha256:ab"}},
    }
    path.write_text(yaml.safe_dump(body))
    code, out, _ = run(capsys, "-f", str(path), "--vllm-version", "0.32.0", "-o", "json")
    assert code == 0
    assert json.loads(out)["engineVersion"] == "0.32"
    assert not any("not a vLLM version" in n for n in json.loads(out)["notes"])


def test_a_release_before_0_31_exits_2_naming_the_field(capsys: Capture) -> None:
    code, _, err = run(capsys, H8B, "--vllm-version", "0.29.0")
    assert code == 2
    assert "spec.engine.image" in err
    assert "older than the oldest release" in err
