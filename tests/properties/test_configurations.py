"""Generated declarations files and web configurations: loading ends in settings
or in refusals of one line each (what check-config prints, and serve before it
starts), never in another exception; and what loads, serve can use: the
registry builds, every declared metric renders on a page the reference parser
reads, and the app answers a request with headers HTTP allows.

The documents are the example files with one value replaced by a generated one
(any YAML value, deep, wide, huge integers, control characters, non-scalar keys,
zone names that are directories, TLS versions, an encrypted key), a key spelled
a second time in other letter cases, plus generated YAML text spliced into them.
Host names (the listen address, the database's and Redis' hosts) are generated
too: each loads into a name the resolver can encode, or is refused in one line."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import signal
import socket
import ssl
import string
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import bcrypt
import h11
import httpx
import pytest
import trustme
import yaml
from cryptography.hazmat.primitives import serialization
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from exporter.declarations import NO_DECLARATIONS
from exporter.errors import ConfigError, InvalidSettings
from exporter.exposition.assemble import assemble
from exporter.exposition.text import render
from exporter.http.app import create_app
from exporter.http.webconfig import TlsConfig
from exporter.loading import load
from exporter.outcomes import Outcome
from exporter.service import build_exporter, declared_catalog
from exporter.settings import Settings
from exporter.signals.backlog import Counts
from exporter.tools.contract import contract_document
from tests.completion import complete
from tests.hypotheses import examples

ROOT = Path(__file__).resolve().parents[2]
# The printed contract (its table signals', audit runs' and stream pairs' parts replaceable)
# with the example's declarations.
DECLARATIONS = {
    **contract_document(NO_DECLARATIONS),
    **yaml.safe_load((ROOT / "deploy" / "backlogs.example.yml").read_text(encoding="utf-8")),
}
HASH = bcrypt.hashpw(b"scrape-pass", bcrypt.gensalt(rounds=4)).decode()
WEB = {
    "basic_auth_users": {"prometheus": HASH, "grafana": HASH},
    "http_server_config": {
        "headers": {"X-Frame-Options": "deny", "Strict-Transport-Security": "max-age=3600"},
        "http2": True,
    },
    "rate_limit": {"interval": "1m30s", "burst": 100},
}
# The same with TLS: the files are written beside the document (paths relative to it).
WEB_TLS = {
    **WEB,
    "tls_server_config": {"cert_file": "server.crt", "key_file": "server.key", "min_version": "TLS12"},
}
# Unreachable sources: nothing is resolved, every connection is refused at once.
SOURCES = {"database_url": "postgresql://u:p@127.0.0.1:1/db", "redis_url": "redis://127.0.0.1:1/0"}
WATCHDOG_SECONDS = 60  # a hang, not a slow machine: far above what one load takes at a load of 15

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),
    st.text(max_size=30),
    st.text(alphabet=st.characters(max_codepoint=0x9F), max_size=10),
    st.sampled_from(["1h", "24h", "0m", "31d", "32d", "pending", "tenant", "global", "a.b", "UTC", "Mars/Olympus"]),
    # A directory of the zone database, a name too long for a path, a zone.
    st.sampled_from(["America", "Europe", "A" * 300, "../zone.tab", "America/Bogota", "Etc/GMT+5"]),
    st.sampled_from(["TLS10", "TLS11", "TLS12", "TLS13", "encrypted.key", "server.key", "ca.crt", "Deny", "nosniff"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=12,
)
# YAML that no value of the model above dumps to.
SPLICES = st.one_of(
    st.sampled_from(
        [
            "? [1, 2]\n: x",
            "? {a: 1}\n: x",
            "[" * 3000 + "]" * 3000,
            "{a: " * 1000 + "1" + "}" * 1000,
            "9" * 4400,
            "0x" + "f" * 40,
            "2024-02-30",
            "!!int abc",
            "!!python/object:os.system x",
            "&a [1]",
            "*a",
            "!!binary x",
            "!!set {a}",
            '"\\ud800"',
            "'\x1b[2J'",
            '"a\\r\\nSet-Cookie: x=1"',
            "!Secr3tPassw0rd",
            "!!str !x",
            "[" + "a, " * 12_000 + "a]",
            "{" + ", ".join(f"k{i}: 1" for i in range(6_000)) + "}",
        ]
    ),
    st.text(max_size=40),
)


def paths(document: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value of the document."""
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from paths(value, (*prefix, index))


def replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    changed = copy.deepcopy(document)
    here = changed
    for step in path[:-1]:
        here = here[step]
    here[path[-1]] = value
    return changed


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


