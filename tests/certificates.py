"""Throwaway TLS material for tests, made with the openssl command line: a CA, a server and a
client certificate it signed (both valid for localhost and 127.0.0.1), a second CA that signed
nothing we trust, and a bearer token."""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from drkernel.sections import SecuritySettings

_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class Certificates:
    """The files, and security settings built from them."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    token: Path

    def security(
        self, *, token: bool = True, mutual: bool = False, client_cert: bool | None = None
    ) -> SecuritySettings:
        """One section for servers and clients alike: TLS, the token when ``token``, client
        certificates required when ``mutual`` and presented when ``client_cert`` (default:
        ``mutual``)."""
        presented = mutual if client_cert is None else client_cert
        return SecuritySettings(
            tls_cert_file=self.server_cert,
            tls_key_file=self.server_key,
            tls_ca_file=self.ca,
            require_client_cert=mutual,
            client_cert_file=self.client_cert if presented else None,
            client_key_file=self.client_key if presented else None,
            token_file=self.token if token else None,
        )


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)


def _authority(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    _openssl("req", "-x509", *_KEY, "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}")
    return cert, key


def _signed(directory: Path, name: str, usage: str, ca: tuple[Path, Path]) -> tuple[Path, Path]:
    cert, key, request, extensions = (directory / f"{name}{suffix}" for suffix in (".pem", ".key", ".csr", ".ext"))
    _openssl("req", *_KEY, "-keyout", key, "-out", request, "-subj", f"/CN={name}")
    extensions.write_text(
        f"subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage={usage}\n"
    )
    _openssl(
        "x509", "-req", "-in", request, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
        "-out", cert, "-days", "2", "-extfile", extensions,
    )  # fmt: skip
    return cert, key


def make_certificates(directory: Path) -> Certificates:
    ca = _authority(directory, "ca")
    server = _signed(directory, "server", "serverAuth", ca)
    client = _signed(directory, "client", "clientAuth", ca)
    other_ca, _ = _authority(directory, "other-ca")
    token = directory / "token"
    token.write_text(secrets.token_urlsafe(32) + "\n")
    return Certificates(ca[0], *server, *client, other_ca, token)
