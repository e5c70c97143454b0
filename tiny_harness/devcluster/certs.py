"""The key material a local control plane needs, generated fresh for each data directory.

A cluster certificate authority signs the API server's serving certificate (for 127.0.0.1 and
localhost) and the admin's client certificate (group ``system:masters``, so the admin passes
RBAC while every other identity is checked for real). A separate key signs ServiceAccount
tokens. Everything is written with owner-only permissions.

A cluster with a node needs two more: the serving certificate must also name the addresses pods
reach the API server at (the node's bridge address and the ``kubernetes`` Service's ClusterIP),
and the kubelet gets a client certificate of its own (``system:node:<name>`` in
``system:nodes``), so the API server's Node authorizer limits it to its own node's objects.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=3650)


@dataclass(frozen=True)
class Pki:
    """Paths of the generated files."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path


def pki_paths(directory: Path) -> Pki:
    return Pki(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
    )


def ensure_pki(directory: Path) -> Pki:
    """Create the key material unless a complete set is already there (persistent clusters)."""
    pki = pki_paths(directory)
    if all(Path(p).exists() for p in vars(pki).values()):
        return pki
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tiny-harness-local-ca")])
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )

    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving_cert = (
        _builder(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
            ca_name,
            serving_key.public_key(),
            now,
        )
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.DNSName("kubernetes.default.svc"),
                    x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin_cert = (
        _builder(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                    x509.NameAttribute(NameOID.COMMON_NAME, "tiny-harness-admin"),
                ]
            ),
            ca_name,
            admin_key.public_key(),
            now,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    sa_key = ec.generate_private_key(ec.SECP256R1())

    _write_key(pki.ca_key, ca_key)
    _write(pki.ca_cert, ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.serving_key, serving_key)
    _write(pki.serving_cert, serving_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.admin_key, admin_key)
    _write(pki.admin_cert, admin_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.sa_key, sa_key)
    _write(
        pki.sa_pub,
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )
    return pki


def ensure_serving_ips(pki: Pki, ips: list[str]) -> None:
    """Re-issue the API server's serving certificate unless it already names every one of
    ``ips`` (a data directory first used without a node keeps its CA and keys)."""
    current = x509.load_pem_x509_certificate(pki.serving_cert.read_bytes())
    names = current.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    have = {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    if set(ips) <= have:
        return
    ca_key, ca_name = _load_ca(pki)
    serving_key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes.default.svc"),
        x509.DNSName("kubernetes.default.svc.cluster.local"),
    ]
    sans += [x509.IPAddress(ipaddress.IPv4Address(ip)) for ip in sorted(have | set(ips))]
    cert = (
        _builder(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
            ca_name,
            serving_key.public_key(),
            dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5),
        )
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(pki.serving_key, serving_key)
    _write(pki.serving_cert, cert.public_bytes(serialization.Encoding.PEM))


def ensure_node_client(pki: Pki, node_name: str) -> tuple[Path, Path]:
    """The kubelet's client certificate and key (``system:node:<node_name>``), made once."""
    cert_path = pki.ca_cert.parent / f"node-{node_name}.crt"
    key_path = pki.ca_cert.parent / f"node-{node_name}.key"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    ca_key, ca_name = _load_ca(pki)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                    x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node_name}"),
                ]
            ),
            ca_name,
            key.public_key(),
            dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5),
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(key_path, key)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def _load_ca(pki: Pki) -> tuple[ec.EllipticCurvePrivateKey, x509.Name]:
    key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise TypeError(f"{pki.ca_key} is not the EC key this module writes")
    return key, x509.load_pem_x509_certificate(pki.ca_cert.read_bytes()).subject


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey, now: dt.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + _VALIDITY)
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    _write(
        path,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
