"""Candidate parents of each unit (spec section 1, step 5): embedding similarity computed in
blocks of rows (numba; memory linear in the trace length), a window of neighbours, the most
similar earlier units and a cue-driven look-back, each candidate with its origin flags.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numba
import numpy as np

from ..records import ThoughtUnit

__all__ = ["FROM_WINDOW", "FROM_SIMILARITY", "FROM_LOOKBACK", "DISTANCE_BUCKETS", "distance_bucket", "SIM_BLOCK", "Similarity", "as_similarity",
           "CandidateParams", "candidate_pairs", "candidates", "candidate_arrays"]

# Candidate origins (bit flags, also pair features).
FROM_WINDOW, FROM_SIMILARITY, FROM_LOOKBACK = 1, 2, 4

# Distance buckets (j - i): 1, 2, 3, 4-5, 6-10, 11-20, 21-50, 51-100, > 100.
DISTANCE_BUCKETS = (1, 2, 3, 5, 10, 20, 50, 100)


def distance_bucket(d: np.ndarray) -> np.ndarray:
    """Bucket index of distances d >= 1.

    >>> distance_bucket(np.array([1, 2, 3, 4, 10, 11, 1000])).tolist()
    [0, 1, 2, 3, 4, 5, 8]
    """
    return np.searchsorted(np.array(DISTANCE_BUCKETS), d, side="left").astype(np.int64)


def candidate_pairs(sim: "Similarity | np.ndarray", window: int, top_k: int) -> list[np.ndarray]:
    """Earlier-unit candidates for each unit j: the `window` preceding units plus the `top_k`
    most similar earlier units beyond the window. `sim`: a `Similarity`, or the unit embeddings.

    >>> e = np.eye(6); e[5] = e[0] + 0.5 * e[5]
    >>> [c.tolist() for c in candidate_pairs(e, window=2, top_k=1)]
    [[], [0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 3, 4]]
    """
    sim = as_similarity(sim)
    top = sim.top_earlier(top_k, lag=window)[0]
    out = []
    for j in range(sim.n):
        near = np.arange(max(0, j - window), j)
        far = top[j][top[j] >= 0]
        out.append(np.unique(np.concatenate([far, near]).astype(np.int64)))
    return out


# ----------------------------------------------------------------------------- similarity

# Most similarity values held at once for one trace (float32: 64 MB). A trace of up to
# sqrt(SIM_BLOCK) = 4096 units gets its whole matrix at once; a longer one is read in strips of
# rows. A memory bound only: strips give the same values as the whole matrix.
SIM_BLOCK = 1 << 24


@numba.njit(cache=True)
def _top_rows(strip, r0, k, lag, idx, val):  # pragma: no cover - compiled
    """For each row q = r0 + r of `strip` (similarities of unit q to units 0..): the `k` most
    similar units among 0 .. q-lag-1, most similar first, ties to the earlier unit (the order of a
    stable argsort of -similarity); -1 where there are fewer."""
    for r in range(strip.shape[0]):
        end = r0 + r - lag
        m = 0
        for t in range(max(end, 0)):
            x = strip[r, t]
            if m == k and not x > val[r0 + r, k - 1]:
                continue
            pos = m if m < k else k - 1
            while pos > 0 and x > val[r0 + r, pos - 1]:
                idx[r0 + r, pos] = idx[r0 + r, pos - 1]
                val[r0 + r, pos] = val[r0 + r, pos - 1]
                pos -= 1
            idx[r0 + r, pos] = t
            val[r0 + r, pos] = x
            if m < k:
                m += 1


@numba.njit(cache=True)
def _rank_and_best(strip, r0, i, j, rank, best):  # pragma: no cover - compiled
    """For pairs (i[k] < j[k]) with j[k] in this strip's rows: how many earlier units of j are
    more similar to j than i is (0 = i is the most similar), and j's best similarity to any
    earlier unit."""
    for k in range(len(i)):
        r = j[k] - r0
        v = strip[r, i[k]]
        c = 0
        m = strip[r, 0]
        for t in range(j[k]):
            x = strip[r, t]
            if x > v:
                c += 1
            if x > m:
                m = x
        rank[k] = c
        best[k] = m


class Similarity:
    """Cosine similarities between the units of one trace (embeddings unit-normalised), without
    an n x n matrix for a long trace: up to `block` values are held at once, as strips of rows
    `emb[r0:r1] @ emb[:r1].T` (plain matrix products, so never the whole-trace `A @ A.T` that
    OpenBLAS turns into its symmetric product). A short trace keeps its whole matrix. Every
    question a linker asks (most similar earlier units, ranks, single values) is answered in
    memory linear in the trace length.

    >>> e = np.eye(4, dtype=np.float32); e[3] = e[0]
    >>> Similarity(e).top_earlier(2, lag=1)[0].tolist()
    [[-1, -1], [-1, -1], [0, -1], [0, 1]]
    """

    def __init__(self, emb: np.ndarray, block: int | None = None):
        self.emb = np.ascontiguousarray(emb, dtype=np.float32)
        self.n = len(self.emb)
        self.rows = max(1, (block or SIM_BLOCK) // max(1, self.n))
        self.dense = self.emb @ self.emb.T if self.n <= self.rows else None
        self._top: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def strips(self):
        """(r0, r1, S) with S[r, t] the similarity of units r0 + r and t, for t < r1."""
        if self.dense is not None:
            yield 0, self.n, self.dense
            return
        for r0 in range(0, self.n, self.rows):
            r1 = min(self.n, r0 + self.rows)
            yield r0, r1, self.emb[r0:r1] @ self.emb[:r1].T

    def at(self, j: int, idx: np.ndarray) -> np.ndarray:
        """Similarities of unit j to the units `idx`."""
        if self.dense is not None:
            return self.dense[j, idx]
        return self.emb[idx] @ self.emb[j]

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Similarities of the pairs (i[k], j[k])."""
        if self.dense is not None:
            return self.dense[i, j]
        out = np.zeros(len(i), dtype=np.float32)
        for s in range(0, len(i), self.rows):
            out[s:s + self.rows] = np.einsum("ij,ij->i", self.emb[i[s:s + self.rows]], self.emb[j[s:s + self.rows]])
        return out

    def row(self, j: int) -> np.ndarray:
        """Similarities of unit j to every earlier unit (0 .. j-1)."""
        if self.dense is not None:
            return self.dense[j, :j]
        return self.emb[:j] @ self.emb[j]

    def adjacent(self) -> np.ndarray:
        """a[q] = similarity of units q and q-1 (a[0] = 0): the band next to the diagonal."""
        out = np.zeros(self.n, dtype=np.float32)
        if self.n > 1:
            k = np.arange(1, self.n)
            out[1:] = self.dense[k, k - 1] if self.dense is not None else np.einsum("ij,ij->i", self.emb[1:], self.emb[:-1])
        return out

    def top_earlier(self, k: int, lag: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """For each unit q: the `k` most similar units among 0 .. q-lag-1 (indices, -1 where there
        are fewer, and similarities), most similar first, ties to the earlier unit."""
        self.prepare((k, lag))
        return self._top[(k, lag)]

    def prepare(self, *specs: tuple[int, int]) -> None:
        """Compute `top_earlier(k, lag)` for several (k, lag) in one pass over the strips."""
        todo = [key for key in dict.fromkeys(specs) if key not in self._top]
        if not todo:
            return
        for key in todo:
            self._top[key] = (np.full((self.n, key[0]), -1, dtype=np.int64),
                              np.full((self.n, key[0]), -np.inf, dtype=np.float32))
        todo = [key for key in todo if key[0]]
        if todo:
            for r0, _, strip in self.strips():
                for k, lag in todo:
                    _top_rows(strip, r0, k, lag, *self._top[(k, lag)])

    def rank_and_best(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For pairs (i < j): how many earlier units of j are more similar to j than i is (0 = i
        is the most similar), and j's best similarity to an earlier unit."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        order = np.argsort(j, kind="stable")
        si, sj = i[order], j[order]
        rank = np.zeros(len(i), dtype=np.int64)
        best = np.zeros(len(i), dtype=np.float32)
        for r0, r1, strip in self.strips():
            a, b = np.searchsorted(sj, [r0, r1])
            if b > a:
                _rank_and_best(strip, r0, si[a:b], sj[a:b], rank[a:b], best[a:b])
        out_rank, out_best = np.empty_like(rank), np.empty_like(best)
        out_rank[order], out_best[order] = rank, best
        return out_rank, out_best


def as_similarity(x: "Similarity | np.ndarray") -> Similarity:
    """A `Similarity` from one, or from a trace's unit embeddings."""
    return x if isinstance(x, Similarity) else Similarity(x)


# ----------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class CandidateParams:
    window: int = 3  # preceding units always considered
    top_k: int = 5  # most similar earlier units beyond the window
    plan_lookback: int = 2  # earlier planning (MET-cue) units beyond the window
    conclusion_lookback: int = 3  # earlier conclusion-cue units, for conclusion and critique units
    block_lookback: int = 2  # starts of the unit's topical block and of the blocks before it
    number_lookback: int = 0  # the parser's: earlier units that last mentioned a number of the unit
    horizon: int = 0  # the parser's: similar units searched among this many before the unit (0: all)
    learned_k: int = 0  # the parser's: units a learned retriever (or the reranker) ranks highest beyond the window
    rerank_pool: int = 0  # the parser's: the most similar units beyond the window its reranker chooses learned_k from

    @classmethod
    def from_dict(cls, d: Mapping) -> "CandidateParams":
        return cls(**{k: int(v) for k, v in d.items() if k in cls.__dataclass_fields__})


def candidates(units: Sequence[ThoughtUnit], sim: "Similarity | np.ndarray", p: CandidateParams) -> list[tuple[np.ndarray, np.ndarray]]:
    """Earlier-unit candidates for each unit j with their origin flags: the `window` preceding
    units, the `top_k` most similar earlier units beyond them, and a look-back driven by cues:
    the last planning units (a plan governs the steps that carry it out), the last conclusion
    units for units that conclude or critique (answers confirm or revise earlier answers), and
    the starts of the current and previous topical blocks. `sim`: a `Similarity`, or the unit
    embeddings.

    >>> from thinkprobe.records import ThoughtUnit as U
    >>> us = [U(k, "reasoning", 0, 1, "x", segment=0, cues=("MET",) if k == 0 else ()) for k in range(6)]
    >>> [c.tolist() for c, _ in candidates(us, np.eye(6), CandidateParams(window=2, top_k=0, block_lookback=0))]
    [[], [0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 3, 4]]
    """
    n = len(units)
    met = [k for k, u in enumerate(units) if "MET" in u.cues]
    con = [k for k, u in enumerate(units) if "CON" in u.cues]
    block_start: dict[int, int] = {}
    for k, u in enumerate(units):
        block_start.setdefault(u.segment, k)
    starts = sorted(block_start.values())
    top = as_similarity(sim).top_earlier(p.top_k, lag=p.window)[0] if p.top_k and n else None
    out = []
    for j in range(n):
        origin: dict[int, int] = {}
        lo = max(0, j - p.window)
        for i in range(lo, j):
            origin[i] = origin.get(i, 0) | FROM_WINDOW
        if lo and p.top_k:
            for i in top[j][top[j] >= 0]:
                origin[int(i)] = origin.get(int(i), 0) | FROM_SIMILARITY
        look = [k for k in met if k < lo][-p.plan_lookback:] if p.plan_lookback else []
        cues = units[j].cues
        if p.conclusion_lookback and ("CON" in cues or "CRT" in cues):
            look += [k for k in con if k < lo][-p.conclusion_lookback:]
        if p.block_lookback:
            look += [s for s in starts if s < lo][-p.block_lookback:]
        for i in look:
            origin[i] = origin.get(i, 0) | FROM_LOOKBACK
        idx = np.array(sorted(origin), dtype=np.int64)
        out.append((idx, np.array([origin[i] for i in idx], dtype=np.int64)))
    return out


def candidate_arrays(units: Sequence[ThoughtUnit], sim: "Similarity | np.ndarray", p: CandidateParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`candidates` as flat arrays over all pairs: i, j (i < j) and the origin flags, ordered by j.

    >>> from thinkprobe.records import ThoughtUnit as U
    >>> us = [U(k, "reasoning", 0, 1, "x", segment=0) for k in range(3)]
    >>> [a.tolist() for a in candidate_arrays(us, np.eye(3), CandidateParams(window=2, top_k=0, block_lookback=0))]
    [[0, 0, 1], [1, 2, 2], [1, 1, 1]]
    """
    cands = candidates(units, sim, p)
    if not cands:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return (np.concatenate([c for c, _ in cands]), np.repeat(np.arange(len(cands)), [len(c) for c, _ in cands]),
            np.concatenate([o for _, o in cands]))
