"""The security section's files as gRPC credentials, for servers (drkernel.serving) and clients
(drkernel.channels). Files are read when a server or channel is built, that is at start; a
missing, unreadable or malformed one is an InvalidArgument naming the setting and the file,
which the command line prints as one line."""

from __future__ import annotations

from pathlib import Path

import grpc

from drkernel.errors import InvalidArgument
from drkernel.sections import SecuritySettings

_PEM_BEGIN = b"-----BEGIN "


def _read(path: Path, key: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise InvalidArgument(f"security.{key}: cannot read {path}: {error.strerror or error}") from None


def _pem(path: Path, key: str) -> bytes:
    data = _read(path, key)
    if _PEM_BEGIN not in data:
        raise InvalidArgument(f"security.{key}: {path} holds no PEM block")
    return data


def bearer_token(security: SecuritySettings) -> str | None:
    """The shared token, or None when no token_file is set. One word of printable ASCII (it
    travels in an HTTP/2 header); surrounding whitespace, such as a final newline, is dropped."""
    if security.token_file is None:
        return None
    token = _read(security.token_file, "token_file").strip()
    if not token or any(not 0x21 <= byte <= 0x7E for byte in token):
        raise InvalidArgument(
            f"security.token_file: {security.token_file} must hold one token of printable ASCII characters, no spaces"
        )
    return token.decode("ascii")


def server_credentials(security: SecuritySettings) -> grpc.ServerCredentials | None:
    """TLS credentials of a server (client certificates required with require_client_cert), or
    None for plaintext."""
    if security.tls_cert_file is None or security.tls_key_file is None:
        if security.token_file is not None:
            raise InvalidArgument(
                "security.token_file needs security.tls_cert_file on a server: the token must not cross plaintext"
            )
        return None
    pair = (_pem(security.tls_key_file, "tls_key_file"), _pem(security.tls_cert_file, "tls_cert_file"))
    roots = None
    if security.require_client_cert and security.tls_ca_file is not None:
        roots = _pem(security.tls_ca_file, "tls_ca_file")
    return grpc.ssl_server_credentials([pair], root_certificates=roots, require_client_auth=roots is not None)


def channel_credentials(security: SecuritySettings) -> grpc.ChannelCredentials | None:
    """TLS credentials of a client (its certificate when configured, the token on every call),
    or None for plaintext."""
    if security.tls_ca_file is None:
        if security.token_file is not None:
            raise InvalidArgument(
                "security.token_file needs security.tls_ca_file on a client: the token must not cross plaintext"
            )
        return None
    key = cert = None
    if security.client_cert_file is not None and security.client_key_file is not None:
        key = _pem(security.client_key_file, "client_key_file")
        cert = _pem(security.client_cert_file, "client_cert_file")
    credentials = grpc.ssl_channel_credentials(_pem(security.tls_ca_file, "tls_ca_file"), key, cert)
    token = bearer_token(security)
    if token is None:
        return credentials
    return grpc.composite_channel_credentials(credentials, grpc.access_token_call_credentials(token))
