"""TLS to Redis: the files --redis.tls-ca-file, --redis.tls-cert-file and --redis.tls-key-file name, read and parsed at
start exactly as the client will use them, so a missing or bad file stops the
process (exit 2) instead of failing every refresh."""

from __future__ import annotations

import ssl
from dataclasses import dataclass


@dataclass(frozen=True)
class RedisTls:
    """The TLS settings of every Redis connection (server, sentinels, cluster nodes)."""

    ca_file: str | None = None  # None: the system's trusted CAs
    cert_file: str | None = None  # a client certificate, for servers started with tls-auth-clients
    key_file: str | None = None  # its private key, when not in cert_file
    insecure_skip_verify: bool = False  # no certificate or hostname check: an explicit, logged choice

    @property
    def given(self) -> bool:
        return any((self.ca_file, self.cert_file, self.key_file, self.insecure_skip_verify))

    def client_options(self) -> dict[str, object]:
        """redis-py's keyword arguments for a TLS connection."""
        return {
            "ssl_ca_certs": self.ca_file,
            "ssl_certfile": self.cert_file,
            "ssl_keyfile": self.key_file,
            "ssl_cert_reqs": "none" if self.insecure_skip_verify else "required",
            "ssl_check_hostname": not self.insecure_skip_verify,
        }


NO_TLS = RedisTls()


class TlsFileError(Exception):
    """A TLS file cannot be used; `which` is ca_file, cert_file or key_file."""

    def __init__(self, which: str, path: str, problem: str) -> None:
        self.which = which
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def _readable(which: str, path: str) -> None:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise TlsFileError(which, path, f"cannot read it: {exc.strerror}") from None


def _refuse_passphrase() -> bytes:
    # Asked only for an encrypted key: never prompt on a terminal.
    raise TlsFileError("key_file", "", "the private key is encrypted; give an unencrypted key file")


def load_tls(tls: RedisTls) -> ssl.SSLContext:
    """The context the client will build, built now: every file read and parsed."""
    context = ssl.create_default_context()
    if tls.ca_file:
        _readable("ca_file", tls.ca_file)
        try:
            context.load_verify_locations(cafile=tls.ca_file)
        except (ssl.SSLError, ValueError) as exc:
            raise TlsFileError("ca_file", tls.ca_file, f"not a PEM CA certificate ({_ssl_words(exc)})") from None
    if tls.key_file and not tls.cert_file:
        raise TlsFileError("key_file", tls.key_file, "a key file needs its certificate (--redis.tls-cert-file)")
    if tls.cert_file:
        _readable("cert_file", tls.cert_file)
        if tls.key_file:
            _readable("key_file", tls.key_file)
        try:
            context.load_cert_chain(tls.cert_file, tls.key_file, password=_refuse_passphrase)
        except TlsFileError as exc:
            raise TlsFileError("key_file", tls.key_file or tls.cert_file, exc.problem) from None
        except (ssl.SSLError, ValueError) as exc:
            with_key = f" with the key {tls.key_file}" if tls.key_file else " (holding its key)"
            raise TlsFileError(
                "cert_file", tls.cert_file, f"not a PEM certificate{with_key} ({_ssl_words(exc)})"
            ) from None
    return context


def _ssl_words(exc: Exception) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason) if reason else str(exc)
