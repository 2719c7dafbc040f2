"""What the add-ons' images run in the simulated kubelet: ``python -m
sim_cluster.addons.programs NAME ARGS...`` with the container's args.

A process pod has no mount namespace and shares one network namespace with every other pod, so
each real binary is started with the paths of its mounts (``NEMOTRON_SIM_MOUNTS``) and its pod's
address as its listen address; nothing else about it changes:

- ``prometheus-operator``, ``prometheus``: the real binaries (``hack/build-addons.sh``).
- ``config-reloader``: a stand-in for prometheus-config-reloader (monitoring.py says why).
- ``keda``, ``keda-adapter``: KEDA's operator and its metrics adapter (keda.py says what they
  are given).
- ``epp``: the Gateway API Inference Extension's endpoint picker, with its config's apiVersion
  rewritten to the picker's own group (``epp_config``) and its ports shifted behind a forwarder
  (``EPP_PORT_SHIFT``).
- ``gateway``: Envoy and the loop that programs it (gateway_program.py).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import gzip
import json
import os
import re
import signal
import ssl
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from sim_cluster.addons.binaries import built

# The simulated kubelet's variables (nemotron_sim/kubelet/podfiles.py MOUNTS_ENV,
# process_runner.py POD_IP_ENV; a unit test checks they agree). Not imported: a program's start
# counts against its pod's probes, and those modules bring the simulator's heavier imports.
MOUNTS_ENV = "NEMOTRON_SIM_MOUNTS"
POD_IP_ENV = "NEMOTRON_SIM_POD_IP"

_VARIABLE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def mounts() -> dict[str, str]:
    return dict(json.loads(os.environ.get(MOUNTS_ENV) or "{}"))


def pod_ip() -> str:
    return os.environ.get(POD_IP_ENV) or "127.0.0.1"


def resolve_mount(path: str, mounted: Mapping[str, str]) -> Path | None:
    """A container path through the pod's mounts, longest mountPath first (the stand-in vLLM's
    rule, nemotron_sim/vllm/lora.py, not imported: see MOUNTS_ENV); None outside them."""
    for mount in sorted(mounted, key=len, reverse=True):
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            return Path(mounted[mount]) / path[len(mount) :].lstrip("/")
    return None


def remapped(value: str, mounted: Mapping[str, str]) -> str:
    """A container path (alone or as ``--flag=PATH``) → where that mount's directory is."""
    flag, sep, path = value.rpartition("=") if value.startswith("--") else ("", "", value)
    target = resolve_mount(path, mounted) if path.startswith("/") else None
    return value if target is None else f"{flag}{sep}{target}"


def with_listen(args: Sequence[str], flag: str, port: int) -> list[str]:
    kept = [a for a in args if not a.startswith(f"{flag}=")]
    return [*kept, f"{flag}={pod_ip()}:{port}"]


def run_binary(component: str, binary: str, args: Sequence[str]) -> None:
    program = str(built(component) / "bin" / binary)
    os.execv(program, [program, *args])  # noqa: S606 (the built binary, by its path)


# --- the stand-in config-reloader ---------------------------------------------------------


def kube_get(path: str) -> Any:
    """GET from kube-apiserver with the pod's ServiceAccount (its KUBECONFIG)."""
    return kube_request("GET", path)


def kube_request(method: str, path: str, body: Any = None, content_type: str = "") -> Any:
    """A call to kube-apiserver with the pod's ServiceAccount (its KUBECONFIG); the answer."""
    config = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
    cluster = config["clusters"][0]["cluster"]
    token = config["users"][0]["user"]["token"]
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    headers = {"Authorization": f"Bearer {token}"}
    if content_type:
        headers["Content-Type"] = content_type
    request = urllib.request.Request(  # noqa: S310 (the cluster's API server)
        cluster["server"] + path, method=method, headers=headers,
        data=None if body is None else json.dumps(body).encode(),
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=10, context=context) as response:  # noqa: S310
        return json.loads(response.read())


