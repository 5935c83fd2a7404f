"""The parser's candidate pairs: each unit's most similar earlier units (blocked, never an n x n
matrix), the numbers each unit mentions and where they were last written, and the flat candidate
pairs (window, similarity, look-backs) the network scores.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ...records import ThoughtUnit
from ..candidates import FROM_LOOKBACK, FROM_SIMILARITY, FROM_WINDOW, CandidateParams
from ..features import token_index

__all__ = ["earlier_topk", "number_index", "last_mentions", "parser_candidates"]


def earlier_topk(emb: np.ndarray, k: int, skip: int = 0, block_values: int = 1 << 20,
                 horizon: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """For each unit j, the `k` most similar units among 0 .. j-1-skip (indices, -1 where fewer
    exist, most similar first, ties to the earlier unit) and j's best similarity to any earlier
    unit (0 for the first). Computed in strips of rows of at most `block_values` similarities:
    memory stays bounded whatever the length, never an n x n matrix. `horizon` > 0 looks only at
    the `horizon` units before j (for both), so time is linear in the length too.

    >>> e = np.eye(4, dtype=np.float32); e[3] = e[0]
    >>> idx, best = earlier_topk(e, 1)
    >>> idx[:, 0].tolist(), best.tolist()
    ([-1, 0, 0, 0], [0.0, 0.0, 0.0, 1.0])
    >>> earlier_topk(e, 1, horizon=2)[0][:, 0].tolist()
    [-1, 0, 0, 1]
    """
    emb = np.asarray(emb, dtype=np.float32)
    n = len(emb)
    idx = np.full((n, max(k, 0)), -1, dtype=np.int64)
    best = np.zeros(n, dtype=np.float32)
    width = min(n, horizon + 512) if horizon > 0 else n
    block = max(1, min(512, block_values // max(width, 1)))
    for s in range(0, n, block):
        e = min(n, s + block)
        if e <= 1:
            continue
        c0 = max(0, s - horizon) if horizon > 0 else 0
        rows = np.arange(s, e)
        cols = np.arange(c0, e)
        sim = emb[s:e] @ emb[c0:e].T  # (rows, e - c0): only the columns these rows can see
        sim[cols[None, :] >= rows[:, None]] = -np.inf
        if horizon > 0:
            sim[cols[None, :] < (rows - horizon)[:, None]] = -np.inf
        best[s:e] = np.where(rows > 0, sim.max(axis=1), 0.0)
        if not k:
            continue
        if skip:
            sim[cols[None, :] >= (rows - skip)[:, None]] = -np.inf
        w = e - c0
        kk = min(k, w)
        part = np.argpartition(-sim, kk - 1, axis=1)[:, :kk] if kk < w else np.tile(np.arange(w), (len(rows), 1))
        vals = np.take_along_axis(sim, part, axis=1)
        # ties at the k-th value: argpartition picks any of them; such rows are redone stably
        kth = vals.min(axis=1)
        for r in np.flatnonzero((sim >= kth[:, None]).sum(axis=1) > kk):
            part[r] = np.argsort(-sim[r], kind="stable")[:kk]
            vals[r] = sim[r, part[r]]
        order = np.lexsort((part, -vals), axis=1)
        part, vals = np.take_along_axis(part, order, axis=1), np.take_along_axis(vals, order, axis=1)
        part = part + c0
        part[~np.isfinite(vals)] = -1
        idx[s:e, :kk] = part[:, :k]
    return idx, best


# Numbers in a unit's text; 0, 1 and 2 are too common to tie two units together.
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_COMMON_NUMBERS = frozenset({"0", "1", "2"})


def number_index(units: Sequence[ThoughtUnit]) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's distinct numbers (but 0, 1, 2) as sorted ids (CSR: indptr, ids), like `word_index`.

    >>> from thinkprobe.records import ThoughtUnit as U
    >>> indptr, ids = number_index([U(k, "reasoning", 0, 1, t, 0) for k, t in enumerate(["x = 12", "1 + 12 = 13.5", "no"])])
    >>> indptr.tolist(), ids.tolist()
    ([0, 1, 3, 3], [0, 0, 1])
    """
    return token_index(units, lambda text: [x for x in _NUMBER.findall(text) if x not in _COMMON_NUMBERS])


def last_mentions(numbers: tuple[np.ndarray, np.ndarray]) -> list[list[int]]:
    """For each unit j, the earlier units that last mentioned one of j's numbers before j (most
    recent first, each once): where a value a step reuses was last written. Linear in the text.

    >>> last_mentions((np.array([0, 1, 2, 3, 5]), np.array([0, 1, 0, 0, 1])))
    [[], [], [0], [2, 1]]
    """
    indptr, ids = numbers
    last: dict[int, int] = {}
    out = []
    for j in range(len(indptr) - 1):
        row = ids[indptr[j]:indptr[j + 1]].tolist()
        out.append(sorted({last[x] for x in row if x in last}, reverse=True))
        for x in row:
            last[x] = j
    return out



