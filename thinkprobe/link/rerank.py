"""Learned candidate reranking for the parser (issue 27): the coarse stage of a coarse-to-fine
linker. For each unit j, a pool of earlier units beyond the parser's window (its `rerank_pool`
most cosine-similar ones) is scored by a small MLP over what the parser already computes for a
pair: the pair features (cosine, its rank and gap to j's best, distance, blocks, sections, word
and number overlap, origin, plan / block relations), the distance bucket and both units' features
(cue and text-shape flags, position, length...). Its `learned_k` best per unit replace the most
similar ones among the parser's candidates. Trained with a softmax over each unit's pool (the
marginal likelihood of its silver parents there), so it learns which similar units a unit builds
on, not which are merely alike.

A reranker trained per trace (`--rerank-trace`) scores every pair beyond the window (the pool and
the look-backs) and has a "none of them" score per unit: its probabilities compare across units, so
it keeps the trace's most probable pairs (`best_in_trace`), as many as the rules would propose there.
Units that build on something far get several candidates, units that need none give theirs up.

NumPy only (it runs inside `trace_features`, in worker processes), in float64 so that a unit's
choice never depends on the BLAS's blocking; cost linear in the trace length (pool pairs per
unit).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .candidates import DISTANCE_BUCKETS, FROM_SIMILARITY, FROM_WINDOW

__all__ = ["RERANK_FILE", "Reranker", "scored_pairs", "rerank_features", "best_per_unit", "best_in_trace", "most_probable", "parent_log_probs"]

RERANK_FILE = "rerank.safetensors"


def scored_pairs(origin: np.ndarray, per_trace: bool) -> np.ndarray:
    """Which pairs of a pool (by their origin flags) a reranker scores, in training and at run time:
    the similar ones, or (`per_trace`) every pair beyond the window.

    >>> scored_pairs(np.array([1, 2, 3, 4]), False).tolist(), scored_pairs(np.array([1, 2, 3, 4]), True).tolist()
    ([False, True, True, False], [False, True, False, True])
    """
    return (origin & FROM_WINDOW) == 0 if per_trace else (origin & FROM_SIMILARITY) > 0


def rerank_features(pf: np.ndarray, bucket: np.ndarray, uf: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The reranker's input of pairs (i, j): pair features, a one-hot distance bucket, and the
    unit features of i and of j.

    >>> rerank_features(np.ones((1, 2)), np.array([1]), np.eye(2), np.array([0]), np.array([1])).tolist()
    [[1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]]
    """
    onehot = np.eye(len(DISTANCE_BUCKETS) + 1, dtype=np.float32)[bucket]
    return np.concatenate([np.asarray(pf, np.float32), onehot, uf[i], uf[j]], axis=1)


def best_per_unit(i: np.ndarray, j: np.ndarray, score: np.ndarray, n: int, k: int) -> np.ndarray:
    """For each unit q < n, the (at most) `k` units i of its pairs (i, q) with the highest scores,
    best first, ties to the earlier unit; -1 where there are fewer.

    >>> best_per_unit(np.array([0, 1, 0, 1, 2]), np.array([2, 2, 3, 3, 3]), np.array([1., 2., 5., 5., 0.]), 4, 2).tolist()
    [[-1, -1], [-1, -1], [1, 0], [0, 1]]
    """
    out = np.full((n, max(k, 0)), -1, dtype=np.int64)
    if not len(i) or not k:
        return out
    order = np.lexsort((i, -score, j))  # by unit, then best score, then earlier unit
    js = j[order]
    rank = np.arange(len(js)) - np.searchsorted(js, js, side="left")
    keep = rank < k
    out[js[keep], rank[keep]] = i[order][keep]
    return out


def best_in_trace(i: np.ndarray, j: np.ndarray, score: np.ndarray, null: np.ndarray, budget: int) -> np.ndarray:
    """Which of one trace's pool pairs (i, j) to keep: the `budget` pairs most probable as a parent of
    their unit, the probability a softmax over the unit's pool and a "none of them" option (logit
    null[j]). A unit whose parent is likely far gets several, one that needs none few or none.
    Ties to the earlier unit j, then i. Pairs ordered by j.

    >>> best_in_trace(np.array([0, 1, 0, 1]), np.array([5, 5, 6, 6]), np.array([2., 2., 0., 0.]), np.zeros(7), 2).tolist()
    [True, True, False, False]
    >>> best_in_trace(np.array([0, 1, 0, 1]), np.array([5, 5, 6, 6]), np.array([2., 2., 0., 0.]), np.array([0.] * 5 + [9., -9.]), 2).tolist()
    [False, False, True, True]
    """
    return most_probable(i, j, parent_log_probs(j, score, null), budget)


