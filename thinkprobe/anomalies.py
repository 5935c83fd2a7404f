"""Unusual traces (anomalies.csv): how far each trace's indicators lie from its own model's traces,
which indicators push it out, and its failure risk (thinkprobe.risk).

Per model with at least `anomaly_min_traces` traces (stats section of the config):
  robust z    (value - model median) / (1.4826 x median absolute deviation) per indicator; where
              TIED_SHARE (40%) of the model's traces or more share one value (a rare type's indicator,
              mostly 0: the MAD is 0, or the gap from that value to the rest), the standard deviation
              instead (a single non-zero trace of n then sits near sqrt(n) rather than at an
              arbitrarily large z); an indicator constant over the model gives 0
  anomaly     sqrt(z' P z): the Mahalanobis distance of the robust z from 0, P the inverse of a
              Ledoit-Wolf shrinkage covariance (scikit-learn) fitted to the robust z clipped to
              [-3, 3], so a few extreme traces neither hide themselves nor inflate the others
  rank        1 = the model's most unusual trace
  drivers     up to `anomaly_drivers` indicators with |robust z| >= `anomaly_driver_z`, largest
              first, signed ("redundancy_ratio +4.1; critique_ratio -2.3"); empty where the distance comes
              from how the indicators combine, none of them that far out alone
A model with fewer traces gets empty anomaly cells and `anomaly_reason` says why.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from .config import StatsSettings
from .indicators import INDICATORS
from .outputs import ANOMALIES_TABLE, INDICATORS_TABLE, read_table, write_table
from .records import iter_graph_records

__all__ = ["robust_z", "anomaly_scores", "anomaly_rows", "write_anomalies", "read_anomalies"]

_CLIP = 3.0
TIED_SHARE = 0.4  # an indicator with this share of a model's traces on one value is scaled by its standard deviation
_MAD_NORMAL = 1.4826  # MAD of a normal distribution -> its standard deviation


def robust_z(values: np.ndarray) -> np.ndarray:
    """Column-wise robust z-scores of an (n, p) array (module docstring); NaN counts as the median."""
    x = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(x)
    med = np.array([np.median(col[ok]) if ok.any() else 0.0 for col, ok in zip(x.T, finite.T)])
    x = np.where(finite, x, med)
    dev = np.abs(x - med)
    scale = _MAD_NORMAL * np.median(dev, axis=0)
    fallback = x.std(axis=0, ddof=1) if len(x) > 1 else np.zeros(x.shape[1])
    # TIED_SHARE of the traces or more on one value: the MAD is 0, or the median sits beside that value and
    # the MAD is the gap to the rest (DeepSeek-R1's initial_diversity, 51 of 102 at 0: robust z up to 38)
    tied = np.array([np.unique(col, return_counts=True)[1].max() >= TIED_SHARE * len(col) if len(col) else False
                     for col in x.T], dtype=bool)
    scale = np.where((scale > 0) & ~tied, scale, fallback)
    return np.where(scale > 0, (x - med) / np.where(scale > 0, scale, 1.0), 0.0)


def anomaly_scores(z: np.ndarray) -> np.ndarray:
    """Robust Mahalanobis distance of each row of robust z from 0 (Ledoit-Wolf precision of the
    clipped z; module docstring)."""
    from sklearn.covariance import LedoitWolf

    live = np.ptp(z, axis=0) > 0
    if not live.any():
        return np.zeros(len(z))
    z = z[:, live]
    precision = LedoitWolf(assume_centered=True).fit(np.clip(z, -_CLIP, _CLIP)).precision_
    d2 = np.einsum("ij,jk,ik->i", z, precision, z)
    return np.sqrt(np.maximum(d2, 0.0))


def _drivers(z_row: np.ndarray, names: Sequence[str], k: int, threshold: float) -> str:
    order = np.argsort(-np.abs(z_row), kind="stable")
    picked = [j for j in order[:k] if abs(z_row[j]) >= threshold]
    return "; ".join(f"{names[j]} {z_row[j]:+.1f}" for j in picked)


def anomaly_rows(rows: Sequence[Mapping], settings: StatsSettings,
                 risks: Mapping[str, float | None] | None = None,
                 in_sample: Mapping[str, bool] | None = None) -> list[dict]:
    """anomalies.csv rows, in the order of `rows` (indicators.csv rows: trace_id, model, domain,
    source_id and the 19 indicators); `risks`: failure_risk by trace id; `in_sample`: whether the
    failure-risk model was trained on the trace, by trace id (failure_risk_in_sample 1 / 0; empty
    where the trace has no failure_risk)."""
    risks, in_sample = risks or {}, in_sample or {}
    out = [{"trace_id": r["trace_id"], "model": r["model"], "domain": r.get("domain"), "group": r.get("group"),
            "source_id": r.get("source_id"),
            "anomaly": None, "anomaly_rank": None, "anomaly_reason": None, "drivers": None,
            "failure_risk": risks.get(r["trace_id"]),
            "failure_risk_in_sample": (None if risks.get(r["trace_id"]) is None
                                       else int(bool(in_sample.get(r["trace_id"]))))} for r in rows]
    by_model: dict[str, list[int]] = {}
    for k, r in enumerate(rows):
        by_model.setdefault(r["model"], []).append(k)
    for model, members in sorted(by_model.items()):
        if len(members) < settings.anomaly_min_traces:
            reason = (f"model {model} has {len(members)} trace{'s' if len(members) != 1 else ''}; "
                      f"anomaly scores need {settings.anomaly_min_traces} (stats.anomaly_min_traces)")
            for k in members:
                out[k]["anomaly_reason"] = reason
            continue
        x = np.array([[_number(rows[k].get(name)) for name in INDICATORS] for k in members], dtype=np.float64)
        z = robust_z(x)
        scores = anomaly_scores(z)
        order = sorted(range(len(members)), key=lambda i: (-scores[i], i))
        for rank, i in enumerate(order, start=1):
            k = members[i]
            out[k].update(anomaly=float(scores[i]), anomaly_rank=rank,
                          drivers=_drivers(z[i], INDICATORS, settings.anomaly_drivers, settings.anomaly_driver_z))
    return out


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _risks(run_dir: Path, risks: Mapping[str, float] | None) -> tuple[Mapping[str, float], dict[str, bool]]:
    """failure_risk of every graph record of the run (`risks` where the run computed them, else one
    record at a time as a run computes it, runner.finish_line: the same floats; empty when no model is
    installed), and which records the failure-risk model was trained on: one pass over graphs.jsonl."""
    from .risk import failure_risk, shipped_model, trace_key, training_keys

    trained = training_keys()
    computed, in_sample = {}, {}
    if risks is not None and not trained:
        return risks, in_sample
    model = shipped_model() if risks is None else None
    for rec in iter_graph_records(run_dir, missing_ok=True):
        if model is not None:
            computed[rec["trace_id"]] = failure_risk(rec, model)  # None for a reasoning too short for the model
        if trained:
            in_sample[rec["trace_id"]] = trace_key(rec) in trained
    return (computed if risks is None else risks), in_sample


def write_anomalies(run_dir: str | Path, settings: StatsSettings | None = None,
                    risks: Mapping[str, float] | None = None, in_sample: Mapping[str, bool] | None = None) -> list[dict]:
    """anomalies.csv (and its Parquet twin) of a run folder from its indicators.csv and the failure
    risks the run computed per trace (`risks`) with whether the model was trained on each
    (`in_sample`), or else from graphs.jsonl."""
    from .stats import stats_settings

    run_dir = Path(run_dir)
    if risks is None or in_sample is None:
        risks, in_sample = _risks(run_dir, risks)
    rows = anomaly_rows(read_table(run_dir, INDICATORS_TABLE), settings or stats_settings(run_dir), risks, in_sample)
    write_table(run_dir, ANOMALIES_TABLE, rows)
    return rows


def _header(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as f:
        return next(csv.reader(f), [])


def read_anomalies(run_dir: str | Path) -> list[dict]:
    """anomalies.csv as typed rows (floats, ints, None for empty cells); written first for a run
    made before the table existed."""
    run_dir = Path(run_dir)
    path = run_dir / ANOMALIES_TABLE.name
    if not path.exists() or not set(ANOMALIES_TABLE.columns) <= set(_header(path)):
        write_anomalies(run_dir)  # a run made before the table, or before one of its columns
    types = ANOMALIES_TABLE.types
    return [{c: (None if r[c] == "" else float(r[c]) if types[c] == "float" else int(r[c]) if types[c] == "int"
                 else r[c]) for c in ANOMALIES_TABLE.columns} for r in read_table(run_dir, ANOMALIES_TABLE)]
