"""What a person watching a run sees: the number of records counted up front (cheaply: lines of
JSONL, Parquet metadata: thinkprobe.io.formats), a bar over traces with rate and ETA that moves
within each chunk, and below it the current stage, named for a reader, with the units encoded so
far, redrawn every second so it moves even while one stage is busy.
Also the trace selection behind --limit and --sample."""
from __future__ import annotations

import functools
import itertools
import random
import re
import sys
import threading
from typing import Any, Iterable, Iterator, TypeVar

from .timing import StageTimes

__all__ = ["escape_hidden", "terminal_safe", "select", "selected_total", "Progress", "ProgressTimes", "STAGE_NAMES"]

T = TypeVar("T")


# The bidirectional embeddings, overrides and isolates: U+202E shows "evil\u202egnp.exe" as "evilexe.png".
_BIDI = "\u202a-\u202e\u2066-\u2069"


@functools.lru_cache(maxsize=None)
def _hidden(keep: str) -> re.Pattern:
    """The characters escape_hidden writes as escapes: C0 controls but `keep`, DEL and C1, bidi controls."""
    c0 = "".join(re.escape(chr(c)) for c in range(0x20) if chr(c) not in keep)
    return re.compile(f"[{c0}\x7f-\x9f{_BIDI}]")


def escape_hidden(text: str, keep: str) -> str:
    r"""Text from the data with what would act rather than show written as an escape (\xNN, \uNNNN):
    control characters but those in `keep` (an ESC or OSC sequence, a NUL), DEL and C1, and the
    bidirectional overrides, embeddings and isolates (U+202E shows "evil\u202egnp.exe" as
    "evilexe.png"). The base of `terminal_safe` and of the report's `visible`, which differ only in `keep`.

    >>> escape_hidden("a\x1b[31mb\u202ec\x00\r\n", keep="\n")
    'a\\x1b[31mb\\u202ec\\x00\\x0d\n'
    """
    return _hidden(keep).sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                             else f"\\u{ord(m.group()):04x}", text)


def terminal_safe(text: str) -> str:
    r"""Text to print: control characters from the data (an OSC sequence in a trace id sets the
    terminal's title; a NUL in a model name; a carriage return, which lets the rest of a line overwrite
    its start) and bidi overrides written as escapes; newlines and tabs kept.

    >>> terminal_safe("t\x1b]0;TITLE\x07 ok\r\u202e\n")
    't\\x1b]0;TITLE\\x07 ok\\x0d\\u202e\n'
    """
    return escape_hidden(text, keep="\t\n")


def one_line(text: Any) -> str:
    r"""A table cell from the data on one line: a line break or tab in it (a model named
    "a\nprofiled 999 traces" printed a fake line of the summary) written as an escape.

    >>> one_line("two\nlines\t!")
    'two\\nlines\\t!'
    """
    return str(text).replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def select(items: Iterable[T], limit: int | None = None, sample: int | None = None, seed: int = 0) -> Iterator[T]:
    """The traces a run profiles, in input order: the first `limit`, or `sample` drawn uniformly
    without replacement with a seeded generator (the same traces for the same input and seed).

    Sampling is a reservoir over the traces themselves (one pass, `sample` traces held), not over
    a record count: a record may give several traces (an OpenR1 row, one per generation).

    >>> list(select(range(10), limit=3))
    [0, 1, 2]
    >>> picked = list(select(range(10), sample=4, seed=1))
    >>> len(picked), picked == sorted(picked), picked == list(select(range(10), sample=4, seed=1))
    (4, True, True)
    >>> list(select(range(3), sample=5))
    [0, 1, 2]
    """
    if sample is not None:
        items = _reservoir(items, sample, random.Random(seed))
    if limit is not None:
        items = itertools.islice(items, limit)
    return iter(items)


def _reservoir(items: Iterable[T], size: int, rng: random.Random) -> Iterator[T]:
    """Algorithm R: a uniform sample of `size` items, yielded in input order."""
    kept: list[tuple[int, T]] = []
    for k, item in enumerate(items):
        if k < size:
            kept.append((k, item))
        else:
            j = rng.randrange(k + 1)
            if j < size:
                kept[j] = (k, item)
    yield from (item for _, item in sorted(kept, key=lambda pair: pair[0]))


def selected_total(total: int | None, limit: int | None, sample: int | None) -> int | None:
    if total is None:
        return None
    for cap in (sample, limit):
        if cap is not None:
            total = min(total, cap)
    return total


