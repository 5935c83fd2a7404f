"""AUROC for a wrong answer (thinkprobe.stats' outcome validity, the report's decisions): the
Mann-Whitney AUROC with DeLong's interval (from the placements: right with tied scores) or, from its value
and the counts alone, Hanley & McNeil's standard error; within models, and of a design factor alone."""
from __future__ import annotations

import math
from typing import Hashable, Mapping, Sequence

import numpy as np
from scipy.special import expit, logit
from scipy.stats import mannwhitneyu, norm
from scipy.stats import t as student_t

__all__ = ["auroc", "auroc_se", "auroc_interval", "auroc_delong", "placements", "auroc_within", "factor_auroc"]


def auroc(scores: Sequence[float], positive: Sequence[bool]) -> float | None:
    """Area under the ROC curve of `scores` for the positive class: the Mann-Whitney U of the
    positives over n_pos * n_neg (ties count one half). 0.5 = no signal; below 0.5 = lower scores
    flag the positives. None when a class is empty."""
    s = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(positive, dtype=bool)
    ok = np.isfinite(s)
    a, b = s[ok & pos], s[ok & ~pos]
    if len(a) == 0 or len(b) == 0:
        return None
    return float(mannwhitneyu(a, b).statistic) / (len(a) * len(b))


def auroc_se(value: float, n_pos: int, n_neg: int) -> float:
    """The standard error of an AUROC from n_pos positives and n_neg negatives (Hanley & McNeil 1982,
    exponential approximation): how far a small sample's AUROC may lie from the population's.

    >>> round(auroc_se(0.8, 50, 50), 4)
    0.0445
    """
    q1, q2 = value / (2 - value), 2 * value ** 2 / (1 + value)
    var = (value * (1 - value) + (n_pos - 1) * (q1 - value ** 2) + (n_neg - 1) * (q2 - value ** 2)) / (n_pos * n_neg)
    return math.sqrt(max(var, 0.0))


def auroc_interval(value: float, n_pos: int, n_neg: int, z: float = 1.96) -> tuple[float, float]:
    """value ± z Hanley & McNeil standard errors, clipped to [0, 1]. At 0 or 1 the standard error is 0 (an
    interval 1.00-1.00 on 5 and 5 traces), so it is taken half a pair in.

    >>> [round(x, 3) for x in auroc_interval(0.8, 50, 50)]
    [0.713, 0.887]
    """
    pairs = n_pos * n_neg
    half = z * auroc_se(min(max(value, 0.5 / pairs), 1 - 0.5 / pairs), n_pos, n_neg)
    return max(0.0, value - half), min(1.0, value + half)


def placements(x: np.ndarray, other_sorted: np.ndarray) -> np.ndarray:
    """Per value of x: how many of the other sample (sorted) lie below it, ties counting one half."""
    below = np.searchsorted(other_sorted, x, side="left")
    return below + 0.5 * (np.searchsorted(other_sorted, x, side="right") - below)


def auroc_delong(scores: Sequence[float], positive: Sequence[bool], level: float = 0.95,
                 clusters: Sequence[Hashable | None] | None = None) -> tuple[float, float, float] | None:
    """The AUROC of `scores` for the positive class with DeLong's interval at `level` (DeLong, DeLong &
    Clarke-Pearson 1988: the variance from each trace's placement among the other class, ties one half),
    taken on the logit scale (the AUROC kept half a pair from 0 and 1), which holds its coverage near 1
    and with few traces of a class better than the plain ± z se; where every positive lies above every
    negative (or below) that variance is 0, and the interval is that of the same counts with one pair the
    other way round (`_interval`). `clusters`: a label per trace (None: a cluster of its own), for traces
    that are not independent (several answers to one question): the variance is then Obuchowski's (1997),
    from the clusters' sums of placements (`_clustered_var`), and the quantile Student's t on K - 1
    degrees of freedom for K clusters; with fewer than 2 clusters holding a class, the interval is [0, 1].
    None when a class has fewer than 2 traces.

    >>> [round(x, 3) for x in auroc_delong([0.1, 0.4, 0.35, 0.8, 0.3, 0.7], [0, 0, 1, 1, 0, 1])]
    [0.889, 0.261, 0.995]
    """
    s, pos = np.asarray(scores, dtype=np.float64), np.asarray(positive, dtype=bool)
    ok = np.isfinite(s)
    s, pos = s[ok], pos[ok]
    m, n = int(pos.sum()), int((~pos).sum())
    if m < 2 or n < 2:
        return None
    value, influence = _influence(s, pos)
    # without clusters, a cluster per trace: DeLong's variance exactly, with the normal quantile
    var, k = _clustered_var(influence, _cluster_codes(clusters if clusters is not None else [None] * len(ok))[ok], pos)
    if var is None:
        return value, 0.0, 1.0
    return (value, *_interval(value, math.sqrt(var), m, n, level, None if clusters is None else k - 1))


