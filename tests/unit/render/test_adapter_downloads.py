"""LoRA adapters fetched by the download step (render/storage.py ``DOWNLOAD_SCRIPT``,
render/adapters.py ``downloads``): which adapters, where, with which revision and token; the
script run with a stand-in ``hf``; and what a running pod may load."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nemotron_operator.api.errors import SpecError
from nemotron_operator.catalog import vllm_lora
from nemotron_operator.render import names
from nemotron_operator.render.adapters import (
    WantedAdapter,
    fetched_in_pod,
    loadable_in_pod,
)
from nemotron_operator.render.storage import DOWNLOAD_SCRIPT
from tests.unit.render.fakes import make_deployment, of_kind, pod_spec, render, vllm

LIMITS = {"maxLoras": 2, "maxLoraRank": 16}
STATIC = {"lora": LIMITS | {"runtimeUpdates": False}}


def hf(name: str, repo: str, revision: str | None = None, token: str | None = None) -> Any:
    source: dict[str, Any] = {"id": repo}
    if revision is not None:
        source["revision"] = revision
    if token is not None:
        source["tokenSecretRef"] = {"name": token, "key": "t"}
    return {"name": name, "rank": 8, "source": {"huggingFace": source}}


def download(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = pod_spec(objects)["initContainers"]
    assert container["name"] == "download"
    return dict(container)


def download_env(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in download(objects)["env"]}


def serving_env(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in vllm(objects)["env"]}


def annotation(objects: list[dict[str, Any]]) -> Any:
    sts = of_kind(objects, "StatefulSet")[0]
    return json.loads(sts["metadata"]["annotations"][names.ADAPTERS])


def test_without_runtime_updates_every_hub_adapter_is_fetched_at_its_revision() -> None:
    spec = {"engine": STATIC, "adapters": [hf("sql", "org/sql", "v2", "hf"), hf("law", "o/law")]}
    objects = render(spec, name="chat")
    variables = download_env(objects)
    assert variables["ADAPTERS"].splitlines() == [
        "org/sql v2 /adapter-cache/fetched/org--sql/v2",
        "o/law main /adapter-cache/fetched/o--law/main",
    ]
    assert variables["ADAPTER_HF_TOKEN"] == {"secretKeyRef": {"name": "hf", "key": "t"}}
    mounts = {m["mountPath"]: m for m in download(objects)["volumeMounts"]}
    assert mounts["/adapter-cache"] == vllm_mounts(objects)["/adapter-cache"]
    args = vllm(objects)["args"]
    start = args.index("--lora-modules")
    paths = [vllm_lora.parse_lora_module(v).path for v in args[start + 1 : start + 3]]
    assert paths == ["/adapter-cache/fetched/org--sql/v2", "/adapter-cache/fetched/o--law/main"]
    # vLLM fetches nothing: the server stays offline and needs no token.
    served = serving_env(objects)
    assert served["HF_HUB_OFFLINE"] == "1"
    assert "HF_TOKEN" not in served


def vllm_mounts(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {m["mountPath"]: m for m in vllm(objects)["volumeMounts"]}


def test_runtime_updates_fetch_only_pinned_adapters_in_the_download_step() -> None:
    spec = {"engine": {"lora": LIMITS}, "adapters": [hf("sql", "org/sql", "v2"), hf("a", "o/a")]}
    objects = render(spec)
    assert download_env(objects)["ADAPTERS"] == "org/sql v2 /adapter-cache/fetched/org--sql/v2"
    assert annotation(objects) == [
        {"name": "sql", "path": "/adapter-cache/fetched/org--sql/v2", "rank": 8},
        {"name": "a", "path": "o/a", "rank": 8},  # vLLM's own loader fetches it at load time
    ]
    template = of_kind(objects, "StatefulSet")[0]["spec"]["template"]
    # An adapter without a revision comes and goes without touching the pod template...
    fewer = render({**spec, "adapters": [hf("sql", "org/sql", "v2")]})
    assert of_kind(fewer, "StatefulSet")[0]["spec"]["template"] == template
    # ...a pinned one is part of it: only the download step can fetch a revision.
    moved = render({**spec, "adapters": [hf("sql", "org/sql", "v3"), hf("a", "o/a")]})
    assert of_kind(moved, "StatefulSet")[0]["spec"]["template"] != template


def test_unpinned_runtime_adapters_leave_the_download_step_alone() -> None:
    objects = render({"engine": {"lora": LIMITS}, "adapters": [hf("a", "o/a")]})
    assert "ADAPTERS" not in download_env(objects)
    assert download(objects) == download(render({}))


def test_weights_on_a_claim_get_a_download_step_for_adapters_only() -> None:
    spec = {
        "model": {"source": {"pvc": {"claimName": "weights-ro"}}},
        "engine": STATIC,
        "adapters": [hf("sql", "org/sql", "v2")],
    }
    objects = render(spec)
    variables = download_env(objects)
    assert variables["MODEL_ID"] == ""  # the script skips the weights
    assert variables["ADAPTERS"] == "org/sql v2 /adapter-cache/fetched/org--sql/v2"
    mounts = [m["name"] for m in download(objects)["volumeMounts"]]
    assert mounts == ["adapter-cache", "scratch"]  # the read-only weight claim is not mounted
    volumes = {v["name"]: v for v in pod_spec(objects)["volumes"]}
    assert "emptyDir" in volumes["adapter-cache"]
    no_adapters = render({"model": spec["model"]})
    assert "initContainers" not in pod_spec(no_adapters)


@pytest.mark.parametrize("revision", ["", "-x", "a b", "x" * 129, "v1;rm"])
def test_a_bad_revision_is_refused_with_its_field(revision: str) -> None:
    with pytest.raises(SpecError) as info:
        make_deployment({"adapters": [hf("sql", "org/sql", revision)]})
    assert "spec.adapters[0].source.huggingFace.revision" in str(info.value)


def test_a_revision_with_slashes_stays_one_directory() -> None:
    objects = render({"engine": STATIC, "adapters": [hf("sql", "org/sql", "refs/pr/3")]})
    line = download_env(objects)["ADAPTERS"]
    assert line == "org/sql refs/pr/3 /adapter-cache/fetched/org--sql/refs--pr--3"


def test_a_pod_loads_a_fetched_directory_only_if_its_own_download_step_filled_it() -> None:
    spec = {"engine": {"lora": LIMITS}, "adapters": [hf("sql", "org/sql", "v2"), hf("a", "o/a")]}
    pod = {"spec": pod_spec(render(spec))}
    fetched = "/adapter-cache/fetched/org--sql/v2"
    assert fetched_in_pod(pod) == {fetched}
    wanted = (
        WantedAdapter("sql", fetched, 8),
        WantedAdapter("a", "o/a", 8),
        WantedAdapter("law", "/adapters/adapter-loras/law", 8),
        WantedAdapter("new", "/adapter-cache/fetched/org--new/main", 8),
    )
    # A pod of the older template has not fetched "new": it waits for the rollout.
    assert [a.name for a in loadable_in_pod(wanted, pod)] == ["sql", "a", "law"]
    assert [a.name for a in loadable_in_pod(wanted, {"spec": {}})] == ["a", "law"]


def run_script(tmp_path: Path, adapters: str, fail: str = "") -> subprocess.CompletedProcess[str]:
    """DOWNLOAD_SCRIPT under sh with a stand-in ``hf`` that writes adapter_config.json (or
    fails for the repository named in ``fail``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    hf_cli = bin_dir / "hf"
    hf_cli.write_text(
        "#!/bin/sh\n"
        f'echo "$* token=${{HF_TOKEN:-none}}" >> {tmp_path}/calls\n'
        f'[ "$2" = "{fail}" ] && exit 3\n'
        'while [ $# -gt 0 ]; do [ "$1" = --local-dir ] && mkdir -p "$2" && '
        'echo \'{"r": 8}\' > "$2/adapter_config.json"; shift; done\n'
    )
    hf_cli.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "MODEL_ID": "",
        "MODEL_REVISION": "main",
        "MODEL_DIR": str(tmp_path / "model"),
        "ADAPTERS": adapters,
        "ADAPTER_HF_TOKEN": "secret",
    }
    return subprocess.run(
        ["sh", "-c", DOWNLOAD_SCRIPT], env=env, capture_output=True, text=True, check=False
    )


