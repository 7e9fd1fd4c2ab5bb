"""The properties of tests/properties/ end to end, a few examples each: the real
command line, its exit code and everything it prints.

- A generated declarations file or web configuration: `check-config` and `serve`
  agree (both start, or both exit 2 with the same one-line refusals), never a
  traceback.
- A generated password in a URL: `check-config` and `diagnose` print no 4
  characters of it (its twin, the same URL with other letters and digits, tells
  the exporter's own words from a leak).
- A generated listen host (empty and 64-character labels, IDNA): `check-config`
  and `serve` agree, and `healthcheck` refuses it in one line (exit 1, as for
  any invalid setting), never a traceback."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypotheses import examples
from tests.properties.test_configurations import DECLARATIONS, HOSTS, WEB, documents
from tests.properties.test_secrets import PASSWORDS, leaks, twin

# Nothing listens there: serve starts, every measurement is refused at once.
SOURCES = ["--database.url", "postgresql://u:p@127.0.0.1:1/db", "--redis.url", "redis://127.0.0.1:1/0"]
STARTED = "serving signals"


def few(fast: int, ci: int) -> settings:
    """Each example starts processes: a few of them."""
    return settings(
        max_examples=examples(fast, ci),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def check_config(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "exporter", "check-config", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def serve_start(*args: str, listen: str = "127.0.0.1:0") -> tuple[int | None, str]:
    """serve's exit code (None: it started, and was stopped) and what it printed up to then."""
    command = [sys.executable, "-m", "exporter", "serve", *args, "--web.listen-address", listen]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        printed = []
        try:
            for line in process.stdout:
                printed.append(line)
                if STARTED in line:
                    return None, "".join(printed)
            return process.wait(timeout=30), "".join(printed)
        finally:
            if process.poll() is None:
                process.terminate()
                process.communicate(timeout=30)


def assert_agree(option: str, path: Path, text: str) -> None:
    """`check-config` and `serve` given `text` as the file of `option` refuse it alike, or both accept it."""
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    with ThreadPoolExecutor(max_workers=2) as commands:  # each mostly waits for its start
        checking = commands.submit(check_config, *SOURCES, option, str(path))
        serving = commands.submit(serve_start, *SOURCES, option, str(path))
    checked, (code, served) = checking.result(), serving.result()
    for output in (checked.stdout + checked.stderr, served):
        assert "Traceback" not in output, output
    if checked.returncode == 0:
        assert code is None, served
    else:
        assert checked.returncode == 2, checked.stderr
        assert code == 2, served
        assert served == checked.stderr


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli")


@few(fast=6, ci=12)
@given(text=documents(DECLARATIONS))
def test_check_config_and_serve_agree_on_a_declarations_file(directory: Path, text: str) -> None:
    assert_agree("--backlogs.config-file", directory / "backlogs.yml", text)


@few(fast=6, ci=12)
@given(text=documents(WEB))
def test_check_config_and_serve_agree_on_a_web_config(directory: Path, text: str) -> None:
    assert_agree("--web.config.file", directory / "web.yml", text)


@few(fast=4, ci=12)
@given(host=HOSTS.filter(lambda host: "\x00" not in host))
def test_check_config_serve_and_healthcheck_refuse_a_listen_host_alike(host: str) -> None:
    with ThreadPoolExecutor(max_workers=3) as commands:  # each mostly waits for its start
        checking = commands.submit(check_config, *SOURCES, "--web.listen-address", f"{host}:0")
        serving = commands.submit(serve_start, *SOURCES, listen=f"{host}:0")
        healthchecking = commands.submit(
            subprocess.run,
            [sys.executable, "-m", "exporter", "healthcheck", "--web.listen-address", f"{host}:0"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    checked, (code, served), health = checking.result(), serving.result(), healthchecking.result()
    for output in (checked.stdout + checked.stderr, served, health.stdout + health.stderr):
        assert "Traceback" not in output, output
    if checked.returncode == 0:
        assert code is None, served
    else:
        assert (checked.returncode, code, health.returncode) == (2, 2, 1), served
        assert served == checked.stderr
        assert len(health.stderr.splitlines()) == 1, health.stderr


def printed(url: str) -> str:
    with ThreadPoolExecutor(max_workers=2) as commands:  # each mostly waits (its start, a 2 s deadline)
        checking = commands.submit(check_config, "--database.url", url)
        diagnosing = commands.submit(
            subprocess.run,
            [sys.executable, "-m", "exporter", "diagnose", "--database.url", url, "--deadline", "2"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    checked, diagnosed = checking.result(), diagnosing.result()
    assert "Traceback" not in diagnosed.stdout + diagnosed.stderr
    return checked.stdout + checked.stderr + diagnosed.stdout + diagnosed.stderr


@few(fast=6, ci=12)
@given(password=PASSWORDS.filter(lambda password: "\x00" not in password), form=st.sampled_from(["user", "query"]))
def test_check_config_and_diagnose_print_no_piece_of_a_password(password: str, form: str) -> None:
    def url(secret: str) -> str:
        if form == "user":
            return f"postgresql://u:{secret}@127.0.0.1:1/db"
        return f"postgresql://u@127.0.0.1:1/db?sslmode=disable&password={secret}"

    with ThreadPoolExecutor(max_workers=2) as both:
        secret, other = both.submit(printed, url(password)), both.submit(printed, url(twin(password)))
    output = secret.result()
    assert not leaks(password, output, other.result()), output
