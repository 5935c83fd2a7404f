"""What the parser reads of a trace: unit features (`ParserFeaturizer`), pair features of the
candidate pairs (shared with the pair MLP, plus the lexical ones), and, with a reranker, the
candidate set it chooses from a larger pool. NumPy and numba only (worker processes).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from ...records import ThoughtUnit
from ..candidates import FROM_LOOKBACK, FROM_SIMILARITY, CandidateParams, distance_bucket
from ..features import (SHARED_PAIR_FEATURES, TextFlags, rank_and_origin_columns, shared_count, shared_pair_features, shared_weight,
                        symbol_rates, word_index)
from .candidates import earlier_topk, last_mentions, number_index, parser_candidates

__all__ = ["LEXICAL_PAIR_FEATURES", "lexical_pair_features", "QUESTION_FEATURES", "question_overlap", "ParserFeaturizer", "pair_features", "candidate_rank",
           "trace_features", "unit_features", "LOGP_FLOOR"]

# Pair features a parser trained with `lexical_pairs` reads after the shared ones.
LEXICAL_PAIR_FEATURES = 3


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


# Unit features a parser trained with `question` reads after the others (`question_overlap`).
QUESTION_FEATURES = 4


def question_overlap(units: Sequence[ThoughtUnit], question: str | None) -> np.ndarray:
    """(n, 4) float32: how much of each unit the question holds, for a restatement of it: the share
    of the unit's distinct words that the question also writes, the same weighted by inverse unit
    frequency within the trace (log(n / df) + 0.1), the share of its numbers (but 0, 1, 2) that the
    question writes, and whether there is a question at all (all zero without one). Linear in the
    text.

    >>> from thinkprobe.records import ThoughtUnit as U
    >>> question_overlap([U(0, "reasoning", 0, 1, "Find x if x + 12 = 30.", 0), U(1, "reasoning", 0, 1, "So x is 18.", 0)],
    ...                  "Find x if x + 12 = 30.").astype(float).round(2).tolist()
    [[1.0, 1.0, 1.0, 1.0], [0.25, 0.04, 0.0, 1.0]]
    """
    out = np.zeros((len(units), QUESTION_FEATURES), dtype=np.float32)
    if not question or not question.strip() or not len(units):
        return out
    with_question = [*units, ThoughtUnit(len(units), "question", 0, 0, question, 0)]
    indptr, ids = word_index(with_question)
    nptr, nids = number_index(with_question)
    n = len(units)
    q_words = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=bool)
    q_words[ids[indptr[n]:]] = True
    q_nums = np.zeros(int(nids.max()) + 1 if len(nids) else 0, dtype=bool)
    q_nums[nids[nptr[n]:]] = True
    unit_ids, unit_nums = ids[:indptr[n]], nids[:nptr[n]]
    rows = np.repeat(np.arange(n), np.diff(indptr[:n + 1]))
    idf = np.log(n / np.maximum(np.bincount(unit_ids, minlength=len(q_words)), 1)) + 0.1
    size = np.maximum(np.diff(indptr[:n + 1]), 1)
    held = q_words[unit_ids]
    out[:, 0] = np.bincount(rows, weights=held, minlength=n) / size
    total = np.bincount(rows, weights=idf[unit_ids], minlength=n)
    out[:, 1] = np.bincount(rows, weights=idf[unit_ids] * held, minlength=n) / np.where(total > 0, total, 1.0)
    nrows = np.repeat(np.arange(n), np.diff(nptr[:n + 1]))
    count = np.diff(nptr[:n + 1])
    out[:, 2] = np.bincount(nrows, weights=q_nums[unit_nums], minlength=n) / np.maximum(count, 1)
    out[:, 3] = 1.0
    return out


class ParserFeaturizer(TextFlags):
    """Per-unit features besides the embedding: cue flags, text-shape flags (patterns stored with
    the model), 10 numeric features and, for a model trained with `question`, the unit's overlap
    with the question (`question_overlap`). Linear in the trace length."""

    numeric = 10

    def __init__(self, cue_names: Sequence[str], shape_patterns: Mapping[str, str], lexical_pairs: bool = False,
                 question: bool = False):
        super().__init__(cue_names, shape_patterns)
        self.lexical_pairs = lexical_pairs  # whether the model reads `lexical_pair_features` too
        self.question = question  # whether the model reads `question_overlap` too

    @property
    def base_size(self) -> int:
        """The columns before the question's (what a reranker reads of a unit)."""
        return super().size

    @property
    def size(self) -> int:
        return self.base_size + (QUESTION_FEATURES if self.question else 0)

    @property
    def pair_size(self) -> int:
        return SHARED_PAIR_FEATURES + (LEXICAL_PAIR_FEATURES if self.lexical_pairs else 0)

    def __call__(self, units: Sequence[ThoughtUnit], emb: np.ndarray, best: np.ndarray, question: str | None = None) -> np.ndarray:
        out, texts, length, f = self.flags(units)
        n = len(units)
        if not n:
            return out
        if self.question:
            out[:, self.base_size:] = question_overlap(units, question)
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
                   featurizer: ParserFeaturizer, retrieved: tuple | None = None, reranker=None,
                   question: str | None = None) -> dict[str, np.ndarray]:
    """What the parser reads of one trace: unit features (uf), candidate pairs (i, j, origin), their
    distance buckets (bucket) and pair features (pf). NumPy and numba only (worker processes).
    `retrieved`: a learned retriever's (queries, keys, distance bias) of the trace (`retriever.retrieve`,
    computed from `unit_features`): its top `params.learned_k` join the candidates and each pair's
    retrieval margin is the last pair feature. `reranker` (`rerank.Reranker`, with
    `params.rerank_pool`): the `rerank_pool` most similar units beyond the window get the pair
    features of a candidate set that holds them, and the reranker's `params.learned_k` best by
    those join the candidates (it reads the unit features before the question's). `question`: the
    trace's question, for a featurizer with `question`."""
    emb = np.asarray(emb, dtype=np.float32)
    topk, best = earlier_topk(emb, max(params.top_k, params.rerank_pool if reranker is not None else 0),
                              skip=params.window, horizon=params.horizon)
    numbers = number_index(units) if featurizer.lexical_pairs or params.number_lookback else None
    last = last_mentions(numbers) if numbers is not None else None
    words = word_index(units)
    uf = featurizer(units, emb, best, question)
    learned = rbest = None
    if retrieved is not None:
        from ..retriever import learned_topk

        learned, rbest = learned_topk(*retrieved, params.learned_k, skip=params.window, horizon=params.horizon)
    elif reranker is not None and params.rerank_pool:
        from ..rerank import best_per_unit, scored_pairs

        pool = _pairs(units, emb, best, uf, topk, replace(params, top_k=params.rerank_pool, learned_k=0), featurizer, last,
                      numbers, words)
        if reranker.per_trace:
            return _chosen_in_trace(pool, topk[:, :params.learned_k], reranker, featurizer.base_size)
        sel = scored_pairs(pool["origin"], per_trace=False)
        i, j = pool["i"][sel], pool["j"][sel]
        score = reranker.pair_scores(pool["pf"][sel], pool["bucket"][sel], uf[:, :featurizer.base_size], i, j)
        return _chosen(pool, best_per_unit(i, j, score, len(units), params.learned_k), topk[:, :params.top_k])
    out = _pairs(units, emb, best, uf, topk, params, featurizer, last, numbers, words, learned)
    if retrieved is not None:
        from ..retriever import retrieval_margin

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


