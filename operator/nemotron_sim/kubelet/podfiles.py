"""A process pod's volumes as directories, and its ServiceAccount identity as files.

Without a mount namespace a process cannot see a volume at its ``mountPath``, so each volume
becomes a directory under the pod's directory and the container is told where each of its
mounts is (``NEMOTRON_SIM_MOUNTS``, JSON ``{mountPath: directory}``). ``emptyDir`` (and any
type not read here, e.g. ``hostPath``) is an empty directory; ``configMap``, ``secret``,
``downwardAPI`` and ``projected`` are filled as the kubelet fills them (keys or ``items``,
``defaultMode``/``mode``); a ``persistentVolumeClaim`` is a directory per claim that outlives
the pod. Unless ``automountServiceAccountToken: false``, the directory of
``/var/run/secrets/kubernetes.io/serviceaccount`` holds ``token``, ``ca.crt`` (the
cluster's certificate authority) and ``namespace``, and a kubeconfig for kube-apiserver (through
the fault proxy) that authenticates with the token is written for ``KUBECONFIG``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemotron_sim.kubelet.podenv import Lookup, field_value, resource_value, source_bytes

SERVICE_ACCOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
MOUNTS_ENV = "NEMOTRON_SIM_MOUNTS"
# (expirationSeconds, audiences) → a bearer token for the pod's ServiceAccount
TokenSource = Callable[[int, tuple[str, ...]], Awaitable[str]]
_ACCESS_VOLUME = "kube-api-access"
_TOKEN_SECONDS = 3607  # what the ServiceAccount admission plugin asks for


@dataclass(frozen=True)
class ApiAccess:
    """How pods reach kube-apiserver: a kubeconfig writer (path, namespace, token) and the
    PEM of the certificate authority its HTTPS port uses (empty over plain HTTP)."""

    write_kubeconfig: Callable[[Path, str, str], object]
    ca_pem: bytes = b""


class MountError(Exception):
    """A volume cannot be set up (``FailedMount``); the message is the kubelet's."""


@dataclass
class PodFiles:
    root: Path
    volumes: dict[str, Path] = field(default_factory=dict)
    kubeconfig: Path | None = None

    def mounts(self, container: Mapping[str, Any]) -> dict[str, str]:
        """``mountPath`` → directory (or file, with ``subPath``) for one container."""
        out = volume_mounts(self.volumes, container)
        access = self.volumes.get(_ACCESS_VOLUME)
        if access is not None and SERVICE_ACCOUNT_PATH not in out:
            out[SERVICE_ACCOUNT_PATH] = str(access)
        return out

    def mounts_json(self, container: Mapping[str, Any]) -> str:
        return json.dumps(self.mounts(container), sort_keys=True)


def volume_mounts(volumes: Mapping[str, Path], container: Mapping[str, Any]) -> dict[str, str]:
    """``mountPath`` → the directory of the volume (``subPath`` applied) for each of a
    container's ``volumeMounts`` whose volume is in ``volumes`` (name → directory)."""
    found: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        directory = volumes.get(str(mount.get("name", "")))
        if directory is None:
            continue
        sub = str(mount.get("subPath") or "")
        found[str(mount.get("mountPath", ""))] = str(directory / sub if sub else directory)
    return found


def automounts_token(pod: Mapping[str, Any], account: Mapping[str, Any] | None) -> bool:
    spec = pod.get("spec") or {}
    if "automountServiceAccountToken" in spec:
        return bool(spec["automountServiceAccountToken"])
    return bool((account or {}).get("automountServiceAccountToken", True))


def service_account(pod: Mapping[str, Any]) -> str:
    spec = pod.get("spec") or {}
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


