"""Where the API server is and how to authenticate: a kubeconfig (``--kubeconfig`` or
``KUBECONFIG``) first, then the in-cluster service account, then ``~/.kube/config``.

The official client's loaders do the parsing (exec plugins, certificates, token files); this
module only turns their result into what aiohttp and kopf need, and follows a kubeconfig's
``tokenFile`` when it is rewritten (the client reads it once: see :class:`TokenFile`).
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"

logger = logging.getLogger(__name__)


@dataclass
class Connection:
    server: str
    ca_path: str | None
    verify: bool
    certificate_path: str | None
    private_key_path: str | None
    _configuration: Any  # kubernetes.client.Configuration: refreshes rotating tokens

    def authorization(self) -> str | None:
        """The Authorization header value, re-read each time (in-cluster tokens rotate, and
        so may a kubeconfig's ``tokenFile``).

        kubernetes 37's loaders store a token under ``BearerToken`` (older clients used
        ``authorization``); missing it sends no credentials at all, which a real API server
        answers as ``system:anonymous``."""
        for key in ("BearerToken", "authorization"):
            value = self._configuration.get_api_key_with_prefix(key)
            if value:
                return str(value)
        return None

    def ssl_context(self) -> ssl.SSLContext | bool:
        if not self.server.startswith("https"):
            return False
        context = ssl.create_default_context(cafile=self.ca_path)
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.certificate_path:
            context.load_cert_chain(self.certificate_path, self.private_key_path)
        return context

    @property
    def token(self) -> str | None:
        header = self.authorization()
        if header and header.lower().startswith("bearer "):
            return header[7:]
        return None


class TokenFile:
    """A kubeconfig user's ``tokenFile``, read again whenever the file changes.

    kubernetes 37 reads a kubeconfig's ``tokenFile`` once, at load (``kube_config.py``,
    ``_load_user_token``), so a token rotated by whoever writes the file (a projected
    ServiceAccount token, a credential helper) would be ignored until the operator restarts.
    Installed as the configuration's ``refresh_api_key_hook``, which
    ``Configuration.get_api_key_with_prefix`` calls each time a header is built: one ``stat``
    per request; the file is read when its inode, size or modification time changed (the
    kubelet replaces projected files by renaming a directory, which changes the inode), and at
    least every ``max_age`` seconds anyway (a same-size rewrite within one tick of the file
    system's clock keeps the modification time; the in-cluster loader re-reads every minute).
    Whitespace around the token is dropped, as client-go does (``transport/token_source.go``).
    While the file is missing or empty (caught mid-write) the last token is kept and the
    next request looks again."""

    def __init__(
        self, path: str, *, max_age: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.path = path
        self.max_age = max_age
        self._clock = clock
        self._seen: tuple[int, int, int] | None = None
        self._read_at = 0.0
        self._warned = False

    def __call__(self, configuration: Any) -> None:
        now = self._clock()
        try:
            info = os.stat(self.path)
            seen = (info.st_ino, info.st_size, info.st_mtime_ns)
            if seen == self._seen and now - self._read_at < self.max_age:
                return
            with open(self.path, encoding="utf-8") as file:
                token = file.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            self._warn(f"cannot read the kubeconfig's tokenFile {self.path}: {exc}")
            return
        if not token:
            self._warn(f"the kubeconfig's tokenFile {self.path} is empty")
            return
        self._seen, self._read_at, self._warned = seen, now, False
        configuration.api_key["BearerToken"] = f"Bearer {token}"

    def _warn(self, message: str) -> None:
        if not self._warned:  # once per failure, not once per request
            logger.warning("%s; keeping the last token", message)
            self._warned = True


def load_connection(kubeconfig: str | None = None) -> Connection:
    from kubernetes import client, config  # noqa: PLC0415  (heavy; only when running)

    configuration = client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if not path and os.environ.get(IN_CLUSTER_HOST):
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        _load_kubeconfig(path or config.KUBE_CONFIG_DEFAULT_LOCATION, configuration)
    return Connection(
        server=str(configuration.host).rstrip("/"),
        ca_path=configuration.ssl_ca_cert,
        verify=bool(configuration.verify_ssl),
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
        _configuration=configuration,
    )


def _load_kubeconfig(paths: str, configuration: Any) -> None:
    """What ``config.load_kube_config`` does (merging a ``:``-separated list, writing back an
    auth-provider's refreshed token), keeping the merged file to find the user's tokenFile."""
    from kubernetes.config import ConfigException, kube_config  # noqa: PLC0415

    merged = kube_config.KubeConfigMerger(paths)  # type: ignore[no-untyped-call]
    if merged.config is None:
        raise ConfigException(f"no kubeconfig found at {paths}")
    loader = kube_config.KubeConfigLoader(  # type: ignore[no-untyped-call]
        config_dict=merged.config, config_base_path=None, config_persister=merged.save_changes
    )
    loader.load_and_set(configuration)  # type: ignore[no-untyped-call]
    token_file = _user_token_file(merged.config, loader.current_context)
    if token_file:
        configuration.refresh_api_key_hook = TokenFile(token_file)


def _user_token_file(merged: Any, context: Any) -> str | None:
    """The current user's ``tokenFile`` when it is what the client authenticates with: its
    order is auth-provider, then ``token`` (preferred to ``tokenFile``), then exec. A relative
    path is relative to the kubeconfig file that defines the user, as the client reads it."""
    name = (context.get("context") or {}).get("user")
    if not name or not merged.safe_get("users"):
        return None
    entry = merged["users"].get_with_name(name, safe=True)
    user = entry.safe_get("user") if entry else None
    if not user or "auth-provider" in user or "token" in user or not user.get("tokenFile"):
        return None
    base = os.path.dirname(os.path.abspath(entry.path)) if entry.path else ""
    return os.path.normpath(os.path.join(base, str(user["tokenFile"])))
