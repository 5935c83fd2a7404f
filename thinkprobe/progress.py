"""What a person watching a run sees: the number of records counted up front (cheaply: lines of
JSONL, Parquet metadata: thinkprobe.io.formats), a bar over traces with rate and ETA, and below it the current stage with
the units encoded so far, redrawn every second so it moves even while one stage is busy.
Also the trace selection behind --limit and --sample."""
from __future__ import annotations

import itertools
import random
import sys
import threading
from typing import Iterable, Iterator, TypeVar

from .timing import StageTimes

__all__ = ["select", "selected_total", "Progress", "ProgressTimes"]

T = TypeVar("T")


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


class Progress:
    """Two lines on stderr: traces done of the total (rate, ETA), and the stage running now with
    its unit counter. Disabled, every method does nothing."""

    def __init__(self, total: int | None, enabled: bool = True, refresh_s: float = 1.0):
        self.enabled = enabled
        if not enabled:
            return
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc="traces", unit="trace", file=sys.stderr, position=0, dynamic_ncols=True,
                        smoothing=0.1)
        self.status = tqdm(total=None, desc="starting", unit="unit", file=sys.stderr, position=1, dynamic_ncols=True,
                           bar_format="{desc}: {n_fmt} units encoded [{rate_fmt}]")
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._tick, args=(refresh_s,), daemon=True)
        self._thread.start()

    def _tick(self, refresh_s: float) -> None:
        while not self._stop.wait(refresh_s):
            with self._lock:
                self.bar.refresh()
                self.status.refresh()

    def stage(self, name: str) -> None:
        if self.enabled:
            with self._lock:
                self.status.set_description_str(name, refresh=True)

    def units(self, n: int) -> None:
        if self.enabled:
            with self._lock:
                self.status.update(n)

    def traces(self, n: int = 1) -> None:
        if self.enabled:
            with self._lock:
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
