"""The contract violation a built-in signal's measurement raises on a platform's data."""

from __future__ import annotations

import pytest

from exporter.errors import ContractViolation
from exporter.signals import BY_NAME
from tests.platform import Platform
from tests.scrapes import make_exporter


async def violation(platform: Platform, signal: str) -> ContractViolation:
    """Measures `signal` alone on the platform's data, which must break its contract."""
    exporter = make_exporter(platform.exporter_url, signals=signal)
    try:
        with pytest.raises(ContractViolation) as raised:
            await BY_NAME[signal].measure(exporter.sources)
    finally:
        await exporter.close()
    return raised.value
