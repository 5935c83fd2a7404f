"""The long-trace benchmark's inputs (issue 16): real reasoning text cut to the requested number of
Thought Units, each size a prefix of the next. (Its timings are never tested: docs/benchmarks.md.)"""
import pytest

from thinkprobe.bench import growth_exponent, long_trace_texts
from thinkprobe.graph import units_of
from thinkprobe.records import Section, Trace


def test_long_traces_have_the_requested_units_and_nest(config):
    sizes = (40, 150, 400)
    texts, source = long_trace_texts(sizes, config)
    assert sorted(texts) == list(sizes) and "joined with blank lines" in source
    for small, large in zip(sizes, sizes[1:]):
        assert texts[large].startswith(texts[small])
    for size, text in texts.items():
        units = units_of(Trace("long", "m", "d", (Section("reasoning", "r", text, 0, len(text)),)), config)[0]
        assert abs(len(units) - size) <= 2, (size, len(units))


def test_growth_exponent_is_the_log_log_slope():
    assert growth_exponent([1000, 4000, 16000], [2.0, 8.0, 32.0]) == pytest.approx(1.0)
    assert growth_exponent([1000, 4000], [1.0, 16.0]) == pytest.approx(2.0)
    assert growth_exponent([1000], [1.0]) is None
