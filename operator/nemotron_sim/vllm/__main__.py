"""`python -m nemotron_sim.vllm serve MODEL [vllm flags...] [--sim-... S]`.

The container image installs this as `vllm`, so the operator's rendered `vllm serve ...` command
runs unchanged. Stand-in-only options (never passed to the flag table):
  --sim-load-seconds S   /health answers 503 for S seconds after start (default 0)
  --sim-step-seconds S   simulated time of one decode step (default: engine.Timing)
  --sim-kv-cache-bias B  allocate B more (+) or less (-) KV cache than the stand-in's own
                         accounting, e.g. -0.10 (default 0); published in vllm:cache_config_info
  --sim-output-faults F  what the output parsers get wrong, a comma list of reasoning-in-content,
                         content-null, tool-call-unparsed, invalid-json (nemotron_sim.vllm.parsers)
The same can be set through NEMOTRON_SIM_VLLM_LOAD_SECONDS / NEMOTRON_SIM_VLLM_STEP_SECONDS /
NEMOTRON_SIM_VLLM_KV_CACHE_BIAS / NEMOTRON_SIM_VLLM_OUTPUT_FAULTS, for images whose command line
the operator owns.
NEMOTRON_SIM_VLLM_GPU_PRODUCT names the GPU it "profiles" (a GFD product such as NVIDIA-H200; the
simulated kubelet passes the node's). Exit status 2 on a refused command line, as
argparse exits; 1 when vLLM would fail to start (an object-store model without credentials or
with another load format: nemotron_sim.vllm.object_store).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Sequence

from nemotron_sim.vllm.args import StubVllmArgumentError, StubVllmStartError
from nemotron_sim.vllm.engine import Timing
from nemotron_sim.vllm.kv_cache import parse_bias
from nemotron_sim.vllm.parsers import OutputFault, parse_faults
from nemotron_sim.vllm.server import SIMULATION_NOTE, VLLM_VERSION, StubVllm

_SIM_OPTIONS = {
    "--sim-load-seconds": "NEMOTRON_SIM_VLLM_LOAD_SECONDS",
    "--sim-step-seconds": "NEMOTRON_SIM_VLLM_STEP_SECONDS",
    "--sim-kv-cache-bias": "NEMOTRON_SIM_VLLM_KV_CACHE_BIAS",
}
GPU_PRODUCT_ENV = "NEMOTRON_SIM_VLLM_GPU_PRODUCT"
OUTPUT_FAULTS_OPTION = "--sim-output-faults"
OUTPUT_FAULTS_ENV = "NEMOTRON_SIM_VLLM_OUTPUT_FAULTS"
# vLLM listens on every interface by default; in a pod that is what the Service needs.
_ALL_INTERFACES = "0.0.0.0"  # noqa: S104


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["--version"], ["-v"]):
        print(f"{VLLM_VERSION} ({SIMULATION_NOTE})")  # noqa: T201 - the CLI's answer
        return 0
    try:
        args, faults = _output_faults(args)
        vllm_args, sim = _split_sim_options(args)
        stub = StubVllm(
            ["vllm", *vllm_args],
            load_seconds=sim.get("--sim-load-seconds", 0.0),
            timing=Timing(step_seconds=sim["--sim-step-seconds"])
            if "--sim-step-seconds" in sim
            else None,
            gpu_product=os.environ.get(GPU_PRODUCT_ENV) or None,
            kv_cache_bias=sim.get("--sim-kv-cache-bias", 0.0),
            output_faults=faults,
            env=os.environ,
        )
    except StubVllmStartError as error:
        print(error, file=sys.stderr)  # noqa: T201 - vLLM's start-up error, then exit 1
        return 1
    except StubVllmArgumentError as error:
        print(error, file=sys.stderr)  # noqa: T201 - argparse prints its errors the same way
        return 2
    asyncio.run(_serve(stub))
    return 0


def _output_faults(args: Sequence[str]) -> tuple[list[str], frozenset[OutputFault]]:
    """Take ``--sim-output-faults F`` (or ``=F``) out of the arguments; the environment's value
    when the option is absent."""
    text = os.environ.get(OUTPUT_FAULTS_ENV, "")
    rest: list[str] = []
    index = 0
    while index < len(args):
        option, equals, inline = args[index].partition("=")
        if option != OUTPUT_FAULTS_OPTION:
            rest.append(args[index])
        elif equals:
            text = inline
        elif index + 1 < len(args):
            index += 1
            text = args[index]
        else:
            raise StubVllmArgumentError(f"argument {option}: expected one argument")
        index += 1
    try:
        return rest, parse_faults(text)
    except ValueError as error:
        raise StubVllmArgumentError(f"argument {OUTPUT_FAULTS_OPTION}: {error}") from None


def _split_sim_options(args: Sequence[str]) -> tuple[list[str], dict[str, float]]:
    values = {
        option: _seconds(option, os.environ[env])
        for option, env in _SIM_OPTIONS.items()
        if os.environ.get(env)
    }
    rest: list[str] = []
    index = 0
    while index < len(args):
        option, _, inline = args[index].partition("=")
        if option not in _SIM_OPTIONS:
            rest.append(args[index])
        elif inline:
            values[option] = _seconds(option, inline)
        elif index + 1 < len(args):
            index += 1
            values[option] = _seconds(option, args[index])
        else:
            raise StubVllmArgumentError(f"argument {option}: expected one argument")
        index += 1
    return rest, values


def _seconds(option: str, text: str) -> float:
    if option == "--sim-kv-cache-bias":
        return parse_bias(option, text)
    try:
        value = float(text)
    except ValueError:
        raise StubVllmArgumentError(f"argument {option}: invalid float value: {text!r}") from None
    if value < 0:
        raise StubVllmArgumentError(f"argument {option}: must not be negative, got {text}")
    return value


async def _serve(stub: StubVllm) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    config = stub.config
    await stub.start(config.host or _ALL_INTERFACES, config.port)
    if stub.is_worker:
        where = f"worker rank {config.node_rank} of {config.nnodes}: no API server (headless)"
    else:
        where = f"serving {stub.served_model_name!r} on {stub.url}"
    print(f"stand-in vLLM {VLLM_VERSION} (simulated) {where}", file=sys.stderr, flush=True)  # noqa: T201
    try:
        await stopping.wait()
    finally:
        await stub.stop()


if __name__ == "__main__":
    sys.exit(main())
