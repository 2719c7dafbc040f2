"""A real ``kopf run`` process against the simulated API server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from nemotron_operator.sim.apiserver import ResourceKey
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


def test_kopf_sees_create_update_delete_and_children_are_collected(
    api: ApiHandle, tmp_path: Path
) -> None:
    api.kubectl("apply", "-f", str(WIDGET_CRD))
    log_path = tmp_path / "kopf.log"
    kopf = Path(sys.executable).with_name("kopf")
    with log_path.open("w") as log:
        operator = subprocess.Popen(
            [str(kopf), "run", "--standalone", "-A", str(OPERATOR)],
            env=api.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
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
        operator.terminate()
        try:
            operator.wait(timeout=15)
        except subprocess.TimeoutExpired:
            operator.kill()
            operator.wait(timeout=5)
    assert "Traceback" not in log_path.read_text(), log_path.read_text()


def _phase(api: ApiHandle) -> str | None:
    obj = api.store(lambda s: s.get(WIDGETS, "default", "w")) or {}
    return (obj.get("status") or {}).get("phase")
