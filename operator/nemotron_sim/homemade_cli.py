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

from nemotron_sim.cli_options import add_cluster_options, check_cluster_options, pod_options
from nemotron_sim.cluster import SimCluster
from nemotron_sim.controllers.nodes import NodeSpecError, parse_node_spec

READY_LINE = "SIMULATED cluster ready"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m nemotron_sim.homemade_cli",
        description="Run a SIMULATED Kubernetes cluster with GPU nodes on loopback (no real "
        "API server, kubelet, container or GPU) until SIGINT/SIGTERM.",
    )
    add_cluster_options(parser)
    parser.add_argument("--host", default="127.0.0.1", help="loopback address of the API")
    parser.add_argument("--port", type=int, default=0, help="API port (default: a free one)")
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
        **pod_options(args),
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
        check_cluster_options(args)
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
