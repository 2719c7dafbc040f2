"""Kubeconfig files for the control plane's clients: certificates or a bearer token."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

CLUSTER = "nemotron-sim"


def kubeconfig(
    server: str,
    ca_pem: bytes,
    *,
    user: str,
    cert: Path | None = None,
    key: Path | None = None,
    token: str | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    credentials: dict[str, Any] = {}
    if cert is not None and key is not None:
        credentials = {
            "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
            "client-key-data": base64.b64encode(key.read_bytes()).decode(),
        }
    if token is not None:
        credentials["token"] = token
    context: dict[str, Any] = {"cluster": CLUSTER, "user": user}
    if namespace:
        context["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": CLUSTER, "context": context}],
        "current-context": CLUSTER,
    }


def write_kubeconfig(path: Path, config: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
