"""The stand-in vLLM a pod's ``vllm serve`` container becomes, with the simulation knobs its
environment may set (they override the kubelet's settings for that container)."""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from nemotron_sim.kubelet.podenv import expanded_argv
from nemotron_sim.vllm import StubVllm, StubVllmArgumentError, parse_serve_argv
from nemotron_sim.vllm.kv_cache import parse_bias
from nemotron_sim.vllm.parsers import OutputFault, parse_faults

KV_CACHE_BIAS_ENV = "NEMOTRON_SIM_VLLM_KV_CACHE_BIAS"
OUTPUT_FAULTS_ENV = "NEMOTRON_SIM_VLLM_OUTPUT_FAULTS"


def stand_in_vllm(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    load_seconds: float,
    gpu_product: str | None,
    kv_cache_bias: float,
    output_faults: frozenset[OutputFault],
) -> StubVllm:
    """Raises StubVllmArgumentError when real vLLM would refuse the command line (or a knob in
    the environment is malformed): the container then crash-loops."""
    bias = env.get(KV_CACHE_BIAS_ENV)
    faults = env.get(OUTPUT_FAULTS_ENV)
    return StubVllm(
        argv,
        load_seconds=load_seconds,
        gpu_product=gpu_product,
        kv_cache_bias=kv_cache_bias if bias is None else parse_bias(KV_CACHE_BIAS_ENV, bias),
        output_faults=output_faults if faults is None else _faults(faults),
        env=env,
    )


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
