"""The operator starts as a UID with no passwd entry, as the chart's 65532 is in its image.

kopf names its identity with ``getpass.getuser()`` unless it is given one, and that raises
``KeyError: 'getpwuid(): uid not found: 65532'`` when neither USER, LOGNAME, LNAME nor USERNAME
is set and the UID has no passwd entry: the operator stopped with exit 1 on every real kubelet.
Here the operator runs with those variables removed and ``pwd.getpwuid`` failing exactly as it
does for such a UID (a process cannot be started as another UID here without root and a
world-readable interpreter; the real-node e2e tier runs the image itself)."""

from __future__ import annotations

import sys
from pathlib import Path

from nemotron_sim.kubeapi.resources import ResourceKey
from tests.integration.operator.helpers import NAMESPACE, apply, deployment, wait_ready
from tests.integration.operator_process import OperatorProcess, ensure_namespace, install_crds
from tests.kube import KubeHandle

LEASES = ResourceKey("coordination.k8s.io", "v1", "leases")

NO_PASSWD_ENTRY = """
import pwd, runpy
def getpwuid(uid):
    raise KeyError(f"getpwuid(): uid not found: {uid}")
pwd.getpwuid = getpwuid
runpy.run_module("nemotron_operator.cli", run_name="__main__", alter_sys=True)
"""
USER_VARIABLES = ("USER", "LOGNAME", "LNAME", "USERNAME", "POD_NAME")


def test_operator_reconciles_as_a_uid_without_passwd_entry(
    sim_cluster: KubeHandle, tmp_path: Path
) -> None:
    install_crds(sim_cluster)
    operator = OperatorProcess(
        sim_cluster, tmp_path / "operator.log", program=(sys.executable, "-c", NO_PASSWD_ENTRY)
    )
    for name in USER_VARIABLES:
        operator.env.pop(name, None)
    operator.env["HOSTNAME"] = "nemotron-operator-6d9f-x2x7q"  # as in a pod: its name
    operator.start()
    try:
        ensure_namespace(sim_cluster, NAMESPACE)
        apply(sim_cluster, deployment("identity"))
        wait_ready(sim_cluster, "identity")
        assert operator.running, operator.log()[-4000:]
        assert "getpwuid" not in operator.log()
        lease = sim_cluster.get(LEASES, "default", "nemotron-operator") or {}
        holder = str((lease.get("spec") or {}).get("holderIdentity"))
        assert holder.startswith("nemotron-operator-6d9f-x2x7q-"), holder
    finally:
        operator.stop()
    operator.check_log()
