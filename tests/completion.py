"""`exporter.validate.completing` run to its end at once, outside any event loop:
the tests that hold samples to the registry need no loop to hand back to."""

from __future__ import annotations

from collections.abc import Iterable

from exporter.samples import CompletedSamples, Sample
from exporter.validate import completing
from registry import Registry


def complete(signal: str, samples: Iterable[Sample], registry: Registry) -> CompletedSamples:
    """The samples of `signal` held to `registry`, in registry order, zeros filled in
    (the errors `completing` raises, raised here)."""
    steps = completing(signal, samples, registry)
    try:
        while True:
            steps.send(None)  # each hand-back of the loop (asyncio.sleep(0)) is one bare yield
    except StopIteration as done:
        result: CompletedSamples = done.value
        return result
    finally:
        steps.close()
