"""Which models differ from which (the `stats` stage, after the Kruskal-Wallis test by model): for every
pair of models with stats.min_group traces or more and every indicator and dimension, the probability of
superiority P(a > b), the chance that a random trace of model a has the higher value than a random trace
of model b (ties count one half; 0.5 = no difference; Cliff's delta is 2 P - 1), with the Brunner-Munzel
test of P = 0.5 (scipy.stats.brunnermunzel's statistic, degrees of freedom and p, computed here from
placements; valid where the two models' spreads differ, which Mann-Whitney's is not) and the interval from
the same placement variance and t degrees of freedom, so that test and interval agree.
Where the variance is 0 (every trace of one model above every trace of the other) the p-value is
Mann-Whitney's and the interval Hanley & McNeil's (thinkprobe.auroc). Once on the raw values and once
on what log tokens does not explain (the whole-run length residuals of thinkprobe.stats).

A pair is significant only where the variable's Kruskal-Wallis test by model (the same one, raw or
length-controlled) is significant in stats' Holm family, and then where its p-value, Holm-corrected
over the variable's pairs, is under stats.alpha: the pairs never claim a difference the model test
does not. length_overlap says how far the two models' trace lengths overlap (the smaller of the two
models' shares of traces inside the other's 10-90% range of log tokens): where it is small, the
length-controlled comparison extrapolates a line fitted over the whole run. The tests are unpaired
(a paired design, the same questions for every model, is not used) and a pair's difference mixes in
the domains where the two models answered different ones (stats.json's crossing says where).
thinkprobe.stats.write_stats writes the rows to pairwise.csv and pairwise.parquet (PAIRWISE_TABLE) and
the rest (method, models) to stats.json.
"""
from __future__ import annotations

from itertools import combinations
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import mannwhitneyu, norm
from scipy.stats import t as student_t

from .auroc import auroc_interval
from .config import StatsSettings
from .multiple_testing import holm
from .outputs import PAIRWISE_CSV, PAIRWISE_PARQUET, Table
from .statuses import CONSTANT, NOT_TESTABLE, TESTED

__all__ = ["PAIRWISE_TABLE", "METHOD", "LENGTH_OVERLAP_MIN", "pairwise_models", "pair_test", "length_overlap",
           "model_length_overlap", "pairwise_rows"]

# Under this length_overlap the report marks a pair's length-controlled value as an extrapolation.
LENGTH_OVERLAP_MIN = 0.25

METHOD = ("per pair of models with min_group traces or more: p_superiority = P(a > b), the chance a random trace of "
          "model_a has the higher value (ties one half), with the two-sided Brunner-Munzel test of P = 0.5 and its "
          "t interval at ci_level from the same placement variance (where that variance is 0: Mann-Whitney's p and "
          "Hanley & McNeil's interval); p_holm: Holm over the variable's pairs; significant: p_holm under alpha and "
          "the variable's Kruskal-Wallis test by model (the same, raw or length-controlled) significant; "
          "length_overlap: the smaller of the two models' shares of traces inside the other's 10-90% range of log "
          "tokens; unpaired, not stratified by domain")

PAIRWISE_TABLE = Table(
    PAIRWISE_CSV,
    ("variable", "kind", "length_controlled", "model_a", "model_b", "status", "n_a", "n_b", "median_a", "median_b",
     "p_superiority", "ci_low", "ci_high", "cliffs_delta", "p", "p_holm", "significant", "length_overlap"),
    {"variable": "str", "kind": "str", "length_controlled": "int", "model_a": "str", "model_b": "str", "status": "str",
     "n_a": "int", "n_b": "int", "median_a": "float", "median_b": "float", "p_superiority": "float",
     "ci_low": "float", "ci_high": "float", "cliffs_delta": "float", "p": "float", "p_holm": "float",
     "significant": "int", "length_overlap": "float"},
    parquet=True)
assert PAIRWISE_TABLE.parquet_name == PAIRWISE_PARQUET


