"""``nemotron-operator render``: print the objects the operator would apply."""

from __future__ import annotations

import argparse

from nemotron_operator.cli.common import SubParsers, not_available


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "render",
        help="print the Kubernetes objects for a NemotronDeployment",
        description="Print every Kubernetes object the operator would apply, without a cluster.",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    return not_available("render")
