"""The command-line options of ``python -m sim_cluster``: nodes, kubeconfig, pod timings and
the image → program mapping."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from nemotron_sim.agents.node_objects import gpu_facts
from sim_cluster import addons as neighbours
from sim_cluster.controlplane import ControlPlaneError
from sim_cluster.controlplane.flags import Settings
from sim_cluster.karpenter.running import KarpenterOptions
from sim_cluster.lws import build_dir
from sim_cluster.node_spec import DEFAULT_NODES, parse_node_spec
from sim_cluster.programs import parse_mapping
from sim_cluster.real_engine import ENGINES, engine_mappings


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes", default=DEFAULT_NODES,
        help="GPU nodes as PRODUCT:GPUSxNODES[:dra][,...]; :dra publishes their GPUs as DRA "
        "ResourceSlices (driver gpu.nvidia.com) instead of nvidia.com/gpu; 'none' for no GPU "
        "node (with --karpenter: Karpenter launches them) (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--karpenter", action="store_true",
        help="run Karpenter (kwok provider, built by hack/build-karpenter.sh) with its CRDs and "
        "the KWOKNodeClass 'default'; the nodes it launches become simulated GPU nodes",
    )  # fmt: skip
    parser.add_argument(
        "--karpenter-boot-seconds", type=float, default=0.0,
        help="how long a node Karpenter launches takes to appear (its KWOKNodeClass's "
        "nodeRegistrationDelay; a cloud GPU instance takes minutes)",
    )  # fmt: skip
    parser.add_argument("--kubeconfig", required=True, type=Path, help="where to write it")
    parser.add_argument(
        "--system-nodes", type=int, default=0,
        help="add this many GPU-less, untainted nodes (where the operator's own pod can run)",
    )  # fmt: skip
    parser.add_argument(
        "--load-seconds", type=float, default=0.0,
        help="simulated model load time of each stand-in vLLM before /health is 200",
    )  # fmt: skip
    parser.add_argument(
        "--init-seconds", type=float, default=0.05, help="how long each init container runs"
    )
    parser.add_argument(
        "--image", action="append", default=[], metavar="REPO=PROGRAM",
        help="run containers of this image repository (any tag or digest) as a real process: "
        "PROGRAM (split like a shell) stands for the image's entrypoint, the container's args "
        "follow; repeatable. Built in: ghcr.io/nemotron-operator/nemotron-operator runs "
        "'python -m nemotron_operator.cli'",
    )  # fmt: skip
    parser.add_argument(
        "--command", action="append", default=[], metavar="NAME=PROGRAM",
        help="what a mapped container's `command: [NAME, ...]` runs (built in: python, python3, "
        "nemotron-operator); repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--engine", choices=ENGINES, default="stand-in",
        help="what a container of the vLLM image (vllm/vllm-openai) runs: the in-process "
        "stand-in (default) or vllm, the real CPU build of vLLM (needs --vllm-python)",
    )  # fmt: skip
    parser.add_argument(
        "--vllm-python", type=Path, default=None,
        help="with --engine vllm: the Python of the CPU vLLM environment "
        "(hack/build-vllm-cpu.sh --print-dir names its venv)",
    )  # fmt: skip
    parser.add_argument(
        "--crash-backoff-seconds", type=float, default=10.0,
        help="first restart back-off of a crashing container (kubelet: 10 s, doubling to 5 min)",
    )  # fmt: skip
    parser.add_argument(
        "--probe-time-scale", type=float, default=1.0,
        help="multiply the probe periods and delays of process containers by this",
    )  # fmt: skip
    parser.add_argument(
        "--controller-qps", type=int, default=20,
        help="kube-controller-manager's --kube-api-qps (its default, 20; burst 1.5x): each "
        "controller's request rate, e.g. the StatefulSet controller's pod and claim creates",
    )  # fmt: skip
    parser.add_argument(
        "--apiserver-profiling", action="store_true",
        help="serve kube-apiserver's /debug/pprof (its --profiling; off by default), for CPU "
        "profiles of the API server (hack/bench-operator.py --profile)",
    )  # fmt: skip
    parser.add_argument(
        "--addons", default="", metavar="NAME[,...]",
        help="real controllers of other projects to run in the cluster: lws (LeaderWorkerSet, "
        "built by hack/build-lws.sh), monitoring (the Prometheus Operator and Prometheus), keda, "
        "gateway (Envoy as the Gateway of class nemotron-sim in front of the real endpoint "
        "picker) (built by hack/build-addons.sh)",
    )  # fmt: skip
    parser.add_argument(
        "--real-nodes", type=int, default=0, metavar="N",
        help="run N nodes (system nodes first, then GPU nodes) as real kubelet + containerd "
        "nodes with real containers (root; hack/build-nodes.sh --install-packages and "
        "hack/build-images.sh first); where that cannot run, the simulated kubelet runs them "
        "and says why",
    )  # fmt: skip
    parser.add_argument("--no-events", action="store_true", help="the kubelets write no Events")
    parser.add_argument("-v", "--verbose", action="store_true", help="log the simulated parts")


def check_cluster_options(args: argparse.Namespace) -> None:
    """Raise ValueError (NodeSpecError is one) for nodes or mappings that cannot work."""
    for group in parse_node_spec(args.nodes):
        gpu_facts(group.product)
    for text in args.image:
        parse_mapping(text, "--image")
    for text in args.command:
        parse_mapping(text, "--command")
    engine_mappings(args.engine, args.vllm_python)
    known = ("lws", *neighbours.COMPONENTS)
    unknown = sorted(set(addons(args)) - set(known))
    if unknown:
        raise ValueError(
            f"--addons: unknown add-on(s) {', '.join(unknown)} (known: {', '.join(known)})"
        )
    neighbours.crds([a for a in addons(args) if a != "lws"])  # MissingAddonError if not built
    if "lws" in addons(args):
        try:
            build_dir()
        except ControlPlaneError as error:
            raise ValueError(f"--addons lws: {error}") from None


def addons(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(a.strip() for a in args.addons.split(",") if a.strip())


def pod_options(args: argparse.Namespace) -> dict[str, Any]:
    """The cluster constructor's keyword arguments both clusters take."""
    engine_images, engine_commands = engine_mappings(args.engine, args.vllm_python)
    images = dict(parse_mapping(text, "--image") for text in args.image)
    commands = dict(parse_mapping(text, "--command") for text in args.command)
    return {
        "system_nodes": args.system_nodes,
        "load_seconds": args.load_seconds,
        "init_seconds": args.init_seconds,
        "record_events": not args.no_events,
        "images": {**engine_images, **images},
        "commands": {**engine_commands, **commands},
        "crash_backoff_seconds": args.crash_backoff_seconds,
        "crash_backoff_cap_seconds": max(300.0, args.crash_backoff_seconds),
        "probe_time_scale": args.probe_time_scale,
        "control_plane": Settings(
            controller_qps=args.controller_qps, apiserver_profiling=args.apiserver_profiling
        ),
        "karpenter": (
            KarpenterOptions(registration_delay=f"{round(args.karpenter_boot_seconds)}s")
            if args.karpenter
            else None
        ),
        "addons": addons(args),
        "real_nodes": args.real_nodes,
    }