def pair_test(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> dict:
    """One pair (finite values only): P(a > b), its interval at `level` and the two-sided p-value of P = 0.5."""
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    n_a, n_b = len(a), len(b)
    out = {"status": TESTED, "n_a": n_a, "n_b": n_b,
           "median_a": float(np.median(a)) if n_a else None, "median_b": float(np.median(b)) if n_b else None,
           "p_superiority": None, "ci_low": None, "ci_high": None, "cliffs_delta": None, "p": None}
    if n_a < 2 or n_b < 2:
        return {**out, "status": NOT_TESTABLE}
    if np.all(a == a[0]) and np.all(b == a[0]):  # one value for every trace of both: nothing to rank
        return {**out, "status": CONSTANT}
    place_a, place_b = _placements(a, np.sort(b)), _placements(b, np.sort(a))
    share = float(place_a.mean()) / n_b
    var_a, var_b = n_a * np.var(place_a, ddof=1), n_b * np.var(place_b, ddof=1)
    if var_a + var_b > 0:
        # scipy.stats.brunnermunzel's statistic, degrees of freedom and p (tests match them), from the placements
        # it computes by three rankings of the pair: searching sorted values is 7 times faster over a large run
        se = float(np.sqrt(var_a + var_b)) / (n_a * n_b)
        df = (var_a + var_b) ** 2 / (var_a ** 2 / (n_a - 1) + var_b ** 2 / (n_b - 1))
        half = float(student_t.ppf(0.5 + level / 2, df)) * se
        low, high = max(0.0, share - half), min(1.0, share + half)
        p = float(min(1.0, 2 * student_t.sf(abs(share - 0.5) / se, df)))
    else:  # every trace of one model above every trace of the other: no placement variance
        low, high = auroc_interval(share, n_a, n_b, float(norm.ppf(0.5 + level / 2)))
        p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return {**out, "p_superiority": share, "ci_low": low, "ci_high": high, "cliffs_delta": 2 * share - 1, "p": p}


def _placements(x: np.ndarray, other_sorted: np.ndarray) -> np.ndarray:
    """Per value of x: how many of the other sample lie below it, ties counting one half."""
    below = np.searchsorted(other_sorted, x, side="left")
    return below + 0.5 * (np.searchsorted(other_sorted, x, side="right") - below)


def _inside(x: np.ndarray, y: np.ndarray) -> float:
    """The share of x inside y's 10-90% range."""
    lo, hi = np.percentile(y, [10, 90])
    return float(np.mean((x >= lo) & (x <= hi)))


def length_overlap(log_a: np.ndarray, log_b: np.ndarray) -> float | None:
    """The smaller of the two shares of traces (log tokens) inside the other model's 10-90% range."""
    a, b = log_a[np.isfinite(log_a)], log_b[np.isfinite(log_b)]
    if not len(a) or not len(b):
        return None
    return min(_inside(a, b), _inside(b, a))


def model_length_overlap(models: Sequence[str], log_tokens: Sequence[float], min_group: int) -> dict[str, float]:
    """Per model with min_group traces or more (and other models beside it): the share of its traces (log
    tokens) inside the 10-90% range of all the other models' traces. Small: its length-controlled values
    rest on the run's length line beyond the lengths it wrote."""
    labels, logs = np.asarray(models, dtype=object), np.asarray(log_tokens, dtype=np.float64)
    ok = np.isfinite(logs)
    out = {}
    for m in sorted(set(models)):
        mine, rest = ok & (labels == m), ok & (labels != m)
        if mine.sum() >= min_group and rest.any():
            out[m] = _inside(logs[mine], logs[rest])
    return out


def pairwise_models(variables: Sequence[tuple[str, str]], columns: Sequence[tuple[Sequence[float], object]],
                    models: Sequence[str], log_tokens: Sequence[float], model_significant: Mapping[tuple[str, int], bool],
                    cfg: StatsSettings) -> dict:
    """Every pair of models on every variable. `variables`: (name, kind) per variable; `columns`: its
    values and length residuals per trace (residuals None where length is not controlled: a mostly tied
    variable); `models`, `log_tokens`: each trace's; `model_significant`: whether the variable's
    Kruskal-Wallis test by model is significant, by (name, 0 raw / 1 length-controlled). Returns
    {"method", "models", "too_few", "rows"}, rows in PAIRWISE_TABLE's columns, pairs in sorted model order."""
    labels = np.asarray(models, dtype=object)
    counts = {m: int((labels == m).sum()) for m in sorted(set(models))}
    kept = [m for m, n in counts.items() if n >= cfg.min_group]
    where = {m: np.flatnonzero(labels == m) for m in kept}
    logs = np.asarray(log_tokens, dtype=np.float64)
    overlap = {(a, b): length_overlap(logs[where[a]], logs[where[b]]) for a, b in combinations(kept, 2)}
    rows = []
    for (name, kind), (values, resid) in zip(variables, columns):
        for lc, col in ((0, values), (1, resid)):
            x = None if col is None else np.asarray(col, dtype=np.float64)
            by_model = {m: np.sort(x[where[m]]) for m in kept} if x is not None else {}  # sorted once, not per pair
            family = []
            for a, b in combinations(kept, 2):
                test = (pair_test(by_model[a], by_model[b], cfg.ci_level) if x is not None else
                        {**pair_test(np.empty(0), np.empty(0)), "n_a": counts[a], "n_b": counts[b]})
                row = {"variable": name, "kind": kind, "length_controlled": lc, "model_a": a, "model_b": b, **test,
                       "p_holm": None, "significant": None, "length_overlap": overlap[a, b]}
                rows.append(row)
                if row["status"] == TESTED:
                    family.append(row)
            for row, adjusted in zip(family, holm([r["p"] for r in family])):
                row["p_holm"] = adjusted
                row["significant"] = int(adjusted < cfg.alpha and bool(model_significant.get((name, lc))))
    return {"method": METHOD, "models": kept, "too_few": sorted(set(counts) - set(kept)), "rows": rows}


def pairwise_rows(stats: Mapping) -> list[dict]:
    """pairwise.csv's rows from compute_stats' result (stats.json keeps everything else of "pairwise")."""
    return list((stats.get("pairwise") or {}).get("rows") or [])
