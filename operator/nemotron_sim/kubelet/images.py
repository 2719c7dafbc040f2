"""Which containers run as real local processes: the image → program mapping.

A container whose image *repository* (the reference without ``:tag`` or ``@digest``) is in the
``images`` table runs as a child process: the mapped argv stands for the image's entrypoint and
the container's ``args`` follow it. A container ``command`` replaces the entrypoint as in
Kubernetes; its first word is looked up by base name in the ``commands`` table, and a word not in
it runs as given, found on this machine's ``PATH``. Containers of unmapped images are not run.
Which images and commands map to what is the cluster's choice (the simulated cluster maps the
operator's image and ``python``: sim_cluster.programs); the kubelet maps none of its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def image_repository(image: str) -> str:
    """``registry/name[:tag][@digest]`` → ``registry/name`` (a port's colon is kept)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


@dataclass(frozen=True)
class ImagePrograms:
    images: Mapping[str, Sequence[str]] = field(default_factory=dict)
    commands: Mapping[str, Sequence[str]] = field(default_factory=dict)

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
