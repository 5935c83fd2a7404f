"""Per-stage wall-clock totals for the benchmark's breakdown (never part of the outputs)."""
from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator


class StageTimes(defaultdict):
    """Seconds per stage name, summed over every chunk of a run."""

    def __init__(self) -> None:
        super().__init__(float)

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self[stage] += time.perf_counter() - start
