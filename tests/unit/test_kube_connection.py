"""The operator authenticates with the kubeconfig's or the pod's ServiceAccount token."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemotron_operator.kube.config import load_connection

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: sa-token-123}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
"""


def test_a_kubeconfig_token_becomes_the_bearer_header(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    connection = load_connection(str(path))
    assert connection.authorization() == "Bearer sa-token-123"
    assert connection.token == "sa-token-123"


def test_the_in_cluster_token_becomes_the_bearer_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubernetes.config import incluster_config

    (tmp_path / "token").write_text("pod-token-456")
    (tmp_path / "ca.crt").write_text("not read: no request is made")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(tmp_path / "ca.crt"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    connection = load_connection()
    assert (connection.authorization() or "").lower() == "bearer pod-token-456"
    assert connection.token == "pod-token-456"
