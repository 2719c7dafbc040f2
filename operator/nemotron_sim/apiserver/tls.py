"""A self-signed serving certificate for the API stand-in's HTTPS port.

kubectl (client-go) sends a bearer token only over HTTPS: with an ``http://`` server it drops
the kubeconfig's credentials and ``--token`` silently. So the stand-in also serves TLS, with a
throwaway certificate made by the ``openssl`` command (the Python standard library cannot make
one) for the loopback address it listens on; the kubeconfigs it writes trust that certificate.
One certificate per host and process, in a temporary directory removed at exit.
"""

from __future__ import annotations

import atexit
import base64
import ipaddress
import shutil
import ssl
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class Certificate:
    cert_file: Path
    key_file: Path

    @property
    def pem(self) -> bytes:
        return self.cert_file.read_bytes()

    @property
    def authority_data(self) -> str:
        """The certificate as a kubeconfig's ``certificate-authority-data``."""
        return base64.b64encode(self.pem).decode()

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


def available() -> bool:
    return shutil.which("openssl") is not None


@cache
def _workdir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="nemotron-sim-tls-"))
    atexit.register(shutil.rmtree, path, True)
    return path


@cache
def certificate(host: str) -> Certificate:
    """A self-signed certificate (its own CA) for ``host``, ``localhost`` and ``127.0.0.1``."""
    names = {"DNS:localhost", "IP:127.0.0.1"}
    try:
        names.add(f"IP:{ipaddress.ip_address(host)}")
    except ValueError:
        names.add(f"DNS:{host}")
    safe = host.replace(":", "_").replace("/", "_")
    cert, key = _workdir() / f"{safe}.crt", _workdir() / f"{safe}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "3650",
            "-subj",
            "/CN=nemotron-sim-apiserver",
            "-addext",
            "subjectAltName=" + ",".join(sorted(names)),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,digitalSignature,keyCertSign",
            "-addext",
            "extendedKeyUsage=serverAuth",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return Certificate(cert, key)
