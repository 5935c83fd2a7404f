"""What the models computed, on disk (issue 6), in one folder (`--cache-dir`): embeddings and token
counts per text (embeddings.sqlite3, keyed by sha256(encoder fingerprint + text)) and per-trace model
outputs (scores.sqlite3: the trained linker's and the cross-encoder's pair scores and the type head's
probabilities, keyed by sha256(model fingerprint + what the model reads of the trace: unit texts,
sections, topical blocks, cues and the embeddings' bytes)). A second run of the same input with
other indicator or report settings then neither re-encodes nor re-scores. Both are SQLite files
that several runs may share; only the main process, which runs the models, reads and writes them.
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

__all__ = ["EmbeddingCache", "ScoreCache", "CACHE_FILES", "default_cache_dir", "connect", "through_cache", "trace_digest",
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


def trace_digest(units: Sequence[ThoughtUnit], emb: np.ndarray, question: str | None = None) -> bytes:
    """What a trained model reads of one trace (and its question, for a model that reads it: None
    leaves the digest as without). Node types are left out: scores do not use them."""
    h = hashlib.sha256(np.ascontiguousarray(emb, dtype=np.float32).tobytes())
    h.update(json.dumps([[u.text, u.section, u.segment, list(u.cues)] for u in units],
                        ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if question is not None:
        h.update(b"\0question\0" + question.encode("utf-8", "surrogatepass"))
    return h.digest()


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


class _KeyedStore:
    """One SQLite table of (key BLOB PRIMARY KEY, value columns...) in FOLDER/FILE, shared by runs:
    lookups in slices of 500 keys (SQLite caps bound parameters), writes in one transaction."""

    def __init__(self, folder: str | Path, file: str, table: str, columns: Sequence[str]):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.table, self.columns = table, tuple(columns)
        self.db = connect(self.folder / file)
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key BLOB PRIMARY KEY, {', '.join(self.columns)})")
        self.hits = self.misses = 0

    def _get(self, keys: Sequence[bytes]) -> dict[bytes, tuple]:
        found: dict[bytes, tuple] = {}
        unique = list(dict.fromkeys(keys))
        for s in range(0, len(unique), 500):
            part = unique[s : s + 500]
            q = f"SELECT key, {', '.join(self.columns)} FROM {self.table} WHERE key IN ({','.join('?' * len(part))})"
            found.update((row[0], row[1:]) for row in self.db.execute(q, part))
        return found

    def _put(self, rows: Sequence[tuple]) -> None:
        with self.db:
            marks = ", ".join("?" * (1 + len(self.columns)))
            self.db.executemany(f"INSERT OR REPLACE INTO {self.table} VALUES ({marks})", rows)

    @property
    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}


class EmbeddingCache(_KeyedStore):
    """Embeddings (float32 bytes) and token counts per text in `embeddings.sqlite3`, keyed by
    sha256(encoder fingerprint + text): re-running with other indicator, linker or report settings
    re-encodes nothing. The encoder counts hits and misses."""

    def __init__(self, folder: str | Path, fingerprint: str):
        super().__init__(folder, "embeddings.sqlite3", "emb", ("tokens INTEGER", "vec BLOB"))
        self.fingerprint = fingerprint

    def key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.fingerprint}\0{text}".encode("utf-8", "surrogatepass")).digest()

    def get(self, keys: Sequence[bytes]) -> dict[bytes, tuple[int, bytes]]:
        return self._get(keys)

    def put(self, rows: Sequence[tuple[bytes, int, bytes]]) -> None:
        self._put(rows)


class ScoreCache(_KeyedStore):
    """Arrays per (kind, model fingerprint, trace digest) in `scores.sqlite3`."""

    def __init__(self, folder: str | Path, kind: str, fingerprint: str):
        super().__init__(folder, "scores.sqlite3", "scores", ("value BLOB",))
        self.prefix = f"{kind}\0{fingerprint}\0".encode()

    def key(self, digest: bytes) -> bytes:
        return hashlib.sha256(self.prefix + digest).digest()

    def get(self, keys: Sequence[bytes]) -> dict[bytes, dict[str, np.ndarray]]:
        found = {k: unpack(v) for k, (v,) in self._get(keys).items()}
        self.hits += sum(k in found for k in keys)
        self.misses += sum(k not in found for k in keys)
        return found

    def put(self, items: Mapping[bytes, Mapping[str, np.ndarray]]) -> None:
        self._put([(k, pack(v)) for k, v in items.items()])


def through_cache(cache: ScoreCache | None, traces: Sequence[tuple[Sequence[ThoughtUnit], np.ndarray]],
                  compute: Callable[[list[int]], list[dict[str, np.ndarray]]]) -> list[dict[str, np.ndarray]]:
    """Per-trace model outputs for `traces` ((units, embeddings[, question]) each): from `cache` where present;
    `compute(indices)` gives the others' in the order asked (a trace repeated in the batch once),
    and they are stored. Without a cache every trace is computed."""
    if cache is None:
        return compute(list(range(len(traces))))
    keys = [cache.key(trace_digest(*trace)) for trace in traces]
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
