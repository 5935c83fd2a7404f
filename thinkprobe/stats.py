"""Variance statistics over a run (spec section 1, step 9): the `profile -> stats` stage.

For each of the 19 indicators and the 5 dimensions, a Kruskal-Wallis test grouped by model and,
separately, by domain, with epsilon-squared = H / (n - 1), the ratio eps2(model) / eps2(domain),
Holm-corrected p-values over the whole family of tests run, and bootstrap confidence intervals for
the model profiles. Reads indicators.csv and profile.csv; writes stats.json and stats.csv.
"""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import kruskal

from .indicators import DIMENSIONS, INDICATORS
from .outputs import INDICATORS_TABLE, PROFILE_TABLE, STATS_CSV, STATS_JSON, read_table

__all__ = ["MIN_GROUP", "ALPHA", "BOOTSTRAP_RESAMPLES", "GROUPINGS", "compute_stats", "write_stats", "holm"]

# A group needs at least this many traces to enter a test: with one trace a group has no spread of
# its own, and Kruskal-Wallis would read that single value as the whole group. Smaller groups are
# listed under "too_few" for their grouping instead of being dropped without a word.
MIN_GROUP = 2
ALPHA = 0.05  # significance level applied to the Holm-corrected p-values
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
CI_LEVEL = 0.95
GROUPINGS: tuple[str, ...] = ("model", "domain")
DIMENSION_OF: dict[str, str] = {name: dim for dim, names in DIMENSIONS.items() for name in names}

NOT_TESTABLE, CONSTANT, TESTED = "not testable", "constant", "ok"


def _round(x: float | None) -> float | None:
    """Six significant digits, so that the bytes of stats.json do not depend on float noise."""
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.6g}")


def _as_float(text: str | None) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def load_table(run_dir: str | Path) -> list[dict]:
    """One row per trace: trace_id, model, domain, the 19 indicators and the 5 dimensions as floats."""
    run_dir = Path(run_dir)
    profile = {r["trace_id"]: r for r in read_table(run_dir, PROFILE_TABLE)}
    rows = []
    for r in read_table(run_dir, INDICATORS_TABLE):
        p = profile.get(r["trace_id"], {})
        row = {"trace_id": r["trace_id"], "model": r["model"], "domain": r["domain"]}
        row.update({name: _as_float(r.get(name)) for name in INDICATORS})
        row.update({dim: _as_float(p.get(dim)) for dim in DIMENSIONS})
        rows.append(row)
    return rows


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order.

    The i-th smallest of m p-values (0-based) is multiplied by (m - i), then made monotone.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _groups(rows: Sequence[Mapping], by: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[by]] = counts.get(r[by], 0) + 1
    return dict(sorted(counts.items()))


def kruskal_test(values: Sequence[float], labels: Sequence[str], min_group: int = MIN_GROUP) -> dict:
    """Kruskal-Wallis H, p and eps2 = H / (n - 1) of `values` grouped by `labels`.

    Groups under `min_group` traces and non-finite values stay out of the test and are named in the
    result; fewer than two groups left, or one value everywhere, give a status and a reason, not NaN.
    """
    groups: dict[str, list[float]] = {}
    missing = 0
    for value, label in zip(values, labels):
        if math.isfinite(value):
            groups.setdefault(label, []).append(float(value))
        else:
            missing += 1
    too_few = sorted(g for g, v in groups.items() if len(v) < min_group)
    kept = {g: v for g, v in sorted(groups.items()) if len(v) >= min_group}
    n = sum(len(v) for v in kept.values())
    out = {"status": TESTED, "k": len(kept), "n": n, "too_few": too_few, "H": None, "p": None, "eps2": None}
    if missing:
        out["missing"] = missing
    if len(kept) < 2:
        out["status"] = NOT_TESTABLE
        out["reason"] = (f"{len(kept)} group(s) with at least {min_group} traces; Kruskal-Wallis needs 2"
                         + (f" ({len(too_few)} group(s) too small)" if too_few else ""))
        return out
    pooled = [x for v in kept.values() for x in v]
    if max(pooled) == min(pooled):
        out["status"], out["reason"] = CONSTANT, "every trace has the same value"
        return out
    h, p = kruskal(*kept.values())
    if not math.isfinite(h):  # scipy's guard for all-tied data, kept in case it changes form
        out["status"], out["reason"] = CONSTANT, "every trace has the same rank"
        return out
    out.update(H=float(h), p=float(p), eps2=float(h) / (n - 1))
    return out