def test_the_script_fetches_each_adapter_once_at_its_revision(tmp_path: Path) -> None:
    lines = f"org/a v2 {tmp_path}/c/org--a/v2\no/b main {tmp_path}/c/o--b/main"
    first = run_script(tmp_path, lines)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "c/org--a/v2/adapter_config.json").is_file()
    assert (tmp_path / "c/o--b/main/.nemotron-download-complete").read_text() == "o/b@main\n"
    again = run_script(tmp_path, lines)
    assert again.returncode == 0
    assert "already complete" in again.stdout
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == [
        f"download org/a --revision v2 --local-dir {tmp_path}/c/org--a/v2 token=secret",
        f"download o/b --revision main --local-dir {tmp_path}/c/o--b/main token=secret",
    ]
    assert not (tmp_path / "model").exists()  # no MODEL_ID: the weights are not fetched


def test_the_script_fails_the_pod_when_an_adapter_fails(tmp_path: Path) -> None:
    result = run_script(tmp_path, f"org/a v2 {tmp_path}/c/a\norg/b v1 {tmp_path}/c/b", "org/a")
    assert result.returncode == 3
    assert not (tmp_path / "c/a/.nemotron-download-complete").exists()
    assert not (tmp_path / "c/b").exists()  # stopped at the first failure