def edited(config_text: str, mounted: Mapping[str, str], kubeconfig: str) -> str:
    """The real reloader's ``$(VAR)`` substitution from the environment (``$(SHARD)``), then the
    simulator's two edits: Kubernetes SD through ``kubeconfig_file`` (no token at the in-cluster
    path) and container paths → the mounts' directories."""
    config = yaml.safe_load(config_text) or {}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            for sd in out.get("kubernetes_sd_configs") or []:
                sd["kubeconfig_file"] = kubeconfig
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str):
            node = _VARIABLE.sub(lambda m: os.environ.get(m.group(1), m.group(0)), node)
            return remapped(node, mounted) if node.startswith("/") else node
        return node

    return yaml.safe_dump(walk(config), sort_keys=False)


def config_reloader(args: Sequence[str]) -> None:
    options = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    mounted = mounts()
    source = Path(remapped(options["config-file"], mounted))
    target = Path(remapped(options["config-envsubst-file"], mounted))
    once = options.get("watch-interval") == "0s" or options.get("watch-interval") == "0"
    namespace = Path(mounted.get("/var/run/secrets/kubernetes.io/serviceaccount", "")) / "namespace"
    # The configuration Secret is named after the StatefulSet, as the pod is plus its ordinal.
    secret = os.environ.get("POD_NAME", os.environ.get("HOSTNAME", "")).rsplit("-", 1)[0]
    written = ""
    while True:
        if source.is_file() and not written:
            compressed = source.read_bytes()
        else:
            ns = namespace.read_text().strip() if namespace.is_file() else "monitoring"
            found = kube_get(f"/api/v1/namespaces/{ns}/secrets/{secret}")
            compressed = base64.b64decode(found["data"][source.name])
        text = edited(gzip.decompress(compressed).decode(), mounted, os.environ["KUBECONFIG"])
        if text != written:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.with_suffix(".tmp").write_text(text)
            target.with_suffix(".tmp").replace(target)
            say(f"wrote {target}")
            if written:
                reload_prometheus()
            written = text
        if once:
            return
        time.sleep(1.0)


def say(text: str) -> None:
    sys.stdout.write(f"config-reloader (stand-in): {text}\n")
    sys.stdout.flush()


def reload_prometheus() -> None:
    request = urllib.request.Request(f"http://{pod_ip()}:9090/-/reload", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10):  # noqa: S310 (the pod's own address)
            say("Prometheus reloaded")
    except OSError as error:
        say(f"reload failed: {error}")


CERTS = "/certs"  # where KEDA's Deployments mount the kedaorg-certs Secret


def keda(args: Sequence[str]) -> None:
    """KEDA's operator with the Secret's certificates (keda.py), cert rotation and patching off,
    its three listeners on the pod's address."""
    ip = pod_ip()
    namespace = os.environ.get("POD_NAMESPACE", "keda")
    kept = [a for a in args if not a.startswith(("--enable-cert-rotation", "--cert-dir"))]
    os.environ.setdefault("KEDA_CLUSTER_OBJECT_NAMESPACE", namespace)
    run_binary("keda", "keda", [
        *kept, "--enable-cert-rotation=false", f"--cert-dir={remapped(CERTS, mounts())}",
        "--enable-webhook-patching=false", "--enable-apiservice-patching=false",
        f"--metrics-bind-address={ip}:8080", f"--health-probe-bind-address={ip}:8081",
        f"--metrics-service-bind-address={ip}:9666",
    ])  # fmt: skip


def keda_adapter(args: Sequence[str]) -> None:
    """KEDA's metrics adapter with its Deployment's arguments (paths → the mounts) plus what a
    process pod needs: its pod's address for its API server; its own /metrics on a free port
    (``--port`` binds every address: 8080 there would collide with the pods' and Services'
    8080s in the shared network namespace); the pod's kubeconfig for its client, delegated
    authentication and authorization (no token at the in-cluster path); and the operator's
    gRPC metrics service by its Service's ClusterIP (no cluster DNS), the TLS name being the
    Service's DNS name, which the certificate carries (``--metrics-service-grpc-authority``,
    KEDA's flag for exactly this)."""
    mounted, kubeconfig = mounts(), os.environ["KUBECONFIG"]
    namespace = os.environ.get("POD_NAMESPACE", "keda")
    service = kube_get(f"/api/v1/namespaces/{namespace}/services/keda-operator")
    operator = f"{service['spec']['clusterIP']}:9666"
    os.environ.setdefault("KEDA_CLUSTER_OBJECT_NAMESPACE", namespace)
    kept = [remapped(a, mounted) for a in args if not a.startswith(("--bind-address", "--port"))]
    run_binary("keda", "keda-adapter", [
        *kept, f"--bind-address={pod_ip()}", "--port=0",
        f"--lister-kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--metrics-service-address={operator}",
        f"--metrics-service-grpc-authority=keda-operator.{namespace}.svc",
    ])  # fmt: skip


