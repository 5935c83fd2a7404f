"""Segmentation: the rule-based splitter, filler merging, offsets that tile the text, TextTiling."""
import json
import re

import numpy as np
import pytest

from conftest import SAMPLES
from thinkprobe.records import Section
from thinkprobe.segment import fragment_spans, tile, unit_spans


def frags(text):
    return [text[s:e] for s, e in fragment_spans(text, 0, len(text))]


def units(text, config):
    section = Section("reasoning", "response", text, 0, len(text))
    return [text[s:e] for s, e in unit_spans(text, section, config)]


@pytest.mark.parametrize("text, expected", [
    ("The mean is 3.14 and the sd is 0.5. Next step.", ["The mean is 3.14 and the sd is 0.5.", "Next step."]),
    ("We use e.g. a grid, i.e. squares. Dr. Smith agrees.", ["We use e.g. a grid, i.e. squares.", "Dr. Smith agrees."]),
    ("1. First item here\n2. Second item here", ["1. First item here", "2. Second item here"]),
    ("So we get $x = 1. 5$ roughly. Then stop.", ["So we get $x = 1. 5$ roughly.", "Then stop."]),
    ("Before.\n\\[\na = b. \\\\ c = d.\n\\]\nAfter.", ["Before.", "\\[\na = b. \\\\ c = d.\n\\]", "After."]),
    ("Code:\n```python\nx = 1. \nprint(x)\n```\nDone.", ["Code:", "```python\nx = 1. \nprint(x)\n```", "Done."]),
    ("Is it 5? Yes! Great...", ["Is it 5?", "Yes!", "Great..."]),
    ("Run `a.b()` first. Then go.", ["Run `a.b()` first.", "Then go."]),
    ("我们需要计算。然后得到答案！", ["我们需要计算。", "然后得到答案！"]),
    ("no punctuation at all here", ["no punctuation at all here"]),
    ("## Step 2\nCompute it.", ["## Step 2", "Compute it."]),
])
def test_fragments(text, expected):
    assert frags(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("Hmm. Okay. Let me add them. Wait, 2 + 2 = 4.", ["Hmm. Okay. Let me add them.", "Wait, 2 + 2 = 4."]),
    ("The sum is 4. Hmm.", ["The sum is 4. Hmm."]),
    ("Wait.\n\nSo the total is 12.", ["Wait.\n\nSo the total is 12."]),
    ("Okay.", ["Okay."]),
])
def test_filler_merges_into_next_unit(text, expected, config):
    assert units(text, config) == expected


def assert_tiles(text, start, end, spans):
    """Every non-whitespace character of text[start:end] lies in exactly one span, in order."""
    covered = np.zeros(len(text), dtype=int)
    last = start
    for s, e in spans:
        assert start <= s < e <= end and s >= last
        assert not text[s].isspace() and not text[e - 1].isspace()
        covered[s:e] += 1
        last = e
    for i in range(start, end):
        assert covered[i] == (0 if text[i].isspace() else 1) or (text[i].isspace() and covered[i] <= 1), (i, text[i])


def test_units_tile_sample_traces(config):
    for line in SAMPLES.read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["response"]
        close = text.index("</think>")
        start = text.find("<think>") + len("<think>") if "<think>" in text else 0
        section = Section("reasoning", "response", text, start, close)
        assert_tiles(text, start, close, unit_spans(text, section, config))


@pytest.mark.parametrize("text", [
    "", "   \n\n  ", "a", "x\u0000y. z", "...", "$$ unterminated display math. And more.",
    "```\nunterminated fence. x", "Hmm. Wait. Okay.", "A.B.C. D", "\t\tindent. \r\nwindows line. end",
    "word " * 5000,
])
def test_units_tile_odd_text(text, config):
    section = Section("reasoning", "response", text, 0, len(text))
    spans = unit_spans(text, section, config)
    assert_tiles(text, 0, len(text), spans)
    assert bool(spans) == bool(text.strip())


def test_long_line_is_cut(config):
    text = "word " * 10000
    spans = unit_spans(text, Section("reasoning", "r", text, 0, len(text)), config)
    assert len(spans) > 1 and max(e - s for s, e in spans) <= config["segment"]["max_line_chars"]


def test_tiling_finds_topic_shift_and_keeps_forced_starts():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=16), rng.normal(size=16)
    emb = np.array([a + 0.1 * rng.normal(size=16) for _ in range(8)] + [b + 0.1 * rng.normal(size=16) for _ in range(8)])
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    seg = tile(emb.astype(np.float32))
    assert seg.tolist() == [0] * 8 + [1] * 8
    seg = tile(emb.astype(np.float32), forced=[3])
    assert seg[3] == seg[2] + 1 and seg[8] == seg[7] + 1
    assert tile(np.zeros((0, 4), np.float32)).tolist() == []
    assert tile(emb[:2].astype(np.float32)).tolist() == [0, 0]
