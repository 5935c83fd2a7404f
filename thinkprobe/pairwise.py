"""Which models differ from which (the `stats` stage, after the Kruskal-Wallis test by model): for every
pair of models with stats.min_group traces or more and every indicator and dimension, a two-sided
Mann-Whitney U test and the probability of superiority P(a > b), the chance that a random trace of
model a has the higher value than a random trace of model b (ties count one half; 0.5 = no difference;
Cliff's delta is 2 P - 1), with its Hanley & McNeil interval at stats.ci_level. Once on the raw values
and once on what log tokens does not explain (the whole-run length residuals of thinkprobe.stats).

Holm's correction runs over four families, each the pairs of every variable of one kind: dimensions raw,
dimensions length-controlled, indicators raw, indicators length-controlled. The tests are unpaired (a
paired design, the same questions for every model, is not used) and a pair's difference mixes in the
domains where the two models answered different ones (stats.json's crossing says where).
thinkprobe.stats.write_stats writes the rows to pairwise.csv and pairwise.parquet (PAIRWISE_TABLE) and the
rest (method, models, family sizes) to stats.json.
"""
from __future__ import annotations

from itertools import combinations
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import mannwhitneyu, norm

from .auroc import auroc_interval
from .config import StatsSettings
from .multiple_testing import holm
from .outputs import PAIRWISE_CSV, PAIRWISE_PARQUET, Table
from .statuses import CONSTANT, NOT_TESTABLE, TESTED

__all__ = ["PAIRWISE_TABLE", "METHOD", "pairwise_models", "pair_test", "pairwise_rows"]

METHOD = ("two-sided Mann-Whitney U per pair of models with min_group traces or more; p_superiority = U / (n_a n_b), "
          "the chance a random trace of model_a has the higher value (ties one half), with its Hanley & McNeil "
          "interval at ci_level; Holm over each of four families (dimensions / indicators, raw / length-controlled); "
          "unpaired, not stratified by domain")

PAIRWISE_TABLE = Table(
    PAIRWISE_CSV,
    ("variable", "kind", "length_controlled", "model_a", "model_b", "status", "n_a", "n_b", "median_a", "median_b",
     "p_superiority", "ci_low", "ci_high", "cliffs_delta", "U", "p", "p_holm", "significant"),
    {"variable": "str", "kind": "str", "length_controlled": "int", "model_a": "str", "model_b": "str", "status": "str",
     "n_a": "int", "n_b": "int", "median_a": "float", "median_b": "float", "p_superiority": "float",
     "ci_low": "float", "ci_high": "float", "cliffs_delta": "float", "U": "float", "p": "float", "p_holm": "float",
     "significant": "int"},
    parquet=True)
assert PAIRWISE_TABLE.parquet_name == PAIRWISE_PARQUET


def pair_test(a: np.ndarray, b: np.ndarray, z: float) -> dict:
    """One pair: the Mann-Whitney test of a against b (finite values only) and P(a > b) with its interval."""
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    out = {"status": TESTED, "n_a": len(a), "n_b": len(b),
           "median_a": float(np.median(a)) if len(a) else None, "median_b": float(np.median(b)) if len(b) else None,
           "p_superiority": None, "ci_low": None, "ci_high": None, "cliffs_delta": None, "U": None, "p": None,
           "p_holm": None, "significant": None}
    if not len(a) or not len(b):
        return {**out, "status": NOT_TESTABLE}
    if np.all(a == a[0]) and np.all(b == a[0]):  # one value for every trace of both: nothing to rank
        return {**out, "status": CONSTANT}
    res = mannwhitneyu(a, b, alternative="two-sided")
    share = float(res.statistic) / (len(a) * len(b))
    low, high = auroc_interval(share, len(a), len(b), z)
    return {**out, "p_superiority": share, "ci_low": low, "ci_high": high, "cliffs_delta": 2 * share - 1,
            "U": float(res.statistic), "p": float(res.pvalue)}


def pairwise_models(variables: Sequence[tuple[str, str]], columns: Sequence[tuple[Sequence[float], object]],
                    models: Sequence[str], cfg: StatsSettings) -> dict:
    """Every pair of models on every variable. `variables`: (name, kind) per variable; `columns`: its
    values and length residuals per trace (residuals None where length is not controlled: a mostly tied
    variable); `models`: each trace's model. Returns {"method", "models",
    "family_size", "rows"} with rows in PAIRWISE_TABLE's columns, pairs in sorted model order."""
    labels = np.asarray(models, dtype=object)
    counts = {m: int((labels == m).sum()) for m in sorted(set(models))}
    kept = [m for m, n in counts.items() if n >= cfg.min_group]
    where = {m: np.flatnonzero(labels == m) for m in kept}
    z = float(norm.ppf(0.5 + cfg.ci_level / 2))
    rows, families = [], {}
    for (name, kind), (values, resid) in zip(variables, columns):
        for lc, col in ((0, values), (1, resid)):
            x = None if col is None else np.asarray(col, dtype=np.float64)
            for a, b in combinations(kept, 2):
                test = (pair_test(x[where[a]], x[where[b]], z) if x is not None else
                        {**pair_test(np.empty(0), np.empty(0), z), "n_a": counts[a], "n_b": counts[b]})
                row = {"variable": name, "kind": kind, "length_controlled": lc, "model_a": a, "model_b": b, **test}
                rows.append(row)
                if row["status"] == TESTED:
                    families.setdefault(f"{kind}{'_length_controlled' if lc else ''}", []).append(row)
    for family in families.values():
        for row, adjusted in zip(family, holm([r["p"] for r in family])):
            row["p_holm"] = adjusted
            row["significant"] = int(adjusted < cfg.alpha)
    return {"method": METHOD, "models": kept, "too_few": sorted(set(counts) - set(kept)),
            "family_size": {k: len(v) for k, v in sorted(families.items())}, "rows": rows}


def pairwise_rows(stats: Mapping) -> list[dict]:
    """pairwise.csv's rows from compute_stats' result (stats.json keeps everything else of "pairwise")."""
    return list((stats.get("pairwise") or {}).get("rows") or [])
