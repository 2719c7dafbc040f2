"""Container environment and ``$(VAR)`` expansion in command and args, as the kubelet does.

The renderer passes per-pod values this way (``--node-rank $(NODE_RANK)`` with ``NODE_RANK``
from the ``apps.kubernetes.io/pod-index`` label), so the stand-in must see them expanded.
Supported ``fieldRef`` paths: metadata.name/namespace/uid, metadata.labels['k'],
metadata.annotations['k'], spec.nodeName, spec.serviceAccountName, status.hostIP and
status.podIP. ``resourceFieldRef`` reads the container's requests/limits. ``secretKeyRef``,
``configMapKeyRef`` and ``envFrom`` are read only when a lookup is given (containers that run as
real processes); otherwise the variable stays unset, so a reference to it stays literal. A
``secretKeyRef`` to a Secret or key that does not exist holds the container in
``CreateContainerConfigError`` (:func:`missing_secret`), as the kubelet does.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from nemotron_sim.kubelet.quantity import parse_quantity

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
        "status.podIPs": (pod.get("status") or {}).get("podIP"),
        "status.hostIPs": (pod.get("status") or {}).get("hostIP"),
    }
    if path in ("metadata.labels", "metadata.annotations"):
        values = md.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
    value = simple.get(path)
    return None if value is None else str(value)


class ContainerConfigError(Exception):
    """The kubelet cannot build a container's environment (``CreateContainerConfigError``)."""


# (kind "Secret" or "ConfigMap", namespace, name) → the object, or None if absent
Lookup = Callable[[str, str, str], Mapping[str, Any] | None]


def source_bytes(obj: Mapping[str, Any], kind: str) -> dict[str, bytes]:
    """The keys of a Secret (``data``, base64) or a ConfigMap (``data``, then ``binaryData``)."""
    if kind == "Secret":
        return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    data = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
    data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    return data


def _source_data(obj: Mapping[str, Any], kind: str) -> dict[str, str]:
    return {k: v.decode(errors="replace") for k, v in source_bytes(obj, kind).items()}


def _key_ref(
    pod: Mapping[str, Any], kind: str, ref: Mapping[str, Any], lookup: Lookup
) -> str | None:
    namespace = (pod.get("metadata") or {}).get("namespace", "default")
    name, key = ref.get("name", ""), ref.get("key", "")
    obj = lookup(kind, namespace, name)
    if obj is None:
        if ref.get("optional"):
            return None
        raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
    data = _source_data(obj, kind)
    if key not in data:
        if ref.get("optional"):
            return None
        raise ContainerConfigError(f"couldn't find key {key} in {kind} {namespace}/{name}")
    return data[key]


def resource_value(container: Mapping[str, Any], ref: Mapping[str, Any]) -> str | None:
    """``resourceFieldRef``: limits/requests of cpu, memory or ephemeral-storage over a divisor
    (rounded up, as the kubelet does); an unset limit is left unset (the kubelet would use the
    node's allocatable)."""
    section, _, resource = str(ref.get("resource", "")).partition(".")
    value = ((container.get("resources") or {}).get(section) or {}).get(resource)
    if value is None:
        return None
    default_divisor = "1"
    divisor = parse_quantity(ref.get("divisor") or default_divisor)
    if divisor == 0:
        return None
    return str(math.ceil(parse_quantity(value) / divisor))


def container_env(
    pod: Mapping[str, Any], container: Mapping[str, Any], lookup: Lookup | None = None
) -> dict[str, str]:
    """The variables a container sees; a later entry may reference an earlier one.

    Without ``lookup`` Secret and ConfigMap references are skipped (the stand-in vLLM path);
    with it they are read, and a missing non-optional one raises :class:`ContainerConfigError`
    with the kubelet's message.
    """
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        if lookup is None:
            break
        kind, ref = (
            ("ConfigMap", source["configMapRef"])
            if source.get("configMapRef")
            else ("Secret", source.get("secretRef") or {})
        )
        namespace = (pod.get("metadata") or {}).get("namespace", "default")
        obj = lookup(kind, namespace, ref.get("name", ""))
        if obj is None:
            if ref.get("optional"):
                continue
            raise ContainerConfigError(f'{kind.lower()} "{ref.get("name", "")}" not found')
        prefix = source.get("prefix") or ""
        env.update({prefix + k: v for k, v in _source_data(obj, kind).items()})
    for entry in container.get("env") or []:
        name = entry.get("name", "")
        # kube-apiserver stores `value: ""` as no value at all (omitempty); the kubelet still sets
        # the variable, empty (KEDA's WATCH_NAMESPACE: "" means all namespaces, unset is fatal).
        if "value" in entry or not entry.get("valueFrom"):
            env[name] = expand(str(entry.get("value", "")), env)
            continue
        value_from = entry.get("valueFrom") or {}
        value: str | None = None
        if value_from.get("fieldRef"):
            value = field_value(pod, value_from["fieldRef"].get("fieldPath", ""))
        elif value_from.get("resourceFieldRef"):
            value = resource_value(container, value_from["resourceFieldRef"])
        elif lookup is not None and value_from.get("secretKeyRef"):
            value = _key_ref(pod, "Secret", value_from["secretKeyRef"], lookup)
        elif lookup is not None and value_from.get("configMapKeyRef"):
            value = _key_ref(pod, "ConfigMap", value_from["configMapKeyRef"], lookup)
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
