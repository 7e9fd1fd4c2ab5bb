"""Hypothesis profiles: `fast` (the default, for a developer's run and the fast
tier) and `ci` (deeper, set by .ci/run through HYPOTHESIS_PROFILE=ci). A property
states its example counts in both with `examples(fast, ci)`, so that the counts
each profile runs are written next to the property they belong to."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "fast")
if PROFILE not in ("fast", "ci"):
    raise RuntimeError(f"HYPOTHESIS_PROFILE={PROFILE!r}: the profiles are fast and ci")

# Neither profile times an example (Hypothesis's default deadline is 200 ms, which a
# loaded machine overran: a test failing by timing alone) or its data's generation.
UNTIMED = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fast", UNTIMED, print_blob=True)
# CI: the same properties, more examples each.
settings.register_profile("ci", UNTIMED, print_blob=True)
settings.load_profile(PROFILE)


def examples(fast: int, ci: int) -> int:
    """The number of examples a property runs in the current profile."""
    return ci if PROFILE == "ci" else fast
