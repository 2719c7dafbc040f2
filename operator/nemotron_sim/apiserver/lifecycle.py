"""The API server's rules for one object's lifecycle: what a create or an update may set,
which fields the server owns, when ``generation`` moves, and how deletion is marked."""

from __future__ import annotations

import base64
from typing import Any

from nemotron_sim.apiserver.errors import ApiError, InvalidError, bad_request
from nemotron_sim.apiserver.objects import (
    generated_name,
    meta,
    name_problem,
    new_uid,
    now_rfc3339,
    without,
)
from nemotron_sim.apiserver.resources import CRD_KEY, ResourceInfo

SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
)
_LABEL_NAMED = frozenset({"namespaces", "services"})  # names that must be DNS labels


def _path_segment_problem(name: str) -> str | None:
    if name in (".", ".."):
        return f"may not be '{name}'"
    bad = [c for c in ("/", "%") if c in name]
    return f"may not contain '{bad[0]}'" if bad else None


def prepare_create(info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """Check and normalise a new object; assign uid, creationTimestamp and generation."""
    if not isinstance(obj, dict):
        raise bad_request("the object must be a JSON object")
    _check_type(info, obj)
    md = without(meta(obj), *SERVER_METADATA)
    if not md.get("name"):
        if not md.get("generateName"):
            raise _invalid(info, "", "metadata.name", "Required value: name or generateName")
        md["name"] = generated_name(md["generateName"])
    if info.key.group == "rbac.authorization.k8s.io":  # path segments: "system:basic-user"
        problem = _path_segment_problem(str(md["name"]))
    else:
        problem = name_problem(str(md["name"]), label=info.key.plural in _LABEL_NAMED)
    if problem:
        raise _invalid(info, str(md["name"]), "metadata.name", f"Invalid value: {problem}")
    if info.namespaced:
        if not md.get("namespace"):
            raise bad_request(f"metadata.namespace is required for a namespaced {info.kind}")
    else:
        md.pop("namespace", None)
    md.update(uid=new_uid(), creationTimestamp=now_rfc3339(), generation=1)
    rest = without(obj, "apiVersion", "kind", "metadata")
    new = {"apiVersion": info.key.api_version, "kind": info.kind, "metadata": md, **rest}
    if info.status and info.key.plural != "nodes":
        new.pop("status", None)  # create ignores status; nodes register with theirs
    if info.key.plural == "namespaces" and not info.key.group:
        new["status"] = {"phase": "Active"}
        new.setdefault("spec", {"finalizers": ["kubernetes"]})
    elif info.key.plural == "pods" and not info.key.group:
        new["status"] = {"phase": "Pending"}
    return _secret_data(info, new)


def prepare_update(
    info: ResourceInfo, old: dict[str, Any], new: dict[str, Any], subresource: str | None
) -> dict[str, Any]:
    """Carry over what an update may not change; split main resource and status writes."""
    if not isinstance(new, dict):
        raise bad_request("the object must be a JSON object")
    _check_type(info, new)
    old_md, new_md = meta(old), meta(new)
    if new_md.get("name") not in (None, old_md["name"]):
        raise bad_request(
            f"the name of the object ({new_md.get('name')}) does not match the name on the URL "
            f"({old_md['name']})"
        )
    if subresource == "status":
        result = {**old, "metadata": old_md}
        if new.get("status") is None:
            result.pop("status", None)
        else:
            result["status"] = new["status"]
        return result
    if subresource is not None:
        raise ApiError(404, f"the server could not find the requested resource ({subresource})")
    md = {k: v for k, v in new_md.items() if k not in SERVER_METADATA}
    md.update({k: old_md[k] for k in SERVER_METADATA if k in old_md})
    md["name"] = old_md["name"]
    if "namespace" in old_md:
        md["namespace"] = old_md["namespace"]
    if old_md.get("deletionTimestamp"):
        added = set(md.get("finalizers") or []) - set(old_md.get("finalizers") or [])
        if added:
            raise _invalid(
                info,
                old_md["name"],
                "metadata.finalizers",
                "Forbidden: no new finalizers can be added if the object is being deleted, "
                f"found new finalizers {sorted(added)}",
            )
    result = _secret_data(
        info, {**new, "apiVersion": info.key.api_version, "kind": info.kind, "metadata": md}
    )
    if info.status:
        if "status" in old:
            result["status"] = old["status"]
        else:
            result.pop("status", None)
    return result


def server_fields(
    info: ResourceInfo, new: dict[str, Any], old: dict[str, Any] | None
) -> dict[str, Any]:
    """Fields the server computes: ``generation`` and a CRD's status."""
    if old is not None:
        ignored = ("metadata", "status") if info.status else ("metadata",)
        if without(new, *ignored) != without(old, *ignored):
            new = {
                **new,
                "metadata": {**meta(new), "generation": meta(old).get("generation", 1) + 1},
            }
    if info.key == CRD_KEY:
        new = {**new, "status": _crd_status(info, new)}
    return new


def same_content(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A write that changes nothing keeps the resourceVersion and sends no event."""
    rv = meta(old).get("resourceVersion")
    return old == {**new, "metadata": {**meta(new), "resourceVersion": rv}}


def mark_deleted(
    obj: dict[str, Any], finalizers: list[str], *, grace_seconds: int = 0
) -> dict[str, Any]:
    """Terminating: ``deletionTimestamp`` is when the grace period ends, as for pods."""
    md = {
        **meta(obj),
        "deletionTimestamp": now_rfc3339(grace_seconds),
        "deletionGracePeriodSeconds": grace_seconds,
        "finalizers": finalizers,
        "generation": meta(obj).get("generation", 1) + 1,
    }
    return {**obj, "metadata": md}


def _secret_data(info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """A Secret's write-only ``stringData`` is merged into ``data`` (base64), as the API does."""
    if (
        info.key.plural != "secrets"
        or info.key.group
        or not isinstance(obj.get("stringData"), dict)
    ):
        return obj
    encoded = {k: base64.b64encode(str(v).encode()).decode() for k, v in obj["stringData"].items()}
    out = {k: v for k, v in obj.items() if k != "stringData"}
    out["data"] = {**(obj.get("data") or {}), **encoded}
    return out


def _check_type(info: ResourceInfo, obj: dict[str, Any]) -> None:
    kind = obj.get("kind")
    if kind not in (None, "", info.kind):
        raise bad_request(f"the kind of the object ({kind}) does not match the URL ({info.kind})")
    version = obj.get("apiVersion")
    if version not in (None, "") and version.rpartition("/")[0] != info.key.group:
        raise bad_request(
            f"the API version of the object ({version}) does not match the URL "
            f"({info.key.api_version})"
        )


def _invalid(info: ResourceInfo, name: str, path: str, message: str) -> InvalidError:
    return InvalidError(info.kind, info.key.group, name, [(path, message)])


def _crd_status(info: ResourceInfo, crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = meta(crd)["name"]
    expected = f"{names.get('plural')}.{spec.get('group')}"
    if name != expected:
        raise _invalid(info, name, "metadata.name", f'InvalidError value: must be "{expected}"')
    now = now_rfc3339()
    old_time = {c.get("type"): c.get("lastTransitionTime") for c in _conditions(crd)}
    conditions = [
        {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": old_time.get(kind) or now,
        }
        for kind, reason, message in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        )
    ]
    accepted = {"listKind": f"{names.get('kind')}List", "singular": "", **names}
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    return {"acceptedNames": accepted, "conditions": conditions, "storedVersions": stored}


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    status = obj.get("status")
    return list(status.get("conditions") or []) if isinstance(status, dict) else []
