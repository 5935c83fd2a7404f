"""Model outputs per trace on disk (issue 6): the trained linker's and the cross-encoder's pair
scores and the type head's probabilities, keyed by sha256(model fingerprint + what the model reads of the trace: unit texts,
sections, topical blocks, cues and the embeddings' bytes). A second run of the same input with
other indicator or report settings then neither re-encodes nor re-scores. Lives beside the
embedding cache (`--cache-dir`); only the main process, which runs the models, reads and writes it.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from .records import ThoughtUnit

__all__ = ["ScoreCache", "CACHE_FILES", "default_cache_dir", "connect", "through_cache", "trace_digest", "files_fingerprint",
           "pack", "unpack"]


CACHE_FILES = ("embeddings.sqlite3", "scores.sqlite3")


def default_cache_dir() -> str:
    """Where `profile` keeps its cache unless told otherwise: $THINKPROBE_CACHE, else ~/.cache/thinkprobe."""
    return os.environ.get("THINKPROBE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "thinkprobe")


def connect(path: Path) -> sqlite3.Connection:
    """A cache database that several runs may share at once (the default folder is per user, not
    per run): write-ahead logging lets readers go on while one run writes, and a writer waits for
    another's transaction instead of failing."""
    db = sqlite3.connect(path, timeout=120)
    db.execute("PRAGMA journal_mode=WAL")
    return db


def trace_digest(units: Sequence[ThoughtUnit], emb: np.ndarray) -> bytes:
    """What a trained model reads of one trace. Node types are left out: scores do not use them."""
    h = hashlib.sha256(np.ascontiguousarray(emb, dtype=np.float32).tobytes())
    h.update(json.dumps([[u.text, u.section, u.segment, list(u.cues)] for u in units],
                        ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return h.digest()


def files_fingerprint(folder: Path, names: Sequence[str]) -> str:
    """A hash of a model folder's files that decide its outputs."""
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode())
        h.update((folder / name).read_bytes())
    return h.hexdigest()[:24]


def pack(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Named arrays as one blob: a JSON header line (name, dtype, shape), then the raw bytes."""
    head = [[name, a.dtype.str, list(a.shape)] for name, a in arrays.items()]
    return json.dumps(head).encode() + b"\n" + b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())


def unpack(blob: bytes) -> dict[str, np.ndarray]:
    cut = blob.index(b"\n")
    out, pos = {}, cut + 1
    for name, dtype, shape in json.loads(blob[:cut]):
        dt = np.dtype(dtype)
        size = int(np.prod(shape)) * dt.itemsize
        out[name] = np.frombuffer(blob, dtype=dt, count=int(np.prod(shape)), offset=pos).reshape(shape)
        pos += size
    return out


class ScoreCache:
    """Arrays per (kind, model fingerprint, trace digest) in one SQLite file, `scores.sqlite3`."""

    def __init__(self, folder: str | Path, kind: str, fingerprint: str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.prefix = f"{kind}\0{fingerprint}\0".encode()
        self.db = connect(self.folder / "scores.sqlite3")
        self.db.execute("CREATE TABLE IF NOT EXISTS scores (key BLOB PRIMARY KEY, value BLOB)")
        self.hits = self.misses = 0

    def key(self, digest: bytes) -> bytes:
        return hashlib.sha256(self.prefix + digest).digest()

    def get(self, keys: Sequence[bytes]) -> dict[bytes, dict[str, np.ndarray]]:
        found: dict[bytes, dict[str, np.ndarray]] = {}
        unique = list(dict.fromkeys(keys))
        for s in range(0, len(unique), 500):  # SQLite caps the number of bound parameters
            part = unique[s : s + 500]
            q = f"SELECT key, value FROM scores WHERE key IN ({','.join('?' * len(part))})"
            found.update((k, unpack(v)) for k, v in self.db.execute(q, part))
        self.hits += sum(k in found for k in keys)
        self.misses += sum(k not in found for k in keys)
        return found

    def put(self, items: Mapping[bytes, Mapping[str, np.ndarray]]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?)", [(k, pack(v)) for k, v in items.items()])

    @property
    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}


def through_cache(cache: ScoreCache | None, traces: Sequence[tuple[Sequence[ThoughtUnit], np.ndarray]],
                  compute: Callable[[list[int]], list[dict[str, np.ndarray]]]) -> list[dict[str, np.ndarray]]:
    """Per-trace model outputs for `traces` ((units, embeddings) each): from `cache` where present;
    `compute(indices)` gives the others' in the order asked (a trace repeated in the batch once),
    and they are stored. Without a cache every trace is computed."""
    if cache is None:
        return compute(list(range(len(traces))))
    keys = [cache.key(trace_digest(units, emb)) for units, emb in traces]
    found = cache.get(keys)
    todo = {}
    for n, k in enumerate(keys):
        if k not in found:
            todo.setdefault(k, n)
    if todo:
        fresh = dict(zip(todo, compute(list(todo.values()))))
        cache.put(fresh)
        found.update(fresh)
    return [found[k] for k in keys]
