"""Variance statistics (thinkprobe.stats) on small hand-built run folders."""
import csv
import json
import math
import re

import numpy as np
import pytest
from scipy.stats import kruskal
from sklearn.metrics import roc_auc_score

from thinkprobe.config import Config
from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.stats import (CSV_COLUMNS, auroc, auroc_se, chance_eps2, compute_stats, holm, icc1, split_half_reliability,
                              stats_settings, write_stats)

from run_folder import write_run


def rows_of(groups: dict, name: str = "idea_count", domains=("x", "y")) -> list[dict]:
    """One row per value: model = group label, domains alternating, `name` set to the value."""
    rows = []
    for model, values in groups.items():
        for k, v in enumerate(values):
            rows.append({"trace_id": f"{model}-{k}", "model": model, "domain": domains[k % len(domains)], name: v})
    return rows


def variable(stats: dict, name: str) -> dict:
    return next(e for e in stats["variables"] if e["variable"] == name)


def test_kruskal_matches_scipy(tmp_path):
    groups = {"a": [1.0, 2.0, 3.5, 3.5], "b": [2.5, 4.0, 5.0, 6.0, 6.5], "c": [7.0, 8.0, 2.0]}
    stats = compute_stats(write_run(tmp_path, rows_of(groups)))
    test = variable(stats, "idea_count")["model"]
    h, p = kruskal(*groups.values())
    assert test["status"] == "ok" and test["k"] == 3 and test["n"] == 12
    assert test["H"] == pytest.approx(h, rel=1e-5)
    assert test["p"] == pytest.approx(p, rel=1e-5)
    assert test["eps2"] == pytest.approx(h / 11, rel=1e-5)


def test_eps2_by_hand(tmp_path):
    # a = 1, 2, 3 and b = 4, 5, 6: rank sums 6 and 15, n = 6, no ties.
    # H = 12 / (6 * 7) * (6**2 / 3 + 15**2 / 3) - 3 * 7 = (2 / 7) * 87 - 21 = 27 / 7; eps2 = H / 5 = 27 / 35.
    stats = compute_stats(write_run(tmp_path, rows_of({"a": [1, 2, 3], "b": [4, 5, 6]})))
    test = variable(stats, "idea_count")["model"]
    assert test["H"] == pytest.approx(27 / 7, rel=1e-5)
    assert test["eps2"] == pytest.approx(27 / 35, rel=1e-5)


def test_model_explains_everything(tmp_path):
    # Every model has its own value, and each model spreads evenly over both domains.
    groups = {"a": [1.0] * 4, "b": [2.0] * 4, "c": [3.0] * 4}
    stats = compute_stats(write_run(tmp_path, rows_of(groups)))
    entry = variable(stats, "idea_count")
    assert entry["model"]["eps2"] == pytest.approx(1.0, abs=1e-6)
    assert entry["model"]["significant"] is True
    assert entry["domain"]["eps2"] == pytest.approx(0.0, abs=1e-6)
    assert entry["ratio"] is None and "0" in entry["ratio_note"]
    # Without ties the maximum is a little under 1: a = 1..3, b = 10..12, c = 20..22 gives H = 7.2, eps2 = 0.9.
    stats = compute_stats(write_run(tmp_path / "no_ties", rows_of({"a": [1, 2, 3], "b": [10, 11, 12], "c": [20, 21, 22]})))
    assert variable(stats, "idea_count")["model"]["eps2"] == pytest.approx(0.9, rel=1e-5)


def test_ratio_is_model_over_domain(tmp_path):
    groups = {"a": [1, 2, 3, 4], "b": [5, 6, 7, 9], "c": [2, 8, 3, 10]}
    entry = variable(compute_stats(write_run(tmp_path, rows_of(groups))), "idea_count")
    assert entry["ratio"] == pytest.approx(entry["model"]["eps2"] / entry["domain"]["eps2"], rel=1e-4)