# What each pipeline stage is called on the progress display.
STAGE_NAMES = {
    "load": "reading records", "split": "splitting into sentences", "encode": "encoding units",
    "tile_type": "tiling and typing units", "link": "linking units", "indicators_serialise": "computing indicators",
    "write": "committing the chunk", "assemble": "assembling the outputs", "report": "writing the report",
}


# Where a chunk's traces stand, as a share of their work, when each stage starts: the bar moves
# inside a chunk (units encoded move it through the encode share) instead of jumping per chunk.
_CHUNK_SHARE = {"split": 0.0, "encode": 0.05, "tile_type": 0.65, "link": 0.75, "indicators_serialise": 0.9}


class Progress:
    """Two lines on stderr: traces done of the total (rate, ETA), and the stage running now with
    its unit counter. The trace count moves within a chunk as its stages and units advance, so the
    rate and ETA show from the first trace on. tqdm.auto draws a widget in a notebook and a bar
    that fits the width of any terminal. Disabled, every method does nothing."""

    def __init__(self, total: int | None, enabled: bool = True, refresh_s: float = 1.0):
        self.enabled = enabled
        if not enabled:
            return
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc="traces", unit="trace", file=sys.stderr, position=0, dynamic_ncols=True,
                        smoothing=0.1, bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total_fmt} "
                                                  "[{elapsed}<{remaining}, {rate_fmt}]" if total else None)
        self.status = tqdm(total=None, desc="starting", unit="unit", file=sys.stderr, position=1, dynamic_ncols=True,
                           bar_format="{desc}: {n_fmt} units encoded [{rate_fmt}]")
        self._chunk = (0.0, 0)  # (bar count when the chunk started, traces in it)
        self._units_expected, self._units_seen, self._finished = 0, 0, 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._tick, args=(refresh_s,), daemon=True)
        self._thread.start()

    def _tick(self, refresh_s: float) -> None:
        while not self._stop.wait(refresh_s):
            with self._lock:
                self.bar.refresh()
                self.status.refresh()

    def _advance_to(self, share: float) -> None:
        start, n = self._chunk
        target = start + n * min(share, 1.0)
        if target > self.bar.n:
            self.bar.update(target - self.bar.n)

    def begin_chunk(self, n: int) -> None:
        """A chunk of `n` traces starts (the bar moves through it as its stages run)."""
        if self.enabled:
            with self._lock:
                self._advance_to(1.0)  # whatever the last chunk left
                self._chunk = (float(self.bar.n), n)
                self._units_expected = self._units_seen = self._finished = 0

    def expect_units(self, n: int) -> None:
        """The chunk's units about to be encoded (the encode share moves with them)."""
        if self.enabled:
            with self._lock:
                self._units_expected, self._units_seen = n, 0

    def stage(self, name: str) -> None:
        if self.enabled:
            with self._lock:
                if name in _CHUNK_SHARE and self._chunk[1]:
                    self._advance_to(_CHUNK_SHARE[name])
                self.status.set_description_str(STAGE_NAMES.get(name, name), refresh=True)

    def units(self, n: int) -> None:
        if self.enabled:
            with self._lock:
                self.status.update(n)
                if self._units_expected and self._chunk[1]:
                    self._units_seen += n
                    done = min(self._units_seen / self._units_expected, 1.0)
                    self._advance_to(_CHUNK_SHARE["encode"] + done * (_CHUNK_SHARE["tile_type"] - _CHUNK_SHARE["encode"]))

    def traces(self, n: int = 1) -> None:
        """`n` traces finished (of the current chunk, when one is open)."""
        if self.enabled:
            with self._lock:
                start, size = self._chunk
                if size:
                    self._finished += n
                    if self._finished >= size:
                        self._advance_to(1.0)
                        self.bar.n = round(self.bar.n)  # whole traces again between chunks
                        self._chunk = (float(self.bar.n), 0)
                    else:
                        first = _CHUNK_SHARE["indicators_serialise"]
                        self._advance_to(first + (1.0 - first) * self._finished / size)
                else:
                    self.bar.update(n)

    def close(self) -> None:
        if self.enabled:
            self._stop.set()
            self._thread.join()
            self.status.close()
            self.bar.close()


class ProgressTimes:
    """Stage timings (into `times`) that also name each stage on the progress display as it starts."""

    def __init__(self, times: StageTimes, progress: Progress):
        self.times, self.progress = times, progress

    def __call__(self, stage: str):
        self.progress.stage(stage)
        return self.times(stage)
