"""``nemotron-operator run``: start the operator."""

from __future__ import annotations

import argparse

from nemotron_operator.cli.common import SubParsers, not_available


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "run", help="start the operator", description="Start the operator (kopf underneath)."
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    return not_available("the operator controller (run)")
