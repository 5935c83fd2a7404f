"""Variance statistics over a run (spec section 1, step 9): the `profile -> stats` stage.

For each of the 19 indicators and the 5 dimensions: a Kruskal-Wallis test grouped by model and,
separately, by domain (and by group, the third design factor, over the traces that have one), with epsilon-squared = H / (n - 1), on the raw values and on what log tokens
does not explain (length-controlled); the eps2 that random group labels give ((k - 1) / (n - 1)) and the
chance-corrected eps2; the model/domain ratio; the split-half reliability of the model means and,
when a model answered one question several times, the intraclass correlation; and, when answers are
graded, how well each indicator flags a wrong answer. Holm-corrected p-values, bootstrap intervals
for the model profiles and (thinkprobe.effect_intervals) for the corrected eps2 and the ratios. Reads indicators.csv, profile.csv (and graphs.jsonl, redundancy.csv and
run.json when present); writes stats.json, stats.csv and stats.parquet. Settings: the `stats` section of the config.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import kruskal

from .auroc import auroc, auroc_delong, auroc_interval, auroc_se, auroc_within
from .config import StatsSettings
from .crossing import factor_crossing, model_crossing
from .effect_intervals import CSV_FIELDS as INTERVAL_FIELDS, METHOD as INTERVAL_METHOD, add_effect_intervals
from .indicators import DIMENSIONS, INDICATORS
from .multiple_testing import holm
from .outcome import outcome_validity
from .outputs import (INDICATORS_TABLE, PROFILE_TABLE, REDUNDANCY_TABLE, RUN_JSON, STATS_CSV, STATS_JSON, STATS_PARQUET, Table,
                      read_table, write_table)
from .pairwise import PAIRWISE_TABLE, model_length_overlap, pairwise_models, pairwise_rows
from .records import iter_graph_records
from .statuses import CONSTANT, NOT_TESTABLE, TESTED
from .tables import csv_text, write_atomic

__all__ = ["GROUPINGS", "UNNAMED", "level", "stats_settings", "compute_stats", "write_stats", "holm", "kruskal_test",
           "chance_eps2", "length_residuals", "split_half_reliability", "icc1", "auroc", "auroc_se", "auroc_interval", "outcome_validity",
           "load_table", "question_key", "STATS_TABLE", "stats_rows", "stats_csv"]

# "group" (a design factor beside model and domain) is tested only in runs where some trace has one,
# over those traces: a trace without a group is not put into a made-up one.
GROUPINGS: tuple[str, ...] = ("model", "domain", "group")
DIMENSION_OF: dict[str, str] = {name: dim for dim, names in DIMENSIONS.items() for name in names}


def stats_settings(run_dir: str | Path | None = None) -> StatsSettings:
    """The `stats` section a run recorded in its run.json over today's defaults (so `thinkprobe
    stats` on a run made with --config keeps that run's settings); the defaults without a run."""
    from .config import Config

    run_json = Path(run_dir) / RUN_JSON if run_dir is not None else None
    recorded = {}
    if run_json is not None and run_json.exists():
        recorded = dict((json.loads(run_json.read_text(encoding="utf-8")).get("config") or {}).get("stats") or {})
        for old in ("permutations", "permutation_seed", "chance_corrected"):  # keys of runs made before 2026-12-07
            recorded.pop(old, None)
    return Config.load(overrides={"stats": recorded}).stats


def _round(x: float | None) -> float | None:
    """Six significant digits, so that the bytes of stats.json do not depend on float noise."""
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.6g}")


def _round_all(obj):
    if isinstance(obj, float):
        return _round(obj)
    if isinstance(obj, dict):
        return {k: _round_all(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_round_all(v) for v in obj]
    return obj


def _as_float(text: str | None) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def _correctness(run_dir: Path) -> tuple[dict[str, dict], str | None]:
    """{trace_id: {"question", "correct"}} from graphs.jsonl, with redundancy.csv's Acc where the
    record has no label; and where the labels came from."""
    meta: dict[str, dict] = {}
    for rec in iter_graph_records(run_dir, missing_ok=True):
        meta[rec["trace_id"]] = {"question": rec.get("question"), "correct": rec.get("correct"),
                                 "answer_found": (bool(rec["redundancy"].get("final_answer"))
                                                  if isinstance(rec.get("redundancy"), dict) else None),
                                 "gold_not_asked": bool((rec.get("provenance") or {}).get("gold_not_asked"))}
    sources = {"graphs.jsonl correct"} if any(m["correct"] is not None for m in meta.values()) else set()
    if (run_dir / REDUNDANCY_TABLE.name).exists():
        for r in read_table(run_dir, REDUNDANCY_TABLE):
            acc = r.get("Acc", "")
            entry = meta.setdefault(r["trace_id"], {"question": None, "correct": None})
            if entry["correct"] is None and acc in ("0", "1"):
                entry["correct"] = acc == "1"
                entry["no_answer"] = acc == "0" and entry.get("answer_found") is False  # wrong: no answer found
                sources.add("redundancy.csv Acc")
    return meta, " + ".join(sorted(sources)) or None


def question_key(row: Mapping) -> tuple | None:
    """The question a row of `load_table` answered, whichever model gave the answer: (group, question), or
    None where unknown. The pairs compare models question by question and the outcome AUROCs' intervals
    take one question's answers as a cluster by it."""
    return None if row.get("question") is None else (row.get("group"), str(row["question"]))


def load_table(run_dir: str | Path, meta: Mapping[str, dict] | None = None) -> list[dict]:
    """One row per trace: trace_id, model, domain, group, source_id, tokens, question, correct, the 19
    indicators and the 5 dimensions as floats (group, source_id, question and correct are None when
    unknown; `meta` is
    _correctness's answer when the caller has it already)."""
    run_dir = Path(run_dir)
    profile = {r["trace_id"]: r for r in read_table(run_dir, PROFILE_TABLE)}
    if meta is None:
        meta, _ = _correctness(run_dir)
    rows = []
    for r in read_table(run_dir, INDICATORS_TABLE):
        p = profile.get(r["trace_id"], {})
        m = meta.get(r["trace_id"], {})
        row = {"trace_id": r["trace_id"], "model": r["model"], "domain": r["domain"], "group": r.get("group") or None,
               "source_id": r.get("source_id") or None,
               "tokens": _as_float(r.get("tokens")), "question": m.get("question"), "correct": m.get("correct"),
               "no_answer": bool(m.get("no_answer")),  # wrong because the matcher found no final answer
               "gold_not_asked": bool(m.get("gold_not_asked"))}  # the gold answers a question not asked (MiP)
        row.update({name: _as_float(r.get(name)) for name in INDICATORS})
        row.update({dim: _as_float(p.get(dim)) for dim in DIMENSIONS})
        rows.append(row)
    return rows


UNNAMED = "unknown"  # the domain of a trace none was found for (thinkprobe.io.detect)


def level(row: Mapping, by: str) -> str | None:
    """A trace's level of `by` in the tests: None for a group left unset or a domain none was found for
    ('unknown' pools traces of any domain: no level to compare; a run with a few such traces beside
    named domains had tested it as one)."""
    value = row.get(by)
    return None if by == "domain" and value == UNNAMED else value


def _groups(rows: Sequence[Mapping], by: str) -> dict[str, int]:
    """Traces per level of `by` (traces without one, a group left unset or an unnamed domain, are not counted)."""
    counts: dict[str, int] = {}
    for r in rows:
        if (value := level(r, by)) is not None:
            counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


def run_groupings(rows: Sequence[Mapping]) -> tuple[str, ...]:
    """The groupings a run is tested by: model and domain always, group when some trace has one."""
    return tuple(by for by in GROUPINGS if by != "group" or any(r.get("group") is not None for r in rows))


def _grouped_test(values: Sequence[float], labels: Sequence[str | None], **perm) -> dict:
    """kruskal_test over the traces that have a label (a trace without a group takes no part)."""
    kept = [(v, g) for v, g in zip(values, labels) if g is not None]
    return kruskal_test([v for v, _ in kept], [g for _, g in kept], **perm)


# --------------------------------------------------------------------------- effect sizes


def chance_eps2(k: int, n: int) -> float:
    """The eps2 = H / (n - 1) that random group labels give on average, k groups over n traces:
    exactly (k - 1) / (n - 1), ties or not. Under a random relabelling (group sizes kept) a group's
    rank sum has variance n_i (n - n_i) s2 / (n - 1), s2 the variance of the n (mid)ranks, so the
    expected uncorrected H is (k - 1) s2 * 12 / (n^2 - 1); ties lower s2 by exactly scipy's tie
    correction, which H is divided by, so E[H] = k - 1. (Until 2026-12-06 this was the mean over 200
    seeded relabellings, off by up to 0.007.)"""
    return (k - 1) / (n - 1)


def kruskal_test(values: Sequence[float], labels: Sequence[str], min_group: int = 2, chance: bool = False) -> dict:
    """Kruskal-Wallis H, p and eps2 = H / (n - 1) of `values` grouped by `labels`; with `chance`,
    also eps2_expected (chance_eps2 of the test's k and n) and eps2_corrected = eps2 - eps2_expected.

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
    if chance:
        out.update(eps2_expected=None, eps2_corrected=None)
    if missing:
        out["missing"] = missing
    if len(kept) < 2:
        out["status"] = NOT_TESTABLE
        # "categories", not "groups": --group-field names a factor of its own
        out["reason"] = (f"{len(kept)} {'category' if len(kept) == 1 else 'categories'} with at least {min_group} "
                         f"traces; Kruskal-Wallis needs 2"
                         + (f" ({len(too_few)} {'category' if len(too_few) == 1 else 'categories'} too small)"
                            if too_few else ""))
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
    if chance:
        expected = chance_eps2(len(kept), n)
        out.update(eps2_expected=expected, eps2_corrected=out["eps2"] - expected)
    return out


def length_residuals(values: Sequence[float], log_tokens: Sequence[float]) -> tuple[np.ndarray, dict]:
    """What a straight line in log tokens (OLS over every trace with both values) leaves of
    `values`: the residuals (NaN where either is missing) and the fit (slope, intercept, r2, n)."""
    y = np.asarray(values, dtype=np.float64)
    x = np.asarray(log_tokens, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    resid = np.full(len(y), np.nan)
    fit = {"n": int(ok.sum()), "slope": None, "intercept": None, "r2": None}
    if ok.sum() < 3 or np.ptp(x[ok]) == 0:
        fit["reason"] = "fewer than 3 traces or one length everywhere"
        return resid, fit
    slope, intercept = np.polyfit(x[ok], y[ok], 1)
    resid[ok] = y[ok] - (slope * x[ok] + intercept)
    total = float(((y[ok] - y[ok].mean()) ** 2).sum())
    fit.update(slope=float(slope), intercept=float(intercept),
               r2=1.0 - float((resid[ok] ** 2).sum()) / total if total > 0 else None)
    return resid, fit


def _mostly_tied(values: Sequence[float], max_share: float) -> str | None:
    """Why a variable gets no length-controlled test (its most common value holds more than
    `max_share` of the traces with a value: the residuals would order those by length alone), or None."""
    finite = [float(v) for v in values if math.isfinite(v)]
    if not finite:
        return None
    value, count = Counter(finite).most_common(1)[0]
    if count <= max_share * len(finite) or count == len(finite):  # one value everywhere: the tests say "constant"
        return None
    return (f"{count} of {len(finite)} traces share one value ({value:g}): residuals on log(tokens) would order "
            "them by length alone")


def _untested(reason: str) -> dict:
    """A length-controlled test not run, with the keys of kruskal_test's chance-corrected result."""
    return {"status": NOT_TESTABLE, "k": None, "n": None, "too_few": [], "H": None, "p": None, "eps2": None,
            "reason": reason, "eps2_expected": None, "eps2_corrected": None}


def _ratio(model_eps: float | None, domain_eps: float | None, floor: float) -> dict:
    """Chance-corrected eps2(model) / eps2(domain): no ratio when both are under `floor`; a side
    under it is raised to it, which makes the ratio a bound (floored names that side)."""
    if model_eps is None or domain_eps is None:
        return {"value": None, "floored": None, "note": "a grouping was not tested"}
    if model_eps < floor and domain_eps < floor:
        return {"value": None, "floored": None, "note": f"both chance-corrected eps2 under the floor {floor}"}
    floored = "domain" if domain_eps < floor else "model" if model_eps < floor else None
    note = {"domain": "eps2(domain) floored: a lower bound", "model": "eps2(model) floored: an upper bound",
            None: ""}[floored]
    return {"value": max(model_eps, floor) / max(domain_eps, floor), "floored": floored, "note": note}


# --------------------------------------------------------------------------- reliability


def split_half_reliability(values: Sequence[float], models: Sequence[str], splits: int, seed: int,
                           min_varying: int = 0) -> dict:
    """How reproducible the model means are: `splits` times (seeded), split each model's traces at
    random into two halves, take the model means in each half and correlate them across models
    (Pearson r); spearman_brown = 2 r / (1 + r) with r the mean over splits, the reliability of a
    mean over all of a model's traces (0 when r <= 0). A split in which one half's model means are all
    equal (a rare value's traces all fell in the other half) orders no models: its r counts as 0.
    Needs 3 models with at least 2 traces each, and `min_varying` traces away from the most common
    value (with fewer, the model means rest on a handful of traces, and the halves of one model
    against zeros elsewhere correlate perfectly by construction)."""
    by_model: dict[str, np.ndarray] = {}
    for value, model in zip(values, models):
        if math.isfinite(value):
            by_model.setdefault(model, []).append(float(value))
    by_model = {m: np.asarray(v) for m, v in sorted(by_model.items()) if len(v) >= 2}
    out = {"status": TESTED, "models": len(by_model), "splits": 0, "r": None, "spearman_brown": None}
    if len(by_model) < 3:
        out.update(status=NOT_TESTABLE, reason=f"{len(by_model)} model(s) with 2+ traces; split-half needs 3")
        return out
    pooled = np.concatenate(list(by_model.values()))
    common, count = Counter(pooled.tolist()).most_common(1)[0]
    if 0 < len(pooled) - count < min_varying:
        out.update(status=NOT_TESTABLE, reason=f"only {len(pooled) - count} of {len(pooled)} traces differ from the "
                                               f"most common value ({common:g}); split-half needs {min_varying}")
        return out
    # Each split's halves are drawn model by model from one seeded stream; the Pearson r of every
    # split is then taken at once (memory: the splits x models means, not the permutations).
    rng = np.random.default_rng(seed)
    a, b = np.empty((splits, len(by_model))), np.empty((splits, len(by_model)))
    halves = [(v, len(v) // 2, len(v) - len(v) // 2) for v in by_model.values()]
    for s in range(splits):
        for k, (v, first, second) in enumerate(halves):
            shuffled = v[rng.permutation(first + second)]
            a[s, k], b[s, k] = shuffled[:first].sum() / first, shuffled[first:].sum() / second  # as .mean() sums
    varies = (np.ptp(a, axis=1) > 0) & (np.ptp(b, axis=1) > 0)
    if not varies.any():
        out.update(status=CONSTANT, reason="model means do not vary")
        return out
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rs = np.where(varies, np.clip((a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1)),
                                      -1.0, 1.0), 0.0)
    r = float(np.mean(rs))
    # r <= 0: the halves do not even agree on the order of the models; Spearman-Brown would turn
    # that into a negative "reliability" below -1, so it is reported as 0
    out.update(splits=len(rs), splits_one_half_constant=int((~varies).sum()), r=r,
               spearman_brown=2 * r / (1 + r) if r > 0 else 0.0)
    return out


ICC_MIN_CLUSTERS = 5  # (model, question) pairs with several traces before an ICC is estimated


def icc1(values: Sequence[float], clusters: Sequence, min_clusters: int = ICC_MIN_CLUSTERS) -> dict:
    """One-way random-effects ICC(1) over clusters of traces (a model's answers to one question):
    (MSB - MSW) / (MSB + (k0 - 1) MSW), k0 the adjusted mean cluster size for unequal clusters;
    `icc_mean` = k0 ICC / (1 + (k0 - 1) ICC), the reliability of a cluster's mean (none for a
    negative ICC, where it means nothing). Clusters with one trace stay out; needs `min_clusters`
    clusters of 2+ (from 3 pairs the estimate ranged over -0.8 .. 1 on real runs)."""
    by: dict = {}
    for value, c in zip(values, clusters):
        if c is not None and math.isfinite(value):
            by.setdefault(c, []).append(float(value))
    groups = [np.asarray(v) for _, v in sorted(by.items(), key=lambda kv: str(kv[0])) if len(v) >= 2]
    out = {"status": TESTED, "clusters": len(groups), "traces": int(sum(len(g) for g in groups)),
           "k0": None, "icc": None, "icc_mean": None}
    if len(groups) < max(2, min_clusters):
        out.update(status=NOT_TESTABLE, reason=f"fewer than {max(2, min_clusters)} (model, question) pairs with "
                                               "several traces")
        return out
    sizes = np.array([len(g) for g in groups], dtype=np.float64)
    n, g = sizes.sum(), len(groups)
    grand = np.concatenate(groups).mean()
    msb = float((sizes * (np.array([x.mean() for x in groups]) - grand) ** 2).sum() / (g - 1))
    msw = float(sum(((x - x.mean()) ** 2).sum() for x in groups) / (n - g))
    k0 = float((n - (sizes ** 2).sum() / n) / (g - 1))
    if msb + (k0 - 1) * msw == 0:
        out.update(status=CONSTANT, reason="every trace has the same value")
        return out
    icc = (msb - msw) / (msb + (k0 - 1) * msw)
    out.update(k0=k0, icc=icc, icc_mean=k0 * icc / (1 + (k0 - 1) * icc) if icc >= 0 else None)
    return out


# --------------------------------------------------------------------------- profiles and the whole run


BOOTSTRAP_BLOCK = 1_000_000  # resampled traces drawn at once per model (about 48 MB of draws and indices)


def bootstrap_model_profiles(rows: Sequence[Mapping], settings: StatsSettings) -> list[dict]:
    """Per model, the mean of each dimension with a percentile bootstrap interval.

    One generator, models in sorted order, the same resampled traces for all five dimensions of a
    model: the same run always gives the same intervals.
    """
    resamples, level, min_group = settings.bootstrap_resamples, settings.ci_level, settings.min_group
    rng = np.random.default_rng(settings.bootstrap_seed)
    dims = list(DIMENSIONS)
    out = []
    for model in _groups(rows, "model"):
        values = np.array([[r[d] for d in dims] for r in rows if r["model"] == model], dtype=np.float64)
        means = values.mean(axis=0)
        entry = {"model": model, "n": len(values), "dimensions": {}}
        if len(values) >= min_group:
            # in blocks of resamples (the same draws as one (resamples, n) array, at a bounded size: one
            # array for 100,000 traces of a model took 4.6 GB)
            block = max(1, BOOTSTRAP_BLOCK // len(values))
            draws = np.concatenate([
                values[rng.integers(0, len(values), size=(min(block, resamples - k), len(values)))].mean(axis=1)
                for k in range(0, resamples, block)])
            tail = 100 * (1 - level) / 2
            low, high = np.percentile(draws, [tail, 100 - tail], axis=0)
        else:
            low = high = [None] * len(dims)
            entry["note"] = f"fewer than {min_group} traces: no interval"
        for j, dim in enumerate(dims):
            entry["dimensions"][dim] = {"mean": _round(float(means[j])),
                                        "ci_low": _round(low[j]), "ci_high": _round(high[j])}
        out.append(entry)
    return out


def _holm_family(entries: Sequence[dict], alpha: float) -> int:
    """Holm over every test that ran in `entries` (dicts of test results); returns the family size."""
    family = [t for t in entries if t["status"] == TESTED]
    for t, p_holm in zip(family, holm([t["p"] for t in family])):
        t["p_holm"] = p_holm
        t["significant"] = p_holm < alpha
    return len(family)


def compute_stats(run_dir: str | Path, settings: StatsSettings | None = None) -> dict:
    """All statistics of a run as plain data (nothing written); `settings`: the run's `stats`
    section (default: what its run.json recorded)."""
    run_dir = Path(run_dir)
    cfg = settings or stats_settings(run_dir)
    meta, labels_from = _correctness(run_dir)
    rows = load_table(run_dir, meta)
    variables = [(name, "indicator", DIMENSION_OF[name]) for name in INDICATORS]
    variables += [(dim, "dimension", dim) for dim in DIMENSIONS]
    log_tokens = [math.log(r["tokens"]) if r["tokens"] > 0 else math.nan for r in rows]
    models = np.array([r["model"] for r in rows], dtype=object)
    # a model's answers to one prompt: the group is part of it (MiP's missing-premise and normal questions)
    clusters = [(r["model"], r["group"], r["question"]) if r["question"] is not None else None for r in rows]
    questions = [question_key(r) for r in rows]
    graded = np.array([r["correct"] is not None for r in rows], dtype=bool)
    wrong = np.array([r["correct"] is False for r in rows], dtype=bool)
    enough_labels = min(int(wrong.sum()), int((graded & ~wrong).sum())) >= cfg.min_class
    perm = {"min_group": cfg.min_group, "chance": True}
    groupings = run_groupings(rows)
    labels_by = {by: [level(r, by) for r in rows] for by in groupings}  # each trace's level, None for none

    results, columns = [], []  # columns: each variable's values and length residuals, for the intervals
    for name, kind, dim in variables:
        values = [r[name] for r in rows]
        tied = _mostly_tied(values, cfg.length_control_max_tied)
        resid, fit = length_residuals(values, log_tokens) if tied is None else (None, {
            "n": len(values), "slope": None, "intercept": None, "r2": None, "reason": tied})
        entry = {"variable": name, "kind": kind, "dimension": dim,
                 "length_controlled": {"fit": fit}, "reliability": {}}
        columns.append((values, resid if tied is None else None))
        for by in groupings:
            labels = labels_by[by]
            entry[by] = _grouped_test(values, labels, **perm)
            entry["length_controlled"][by] = (_grouped_test(list(resid), labels, **perm) if tied is None else
                                              _untested(tied))
        entry["reliability"]["split_half"] = split_half_reliability(values, list(models), cfg.split_halves,
                                                                    cfg.split_half_seed, cfg.split_half_min_varying)
        entry["reliability"]["split_half_length_controlled"] = (
            split_half_reliability(list(resid), list(models), cfg.split_halves, cfg.split_half_seed) if tied is None
            else {"status": NOT_TESTABLE, "models": None, "splits": 0, "r": None, "spearman_brown": None,
                  "reason": tied})
        entry["reliability"]["icc"] = icc1(values, clusters)
        sb = entry["reliability"]["split_half"]["spearman_brown"]
        entry["reliability"]["supports_model_differences"] = None if sb is None else sb >= cfg.min_reliability
        if enough_labels:
            x = np.asarray(values, dtype=np.float64)
            asked = [q for q, g in zip(questions, graded) if g]
            within, per_model, within_ci = auroc_within(x[graded], wrong[graded], models[graded], cfg.min_class, asked,
                                                        cfg.ci_level)
            delong = auroc_delong(x[graded], wrong[graded], cfg.ci_level, asked)
            entry["outcome"] = {"auroc_wrong": delong[0] if delong else auroc(x[graded], wrong[graded]),
                                "ci_low": delong and delong[1], "ci_high": delong and delong[2],
                                "auroc_wrong_within_model": within,
                                "within_ci_low": within_ci and within_ci[0], "within_ci_high": within_ci and within_ci[1],
                                "per_model": per_model}
        else:
            entry["outcome"] = None
        results.append(entry)

    # Two families: the raw tests (every grouping, all variables) and the length-controlled ones.
    family_size = _holm_family([e[by] for e in results for by in groupings], cfg.alpha)
    family_size_lc = _holm_family([e["length_controlled"][by] for e in results for by in groupings], cfg.alpha)

    for e in results:
        em, ed = e["model"]["eps2"], e["domain"]["eps2"]
        e["ratio"] = None
        if em is None or ed is None:
            e["ratio_note"] = "a grouping was not tested"
        elif ed <= 0:
            e["ratio_note"] = "eps2(domain) is 0"
        else:
            e["ratio"] = em / ed
        e["ratio_corrected"] = _ratio(e["model"].get("eps2_corrected"), e["domain"].get("eps2_corrected"),
                                      cfg.ratio_floor)
        lc = e["length_controlled"]
        e["ratio_length_corrected"] = _ratio(lc["model"].get("eps2_corrected"), lc["domain"].get("eps2_corrected"),
                                             cfg.ratio_floor)
    add_effect_intervals(results, columns, labels_by, cfg)
    pairs = pairwise_models([(name, kind) for name, kind, _ in variables], columns, list(models), log_tokens,
                            {(e["variable"], lc): bool(t.get("significant")) for e in results
                             for lc, t in ((0, e["model"]), (1, e["length_controlled"]["model"]))}, cfg,
                            questions)

    graded_rows = [r for r in rows if r["correct"] is not None]
    unnamed = sum(r["domain"] == UNNAMED for r in rows)  # traces of no named domain: in no domain test
    return _round_all({
        "n_traces": len(rows),
        "n_without_question": sum(r["question"] is None for r in rows),  # in no (model, question) pair
        "settings": {**asdict(cfg), "correction": "holm", "family_size": family_size,
                     "family_size_length_controlled": family_size_lc,
                     "effect_size": "eps2 = H / (n - 1)",
                     "chance_correction": "eps2_corrected = eps2 - (k - 1) / (n - 1), the eps2 random group labels give "
                                          "on average (exact for H with the tie correction)",
                     "length_control": "Kruskal-Wallis on the residuals of an OLS fit of the variable on log(tokens) "
                                       "over the whole run",
                     "ratio": "eps2(model) / eps2(domain), raw (none where eps2(domain) is 0)",
                     "ratio_corrected": "eps2_corrected(model) / eps2_corrected(domain); none when both are under "
                                        "ratio_floor; a side under it is raised to it (the report's ratio; "
                                        "ratio_length_corrected: the same on the length-controlled tests)",
                     "effect_intervals": INTERVAL_METHOD,
                     "split_half": "mean Pearson r of model means between random halves (0 for a split with one "
                                   "half's means all equal), Spearman-Brown 2r / (1 + r); not testable with fewer "
                                   "than split_half_min_varying traces away from the most common value",
                     "icc": "ICC(1) over (model, question) clusters with 2+ traces",
                     "domain": "traces of no named domain ('unknown', groupings.domain.unnamed) take no part in "
                               "the domain tests",
                     "group": "tested like the domain, over the traces that have a group; no group tests in a "
                              "run where no trace has one",
                     "factor_auroc": "outcome.cross_validated: AUROC for a wrong answer of each graded trace's domain "
                                     "(group)'s share of wrong answers, in-sample; chance: its mean over settings.factor_shuffles "
                                     "seeded shuffles of the grades among the same traces, p: the share at least as "
                                     "high; none with one level or no shuffles"},
        "groupings": {by: {"groups": _groups(rows, by),
                           "too_few": sorted(g for g, c in _groups(rows, by).items() if c < cfg.min_group),
                           **({"unnamed": unnamed} if by == "domain" and unnamed else {})}
                      for by in groupings},
        "crossing": {by: model_crossing(rows, by, cfg.min_group) for by in groupings if by != "model"},
        **({"domain_group_crossing": factor_crossing(rows, "domain", "group", cfg.min_group)}
           if "group" in groupings else {}),
        "outcome": {"labels_from": labels_from, "graded": len(graded_rows),
                    "wrong": sum(1 for r in graded_rows if r["correct"] is False),
                    "wrong_no_answer": sum(1 for r in graded_rows if r["no_answer"]),
                    "graded_by_model": _groups(graded_rows, "model"),
                    "cross_validated": outcome_validity(rows, cfg)},
        "variables": results,
        "model_profiles": bootstrap_model_profiles(rows, cfg),
        "pairwise": pairs,  # its rows go to pairwise.csv, the rest to stats.json
        # per model: the share of its traces inside the other models' 10-90% range of log tokens
        "length_overlap": model_length_overlap(list(models), log_tokens, cfg.min_group),
        "redundancy_by_level": _level_means(run_dir),
    })


def _level_means(run_dir: Path) -> list[dict]:
    """The redundancy metrics by model x difficulty level (redundancy_by_level.csv), as numbers."""
    from .outputs import LEVEL_REDUNDANCY_TABLE, read_table

    if not (Path(run_dir) / LEVEL_REDUNDANCY_TABLE.name).exists():
        return []
    out = []
    for row in read_table(run_dir, LEVEL_REDUNDANCY_TABLE):
        out.append({c: (row[c] if LEVEL_REDUNDANCY_TABLE.types[c] == "str" else
                        None if row[c] in ("", None) else
                        int(row[c]) if LEVEL_REDUNDANCY_TABLE.types[c] == "int" else float(row[c]))
                    for c in LEVEL_REDUNDANCY_TABLE.columns})
    return out


def _csv_fields() -> list[tuple[str, tuple, str]]:
    """stats.csv's columns, where each value sits in a variable's stats.json entry, and its type."""
    fields = [("variable", ("variable",), "str"), ("kind", ("kind",), "str"), ("dimension", ("dimension",), "str")]
    for by in GROUPINGS:
        for col in ("status", "k", "n", "H", "p", "p_holm", "significant", "eps2", "eps2_expected", "eps2_corrected"):
            fields.append((f"{col}_{by}", (by, col), _CSV_TYPES.get(col, "float")))
    fields.append(("ratio", ("ratio",), "float"))
    fields.append(("ratio_corrected", ("ratio_corrected", "value"), "float"))
    # which side was raised to ratio_floor: "domain" (the ratio is a lower bound), "model" (an upper bound)
    fields.append(("ratio_corrected_floored", ("ratio_corrected", "floored"), "str"))
    fields.append(("length_r2", ("length_controlled", "fit", "r2"), "float"))
    for by in GROUPINGS:
        for col in ("status", "H", "p", "p_holm", "eps2", "eps2_expected", "eps2_corrected"):
            fields.append((f"length_{col}_{by}", ("length_controlled", by, col), _CSV_TYPES.get(col, "float")))
    fields.append(("ratio_length_corrected", ("ratio_length_corrected", "value"), "float"))
    fields.append(("ratio_length_corrected_floored", ("ratio_length_corrected", "floored"), "str"))
    fields += [("split_half_r", ("reliability", "split_half", "r"), "float"),
               ("split_half_reliability", ("reliability", "split_half", "spearman_brown"), "float"),
               ("split_half_reliability_length_controlled",
                ("reliability", "split_half_length_controlled", "spearman_brown"), "float"),
               ("supports_model_differences", ("reliability", "supports_model_differences"), "int"),
               ("icc", ("reliability", "icc", "icc"), "float"), ("icc_clusters", ("reliability", "icc", "clusters"), "int"),
               ("auroc_wrong", ("outcome", "auroc_wrong"), "float"),
               ("auroc_wrong_within_model", ("outcome", "auroc_wrong_within_model"), "float")]
    # the bootstrap intervals, then the AUROC's (added later), so that earlier columns keep their place
    return fields + INTERVAL_FIELDS + [("auroc_wrong_ci_low", ("outcome", "ci_low"), "float"),
                                       ("auroc_wrong_ci_high", ("outcome", "ci_high"), "float"),
                                       ("auroc_wrong_within_model_ci_low", ("outcome", "within_ci_low"), "float"),
                                       ("auroc_wrong_within_model_ci_high", ("outcome", "within_ci_high"), "float")]


_CSV_TYPES = {"status": "str", "k": "int", "n": "int", "significant": "int"}
_CSV_FIELDS = _csv_fields()
CSV_COLUMNS: tuple[str, ...] = tuple(name for name, _, _ in _CSV_FIELDS)
# stats.csv and its Parquet twin: one row per indicator and dimension (a flag as 0 / 1)
STATS_TABLE = Table(STATS_CSV, CSV_COLUMNS, {name: kind for name, _, kind in _CSV_FIELDS}, parquet=True)
assert STATS_TABLE.parquet_name == STATS_PARQUET


def _dig(entry: Mapping, path: tuple):
    for key in path:  # a str key of a dict, an int one of a list (an interval's end)
        if isinstance(key, int):
            entry = entry[key] if isinstance(entry, list) and len(entry) > key else None
        elif isinstance(entry, Mapping):
            entry = entry.get(key)
        else:
            return None
    return entry


def stats_rows(stats: Mapping) -> list[dict]:
    """stats.csv's rows (STATS_TABLE) from compute_stats' result."""
    return [{name: int(v) if isinstance(v := _dig(e, path), bool) else v for name, path, _ in _CSV_FIELDS}
            for e in stats["variables"]]


def stats_csv(stats: Mapping) -> str:
    """stats.csv's text."""
    return csv_text(stats_rows(stats), CSV_COLUMNS)


def write_stats(run_dir: str | Path, settings: StatsSettings | None = None) -> dict:
    """compute_stats, then stats.json and stats.csv in the run folder; returns the statistics."""
    run_dir = Path(run_dir)
    stats = compute_stats(run_dir, settings)
    kept = {**stats, "pairwise": {k: v for k, v in stats["pairwise"].items() if k != "rows"}}
    write_atomic(run_dir / STATS_JSON, json.dumps(kept, indent=2, sort_keys=True) + "\n")  # replaces a symlink,
    write_table(run_dir, STATS_TABLE, stats_rows(stats))  # never writes where it points
    write_table(run_dir, PAIRWISE_TABLE, pairwise_rows(stats))
    return stats
