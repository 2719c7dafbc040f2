"""The suite's reader of kube-apiserver's audit log, which it reads while the server writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kube import audit_events


def _event(audit_id: str, verb: str) -> str:
    return json.dumps(
        {
            "kind": "Event",
            "auditID": audit_id,
            "stage": "ResponseComplete",
            "verb": verb,
            "user": {"username": "system:serviceaccount:nemotron-system:nemotron-operator"},
            "objectRef": {"resource": "nemotrondeployments", "apiGroup": "serving.nemotron.io"},
            "responseStatus": {"code": 200},
            "annotations": {"authorization.k8s.io/decision": "allow"},
        }
    )


def test_a_line_the_server_is_still_writing_is_left_for_the_next_read(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    first, second = _event("a", "get"), _event("b", "patch")
    log.write_text(f"{first}\n{second[:40]}")

    assert [(e.verb, e.allowed) for e in audit_events(log)] == [("get", True)]

    log.write_text(f"{first}\n{second}\n")
    assert [e.verb for e in audit_events(log)] == ["get", "patch"]


def test_a_broken_line_in_the_middle_still_fails(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_text(f"{_event('a', 'get')[:40]}\n{_event('b', 'patch')}\n")
    with pytest.raises(json.JSONDecodeError):
        audit_events(log)
