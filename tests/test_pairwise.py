"""Every pair of models on every variable (thinkprobe.pairwise): scipy's Brunner-Munzel test, the probability
of superiority counted pair by pair with an interval that agrees with the test, Holm over each variable's
pairs gated by the model test, and pairwise.csv / .parquet as declared."""
import json
import math
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.stats import brunnermunzel, mannwhitneyu

from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.outputs import read_table
from thinkprobe.pairwise import PAIRWISE_TABLE, length_overlap, pair_test
from thinkprobe.stats import holm, length_residuals, write_stats

from run_folder import write_run
from test_stats import effect_run_rows


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    rows = effect_run_rows()
    rows.append({"trace_id": "lone-0", "model": "lone", "domain": "x", "tokens": 100, "idea_count": 3.0,
                 "backtracking_rate": 0.0, "Depth": 1.0})  # one trace: too few to compare
    run_dir = write_run(tmp_path_factory.mktemp("pairs"), rows)
    stats = write_stats(run_dir)
    return run_dir, rows, stats, read_table(run_dir, PAIRWISE_TABLE)


def values_of(rows, name, model, resid=None):
    return np.array([resid[i] if resid is not None else r[name] for i, r in enumerate(rows) if r["model"] == model])


def test_each_pair_is_scipys_brunner_munzel_with_p_counted_pair_by_pair(run):
    run_dir, rows, stats, table = run
    assert stats["pairwise"]["models"] == ["a", "b", "c"] and stats["pairwise"]["too_few"] == ["lone"]
    assert not any("lone" in (r["model_a"], r["model_b"]) for r in table)
    resid, _ = length_residuals([r["Depth"] for r in rows], [math.log(r["tokens"]) for r in rows])
    checked = apart = 0
    for r in table:
        if r["variable"] != "Depth":
            continue
        col = resid if r["length_controlled"] == "1" else None
        a, b = values_of(rows, "Depth", r["model_a"], col), values_of(rows, "Depth", r["model_b"], col)
        by_pairs = np.mean((a[:, None] > b[None, :]) + 0.5 * (a[:, None] == b[None, :]))
        if 0 < by_pairs < 1:
            assert float(r["p"]) == pytest.approx(brunnermunzel(a, b, alternative="two-sided").pvalue, rel=1e-5)
        else:  # every trace of one above every trace of the other: no placement variance, Mann-Whitney's p
            assert float(r["p"]) == pytest.approx(mannwhitneyu(a, b, alternative="two-sided").pvalue, rel=1e-5)
            apart += 1
        assert float(r["p_superiority"]) == pytest.approx(by_pairs, abs=1e-6)
        assert float(r["cliffs_delta"]) == pytest.approx(2 * by_pairs - 1, abs=1e-5)
        assert float(r["ci_low"]) <= float(r["p_superiority"]) <= float(r["ci_high"])
        assert (int(r["n_a"]), int(r["n_b"])) == (20, 20)
        checked += 1
    assert checked == 6 and apart >= 1  # 3 pairs, raw and length-controlled; a and c never overlap
    # Depth rises with the model (a < b < c by a whole unit, sd 0.5): every pair differs, a below
    depth = [r for r in table if r["variable"] == "Depth" and r["length_controlled"] == "0"]
    assert all(float(r["p_superiority"]) < 0.2 and r["significant"] == "1" for r in depth)
    noise = [r for r in table if r["variable"] == "backtracking_rate" and r["length_controlled"] == "0"]
    assert all(0.2 < float(r["p_superiority"]) < 0.8 and r["significant"] == "0" for r in noise)