def _influence(s: np.ndarray, pos: np.ndarray) -> tuple[float, np.ndarray]:
    """(AUROC, each trace's influence on it: a positive's share of negatives below it, or a negative's
    share of positives above it, less the AUROC, over its class's count)."""
    a, b = s[pos], s[~pos]
    v_a = placements(a, np.sort(b)) / len(b)
    w_b = 1 - placements(b, np.sort(a)) / len(a)
    value = float(v_a.mean())
    influence = np.empty(len(s))
    influence[pos], influence[~pos] = (v_a - value) / len(a), (w_b - value) / len(b)
    return value, influence


def _cluster_codes(clusters: Sequence[Hashable | None]) -> np.ndarray:
    """An integer per trace: one per distinct label, a trace without one (None) a code of its own."""
    codes: dict = {}
    return np.array([codes.setdefault(("given", c) if c is not None else ("own", k), len(codes))
                     for k, c in enumerate(clusters)], dtype=np.int64)


def _clustered_var(influence: np.ndarray, codes: np.ndarray, pos: np.ndarray) -> tuple[float | None, int]:
    """Obuchowski's variance of an AUROC (or of a weighted sum of AUROCs) over K clusters, and K: per
    cluster, the summed influence of its positives (a) and of its negatives (b); the variance is
    I_a / (I_a - 1) sum a² + I_b / (I_b - 1) sum b² + 2 K / (K - 1) sum a b, with I_a, I_b the clusters
    that hold a positive, a negative (with a cluster per trace: DeLong's variance exactly). None where
    fewer than two clusters hold a class."""
    inverse = np.unique(codes, return_inverse=True)[1]
    k = int(inverse.max()) + 1 if len(inverse) else 0
    a = np.bincount(inverse[pos], weights=influence[pos], minlength=k)
    b = np.bincount(inverse[~pos], weights=influence[~pos], minlength=k)
    i_a, i_b = len(np.unique(inverse[pos])), len(np.unique(inverse[~pos]))
    if min(i_a, i_b) < 2:
        return None, k
    var = i_a / (i_a - 1) * float((a ** 2).sum()) + i_b / (i_b - 1) * float((b ** 2).sum()) \
        + 2 * k / (k - 1) * float((a * b).sum())
    return max(var, 0.0), k


def _interval(value: float, se: float, m: int, n: int, level: float, df: int | None = None) -> tuple[float, float]:
    """The interval at `level` of an AUROC from m positives and n negatives with standard error `se`, on
    the logit scale (the value kept half a pair from 0 and 1), with the normal quantile or Student's t on
    `df` degrees of freedom. Where `se` is 0: every positive above every negative (or below), the interval
    of the same counts with one pair the other way round (AUROC 1 - 1/mn, standard error sqrt(2)/mn),
    so that a perfect sample's interval holds the one-pair-off sample's and not only values near 1
    (Hanley & McNeil's gave [0.90, 1] for 5 against 5, where one pair off gives [0.57, 1]); with every
    score tied, Hanley & McNeil's."""
    q = float(norm.ppf(0.5 + level / 2)) if df is None else float(student_t.ppf(0.5 + level / 2, max(df, 1)))
    pairs = m * n
    if se == 0 and value in (0.0, 1.0):
        kept, se = (1 - 1 / pairs if value == 1.0 else 1 / pairs), math.sqrt(2) / pairs
    elif se == 0:
        return auroc_interval(value, m, n, q)
    else:
        kept = min(max(value, 0.5 / pairs), 1 - 0.5 / pairs)
    half = q * se / (kept * (1 - kept))
    return min(value, float(expit(logit(kept) - half))), max(value, float(expit(logit(kept) + half)))