def bootstrap_model_profiles(rows: Sequence[Mapping], resamples: int = BOOTSTRAP_RESAMPLES,
                             seed: int = BOOTSTRAP_SEED, level: float = CI_LEVEL) -> list[dict]:
    """Per model, the mean of each dimension with a percentile bootstrap interval.

    One generator, models in sorted order, the same resampled traces for all five dimensions of a
    model: the same run always gives the same intervals.
    """
    rng = np.random.default_rng(seed)
    dims = list(DIMENSIONS)
    out = []
    for model in _groups(rows, "model"):
        values = np.array([[r[d] for d in dims] for r in rows if r["model"] == model], dtype=np.float64)
        means = values.mean(axis=0)
        entry = {"model": model, "n": len(values), "dimensions": {}}
        if len(values) >= MIN_GROUP:
            draws = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
            tail = 100 * (1 - level) / 2
            low, high = np.percentile(draws, [tail, 100 - tail], axis=0)
        else:
            low = high = [None] * len(dims)
            entry["note"] = f"fewer than {MIN_GROUP} traces: no interval"
        for j, dim in enumerate(dims):
            entry["dimensions"][dim] = {"mean": _round(float(means[j])),
                                        "ci_low": _round(low[j]), "ci_high": _round(high[j])}
        out.append(entry)
    return out


def compute_stats(run_dir: str | Path) -> dict:
    """All statistics of a run as plain data (nothing written)."""
    rows = load_table(run_dir)
    variables = [(name, "indicator", DIMENSION_OF[name]) for name in INDICATORS]
    variables += [(dim, "dimension", dim) for dim in DIMENSIONS]

    results = []
    for name, kind, dim in variables:
        values = [r[name] for r in rows]
        entry = {"variable": name, "kind": kind, "dimension": dim}
        for by in GROUPINGS:
            entry[by] = kruskal_test(values, [r[by] for r in rows])
        results.append(entry)

    # One family: every test that ran, over both groupings and all variables.
    family = [(e, by) for e in results for by in GROUPINGS if e[by]["status"] == TESTED]
    for (e, by), p_holm in zip(family, holm([e[by]["p"] for e, by in family])):
        e[by]["p_holm"] = p_holm
        e[by]["significant"] = p_holm < ALPHA

    for e in results:
        em, ed = e["model"]["eps2"], e["domain"]["eps2"]
        e["ratio"] = None
        if em is None or ed is None:
            e["ratio_note"] = "a grouping was not tested"
        elif ed <= 0:
            e["ratio_note"] = "eps2(domain) is 0"
        else:
            e["ratio"] = em / ed
        for by in GROUPINGS:
            for key in ("H", "p", "eps2", "p_holm"):
                if key in e[by]:
                    e[by][key] = _round(e[by][key])
        e["ratio"] = _round(e["ratio"])

    return {
        "n_traces": len(rows),
        "settings": {"min_group": MIN_GROUP, "alpha": ALPHA, "correction": "holm", "family_size": len(family),
                     "effect_size": "eps2 = H / (n - 1)", "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
                     "bootstrap_seed": BOOTSTRAP_SEED, "ci_level": CI_LEVEL},
        "groupings": {by: {"groups": _groups(rows, by),
                           "too_few": sorted(g for g, c in _groups(rows, by).items() if c < MIN_GROUP)}
                      for by in GROUPINGS},
        "variables": results,
        "model_profiles": bootstrap_model_profiles(rows),
    }


CSV_COLUMNS: tuple[str, ...] = (
    "variable", "kind", "dimension",
    *(f"{col}_{by}" for by in GROUPINGS for col in ("status", "k", "n", "H", "p", "p_holm", "significant", "eps2")),
    "ratio",
)


def stats_csv(stats: Mapping) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for e in stats["variables"]:
        row = {"variable": e["variable"], "kind": e["kind"], "dimension": e["dimension"], "ratio": e["ratio"]}
        for by in GROUPINGS:
            for col in ("status", "k", "n", "H", "p", "p_holm", "significant", "eps2"):
                row[f"{col}_{by}"] = e[by].get(col)
        w.writerow(["" if row[c] is None else row[c] for c in CSV_COLUMNS])
    return buf.getvalue()


def write_stats(run_dir: str | Path) -> dict:
    """compute_stats, then stats.json and stats.csv in the run folder; returns the statistics."""
    run_dir = Path(run_dir)
    stats = compute_stats(run_dir)
    (run_dir / STATS_JSON).write_text(json.dumps(stats, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (run_dir / STATS_CSV).write_text(stats_csv(stats), encoding="utf-8")
    return stats
