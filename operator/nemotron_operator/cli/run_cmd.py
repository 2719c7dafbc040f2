"""``nemotron-operator run``: start the operator."""

from __future__ import annotations

import argparse

from nemotron_operator.cli.common import SubParsers, fail


def register(subparsers: SubParsers) -> None:
    from nemotron_operator.controller.settings import add_arguments  # noqa: PLC0415

    parser = subparsers.add_parser(
        "run",
        help="start the operator",
        description="Start the operator: watch NemotronDeployments and converge the cluster to "
        "them. Every flag also reads NEMOTRON_OPERATOR_<FLAG> from the environment "
        "(e.g. NEMOTRON_OPERATOR_NAMESPACES=ai,ml); the flag wins.",
    )
    add_arguments(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from nemotron_operator.controller.runtime.kopf_wiring import (  # noqa: PLC0415
        configure_logging,
    )
    from nemotron_operator.controller.runtime.run import run_operator  # noqa: PLC0415
    from nemotron_operator.controller.settings import config_from_args  # noqa: PLC0415

    try:
        config = config_from_args(args)
    except ValueError as exc:
        return fail(str(exc))
    configure_logging(config)
    return asyncio.run(run_operator(config))
