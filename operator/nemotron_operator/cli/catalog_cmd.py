"""``nemotron-operator models`` and ``gpus``: list the catalogs."""

from __future__ import annotations

import argparse

from nemotron_operator.cli.common import SubParsers, not_available


def register(subparsers: SubParsers) -> None:
    models = subparsers.add_parser("models", help="list the model catalog")
    models.set_defaults(handler=_models)
    gpus = subparsers.add_parser("gpus", help="list the GPU catalog")
    gpus.set_defaults(handler=_gpus)


def _models(args: argparse.Namespace) -> int:
    return not_available("models")


def _gpus(args: argparse.Namespace) -> int:
    return not_available("gpus")
