"""hack/build-images.py (the images real nodes run, built without Docker) against the Dockerfiles:
the same user, working directory, entrypoint, command, ports and environment, and the same
package set (what the Dockerfile's `pip install` under constraints.txt resolves).

The built archives exist where the real-node tier runs (hack/test.sh as root builds them;
NEMOTRON_REAL_NODES=1): there a missing archive fails. Elsewhere only the Dockerfile reading is
checked."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import sys
import tarfile
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.integration.packaging.dockerfiles import instructions

ROOT = Path(__file__).resolve().parents[3]
REAL_NODES = os.environ.get("NEMOTRON_REAL_NODES") == "1"


def builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_images", ROOT / "hack/build-images.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("image", ["operator", "vllm-stub"])
def test_the_builder_reads_what_the_dockerfile_says(image: str) -> None:
    dockerfile = ROOT / "hack/images" / image / "Dockerfile"
    config = builder().dockerfile_config(dockerfile)
    final = instructions(dockerfile)
    final = final[max(i for i, (word, _) in enumerate(final) if word == "FROM") :]
    said = dict(final)
    assert config.user == said["USER"] == "65532:65532"
    assert config.entrypoint == json.loads(said["ENTRYPOINT"])
    assert config.cmd == json.loads(said["CMD"])
    assert config.workdir == [rest for word, rest in final if word == "WORKDIR"][-1]
    for word, rest in final:
        if word == "ENV":
            for item in rest.split():
                key, value = item.split("=", 1)
                assert config.env[key] == value


def _archive(name: str) -> tarfile.TarFile:
    path = ROOT / ".cache/images" / f"{name}.tar"
    if not path.exists():
        if REAL_NODES:
            pytest.fail(f"{path} missing: hack/build-images.sh builds it (the real-node tier)")
        pytest.skip("the real-node tier is not enabled (NEMOTRON_REAL_NODES=1, as root)")
    return tarfile.open(path)


def _blob(archive: tarfile.TarFile, digest: str) -> bytes:
    member = archive.extractfile(f"./blobs/sha256/{digest.removeprefix('sha256:')}")
    assert member is not None
    return member.read()


def _image(name: str) -> tuple[dict[str, Any], set[tuple[str, str]], str]:
    """(image config, {(distribution, version)} installed, the name containerd imports)."""
    with _archive(name) as archive:
        index = json.loads(_blob_by_name(archive, "./index.json"))
        entry = index["manifests"][0]
        manifest = json.loads(_blob(archive, entry["digest"]))
        config = json.loads(_blob(archive, manifest["config"]["digest"]))
        dists = set()
        for layer in manifest["layers"]:
            # in memory: the cache directory is shared with other checkouts' test runs
            with tarfile.open(fileobj=io.BytesIO(_blob(archive, layer["digest"]))) as files:
                for member in files.getnames():
                    found = re.search(r"dist-packages/([^/]+)-([^-/]+)\.dist-info/METADATA$",
                                      member)  # fmt: skip
                    if found:
                        dists.add((canonicalize_name(found[1]), found[2]))
        return config["config"], dists, entry["annotations"]["io.containerd.image.name"]


def _blob_by_name(archive: tarfile.TarFile, name: str) -> bytes:
    member = archive.extractfile(name)
    assert member is not None
    return member.read()


def _closure(requirements: list[str]) -> set[str]:
    """What pip resolves for these requirements in this environment (markers evaluated)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [Requirement(r) for r in metadata.requires(req.name) or []]
    return seen


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split(";")[0].strip().split("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


@pytest.mark.parametrize("image", ["operator", "vllm-stub"])
def test_the_built_image_is_what_the_dockerfile_describes(image: str) -> None:
    config, dists, name = _image(image)
    build = builder()
    wanted = build.dockerfile_config(ROOT / "hack/images" / image / "Dockerfile")
    assert config["User"] == wanted.user
    assert config["WorkingDir"] == wanted.workdir
    assert config["Entrypoint"] == wanted.entrypoint
    assert config["Cmd"] == wanted.cmd
    assert sorted(config.get("ExposedPorts", {})) == sorted(wanted.expose)
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env == {**build.BASE_ENV, **wanted.env}
    pins = _pins()
    installed = {dist for dist, _ in dists}
    if image == "operator":
        assert name.startswith("ghcr.io/nemotron-operator/nemotron-operator:")
        assert installed == _closure(["nemotron-operator"])
    else:
        assert name == "docker.io/nemotron-operator/vllm-stub:dev"
        stub = (ROOT / "hack/images/vllm-stub/requirements.txt").read_text().splitlines()
        wanted_dists = _closure([r for r in stub if r and not r.startswith("#")])
        assert installed == wanted_dists | {"nemotron-operator"}
    for dist, version in dists:  # every one at its pinned version
        assert dist == "nemotron-operator" or pins[dist] == version, dist