def test_holm_runs_over_each_variables_pairs_and_the_model_test_gates_them(run):
    _, _, stats, table = run
    families = {}
    for r in table:
        if r["status"] == "ok":
            families.setdefault((r["variable"], r["length_controlled"]), []).append(r)
    model_test = {(e["variable"], lc): t["significant"] for e in stats["variables"]
                  for lc, t in (("0", e["model"]), ("1", e["length_controlled"]["model"])) if t["status"] == "ok"}
    gated = 0
    for key, family in families.items():
        assert [float(r["p_holm"]) for r in family] == pytest.approx(holm([float(r["p"]) for r in family]), rel=1e-4)
        for r in family:
            holds = float(r["p_holm"]) < stats["settings"]["alpha"]
            assert r["significant"] == str(int(holds and model_test[key])), (key, r)
            gated += holds and not model_test[key]
    assert model_test[("Depth", "0")] and model_test[("backtracking_rate", "0")] is False


def test_the_interval_excludes_one_half_exactly_when_the_test_holds():
    rng = np.random.default_rng(5)
    for shift in np.linspace(0, 1.2, 25):
        a = np.round(rng.normal(shift, 1, size=40), 1)
        b = np.round(rng.normal(0, 2.5, size=25), 1)  # a wider spread: where Mann-Whitney's test is not valid
        got = pair_test(a, b, 0.95)
        assert (got["p"] < 0.05) == (not got["ci_low"] <= 0.5 <= got["ci_high"]), (shift, got)
    apart = pair_test(np.arange(5.0, 10.0), np.arange(5.0))  # no placement variance: Mann-Whitney and Hanley & McNeil
    assert apart["p_superiority"] == 1.0 and apart["p"] < 0.05 and apart["ci_low"] < 1.0 == apart["ci_high"]


def test_a_variable_without_variation_is_not_tested(run):
    _, _, _, table = run
    flat = [r for r in table if r["variable"] == "cross_branch_connectivity"]  # 0 in every trace
    assert flat and all(r["status"] in ("constant", "not testable") and r["p"] == "" for r in flat)
    assert {r["variable"] for r in table} == set(INDICATORS) | set(DIMENSIONS)


def test_swapping_the_models_mirrors_the_probability():
    rng = np.random.default_rng(1)
    a, b = np.round(rng.normal(size=30), 1), np.round(rng.normal(0.4, 1, size=25), 1)
    a[3] = math.nan  # left out
    ab, ba = pair_test(a, b), pair_test(b, a)
    assert ab["n_a"] == 29 and ab["p_superiority"] + ba["p_superiority"] == pytest.approx(1.0)
    assert ab["p"] == pytest.approx(ba["p"])
    assert ab["ci_low"] == pytest.approx(1 - ba["ci_high"]) and ab["ci_high"] == pytest.approx(1 - ba["ci_low"])
    assert pair_test(np.zeros(4), np.zeros(5))["status"] == "constant"
    assert pair_test(np.array([math.nan, 1.0]), np.zeros(5))["status"] == "not testable"  # one finite value


def test_length_overlap_is_the_smaller_share_inside_the_others_range():
    short, long = np.log(np.arange(20, 120, dtype=float)), np.log(np.arange(100, 1100, 10, dtype=float))
    assert length_overlap(short, short) == pytest.approx(0.82, abs=0.02)  # 10-90%: the middle 80% and its ends
    assert length_overlap(short, long) < 0.25 and length_overlap(long, short) == length_overlap(short, long)


def test_pairwise_parquet_is_the_csv_typed(run):
    run_dir, _, _, table = run
    got = pq.read_table(run_dir / PAIRWISE_TABLE.parquet_name)
    assert got.schema == PAIRWISE_TABLE.arrow_schema()
    assert got.num_rows == len(table)
    first = got.slice(0, 1).to_pylist()[0]
    assert first["variable"] == table[0]["variable"] and first["n_a"] == int(table[0]["n_a"])
    kept = json.loads((run_dir / "stats.json").read_text(encoding="utf-8"))["pairwise"]
    assert "rows" not in kept and kept["models"] == ["a", "b", "c"]  # the rows live in pairwise.csv only


