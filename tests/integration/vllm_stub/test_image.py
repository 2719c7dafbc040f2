"""The stand-in's container image installs everything the stand-in imports (no Docker needed).

The image installs only hack/images/vllm-stub/requirements.txt (plus the package itself with
--no-deps). If the stand-in's import chain grows a new third-party dependency, this test fails
here instead of a pod failing in the kind tier.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tests.integration.vllm_stub.closure import normalise, requirement_closure

pytestmark = pytest.mark.integration

IMAGE_DIR = Path("hack/images/vllm-stub")


def test_image_requirements_cover_the_stand_ins_imports(repo_root: Path) -> None:
    lines = (repo_root / IMAGE_DIR / "requirements.txt").read_text().splitlines()
    wanted = {line.strip() for line in lines if line.strip() and not line.startswith("#")}
    # Only what the import adds: site hooks (setuptools' .pth) run before it in any venv.
    probe = (
        "import json, sys; before = set(sys.modules); import nemotron_sim.vllm; "
        "print(json.dumps(sorted({name.split('.')[0] for name in set(sys.modules) - before})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    providers = metadata.packages_distributions()
    imported = {
        normalise(dist)
        for module in json.loads(result.stdout)
        for dist in providers.get(module, [])
    } - {"nemotron-operator"}
    assert imported, "found no third-party imports at all: the probe is broken"
    missing = imported - requirement_closure(wanted)
    assert not missing, f"add to {IMAGE_DIR}/requirements.txt: {sorted(missing)}"
    assert {"kopf", "kubernetes"}.isdisjoint(imported)


def test_dockerfile_installs_those_requirements_and_runs_the_module_as_vllm(
    repo_root: Path,
) -> None:
    dockerfile = (repo_root / IMAGE_DIR / "Dockerfile").read_text()
    assert "pip install -c constraints.txt -r requirements.txt" in dockerfile
    assert "pip install --no-deps ." in dockerfile
    assert 'ENTRYPOINT ["vllm", "serve"]' in dockerfile
    shim = (repo_root / IMAGE_DIR / "vllm").read_text()
    assert 'exec python -m nemotron_sim.vllm "$@"' in shim
