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
length-controlled comparison extrapolates a line fitted over the whole run.

Where two models answered the same questions (PAIRED_MIN_SHARE of each one's traces on questions both
answered, min_group such questions or more), the pair is compared question by question (design
"paired"): P(a > b) is the mean over those questions of the same probability among the two models'
traces of that question (a trace without a question is left out). Its test is the sign-flip test of
the questions' P - 0.5: exact (the sign test on the questions that are not a draw where each question
gives a win, a draw or a loss, as with one trace per model and question; else all 2^m sign flips of the
m questions that are not a draw, up to 16) or its normal approximation beyond; Student's t over such
values gave p-values several times too small in the tail Holm works in. Its interval is Student's t
over the questions (n_questions - 1 degrees of freedom) on the logit scale, which keeps its coverage
near 0 and 1 (where every question gives the same value, the largest spread that mean allows; at 0 or
1, Clopper-Pearson's interval), so test and interval may disagree at the margin. A question's
difficulty then cancels out of P, and so does its domain. Where every pair is paired, the gate is
question by question too (`blocked_gate`): Friedman's test of the models' mean values on the questions
every model answered (with two models, the pair's own sign-flip test), Holm over the variables, raw and
length-controlled apart, as the Kruskal-Wallis tests are; across traces, question difficulty is noise to
Kruskal-Wallis, which missed 13 of the differences the balanced ReasoningFlow design's pairs found
question by question. Otherwise the design is "unpaired", the gate the Kruskal-Wallis test, and a pair's
difference mixes in the domains where the two models answered different ones (stats.json's crossing
says where).
thinkprobe.stats.write_stats writes the rows to pairwise.csv and pairwise.parquet (PAIRWISE_TABLE) and
the rest (method, models) to stats.json.
"""
from __future__ import annotations

from itertools import combinations
from typing import Mapping, Sequence

import numpy as np
from scipy.special import expit, logit
from scipy.stats import binomtest, friedmanchisquare, mannwhitneyu, norm
from scipy.stats import t as student_t

from .auroc import auroc_interval, placements
from .config import StatsSettings
from .multiple_testing import holm
from .outputs import PAIRWISE_CSV, PAIRWISE_PARQUET, Table
from .statuses import CONSTANT, NOT_TESTABLE, TESTED

__all__ = ["PAIRWISE_TABLE", "METHOD", "LENGTH_OVERLAP_MIN", "PAIRED_MIN_SHARE", "pairwise_models", "pair_test",
           "paired_test", "blocked_gate", "length_overlap", "model_length_overlap", "pairwise_rows"]

# Under this length_overlap the report marks a pair's length-controlled value as an extrapolation.
LENGTH_OVERLAP_MIN = 0.25
# Two models are compared question by question when this share of each one's traces, or more, answer
# questions both answered (a few traces lost to bad records leave the design paired).
PAIRED_MIN_SHARE = 0.9

METHOD = ("per pair of models with min_group traces or more: p_superiority = P(a > b), the chance a random trace of "
          "model_a has the higher value (ties one half), with the two-sided Brunner-Munzel test of P = 0.5 and its "
          "t interval at ci_level from the same placement variance (where that variance is 0: Mann-Whitney's p and "
          "Hanley & McNeil's interval); p_holm: Holm over the variable's pairs; significant: p_holm under alpha and "
          "the variable's Kruskal-Wallis test by model (the same, raw or length-controlled) significant; "
          "length_overlap: the smaller of the two models' shares of traces inside the other's 10-90% range of log "
          "tokens; design paired (where the two models answered the same questions: PAIRED_MIN_SHARE of each one's "
          "traces on questions both answered, min_group of them or more): P(a > b) among the traces of one question, "
          "averaged over the questions, with the sign-flip test of the questions' P - 0.5 (exact: the sign test where "
          "each question is a win, a draw or a loss, else every flip up to 16 questions not a draw; beyond, its normal "
          "approximation) and Student's t interval over the questions on the logit scale; n_a, n_b, the medians: the "
          "traces compared; otherwise unpaired, not stratified by domain; the gate: where every pair is paired, "
          "Friedman's test of the models' mean values on the questions every model answered (two models: the pair's "
          "own test), Holm over the variables (raw and length-controlled apart), under alpha (stats.json pairwise.gate); "
          "else the Kruskal-Wallis test across all traces")

PAIRWISE_TABLE = Table(
    PAIRWISE_CSV,
    ("variable", "kind", "length_controlled", "model_a", "model_b", "status", "n_a", "n_b", "median_a", "median_b",
     "p_superiority", "ci_low", "ci_high", "cliffs_delta", "p", "p_holm", "significant", "length_overlap",
     "design", "n_questions"),
    {"variable": "str", "kind": "str", "length_controlled": "int", "model_a": "str", "model_b": "str", "status": "str",
     "n_a": "int", "n_b": "int", "median_a": "float", "median_b": "float", "p_superiority": "float",
     "ci_low": "float", "ci_high": "float", "cliffs_delta": "float", "p": "float", "p_holm": "float",
     "significant": "int", "length_overlap": "float", "design": "str", "n_questions": "int"},
    parquet=True)
assert PAIRWISE_TABLE.parquet_name == PAIRWISE_PARQUET


def pair_test(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> dict:
    """One pair (finite values only): P(a > b), its interval at `level` and the two-sided p-value of P = 0.5."""
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    n_a, n_b = len(a), len(b)
    out = _compared(a, b)
    if out["status"] != TESTED:
        return out
    place_a, place_b = placements(a, np.sort(b)), placements(b, np.sort(a))
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


def _compared(a: np.ndarray, b: np.ndarray) -> dict:
    """A row's counts, medians and status for the finite values a, b compared (no test yet)."""
    n_a, n_b = len(a), len(b)
    out = {"status": TESTED, "n_a": n_a, "n_b": n_b,
           "median_a": float(np.median(a)) if n_a else None, "median_b": float(np.median(b)) if n_b else None,
           "p_superiority": None, "ci_low": None, "ci_high": None, "cliffs_delta": None, "p": None}
    if n_a < 2 or n_b < 2:
        return {**out, "status": NOT_TESTABLE}
    if np.all(a == a[0]) and np.all(b == a[0]):  # one value for every trace of both: nothing to rank
        return {**out, "status": CONSTANT}
    return out


def paired_test(a: np.ndarray, q_a: np.ndarray, b: np.ndarray, q_b: np.ndarray, level: float = 0.95,
                min_questions: int = 2) -> dict:
    """One pair compared question by question: `q_a`, `q_b` number each trace's question (0, 1, ...).
    P(a > b) among the traces of each question both models have a finite value for, its mean over those
    questions, the sign-flip test and the logit-scale t interval over them (module docstring); not
    testable on fewer than `min_questions` such questions."""
    keep_a, keep_b = np.isfinite(a), np.isfinite(b)
    a, q_a, b, q_b = a[keep_a], q_a[keep_a], b[keep_b], q_b[keep_b]
    size = int(max(q_a.max(initial=-1), q_b.max(initial=-1))) + 1
    per_a, per_b = np.bincount(q_a, minlength=size), np.bincount(q_b, minlength=size)
    both = (per_a > 0) & (per_b > 0)
    a, q_a, b, q_b = a[both[q_a]], q_a[both[q_a]], b[both[q_b]], q_b[both[q_b]]
    out = {**_compared(a, b), "n_questions": int(both.sum())}
    if out["status"] != TESTED:
        return out
    if out["n_questions"] < max(2, min_questions):
        return {**out, "status": NOT_TESTABLE}
    # each value's place among the other model's traces of its question: one search over (question, rank) keys
    ranks = np.unique(np.concatenate([a, b]), return_inverse=True)[1]
    width = int(ranks.max()) + 2
    key_a, key_b = q_a * width + 1 + ranks[:len(a)], np.sort(q_b * width + 1 + ranks[len(a):])
    start = np.searchsorted(key_b, q_a * width, side="left")  # the question's first trace of b
    below = np.searchsorted(key_b, key_a, side="left")
    place = below - start + 0.5 * (np.searchsorted(key_b, key_a, side="right") - below)
    share = (np.bincount(q_a, weights=place, minlength=size)[both]
             / (per_a[both].astype(np.float64) * per_b[both]))  # P(a > b) within each question
    mean = float(share.mean())
    low, high = _logit_interval(share, level)
    return {**out, "p_superiority": mean, "ci_low": low, "ci_high": high, "cliffs_delta": 2 * mean - 1,
            "p": sign_flip_p(share - 0.5)}


EXACT_FLIPS = 16  # questions (not a draw) up to which the sign-flip test enumerates every flip: 65,536


def sign_flip_p(d: np.ndarray) -> float:
    """Two-sided p of the sign-flip test that the values `d` are symmetric about 0 (zeros left out): the
    exact sign test where every value has one size, every flip counted up to EXACT_FLIPS values, else the
    normal approximation of the flipped sum (mean 0, variance the sum of squares)."""
    d = d[np.abs(d) > 1e-12]
    m = len(d)
    if not m:
        return 1.0
    size = np.abs(d)
    if np.allclose(size, size[0], rtol=0, atol=1e-12):
        return float(binomtest(int((d > 0).sum()), m).pvalue)
    total = abs(float(d.sum()))
    if m <= EXACT_FLIPS:
        signs = ((np.arange(2 ** m)[:, None] >> np.arange(m)) & 1) * 2 - 1
        return float(np.mean(np.abs(signs @ size) >= total - 1e-9))
    return float(min(1.0, 2 * norm.sf(total / np.sqrt(float((d ** 2).sum())))))


def _logit_interval(share: np.ndarray, level: float) -> tuple[float, float]:
    """The interval of the mean of per-question values in [0, 1]: Student's t on the logit scale with the
    mean's standard error (where every value is equal, the largest spread that mean allows), the mean
    kept half a question from 0 and 1; at 0 or 1, Clopper-Pearson's interval of n of n."""
    n, mean = len(share), float(share.mean())
    if mean in (0.0, 1.0):
        return tuple(float(x) for x in binomtest(int(round(mean * n)), n).proportion_ci(confidence_level=level))
    sd = float(share.std(ddof=1))
    se = (sd if sd > 1e-12 else np.sqrt(mean * (1 - mean))) / np.sqrt(n)
    kept = min(max(mean, 0.5 / n), 1 - 0.5 / n)
    half = float(student_t.ppf(0.5 + level / 2, n - 1)) * se / (kept * (1 - kept))
    return min(mean, float(expit(logit(kept) - half))), max(mean, float(expit(logit(kept) + half)))


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


def _paired_designs(kept: Sequence[str], where: Mapping[str, np.ndarray], questions: Sequence | None,
                    min_group: int) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray] | None]:
    """Per pair of models: the positions (into each model's traces) and numbered questions of the traces
    on questions both answered, where the pair is compared question by question; else None."""
    keys = {m: [questions[i] for i in where[m]] for m in kept} if questions is not None else {}
    out = {}
    for a, b in combinations(kept, 2):
        out[a, b] = None
        if not keys:
            continue
        shared = sorted((set(keys[a]) & set(keys[b])) - {None}, key=repr)  # a trace without a question: not shared
        number = {q: k for k, q in enumerate(shared)}
        at = [np.array([(i, number[q]) for i, q in enumerate(keys[m]) if q in number], dtype=np.int64).reshape(-1, 2)
              for m in (a, b)]
        if len(shared) >= min_group and all(len(p) >= PAIRED_MIN_SHARE * len(keys[m]) for p, m in zip(at, (a, b))):
            out[a, b] = (at[0], at[1])
    return out