def test_the_report_section_has_a_row_per_pair_and_says_when_domains_mix_in(tmp_path):
    from thinkprobe.report.pairs import pairs_section
    from thinkprobe.stats import compute_stats

    rows = effect_run_rows()
    even = pairs_section(compute_stats(write_run(tmp_path / "even", rows)))
    assert [r[:2] for r in even.rows] == [["a", "b"], ["a", "c"], ["b", "c"]]
    depth = even.rows[0][2 + 1]  # Breadth, Depth, ...: a below b on Depth, raw and length-controlled, both held
    assert re.fullmatch(r"0\.[01]\d+ \* \(0\.[01]\d+ \*\)", depth), depth
    assert "unevenly crossed" not in even.note
    # no questions named: not "No two models answered the same questions" where some did, too few to pair
    assert "No two models answered enough of the same questions to be compared question by question" in even.note
    for r in rows:
        if r["model"] == "c":
            r["domain"] = "y"  # c answered one domain only
    uneven = pairs_section(compute_stats(write_run(tmp_path / "uneven", rows)))
    assert "unevenly crossed" in uneven.note


def test_a_model_whose_lengths_lie_outside_the_others_is_named(run):
    from thinkprobe.pairwise import model_length_overlap

    _, rows, stats, _ = run
    assert set(stats["length_overlap"]) == {"a", "b", "c"}  # "lone" has one trace
    assert all(0.5 < v <= 1 for v in stats["length_overlap"].values())  # tokens drawn alike for every model
    logs = [math.log(t) for t in [30, 40, 50, 60, 70] + [400, 500, 600, 700, 800] * 2]
    got = model_length_overlap(["short"] * 5 + ["x"] * 5 + ["y"] * 5, logs, 2)
    assert got["short"] == 0.0 and got["x"] == got["y"] == 0.8  # the rest runs 39-710 (10-90%): 800 is outside


def test_the_headline_says_where_length_control_extrapolates(tmp_path):
    from thinkprobe.report.text import headline
    from thinkprobe.stats import compute_stats

    rows = effect_run_rows()
    assert not any("extrapolates" in line for line in headline(compute_stats(write_run(tmp_path / "alike", rows))))
    for k, r in enumerate(rows):
        if r["model"] == "c":
            r["tokens"] = 5 + k % 7  # far shorter than a's and b's 50-500
    lines = headline(compute_stats(write_run(tmp_path / "short", rows)))
    said = [line for line in lines if "extrapolates" in line]
    assert len(said) == 1 and "Length control extrapolates for c: only 0% of its traces lie within" in said[0]


def test_the_headline_says_when_one_extrapolated_model_carries_a_difference():
    from thinkprobe.report.text import _carried_sentence

    def row(variable, a, b, significant):
        return {"variable": variable, "length_controlled": 1, "model_a": a, "model_b": b, "significant": significant}

    stats = {"length_overlap": {"a": 0.9, "b": 0.8, "c": 0.1},
             "pairwise": {"rows": [row("Breadth", "a", "b", 0), row("Breadth", "a", "c", 1), row("Breadth", "b", "c", 1),
                                   row("Depth", "a", "b", 1), row("Depth", "a", "c", 1), row("Depth", "b", "c", 0),
                                   row("Efficiency", "a", "c", 1)]}}
    said = _carried_sentence(stats, ["Breadth", "Depth"])
    assert "Breadth's length-controlled difference is carried by c alone" in said and "Depth" not in said
    stats["length_overlap"]["c"] = 0.5  # c's lengths overlap the others': nothing extrapolated
    assert _carried_sentence(stats, ["Breadth", "Depth"]) == ""


