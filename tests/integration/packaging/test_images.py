"""What can be checked of the two images without a Docker engine: pinned bases, a numeric non-root
user, the entrypoints, what is copied in, and that the operator's wheel holds no simulator code."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.integration.packaging.dockerfiles import instructions

OPERATOR = Path("hack/images/operator")
VLLM_STUB = Path("hack/images/vllm-stub")
# An exact tag names a full version (python:3.11.14-slim-bookworm), or a digest pins the image.
EXACT_TAG = re.compile(
    r"^[\w./-]+:\d+\.\d+\.\d+[\w.-]*(@sha256:[0-9a-f]{64})?$|@sha256:[0-9a-f]{64}$"
)


def base_images(steps: list[tuple[str, str]]) -> list[str]:
    """Each stage's base with ARG defaults substituted (stages named by AS are resolved)."""
    defaults = {}
    for word, rest in steps:
        if word == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            defaults[name] = value
    stages: dict[str, str] = {}
    bases = []
    for word, rest in steps:
        if word != "FROM":
            continue
        image, _, alias = re.sub(r"--platform=\S+\s+", "", rest).partition(" AS ")
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: defaults.get(m.group(1), m.group(0)), image)
        image = stages.get(image, image)
        stages[alias.strip()] = image
        bases.append(image)
    return bases


@pytest.mark.parametrize("image_dir", [OPERATOR, VLLM_STUB])
def test_base_images_are_pinned(repo_root: Path, image_dir: Path) -> None:
    steps = instructions(repo_root / image_dir / "Dockerfile")
    bases = base_images(steps)
    assert bases
    for base in bases:
        assert EXACT_TAG.search(base), f"{image_dir}: pin {base} by exact version tag or digest"


@pytest.mark.parametrize("image_dir", [OPERATOR, VLLM_STUB])
def test_images_run_as_a_numeric_non_root_user(repo_root: Path, image_dir: Path) -> None:
    steps = instructions(repo_root / image_dir / "Dockerfile")
    last_stage = steps[max(i for i, (word, _) in enumerate(steps) if word == "FROM") :]
    users = [rest for word, rest in last_stage if word == "USER"]
    assert users, f"{image_dir}: the final stage sets no USER (it would run as root)"
    user, _, group = users[-1].partition(":")
    # Numeric, so kubelet's runAsNonRoot check can verify it without reading /etc/passwd.
    assert user.isdigit()
    assert int(user) != 0
    assert not group or group.isdigit()
    assert not group or int(group) != 0


def test_operator_image_entrypoint_is_nemotron_operator_run(repo_root: Path) -> None:
    steps = dict(instructions(repo_root / OPERATOR / "Dockerfile"))
    assert json.loads(steps["ENTRYPOINT"]) == ["nemotron-operator"]
    assert json.loads(steps["CMD"]) == ["run"]  # the chart passes args: [run, ...]


def test_operator_image_copies_the_operator_package_only(repo_root: Path) -> None:
    steps = instructions(repo_root / OPERATOR / "Dockerfile")
    copied = [
        source
        for word, rest in steps
        if word == "COPY" and "--from=" not in rest
        for source in [a for a in rest.split() if not a.startswith("--")][:-1]
    ]
    assert sorted(copied) == sorted(
        ["pyproject.toml", "README.md", "constraints.txt", "operator/nemotron_operator/"]
    )
    text = (repo_root / OPERATOR / "Dockerfile").read_text()
    assert "--constraint constraints.txt" in text  # the pinned dependency set
    assert "--no-index" in text  # the final stage installs only the wheels built in the image
    # The build context itself: everything excluded except what is copied.
    ignore = (repo_root / OPERATOR / "Dockerfile.dockerignore").read_text().split()
    assert ignore[ignore.index("*") :] == [
        "*",
        "!pyproject.toml",
        "!README.md",
        "!constraints.txt",
        "!operator/nemotron_operator/",
        "**/__pycache__",
    ]


