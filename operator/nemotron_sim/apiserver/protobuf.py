"""Decoding the protobuf bodies kubectl's typed commands send (``kubectl create namespace``,
``create configmap``, ``create secret``, ``create serviceaccount``, ``create token``, ``auth
can-i``, ``auth whoami``).

Only these kinds are understood, from their field numbers in k8s.io/api ``generated.proto``;
any other protobuf body is answered with 415 and a hint to use ``kubectl apply -f``. Fields the
server owns (uid, timestamps, ...) are skipped.
"""

from __future__ import annotations

import base64
from typing import Any

from nemotron_sim.apiserver.errors import ApiError

MAGIC = b"k8s\x00"
# field number → (JSON name, how to decode): str, int, bool, map, bmap (map to bytes),
# list (repeated string), or the name of a message below (repeated messages get "[]" appended).
Schema = dict[int, tuple[str, str]]
_MESSAGES: dict[str, Schema] = {
    "ObjectMeta": {
        1: ("name", "str"),
        2: ("generateName", "str"),
        3: ("namespace", "str"),
        11: ("labels", "map"),
        12: ("annotations", "map"),
        13: ("ownerReferences", "OwnerReference[]"),
        14: ("finalizers", "list"),
    },
    "OwnerReference": {
        1: ("kind", "str"),
        3: ("name", "str"),
        4: ("uid", "str"),
        5: ("apiVersion", "str"),
        6: ("controller", "bool"),
        7: ("blockOwnerDeletion", "bool"),
    },
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "list")},
    "ConfigMap": {
        1: ("metadata", "ObjectMeta"),
        2: ("data", "map"),
        3: ("binaryData", "bmap"),
        4: ("immutable", "bool"),
    },
    "Secret": {
        1: ("metadata", "ObjectMeta"),
        2: ("data", "bmap"),
        3: ("type", "str"),
        4: ("stringData", "map"),
        5: ("immutable", "bool"),
    },
    "ServiceAccount": {
        1: ("metadata", "ObjectMeta"),
        3: ("imagePullSecrets", "LocalObjectReference[]"),
        4: ("automountServiceAccountToken", "bool"),
    },
    "LocalObjectReference": {1: ("name", "str")},
    "TokenRequest": {1: ("metadata", "ObjectMeta"), 2: ("spec", "TokenRequestSpec")},
    "TokenRequestSpec": {
        1: ("audiences", "list"),
        3: ("boundObjectRef", "BoundObjectReference"),
        4: ("expirationSeconds", "int"),
    },
    "BoundObjectReference": {
        1: ("kind", "str"),
        2: ("apiVersion", "str"),
        3: ("name", "str"),
        4: ("uid", "str"),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", "ObjectMeta"),
        2: ("spec", "SelfSubjectAccessReviewSpec"),
    },
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes"),
        2: ("nonResourceAttributes", "NonResourceAttributes"),
    },
    "ResourceAttributes": {
        1: ("namespace", "str"),
        2: ("verb", "str"),
        3: ("group", "str"),
        4: ("version", "str"),
        5: ("resource", "str"),
        6: ("subresource", "str"),
        7: ("name", "str"),
    },
    "NonResourceAttributes": {1: ("path", "str"), 2: ("verb", "str")},
    "SelfSubjectRulesReview": {
        1: ("metadata", "ObjectMeta"),
        2: ("spec", "SelfSubjectRulesReviewSpec"),
    },
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "str")},
    "SelfSubjectReview": {1: ("metadata", "ObjectMeta")},
}
_KINDS = {
    "Namespace": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "ServiceAccount": "v1",
    "TokenRequest": "authentication.k8s.io/v1",
    "SelfSubjectReview": "authentication.k8s.io/v1",
    "SelfSubjectAccessReview": "authorization.k8s.io/v1",
    "SelfSubjectRulesReview": "authorization.k8s.io/v1",
}


def _unsupported(what: str) -> ApiError:
    return ApiError(
        415,
        f"the simulated API server decodes protobuf only for {', '.join(_KINDS)} ({what}); "
        "send JSON instead, e.g. kubectl apply -f",
    )


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited fields."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            out.append((number, data[pos : pos + size]))
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise _unsupported(f"wire type {wire}")
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise _unsupported("truncated message")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _decode(data: bytes, message: str) -> dict[str, Any]:
    schema = _MESSAGES[message]
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if kind == "bool":
            out[name] = bool(value)
        elif kind == "int":
            if not isinstance(value, int):
                raise _unsupported(f"{message}.{name} is not a varint")
            out[name] = value
        elif not isinstance(value, bytes):
            raise _unsupported(f"{message}.{name} is not length-delimited")
        elif kind == "str":
            out[name] = value.decode()
        elif kind in ("map", "bmap"):
            entry = dict(_fields(value))
            key, item = entry.get(1, b""), entry.get(2, b"")
            if not isinstance(key, bytes) or not isinstance(item, bytes):
                raise _unsupported(f"{message}.{name} has a malformed map entry")
            text = base64.b64encode(item).decode() if kind == "bmap" else item.decode()
            out.setdefault(name, {})[key.decode()] = text
        elif kind == "list":
            out.setdefault(name, []).append(value.decode())
        elif kind.endswith("[]"):
            out.setdefault(name, []).append(_decode(value, kind[:-2]))
        else:
            out[name] = _decode(value, kind)
    return out


def decode_object(body: bytes) -> dict[str, Any]:
    """A JSON-shaped object from a ``application/vnd.kubernetes.protobuf`` request body."""
    if not body.startswith(MAGIC):
        raise _unsupported("no k8s envelope")
    envelope = dict(_fields(body[len(MAGIC) :]))
    type_meta, raw = envelope.get(1, b""), envelope.get(2, b"")
    if not isinstance(type_meta, bytes) or not isinstance(raw, bytes):
        raise _unsupported("malformed envelope")
    meta = {n: v.decode() for n, v in _fields(type_meta) if isinstance(v, bytes)}
    api_version, kind = meta.get(1, ""), meta.get(2, "")
    if _KINDS.get(kind) != api_version:
        raise _unsupported(f"{api_version}/{kind}")
    return {"apiVersion": api_version, "kind": kind, **_decode(raw, kind)}