def _write(path: Path, content: str | bytes, mode: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    if mode is not None:
        path.chmod(mode & 0o777)


def _key_files(
    source: Mapping[str, Any], kind: str, namespace: str, lookup: Lookup
) -> dict[str, tuple[bytes, int | None]] | None:
    """Files of a configMap/secret source: relative path → (content, mode); None if absent
    and optional."""
    name = str(source.get("name") or source.get("secretName") or "")
    obj = lookup(kind, namespace, name)
    if obj is None:
        if source.get("optional"):
            return None
        raise MountError(f'{kind.lower()} "{name}" not found')
    data = source_bytes(obj, kind)
    items = source.get("items")
    if not items:
        return {k: (v, None) for k, v in data.items()}
    files = {}
    for item in items:
        key = item.get("key", "")
        if key not in data:
            if source.get("optional"):
                continue
            raise MountError(f"{kind.lower()} references non-existent config key: {key}")
        files[item.get("path", key)] = (data[key], item.get("mode"))
    return files


def _downward_files(pod: Mapping[str, Any], items: list[Any]) -> dict[str, tuple[bytes, Any]]:
    files: dict[str, tuple[bytes, Any]] = {}
    containers = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
    for item in items:
        value: str | None = None
        if item.get("fieldRef"):
            value = field_value(pod, item["fieldRef"].get("fieldPath", ""))
        elif item.get("resourceFieldRef"):
            ref = item["resourceFieldRef"]
            value = resource_value(containers.get(ref.get("containerName"), {}), ref)
        files[item.get("path", "")] = ((value or "").encode(), item.get("mode"))
    return files


class PodFileWriter:
    """Builds :class:`PodFiles` for one pod under ``root``."""

    def __init__(
        self,
        root: Path,
        claims_root: Path,
        lookup: Lookup,
        api: ApiAccess,
        token: TokenSource,
    ) -> None:
        self.root, self.claims_root = root, claims_root
        self._lookup, self._api, self._token = lookup, api, token
        # Token files to renew: (path, expirationSeconds, audiences); the kubeconfig's own.
        self.token_files: list[tuple[Path, int, tuple[str, ...]]] = []
        self._pending: list[tuple[str, int, tuple[str, ...]]] = []
        self._kubeconfig_target: tuple[Path, str] | None = None

    async def prepare(self, pod: Mapping[str, Any], *, automount: bool) -> PodFiles:
        files = PodFiles(self.root)
        self.token_files, self._pending, self._kubeconfig_target = [], [], None
        namespace = (pod.get("metadata") or {}).get("namespace", "default")
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            name = volume.get("name", "")
            try:
                files.volumes[name] = self._volume(pod, namespace, volume)
            except MountError as error:
                raise MountError(
                    f'MountVolume.SetUp failed for volume "{name}" : {error}'
                ) from None
        if automount:
            access = self.root / "volumes" / _ACCESS_VOLUME
            _write(access / "ca.crt", self._api.ca_pem, 0o644)
            _write(access / "namespace", namespace, 0o644)
            files.volumes[_ACCESS_VOLUME] = access
            files.kubeconfig = self.root / "kubeconfig"
            self.token_files.append((access / "token", _TOKEN_SECONDS, ()))
            self._kubeconfig_target = (files.kubeconfig, namespace)
        await self.renew_tokens()
        return files

    async def renew_tokens(self) -> None:
        """Issue every token file (and the kubeconfig's token) afresh."""
        for path, seconds, audiences in self.token_files:
            token = await self._token(seconds, audiences)
            _write(path, token, 0o644)
            if self._kubeconfig_target is not None and path.parent.name == _ACCESS_VOLUME:
                self._kubeconfig(*self._kubeconfig_target, token)

    def _kubeconfig(self, path: Path, namespace: str, token: str) -> None:
        self._api.write_kubeconfig(path, namespace, token)
        path.chmod(0o600)

    def _volume(self, pod: Mapping[str, Any], namespace: str, volume: Mapping[str, Any]) -> Path:
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            directory = self.claims_root / namespace / str(claim)
            directory.mkdir(parents=True, exist_ok=True)
            return directory
        directory = self.root / "volumes" / str(volume.get("name", ""))
        directory.mkdir(parents=True, exist_ok=True)
        files: dict[str, tuple[bytes, Any]] = {}
        default_mode: int | None = None
        for kind, key in (("ConfigMap", "configMap"), ("Secret", "secret")):
            if volume.get(key):
                default_mode = volume[key].get("defaultMode", 0o644)
                files.update(_key_files(volume[key], kind, namespace, self._lookup) or {})
        if volume.get("downwardAPI"):
            default_mode = volume["downwardAPI"].get("defaultMode", 0o644)
            files.update(_downward_files(pod, volume["downwardAPI"].get("items") or []))
        if volume.get("projected"):
            default_mode = volume["projected"].get("defaultMode", 0o644)
            for source in volume["projected"].get("sources") or []:
                files.update(self._projected(pod, namespace, source))
        for relative, (content, mode) in files.items():
            _write(directory / relative, content, mode if mode is not None else default_mode)
        self.token_files.extend((directory / rel, sec, aud) for rel, sec, aud in self._pending)
        self._pending.clear()
        return directory

    def _projected(
        self, pod: Mapping[str, Any], namespace: str, source: Mapping[str, Any]
    ) -> dict[str, tuple[bytes, Any]]:
        if source.get("serviceAccountToken"):
            spec = source["serviceAccountToken"]
            audience = spec.get("audience")
            seconds = int(spec.get("expirationSeconds", _TOKEN_SECONDS))
            self._pending.append(
                (spec.get("path", "token"), seconds, (audience,) if audience else ())
            )
            return {}
        if source.get("configMap"):
            return _key_files(source["configMap"], "ConfigMap", namespace, self._lookup) or {}
        if source.get("secret"):
            return _key_files(source["secret"], "Secret", namespace, self._lookup) or {}
        if source.get("downwardAPI"):
            return _downward_files(pod, source["downwardAPI"].get("items") or [])
        return {}
