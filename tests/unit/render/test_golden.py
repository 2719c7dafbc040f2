"""Golden manifests: `nemotron-operator render` for the examples and tests/golden/inputs prints
exactly the committed files, every object in them is valid Kubernetes, and a second run prints the
same bytes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.golden import cases
from tests.unit.render.schemas import validate_object

CASES = sorted(cases.CASES)


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {case: cases.render(case) for case in CASES}


@pytest.mark.parametrize("case", CASES)
def test_render_matches_the_committed_golden_file(case: str, rendered: dict[str, str]) -> None:
    path = cases.expected_path(case)
    assert path.exists(), f"{path} is missing: run hack/update-golden.sh"
    assert rendered[case] == path.read_text(encoding="utf-8"), (
        f"{path.name} is out of date: run hack/update-golden.sh and review the diff"
    )


@pytest.mark.parametrize("case", CASES)
def test_rendering_twice_gives_the_same_bytes(case: str, rendered: dict[str, str]) -> None:
    assert cases.render(case) == rendered[case]


def _objects(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


@pytest.mark.parametrize("case", CASES)
def test_every_golden_object_is_valid(case: str, rendered: dict[str, str]) -> None:
    for obj in _objects(rendered[case]):
        validate_object(obj)


def test_no_golden_file_without_a_case() -> None:
    files = {p.stem for p in cases.EXPECTED.glob("*.yaml")}
    assert files == set(cases.CASES)


def test_the_goldens_cover_the_layouts_the_issue_names(rendered: dict[str, str]) -> None:
    def kinds(case: str) -> list[str]:
        return [o["kind"] for o in _objects(rendered[case])]

    def statefulsets(case: str) -> list[dict[str, Any]]:
        return [o for o in _objects(rendered[case]) if o["kind"] == "StatefulSet"]

    # single node BF16 on H200, NVFP4 on one B200, multi-node, Karpenter, plugin parser
    assert (
        "--tensor-parallel-size"
        in statefulsets("super-vl-bf16-h200")[0]["spec"]["template"]["spec"]["containers"][0][
            "args"
        ]
    )
    b200 = statefulsets("super-nvfp4-b200")[0]["spec"]["template"]["spec"]
    assert b200["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-B200"
    assert b200["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert len(statefulsets("multi-node-h100")) == 2
    assert "NodePool" in kinds("karpenter-h200")
    assert "PodMonitor" in kinds("karpenter-h200")
    plugin = statefulsets("plugin-parser")[0]["spec"]["template"]["spec"]["containers"][0]
    assert "--reasoning-parser-plugin" in plugin["args"]


@pytest.mark.slow  # runs the golden scripts: ~10 s; in the suite, not in make test-fast
def test_verify_reports_a_stale_file_and_update_repairs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in cases.EXPECTED.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "minimal.yaml").write_text("stale\n", encoding="utf-8")
    (tmp_path / "orphan.yaml").write_text("no case\n", encoding="utf-8")
    monkeypatch.setattr(cases, "EXPECTED", tmp_path)
    assert cases.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "minimal.yaml is out of date" in out
    assert "orphan.yaml has no case" in out
    assert cases.main([]) == 0
    assert cases.main(["--check"]) == 0
    assert not (tmp_path / "orphan.yaml").exists()
