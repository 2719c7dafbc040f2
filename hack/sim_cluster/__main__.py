"""``python -m sim_cluster``: run the simulated GPU cluster on a real control plane until stopped.

Real: etcd, kube-apiserver, kube-controller-manager, kube-scheduler (``hack/build-controlplane.sh``
builds them). Simulated: GPU nodes, their kubelets (containers as local processes, ``vllm serve``
as a stand-in vLLM), the service proxy, the volume provisioner. Everything runs in a network
namespace of its own (entered here unless already inside one), so nothing it serves is
reachable from outside; ``python -m sim_cluster.netns --join PID -- COMMAND`` runs a command
inside it (``hack/sim-exec.sh``). Writes the admin kubeconfig and, beside it, ``<kubeconfig>.pid``
(this process). Stops on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence

from nemotron_sim.agents.node_objects import NodeSpecError
from sim_cluster import addons, netns
from sim_cluster.cli_options import add_cluster_options, check_cluster_options, pod_options
from sim_cluster.controlplane.binaries import MissingBinariesError, bin_dir
from sim_cluster.node_spec import parse_node_spec

READY_LINE = "SIMULATED cluster ready"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sim_cluster",
        description="Run a simulated GPU cluster on a real Kubernetes control plane (etcd, "
        "kube-apiserver, kube-controller-manager, kube-scheduler) in a network namespace of "
        "its own, until SIGINT/SIGTERM. Nodes, kubelets, containers and vLLM are simulated.",
    )
    add_cluster_options(parser)
    return parser


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def serve(args: argparse.Namespace) -> None:
    from sim_cluster.kubecluster import KubeCluster  # noqa: PLC0415 (after the namespace)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with KubeCluster(
        args.nodes, kubeconfig_path=args.kubeconfig, **pod_options(args)
    ) as cluster:
        pid_file = args.kubeconfig.with_name(args.kubeconfig.name + ".pid")
        pid_file.write_text(f"{os.getpid()}\n")
        plane = cluster.control_plane
        groups = ", ".join(
            f"{g.nodes} node(s) with {g.gpus_per_node}x {g.product}{' (DRA)' if g.dra else ''}"
            for g in parse_node_spec(args.nodes)
        )
        _say("SIMULATED GPU cluster on a REAL control plane (nemotron-operator sim):")
        _say("  real:      etcd, kube-apiserver, kube-controller-manager, kube-scheduler"
             + (", LeaderWorkerSet controller" if cluster.lws else ""))  # fmt: skip
        _say("  simulated: GPU nodes, kubelets (containers as local processes), vLLM, kube-proxy")
        _say(f"  API server: {plane.api_url}  (inside this cluster's network namespace)")
        _say(f"  kubeconfig: {cluster.kubeconfig}")
        _say(f"  nodes:      {groups or 'no GPU node'}" + (f" + {args.system_nodes} system node(s)"
                                           if args.system_nodes else ""))  # fmt: skip
        if cluster.karpenter is not None:
            _say(f"  Karpenter:  {cluster.karpenter.build.version} (kwok provider; NodePools name "
                 "nodeClassRef karpenter.kwok.sh/KWOKNodeClass 'default')")  # fmt: skip
        if cluster.real_node_count:
            _say(f"  real nodes: {cluster.real_node_count} (kubelet + containerd, real containers;"
                 " GPUs and capacity simulated)")  # fmt: skip
        if cluster.real_node_note:
            _say(f"  NO real nodes: {cluster.real_node_note}; the simulated kubelet runs them")
        steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in cluster.timings.items())
        _say(f"  started in {cluster.started_seconds:.1f} s: {steps}")
        _say(f"  audit log:  {plane.audit_log}")
        if args.engine == "vllm":
            _say(f"  engine:     REAL vLLM (CPU build, {args.vllm_python}) for vllm/vllm-openai")
            claims = (
                cluster.kubelet_settings.workdir / "claims"
                if cluster.kubelet_settings.workdir
                else None
            )
            _say(f"  claims:     {claims}  (a claim's files: NAMESPACE/CLAIM below it)")
        _say(f"  commands inside: python -m sim_cluster.netns --join {os.getpid()} -- kubectl "
             "get nodes   (hack/sim-exec.sh)")  # fmt: skip
        _say(f"{READY_LINE}; stop with Ctrl-C (SIGINT) or SIGTERM.")
        try:
            await stop.wait()
        finally:
            pid_file.unlink(missing_ok=True)
    _say("SIMULATED cluster stopped.")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        check_cluster_options(args)
        bin_dir()
    except (NodeSpecError, ValueError, MissingBinariesError, addons.MissingAddonError) as error:
        sys.stderr.write(f"python -m sim_cluster: {error}\n")
        return 2
    try:
        netns.enter()  # before any thread: everything started from here on is inside
    except (netns.NamespaceError, OSError) as error:
        sys.stderr.write(f"python -m sim_cluster: {error}\n")
        return 3
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
