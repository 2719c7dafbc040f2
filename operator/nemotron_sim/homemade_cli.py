"""``python -m nemotron_sim.homemade_cli``: the simulated cluster on the HOME-MADE API server.

The benchmarks still measure against it until they move to the real control plane
(``python -m nemotron_sim``); it is retired with the home-made API server. Starts the API
stand-in on a free loopback port with simulated GPU nodes, a scheduler, a StatefulSet
controller, a kubelet that runs stand-in vLLM servers, and Service proxies; writes a kubeconfig
for kubectl, ``kopf run`` and the Kubernetes client. Stops on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from nemotron_sim.cluster import SimCluster
from nemotron_sim.controllers.images import parse_mapping
from nemotron_sim.controllers.manager import DEFAULT_NODES, gpu_facts
from nemotron_sim.controllers.nodes import NodeSpecError, parse_node_spec

READY_LINE = "SIMULATED cluster ready"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m nemotron_sim.homemade_cli",
        description="Run a SIMULATED Kubernetes cluster with GPU nodes on loopback (no real "
        "API server, kubelet, container or GPU) until SIGINT/SIGTERM.",
    )
    parser.add_argument(
        "--nodes",
        default=DEFAULT_NODES,
        help="GPU nodes as PRODUCT:GPUSxNODES[,...] (default: %(default)s)",
    )
    parser.add_argument("--kubeconfig", required=True, type=Path, help="where to write it")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address of the API")
    parser.add_argument("--port", type=int, default=0, help="API port (default: a free one)")
    parser.add_argument(
        "--load-seconds",
        type=float,
        default=0.0,
        help="simulated model load time of each stand-in vLLM before /health is 200",
    )
    parser.add_argument(
        "--init-seconds", type=float, default=0.05, help="how long each init container runs"
    )
    parser.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="REPO=PROGRAM",
        help="run containers of this image repository (any tag or digest) as a real process: "
        "PROGRAM (split like a shell) stands for the image's entrypoint, the container's args "
        "follow; repeatable. Built in: ghcr.io/nemotron-operator/nemotron-operator runs "
        "'python -m nemotron_operator.cli'",
    )
    parser.add_argument(
        "--command",
        action="append",
        default=[],
        metavar="NAME=PROGRAM",
        help="what a mapped container's `command: [NAME, ...]` runs (built in: python, python3, "
        "nemotron-operator); repeatable",
    )
    parser.add_argument(
        "--system-nodes",
        type=int,
        default=0,
        help="add this many GPU-less, untainted nodes (where the operator's own pod can run)",
    )
    parser.add_argument(
        "--crash-backoff-seconds",
        type=float,
        default=10.0,
        help="first restart back-off of a crashing container (kubelet: 10 s, doubling to 5 min)",
    )
    parser.add_argument(
        "--probe-time-scale",
        type=float,
        default=1.0,
        help="multiply the probe periods and delays of process containers by this",
    )
    parser.add_argument("--no-events", action="store_true", help="do not write Events")
    parser.add_argument("-v", "--verbose", action="store_true", help="log the controllers")
    return parser


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with SimCluster(
        args.nodes,
        host=args.host,
        port=args.port,
        kubeconfig=args.kubeconfig,
        load_seconds=args.load_seconds,
        init_seconds=args.init_seconds,
        record_events=not args.no_events,
        images=dict(parse_mapping(text, "--image") for text in args.image),
        commands=dict(parse_mapping(text, "--command") for text in args.command),
        system_nodes=args.system_nodes,
        crash_backoff_seconds=args.crash_backoff_seconds,
        crash_backoff_cap_seconds=max(300.0, args.crash_backoff_seconds),
        probe_time_scale=args.probe_time_scale,
    ) as cluster:
        groups = ", ".join(
            f"{g.nodes} node(s) with {g.gpus_per_node}x {g.product}"
            for g in parse_node_spec(args.nodes)
        )
        _say("SIMULATED Kubernetes cluster (nemotron-operator sim): no real API server,")
        _say("kubelet, container runtime or GPU; pods run stand-in vLLM servers on loopback,")
        _say("and containers of mapped images (--image) run as local processes.")
        _say(f"  API server: {cluster.url}")
        if cluster.api.secure_url:  # what the kubeconfig uses: kubectl sends tokens over TLS only
            _say(f"  API (TLS):  {cluster.api.secure_url}")
        _say(f"  kubeconfig: {cluster.kubeconfig}  (export KUBECONFIG={cluster.kubeconfig})")
        _say(f"  nodes:      {groups}")
        _say(f"{READY_LINE}; stop with Ctrl-C (SIGINT) or SIGTERM.")
        await stop.wait()
    _say("SIMULATED cluster stopped.")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        for group in parse_node_spec(args.nodes):
            gpu_facts(group.product)
        for text in args.image:
            parse_mapping(text, "--image")
        for text in args.command:
            parse_mapping(text, "--command")
    except (NodeSpecError, ValueError) as error:
        sys.stderr.write(f"python -m nemotron_sim.homemade_cli: {error}\n")
        return 2
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
