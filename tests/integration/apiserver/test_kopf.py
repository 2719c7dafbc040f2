"""A real ``kopf run`` process against the simulated API server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from nemotron_sim.apiserver import ResourceKey
from tests.integration.apiserver.conftest import WIDGET_CRD, ApiHandle, wait_until

CONFIGMAPS = ResourceKey("", "v1", "configmaps")
WIDGETS = ResourceKey("test.sim.nemotron.io", "v1", "widgets")
OPERATOR = Path(__file__).with_name("kopf_operator.py")


def widget(size: int) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "test.sim.nemotron.io/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"size": size},
        }
    )


def start_operator(
    api: ApiHandle, log_path: Path, kubeconfig: Path | None = None
) -> subprocess.Popen[bytes]:
    kopf = Path(sys.executable).with_name("kopf")
    env = api.env if kubeconfig is None else {**api.env, "KUBECONFIG": str(kubeconfig)}
    with log_path.open("w") as log:
        return subprocess.Popen(
            [str(kopf), "run", "--standalone", "-A", str(OPERATOR)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def stop_operator(operator: subprocess.Popen[bytes]) -> None:
    operator.terminate()
    try:
        operator.wait(timeout=15)
    except subprocess.TimeoutExpired:
        operator.kill()
        operator.wait(timeout=5)


def test_kopf_sees_create_update_delete_and_children_are_collected(
    api: ApiHandle, tmp_path: Path
) -> None:
    api.kubectl("apply", "-f", str(WIDGET_CRD))
    log_path = tmp_path / "kopf.log"
    operator = start_operator(api, log_path)
    try:
        api.kubectl("apply", "-f", "-", input=widget(2))
        child = wait_until(
            lambda: api.store(lambda s: s.get(CONFIGMAPS, "default", "w-child")),
            what="the child ConfigMap",
        )
        owner = api.store(lambda s: s.get(WIDGETS, "default", "w"))
        assert owner is not None
        reference = child["metadata"]["ownerReferences"][0]
        assert reference["uid"] == owner["metadata"]["uid"]
        assert reference["controller"] is True
        assert "test.sim.nemotron.io/finalizer" in owner["metadata"]["finalizers"]
        wait_until(lambda: _phase(api) == "Created", what="status.phase Created")

        api.kubectl("patch", "wd", "w", "--type=merge", "-p", '{"spec":{"size":3}}')
        wait_until(
            lambda: (
                (api.store(lambda s: s.get(CONFIGMAPS, "default", "w-child")) or {})
                .get("data", {})
                .get("size")
                == "3"
            ),
            what="the child to follow spec.size",
        )
        wait_until(lambda: _phase(api) == "Resized to 3", what="status after the update")

        api.kubectl("delete", "wd", "w", "--timeout=20s")  # waits for kopf's finalizer
        assert api.store(lambda s: s.get(CONFIGMAPS, "default", "w-deleted")) is not None
        assert api.store(lambda s: s.get(CONFIGMAPS, "default", "w-child")) is None
    finally:
        stop_operator(operator)
    assert "Traceback" not in log_path.read_text(), log_path.read_text()


def test_kopf_recovers_from_an_outage_and_failed_writes(api: ApiHandle, tmp_path: Path) -> None:
    api.kubectl("apply", "-f", str(WIDGET_CRD))
    operator = start_operator(api, tmp_path / "kopf.log")
    try:
        wait_until(lambda: api.store(lambda s: s.watchers_for(WIDGETS)) >= 1, what="kopf's watch")
        api.thread.call(lambda: api.thread._require().faults.unavailable(1.0))
        wait_until(lambda: not api.thread.call(api.thread._require().faults.active))
        status, _ = api.request(
            "POST",
            "/_sim/faults",
            {"method": "POST", "path": r"/configmaps(\?|$)", "status": 500, "count": 2},
        )
        assert status == 201
        api.kubectl("apply", "-f", "-", input=widget(1))  # kopf must have re-watched by itself
        wait_until(
            lambda: api.store(lambda s: s.get(CONFIGMAPS, "default", "w-child")),
            seconds=20,
            what="the child after kopf retried its handler",
        )
        _, journal = api.request("GET", "/_sim/requests")
        posts = [
            r
            for r in journal
            if r["method"] == "POST" and r["path"].split("?")[0].endswith("/configmaps")
        ]
        assert [r["status"] for r in posts] == [500, 500, 201]  # retried; nothing stored twice
    finally:
        stop_operator(operator)


def _phase(api: ApiHandle) -> str | None:
    obj = api.store(lambda s: s.get(WIDGETS, "default", "w")) or {}
    return (obj.get("status") or {}).get("phase")


KOPF_ROLE = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-operator}
rules:
- {apiGroups: [test.sim.nemotron.io], resources: [widgets], verbs: [get, list, watch, patch]}
- {apiGroups: [test.sim.nemotron.io], resources: [widgets/status], verbs: [patch]}
- {apiGroups: ["", events.k8s.io], resources: [events], verbs: [create]}
# kopf watches CRDs to discover resources unless scanning is disabled
- {apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: widget-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-operator}
subjects: [{kind: ServiceAccount, name: op, namespace: default}]
"""
CONFIGMAP_WRITER = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: children, namespace: default}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [create, patch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: children, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: children}
subjects: [{kind: ServiceAccount, name: op, namespace: default}]
"""


def test_kopf_as_a_service_account_is_held_to_its_rbac(api: ApiHandle, tmp_path: Path) -> None:
    """kopf and its handlers' client use a token kubeconfig (over HTTPS): what the ClusterRole
    grants works; the child ConfigMap is refused with 403 until a Role allows it."""
    api.kubectl("apply", "-f", str(WIDGET_CRD))
    api.kubectl("create", "serviceaccount", "op")
    api.kubectl("apply", "-f", "-", input=KOPF_ROLE)
    server = api.thread._require()
    token = api.thread.call(lambda: server.tokens.issue("default", "op"))
    kubeconfig = api.thread.call(lambda: server.kubeconfig(tmp_path / "op", token=token))
    log_path = tmp_path / "kopf.log"
    operator = start_operator(api, log_path, kubeconfig=kubeconfig)
    try:
        api.kubectl("apply", "-f", "-", input=widget(2))
        refusal = (
            'configmaps is forbidden: User \\"system:serviceaccount:default:op\\" cannot create '
            'resource \\"configmaps\\" in API group \\"\\" in the namespace \\"default\\"'
        )
        wait_until(lambda: refusal in log_path.read_text(), what="the handler's 403")
        api.kubectl("apply", "-f", "-", input=CONFIGMAP_WRITER)
        wait_until(
            lambda: api.store(lambda s: s.get(CONFIGMAPS, "default", "w-child")),
            what="the child once the Role allows it",
        )
        wait_until(lambda: _phase(api) == "Created", what="status.phase Created")
    finally:
        stop_operator(operator)
    assert "APIForbidden" not in log_path.read_text()  # kopf's own requests were all granted
