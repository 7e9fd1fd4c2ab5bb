"""Logging as text or as JSON lines with stable keys (signal, reason, duration_ms)."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Sequence

from exporter.printable import printable

STARTUP_LOGGER = "orpycamcp.config"
STRUCTURED_KEYS = ("signal", "reason", "duration_ms", "tenants", "url")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in STRUCTURED_KEYS:
            if key in record.__dict__:
                entry[key] = record.__dict__[key]
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """One line per record: control characters in the message (a tenant slug or a
    server's error text can hold a newline or a terminal escape) are escaped, so
    no message can forge a line; a traceback keeps its own lines."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)


def configure(log_format: str, level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def startup_failure(messages: Sequence[str], log_format: str, prog: str) -> None:
    """Why the process does not start, one line per message on stderr: JSON lines
    like every other log line when the log format is json, else `prog: message`."""
    formatter = JsonFormatter()
    for message in messages:
        if log_format == "json":
            record = logging.LogRecord(STARTUP_LOGGER, logging.ERROR, __file__, 0, message, None, None)
            print(formatter.format(record), file=sys.stderr)
        else:
            print(f"{prog}: {printable(message)}", file=sys.stderr)
