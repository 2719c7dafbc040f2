"""The LeaderWorkerSet controller as an add-on of the simulated cluster (``--addons lws``).

The real controller (``sigs.k8s.io/lws`` ``./cmd``, built by ``hack/build-lws.sh``) runs as a
local process in the cluster's network namespace, with its webhooks served on the control plane's
address (port 9443) under a certificate the cluster CA issues, and registered as
Mutating/ValidatingWebhookConfigurations whose ``clientConfig.url`` reaches it. The webhooks are
not optional: without them nothing defaults a LeaderWorkerSet (the controller panics on a nil
rollout partition) and nothing labels the worker pods or injects ``LWS_LEADER_ADDRESS``. The pod
webhooks keep LWS's own ``objectSelector`` (pods with ``leaderworkerset.sigs.k8s.io/name``), so
no other pod depends on the process. The CRDs are installed with the cluster's (before
kube-controller-manager starts, so its garbage collector knows the types at once).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import ssl
import time
from pathlib import Path
from typing import Any

import yaml

from nemotron_operator.kube.transport import APPLY, Transport
from nemotron_sim.kubeapi.resources import ResourceKey
from sim_cluster.controlplane import ControlPlane, ControlPlaneError
from sim_cluster.controlplane.processes import Component, tail, wait_healthy

_ROOT = Path(__file__).resolve().parents[2]
RECIPE = _ROOT / "hack" / "lws"
CACHE = _ROOT / ".cache" / "lws"
WEBHOOK_PORT = 9443  # LWS's default (DefaultWebhookPort)
HEALTH_PORT = 9440
_START_SECONDS = 120.0  # as the control plane: a loaded 2-core runner is slow
_POD_LABEL = "leaderworkerset.sigs.k8s.io/name"  # what LWS's own kustomize patch selects
WEBHOOK_KINDS = {
    "MutatingWebhookConfiguration": ResourceKey(
        "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"
    ),
    "ValidatingWebhookConfiguration": ResourceKey(
        "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"
    ),
}


def version(recipe: Path = RECIPE) -> str:
    text = (recipe / "go.mod").read_text()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "sigs.k8s.io/lws":
            return parts[1]
    raise ControlPlaneError(f"{recipe / 'go.mod'} does not require sigs.k8s.io/lws")


def build_dir(recipe: Path = RECIPE) -> Path:
    """``.cache/lws/lws-<version>_<hash of go.mod and go.sum>`` (what hack/build-lws.sh writes)."""
    digest = hashlib.sha256((recipe / "go.mod").read_bytes() + (recipe / "go.sum").read_bytes())
    directory = CACHE / f"lws-{version(recipe)}_{digest.hexdigest()[:12]}"
    if not (directory / "bin" / "lws").exists() or not (directory / "crds").is_dir():
        raise ControlPlaneError(
            f"no LeaderWorkerSet build in {directory}: run hack/build-lws.sh (hack/test.sh does)"
        )
    return directory


def config(ip: str, cert_dir: Path) -> dict[str, Any]:
    """LWS's ``--config``: its own certificates off (ours are given), no leader election."""
    return {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": ip, "port": WEBHOOK_PORT, "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"{ip}:{HEALTH_PORT}"},
        "metrics": {"bindAddress": "0"},
    }


def webhook_configurations(manifests: Path, url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """LWS's generated webhook configurations, each ``clientConfig`` a URL to ``url`` with our
    CA, and the pod webhooks limited to LWS's pods (LWS's kustomize patch does the same)."""
    bundle = base64.b64encode(ca_pem).decode()
    documents = [d for d in yaml.safe_load_all(manifests.read_text()) if d]
    for document in documents:
        for hook in document["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"{url}{path}", "caBundle": bundle}
            if any("pods" in rule["resources"] for rule in hook["rules"]):
                hook["objectSelector"] = {
                    "matchExpressions": [{"key": _POD_LABEL, "operator": "Exists"}]
                }
        document["metadata"]["name"] = f"lws-{document['metadata']['name']}"
    return documents


class LeaderWorkerSetAddon:
    """The LWS controller of one simulated cluster: ``start`` after the control plane."""

    def __init__(self, plane: ControlPlane, directory: Path | None = None) -> None:
        self.plane = plane
        self.build = directory or build_dir()
        self.crds = self.build / "crds"
        self.component: Component | None = None
        self.ready_seconds = 0.0

    async def start(self, api: Transport) -> None:
        plane, began = self.plane, time.monotonic()
        assert plane.authority is not None, "start the control plane first"
        ip = plane.plan.control_plane_ip
        home = plane.layout.root / "lws"
        certs = home / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        pair = plane.authority.issue("lws-webhook", "lws-webhook", server=True, ips=(ip,))
        (certs / "tls.crt").write_bytes(pair.cert.read_bytes())
        (certs / "tls.key").write_bytes(pair.key.read_bytes())
        (certs / "tls.key").chmod(0o600)
        (home / "config.yaml").write_text(json.dumps(config(ip, certs)))
        self.component = Component(
            "lws",
            [
                str(self.build / "bin" / "lws"),
                f"--kubeconfig={plane.admin_kubeconfig}",
                f"--config={home / 'config.yaml'}",
            ],
            plane.layout.root / "logs" / "lws.log",
            f"http://{ip}:{HEALTH_PORT}/readyz",
        )
        self.component.start()
        context = plane.ca_context()
        await wait_healthy(self.component, context, _START_SECONDS)
        await _wait_serving(self.component, ip, context)
        for document in webhook_configurations(
            self.build / "webhook" / "manifests.yaml", f"https://{ip}:{WEBHOOK_PORT}", plane.ca_pem
        ):
            key = WEBHOOK_KINDS[document["kind"]]
            await api.request(
                "PATCH", key.path(None, document["metadata"]["name"]),
                params={"fieldManager": "nemotron-sim", "force": "true"}, body=document,
                content_type=APPLY,
            )  # fmt: skip
        self.ready_seconds = time.monotonic() - began

    def stop(self) -> None:
        if self.component is not None:
            self.component.stop()

    def kill(self) -> None:
        if self.component is not None:
            self.component.kill()


async def _wait_serving(component: Component, ip: str, context: ssl.SSLContext) -> None:
    """Until the webhook server completes a TLS handshake (it starts after the controllers)."""
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection(ip, WEBHOOK_PORT, ssl=context)
        except OSError:
            if not component.running:
                break
            await asyncio.sleep(0.1)
            continue
        writer.close()
        return
    raise ControlPlaneError(
        f"the LWS webhook server on {ip}:{WEBHOOK_PORT} did not answer in {_START_SECONDS:.0f} s; "
        f"its log ({component.log_path}) ends:\n{tail(component.log_path)}"
    )
