"""``python -m sim_cluster.checkpoints DIR [--kind K] [--mtp] [--seed N]``: write a tiny
checkpoint into DIR and print its spec.model.architecture as JSON (run it with the engine's
Python, hack/build-vllm-cpu.sh). ``--deployment FILE --claims-root DIR`` writes it where that
NemotronDeployment's spec.model.source.pvc points in a simulated cluster (claims-root/namespace/
claim/path) instead."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from sim_cluster.checkpoints.placement import checkpoint_dir
from sim_cluster.checkpoints.tiny import KINDS, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim_cluster.checkpoints")
    parser.add_argument("directory", nargs="?", type=Path)
    parser.add_argument("--kind", choices=KINDS, default="scripted")
    parser.add_argument("--mtp", action="store_true", help="add one MTP layer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deployment", type=Path, help="a NemotronDeployment (YAML or JSON)")
    parser.add_argument("--claims-root", type=Path, help="the simulated cluster's claims/")
    args = parser.parse_args(argv)
    if args.deployment is not None:
        if args.claims_root is None:
            parser.error("--deployment needs --claims-root")
        directory = checkpoint_dir(yaml.safe_load(args.deployment.read_text()), args.claims_root)
    elif args.directory is None:
        parser.error("give DIR or --deployment FILE --claims-root DIR")
    else:
        directory = args.directory
    spec = write(directory, args.kind, mtp=args.mtp, seed=args.seed)
    sys.stdout.write(json.dumps(spec, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
