"""hack/build-lws.sh: the directory it builds into is the one the simulator looks in, its second
run is a no-op, and the binary says the pinned version (hack/test.sh builds it first)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sim_cluster import lws

SCRIPT = Path(__file__).resolve().parents[3] / "hack" / "build-lws.sh"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_script_and_the_simulator_agree_on_the_directory() -> None:
    printed = run("--print-dir")
    assert printed.returncode == 0, printed.stderr
    assert Path(printed.stdout.strip()) == lws.build_dir()


def test_a_second_run_builds_nothing_and_the_version_is_stamped() -> None:
    binary = lws.build_dir() / "bin" / "lws"
    before = binary.stat().st_mtime_ns
    result = run()
    assert result.returncode == 0, result.stderr
    assert f"up to date: {lws.build_dir()}" in result.stderr
    assert binary.stat().st_mtime_ns == before
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[0] == f"Version: {lws.version()}"
    assert lws.version() == "v0.9.0"


def test_the_webhook_configurations_reach_the_process_and_only_lws_pods() -> None:
    documents = lws.webhook_configurations(
        lws.build_dir() / "webhook" / "manifests.yaml", "https://10.0.0.1:9443", b"CA"
    )
    hooks = {h["name"]: h for d in documents for h in d["webhooks"]}
    assert set(hooks) == {
        "mleaderworkerset.kb.io", "mpod.kb.io", "vleaderworkerset.kb.io", "vpod.kb.io",
        "vdisaggregatedset.kb.io",
    }  # fmt: skip
    assert hooks["mpod.kb.io"]["clientConfig"]["url"] == "https://10.0.0.1:9443/mutate--v1-pod"
    for name in ("mpod.kb.io", "vpod.kb.io"):  # a pod without LWS's label never waits on it
        selector = hooks[name]["objectSelector"]["matchExpressions"]
        assert selector == [{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]
    assert "objectSelector" not in hooks["mleaderworkerset.kb.io"]
