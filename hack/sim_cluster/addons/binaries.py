"""Where an add-on's real component is: ``hack/build-addons.sh`` builds each from its own Go
module (the recipe ``hack/addons/<component>/``) into ``.cache/addons/<key>/`` — ``bin/`` the
binaries, ``crds/`` and ``manifests/`` the project's own CRDs and manifests of the same version —
where the key names the component's version and a hash of the recipe's ``go.mod`` and
``go.sum`` and of the component's line of ``hack/addons/components`` (what is built and copied).
This module computes the same key (a test checks the two agree)."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[3]
RECIPES = _ROOT / "hack" / "addons"
CACHE = _ROOT / ".cache" / "addons"


def _lines() -> dict[str, str]:
    """component → its line of hack/addons/components (``component|module|binaries|...``)."""
    text = (RECIPES / "components").read_text()
    return {
        line.split("|", 1)[0]: line
        for line in text.splitlines()
        if line.strip() and not line.startswith("#")
    }


LINES = _lines()
# component → its main module (the version in the key is the one the recipe requires)
MODULES = {name: line.split("|")[1] for name, line in LINES.items()}


# What an add-on's image runs in the simulated kubelet (programs.py, with the program's name)
PROGRAMS = (sys.executable, "-m", "sim_cluster.addons.programs")


class MissingAddonError(RuntimeError):
    """A component is not built; the message says how to build it."""


def version(component: str) -> str:
    text = (RECIPES / component / "go.mod").read_text()
    found = re.search(rf"^\s*{re.escape(MODULES[component])} (v\S+)", text, re.MULTILINE)
    if found is None:
        raise MissingAddonError(f"hack/addons/{component}/go.mod does not require its module")
    return found.group(1)


def addon_dir(component: str) -> Path:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((RECIPES / component / name).read_bytes())
    digest.update(f"{LINES[component]}\n".encode())
    return CACHE / f"{component}-{version(component)}_{digest.hexdigest()[:12]}"


def built(component: str) -> Path:
    """The component's directory; MissingAddonError unless its build completed."""
    directory = addon_dir(component)
    if not (directory / ".complete").is_file():
        raise MissingAddonError(
            f"{component} is not built ({directory}): run hack/build-addons.sh {component} "
            "(hack/test.sh does it for the tests that need it)"
        )
    return directory