def _alike(value: Any) -> st.SearchStrategy[Any]:
    """Values of the same kind as `value`: a name for a name, a number for a number,
    one more item for a list; what a careless edit makes, often still accepted."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(min_value=-(2**70), max_value=2**70)
    if isinstance(value, str):
        return st.one_of(st.text(max_size=20), st.text(alphabet=string.ascii_lowercase + "_.-", min_size=1))
    if isinstance(value, list):
        return st.lists(st.text(max_size=12), min_size=1, max_size=3).map(lambda more: [*value, *more])
    return VALUES


def _respelled(document: Any, path: tuple[Any, ...], spell: str) -> Any:
    """The document with each key of the mapping at `path` given a second time, in
    other letter cases (`x-frame-options` beside `X-Frame-Options`)."""
    mapping = _at(document, path)
    twice = {**mapping, **{getattr(str(key), spell)(): value for key, value in mapping.items()}}
    return replaced(document, path, twice)


def _dumped(document: Any, **options: Any) -> str:
    """The document as YAML text, by LibYAML's emitter (several times faster than
    PyYAML's own: most of an example's time went there)."""
    text: str = yaml.dump(document, Dumper=yaml.CSafeDumper, **options)
    return text


@st.composite
def documents(draw: st.DrawFn, base: dict[str, Any]) -> str:
    """The base document with one value replaced, as YAML text: by one of its kind
    (often accepted), by any value, by YAML text spliced in where it was, or with
    the keys of a mapping spelled a second time."""
    path = draw(st.sampled_from(list(paths(base))))
    how = draw(st.sampled_from(["alike", "any", "splice", "respell"]))
    if how == "respell" and isinstance(_at(base, path), dict):
        return _dumped(_respelled(base, path, draw(st.sampled_from(["lower", "upper", "swapcase"]))))
    if how == "alike":
        return _dumped(replaced(base, path, draw(_alike(_at(base, path)))), allow_unicode=True)
    if how == "any":
        return _dumped(replaced(base, path, draw(VALUES)), allow_unicode=True)
    marker = "SPLICED-HERE"
    text = _dumped(replaced(base, path, marker), allow_unicode=True, width=1 << 20)
    return text.replace(marker, draw(SPLICES), 1)


@contextmanager
def watchdog() -> Iterator[None]:
    """A load that hangs (a device read forever) fails the example instead of the run."""

    def expired(signum: int, frame: object) -> None:
        raise AssertionError(f"loading took more than {WATCHDOG_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(WATCHDOG_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def loaded(values: dict[str, str]) -> Settings | None:
    """The settings, or None after refusals of one line each; any other exception fails."""
    try:
        with watchdog():
            return load(values, {})
    except ConfigError as exc:
        errors = exc.errors if isinstance(exc, InvalidSettings) else (exc,)
        for error in errors:
            assert "\n" not in str(error), str(error)
            assert "\r" not in str(error), str(error)
        return None


def served_page(settings: Settings) -> str:
    """The page serve would render once every signal is measured, every declared
    backlog with its zeros and thresholds (what serve renders on each refresh)."""
    catalog = declared_catalog(settings.declarations)
    outcomes: dict[str, Outcome | None] = {
        backlog.name: Outcome(
            backlog.name, complete(backlog.name, Counts(backlog).samples(), catalog.registry), 0.001, 1.0
        )
        for backlog in settings.tables + settings.backlogs
    }
    page = render(assemble(list(outcomes), outcomes, outcomes, catalog.registry)).decode("utf-8")
    list(text_string_to_metric_families(page))
    return page


def checked_response(response: httpx.Response) -> None:
    """A response HTTP allows: h11 accepts its head, and no header comes twice."""
    assert response.status_code < 500, response.text
    h11.Response(status_code=response.status_code, headers=list(response.headers.raw))
    names = [name.lower() for name, _value in response.headers.raw]
    assert len(names) == len(set(names)), names


async def first_requests(settings: Settings) -> None:
    exporter = build_exporter(settings)
    app = create_app(exporter, settings.web)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://exporter") as http:
            for auth in (None, ("prometheus", "scrape-pass"), ("prometheus", "wrong")):
                checked_response(await http.get("/metrics", auth=auth))
    finally:
        await exporter.close()


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the documents are written, beside the TLS files WEB_TLS names (a CA, the
    server's certificate and key, and the key encrypted with a pass phrase)."""
    folder = tmp_path_factory.mktemp("configurations")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1")
    server.private_key_pem.write_to_path(str(folder / "server.key"))
    server.cert_chain_pems[0].write_to_path(str(folder / "server.crt"))
    ca.cert_pem.write_to_path(str(folder / "ca.crt"))
    key = serialization.load_pem_private_key(server.private_key_pem.bytes(), password=None)
    encrypted = serialization.BestAvailableEncryption(b"pass phrase")
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encrypted)
    (folder / "encrypted.key").write_bytes(pem)
    return folder