def test_a_paired_pair_is_the_mean_over_questions_of_p_within_each_with_an_exact_sign_flip_test():
    from itertools import product

    from scipy.special import expit, logit
    from scipy.stats import t as student_t
    from thinkprobe.pairwise import paired_test

    rng = np.random.default_rng(5)
    q_a, q_b = rng.integers(0, 12, 50), rng.integers(0, 12, 40)  # 1-7 traces a question, some only one model's
    q_b[q_b == 11] = 10  # question 11: model a's only, left out
    a, b = np.round(rng.normal(size=50) + q_a, 1), np.round(rng.normal(size=40) + q_b - 0.4, 1)  # ties too
    a[3] = np.nan  # not finite: left out
    got = paired_test(a, q_a, b, q_b)
    shares = []
    for q in range(12):
        x, y = a[(q_a == q) & np.isfinite(a)], b[q_b == q]
        if len(x) and len(y):
            shares.append(np.mean((x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])))
    shares = np.array(shares)
    assert got["n_questions"] == len(shares) >= 9
    assert got["p_superiority"] == pytest.approx(shares.mean())
    d = shares - 0.5  # every way of flipping the signs of the questions' P - 0.5
    flips = [abs(sum(s * abs(v) for s, v in zip(signs, d))) for signs in product((-1, 1), repeat=len(d))]
    assert got["p"] == pytest.approx(np.mean(np.array(flips) >= abs(d.sum()) - 1e-9))
    se = shares.std(ddof=1) / np.sqrt(len(shares)) / (shares.mean() * (1 - shares.mean()))
    half = student_t.ppf(0.975, len(shares) - 1) * se
    assert (got["ci_low"], got["ci_high"]) == (pytest.approx(expit(logit(shares.mean()) - half)),
                                               pytest.approx(expit(logit(shares.mean()) + half)))
    on = np.isin(q_a, q_b) & np.isfinite(a)
    assert got["n_a"] == int(on.sum()) and got["n_b"] == int(np.isin(q_b, q_a[on]).sum())


def test_one_trace_a_question_is_the_exact_sign_test_and_the_interval_holds_its_estimate():
    """A statistician's review: with one trace per model and question each question is a win, a draw or a
    loss, and Student's t gave 9 wins of 10 p 0.003 where the exact sign test gives 0.021; every question at
    P 0.75 (several traces each) got an interval [0.955, 1] that left out 0.75; a pair left with too few
    questions once the NaN were dropped was still tested."""
    from thinkprobe.pairwise import paired_test

    ten = np.arange(10)
    nine = paired_test(np.r_[np.ones(9), 0.0], ten, np.r_[np.zeros(9), 1.0], ten)
    assert nine["p_superiority"] == 0.9 and nine["p"] == pytest.approx(0.021484375)
    assert nine["ci_low"] < 0.9 < nine["ci_high"] < 1
    draws = paired_test(np.r_[np.ones(4), np.zeros(76)], np.arange(80), np.zeros(80), np.arange(80))
    assert draws["p"] == pytest.approx(0.125)  # 4 wins among 4 questions that are not a draw, of 80
    q = np.repeat(np.arange(20), 2)  # two traces each: a's above one of b's and level with the other
    same = paired_test(np.tile([1.0, 1.0], 20), q, np.tile([0.0, 1.0], 20), q)
    assert same["p_superiority"] == 0.75 and same["ci_low"] < 0.75 < same["ci_high"] and same["p"] < 1e-5
    all_won = paired_test(np.ones(8), np.arange(8), np.zeros(8), np.arange(8))
    assert all_won["p_superiority"] == 1.0 and all_won["p"] == pytest.approx(2 * 0.5 ** 8)
    assert all_won["ci_high"] == 1.0 and 0.6 < all_won["ci_low"] < 1
    few = paired_test(np.r_[np.ones(3), np.full(17, np.nan)], np.arange(20), np.zeros(20), np.arange(20),
                      min_questions=10)
    assert few["status"] == "not testable" and few["n_questions"] == 3


