"""The status of a statistical test in stats.json: run ("ok"), or why not. Shared by thinkprobe.stats,
which runs the tests, and thinkprobe.effect_intervals, which resamples the ones that ran."""
from __future__ import annotations

__all__ = ["NOT_TESTABLE", "CONSTANT", "TESTED"]

NOT_TESTABLE, CONSTANT, TESTED = "not testable", "constant", "ok"