def test_too_few_groups_are_listed_not_dropped(tmp_path):
    groups = {"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0], "lonely": [9.0]}
    stats = compute_stats(write_run(tmp_path, rows_of(groups)))
    assert stats_settings().min_group == 2
    assert stats["groupings"]["model"]["too_few"] == ["lonely"]
    assert stats["groupings"]["model"]["groups"] == {"a": 3, "b": 3, "lonely": 1}
    test = variable(stats, "idea_count")["model"]
    assert test["too_few"] == ["lonely"] and test["k"] == 2 and test["n"] == 6
    h, p = kruskal(groups["a"], groups["b"])
    assert test["H"] == pytest.approx(h, rel=1e-5)
    lonely = next(m for m in stats["model_profiles"] if m["model"] == "lonely")
    assert lonely["n"] == 1 and lonely["dimensions"]["Breadth"]["ci_low"] is None and "note" in lonely


def test_fewer_than_two_groups_is_not_testable(tmp_path):
    stats = compute_stats(write_run(tmp_path, rows_of({"a": [1.0, 2.0, 3.0], "b": [4.0]}, domains=("x",))))
    for by in ("model", "domain"):
        test = variable(stats, "idea_count")[by]
        assert test["status"] == "not testable"
        assert test["H"] is None and test["eps2"] is None and test["reason"]
    assert "NaN" not in json.dumps(stats)


def test_traces_of_no_named_domain_take_no_part_in_the_domain_tests(tmp_path):
    """Thought Anchors' two agentic scenarios have no MATH type: their traces are grouped as 'unknown'
    beside six named domains, and the domain tests counted 'unknown' as a seventh (k 7)."""
    from thinkprobe.report.text import counted

    rows = rows_of({"a": [1.0, 2.0, 3.0, 4.0, 9.0, 8.0], "b": [5.0, 6.0, 7.0, 8.0, 0.0, 1.0]},
                   domains=("x", "y", "x", "y", "unknown", "unknown"))
    stats = compute_stats(write_run(tmp_path, rows))
    test = variable(stats, "idea_count")["domain"]
    named = [r for r in rows if r["domain"] != "unknown"]
    h, _ = kruskal(*[[r["idea_count"] for r in named if r["domain"] == d] for d in ("x", "y")])
    assert (test["k"], test["n"]) == (2, 8) and test["H"] == pytest.approx(h, rel=1e-5)
    assert stats["groupings"]["domain"] == {"groups": {"x": 4, "y": 4}, "too_few": [], "unnamed": 4}
    assert variable(stats, "idea_count")["model"]["n"] == 12  # the model tests keep every trace
    assert counted(stats["groupings"], "domain", 2) == "2 domains (4 traces without one, not tested)"
    only = compute_stats(write_run(tmp_path / "none", rows_of({"a": [1.0, 2.0], "b": [3.0, 4.0]}, domains=("unknown",))))
    assert variable(only, "idea_count")["domain"]["status"] == "not testable"
    assert counted(only["groupings"], "domain") == "no named domain"


def test_constant_indicator_is_reported_not_a_crash(tmp_path):
    stats = compute_stats(write_run(tmp_path, rows_of({"a": [1, 2, 3], "b": [4, 5, 6]})))
    entry = variable(stats, "branching_factor")  # 0 for every trace
    assert entry["model"]["status"] == "constant" and entry["model"]["eps2"] is None
    assert entry["ratio"] is None
    # Only idea_count varies: one test per grouping enters the Holm family.
    assert stats["settings"]["family_size"] == 2
    assert "NaN" not in json.dumps(stats)


def test_a_mostly_tied_indicator_gets_no_length_controlled_test(tmp_path):
    """initial_diversity 0 in 29 of 30 traces, model b's traces short: a line on log tokens would rank
    the 29 zeros by length and call that a model effect; the length-controlled test is not run (with
    the reason), the raw one is, and a variable with few ties keeps its length-controlled test."""
    rows = []
    for model, tokens in (("a", 400), ("b", 50), ("c", 420)):
        for k in range(10):
            rows.append({"trace_id": f"{model}-{k}", "model": model, "domain": "xy"[k % 2], "tokens": tokens + 7 * k,
                         "initial_diversity": 0.4 if (model, k) == ("a", 0) else 0.0, "idea_count": 3 + k})
    stats = compute_stats(write_run(tmp_path, rows))
    tied = variable(stats, "initial_diversity")
    lc = tied["length_controlled"]
    assert lc["model"]["status"] == "not testable" and lc["model"]["eps2_corrected"] is None
    assert "29 of 30 traces share one value" in lc["model"]["reason"] and lc["fit"]["r2"] is None
    assert tied["reliability"]["split_half_length_controlled"]["status"] == "not testable"
    assert tied["model"]["status"] == "ok"  # the raw test still runs
    assert variable(stats, "idea_count")["length_controlled"]["model"]["status"] == "ok"
    assert stats["settings"]["length_control_max_tied"] == 0.5


def test_a_gain_in_auroc_is_called_one_only_beyond_its_standard_error():
    """The report's verdict on the indicators beyond model + length: 0.88 against 0.56 on 23 traces is a
    gain; 0.70 against 0.60 on the same is within what they can tell apart; on 2,300 it is a gain."""
    from thinkprobe.report.validity import _gain_margin

    def cv(n, wrong, base, full):
        return {"n": n, "n_wrong": wrong, "auroc_model_length": base, "auroc_model_length_indicators": full}

    assert _gain_margin(cv(23, 16, 0.56, 0.88)) < 0.32
    assert _gain_margin(cv(23, 16, 0.60, 0.70)) > 0.10
    assert _gain_margin(cv(2300, 1600, 0.60, 0.70)) < 0.05
    assert auroc_se(0.5, 10, 10) > auroc_se(0.5, 100, 100) > 0


def test_an_aurocs_interval_is_delongs_from_the_placements_even_with_ties():
    """Counts tie: DeLong's variance, pair by pair, on the logit scale, and an interval about as wide as a
    bootstrap's, where Hanley & McNeil's (from the value and counts alone) was wider than both; no variance:
    Hanley & McNeil's."""
    from scipy.special import expit, logit
    from thinkprobe.auroc import auroc_delong, auroc_interval

    rng = np.random.default_rng(4)
    wrong = rng.random(120) < 0.3
    x = rng.poisson(2 + wrong).astype(np.float64)  # an indicator that counts: many ties
    value, low, high = auroc_delong(x, wrong)
    a, b = x[wrong], x[~wrong]
    psi = (a[:, None] > b[None, :]) + 0.5 * (a[:, None] == b[None, :])
    se = np.sqrt(psi.mean(axis=1).var(ddof=1) / len(a) + psi.mean(axis=0).var(ddof=1) / len(b))
    half = 1.959964 * se / (value * (1 - value))
    assert value == pytest.approx(psi.mean()) and (low, high) == (pytest.approx(expit(logit(value) - half)),
                                                                  pytest.approx(expit(logit(value) + half)))
    boot = np.random.default_rng(0)
    draws = [auroc(x[k], wrong[k]) for k in (boot.integers(0, 120, 120) for _ in range(1000))]
    lo_b, hi_b = np.percentile(draws, [2.5, 97.5])
    hm = auroc_interval(value, len(a), len(b))
    assert abs((high - low) - (hi_b - lo_b)) < abs((hm[1] - hm[0]) - (hi_b - lo_b))
    # every wrong trace above every right one: no variance; the interval of one pair the other way round
    # (a review: Hanley & McNeil's [0.90, 1] for 5 against 5 covered none of the samples of AUROC 0.9 that came out perfect)
    one_off = auroc_delong([1, 2, 3, 4, 6, 5, 7, 8, 9, 10], [0] * 5 + [1] * 5)
    assert one_off[0] == pytest.approx(0.96)
    assert auroc_delong(range(1, 11), [0] * 5 + [1] * 5) == pytest.approx((1.0, one_off[1], 1.0))
    assert auroc_delong(range(10, 0, -1), [0] * 5 + [1] * 5) == pytest.approx((0.0, 0.0, 1 - one_off[1]))
    assert auroc_delong([1, 1, 1, 1], [0, 0, 1, 1]) == pytest.approx((0.5, *auroc_interval(0.5, 2, 2)))  # all tied
    assert auroc_delong([1, 2, 3], [0, 0, 1]) is None  # one wrong trace: no variance to estimate


def test_an_aurocs_interval_takes_one_questions_answers_as_a_cluster():
    """A review: DeLong's interval takes traces as independent, so several answers to one question
    narrowed it (a bootstrap over questions gave standard errors 1.05-1.28 times DeLong's). With the
    traces' questions as clusters (Obuchowski's form): one trace a question gives DeLong's interval;
    each answer given three times gives the interval of one answer each, where DeLong's shrinks by
    about the square root of 3; and over questions with a difficulty that drives both score and
    grade, the clustered interval covers the AUROC of the population more often than DeLong's."""
    from thinkprobe.auroc import auroc_delong

    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    wrong = rng.random(200) < 1 / (1 + np.exp(-x))
    plain = auroc_delong(x, wrong)
    assert auroc_delong(x, wrong, clusters=list(range(200))) == pytest.approx(plain, abs=2e-3)
    assert auroc_delong(x, wrong, clusters=[None] * 200) == pytest.approx(plain, abs=2e-3)  # None: its own cluster
    # few of a class: each class's own K / (K - 1) factor (one K for both had the interval 10% too narrow with 5 wrong)
    rare = np.arange(200) % 40 == 0
    assert auroc_delong(x, rare, clusters=list(range(200))) == pytest.approx(auroc_delong(x, rare), abs=2e-3)
    tripled = np.repeat(x, 3), np.repeat(wrong, 3)
    value, low, high = auroc_delong(*tripled, clusters=list(np.repeat(np.arange(200), 3)))
    assert (value, low, high) == pytest.approx(auroc_delong(x, wrong, clusters=list(range(200))))
    narrow = auroc_delong(*tripled)
    assert (narrow[2] - narrow[1]) * 1.5 < high - low

    # fewer than two questions hold a wrong answer: nothing to estimate the spread from
    assert auroc_delong(x, wrong, clusters=np.where(wrong, 0, np.arange(200)).tolist())[1:] == (0.0, 1.0)

    def draw(questions: int, answers: int = 4):
        difficulty = rng.normal(size=questions)
        q = np.repeat(np.arange(questions), answers)
        score = rng.normal(size=len(q)) + 1.2 * difficulty[q]
        return score, rng.random(len(q)) < 1 / (1 + np.exp(-(0.8 * score + 1.5 * difficulty[q]))), q

    population = auroc(*draw(20_000)[:2])
    covered = np.zeros(2)
    for _ in range(300):
        score, w, q = draw(60)
        for k, interval in enumerate((auroc_delong(score, w), auroc_delong(score, w, clusters=list(q)))):
            covered[k] += interval[1] <= population <= interval[2]
    assert covered[1] / 300 >= 0.92 and covered[1] > covered[0] + 6, covered / 300


def test_the_stats_command_prints_the_headline_and_writes_both_files(tmp_path):
    from click.testing import CliRunner

    from thinkprobe.cli import main

    groups = {"a": [1, 2, 3, 4], "b": [8, 9, 10, 11], "c": [4, 5, 6, 7]}
    run = write_run(tmp_path, rows_of(groups))
    res = CliRunner().invoke(main, ["stats", str(run)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("- 12 traces from 3 models and 2 domains") and "wrote " in res.output
    assert (run / "stats.json").exists() and (run / "stats.csv").exists()


def test_a_model_too_small_to_test_is_named_where_the_smallest_model_is_given(tmp_path):
    """ReasonEval: WizardMath70B's one trace is in no test (stats.min_group 2), yet the headline gave
    'smallest model: 1 trace' beside tests over the other four models."""
    from thinkprobe.cognitive_profile import DIMENSIONS
    from thinkprobe.report.text import headline

    rng = np.random.default_rng(3)
    rows = [{"trace_id": f"{m}{k}", "model": m, "domain": "x", "tokens": float(rng.integers(100, 900)),
             **{d: float(rng.normal()) for d in DIMENSIONS}}
            for m, n in (("a", 6), ("b", 5), ("tiny", 1)) for k in range(n)]
    line = headline(compute_stats(write_run(tmp_path / "run", rows)))[0]
    assert "the smallest tested model has 5 traces; too small to test: tiny (1 trace)" in line, line
    line = headline(compute_stats(write_run(tmp_path / "even", [r for r in rows if r["model"] != "tiny"])))[0]
    assert "the smallest model has 5 traces" in line and "too small" not in line, line
    # four small models, one named over two lines: listed on one line, the fourth counted
    more = rows + [{**rows[-1], "trace_id": f"s{k}", "model": name} for k, name in enumerate(("a2", "two\nlines", "zz"))]
    line = headline(compute_stats(write_run(tmp_path / "more", more)))[0]
    assert "too small to test: a2 (1 trace), tiny (1 trace), two\\nlines (1 trace) and 1 more" in line, line


def test_holm_by_hand():
    # Sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 = 0.04 -> raised to 0.06.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_holm_applied_over_the_family(tmp_path):
    rows = rows_of({"a": [1, 2, 3, 4], "b": [5, 6, 7, 9], "c": [2, 8, 3, 10]})
    for k, r in enumerate(rows):
        r["hedging_density"] = (k * 7) % 5
        r["Breadth"] = k % 4
    stats = compute_stats(write_run(tmp_path, rows))
    tested = [(e, by) for e in stats["variables"] for by in ("model", "domain") if e[by]["status"] == "ok"]
    assert stats["settings"]["family_size"] == len(tested) == 6
    expected = holm([e[by]["p"] for e, by in tested])
    assert [e[by]["p_holm"] for e, by in tested] == pytest.approx(expected, rel=1e-4)
    assert all(e[by]["significant"] == (e[by]["p_holm"] < 0.05) for e, by in tested)


def test_bootstrap_intervals(tmp_path):
    rows = rows_of({"a": [1, 2, 3, 4, 5], "b": [1, 1, 2]})
    for k, r in enumerate(rows):
        r.update({"Breadth": k * 0.3 - 1, "Depth": (k % 3) * 0.5, "Efficiency": 0.25})
    run = write_run(tmp_path, rows)
    first, second = compute_stats(run), compute_stats(run)
    assert first["model_profiles"] == second["model_profiles"]
    for mp in first["model_profiles"]:
        assert mp["n"] in (5, 3)
        for dim in DIMENSIONS:
            v = mp["dimensions"][dim]
            assert v["ci_low"] <= v["mean"] + 1e-9 and v["mean"] <= v["ci_high"] + 1e-9
        assert mp["dimensions"]["Efficiency"] == {"mean": 0.25, "ci_low": 0.25, "ci_high": 0.25}
    a = next(mp for mp in first["model_profiles"] if mp["model"] == "a")
    means = [k * 0.3 - 1 for k in range(5)]
    assert a["dimensions"]["Breadth"]["mean"] == pytest.approx(sum(means) / 5, abs=1e-6)
    assert a["dimensions"]["Breadth"]["ci_low"] < a["dimensions"]["Breadth"]["ci_high"]


def test_write_stats_files_are_stable(tmp_path):
    rows = rows_of({"a": [1, 2, 3, 4], "b": [5, 6, 7, 9], "c": [2, 8, 3, 10]})
    run = write_run(tmp_path, rows)
    write_stats(run)
    first = (run / "stats.json").read_bytes(), (run / "stats.csv").read_bytes()
    write_stats(run)
    assert ((run / "stats.json").read_bytes(), (run / "stats.csv").read_bytes()) == first
    data = json.loads(first[0])
    assert len(data["variables"]) == len(INDICATORS) + len(DIMENSIONS)
    lines = first[1].decode().splitlines()
    assert lines[0].split(",") == list(CSV_COLUMNS)
    assert len(lines) == 1 + len(INDICATORS) + len(DIMENSIONS)
    assert "nan" not in first[1].decode().lower()


def test_missing_run_files_say_what_to_pass(tmp_path):
    with pytest.raises(FileNotFoundError, match="thinkprobe profile"):
        compute_stats(tmp_path)


@pytest.mark.parametrize("value", [math.nan, "", "abc"])
def test_unreadable_values_are_counted_as_missing(tmp_path, value):
    rows = rows_of({"a": [1, 2, 3], "b": [4, 5, 6]})
    rows[0]["idea_count"] = value
    test = variable(compute_stats(write_run(tmp_path, rows)), "idea_count")["model"]
    assert test["missing"] == 1 and test["n"] == 5


# --------------------------------------------------------------------------- issue 13: length, chance, reliability, outcome


def direct_chance_eps2(values, labels, permutations, seed):
    """The permutation mean of eps2 straight from scipy: relabel, kruskal, H / (n - 1); every relabelling
    in one call (scipy.stats.kruskal along axis 1 of each group's (permutations, size) values: the same
    H as one call per relabelling, 150 times faster)."""
    rng = np.random.default_rng(seed)
    values, labels = np.asarray(values, dtype=float), np.asarray(labels)
    shuffled = labels[np.array([rng.permutation(len(labels)) for _ in range(permutations)])]
    every = np.broadcast_to(values, shuffled.shape)
    h, _ = kruskal(*(every[shuffled == g].reshape(permutations, -1) for g in sorted(set(labels))), axis=1)
    return float(np.mean(h / (len(values) - 1)))


def test_chance_eps2_is_what_relabelled_data_give_on_average():
    """(k - 1) / (n - 1), ties or not: the mean over many relabellings through scipy converges to it
    (a 200-relabelling mean, used until 2026-12-06, missed it by up to 0.007 on real runs)."""
    labels = ["a"] * 4 + ["b"] * 5 + ["c"] * 3
    assert chance_eps2(3, 12) == 2 / 11
    heavily_tied = [0.0] * 8 + [1.0, 2.0, 2.0, 3.0]
    for values in (heavily_tied, [float(v) for v in range(12)]):
        assert direct_chance_eps2(values, labels, 20000, 0) == pytest.approx(2 / 11, rel=0.02)


def test_stats_json_has_raw_length_controlled_and_corrected_effects(tmp_path):
    rng = np.random.default_rng(1)
    rows = []
    for k in range(60):
        model, domain = "abc"[k % 3], "xy"[(k // 3) % 2]
        tokens = float(rng.integers(100, 5000))
        rows.append({"trace_id": f"t{k}", "model": model, "domain": domain, "tokens": tokens,
                     # idea_count is mostly length; hedging_density is the model plus noise
                     "idea_count": 2 * math.log(tokens) + rng.normal(0, 0.3),
                     "hedging_density": {"a": 0.0, "b": 0.5, "c": 1.0}[model] + rng.normal(0, 0.2)})
    run = write_run(tmp_path, rows)
    stats = compute_stats(run)
    settings = stats["settings"]
    log_tokens = np.log([r["tokens"] for r in rows])
    for name in ("idea_count", "hedging_density"):
        entry = variable(stats, name)
        y = np.array([r[name] for r in rows])
        slope, intercept = np.polyfit(log_tokens, y, 1)
        resid = y - (slope * log_tokens + intercept)
        assert entry["length_controlled"]["fit"]["slope"] == pytest.approx(slope, rel=1e-5)
        for by in ("model", "domain"):
            labels = np.array([r[by] for r in rows])
            groups = sorted(set(labels))
            h_raw, _ = kruskal(*(y[labels == g] for g in groups))
            h_len, _ = kruskal(*(resid[labels == g] for g in groups))
            raw, lc = entry[by], entry["length_controlled"][by]
            assert raw["eps2"] == pytest.approx(h_raw / 59, rel=1e-5)
            assert lc["eps2"] == pytest.approx(h_len / 59, rel=1e-5)
            k = len(groups)
            assert raw["eps2_expected"] == pytest.approx((k - 1) / 59, rel=1e-5)
            assert raw["eps2_corrected"] == pytest.approx(raw["eps2"] - raw["eps2_expected"], abs=2e-6)
            assert lc["eps2_expected"] == pytest.approx((k - 1) / 59, rel=1e-5)
    # Length explains idea_count, so little of its (spurious) effect survives; hedging_density's stays.
    assert variable(stats, "idea_count")["length_controlled"]["fit"]["r2"] > 0.9
    assert variable(stats, "hedging_density")["length_controlled"]["model"]["eps2"] > 0.5
    # stats.csv carries the same numbers
    write_stats(run)
    table = {r["variable"]: r for r in csv.DictReader(open(run / "stats.csv", encoding="utf-8"))}
    hd = variable(stats, "hedging_density")
    assert float(table["hedging_density"]["length_eps2_model"]) == hd["length_controlled"]["model"]["eps2"]
    assert float(table["hedging_density"]["eps2_corrected_domain"]) == hd["domain"]["eps2_corrected"]
    assert float(table["hedging_density"]["split_half_reliability"]) == hd["reliability"]["split_half"]["spearman_brown"]
    assert {r["significant_model"] for r in table.values()} <= {"0", "1", ""}  # flags as 0 / 1, as other tables


def test_ratio_uses_corrected_values_with_a_floor(tmp_path):
    rng = np.random.default_rng(2)
    rows = [{"trace_id": f"t{k}", "model": "abcdef"[k % 6], "domain": "xy"[k % 2], "tokens": 100,
             "idea_count": rng.normal(), "hedging_density": "abcdef".index("abcdef"[k % 6]) + rng.normal(0, 0.5)}
            for k in range(120)]
    stats = compute_stats(write_run(tmp_path, rows))
    floor = stats["settings"]["ratio_floor"]
    noise = variable(stats, "idea_count")
    # Pure noise: raw eps2 by 6 models is about 5 / 119, but the corrected values are near zero: no ratio.
    assert noise["model"]["eps2_expected"] == pytest.approx(5 / 119, rel=0.25)
    if max(noise["model"]["eps2_corrected"], noise["domain"]["eps2_corrected"]) < floor:
        assert noise["ratio_corrected"]["value"] is None and "floor" in noise["ratio_corrected"]["note"]
    strong = variable(stats, "hedging_density")
    cm, cd = strong["model"]["eps2_corrected"], strong["domain"]["eps2_corrected"]
    assert strong["ratio_corrected"]["value"] == pytest.approx(max(cm, floor) / max(cd, floor), rel=1e-4)
    assert strong["ratio_corrected"]["value"] <= 1 / floor


def direct_split_half(values, models, splits, seed):
    rng = np.random.default_rng(seed)
    groups = {m: np.array([v for v, mm in zip(values, models) if mm == m]) for m in sorted(set(models))}
    rs = []
    for _ in range(splits):
        a, b = [], []
        for v in groups.values():
            order = rng.permutation(len(v))
            a.append(v[order[: len(v) // 2]].mean())
            b.append(v[order[len(v) // 2:]].mean())
        rs.append(np.corrcoef(a, b)[0, 1])
    r = float(np.mean(rs))
    return r, 2 * r / (1 + r)


def test_split_half_reliability_of_model_means(tmp_path):
    rng = np.random.default_rng(3)
    rows = []
    for k in range(48):
        model = "abcd"[k % 4]
        rows.append({"trace_id": f"t{k}", "model": model, "domain": "xy"[k % 2], "tokens": 50,
                     "critique_ratio": "abcd".index(model) + rng.normal(0, 0.5),  # clear model differences
                     "idea_count": rng.normal()})  # none
    stats = compute_stats(write_run(tmp_path, rows))
    s = stats["settings"]
    for name in ("critique_ratio", "idea_count"):
        rel = variable(stats, name)["reliability"]["split_half"]
        r, sb = direct_split_half([row[name] for row in rows], [row["model"] for row in rows],
                                  s["split_halves"], s["split_half_seed"])
        assert rel["r"] == pytest.approx(r, rel=1e-5) and rel["spearman_brown"] == pytest.approx(sb, rel=1e-5)
    assert variable(stats, "critique_ratio")["reliability"]["supports_model_differences"] is True
    assert variable(stats, "idea_count")["reliability"]["supports_model_differences"] is False
    # Two models cannot give a correlation across models: said, not computed.
    assert split_half_reliability([1, 2, 3, 4], ["a", "a", "b", "b"], 10, 0)["status"] == "not testable"


def test_icc_over_repeated_answers_to_one_question(tmp_path):
    # Two models x three questions x two generations; balanced, so ICC(1) = (MSB - MSW) / (MSB + MSW).
    table = {("a", "q1"): [1.0, 1.4], ("a", "q2"): [3.0, 2.6], ("a", "q3"): [2.0, 2.5],
             ("b", "q1"): [4.0, 3.0], ("b", "q2"): [0.5, 1.5], ("b", "q3"): [5.0, 5.2]}
    rows, graphs = [], []
    for (model, q), values in table.items():
        for k, v in enumerate(values):
            tid = f"{model}-{q}-{k}"
            rows.append({"trace_id": tid, "model": model, "domain": "x", "tokens": 10, "idea_count": v})
            graphs.append({"trace_id": tid, "model": model, "domain": "x", "units": [], "edges": [],
                           "question": f"question {q}?", "correct": None})
    stats = compute_stats(write_run(tmp_path, rows, graphs))
    icc = variable(stats, "idea_count")["reliability"]["icc"]
    cells = np.array(list(table.values()))
    msb = 2 * ((cells.mean(axis=1) - cells.mean()) ** 2).sum() / (6 - 1)
    msw = ((cells - cells.mean(axis=1, keepdims=True)) ** 2).sum() / (12 - 6)
    expected = (msb - msw) / (msb + msw)
    assert icc["clusters"] == 6 and icc["k0"] == pytest.approx(2.0)
    assert icc["icc"] == pytest.approx(expected, rel=1e-5)
    assert icc["icc_mean"] == pytest.approx(2 * expected / (1 + expected), rel=1e-5)
    # One trace per (model, question): no ICC, and it says why.
    assert icc1([1.0, 2.0, 3.0], [("a", "q1"), ("a", "q2"), ("b", "q1")])["status"] == "not testable"
    # Three pairs are too few (the report printed ICC -0.77 and "reliability" -6.81 from three); a negative
    # ICC has no reliability of the mean
    three = icc1([1.0, 1.2, 5.0, 4.0, 2.0, 2.4], [("a", "q1")] * 2 + [("a", "q2")] * 2 + [("b", "q1")] * 2)
    assert three["status"] == "not testable" and "fewer than 5" in three["reason"]
    negative = icc1([1.0, 5.0] * 5, [(m, q) for m in "ab" for q in ("q1", "q2", "q3") for _ in range(2)][:10])
    assert negative["icc"] < 0 and negative["icc_mean"] is None


def test_auroc_is_the_share_of_pairs_ordered_right():
    scores = [0.1, 0.4, 0.35, 0.8, 0.8, 0.2, 0.9]
    wrong = [False, True, False, True, False, False, True]
    pairs = [(s, t) for s, w in zip(scores, wrong) if w for t, v in zip(scores, wrong) if not v]
    by_hand = sum(1.0 if s > t else 0.5 if s == t else 0.0 for s, t in pairs) / len(pairs)
    assert auroc(scores, wrong) == pytest.approx(by_hand)
    assert auroc([1, 2], [True, True]) is None


def test_outcome_validity_pooled_within_model_and_cross_validated(tmp_path):
    # Model a is right more often and writes longer traces: pooled, length looks like a predictor of
    # a correct answer; within each model, only hedging_density carries signal.
    rng = np.random.default_rng(4)
    rows, graphs = [], []
    for k in range(160):
        model = "ab"[k % 2]
        wrong = bool(rng.random() < (0.2 if model == "a" else 0.7))
        tokens = float(rng.integers(2000, 4000) if model == "a" else rng.integers(200, 400))
        rows.append({"trace_id": f"t{k}", "model": model, "domain": "xy"[k % 4 // 2], "tokens": tokens,
                     "idea_count": math.log(tokens) + rng.normal(0, 0.1),
                     "hedging_density": float(wrong) + rng.normal(0, 0.6)})
        graphs.append({"trace_id": f"t{k}", "model": model, "domain": rows[-1]["domain"], "units": [], "edges": [],
                       "question": f"q{k}", "correct": not wrong})
    stats = compute_stats(write_run(tmp_path, rows, graphs))
    assert stats["outcome"]["graded"] == 160 and stats["outcome"]["labels_from"] == "graphs.jsonl correct"
    wrong = np.array([not g["correct"] for g in graphs])
    models = np.array([r["model"] for r in rows])
    for name in ("idea_count", "hedging_density"):
        out = variable(stats, name)["outcome"]
        x = np.array([r[name] for r in rows])
        assert out["auroc_wrong"] == pytest.approx(roc_auc_score(wrong, x), rel=1e-5)
        weights = [(wrong[models == m].sum() * (~wrong[models == m]).sum()) for m in "ab"]
        per = [roc_auc_score(wrong[models == m], x[models == m]) for m in "ab"]
        assert out["auroc_wrong_within_model"] == pytest.approx(np.average(per, weights=weights), rel=1e-5)
    assert variable(stats, "idea_count")["outcome"]["auroc_wrong"] < 0.3  # pooled: length "predicts" correct
    assert 0.35 < variable(stats, "idea_count")["outcome"]["auroc_wrong_within_model"] < 0.65  # within: nothing
    assert variable(stats, "hedging_density")["outcome"]["auroc_wrong_within_model"] > 0.75
    cv = stats["outcome"]["cross_validated"]
    assert cv["status"] == "ok" and cv["n"] == 160
    assert cv["auroc_model_length_indicators"] > cv["auroc_model_length"] + 0.05
    assert cv["gain"] == pytest.approx(cv["auroc_model_length_indicators"] - cv["auroc_model_length"], abs=2e-6)
    # each AUROC is the mean over cv_repeats draws of the folds (one draw's verdict moved with its seed)
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    features = np.column_stack([models == "b", np.log([r["tokens"] for r in rows])])
    draws = [roc_auc_score(wrong, cross_val_predict(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, solver="newton-cholesky")), features, wrong,
        cv=StratifiedKFold(5, shuffle=True, random_state=seed), method="predict_proba")[:, 1]) for seed in range(10)]
    assert cv["repeats"] == 10 and cv["auroc_model_length"] == pytest.approx(np.mean(draws), abs=2e-6)
    from thinkprobe.report.text import headline
    from thinkprobe.report.validity import _gain_margin, outcome_text

    assert "5 stratified folds drawn 10 times, seeds 0 to 9, AUROCs averaged" in outcome_text(stats)
    older = {**stats, "outcome": {**stats["outcome"], "cross_validated": {k: v for k, v in cv.items() if k != "repeats"}}}
    assert "(5 stratified folds, seed 0)" in outcome_text(older)  # a stats.json written before the repeats
    # the pooled AUROCs carry their interval: DeLong's, which a bootstrap agrees with
    from thinkprobe.report.validity import outcome_rows

    row = next(r for r in outcome_rows(stats) if r[0] == "hedging_density")
    value, lo, hi = map(float, re.fullmatch(r"([\d.]+) \[([\d.]+), ([\d.]+)\]", row[1]).groups())
    x, boot = np.array([r["hedging_density"] for r in rows]), np.random.default_rng(0)
    draws = []
    for _ in range(400):
        k = boot.integers(0, len(x), len(x))
        draws.append(roc_auc_score(wrong[k], x[k]))
    assert value == pytest.approx(roc_auc_score(wrong, x), abs=0.005)
    assert lo == pytest.approx(np.percentile(draws, 2.5), abs=0.03) and hi == pytest.approx(np.percentile(draws, 97.5), abs=0.03)

    sentence = next(h for h in headline(stats) if h.startswith("On 160 graded traces"))
    from thinkprobe.report.validity import gain_verdict

    assert f"adding the indicators to model + length {gain_verdict(cv['gain'], _gain_margin(cv))} the prediction" in sentence
    assert [gain_verdict(g, 0.11) for g in (0.2, 0.09, 0.02, -0.08, -0.2)] == [
        "improves", "may improve, by less than these traces can confirm,", "does not measurably change",
        "may worsen, by less than these traces can confirm,", "worsens"]
    # a fit without the indicators worse than chance: the gain is counted from 0.5 (MR-BEN: 0.51 with them,
    # 0.27 without had read "improves")
    chance = {**stats, "outcome": {**stats["outcome"], "cross_validated": {
        **cv, "auroc_model_length_indicators": 0.51, "auroc_model_length": 0.27, "gain": 0.24}}}
    sentence = next(h for h in headline(chance) if h.startswith("On 160 graded traces"))
    assert "adding the indicators to model + length does not measurably change the prediction" in sentence
    assert "the fit without them does worse than chance on held-out folds, so the gain is counted from 0.5" in sentence


def test_wrong_answers_that_follow_the_domain_are_said_so(tmp_path):
    """MiP-Overthinking: nearly every wrong answer is in the missing-premise condition, so an indicator
    that differs between conditions 'predicts' a wrong answer. The domain's own AUROC (each trace
    scored by its domain's share wrong) is in stats.json, and the headline and the outcome section
    say it when it reaches 0.7; a domain unrelated to the grades gets no such note."""
    from sklearn.metrics import roc_auc_score

    from thinkprobe.report.text import headline
    from thinkprobe.report.validity import outcome_text

    rng = np.random.default_rng(5)
    rows, graphs = [], []
    for k in range(120):
        domain, model = ("hard", "easy")[k % 2], "ab"[k % 4 // 2]
        wrong = bool(rng.random() < (0.85 if domain == "hard" else 0.15))
        rows.append({"trace_id": f"t{k}", "model": model, "domain": domain, "tokens": float(rng.integers(200, 4000)),
                     "idea_count": float(domain == "hard") + rng.normal(0, 0.5)})
        graphs.append({"trace_id": f"t{k}", "model": model, "domain": domain, "units": [], "edges": [],
                       "question": f"q{k}", "correct": not wrong})
    stats = compute_stats(write_run(tmp_path / "hard", rows, graphs))
    cv = stats["outcome"]["cross_validated"]
    wrong = np.array([not g["correct"] for g in graphs])
    share = {d: wrong[[r["domain"] == d for r in rows]].mean() for d in ("hard", "easy")}
    domain = cv["factor_auroc"]["domain"]
    assert domain["auroc"] == pytest.approx(roc_auc_score(wrong, [share[r["domain"]] for r in rows]), rel=1e-5)
    assert domain["auroc"] > 0.7 and domain["p"] < 0.01 and 0.45 < domain["chance"] < 0.6
    assert cv["factor_auroc"]["group"] is None
    note = f"the domain alone tells wrong from right at AUROC {domain['auroc']:.2f}"
    assert note in next(h for h in headline(stats) if h.startswith("On 120 graded traces")) and note in outcome_text(stats)
    for r, g in zip(rows, graphs):  # the same grades, domains drawn apart from them
        r["domain"] = g["domain"] = ("hard", "easy")[int(rng.integers(0, 2))]
    stats = compute_stats(write_run(tmp_path / "even", rows, graphs))
    assert stats["outcome"]["cross_validated"]["factor_auroc"]["domain"]["auroc"] < 0.7
    assert "alone tells wrong from right" not in outcome_text(stats)
    # many small levels: the level's own share tells any grades apart in-sample (tts_knowledge's 11 budgets
    # over 31 graded traces gave 0.77, random grades 0.82 on average); shuffled grades say so, and no note
    for k, (r, g) in enumerate(zip(rows, graphs)):
        r["domain"] = g["domain"] = f"level{k // 2}"
    stats = compute_stats(write_run(tmp_path / "small", rows, graphs))
    small = stats["outcome"]["cross_validated"]["factor_auroc"]["domain"]
    assert small["chance"] > 0.7 and small["p"] > 0.05 and "alone tells wrong from right" not in outcome_text(stats)


def test_the_within_model_auroc_needs_enough_of_each_kind_and_says_its_pairs(tmp_path):
    """tts_knowledge: a within-model AUROC of 0.80 rested on 20 pairs and 8 right answers, with no count
    shown. Under stats.min_class right (or wrong) answers among the models with both kinds there is
    none, and the outcome text counts the pairs."""
    from thinkprobe.report.validity import outcome_text

    rng = np.random.default_rng(6)

    def run(name, right_per_model):  # 10 wrong traces per model besides; m_all is right every time
        rows, graphs = [], []
        for model, right in {**right_per_model, "m_all": 5}.items():
            for k in range(right + (0 if model == "m_all" else 10)):
                t = f"{model}-{k}"
                rows.append({"trace_id": t, "model": model, "domain": "d", "tokens": 100.0 + k,
                             "idea_count": float(rng.normal())})
                graphs.append({"trace_id": t, "model": model, "domain": "d", "units": [], "edges": [], "correct": k < right})
        return compute_stats(write_run(tmp_path / name, rows, graphs))

    few = run("few", {"m0": 2, "m1": 1})  # 8 right pooled, but 3 among the models with both kinds
    out = variable(few, "idea_count")["outcome"]
    assert out["auroc_wrong"] is not None and out["auroc_wrong_within_model"] is None
    assert "30 pairs from 20 wrong and 3 right answers of the 2 models with both; too few for a within-model AUROC, which needs 5 wrong and 5 right answers among them" in outcome_text(few)
    assert out["within_ci_low"] is None
    enough = run("enough", {"m0": 3, "m1": 3})
    out = variable(enough, "idea_count")["outcome"]
    assert out["within_ci_low"] <= out["auroc_wrong_within_model"] <= out["within_ci_high"]
    assert "60 pairs from 20 wrong and 6 right answers of the 2 models with both; its 95% interval" in outcome_text(enough)


def test_the_within_model_aurocs_interval_weights_each_models_pairs():
    """A review: the within-model AUROC carried no interval. Its variance is that of the pairs-weighted
    sum of the models' AUROCs: with one model it is that model's DeLong interval (as wide, within the
    K / (K - 1) factor), and two models that give the same traces twice give the value of one and an
    interval about 1/sqrt(2) as wide; the same answers given by both models to one question, clustered
    by it, give back the width of one model."""
    from thinkprobe.auroc import auroc_delong, auroc_within

    rng = np.random.default_rng(3)
    x = rng.normal(size=120)
    wrong = rng.random(120) < 1 / (1 + np.exp(-1.5 * x))
    one = np.array(["m"] * 120)
    value, per, (low, high) = auroc_within(x, wrong, one)
    delong = auroc_delong(x, wrong)
    assert value == pytest.approx(delong[0]) and per["m"]["auroc"] == pytest.approx(delong[0])
    assert (low, high) == pytest.approx(delong[1:], abs=0.01)
    twice = np.concatenate([x, x]), np.concatenate([wrong, wrong]), np.array(["a"] * 120 + ["b"] * 120)
    value2, _, (low2, high2) = auroc_within(*twice)
    assert value2 == pytest.approx(value) and (high2 - low2) == pytest.approx((high - low) / np.sqrt(2), rel=0.05)
    asked = list(range(120)) * 2  # each question answered by both models
    _, _, (low3, high3) = auroc_within(*twice, clusters=asked)
    assert (high3 - low3) == pytest.approx(high - low, rel=0.05)


def test_no_icc_says_why_and_counts_the_traces_without_a_question(tmp_path):
    """'No ICC: no model answered one question more than once' was said of a run whose traces had no
    question to pair them by (QwQ's normal MiP file), and of one with 3 pairs where 5 are needed."""
    from thinkprobe.report.text import no_icc_text

    rows, graphs = [], []
    for k in range(12):  # 3 questions answered twice by model a; 6 traces with no question at all
        question = f"q{k // 2}" if k < 6 else None
        rows.append({"trace_id": f"t{k}", "model": "a", "domain": "d", "tokens": 10.0, "idea_count": float(k)})
        graphs.append({"trace_id": f"t{k}", "model": "a", "domain": "d", "units": [], "edges": [], "question": question})
    stats = compute_stats(write_run(tmp_path, rows, graphs))
    assert stats["n_without_question"] == 6
    assert no_icc_text(stats) == ("No ICC: 3 (model, question) pairs with 2 or more traces, and it needs 5 among the "
                                  "traces whose question is known; 6 of the run's 12 have no question text or id, so "
                                  "are in no pair.")


def test_no_labels_no_outcome(tmp_path):
    stats = compute_stats(write_run(tmp_path, rows_of({"a": [1, 2, 3], "b": [4, 5, 6]})))
    assert variable(stats, "idea_count")["outcome"] is None
    assert stats["outcome"]["cross_validated"]["status"] == "not testable"


def test_settings_come_from_the_config_recorded_in_the_run(tmp_path):
    run = write_run(tmp_path, rows_of({"a": [1, 2, 3, 4], "b": [5, 6, 7, 9], "c": [2, 8, 3, 10]}))
    (run / "run.json").write_text(json.dumps({"config": {"stats": {"alpha": 0.01, "factor_seed": 3}}}))
    stats = compute_stats(run)
    assert stats["settings"]["alpha"] == 0.01 and stats["settings"]["factor_seed"] == 3


def test_a_run_recorded_with_the_old_permutation_keys_still_reads(tmp_path):
    """Until 2026-12-06 a zero stats.permutations turned the chance correction off (and the report
    then failed on the missing corrected eps2) and permutation_seed did nothing; a review also found
    today's short-lived chance_corrected: false failing the same way. The correction is always on; a
    run that recorded those keys still reads, corrected, with today's factor shuffles."""
    from thinkprobe.report.text import headline

    for recorded in ({"permutations": 0, "permutation_seed": 3}, {"permutations": 200}, {"chance_corrected": False}):
        run = write_run(tmp_path / str(len(recorded)) / str(sorted(recorded)[0]),
                        rows_of({"a": [1, 2, 3, 4], "b": [5, 6, 7, 9]}))
        (run / "run.json").write_text(json.dumps({"config": {"stats": recorded}}))
        stats = compute_stats(run)
        assert (stats["settings"]["factor_shuffles"], stats["settings"]["factor_seed"]) == (1000, 0)
        assert "eps2_expected" in variable(stats, "idea_count")["model"] and headline(stats)
    with pytest.raises(Exception, match="stats.permutations.*chance correction is always applied"):
        Config.load(overrides={"stats": {"permutations": 0}})  # in a config file, the old key is named, not misread


def test_the_factor_shuffles_follow_the_config(tmp_path):
    """factor_shuffles and factor_seed set factor_auroc's shuffles (they were a constant and cv_seed);
    0 shuffles: no factor test."""
    rng = np.random.default_rng(1)
    rows, graphs = [], []
    for k in range(40):
        domain, wrong = ("hard", "easy")[k % 2], bool(rng.random() < (0.7 if k % 2 == 0 else 0.2))
        rows.append({"trace_id": f"t{k}", "model": "m", "domain": domain, "tokens": 100 + k,
                     "idea_count": float(rng.normal())})
        graphs.append({"trace_id": f"t{k}", "model": "m", "domain": domain, "units": [], "edges": [],
                       "question": f"q{k}", "correct": not wrong})
    base = write_run(tmp_path / "base", rows, graphs)
    default = compute_stats(base)["outcome"]["cross_validated"]["factor_auroc"]["domain"]
    for stats, expect in (({"factor_seed": 5}, "other chance"), ({"factor_shuffles": 0}, None)):
        run = write_run(tmp_path / str(stats), rows, graphs)
        (run / "run.json").write_text(json.dumps({"config": {"stats": stats}}))
        got = compute_stats(run)["outcome"]["cross_validated"]["factor_auroc"]["domain"]
        if expect is None:
            assert got is None
        else:
            assert got["auroc"] == default["auroc"] and got["chance"] != default["chance"]


def test_models_unevenly_crossed_with_domains_are_said_so():
    """A MiP run where QwQ had no svamp traces: its 'model difference' in Efficiency vanished within each
    domain, and the headline did not say that models and domains were confounded."""
    from thinkprobe.report.text import _crossing_sentence
    from thinkprobe.crossing import model_crossing

    even = [{"model": m, "domain": d} for m in ("a", "b", "c") for d in ("x", "y") for _ in range(4)]
    assert model_crossing(even, "domain") == {"models": 3, "levels": 2, "empty_cells": [], "cramers_v": 0.0,
                                              "p": 1.0, "uneven": False}
    lopsided = [r for r in even if (r["model"], r["domain"]) != ("c", "y")]
    crossing = model_crossing(lopsided, "domain")
    assert crossing["empty_cells"] == [["c", "y"]] and crossing["uneven"]
    assert not model_crossing([{"model": "a", "domain": d} for d in "xy"], "domain")["uneven"]  # one model
    stats = {"crossing": {"domain": crossing}}
    assert _crossing_sentence(stats).startswith("Models are unevenly crossed with domains (by domain: c has no y traces, "
                                                "Cramér's V ")
    assert _crossing_sentence({"crossing": {"domain": model_crossing(even, "domain")}}) is None
    assert _crossing_sentence(stats).endswith("compare models within one domain (model × domain table, "
                                              "`thinkprobe select --domain`).")
    by_group = model_crossing([{"model": m, "group": "MiP" if m == "a" else "normal"} for m in "ab" for _ in range(4)],
                              "group")
    assert _crossing_sentence({"crossing": {"group": by_group}}).endswith(
        "compare models within one group (`thinkprobe select --group`).")  # the group's advice, not the domain's


def test_a_significant_but_negligible_domain_effect_is_not_called_no_difference():
    from thinkprobe.report.text import _factor_sentence

    def dim(name, significant, eps):
        tested = {"status": "ok", "significant": significant, "eps2_corrected": eps}
        return {"kind": "dimension", "variable": name, "length_controlled": {"domain": tested}}

    stats = {"groupings": {"domain": {"groups": {"x": 5, "y": 5}}}, "settings": {"ratio_floor": 0.01},
             "variables": [dim("Breadth", True, 0.005), dim("Depth", False, 0.3)]}
    assert _factor_sentence(stats, "domain").startswith("By domain, Breadth differs significantly but by less than")
    stats["variables"][0] = dim("Breadth", False, 0.005)
    assert _factor_sentence(stats, "domain").startswith("No dimension differs significantly by domain")


def test_a_dimension_not_testable_after_length_control_is_not_called_no_difference():
    """Venhoff's run: Structure's values mostly tied (33 of 60 traces alike), so it had no length-controlled
    test, and the headline said 'no dimension separates the models' as if it had been tested."""
    from thinkprobe.report.text import _factor_sentence

    untested = {"status": "not testable", "significant": None, "eps2_corrected": None}
    quiet = {"status": "ok", "significant": False, "eps2_corrected": 0.02}
    stats = {"groupings": {"domain": {"groups": {"x": 5, "y": 5}}}, "settings": {"ratio_floor": 0.01},
             "variables": [{"kind": "dimension", "variable": v, "length_controlled": {"domain": t}}
                           for v, t in (("Structure", untested), ("Depth", quiet))]}
    assert _factor_sentence(stats, "domain") == (
        "No tested dimension differs significantly by domain once length and chance are removed (Holm-corrected, "
        "corrected ε² at least 0.01) (Structure could not be tested once length is removed).")
    stats["variables"][1]["length_controlled"]["domain"] = untested
    assert _factor_sentence(stats, "domain") == "No dimension could be tested by domain once length is removed (see the effect sizes)."


def test_wrong_answers_without_any_answer_are_said_so_beside_the_outcome_auroc():
    """ReasonEval's unfinished PRM800K solutions: 22 of 24 'wrong' had no final answer at all, and the
    headline read a wrong-answer signal out of them without a word."""
    from thinkprobe.report.validity import _no_answer_note

    assert _no_answer_note({"wrong_no_answer": 0}) == "" and _no_answer_note({}) == ""
    assert _no_answer_note({"wrong_no_answer": 22}).startswith(", 22 of them because no final answer was found")


def test_a_group_that_is_the_model_under_another_name_is_said_so():
    """tts_knowledge's budget in the file name, one budget per model: 'the group matters most for
    Metacognition' was the model effect again."""
    from thinkprobe.report.text import _factor_sentence

    tested = {"status": "ok", "significant": True, "eps2_corrected": 0.5}
    stats = {"groupings": {"group": {"groups": {"a": 5, "b": 5}}}, "settings": {"ratio_floor": 0.01},
             "crossing": {"group": {"cramers_v": 1.0}},
             "variables": [{"kind": "dimension", "variable": "Metacognition", "length_controlled": {"group": tested}}]}
    assert _factor_sentence(stats, "group") == ("The group splits the traces as the model does (Cramér's V 1.00): "
                                                "what differs by group here is what differs by model.")


def test_domains_and_groups_unevenly_crossed_are_said_so():
    """A MiP run: all missing-premise traces were math and gsm8k only normal, and the report spoke of
    the domain and of the group each as if the other were not there."""
    from thinkprobe.crossing import factor_crossing
    from thinkprobe.report.text import _domain_group_sentence

    rows = ([{"domain": "math", "group": g} for g in ("MiP", "normal") for _ in range(4)]
            + [{"domain": "gsm8k", "group": "normal"} for _ in range(4)])
    crossing = factor_crossing(rows, "domain", "group")
    assert crossing["empty_cells"] == [["gsm8k", "MiP"]] and crossing["uneven"]
    assert _domain_group_sentence({"domain_group_crossing": crossing}).startswith(
        "Domains and groups are unevenly crossed (no MiP traces of gsm8k, Cramér's V ")
    even = [{"domain": d, "group": g} for d in ("math", "gsm8k") for g in ("MiP", "normal") for _ in range(3)]
    assert _domain_group_sentence({"domain_group_crossing": factor_crossing(even, "domain", "group")}) is None


def test_split_half_of_a_value_one_model_alone_has_is_not_a_perfect_reliability():
    """cross_branch_connectivity non-zero in 3 of 60 traces, all grok-3-mini's (a review, tts_knowledge):
    splits with one half all zeros were dropped, and in every other split [x, 0, 0, 0] against
    [y, 0, 0, 0] correlated 1, so split-half said 1.00 and the run 'supported model differences'."""
    models = [m for m in "abcd" for _ in range(15)]
    rare = [0.0] * 60
    rare[0], rare[1], rare[2] = 0.2, 0.1, 0.3
    out = split_half_reliability(rare, models, 200, 0, min_varying=10)
    assert out["status"] == "not testable" and "only 3 of 60 traces differ from the most common value (0)" in out["reason"]
    # without the guard, the splits whose one half is all zeros count as no agreement, not as absent
    loose = split_half_reliability(rare, models, 200, 0)
    assert loose["splits"] == 200 and 0 < loose["splits_one_half_constant"] < 200
    assert loose["r"] < 1 - loose["splits_one_half_constant"] / 200 + 1e-9
    # real differences spread over many traces are untouched by the guard
    rng = np.random.default_rng(0)
    spread = [("abcd".index(m) + rng.normal(0, 0.5)) for m in models]
    assert (split_half_reliability(spread, models, 50, 0, min_varying=10)
            == split_half_reliability(spread, models, 50, 0))


# --------------------------------------------------------------------------- bootstrap intervals of eps2 and the ratio


def effect_run_rows(n_per: int = 20, seed: int = 3) -> list[dict]:
    """Three models x n_per traces over two domains: idea_count and Depth differ strongly by model, backtracking_rate
    is noise, cross_branch_connectivity is 0 everywhere; tokens vary, so the length-controlled tests run."""
    rng = np.random.default_rng(seed)
    rows = []
    for m, model in enumerate(("a", "b", "c")):
        for k in range(n_per):
            rows.append({"trace_id": f"{model}-{k}", "model": model, "domain": ("x", "y")[k % 2],
                         "tokens": int(rng.integers(50, 500)), "idea_count": round(2.0 * m + rng.normal(), 1),
                         "backtracking_rate": float(rng.normal()), "Depth": float(m + 0.5 * rng.normal())})
    return rows


def slow_corrected_eps2(values, labels, index, min_group=2):
    """Chance-corrected eps2 of each resample (rows of `index`) by scipy.stats.kruskal, over the traces and
    categories the point estimate's test uses (a category drawn no trace of leaves k); NaN for none."""
    values = np.asarray(values, dtype=np.float64)
    counts = {}
    for v, g in zip(values, labels):
        if g is not None and np.isfinite(v):
            counts[g] = counts.get(g, 0) + 1
    kept = {g for g, c in counts.items() if c >= min_group}
    out = []
    for draw in index:
        groups = {}
        for i in draw:
            if labels[i] in kept and np.isfinite(values[i]):
                groups.setdefault(labels[i], []).append(values[i])
        n, k = sum(map(len, groups.values())), len(groups)
        out.append(math.nan if k < 2 else kruskal(*groups.values())[0] / (n - 1) - (k - 1) / (n - 1))
    return np.array(out)


def test_the_vectorised_eps2_of_each_resample_is_scipys_kruskal():
    from thinkprobe.effect_intervals import corrected_eps2_draws, label_codes, percentile_interval, plan_test

    rng = np.random.default_rng(7)
    n = 40
    values = np.round(rng.normal(size=n), 1)  # ties, and a trace drawn twice ties with itself
    values[5] = math.nan
    models = [("a", "b", "c")[i % 3] for i in range(n)]
    models[0], models[1], models[2] = "tiny", "tiny", "lone"  # 2 traces (often drawn none), 1 (left out)
    domains = [None if i % 7 == 0 else ("x", "y")[i % 2] for i in range(n)]
    index = rng.integers(0, n, size=(60, n))
    counts = np.stack([np.bincount(row, minlength=n) for row in index], axis=1).astype(np.float64)
    rankings, out = {}, {}
    for by, labels in (("model", models), ("domain", domains)):
        plan_test(rankings, ("v",), by, values, label_codes(labels)[1], 2)
        out[by] = np.full(len(index), math.nan)
    assert len(rankings) == 2  # the domain's test leaves out the traces without one: a set of its own
    corrected_eps2_draws(counts, list(rankings.values()), out, slice(0, len(index)))
    for by, labels in (("model", models), ("domain", domains)):
        slow = slow_corrected_eps2(values, labels, index)
        assert np.isfinite(slow).all()
        assert out[by] == pytest.approx(slow, abs=1e-9)
        assert percentile_interval(out[by], 0.95) == pytest.approx(list(np.percentile(slow, [2.5, 97.5])), abs=1e-9)
    # some resamples drew neither "tiny" trace: k is smaller there, and still matches
    assert any(not ({0, 1} & set(row)) for row in index)


def test_the_intervals_in_stats_json_are_scipys_on_the_seeded_resamples(tmp_path):
    from thinkprobe.effect_intervals import floored_ratio
    from thinkprobe.stats import length_residuals

    rows = effect_run_rows()
    stats = compute_stats(write_run(tmp_path, rows))
    cfg = stats["settings"]
    n = len(rows)
    index = np.random.default_rng(cfg["bootstrap_seed"]).integers(0, n, size=(cfg["bootstrap_resamples"], n))
    entry = variable(stats, "Depth")
    values = [r["Depth"] for r in rows]
    resid, _ = length_residuals(values, [math.log(r["tokens"]) for r in rows])  # the whole-run fit, not refitted
    for x, tests, ratio in ((values, entry, "ratio_corrected"), (resid, entry["length_controlled"], "ratio_length_corrected")):
        slow = {by: slow_corrected_eps2(x, [r[by] for r in rows], index) for by in ("model", "domain")}
        for by in ("model", "domain"):
            assert tests[by]["eps2_corrected_ci"] == pytest.approx(list(np.percentile(slow[by], [2.5, 97.5])), rel=1e-5)
        expected = np.percentile(floored_ratio(slow["model"], slow["domain"], cfg["ratio_floor"]), [2.5, 97.5])
        assert entry[ratio]["value"] is not None and entry[ratio]["ci"] == pytest.approx(list(expected), rel=1e-5)


def test_a_strong_effect_excludes_zero_and_noise_includes_it(tmp_path):
    stats = compute_stats(write_run(tmp_path, effect_run_rows()))
    for name in ("idea_count", "Depth", "backtracking_rate"):
        for tests in (variable(stats, name), variable(stats, name)["length_controlled"]):
            for by in ("model", "domain"):
                low, high = tests[by]["eps2_corrected_ci"]
                assert low <= tests[by]["eps2_corrected"] <= high, (name, by)
    for name in ("idea_count", "Depth"):
        assert variable(stats, name)["model"]["eps2_corrected_ci"][0] > 0.3
        assert variable(stats, name)["length_controlled"]["model"]["eps2_corrected_ci"][0] > 0.3
        ratio = variable(stats, name)["ratio_corrected"]
        assert ratio["ci"][0] <= ratio["value"] <= ratio["ci"][1]
    noise = variable(stats, "backtracking_rate")
    for by in ("model", "domain"):
        low, high = noise[by]["eps2_corrected_ci"]
        assert low < 0 < high, by
    # a test that did not run has no interval, in stats.json and stats.csv
    constant = variable(stats, "cross_branch_connectivity")
    assert constant["model"]["status"] == "constant" and constant["model"]["eps2_corrected_ci"] is None
    assert constant["ratio_corrected"]["ci"] is None
    from thinkprobe.stats import stats_rows
    row = next(r for r in stats_rows(stats) if r["variable"] == "cross_branch_connectivity")
    assert row["eps2_corrected_ci_low_model"] is None
    row = next(r for r in stats_rows(stats) if r["variable"] == "Depth")
    assert (row["eps2_corrected_ci_low_model"], row["ratio_length_corrected_ci_high"]) == (
        variable(stats, "Depth")["model"]["eps2_corrected_ci"][0], variable(stats, "Depth")["ratio_length_corrected"]["ci"][1])


def test_the_ratio_interval_follows_the_floor_rule():
    from thinkprobe.effect_intervals import ratio_interval

    model = np.array([0.3, 0.2, 0.005, 0.004, math.nan])
    domain = np.array([0.1, 0.001, 0.2, 0.002, 0.1])
    got = ratio_interval(model, domain, 0.01, 0.9)
    # floored: 0.3 / 0.1, 0.2 / 0.01 (domain raised), 0.01 / 0.2 (model raised), 0.01 / 0.01 (both); the NaN left out
    assert got["ci"] == pytest.approx(list(np.percentile([3.0, 20.0, 0.05, 1.0], [5, 95])))
    assert got["ci_floored"] == {"domain": 0.25, "model": 0.25, "both": 0.25}


def test_a_ratio_without_a_value_has_no_interval(tmp_path):
    rows = effect_run_rows()
    for r in rows:  # 1 in one trace of each model and domain, 0 elsewhere: eps2 0 by model and by domain
        r["backtracking_rate"] = 1.0 if r["trace_id"].endswith(("-0", "-1")) else 0.0
    entry = variable(compute_stats(write_run(tmp_path, rows)), "backtracking_rate")
    assert entry["model"]["status"] == "ok" and entry["model"]["eps2_corrected_ci"] is not None
    assert entry["ratio_corrected"]["value"] is None and entry["ratio_corrected"]["ci"] is None


def test_the_intervals_do_not_depend_on_the_block_size_and_repeat_exactly(tmp_path, monkeypatch):
    import thinkprobe.effect_intervals as effect_intervals

    run = write_run(tmp_path, effect_run_rows())
    whole = compute_stats(run)
    assert json.dumps(whole, sort_keys=True) == json.dumps(compute_stats(run), sort_keys=True)
    monkeypatch.setattr(effect_intervals, "BLOCK_CELLS", 7 * 60)  # 7 resamples a block, the last one of 6
    blocked = compute_stats(run)
    assert json.dumps(blocked, sort_keys=True) == json.dumps(whole, sort_keys=True)
    seeded = compute_stats(run, stats_settings(run).__class__(**{**stats_settings(run).__dict__, "bootstrap_seed": 1}))
    assert variable(seeded, "Depth")["model"]["eps2_corrected_ci"] != variable(whole, "Depth")["model"]["eps2_corrected_ci"]
