"""The Grafana dashboard queries only series that exist: the operator's (from its metric
definitions) and vLLM's (as the stand-in vLLM exposes them)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from nemotron_operator.observe.samples import USED_SERIES
from nemotron_operator.telemetry import OperatorMetrics
from nemotron_sim.vllm.metrics import VllmMetrics
from tests.unit.telemetry.populated import populate

DASHBOARD = Path(__file__).resolve().parents[3] / "docs" / "grafana" / "nemotron-operator.json"
SERIES_NAME = re.compile(r"\b(nemotron_[a-z0-9_]+|vllm:[a-z0-9_:]+)")


def expressions(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in {"expr", "query"} and isinstance(value, str):
                found.append(value)
            else:
                found += expressions(value)
    elif isinstance(node, list):
        for value in node:
            found += expressions(value)
    return found


def names_in(text: str) -> set[str]:
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples}


def operator_series() -> set[str]:
    metrics = OperatorMetrics()
    populate(metrics, "a")
    metrics.reconcile_finished("success", 0.1)
    metrics.api_request("GET", 200)
    metrics.watch_restarted("pods")
    metrics.scrape_finished("ok")
    return names_in(generate_latest(metrics.registry).decode())


def vllm_series() -> set[str]:
    metrics = VllmMetrics("m", max_model_len=4096, spec_tokens=3)
    metrics.publish_cache_config({"num_gpu_blocks": "10", "block_size": "16"})
    return names_in(metrics.exposition().decode())


def test_every_series_the_dashboard_queries_exists() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    queried = {name for expr in expressions(dashboard) for name in SERIES_NAME.findall(expr)}
    known = operator_series() | vllm_series()
    assert queried  # the regex found something to check
    assert sorted(queried - known) == []


def test_the_dashboard_has_the_promised_panels() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    titles = " | ".join(panel["title"] for panel in dashboard["panels"])
    for topic in ("Ready replicas", "Tokens", "waiting", "KV cache usage", "MTP", "first token",
                  "planned vs observed"):  # fmt: skip
        assert topic in titles, topic
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            assert expr.count("(") == expr.count(")"), expr
            assert expr.count("{") == expr.count("}"), expr


def test_the_vllm_series_the_operator_reads_exist_in_the_stand_in() -> None:
    assert sorted(set(USED_SERIES) - vllm_series()) == []
