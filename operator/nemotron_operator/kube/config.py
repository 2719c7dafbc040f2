"""Where the API server is and how to authenticate: a kubeconfig (``--kubeconfig`` or
``KUBECONFIG``) first, then the in-cluster service account, then ``~/.kube/config``.

The official client's loaders do the parsing (exec plugins, certificates, token files); this
module only turns their result into what aiohttp and kopf need.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import Any

IN_CLUSTER_HOST = "KUBERNETES_SERVICE_HOST"


@dataclass
class Connection:
    server: str
    ca_path: str | None
    verify: bool
    certificate_path: str | None
    private_key_path: str | None
    _configuration: Any  # kubernetes.client.Configuration: refreshes rotating tokens

    def authorization(self) -> str | None:
        """The Authorization header value, re-read each time (in-cluster tokens rotate)."""
        value = self._configuration.get_api_key_with_prefix("authorization")
        return str(value) if value else None

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


def load_connection(kubeconfig: str | None = None) -> Connection:
    from kubernetes import client, config  # noqa: PLC0415  (heavy; only when running)

    configuration = client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if not path and os.environ.get(IN_CLUSTER_HOST):
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path or None, client_configuration=configuration
        )
    return Connection(
        server=str(configuration.host).rstrip("/"),
        ca_path=configuration.ssl_ca_cert,
        verify=bool(configuration.verify_ssl),
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
        _configuration=configuration,
    )
