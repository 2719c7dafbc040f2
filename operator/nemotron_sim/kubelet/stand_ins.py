"""The stand-in vLLM a pod's ``vllm serve`` container becomes, with the simulation knobs its
environment may set (they override the kubelet's settings for that container)."""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nemotron_sim.kubeapi.kinds import NODES
from nemotron_sim.kubeapi.store import ObjectStore
from nemotron_sim.kubelet.claims import dra_gpu_product
from nemotron_sim.kubelet.podenv import container_env, expanded_argv
from nemotron_sim.kubelet.podfiles import MOUNTS_ENV
from nemotron_sim.kubelet.probes import resolve_port
from nemotron_sim.vllm import StubVllm, StubVllmArgumentError, parse_serve_argv
from nemotron_sim.vllm.kv_cache import parse_bias
from nemotron_sim.vllm.parsers import OutputFault, parse_faults
from nemotron_sim.vllm.server import VLLM_VERSION
from nemotron_sim.vllm.startup import CompileCaches, StartupRun, StartupTimes

if TYPE_CHECKING:
    from nemotron_sim.kubelet.settings import KubeletSettings

KV_CACHE_BIAS_ENV = "NEMOTRON_SIM_VLLM_KV_CACHE_BIAS"
OUTPUT_FAULTS_ENV = "NEMOTRON_SIM_VLLM_OUTPUT_FAULTS"
CACHE_ROOT_ENV = "VLLM_CACHE_ROOT"  # vLLM's own: its torch.compile cache lives under it


def stand_in_vllm(
    argv: Sequence[str],
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    settings: KubeletSettings,
    *,
    gpu_product: str | None,
    caches: CompileCaches,
    mounts: Mapping[str, str],
) -> StubVllm:
    """Raises StubVllmArgumentError when real vLLM would refuse the command line (or a knob in
    the environment is malformed): the container then crash-loops. ``mounts`` (``mountPath`` →
    directory, stand_in_volumes.py) tell it where its volumes are, as ``NEMOTRON_SIM_MOUNTS``."""
    env = container_env(pod, container) | declared_secret_env(container)
    env.setdefault(MOUNTS_ENV, json.dumps(dict(mounts), sort_keys=True))
    bias = env.get(KV_CACHE_BIAS_ENV)
    faults = env.get(OUTPUT_FAULTS_ENV)
    times = StartupTimes(settings.load_seconds, settings.compile_seconds, settings.capture_seconds)
    location = cache_location(pod, container, env.get(CACHE_ROOT_ENV))
    return StubVllm(
        argv,
        gpu_product=gpu_product,
        kv_cache_bias=settings.kv_cache_bias
        if bias is None
        else parse_bias(KV_CACHE_BIAS_ENV, bias),
        output_faults=settings.output_faults if faults is None else _faults(faults),
        startup=StartupRun(times, caches=caches, location=location, argv=argv),
        env=env,
        vllm_version=image_tag(str(container.get("image", ""))) or VLLM_VERSION,
    )


def image_tag(image: str) -> str | None:
    """The tag of ``repo[:tag][@digest]`` (the release the stand-in plays), None without one."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else None


def declared_secret_env(container: Mapping[str, Any]) -> dict[str, str]:
    """The variables a container gets from Secrets (``secretKeyRef``, not optional), each with a
    placeholder: values never reach the stand-in, but it must know the variable is set (the
    object-store credentials). The kubelet starts the container only once the Secret and key
    exist (``CreateContainerConfigError`` until then), so a declared one is a present one."""
    found = {}
    for var in container.get("env") or []:
        ref = (var.get("valueFrom") or {}).get("secretKeyRef")
        if ref and not ref.get("optional"):
            found[str(var.get("name", ""))] = f"(from Secret {ref.get('name', '')})"
    return found


def cache_location(
    pod: Mapping[str, Any], container: Mapping[str, Any], path: str | None
) -> str | None:
    """Where ``path`` (``$VLLM_CACHE_ROOT``) lives: ``pvc:namespace/claim/sub/path`` on a claim
    (it outlives the pod), None elsewhere (an emptyDir or the image's filesystem go with it)."""
    if not path:
        return None
    mounts = sorted(
        container.get("volumeMounts") or [],
        key=lambda m: len(str(m.get("mountPath", ""))),
        reverse=True,
    )
    for mount in mounts:
        root = str(mount.get("mountPath", "")).rstrip("/")
        if path != root and not path.startswith(root + "/"):
            continue
        volumes = (pod.get("spec") or {}).get("volumes") or []
        volume: Mapping[str, Any] = next(
            (v for v in volumes if v.get("name") == mount.get("name")), {}
        )
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim:
            return None
        namespace = (pod.get("metadata") or {}).get("namespace", "default")
        inside = posixpath.join(str(mount.get("subPath") or ""), path[len(root) :].lstrip("/"))
        return f"pvc:{namespace}/{claim}/{inside.strip('/')}"
    return None


def _faults(text: str) -> frozenset[OutputFault]:
    try:
        return parse_faults(text)
    except ValueError as error:
        raise StubVllmArgumentError(f"{OUTPUT_FAULTS_ENV}: {error}") from None


def is_vllm_serve(argv: list[str]) -> bool:
    """``vllm serve ...`` directly, via a path, or via ``sh -c "[exec] vllm serve ..."``."""
    words = argv
    if len(words) >= 3 and os.path.basename(words[0]) in {"sh", "bash"} and words[1] == "-c":
        try:
            words = shlex.split(words[2])
        except ValueError:
            return False
        if words[:1] == ["exec"]:
            words = words[1:]
    return len(words) >= 2 and os.path.basename(words[0]) == "vllm" and words[1] == "serve"


def serving_ports(pod: dict[str, Any], containers: list[dict[str, Any]]) -> list[int]:
    """Ports the pod's stand-in vLLMs will listen on (checked free before the IP is taken)."""
    ports = []
    for container in containers:
        argv = expanded_argv(pod, container)
        if not is_vllm_serve(argv):
            continue
        with contextlib.suppress(StubVllmArgumentError):
            config = parse_serve_argv(argv)
            if not config.is_worker:
                ports.append(config.port)
    return ports


def probe_target(container: Mapping[str, Any], stub: StubVllm) -> tuple[int, str] | None:
    """(port, path) the kubelet probes for readiness; None when only "started" counts."""
    for kind in ("readinessProbe", "startupProbe"):
        http = (container.get(kind) or {}).get("httpGet")
        if http:
            port = resolve_port(http.get("port"), container)
            return None if port is None else (port, http.get("path") or "/")
    if stub.is_worker:
        return None
    return (stub.config.port, "/health")


GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


def node_gpu_product(store: ObjectStore, node_name: str | None) -> str | None:
    """The node's GPU product (its label, or its DRA devices'): the stand-in vLLM "profiles"
    that GPU."""
    node = store.peek(NODES, None, node_name) if node_name else None
    labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    product = labels.get(GPU_PRODUCT_LABEL) or (node_name and dra_gpu_product(store, node_name))
    return str(product) if product else None
