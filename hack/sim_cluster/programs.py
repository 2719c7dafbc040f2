"""What the simulated cluster's kubelets run as local processes: the operator's image as the
operator's CLI on this interpreter, ``python`` as this interpreter, and the ``--image`` /
``--command`` mappings the command line adds (nemotron_sim.kubelet.images says how a mapping
applies to a container)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence

from nemotron_sim.kubelet.images import ImagePrograms

OPERATOR_IMAGE = "ghcr.io/nemotron-operator/nemotron-operator"
OPERATOR_PROGRAM = (sys.executable, "-m", "nemotron_operator.cli")
DEFAULT_IMAGES = {OPERATOR_IMAGE: OPERATOR_PROGRAM}
DEFAULT_COMMANDS = {
    "nemotron-operator": OPERATOR_PROGRAM,
    "python": (sys.executable,),
    "python3": (sys.executable,),
}


def local_programs(
    images: Mapping[str, Sequence[str]] | None = None,
    commands: Mapping[str, Sequence[str]] | None = None,
) -> ImagePrograms:
    """The defaults plus (overridden by) the given entries."""
    return ImagePrograms(
        {**DEFAULT_IMAGES, **{k: tuple(v) for k, v in (images or {}).items()}},
        {**DEFAULT_COMMANDS, **{k: tuple(v) for k, v in (commands or {}).items()}},
    )


def parse_mapping(text: str, option: str) -> tuple[str, tuple[str, ...]]:
    """``KEY=PROGRAM ARGS...`` (split like a shell) from the command line."""
    key, sep, program = text.partition("=")
    words = shlex.split(program) if sep else []
    if not key or not words:
        raise ValueError(
            f"{option} takes KEY=PROGRAM (e.g. {option} repo/x=/usr/bin/x), got {text!r}"
        )
    return key, tuple(words)
