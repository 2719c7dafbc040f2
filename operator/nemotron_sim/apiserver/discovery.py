"""Discovery documents: ``/version``, ``/api``, ``/apis``, per-group and per-version lists."""

from __future__ import annotations

import platform
from typing import Any

from nemotron_sim.apiserver.resources import Registry

SIM_VERSION = "v1.36.0-nemotron-sim"  # the suffix tells every client this is a simulation


def version() -> dict[str, Any]:
    return {
        "major": "1",
        "minor": "36",
        "gitVersion": SIM_VERSION,
        "gitCommit": "simulated",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "simulated",
        "platform": "linux/amd64",
    }


def core_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def group_list(registry: Registry) -> dict[str, Any]:
    groups = [_group(n, v) for n, v in registry.groups().items() if n]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(registry: Registry, name: str) -> dict[str, Any] | None:
    versions = registry.groups().get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def resource_list(registry: Registry, group_name: str, version_name: str) -> dict[str, Any] | None:
    infos = registry.resources_of(group_name, version_name)
    if not infos:
        return None
    resources = [entry for info in infos for entry in info.discovery_entries()]
    group_version = f"{group_name}/{version_name}" if group_name else version_name
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }
