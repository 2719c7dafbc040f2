"""The control plane's certificates and keys, made at start (ECDSA P-256, one CA).

What a kubeadm cluster has, reduced to what this one uses: a cluster CA; the API server's
serving certificate (its address, the ``kubernetes`` Service's ClusterIP and DNS names);
client certificates for the admin (``system:masters``), kube-controller-manager,
kube-scheduler, the simulated kubelets (``system:node:NAME`` in ``system:nodes``) and the API
server's own client for kubelets; the kubelets' serving certificate; and the key pair that
signs ServiceAccount tokens. Files are written with mode 0600 (keys) or 0644.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=365)
_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its key, as files."""

    cert: Path
    key: Path

    def pem(self) -> bytes:
        return self.cert.read_bytes()


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes, mode: int) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name([*parts, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class Authority:
    """A certificate authority in ``directory`` that issues the cluster's certificates."""

    def __init__(self, directory: Path, now: datetime.datetime) -> None:
        self.directory = directory
        self._now = now
        directory.mkdir(parents=True, exist_ok=True)
        self._key = _key()
        subject = _name("nemotron-sim-ca")
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _SKEW)
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.ca = KeyPair(
            _write(
                directory / "ca.crt", self._cert.public_bytes(serialization.Encoding.PEM), 0o644
            ),
            _write(directory / "ca.key", _key_pem(self._key), 0o600),
        )

    def issue(
        self,
        name: str,
        common_name: str,
        *,
        organizations: tuple[str, ...] = (),
        client: bool = False,
        server: bool = False,
        ips: tuple[str, ...] = (),
        dns: tuple[str, ...] = (),
    ) -> KeyPair:
        """A certificate signed by this CA, written as ``NAME.crt`` and ``NAME.key``."""
        key = _key()
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        usages += [ExtendedKeyUsageOID.SERVER_AUTH] if server else []
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organizations))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._now - _SKEW)
            .not_valid_after(self._now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        alternatives: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        alternatives += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        if alternatives:
            builder = builder.add_extension(x509.SubjectAlternativeName(alternatives), False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(
            _write(
                self.directory / f"{name}.crt", cert.public_bytes(serialization.Encoding.PEM), 0o644
            ),
            _write(self.directory / f"{name}.key", _key_pem(key), 0o600),
        )

    def signing_key(self, name: str) -> tuple[Path, Path]:
        """A key pair for ServiceAccount tokens: (private key, public key) files."""
        key = _key()
        public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return (
            _write(self.directory / f"{name}.key", _key_pem(key), 0o600),
            _write(self.directory / f"{name}.pub", public, 0o644),
        )
