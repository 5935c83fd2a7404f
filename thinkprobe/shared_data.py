"""The real third-party traces (../shared/data, or $THINKPROBE_DATA) that tests, benchmarks and
scripts read by path, never copied into the repository; the bundled sample traces stand in where
they are absent.
"""
from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

__all__ = ["REPO", "SAMPLES", "data_dir", "real_corpus", "resample"]

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "thinkprobe" / "samples" / "traces.jsonl"


def data_dir() -> Path | None:
    """The shared data folder ($THINKPROBE_DATA, else ../shared/data beside the checkout), or None."""
    path = Path(os.environ.get("THINKPROBE_DATA", REPO.parent / "shared" / "data"))
    return path if path.is_dir() else None


def real_corpus(n: int, seed: int = 0) -> tuple[list[str], str]:
    """N ReasoningFlow v1 traces (a seeded sample over all five models and four task families),
    or the bundled samples when the data folder is absent. Returns JSONL lines and a description."""
    root = data_dir()
    if root is None:
        lines = SAMPLES.read_text(encoding="utf-8").splitlines()
        return [lines[i % len(lines)] for i in range(n)], "bundled samples (../shared/data not found)"
    path = root / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    random.Random(seed).shuffle(lines)
    return lines[:n], f"{n} traces sampled (seed {seed}) from {path.relative_to(root.parent)}"


def resample(lines: list[str], factor: int) -> list[str]:
    """A corpus `factor` times larger made of the same traces under new ids."""
    out = []
    for k in range(factor):
        for line in lines:
            rec = json.loads(line)
            rec["doc_id"] = rec["id"] = f"{rec.get('doc_id') or rec.get('id')}~{k}"
            out.append(json.dumps(rec))
    return out