def pairwise_models(variables: Sequence[tuple[str, str]], columns: Sequence[tuple[Sequence[float], object]],
                    models: Sequence[str], log_tokens: Sequence[float], model_significant: Mapping[tuple[str, int], bool],
                    cfg: StatsSettings, questions: Sequence | None = None) -> dict:
    """Every pair of models on every variable. `variables`: (name, kind) per variable; `columns`: its
    values and length residuals per trace (residuals None where length is not controlled: a mostly tied
    variable); `models`, `log_tokens`: each trace's; `model_significant`: whether the variable's
    Kruskal-Wallis test by model is significant, by (name, 0 raw / 1 length-controlled), the gate unless
    every pair is paired (then `blocked_gate`'s, or with two models `_two_model_gate`'s); `questions`: each
    trace's question (any hashable; None where unknown), to compare models question by question where
    they answered the same ones. Returns {"method", "models", "too_few", "designs", "gate", "rows"}, rows in
    PAIRWISE_TABLE's columns, pairs in sorted model order; "gate": the model test that gates them."""
    labels = np.asarray(models, dtype=object)
    counts = {m: int((labels == m).sum()) for m in sorted(set(models))}
    kept = [m for m, n in counts.items() if n >= cfg.min_group]
    where = {m: np.flatnonzero(labels == m) for m in kept}
    logs = np.asarray(log_tokens, dtype=np.float64)
    overlap = {(a, b): length_overlap(logs[where[a]], logs[where[b]]) for a, b in combinations(kept, 2)}
    paired = _paired_designs(kept, where, questions, cfg.min_group)
    gate = None
    every_paired = bool(paired) and all(on is not None for on in paired.values())
    if len(kept) > 2 and every_paired:
        gate = blocked_gate([name for name, _ in variables], columns, labels, questions, kept, cfg)
        model_significant = {(g["variable"], g["length_controlled"]): bool(g["significant"]) for g in gate["tests"]}
    rows = []
    for (name, kind), (values, resid) in zip(variables, columns):
        for lc, col in ((0, values), (1, resid)):
            x = None if col is None else np.asarray(col, dtype=np.float64)
            by_model = {m: x[where[m]] for m in kept} if x is not None else {}
            ordered = {m: np.sort(v) for m, v in by_model.items()}  # sorted once, not per pair
            family = []
            for a, b in combinations(kept, 2):
                on = paired[a, b]
                if x is None:
                    test = {**_compared(np.empty(0), np.empty(0)), "n_a": counts[a], "n_b": counts[b]}
                elif on is not None:
                    test = paired_test(by_model[a][on[0][:, 0]], on[0][:, 1], by_model[b][on[1][:, 0]], on[1][:, 1],
                                       cfg.ci_level, cfg.min_group)
                else:
                    test = pair_test(ordered[a], ordered[b], cfg.ci_level)
                row = {"variable": name, "kind": kind, "length_controlled": lc, "model_a": a, "model_b": b,
                       "n_questions": None, **test, "p_holm": None, "significant": None,
                       "length_overlap": overlap[a, b], "design": "unpaired" if on is None else "paired"}
                rows.append(row)
                if row["status"] == TESTED:
                    family.append(row)
            for row, adjusted in zip(family, holm([r["p"] for r in family])):
                row["p_holm"] = adjusted
                row["significant"] = int(adjusted < cfg.alpha and bool(model_significant.get((name, lc))))
    if len(kept) == 2 and every_paired:
        gate = _two_model_gate(rows, cfg)  # the pair's own test is the model test, Holm over the variables
    designs = {f"{a} / {b}": "unpaired" if on is None else "paired" for (a, b), on in paired.items()}
    return {"method": METHOD, "models": kept, "too_few": sorted(set(counts) - set(kept)), "designs": designs,
            "gate": gate or {"test": "kruskal-wallis"}, "rows": rows}


