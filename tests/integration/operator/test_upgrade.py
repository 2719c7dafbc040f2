"""Upgrade of the operator from the previous version to this one with 10 Ready deployments
(docs/reliability.md case 6), in the documented order: the previous operator with its own CRD,
then (operator stopped) this version's CRD and this operator.

When the two versions render the same pod template, no serving pod restarts and every deployment
stays Ready throughout. When they do not (the config hash on the StatefulSets' pod template
differs; docs/reliability.md names this version's change: the compile cache of docs/startup.md),
each serving pod is replaced once, by its StatefulSet's rolling update, every deployment is Ready
again, and the new version then makes no write over three resyncs.

"The previous version" is the operator package and CRD at ``PREVIOUS``, taken with
``git archive`` and run from a directory of its own ahead of the installed package on
``PYTHONPATH``. The audit log's User-Agent tells the two apart: the previous version sends
aiohttp's, this one ``nemotron-operator/… (identity)``."""

from __future__ import annotations

import io
import subprocess
import tarfile
import threading
import time
from pathlib import Path

import pytest

from tests.integration.operator.helpers import (
    NAMESPACE,
    PODS,
    STATEFULSETS,
    apply,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import ROOT, OperatorProcess, ensure_namespace, install_crds
from tests.kube import KubeHandle

PREVIOUS = "a6e24f3"  # "Behavioural check before a serving pod takes traffic"
COUNT = 10
H200 = {"gpu": {"products": ["NVIDIA-H200"]}}  # 10 of the cluster's 16 H200
CONFIG_HASH = "serving.nemotron.io/config-hash"


def _previous_package(where: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", PREVIOUS, "operator/nemotron_operator"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(where, filter="data")
    return where / "operator"


def _install_previous_crds(cluster: KubeHandle, where: Path) -> None:
    crd = subprocess.run(
        ["git", "show", f"{PREVIOUS}:crds/serving.nemotron.io_nemotrondeployments.yaml"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout  # fmt: skip
    where.write_bytes(crd)
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(where))


def _template_hashes(cluster: KubeHandle) -> dict[str, str]:
    """Each StatefulSet's pod-template config hash (the renderer's fingerprint of the template)."""
    return {
        s["metadata"]["name"]: s["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH]
        for s in cluster.list(STATEFULSETS, NAMESPACE)
    }


def _serving(cluster: KubeHandle) -> dict[str, tuple[str, int]]:
    """Each serving pod: (uid, restarts)."""
    found = {}
    for pod in cluster.list(PODS, NAMESPACE):
        restarts = sum(c.get("restartCount", 0) for c in pod["status"].get("containerStatuses", []))
        found[pod["metadata"]["name"]] = (pod["metadata"]["uid"], restarts)
    return found


@pytest.mark.slow
def test_upgrade_from_the_previous_version_restarts_no_pod_and_stays_ready(
    sim_cluster: KubeHandle, tmp_path: Path
) -> None:
    _install_previous_crds(sim_cluster, tmp_path / "previous-crd.yaml")
    ensure_namespace(sim_cluster, NAMESPACE)
    old_root = _previous_package(tmp_path / "previous")
    old = OperatorProcess(sim_cluster, tmp_path / "previous.log", env={"PYTHONPATH": str(old_root)})
    new = OperatorProcess(sim_cluster, tmp_path / "operator.log")
    names = [f"nano-{i}" for i in range(COUNT)]
    old.start()
    try:
        # Pinned to H200: in a first run the previous version left nano-0, created at once
        # after its start, WaitingForCapacity for 4 minutes (not investigated: it is fixed or
        # not in this version, and out of this test's subject).
        time.sleep(3.0)
        for name in names:
            apply(sim_cluster, deployment(name, capacity=H200))
        for name in names:
            wait_ready(sim_cluster, name, seconds=240)
    finally:
        print(old.log()[-4000:])
    before = _serving(sim_cluster)
    hashes_before = _template_hashes(sim_cluster)
    assert len(before) == COUNT
    samples: list[dict[str, str]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append({n: str(status(sim_cluster, n).get("phase")) for n in names})
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        switched = time.monotonic()
        assert old.stop() == 0
        install_crds(sim_cluster)  # this version's CRD, while no operator runs
        start_mark = new.mark()
        new.start()
        new.wait_for_log("holding Lease", seconds=30)
        new.wait_reconciles(COUNT, seconds=120)
        took = time.monotonic() - switched
        template_changed = _template_hashes(sim_cluster) != hashes_before
        if template_changed:  # each pod rolls once: wait until all are Ready on the new template
            for name in names:
                wait_ready(sim_cluster, name, seconds=240)
            new.wait_reconciles(2 * COUNT, seconds=120)
        rolled = time.monotonic() - switched
        mark = new.mark()
        new.wait_reconciles(3 * COUNT, seconds=60)  # three resyncs of every deployment
        idle_writes = new.writes(mark)
        upgrade_writes = new.writes(start_mark)
    finally:
        done.set()
        sampler.join(10)
        new.stop()
        print(new.log()[-4000:])
    old.check_log()
    new.check_log()
    print(
        f"FIGURE upgrade: previous operator stopped to {COUNT} reconciles by the new: {took:.1f} s"
    )
    written = sorted({f"{w['method']} {w['path'].split('?')[0]}" for w in upgrade_writes})
    print(
        f"FIGURE upgrade: writes by the new version (Lease aside): {len(upgrade_writes)} {written}"
    )
    print(f"FIGURE upgrade: pod template changed: {template_changed}; Ready again: {rolled:.1f} s")
    after = _serving(sim_cluster)
    assert set(after) == set(before)
    assert samples
    assert idle_writes == []
    if template_changed:
        # Replaced once each by the rolling update (new pods, no container restarted in place),
        # and every deployment Ready at the end.
        assert all(after[pod][0] != before[pod][0] and after[pod][1] == 0 for pod in after)
        assert set(samples[-1].values()) == {"Ready"}
    else:
        assert after == before  # same pods, no container restarted
        not_ready = [s for s in samples if set(s.values()) != {"Ready"}]
        assert not_ready == [], not_ready[:3]
    agents = {e.user_agent for e in sim_cluster.audit() if e.resource == "leases"}
    assert any(a.startswith("nemotron-operator/") for a in agents)  # this version
    assert any(not a.startswith("nemotron-operator/") for a in agents)  # the previous one
