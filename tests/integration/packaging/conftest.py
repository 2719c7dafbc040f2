"""Render the chart once per set of values and share the objects between the chart's tests."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.helm import CHART, helm_env, run_helm

# The values the checks render: each non-default mode at least once.
VARIANTS: dict[str, list[str]] = {
    "default": [],
    "per-namespace": ["--set", "watchNamespaces={ai,research}"],
    "service-monitor-and-digest": [
        "--set",
        "metrics.serviceMonitor.enabled=true",
        "--set",
        "image.digest=sha256:" + "ab" * 32,
        "--set",
        "replicaCount=2",
    ],
    "optional-kinds": [
        "--set",
        "rbac.karpenterNodePools=true",
        "--set",
        "rbac.podMonitors=true",
        "--set",
        "rbac.kedaScaledObjects=true",
        "--set",
        "watchNamespaces={ai}",
        "--set",
        "operator.defaultImage=vllm/vllm-openai:v0.31.0",
    ],
    "inference-gateway": ["--set", "rbac.inferenceGateway=true"],
    "metrics-open-with-service-monitor": [
        "--set",
        "metrics.auth.enabled=false",
        "--set",
        "metrics.serviceMonitor.enabled=true",
    ],
    "dra": ["--set", "rbac.dra=true"],
    "dra-namespaced": ["--set", "rbac.dra=true", "--set", "watchNamespaces={ai}"],
}

RELEASE = "nemo"
NAMESPACE = "nemotron-system"

Render = Callable[[str], list[dict[str, Any]]]


@pytest.fixture(scope="session")
def helm_environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return helm_env(dict(os.environ), tmp_path_factory.mktemp("helm"))


@pytest.fixture(scope="session")
def render(helm_environment: dict[str, str]) -> Render:
    """``render(variant)``: the objects ``helm template --include-crds`` makes (cached)."""
    cache: dict[str, list[dict[str, Any]]] = {}

    def _render(variant: str) -> list[dict[str, Any]]:
        if variant not in cache:
            result = run_helm(
                helm_environment,
                "template",
                RELEASE,
                str(CHART),
                "--namespace",
                NAMESPACE,
                "--include-crds",
                *VARIANTS[variant],
            )
            cache[variant] = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
        return cache[variant]

    return _render


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]
