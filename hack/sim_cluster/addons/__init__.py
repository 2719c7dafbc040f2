"""Optional cluster add-ons: real neighbours of the operator, built from their Go modules by
``hack/build-addons.sh`` and run in the simulated cluster as pods (``KubeCluster(addons=...)``,
``python -m sim_cluster --addons monitoring,keda``).

- ``monitoring``: the Prometheus Operator and the Prometheus it runs (monitoring.py).
- ``keda``: KEDA's operator (keda.py).
- ``gateway``: Envoy as the Gateway of class ``nemotron-sim``, in front of the
  InferencePools' endpoint pickers, which run the real picker (gateway.py).

Each add-on names the images its pods use (run as local processes by the simulated kubelet,
programs.py), the CRDs to install with the cluster's (from the same module version), and the
objects to apply once the nodes are up.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim_cluster.addons.binaries import MissingAddonError, built

if TYPE_CHECKING:
    from nemotron_operator.kube.transport import Transport

__all__ = ["COMPONENTS", "Addons", "MissingAddonError", "crds", "install", "parse", "programs"]
# add-on → the components (hack/build-addons.sh) it needs; the first one's CRDs are installed
COMPONENTS = {
    "monitoring": ("prometheus-operator", "prometheus"),
    "keda": ("keda",),
    "gateway": ("epp",),
}


@dataclass(frozen=True)
class Addons:
    names: tuple[str, ...] = ()
    images: dict[str, tuple[str, ...]] = field(default_factory=dict)
    commands: dict[str, tuple[str, ...]] = field(default_factory=dict)


def parse(text: str | Sequence[str]) -> tuple[str, ...]:
    """``monitoring,keda`` → the add-on names; ValueError naming an unknown one."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    unknown = [n for n in names if n not in COMPONENTS]
    if unknown:
        raise ValueError(
            f"--addons: unknown add-on(s) {', '.join(unknown)}; known: {', '.join(COMPONENTS)}"
        )
    return tuple(dict.fromkeys(names))


def programs(names: Iterable[str]) -> Addons:
    chosen = parse(list(names))
    images: dict[str, tuple[str, ...]] = {}
    commands: dict[str, tuple[str, ...]] = {}
    for name in chosen:
        module = _module(name)
        images.update(module.IMAGES)
        commands.update(module.COMMANDS)
    return Addons(chosen, images, commands)


def crds(names: Iterable[str]) -> list[Path]:
    return [built(COMPONENTS[n][0]) / "crds" for n in parse(list(names))]


async def install(api: Transport, names: Iterable[str]) -> None:
    for name in parse(list(names)):
        await _module(name).install(api)


def _module(name: str) -> Any:
    """The add-on's module, imported when needed: the programs its pods run import this
    package, and start faster without the operator's client (a probe's window is short)."""
    return importlib.import_module(f"sim_cluster.addons.{name}")
