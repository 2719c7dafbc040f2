"""``nemotron-operator plan``: size a model on GPUs and show the arithmetic."""

from __future__ import annotations

import argparse

from nemotron_operator.cli.common import SubParsers, not_available


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "plan", help="size a model on GPUs", description="Size a model on GPUs, without a cluster."
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    return not_available("plan")