def test_wheel_config_lists_only_the_operator_package(repo_root: Path) -> None:
    import tomllib

    config = tomllib.loads((repo_root / "pyproject.toml").read_text())
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["operator/nemotron_operator"]
    assert config["project"]["scripts"] == {"nemotron-operator": "nemotron_operator.cli:main"}


@pytest.mark.slow
def test_built_wheel_holds_no_simulator_code(repo_root: Path, tmp_path: Path) -> None:
    """Build the wheel as the image does (pip wheel --no-deps .) and read what it ships. The
    pinned hatchling from the dev extra builds it (the tests have no route to PyPI)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path),
            str(repo_root),
        ],
        check=True,
        capture_output=True,
        timeout=240,
    )
    (wheel,) = tmp_path.glob("nemotron_operator-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = archive.read(entry_points).decode()
    top_level = {name.split("/")[0] for name in names}
    assert top_level - {"nemotron_operator"} == {wheel.name.split("-py")[0] + ".dist-info"}
    assert "nemotron_operator/cli/__init__.py" in names
    assert not [name for name in names if "nemotron_sim" in name or "sim_cluster" in name]
    assert "nemotron-operator = nemotron_operator.cli:main" in scripts


def test_stand_in_image_runs_the_rendered_download_script(repo_root: Path, tmp_path: Path) -> None:
    """The operator's download init container runs in the engine image; in the kind tier that is
    the stand-in vLLM image, whose `hf` must satisfy the rendered script without a network."""
    from nemotron_operator.render.storage import DOWNLOAD_MARKER, DOWNLOAD_SCRIPT

    dockerfile = (repo_root / VLLM_STUB / "Dockerfile").read_text()
    assert "COPY --chmod=0755 hack/images/vllm-stub/hf /usr/local/bin/hf" in dockerfile
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hf").symlink_to(repo_root / VLLM_STUB / "hf")
    model_dir = tmp_path / "model"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "MODEL_ID": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "MODEL_REVISION": "main",
        "MODEL_DIR": str(model_dir),
        "HF_TOKEN": "hf_canary_never_printed",
    }
    for _ in range(2):  # the second run finds the marker and downloads nothing
        result = subprocess.run(
            ["sh", "-c", DOWNLOAD_SCRIPT],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert "hf_canary_never_printed" not in result.stdout + result.stderr
    assert (
        model_dir / DOWNLOAD_MARKER
    ).read_text().strip() == "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16@main"
    assert "already complete" in result.stdout


def test_the_operator_needs_only_its_declared_runtime_dependencies(repo_root: Path) -> None:
    """The image installs the wheel with [project].dependencies only (no sim extra, no dev
    tools): `nemotron-operator run`'s modules must import with everything else missing, or the
    pod fails at start. Optional imports (kubernetes' `try: import kubernetes_validate`) may fall
    back; a hard import of anything else fails here as it would in the image."""
    import tomllib
    from importlib import metadata

    from tests.integration.vllm_stub.closure import normalise, requirement_closure

    declared = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]["dependencies"]
    allowed = requirement_closure({re.split(r"[=<>!~\[ ]", d, maxsplit=1)[0] for d in declared})
    allowed.add("nemotron-operator")
    providers = metadata.packages_distributions()
    blocked = [
        *sorted(
            module
            for module, dists in providers.items()
            if not {normalise(d) for d in dists} & allowed and module.isidentifier()
        ),
        "nemotron_sim",
        "sim_cluster",
    ]
    assert {"cryptography", "jsonschema", "pytest", "nemotron_sim", "sim_cluster"} <= set(blocked)
    probe = """
import importlib.abc, json, sys
blocked = set(json.loads(sys.argv[1]))
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the image)", name=name)
        return None
sys.meta_path.insert(0, Missing())
import nemotron_operator.cli, nemotron_operator.kube.config
import nemotron_operator.controller.runtime.run
import kubernetes.client, kubernetes.config
print("imports ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(blocked)],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "imports ok" in result.stdout
