"""Indicator agreement: how close the 19 indicators and the 5D profile computed from predicted
Thought Graphs are to those computed from gold graphs of the same traces. Both sets of graphs go
through the same path, `profile --graph-source input` (their own units and edges, embedded by the
run's encoder), and the profile of both is z-scored against the gold graphs' norms. Per variable:
Spearman's rho across documents, its percentile bootstrap interval over documents, and the mean
absolute difference in units of the gold standard deviation. `thinkprobe eval-gold` reports it.
"""
from __future__ import annotations

import csv
import json
import math
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from scipy.stats import spearmanr

from .cognitive_profile import DIMENSION_NAMES, Normalizer, profile_row
from .indicators import INDICATORS
from .outputs import INDICATORS_TABLE

__all__ = ["profile_graphs", "indicator_agreement", "format_agreement", "model_identification", "AGREEMENT_RESAMPLES"]

AGREEMENT_RESAMPLES = 1000  # bootstrap resamples of the documents (seed 0)


def profile_graphs(docs: Sequence[Mapping], *, config: str | None = None, encoder: str | None = None,
                   device: str = "auto", precision: str | None = None,
                   cache_dir: str | None = None) -> tuple[dict[str, dict], list[dict]]:
    """Indicator rows by trace id of graphs that carry their own units and edges (ReasoningFlow
    documents), profiled as `thinkprobe profile --graph-source input` profiles them; and the
    errors.jsonl lines of those it could not profile (with their doc_id)."""
    from .engine import RunOptions, run_profile

    with tempfile.TemporaryDirectory(prefix="thinkprobe-agreement-") as out:
        run_profile(RunOptions(records=list(docs), out_dir=out, graph_source="input", config=config, encoder=encoder,
                               device=device, precision=precision, cache=cache_dir is not None, cache_dir=cache_dir,
                               progress=False))
        with open(Path(out) / INDICATORS_TABLE.name, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        errors = [json.loads(line) for line in (Path(out) / "errors.jsonl").read_text(encoding="utf-8").splitlines()]
    for e in errors:  # records in memory are named by their position
        e["doc_id"] = docs[e["record"]].get("doc_id") if isinstance(e.get("record"), int) else None
    return {r["trace_id"]: {name: float(r[name]) for name in INDICATORS} for r in rows}, errors


def _spearman(gold: np.ndarray, pred: np.ndarray) -> float | None:
    """rho across documents; None when the gold values do not vary (nothing to agree with), 0 when
    only the predicted ones do not (they carry no ranking of the documents)."""
    if len(gold) < 3 or np.ptp(gold) == 0:
        return None
    if np.ptp(pred) == 0:
        return 0.0
    rho = spearmanr(gold, pred).statistic
    return float(rho) if math.isfinite(rho) else None


def indicator_agreement(gold: Mapping[str, Mapping[str, float]], pred: Mapping[str, Mapping[str, float]],
                        resamples: int = AGREEMENT_RESAMPLES, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """Agreement per indicator and dimension between predicted and gold rows of the same documents
    (those present in both). Dimensions: the 5D profile of each, z-scored with norms fit on gold.
    A variable constant over the gold documents has no rho (None); one constant over the predicted
    documents only has rho 0 (it ranks nothing)."""
    ids = sorted(set(gold) & set(pred))
    norms = Normalizer().fit([gold[i] for i in ids])
    variables = [(name, "indicator") for name in INDICATORS] + [(dim, "dimension") for dim in DIMENSION_NAMES]
    value = {side: {i: {**rows[i], **profile_row(norms.z(rows[i]))} for i in ids} for side, rows in
             (("gold", gold), ("pred", pred))}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(ids), size=(resamples, len(ids))) if ids else np.zeros((0, 0), int)
    out = []
    for name, kind in variables:
        g = np.array([value["gold"][i][name] for i in ids], dtype=float)
        p = np.array([value["pred"][i][name] for i in ids], dtype=float)
        rho = _spearman(g, p)
        boot = [r for d in draws if (r := _spearman(g[d], p[d])) is not None] if rho is not None else []
        lo, hi = ((float(np.quantile(boot, (1 - level) / 2)), float(np.quantile(boot, (1 + level) / 2)))
                  if len(boot) >= resamples // 2 else (None, None))
        sd = float(np.std(g)) if len(g) else 0.0
        out.append({"variable": name, "kind": kind, "spearman": rho, "ci": [lo, hi],
                    "mean_abs_diff_sd": float(np.mean(np.abs(p - g)) / sd) if sd > 0 else None,
                    "gold_mean": float(np.mean(g)) if len(g) else None, "pred_mean": float(np.mean(p)) if len(p) else None})
    rhos = [r["spearman"] for r in out if r["kind"] == "indicator" and r["spearman"] is not None]
    return {"docs": len(ids), "resamples": resamples, "seed": seed, "ci_level": level,
            "median_spearman_indicators": float(np.median(rhos)) if rhos else None,
            "definition": "Spearman rho across documents between the value from the predicted graph and from the gold "
                          "graph (both profiled with --graph-source input; dimensions z-scored with the gold graphs' "
                          "norms; 0 when the predicted values are constant, none when the gold ones are), its "
                          "percentile bootstrap interval over documents, and the mean absolute difference divided by "
                          "the gold values' standard deviation (population)",
            "variables": out}


def format_agreement(result: Mapping[str, Any]) -> str:
    """The agreement as a table: per variable rho [interval], the gold and the predicted mean, and
    mean |pred - gold| / sd(gold)."""
    def num(x, digits=2):
        return "-" if x is None else f"{x:.{digits}f}"

    def mean(x):
        return "-" if x is None else f"{x:.3g}"

    level = int(round(100 * result["ci_level"]))
    lines = [f"indicator agreement with the gold graphs ({result['docs']} documents; Spearman rho [{level}% bootstrap, "
             f"{result['resamples']} resamples], the gold and predicted means, mean |pred - gold| / sd(gold)); median rho "
             f"over indicators {num(result['median_spearman_indicators'])}",
             f"{'variable':<26} {'rho':>6} {'interval':>15} {'gold mean':>10} {'our mean':>10} {'|d|/sd':>7}"]
    skipped = result.get("skipped") or {}
    for side, errors in skipped.items():
        for e in errors:
            lines.insert(1, f"  left out: the {side} graph of {e.get('doc_id')}: {e['field']}: {e['reason']}")
    for r in result["variables"]:
        lo, hi = r["ci"]
        interval = f"[{num(lo)}, {num(hi)}]" if lo is not None else "-"
        lines.append(f"{r['variable']:<26} {num(r['spearman']):>6} {interval:>15} {mean(r['gold_mean']):>10} "
                     f"{mean(r['pred_mean']):>10} {num(r['mean_abs_diff_sd']):>7}")
    return "\n".join(lines)


def model_identification(rows: Sequence[Mapping[str, Any]], key: str = "model", folds: int = 5,
                         seed: int = 0) -> dict[str, Any]:
    """How well the 19 indicators tell the `key` groups apart: a nearest-centroid classifier on
    z-scored indicators (z-scores fit on the training folds), stratified k-fold cross-validation
    (seeded); accuracy per fold, its mean, and chance (the largest group's share)."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import NearestCentroid
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.array([[float(r[name]) for name in INDICATORS] for r in rows])
    y = np.array([r[key] for r in rows])
    groups, counts = np.unique(y, return_counts=True)
    k = min(folds, int(counts.min())) if len(counts) else 0
    if len(groups) < 2 or k < 2:
        return {"status": "not testable", "reason": f"needs 2 {key}s with at least 2 traces each", "n": len(rows)}
    accuracy = []
    for train, test in StratifiedKFold(k, shuffle=True, random_state=seed).split(x, y):
        model = make_pipeline(StandardScaler(), NearestCentroid()).fit(x[train], y[train])
        accuracy.append(float(np.mean(model.predict(x[test]) == y[test])))
    return {"status": "tested", "n": len(rows), "groups": {str(g): int(c) for g, c in zip(groups, counts)},
            "folds": k, "seed": seed, "accuracy": float(np.mean(accuracy)), "fold_accuracy": accuracy,
            "accuracy_sd": float(np.std(accuracy)), "chance": float(counts.max() / counts.sum())}