def test_models_that_answered_the_same_questions_are_compared_question_by_question(tmp_path):
    """Questions differ far more than the models do: question by question, a's small, steady lead shows
    (significant), while across all traces P(a > b) stays near one half; a model that answered other
    questions is compared unpaired."""
    from run_folder import make_graph
    from thinkprobe.stats import compute_stats

    rng = np.random.default_rng(7)
    rows, graphs = [], []
    for model, shift, questions in (("a", 0.3, range(30)), ("b", 0.0, range(30)), ("c", 0.0, range(30, 60))):
        for q in questions:
            k = f"{model}-{q}"
            rows.append({"trace_id": k, "model": model, "domain": ("x", "y")[q % 2], "tokens": 200,
                         "Depth": float(3 * q + shift + 0.1 * rng.normal())})
            question = None if k == "a-0" else f"question {q}"
            graphs.append({**make_graph(k, model, ("x", "y")[q % 2], 3), "question": question})
    stats = compute_stats(write_run(tmp_path, rows, graphs))
    assert stats["pairwise"]["designs"] == {"a / b": "paired", "a / c": "unpaired", "b / c": "unpaired"}
    found = {(r["model_a"], r["model_b"]): r for r in stats["pairwise"]["rows"]
             if r["variable"] == "Depth" and r["length_controlled"] == 0}
    ab = found["a", "b"]
    # a's trace without a question is left out, and the pair stays paired (1 of 30: within PAIRED_MIN_SHARE)
    assert ab["design"] == "paired" and ab["n_questions"] == 29 and ab["p_superiority"] > 0.9 and ab["p"] < 1e-6
    a, b = values_of(rows, "Depth", "a"), values_of(rows, "Depth", "b")
    assert abs(pair_test(a, b)["p_superiority"] - 0.5) < 0.1  # unpaired, the questions' spread hides the lead
    assert found["a", "c"]["design"] == "unpaired" and found["a", "c"]["n_questions"] is None
    from thinkprobe.report.pairs import pairs_section
    assert "1 of the 3 pairs answered the same questions and are compared question by question" in \
        pairs_section(stats).note


def test_a_pair_the_model_test_holds_back_is_marked_not_starred(run):
    """A new user's reading of the balanced ReasoningFlow report: question by question QwQ-32B and
    gpt-oss-120b differed in length-controlled Efficiency (Holm p 0.001), and the cell showed nothing
    because the effect table's test across all traces did not find the models differ."""
    from thinkprobe.report.pairs import pairs_section

    _, _, stats, _ = run
    assert "° :" not in pairs_section(stats).note
    held = {**stats, "pairwise": {**stats["pairwise"], "rows": [
        {**r, "significant": 0} if r["variable"] == "Depth" and r["length_controlled"] == 0 else r
        for r in stats["pairwise"]["rows"]]}}
    section = pairs_section(held)
    assert re.fullmatch(r"0\.[01]\d+ ° \(0\.[01]\d+ \*\)", section.rows[0][3]), section.rows[0][3]
    assert "° : the pair's Holm-adjusted p is under 0.05, but the effect-size table does not find" in section.note


def _same_questions(models: dict[str, float], questions: int, seed: int, spread: float = 3.0):
    """Rows and graphs of models that each answered the same questions once: Depth = the question's own
    level (spread `spread`, shared by every model) + the model's shift + noise 1."""
    from run_folder import make_graph

    rng = np.random.default_rng(seed)
    level = spread * rng.normal(size=questions)
    rows, graphs = [], []
    for model, shift in models.items():
        for q in range(questions):
            k = f"{model}-{q}"
            rows.append({"trace_id": k, "model": model, "domain": "x", "tokens": 200 + q,
                         "Depth": float(level[q] + shift + rng.normal())})
            graphs.append({**make_graph(k, model, "x", 3), "question": f"question {q}"})
    return rows, graphs