def most_probable(i: np.ndarray, j: np.ndarray, logp: np.ndarray, budget: int) -> np.ndarray:
    """The `budget` pairs of highest `logp` (a mask), ties to the earlier unit j, then i."""
    keep = np.zeros(len(i), dtype=bool)
    if len(i) and budget > 0:
        keep[np.lexsort((i, j, -logp))[:budget]] = True
    return keep


def parent_log_probs(j: np.ndarray, score: np.ndarray, null: np.ndarray) -> np.ndarray:
    """Each pair's log-probability of being its unit's parent: a softmax over the unit's pairs and its
    "none of them" logit null[j]. Pairs ordered by j.

    >>> np.round(np.exp(parent_log_probs(np.array([3, 3]), np.array([0., 0.]), np.zeros(4))), 3).tolist()
    [0.333, 0.333]
    """
    if not len(j):
        return np.zeros(0, dtype=np.float64)
    units, start, count = np.unique(j, return_index=True, return_counts=True)
    top = np.maximum(np.maximum.reduceat(score, start), null[units])
    total = np.add.reduceat(np.exp(score - np.repeat(top, count)), start) + np.exp(null[units] - top)
    return score - np.repeat(top + np.log(total), count)


class Reranker:
    """The trained scorer: standardised inputs, ReLU layers, one score per pair. Weights are held as
    stored (float32), computed in float64. A reranker trained with a "none of them" option
    (`null_w`, `null_b`: a linear score of the unit's own features) chooses a trace's candidates
    together (`best_in_trace`); one without, each unit's best (`best_per_unit`)."""

    def __init__(self, weights: dict[str, np.ndarray]):
        self.w = {name: np.asarray(v, np.float32).astype(np.float64) for name, v in weights.items()}
        self.layers = sum(1 for name in self.w if name.startswith("w"))

    @property
    def per_trace(self) -> bool:
        """Whether it chooses a trace's candidates together (it has a "none of them" score)."""
        return "null_w" in self.w

    def null_scores(self, uf: np.ndarray) -> np.ndarray:
        """The "none of them" logit of each unit, from its unit features (the last inputs of a pair)."""
        u = uf.shape[1]
        z = (np.asarray(uf, np.float64) - self.w["mean"][-u:]) / self.w["scale"][-u:]
        return z @ self.w["null_w"][0] + self.w["null_b"][0]

    @classmethod
    def load(cls, path: str | Path) -> "Reranker":
        from safetensors.numpy import load_file

        return cls(load_file(str(path)))

    def save(self, path: str | Path) -> None:
        from safetensors.numpy import save_file

        save_file({name: np.ascontiguousarray(v, np.float32) for name, v in self.w.items()}, str(path))

    @property
    def inputs(self) -> int:
        return len(self.w["mean"])

    def __call__(self, x: np.ndarray, block: int = 65536) -> np.ndarray:
        """Scores of the rows of x (`rerank_features`; in blocks of rows: memory bounded on long traces)."""
        out = np.zeros(len(x), dtype=np.float64)
        for s in range(0, len(x), block):
            h = (np.asarray(x[s:s + block], np.float64) - self.w["mean"]) / self.w["scale"]
            out[s:s + block] = self._upper(h @ self.w["w0"].T + self.w["b0"])
        return out

    def pair_scores(self, pf: np.ndarray, bucket: np.ndarray, uf: np.ndarray, i: np.ndarray, j: np.ndarray,
                    block: int = 65536) -> np.ndarray:
        """The scores of `rerank_features(pf, bucket, uf, i, j)` without building it: the first layer's
        unit parts are computed once per unit and gathered per pair (the same sums, up to rounding)."""
        p, u = pf.shape[1], uf.shape[1]
        b = len(DISTANCE_BUCKETS) + 1
        mean, scale, w0 = self.w["mean"], self.w["scale"], self.w["w0"]
        cut = np.cumsum([0, p, b, u, u])

        def part(x, k):
            return ((np.asarray(x, np.float64) - mean[cut[k]:cut[k + 1]]) / scale[cut[k]:cut[k + 1]]) @ w0[:, cut[k]:cut[k + 1]].T

        per_i, per_j, per_bucket = part(uf, 2), part(uf, 3), part(np.eye(b), 1) + self.w["b0"]
        out = np.zeros(len(i), dtype=np.float64)
        for s in range(0, len(i), block):
            e = s + block
            out[s:e] = self._upper(part(pf[s:e], 0) + per_i[i[s:e]] + per_j[j[s:e]] + per_bucket[bucket[s:e]])
        return out

    def _upper(self, h: np.ndarray) -> np.ndarray:
        """The layers above the first, from its pre-activations."""
        for k in range(1, self.layers):
            h = np.maximum(h, 0.0) @ self.w[f"w{k}"].T + self.w[f"b{k}"]
        return h[:, 0]