def parser_candidates(units: Sequence[ThoughtUnit], topk: np.ndarray, p: CandidateParams,
                      last: Sequence[Sequence[int]] | None = None,
                      learned: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat candidate pairs (i, j, origin flags), ordered by j then i: the `window` preceding units,
    the top-k most similar earlier units beyond the window (`topk`: `earlier_topk(emb, k, skip=window)`),
    the last planning units beyond the window, the last conclusion units for a unit that
    concludes or critiques, the starts of recent topical blocks, and (`number_lookback`, with
    `last` from `last_mentions`) the units beyond the window that last wrote one of j's numbers, and
    (`learned_k`, with `learned` from `retriever.learned_topk`) the units a learned retriever ranks
    highest beyond the window (origin: similarity). Array operations per source, then one sort:
    time linear in the number of pairs.

    >>> from thinkprobe.records import ThoughtUnit as U
    >>> us = [U(k, "reasoning", 0, 1, "x", segment=k // 3, cues=("MET",) if k == 1 else ()) for k in range(6)]
    >>> i, j, o = parser_candidates(us, np.array([[-1]] * 4 + [[0], [2]]), CandidateParams(window=2, top_k=1))
    >>> list(zip(i.tolist(), j.tolist(), o.tolist()))[-9:]  # (i, j, origin): 1 window, 2 similar, 4 look-back
    [(0, 4, 6), (1, 4, 4), (2, 4, 1), (3, 4, 1), (0, 5, 4), (1, 5, 4), (2, 5, 2), (3, 5, 1), (4, 5, 1)]
    """
    n = len(units)
    lo = np.maximum(0, np.arange(n) - p.window)
    parts: list[tuple[np.ndarray, np.ndarray, int]] = []
    j = np.arange(n)
    for d in range(1, p.window + 1):
        parts.append((j[d:] - d, j[d:], FROM_WINDOW))
    for table, k in ((topk, p.top_k), (learned if p.learned_k else None, p.learned_k)):
        if table is not None and k and n:
            i = np.asarray(table)[:, :k]
            j = np.broadcast_to(np.arange(len(i))[:, None], i.shape)
            ok = (i >= 0) & (i < lo[: len(i), None])
            parts.append((i[ok], j[ok], FROM_SIMILARITY))

    def last_of(marked: list[int], count: int, rows: np.ndarray) -> None:
        """The `count` last of the sorted units `marked` before lo[j], for each j in `rows`."""
        if not count or not marked or not len(rows):
            return
        marked_arr = np.asarray(marked, dtype=np.int64)
        end = np.searchsorted(marked_arr, lo[rows], side="left")
        for d in range(1, count + 1):
            ok = end - d >= 0
            parts.append((marked_arr[end[ok] - d], rows[ok], FROM_LOOKBACK))

    rows = np.arange(1, n)
    last_of([k for k, u in enumerate(units) if "MET" in u.cues], p.plan_lookback, rows)
    if p.conclusion_lookback:
        concluding = np.array([k for k in range(1, n) if "CON" in units[k].cues or "CRT" in units[k].cues], dtype=np.int64)
        last_of([k for k, u in enumerate(units) if "CON" in u.cues], p.conclusion_lookback, concluding)
    last_of([k for k in range(n) if k == 0 or units[k].segment != units[k - 1].segment], p.block_lookback, rows)
    if p.number_lookback and last is not None and n:
        sizes = np.array([len(row) for row in last[:n]], dtype=np.int64)
        i = np.array([x for row in last[:n] for x in row], dtype=np.int64)
        j = np.repeat(np.arange(len(sizes)), sizes)
        ok = i < lo[j]
        i, j = i[ok], j[ok]
        first = np.searchsorted(j, j, side="left")  # rows stay in order: the kept ones' rank within j
        keep = np.arange(len(j)) - first < p.number_lookback
        parts.append((i[keep], j[keep], FROM_LOOKBACK))
    if not sum(len(a) for a, _, _ in parts):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    i = np.concatenate([a for a, _, _ in parts]).astype(np.int64)
    j = np.concatenate([b for _, b, _ in parts]).astype(np.int64)
    flag = np.concatenate([np.full(len(a), f, dtype=np.int64) for a, _, f in parts])
    key = j * n + i  # one pair per key; sorted: by j, then i
    order = np.argsort(key, kind="stable")
    key, flag = key[order], flag[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    key = key[first]
    return key % n, key // n, np.bitwise_or.reduceat(flag, first)
