"""Control characters never reach a human-facing line raw."""

from __future__ import annotations

import logging

from hypothesis import given
from hypothesis import strategies as st

from exporter.logs import TextFormatter
from exporter.printable import has_control, printable


def test_newlines_and_escapes_are_written_out() -> None:
    assert printable("a\nok   dlq: measurable (FAKE)") == "a\\nok   dlq: measurable (FAKE)"
    assert printable("\x1b[2Jwiped\r") == "\\x1b[2Jwiped\\r"
    assert printable("tab\there\x7f\x85") == "tab\\there\\x7f\\x85"
    assert printable("ünïcødé 日本語 🦆") == "ünïcødé 日本語 🦆"
    assert printable("a\u2028b\u2029c") == "a\\u2028b\\u2029c"


@given(st.text())
def test_the_result_is_one_line_without_control_characters(text: str) -> None:
    shown = printable(text)
    assert not has_control(shown)
    assert shown.splitlines() == ([shown] if shown else [])


def test_a_text_log_record_stays_one_line() -> None:
    slug = "evil\n2026-12-03 00:00:00 INFO exporter signal dlq measured\x1b[31m"
    record = logging.LogRecord("exporter", logging.WARNING, __file__, 1, "tenant %r failed: %s", (slug, "x"), None)
    line = TextFormatter().format(record)
    assert "\n" not in line
    assert "\x1b" not in line
    assert "\\n2026-12-03 00:00:00 INFO" in line
