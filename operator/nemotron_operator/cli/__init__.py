"""The ``nemotron-operator`` console script.

Each subcommand lives in its own module exposing ``register(subparsers)``; modules import their
heavy dependencies (kopf, the Kubernetes client, the simulated cluster) inside the command body so
that ``plan`` and ``--help`` answer fast from a cold start.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from nemotron_operator import __version__
from nemotron_operator.cli import catalog_cmd, plan_cmd, render_cmd, run_cmd

DESCRIPTION = """\
Serve NVIDIA Nemotron models with vLLM on Kubernetes, sized from a memory model.

  run      start the operator (watches NemotronDeployment objects)
  plan     size a model on GPUs, without a cluster, and show the arithmetic
  render   print every Kubernetes object the operator would apply, without a cluster
  models   list the model catalog
  gpus     list the GPU catalog
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nemotron-operator",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (run_cmd, plan_cmd, render_cmd, catalog_cmd):
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = args.handler
    code: int = handler(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