# The endpoint picker's own config group (gateway-api-inference-extension v1.5.0
# apix/config/v1alpha1); the operator writes llm-d's (its llm-d-router takes that), which v1.5.0's
# loader refuses. The one edit the picker's program makes.
EPP_CONFIG_API_VERSION = "inference.networking.x-k8s.io/v1alpha1"


def epp_config(text: str) -> str:
    """The operator's EndpointPickerConfig with the picker's own apiVersion, nothing else."""
    return re.sub(
        r"^apiVersion: llm-d\.ai/v1alpha1$", f"apiVersion: {EPP_CONFIG_API_VERSION}", text,
        flags=re.MULTILINE,
    )  # fmt: skip


# The picker listens on all addresses (v1.5.0 has port flags, no address flags); in the shared
# network namespace the simulated kube-proxy already holds its Service's ClusterIP:9002/9003/9090,
# so a wildcard bind of the same ports fails ("address already in use"). Each port moves by
# this much, and the program forwards the pod's own address and the original port to it: the
# pod answers at podIP:9002/9003/9090 as the real one does (its Service, its gRPC probes).
EPP_PORT_SHIFT = 10000
EPP_PORT_FLAGS = ("--grpc-port", "--grpc-health-port", "--metrics-port")


def epp_arguments(args: Sequence[str], home: Path) -> tuple[list[str], dict[int, int]]:
    """The picker's arguments with its ports shifted (and the ports: original → shifted) and
    its config file (a container path) read from the mount and written, apiVersion rewritten,
    into ``home``."""
    mounted, kept, ports = mounts(), list(args), {}
    for flag in EPP_PORT_FLAGS:
        if flag in kept[:-1]:
            at = kept.index(flag) + 1
            ports[int(kept[at])] = int(kept[at]) + EPP_PORT_SHIFT
            kept[at] = str(ports[int(kept[at])])
    if "--config-file" in kept:
        at = kept.index("--config-file") + 1
        source = Path(remapped(kept[at], mounted))
        home.mkdir(parents=True, exist_ok=True)
        target = home / source.name
        target.write_text(epp_config(source.read_text()))
        kept[at] = str(target)
    return kept, ports


def epp(args: Sequence[str]) -> None:
    """The real endpoint picker with the operator's arguments (epp_arguments), behind a
    forwarder from the pod's address and original ports; exits as the picker does."""
    kept, ports = epp_arguments(args, Path(os.environ.get("HOME") or "."))
    program = str(built("epp") / "bin" / "epp")
    sys.exit(asyncio.run(forwarding(program, kept, ports)))


async def forwarding(program: str, args: Sequence[str], ports: Mapping[int, int]) -> int:
    picker = await asyncio.create_subprocess_exec(program, *args)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, picker.send_signal, signum)
    servers = [
        await asyncio.start_server(functools.partial(_forward, port=to), pod_ip(), port)
        for port, to in ports.items()
    ]
    try:
        return await picker.wait()
    finally:
        for server in servers:
            server.close()


async def _forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
    finally:
        for side in (writer, upstream_writer):
            with contextlib.suppress(OSError):
                side.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then half-close (the other way may still be talking)."""
    with contextlib.suppress(OSError):
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


def main(argv: Sequence[str]) -> None:
    name, *args = argv
    mounted = mounts()
    if name == "prometheus-operator":
        run_binary(name, name, with_listen(args, "--web.listen-address", 8080))
    elif name == "prometheus":
        paths = [remapped(a, mounted) for a in args]
        run_binary(name, name, with_listen(paths, "--web.listen-address", 9090))
    elif name == "keda":
        keda(args)
    elif name == "keda-adapter":
        keda_adapter(args)
    elif name == "epp":
        epp(args)
    elif name == "config-reloader":
        config_reloader(args)
    elif name == "gateway":
        from sim_cluster.addons import gateway_program  # noqa: PLC0415 (it imports this module)

        gateway_program.main(args)
    else:
        sys.exit(f"sim_cluster.addons.programs: unknown program {name!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