def auroc_within(scores: np.ndarray, wrong: np.ndarray, models: np.ndarray, min_per_class: int = 1,
                 clusters: Sequence[Hashable | None] | None = None,
                 level: float = 0.95) -> tuple[float | None, dict, tuple[float, float] | None]:
    """Per model AUROC, and the within-model AUROC: the share of (wrong, correct) pairs of one
    model that the score orders right, pooled over models (sum of U over sum of n_wrong * n_correct);
    None unless the models with both kinds hold min_per_class wrong and min_per_class right traces.
    Its interval at `level` (None without a value): the pairs' weighted sum of each model's traces'
    influence (`_influence`), its variance over `clusters` (as auroc_delong's, Student's t on K - 1
    degrees of freedom; without them, each trace its own and the normal quantile), on the logit scale."""
    wrong = np.asarray(wrong, dtype=bool)  # 0/1 would index, not mask
    per, u_sum, pairs = {}, 0.0, 0
    influence = np.zeros(len(scores))
    for m in sorted(set(models)):
        sel = (models == m) & np.isfinite(scores)
        n_w, n_c = int((wrong & sel).sum()), int((~wrong & sel).sum())
        if n_w == 0 or n_c == 0:
            continue
        a, own = _influence(scores[sel], wrong[sel])
        per[m] = {"auroc": a, "n_wrong": n_w, "n_correct": n_c}
        u_sum += a * n_w * n_c
        pairs += n_w * n_c
        influence[sel] = own * n_w * n_c
    n_wrong, n_right = sum(p["n_wrong"] for p in per.values()), sum(p["n_correct"] for p in per.values())
    if min(n_wrong, n_right) < min_per_class or not pairs:  # tts_knowledge: 20 pairs, 8 right answers over 5 models
        return None, per, None
    value = u_sum / pairs
    codes = _cluster_codes(clusters if clusters is not None else [None] * len(scores))
    used = np.isin(models, list(per)) & np.isfinite(scores)
    var, k = _clustered_var(influence[used] / pairs, codes[used], wrong[used])
    if var is None:
        return value, per, (0.0, 1.0)
    return value, per, _interval(value, math.sqrt(var), n_wrong, n_right, level, None if clusters is None else k - 1)


def _level_auroc(wrong: np.ndarray, right: np.ndarray) -> float:
    """AUROC of scoring each trace by its level's share wrong, from the counts of wrong and right
    traces per level (ties between levels of one share count one half)."""
    share = wrong / (wrong + right)
    _, inv = np.unique(share, return_inverse=True)
    w, r = np.bincount(inv, weights=wrong), np.bincount(inv, weights=right)
    below = np.cumsum(r) - r  # right traces of a lower share
    return float(((w * below).sum() + 0.5 * (w * r).sum()) / (wrong.sum() * right.sum()))


def factor_auroc(graded: Sequence[Mapping], wrong: np.ndarray, by: str, seed: int, permutations: int) -> dict | None:
    """How well a design factor alone tells wrong from right: the AUROC of each graded trace's
    level's share of wrong answers (traces without a level read as one more level), in-sample, so
    beside what the same levels give the grades shuffled among the same traces (`chance`: the mean
    over `permutations` seeded shuffles; `p`: the share of them at least as high, one added to both
    counts). Many small levels give a high AUROC to any grades: chance says how high. None with
    fewer than two levels, one class only or no shuffles."""
    levels = np.array([str(r.get(by)) for r in graded])
    if len(set(levels)) < 2 or wrong.all() or not wrong.any() or permutations < 1:
        return None
    _, inv = np.unique(levels, return_inverse=True)
    n_wrong = np.bincount(inv, weights=wrong.astype(np.float64))
    sizes = np.bincount(inv).astype(np.int64)
    value = _level_auroc(n_wrong, sizes - n_wrong)
    draws = np.random.default_rng(seed).multivariate_hypergeometric(sizes, int(wrong.sum()), size=permutations)
    null = np.array([_level_auroc(d.astype(np.float64), (sizes - d).astype(np.float64)) for d in draws])
    return {"auroc": value, "chance": float(null.mean()),
            "p": float(((null >= value - 1e-12).sum() + 1) / (permutations + 1))}
