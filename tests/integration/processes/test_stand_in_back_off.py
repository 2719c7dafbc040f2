"""The simulated kubelet backs a crash-looping stand-in vLLM off as it backs off a process: from
``crash_backoff_seconds``, doubling, capped at ``crash_backoff_cap_seconds`` (this cluster: 0.3 s
to 1.2 s, conftest.PROCESS_OPTIONS)."""

from __future__ import annotations

from typing import Any

import yaml

from nemotron_sim.kubeapi.kinds import PODS
from tests.integration.cluster.manifests import vllm_statefulset


def test_a_refused_stand_in_restarts_at_the_clusters_back_off_cap(sim_cluster: Any) -> None:
    """Seven restarts take 0.3 + 0.6 + 5 x 1.2 = 6.9 s of back-off at a 1.2 s cap; at the
    kubelet's default cap (300 s) the seventh would come after 0.3 + 0.6 + ... + 19.2 = 38 s."""
    manifest = vllm_statefulset("refused", extra_args=("--no-such-flag",))
    sim_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))

    def restarts() -> int:
        pod = sim_cluster.get(PODS, "default", "refused-0") or {}
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        return int(statuses[0].get("restartCount", 0))

    sim_cluster.wait_until(lambda: restarts() >= 7, seconds=20, what="seven restarts")
    pod = sim_cluster.get(PODS, "default", "refused-0")
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    assert "--no-such-flag" in waiting["message"]