def handshake(tls: TlsConfig, ca_file: Path) -> str:
    """A TLS handshake of a default client with the server's context, in memory: the TLS version agreed."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    server = tls.context().wrap_bio(to_server, to_client, server_side=True)
    client_context = ssl.create_default_context(cafile=str(ca_file))
    client = client_context.wrap_bio(to_client, to_server, server_hostname="127.0.0.1")
    for _round in range(10):
        for end in (client, server):
            with contextlib.suppress(ssl.SSLWantReadError):
                end.do_handshake()
        if client.version() is not None and server.version() is not None:
            return str(client.version())
    raise AssertionError("the handshake did not end")


def examples_of(fast: int, ci: int) -> settings:
    return settings(
        max_examples=examples(fast, ci),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def loaded_file(path: Path, text: str, values: dict[str, str]) -> Settings | None:
    """`text` written to `path`, loaded with `values` (see loaded); the outcome counted as an event."""
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    settings = loaded(values)
    event("loaded" if settings is not None else "refused")
    return settings


@examples_of(fast=150, ci=2500)
@given(text=documents(DECLARATIONS))
def test_a_declarations_file_loads_into_what_serve_renders_or_is_refused_in_one_line(
    directory: Path, text: str
) -> None:
    path = directory / "backlogs.yml"
    settings = loaded_file(path, text, {**SOURCES, "backlogs_config_file": str(path)})
    if settings is not None:
        page = served_page(settings)
        for backlog in settings.tables + settings.backlogs:
            assert f'signal="{backlog.name}"' in page


@examples_of(fast=150, ci=2500)
@given(text=st.one_of(documents(WEB), documents(WEB_TLS)))
def test_a_web_config_loads_into_an_app_that_answers_or_is_refused_in_one_line(directory: Path, text: str) -> None:
    """What loads answers requests, and shakes hands over TLS when it has TLS."""
    path = directory / "web.yml"
    settings = loaded_file(path, text, {**SOURCES, "signals": "audit_chain", "web_config_file": str(path)})
    if settings is not None:
        asyncio.run(first_requests(settings))
    if settings is not None and settings.web.tls is not None:
        event(f"handshake {handshake(settings.web.tls, directory / 'ca.crt')}")


# Host names: plain ones, and what the resolver's IDNA encoding refuses.
LABELS = st.one_of(
    st.text(alphabet=string.ascii_lowercase + string.digits + "-", min_size=0, max_size=70),
    st.text(min_size=0, max_size=8),
)
HOSTS = st.one_of(
    st.lists(LABELS, min_size=1, max_size=4).map(".".join),
    st.sampled_from(["a..b", ".a", "a" * 64, "\u200b", "\u3002", "x\u00e9.com", "127.0.0.1", "[::1]", "localhost"]),
)


def _resolvable(host: str) -> None:
    """The host encodes for the resolver: getaddrinfo raises gaierror at worst, never
    UnicodeError (AI_NUMERICHOST: nothing is looked up)."""
    with contextlib.suppress(socket.gaierror):
        socket.getaddrinfo(host.strip("[]"), 1, flags=socket.AI_NUMERICHOST)


@examples_of(fast=150, ci=2500)
@given(host=HOSTS, where=st.sampled_from(["listen", "postgres", "postgres ?host", "redis", "sentinel"]))
def test_a_host_name_loads_into_one_the_resolver_encodes_or_is_refused_in_one_line(host: str, where: str) -> None:
    quoted = urllib.parse.quote(host, safe="[]:")
    values = {
        "listen": {**SOURCES, "web_listen_address": f"{host}:9999"},
        "postgres": {"database_url": f"postgresql://u@{quoted}:5432/db"},
        "postgres ?host": {"database_url": f"postgresql://u@/db?host={quoted}"},
        "redis": {"redis_url": f"redis://{quoted}:6379/0"},
        "sentinel": {"redis_url": f"redis+sentinel://127.0.0.1,{quoted}/main"},
    }[where]
    settings = loaded(values)
    event("loaded" if settings is not None else "refused")
    if settings is not None:
        _resolvable(host if where != "listen" else settings.web_listen_address.host)


def test_the_bases_load_as_they_are(directory: Path) -> None:
    """The documents the properties vary are valid themselves: a refusal comes from a change."""
    declarations, web = directory / "declarations.yml", directory / "web-base.yml"
    declarations.write_text(yaml.safe_dump(DECLARATIONS), encoding="utf-8")
    web.write_text(json.dumps(WEB), encoding="utf-8")
    assert loaded({**SOURCES, "backlogs_config_file": str(declarations)}) is not None
    assert loaded({**SOURCES, "web_config_file": str(web)}) is not None
    web.write_text(json.dumps(WEB_TLS), encoding="utf-8")
    tls = loaded({**SOURCES, "web_config_file": str(web)})
    assert tls is not None
    assert tls.web.tls is not None
    assert handshake(tls.web.tls, directory / "ca.crt") == "TLSv1.3"
