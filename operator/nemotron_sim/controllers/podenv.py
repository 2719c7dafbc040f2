"""Container environment and ``$(VAR)`` expansion in command and args, as the kubelet does.

The renderer passes per-pod values this way (``--node-rank $(NODE_RANK)`` with ``NODE_RANK``
from the ``apps.kubernetes.io/pod-index`` label), so the stand-in must see them expanded.
Supported ``fieldRef`` paths: metadata.name/namespace/uid, metadata.labels['k'],
metadata.annotations['k'], spec.nodeName, spec.serviceAccountName, status.hostIP and
status.podIP. ``secretKeyRef``, ``configMapKeyRef`` and ``resourceFieldRef`` are not read (the
variable stays unset, so a reference to it stays literal); a ``secretKeyRef`` to a Secret or key
that does not exist holds the container in ``CreateContainerConfigError`` (:func:`missing_secret`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def expand(text: str, env: Mapping[str, str]) -> str:
    """``$(VAR)`` → its value when defined, else unchanged; ``$$`` → ``$``
    (k8s.io/kubernetes/third_party/forked/golang/expansion)."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REFERENCE.sub(replace, text)


def field_value(pod: Mapping[str, Any], path: str) -> str | None:
    md = pod.get("metadata") or {}
    if subscript := _SUBSCRIPT.match(path):
        value = (md.get(subscript.group(1)) or {}).get(subscript.group(2))
        return None if value is None else str(value)
    simple = {
        "metadata.name": md.get("name"),
        "metadata.namespace": md.get("namespace"),
        "metadata.uid": md.get("uid"),
        "spec.nodeName": (pod.get("spec") or {}).get("nodeName"),
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", "default"),
        "status.hostIP": (pod.get("status") or {}).get("hostIP"),
        "status.podIP": (pod.get("status") or {}).get("podIP"),
    }
    value = simple.get(path)
    return None if value is None else str(value)


def container_env(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, str]:
    """The variables a container sees; a later entry may reference an earlier one."""
    env: dict[str, str] = {}
    for entry in container.get("env") or []:
        name = entry.get("name", "")
        if "value" in entry:
            env[name] = expand(str(entry["value"]), env)
            continue
        field_ref = (entry.get("valueFrom") or {}).get("fieldRef")
        if field_ref:
            value = field_value(pod, field_ref.get("fieldPath", ""))
            if value is not None:
                env[name] = value
    return env


def expanded_argv(pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[str]:
    env = container_env(pod, container)
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    return [expand(str(word), env) for word in words]


def missing_secret(
    container: Mapping[str, Any], namespace: str, secrets: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """The kubelet's refusal to start ``container`` (``CreateContainerConfigError``) when an
    ``env[].valueFrom.secretKeyRef`` that is not ``optional`` names a Secret or key that does not
    exist; ``secrets`` maps names to Secret objects of the pod's namespace. Only existence is
    checked: values never reach the stand-in."""
    for var in container.get("env") or []:
        ref = (var.get("valueFrom") or {}).get("secretKeyRef")
        if not ref or ref.get("optional"):
            continue
        name, key = str(ref.get("name", "")), str(ref.get("key", ""))
        secret = secrets.get(name)
        if secret is None:
            return f'secret "{name}" not found'
        if key not in (secret.get("data") or {}) and key not in (secret.get("stringData") or {}):
            return f"couldn't find key {key} in Secret {namespace}/{name}"
    return None
