"""How high the stream's phrase_loop signal goes on real traces (docs/stream.md sets its threshold).

For each trace of the inputs, the most copies in a row of any p words (p <= stream.signals.
phrase_max_period, the copies covering at least phrase_min_words words) anywhere in the text a
stream is fed (its sections, as `thinkprobe.profile` reads them): the highest value phrase_loop
reaches while the text is fed, without the window that bounds it live. Prints, per input, how many
traces reach each value and the traces that reach the threshold.

    python scripts/loop_signal_calibration.py                       # ReasoningFlow v1, 1,260 traces
    python scripts/loop_signal_calibration.py ../shared/data/mip_overthinking/response
"""
from __future__ import annotations

import argparse
import os
import re
from collections import Counter
from pathlib import Path

import numpy as np

from thinkprobe.config import Config
from thinkprobe.io import iter_traces

WORDS = re.compile(r"\w+")  # the words phrase_loop reads (thinkprobe.live.phrase_copies)
DATA = Path(os.environ.get("THINKPROBE_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def most_copies(text: str, max_period: int, min_words: int) -> int:
    """The most copies in a row of any p <= max_period words anywhere in `text`, where they cover at
    least min_words words and the period holds a word that is not a number (1 where none do):
    phrase_loop's highest value over every prefix (the longest runs of each period are read)."""
    words = WORDS.findall(text.lower())
    codes = np.fromiter(map(hash, words), dtype=np.int64, count=len(words))
    best = 1
    for p in range(1, min(max_period, len(codes) // 2) + 1):
        same = np.concatenate(([0], (codes[p:] == codes[:-p]).astype(np.int8), [0]))
        edges = np.diff(same)
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        for k in np.argsort(starts - ends)[:8]:  # the longest runs; a period of numbers only is no loop
            copies = 1 + int(ends[k] - starts[k]) // p
            if p * copies >= min_words and copies > best and any(not w.isdigit() for w in words[starts[k]:starts[k] + p]):
                best = copies
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="*", default=[str(DATA / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz")])
    args = ap.parse_args()
    th = Config.load()["stream"]["signals"]
    for path in args.inputs:
        values: list[tuple[int, str]] = []
        for t in iter_traces(path):
            if not hasattr(t, "sections"):
                continue  # a record that could not be read
            text = "\n".join(s.text[s.start:s.end] for s in t.sections)
            values.append((most_copies(text, th["phrase_max_period"], th["phrase_min_words"]), t.trace_id))
        counts = Counter(min(v, th["phrase_loop_min"]) for v, _ in values)
        print(f"{path}: {len(values)} traces; highest phrase_loop per trace: "
              + ", ".join(f"{'>=' if v == th['phrase_loop_min'] else ''}{v}: {n}" for v, n in sorted(counts.items())))
        below = [v for v, _ in values if v < th["phrase_loop_min"]]
        print(f"  highest below the threshold ({th['phrase_loop_min']}): {max(below, default=None)}")
        for v, trace_id in sorted(values, reverse=True):
            if v < th["phrase_loop_min"]:
                break
            print(f"  fires: {trace_id}: {v} copies")


if __name__ == "__main__":
    main()