def blocked_gate(names: Sequence[str], columns: Sequence[tuple[Sequence[float], object]], labels: np.ndarray,
                 questions: Sequence, kept: Sequence[str], cfg: StatsSettings) -> dict:
    """The model test of a design where every model answered the same questions: per variable, raw and
    length-controlled, Friedman's test of the models' mean values per question over the questions every
    model in `kept` answered with a finite value (blocks), Holm over the variables of each family;
    significant: Holm p under cfg.alpha. Not testable on fewer than cfg.min_group such questions or
    where every question ties every model."""
    asked = np.array([q is not None for q in questions], dtype=bool)
    codes = {q: k for k, q in enumerate(sorted({q for q in questions if q is not None}, key=repr))}
    number = np.array([codes[q] if q is not None else -1 for q in questions], dtype=np.int64)
    tests = []
    for lc in (0, 1):
        family = []
        for name, (values, resid) in zip(names, columns):
            col = values if lc == 0 else resid
            test = {"variable": name, "length_controlled": lc, "status": NOT_TESTABLE, "n_questions": 0,
                    "statistic": None, "p": None, "p_holm": None, "significant": 0}
            tests.append(test)
            if col is None:
                continue
            x = np.asarray(col, dtype=np.float64)
            means = []
            for m in kept:  # each model's mean value per question, NaN where it has none
                on = (labels == m) & asked & np.isfinite(x)
                total = np.bincount(number[on], weights=x[on], minlength=len(codes))
                count = np.bincount(number[on], minlength=len(codes))
                means.append(np.where(count > 0, total / np.maximum(count, 1), np.nan))
            blocks = np.all(np.isfinite(means), axis=0)
            test["n_questions"] = int(blocks.sum())
            if test["n_questions"] < max(2, cfg.min_group):
                continue
            table = np.array(means)[:, blocks]
            if np.all(table == table[0]):  # every question ties every model
                test["status"] = CONSTANT
                continue
            statistic, p = friedmanchisquare(*table)
            test.update(status=TESTED, statistic=float(statistic), p=float(p))
            family.append(test)
        for test, adjusted in zip(family, holm([t["p"] for t in family])):
            test["p_holm"], test["significant"] = adjusted, int(adjusted < cfg.alpha)
    return {"test": "friedman", "models": len(kept), "tests": tests}


def _two_model_gate(rows: list[dict], cfg: StatsSettings) -> dict:
    """Two models compared question by question: their one pair's sign-flip test is the model test, Holm
    over the variables of each family (raw, length-controlled) as `blocked_gate`; rows' significant set."""
    tests = []
    for lc in (0, 1):
        family = [r for r in rows if r["length_controlled"] == lc and r["status"] == TESTED]
        for row, adjusted in zip(family, holm([r["p"] for r in family])):
            row["significant"] = int(adjusted < cfg.alpha)
            tests.append({"variable": row["variable"], "length_controlled": lc, "status": TESTED,
                          "n_questions": row["n_questions"], "statistic": None, "p": row["p"], "p_holm": adjusted,
                          "significant": row["significant"]})
    return {"test": "sign-flip", "models": 2, "tests": tests}


def pairwise_rows(stats: Mapping) -> list[dict]:
    """pairwise.csv's rows from compute_stats' result (stats.json keeps everything else of "pairwise")."""
    return list((stats.get("pairwise") or {}).get("rows") or [])
