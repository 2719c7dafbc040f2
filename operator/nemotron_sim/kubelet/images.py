"""Which containers run as real local processes: the image → program mapping.

A container whose image *repository* (the reference without ``:tag`` or ``@digest``) is in the
``images`` table runs as a child process: the mapped argv stands for the image's entrypoint and
the container's ``args`` follow it. A container ``command`` replaces the entrypoint as in
Kubernetes; its first word is looked up by base name in the ``commands`` table (``python`` is
this interpreter, ``nemotron-operator`` the operator's CLI), and a word not in it runs as given,
found on this machine's ``PATH``. Containers of unmapped images are not run.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

OPERATOR_IMAGE = "ghcr.io/nemotron-operator/nemotron-operator"
OPERATOR_PROGRAM = (sys.executable, "-m", "nemotron_operator.cli")


def default_images() -> dict[str, tuple[str, ...]]:
    return {OPERATOR_IMAGE: OPERATOR_PROGRAM}


def default_commands() -> dict[str, tuple[str, ...]]:
    return {
        "nemotron-operator": OPERATOR_PROGRAM,
        "python": (sys.executable,),
        "python3": (sys.executable,),
    }


def image_repository(image: str) -> str:
    """``registry/name[:tag][@digest]`` → ``registry/name`` (a port's colon is kept)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def parse_mapping(text: str, option: str) -> tuple[str, tuple[str, ...]]:
    """``KEY=PROGRAM ARGS...`` (split like a shell) from the command line."""
    key, sep, program = text.partition("=")
    words = shlex.split(program) if sep else []
    if not key or not words:
        raise ValueError(
            f"{option} takes KEY=PROGRAM (e.g. {option} repo/x=/usr/bin/x), got {text!r}"
        )
    return key, tuple(words)


@dataclass(frozen=True)
class ImagePrograms:
    images: Mapping[str, Sequence[str]] = field(default_factory=default_images)
    commands: Mapping[str, Sequence[str]] = field(default_factory=default_commands)

    @classmethod
    def with_defaults(
        cls,
        images: Mapping[str, Sequence[str]] | None = None,
        commands: Mapping[str, Sequence[str]] | None = None,
    ) -> ImagePrograms:
        """The defaults plus (overridden by) the given entries."""
        return cls(
            {**default_images(), **{k: tuple(v) for k, v in (images or {}).items()}},
            {**default_commands(), **{k: tuple(v) for k, v in (commands or {}).items()}},
        )

    def runs(self, container: Mapping[str, Any]) -> bool:
        return image_repository(str(container.get("image", ""))) in self.images

    def argv(self, container: Mapping[str, Any], command: list[str], args: list[str]) -> list[str]:
        """The process's argv from the (already ``$(VAR)``-expanded) command and args."""
        if not command:
            entrypoint = self.images[image_repository(str(container.get("image", "")))]
            return [*entrypoint, *args]
        mapped = self.commands.get(os.path.basename(command[0]))
        head = list(mapped) if mapped is not None else [command[0]]
        return [*head, *command[1:], *args]
