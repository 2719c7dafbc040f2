"""The planner against vLLM releases INSTALLED and run through their own configuration path.

tests/unit/sizing/vllm_installed_reference.json was written by ``hack/vllm-installed-reference.py
--write`` run with the Python of a throwaway environment holding the release (its docstring says
what runs: EngineArgs → VllmConfig, CudaPlatform.update_block_size_for_backend with
FlashAttention's kernel sizes, the model class's state shapes and dtypes, the real specs,
get_kv_cache_configs for 64 GiB, get_max_concurrency_for_kv_cache_config). No vLLM is needed to
run this test. The extracted-function reference (vllm_release_reference.json) must agree with it
on every case the installed release computed: that is what confirms its stand-ins.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .helpers import assert_plans_as_the_release

HERE = Path(__file__).parent
INSTALLED = json.loads((HERE / "vllm_installed_reference.json").read_text())
EXTRACTED = json.loads((HERE / "vllm_release_reference.json").read_text())
FIELDS = (
    "blockSize", "attentionPagePerToken", "kvBytesPerToken", "pageBytes", "mambaPageBytes",
    "groups", "layersPerGroup", "blocksPerRequest", "blocksFor64GiB", "concurrencyFor64GiB",
)  # fmt: skip
ROWS = [
    pytest.param(release, name, row, id=f"{release} {name}")
    for release, data in INSTALLED["releases"].items()
    for name, row in data["cases"].items()
]


@pytest.mark.parametrize(("release", "name", "row"), ROWS)
def test_the_planner_computes_what_the_installed_release_computes(
    release: str, name: str, row: dict[str, Any]
) -> None:
    case = EXTRACTED["releases"][release]["cases"][name]  # the case's inputs
    assert_plans_as_the_release(release, case, row, INSTALLED["poolBytes"])


@pytest.mark.parametrize(("release", "name", "row"), ROWS)
def test_the_extracted_functions_agree_with_the_installed_release(
    release: str, name: str, row: dict[str, Any]
) -> None:
    extracted = EXTRACTED["releases"][release]["cases"][name]
    assert {f: extracted[f] for f in FIELDS} == {f: row[f] for f in FIELDS}
    assert row["mambaCacheMode"] == ("align" if extracted["prefix_caching"] else "none")


def test_the_installed_releases_ran_every_recipe_case() -> None:
    assert INSTALLED["poolBytes"] == EXTRACTED["poolBytes"]
    assert "hack/vllm-installed-reference.py --write" in INSTALLED["command"]
    for release, data in INSTALLED["releases"].items():
        assert data["installedVersion"].split("+")[0] == release
        assert sorted(data["cases"]) == sorted(EXTRACTED["releases"][release]["cases"])