def _chosen_in_trace(pool: dict[str, np.ndarray], similar: np.ndarray, reranker, base_size: int) -> dict[str, np.ndarray]:
    """The candidate set of a reranker that chooses for the whole trace: the window, and of the
    pool's pairs beyond it (its most similar units and every look-back) the ones `best_in_trace`
    keeps, as many as the rule-based candidates hold beyond the window (each unit's look-backs and
    its `similar` units: its learned_k most similar). The reranker's log-probability of each kept pair
    (0 in the window) becomes the last pair feature: the coarse stage's score, read by the fine one."""
    from ..rerank import most_probable, parent_log_probs, scored_pairs

    origin = pool["origin"]
    scored = scored_pairs(origin, per_trace=True)
    i, j, o = pool["i"][scored], pool["j"][scored], origin[scored]
    named = (similar[j] == i[:, None]).any(axis=1) if similar.shape[1] else np.zeros(len(i), dtype=bool)
    budget = int((((o & FROM_LOOKBACK) > 0) | (((o & FROM_SIMILARITY) > 0) & named)).sum())
    uf = pool["uf"][:, :base_size]
    score = reranker.pair_scores(pool["pf"][scored], pool["bucket"][scored], uf, i, j)
    logp = parent_log_probs(j, score, reranker.null_scores(uf))
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
                  featurizer: ParserFeaturizer, question: str | None = None) -> np.ndarray:
    """The unit features alone (what a learned retriever reads besides the embeddings)."""
    emb = np.asarray(emb, dtype=np.float32)
    _, best = earlier_topk(emb, 0, horizon=params.horizon)
    return featurizer(units, emb, best, question)
