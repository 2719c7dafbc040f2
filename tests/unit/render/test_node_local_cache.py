"""The node-local weight cache (``spec.storage.cache.nodeLocal``): a hostPath directory instead
of a claim, handed to the serving user by the cache-owner init container, and the fields it
cannot be combined with refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.api.errors import SpecError
from nemotron_operator.render import RenderError
from nemotron_operator.render.pod import RUN_AS_USER
from nemotron_operator.render.storage import CACHE_OWNER_CONTAINER, DOWNLOAD_SCRIPT
from tests.unit.render.fakes import make_deployment, of_kind, pod_spec, render, vllm

PATH = "/var/lib/nemotron/models"
LOCAL: dict[str, Any] = {"storage": {"cache": {"nodeLocal": {"path": PATH}}}}


def test_a_node_local_cache_is_a_host_path_and_no_claim() -> None:
    objects = render(LOCAL | {"replicas": 2})
    assert of_kind(objects, "PersistentVolumeClaim") == []
    assert of_kind(objects, "Job") == []
    assert "volumeClaimTemplates" not in of_kind(objects, "StatefulSet")[0]["spec"]
    spec = pod_spec(objects)
    weights = next(v for v in spec["volumes"] if v["name"] == "weights")
    assert weights == {"name": "weights", "hostPath": {"path": PATH, "type": "DirectoryOrCreate"}}
    owner, download = spec["initContainers"]
    assert owner["name"] == CACHE_OWNER_CONTAINER
    # The download is the usual one: its marker check is what skips a second download.
    assert download["command"] == ["sh", "-c", DOWNLOAD_SCRIPT]
    assert "already complete" in DOWNLOAD_SCRIPT
    script = owner["command"][2]
    assert f"chown {RUN_AS_USER}:{RUN_AS_USER} . .compile-cache .adapter-cache" in script
    context = owner["securityContext"]
    assert context["runAsUser"] == 0
    assert context["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE"]}
    assert context["allowPrivilegeEscalation"] is False
    # The compile cache's subPath is one the cache-owner created.
    compile_mount = next(m for m in vllm(objects)["volumeMounts"] if m.get("subPath"))
    assert compile_mount["subPath"] == ".compile-cache"


def test_without_node_local_there_is_no_cache_owner() -> None:
    for spec in ({}, {"storage": {"cache": {"shared": True, "accessModes": ["ReadWriteMany"]}}}):
        names = [c["name"] for c in pod_spec(render(spec)).get("initContainers", [])]
        assert CACHE_OWNER_CONTAINER not in names


@pytest.mark.parametrize(
    ("cache", "field", "words"),
    [
        (
            {"shared": True, "accessModes": ["ReadWriteMany"]},
            "spec.storage.cache.nodeLocal",
            "set nodeLocal or shared, not both",
        ),
        ({"size": "500Gi"}, "spec.storage.cache.size", "remove spec.storage.cache.size"),
        (
            {"storageClassName": "fast"},
            "spec.storage.cache.storageClassName",
            "does not apply to spec.storage.cache.nodeLocal",
        ),
    ],
)
def test_what_does_not_combine_with_node_local_is_refused_by_name(
    cache: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(RenderError) as info:
        render({"storage": {"cache": {"nodeLocal": {"path": PATH}, **cache}}})
    assert field in str(info.value)
    assert words in str(info.value)


@pytest.mark.parametrize("path", ["relative/dir", "/a/../etc", "/a/.hidden", "/trailing/", "/"])
def test_the_path_must_be_a_plain_absolute_directory(path: str) -> None:
    with pytest.raises(SpecError) as info:
        make_deployment({"storage": {"cache": {"nodeLocal": {"path": path}}}})
    assert "spec.storage.cache.nodeLocal.path" in str(info.value)