def test_where_every_model_answered_the_same_questions_the_gate_is_friedmans(tmp_path):
    """A review: with every pair compared question by question, the star's gate was still Kruskal-Wallis
    across traces, which counts the questions' spread as noise (13 pairs of the balanced ReasoningFlow
    design found question by question showed °). Three models on the same 40 questions, a's lead 1 sd of
    the noise under questions that spread 3: the gate is Friedman's test over the questions (equal to
    scipy's on the models' values per question), the Kruskal-Wallis test misses the lead, and a's pairs
    are starred; the report says which test gates them."""
    from scipy.stats import friedmanchisquare
    from thinkprobe.report.pairs import pairs_section
    from thinkprobe.stats import compute_stats

    rows, graphs = _same_questions({"a": 1.0, "b": 0.0, "c": 0.0}, 40, seed=5)
    stats = compute_stats(write_run(tmp_path, rows, graphs))
    gate = stats["pairwise"]["gate"]
    assert gate["test"] == "friedman" and gate["models"] == 3
    depth = next(t for t in gate["tests"] if t["variable"] == "Depth" and t["length_controlled"] == 0)
    by_model = [values_of(rows, "Depth", m) for m in "abc"]  # one trace per question, in question order
    assert depth["n_questions"] == 40 and depth["p"] == pytest.approx(friedmanchisquare(*by_model).pvalue)
    assert depth["significant"] == 1 and not variable_entry(stats, "Depth")["model"]["significant"]
    found = {(r["model_a"], r["model_b"]): r for r in stats["pairwise"]["rows"]
             if r["variable"] == "Depth" and r["length_controlled"] == 0}
    assert found["a", "b"]["significant"] == 1 and found["a", "c"]["significant"] == 1
    assert found["b", "c"]["significant"] == 0
    assert "Friedman's test of the models' mean values on the questions every model answered" in pairs_section(stats).note


def variable_entry(stats, name):
    return next(e for e in stats["variables"] if e["variable"] == name)


def test_the_friedman_gate_holds_its_level_where_models_do_not_differ():
    """Equal models on the same questions: over 200 designs, the gate's Holm p (over the variables, here
    one tested) is under 0.05 about 5% of the time, and a star needs both it and the pair's own test."""
    from thinkprobe.config import Config
    from thinkprobe.pairwise import pairwise_models

    cfg = Config.load().stats
    false = 0
    for seed in range(200):
        rows, _ = _same_questions({"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}, 12, seed)
        values = [r["Depth"] for r in rows]
        out = pairwise_models([("Depth", "dimension")], [(values, None)], [r["model"] for r in rows],
                              [math.log(r["tokens"]) for r in rows], {("Depth", 0): False}, cfg,
                              [r["trace_id"].split("-")[1] for r in rows])
        false += out["gate"]["tests"][0]["significant"]
        assert out["gate"]["test"] == "friedman"
        assert all(r["significant"] in (0, None) or out["gate"]["tests"][0]["significant"] for r in out["rows"])
    assert false <= 18, false  # 5% of 200 is 10; a binomial's 99.9% bound is 20


def test_two_models_on_the_same_questions_are_gated_by_their_own_test_over_the_variables():
    """With two models the pair is the model test: significant where its p, Holm-adjusted over the
    variables of its family, is under alpha (not where the Kruskal-Wallis test across traces says so)."""
    from thinkprobe.config import Config
    from thinkprobe.pairwise import pairwise_models

    cfg = Config.load().stats
    rows, _ = _same_questions({"a": 1.0, "b": 0.0}, 30, seed=2)
    lead = [r["Depth"] for r in rows]
    noise = list(np.random.default_rng(0).normal(size=len(rows)))
    out = pairwise_models([("Depth", "dimension"), ("Noise", "dimension")], [(lead, None), (noise, None)],
                          [r["model"] for r in rows], [5.0] * len(rows), {}, cfg,
                          [r["trace_id"].split("-")[1] for r in rows])
    assert out["gate"]["test"] == "sign-flip"
    tests = {t["variable"]: t for t in out["gate"]["tests"]}
    raw = {r["variable"]: r for r in out["rows"] if r["length_controlled"] == 0}
    assert tests["Depth"]["p_holm"] == pytest.approx(min(1.0, 2 * raw["Depth"]["p"])) or \
        tests["Depth"]["p_holm"] == pytest.approx(max(raw["Depth"]["p"], raw["Noise"]["p"]))
    assert raw["Depth"]["significant"] == 1 and raw["Noise"]["significant"] == tests["Noise"]["significant"]
