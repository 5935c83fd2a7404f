"""Issue 42's decisions: unusual traces (anomalies.csv), failure risk from structure alone, model
choice (`thinkprobe select`) and their report sections, on hand-built run folders (no encoder)."""
import dataclasses
import copy
import csv
import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from thinkprobe.anomalies import anomaly_rows, robust_z, write_anomalies
from thinkprobe.choice import parse_want, select_models, select_run
from thinkprobe.cli import main
from thinkprobe.config import Config
from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.outputs import ANOMALIES_TABLE
from thinkprobe.risk import RISK_FEATURES, failure_risk, load_failure_risk, risk_features

from run_folder import make_graph, write_run

SETTINGS = Config.load().stats


def _indicator_rows(rng, model, n, domain="math"):
    return [{"trace_id": f"{model}-{k}", "model": model, "domain": domain, "source_id": None,
             **{name: float(rng.normal(1.0, 0.2)) for name in INDICATORS}} for k in range(n)]


def test_anomalies_rank_within_model_name_drivers_and_explain_small_models():
    rng = np.random.default_rng(0)
    rows = _indicator_rows(rng, "big", 40) + _indicator_rows(rng, "solo", 1) + _indicator_rows(rng, "other", 12)
    rows[7]["redundancy_ratio"] = 9.0  # far outside its model on one indicator
    out = anomaly_rows(rows, SETTINGS, {"big-0": 0.25})
    assert [r["trace_id"] for r in out] == [r["trace_id"] for r in rows]
    big = [r for r in out if r["model"] == "big"]
    assert sorted(r["anomaly_rank"] for r in big) == list(range(1, 41))
    assert sorted(r["anomaly_rank"] for r in out if r["model"] == "other") == list(range(1, 13))
    top = min(big, key=lambda r: r["anomaly_rank"])
    assert top["trace_id"] == "big-7" and top["drivers"].startswith("redundancy_ratio +")
    assert all(r["anomaly"] >= 0 and r["anomaly_reason"] is None for r in big)
    solo = next(r for r in out if r["model"] == "solo")
    assert solo["anomaly"] is None and solo["anomaly_rank"] is None and "1 trace" in solo["anomaly_reason"]
    assert out[0]["failure_risk"] == 0.25 and out[1]["failure_risk"] is None
    # every key of the trace travels with it (anomalies.csv had an empty group column)
    grouped = anomaly_rows([{**r, "group": "MiP" if k % 2 else "normal", "source_id": f"s{k}"} for k, r in enumerate(rows)],
                           SETTINGS)
    assert [(r["group"], r["source_id"]) for r in grouped[:2]] == [("normal", "s0"), ("MiP", "s1")]


def test_anomaly_scores_follow_the_model_not_the_run():
    """A trace ordinary for its own model is not unusual because another model differs."""
    rng = np.random.default_rng(1)
    a, b = _indicator_rows(rng, "a", 30), _indicator_rows(rng, "b", 30)
    for r in b:
        r.update({name: r[name] + 50 for name in INDICATORS})
    alone = anomaly_rows(a, SETTINGS)
    together = anomaly_rows(a + b, SETTINGS)[:30]
    assert [r["anomaly"] for r in alone] == pytest.approx([r["anomaly"] for r in together])


def test_robust_z_takes_the_median_of_finite_values_only():
    """A NaN or an infinite value (an indicator undefined for a trace) counts as the median of the
    finite ones; a column with no finite value gives 0, not NaN."""
    x = np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan], [np.inf, np.nan], [np.nan, np.nan]])
    z = robust_z(x)
    assert np.isfinite(z).all()
    assert z[:, 1].tolist() == [0.0] * 5
    assert z[1, 0] == 0.0 and z[3, 0] == 0.0 and z[4, 0] == 0.0  # median of 1, 2, 3 is 2
    assert z[0, 0] == pytest.approx(-z[2, 0]) and z[2, 0] > 0


def test_robust_z_of_an_indicator_half_at_one_value_uses_the_standard_deviation():
    """A new user's reading: DeepSeek-R1's five most unusual traces all led with initial_diversity +38, an
    ordinary value; 51 of its 102 traces had 0, so the median sat in the gap to the rest and the MAD was
    that gap's half (0.015 against a spread of 0.3)."""
    rng = np.random.default_rng(0)
    x = np.r_[np.zeros(51), rng.uniform(0.03, 0.8, 51)][:, None]
    z = robust_z(x)
    assert np.abs(z).max() < 4 and z[-1, 0] == pytest.approx((x[-1, 0] - np.median(x)) / x.std(ddof=1))
    fewer = robust_z(x[1:])  # 50 of 101 at 0: the median is the least non-zero value, the MAD its distance to 0
    assert np.abs(fewer).max() < 4


# ----------------------------------------------------------------------------- failure risk


def _graph(trace_id="t", n=30):
    return make_graph(trace_id, "m", "math", n)


def test_failure_risk_is_a_probability_for_every_trace():
    model = load_failure_risk()
    assert model.features == RISK_FEATURES
    risks = [failure_risk(_graph(f"t{n}", n)) for n in (2, 5, 30, 200)]
    assert all(0.0 <= p <= 1.0 for p in risks)
    batch = model.probability([risk_features(_graph(f"t{n}", n)) for n in (2, 5, 30, 200)])
    assert batch.tolist() == pytest.approx(risks)


def test_a_reasoning_shorter_than_every_training_trace_gets_no_failure_risk(tmp_path):
    """A one-unit "<think>Yes.</think>42" had got its model's lowest risk (0.19), read off features far
    outside what the model saw; the shipped model's training traces have 2 reasoning units or more."""
    import thinkprobe
    from conftest import SAMPLES
    from thinkprobe.anomalies import read_anomalies

    model = load_failure_risk()
    assert model.min_units == 2 and model.to_json()["min_units"] == 2
    assert failure_risk(_graph("one", 1)) is None and failure_risk(_graph("two", 2)) is not None
    graphs = [_graph("one", 1), *(_graph(f"t{n}", n) for n in range(2, 8))]
    run = write_run(tmp_path / "run", [{"trace_id": g["trace_id"], "model": "m", "domain": "math"} for g in graphs],
                    graphs)
    rows = {r["trace_id"]: r for r in write_anomalies(run)}  # the risks read off graphs.jsonl
    assert rows["one"]["failure_risk"] is None and rows["one"]["failure_risk_in_sample"] is None
    assert all(0.0 < rows[f"t{n}"]["failure_risk"] < 1.0 for n in range(2, 8))
    # a run: the risks its chunks carry (a null for the short trace; the others kept)
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"id": "yes", "model": "m", "response": "<think>Yes.</think>42"}) + "\n"
                    + SAMPLES.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    thinkprobe.profile(data, tmp_path / "out", device="cpu", report=False, cache=False, progress=False)
    risks = {r["trace_id"]: r["failure_risk"] for r in read_anomalies(tmp_path / "out")}
    assert risks["yes"] is None and len(risks) == 2 and all(0.0 < p < 1.0 for t, p in risks.items() if t != "yes")


def test_failure_risk_reads_neither_the_answer_nor_the_gold_nor_a_grade():
    rec = _graph()
    base = risk_features(rec)
    altered = copy.deepcopy(rec)
    altered.update(gold_answer="-1", correct=False, question="Something else entirely?")
    altered["redundancy"] = {"final_correct": False, "candidates": [{"unit": 3, "value": "7", "correct": False}]}
    answer = next(u for u in altered["units"] if u["section"] == "answer")
    answer.update(text="So the answer is \\boxed{1234}. Wait, no: maybe 7.", type="CRT", cues=["CRT", "hedge"],
                  tokens=300)
    altered["fields"]["response"] += " and more answer text"
    stripped = copy.deepcopy(rec)
    keep = {u["id"] for u in stripped["units"] if u["section"] != "answer"}
    stripped["units"] = [u for u in stripped["units"] if u["id"] in keep]
    stripped["edges"] = [e for e in stripped["edges"] if e["src"] in keep and e["dst"] in keep]
    stripped["sections"] = [s for s in stripped["sections"] if s["name"] != "answer"]
    for k in ("gold_answer", "correct", "question"):
        del stripped[k]
    assert risk_features(altered) == base and risk_features(stripped) == base
    assert failure_risk(altered) == failure_risk(stripped) == failure_risk(rec)
    # ... while a change in the reasoning does move it (the test can fail)
    changed = copy.deepcopy(rec)
    for u in changed["units"][:10]:
        u.update(type="CRT", cues=["CRT", "hedge"])
    assert risk_features(changed) != base and failure_risk(changed) != failure_risk(rec)


def test_failure_risk_bounds_a_feature_far_outside_the_training_range():
    """A rare feature (units on a cycle) far outside what the model saw moves the risk no further
    than CLIP standard deviations would: one odd feature cannot set the risk to 0 or 1 alone."""
    from thinkprobe.training.risk_fit import CLIP

    model = load_failure_risk()
    assert model.clip == CLIP and model.to_json()["clip"] == CLIP
    j = model.features.index("recurrence")
    row = {**risk_features(_graph()), "recurrence": model.mean[j]}
    at_bound = {**row, "recurrence": model.mean[j] + CLIP * model.scale[j]}
    far = {**row, "recurrence": model.mean[j] + 1000 * model.scale[j]}
    assert model.probability(far) == pytest.approx(model.probability(at_bound))
    assert model.probability(far) != pytest.approx(model.probability(row))  # the bound moves it, it does not drop it
    unclipped = dataclasses.replace(model, clip=None)
    assert unclipped.probability(far) != pytest.approx(model.probability(far))


def test_trace_key_names_the_reasoning_by_its_opening_words():
    from thinkprobe.risk import trace_key, training_keys

    rec = _graph("a", 30)
    cut = copy.deepcopy(rec)
    cut["units"] = [u for u in cut["units"] if u["section"] != "answer"]
    other = copy.deepcopy(rec)
    other["units"][0]["text"] = "Something else opens this trace."
    assert trace_key(rec) == trace_key(cut) != trace_key(other) and len(trace_key(rec)) == 16
    assert trace_key({"units": []}) is None
    assert len(training_keys()) > 1000  # the shipped model lists its training traces
    # signs count: two Dyck traces (BIG-Bench Mistake) differ in their brackets only; by words they had one key
    dyck = [{"units": [{"id": 0, "section": "reasoning", "text": f"0: empty stack 1: {b} ; stack: {b}"}]}
            for b in ("[", "(")]
    assert trace_key(dyck[0]) != trace_key(dyck[1])
    # a trace split into other units keeps its key (tokens never span a unit's edge)
    text = " ".join(u["text"] for u in rec["units"] if u["section"] == "reasoning")
    assert trace_key({"units": [{"id": 0, "section": "reasoning", "text": text}]}) == trace_key(rec)


def test_risk_features_count_candidate_answers_of_the_reasoning():
    units = [{"id": k, "section": "reasoning", "type": "CON", "text": t, "cues": [], "tokens": 5}
             for k, t in enumerate(["So the answer is 12.", "Hmm.", "So the answer is 14.", "So the answer is 14."])]
    f = risk_features({"units": units, "edges": []})
    assert f["log_candidates"] == pytest.approx(np.log1p(3)) and f["log_distinct_answers"] == pytest.approx(np.log1p(2))
    assert f["answer_changes_per_candidate"] == 0.5 and f["final_answer_support"] == pytest.approx(2 / 3)
    assert f["settle_position"] == pytest.approx(2 / 3) and f["no_candidate"] == 0.0


# ----------------------------------------------------------------------------- model choice


def _profile_rows(means: dict, n=30, seed=0, paired=True):
    rng = np.random.default_rng(seed)
    rows = []
    for model, mean in means.items():
        for k in range(n):
            rows.append({"trace_id": f"{model}-{k}", "model": model, "domain": "math" if k % 2 else "logic",
                         "question": f"q{k}" if paired else None, "correct": bool(k % 3),
                         **{d: float(rng.normal(mean, 0.3)) for d in DIMENSIONS}})
    return rows


def test_select_within_a_domain_names_the_models_without_traces_there():
    """select --domain formula on MiP-Overthinking listed three models; s1.1, without formula traces,
    was missing without a word (a review)."""
    rows = [r for r in _profile_rows({"a": 0.0, "b": 1.0, "c": 0.5}) if not (r["model"] == "c" and r["domain"] == "math")]
    sel = select_models(rows, SETTINGS, domain="math")
    assert [r["model"] for r in sel.rows] == ["b", "a"] and sel.notes["absent"] == "no traces in domain math: c"
    assert "absent" not in select_models(rows, SETTINGS, domain="logic").notes
    assert "absent" not in select_models(rows, SETTINGS).notes


def test_select_says_when_accuracy_counts_grades_of_questions_with_a_premise_removed():
    """A new user's `select --group MiP` on MiP-Overthinking showed accuracy 0.15-0.26 as plain accuracy, where a
    'correct' grade of a question with a premise removed is a made-up premise (the profile's summary says so)."""
    rows = [dict(r, group="MiP" if k % 2 else "normal", gold_not_asked=bool(k % 2))
            for k, r in enumerate(_profile_rows({"a": 0.0, "b": 0.5}))]
    note = select_models(rows, SETTINGS, group="MiP").notes["premise"]
    assert note.startswith("accuracy counts 30 graded answers to questions with a premise removed") and "made-up" in note
    assert "premise" not in select_models(rows, SETTINGS, group="normal").notes


def test_select_names_models_whose_accuracy_counts_unfinished_traces():
    """ReasonEval's PRM800K solutions: select showed GPT-4 at accuracy 0.44 in tier 1 beside WizardMath's 1.00,
    and 153 of its 300 graded traces were wrong only for stating no answer (rated prefixes)."""
    rows = _profile_rows({"prefixes": 0.0, "whole": 0.5})
    for k, r in enumerate(r for r in rows if r["model"] == "prefixes"):
        r["correct"], r["no_answer"] = (False, True) if k < 12 else (r["correct"], False)
    sel = select_models(rows, SETTINGS)
    assert sel.notes["unanswered"] == ("accuracy counts a trace with no final answer found as incorrect: prefixes 12 "
                                       "of 30 (unfinished? profiled with --unanswered ungraded they are left ungraded)")
    assert "unanswered" not in select_models(_profile_rows({"a": 0.0, "b": 0.5}), SETTINGS).notes


def test_select_ranks_with_intervals_and_ties_models_it_cannot_tell_apart():
    rows = _profile_rows({"low": -1.0, "mid": 0.0, "mid2": 0.0, "high": 1.0})
    sel = select_models(rows, SETTINGS)
    assert [r["model"] for r in sel.rows][0] == "high" and sel.rows[-1]["model"] == "low"
    assert sel.resampling.startswith("questions")
    for r in sel.rows:
        assert r["ci_low"] < r["fit"] < r["ci_high"] and r["accuracy"] == pytest.approx(20 / 30)
    tiers = {r["model"]: r["tier"] for r in sel.rows}
    assert tiers["mid"] == tiers["mid2"] and len({tiers["high"], tiers["mid"], tiers["low"]}) == 3
    mid = next(r for r in sel.rows if r["model"] == "mid")
    assert mid["not_told_apart_from"] == ["mid2"]
    # wanting less of every dimension reverses the order; a target profile picks the nearest model
    assert [r["model"] for r in select_models(rows, SETTINGS, want=parse_want(",".join(f"{d}-" for d in DIMENSIONS))).rows][0] == "low"
    like = select_models(rows, SETTINGS, like={d: 0.05 for d in DIMENSIONS})
    assert {like.rows[0]["model"], like.rows[1]["model"]} == {"mid", "mid2"} and like.rows[0]["fit"] <= 0
    unpaired = select_models(_profile_rows({"a": 0.0, "b": 1.0}, paired=False), SETTINGS)
    assert unpaired.resampling.startswith("traces")


def test_select_gives_no_tier_on_a_few_traces_and_says_when_a_lower_tier_is_more_accurate():
    """A reviewer's MiP run: a model of 2 traces got the 'interval' [min, max] of its two fits and a
    tier; on tts_knowledge a model right 0 times in 12 headed tier 1 while the accurate one sat in
    tier 2, with nothing to say the fit is not quality."""
    from thinkprobe.choice import format_selection

    rows = _profile_rows({"lean": -1.0, "wide": 1.0}) + _profile_rows({"few": 2.0}, n=SETTINGS.select_min_traces - 1)
    for r in rows:
        r["correct"] = r["model"] == "lean" or (r["model"] == "wide" and r["trace_id"].endswith("-0"))
    sel = select_models(rows, SETTINGS)
    few = next(r for r in sel.rows if r["model"] == "few")
    # the best fit, but on too few traces to be placed: listed after the placed models, not as rank 1
    assert few["rank"] == 3 and sel.rows[-1] is few and few["fit"] > max(r["fit"] for r in sel.rows[:-1])
    assert few["tier"] is None and few["ci_low"] is None
    # too few traces to compare: not "cannot be told apart from every model" (a new user's trial, 2026-12-07)
    assert few["not_told_apart_from"] is None and all("few" not in r["not_told_apart_from"] for r in sel.rows[:-1])
    tiers = {r["model"]: r["tier"] for r in sel.rows}
    assert tiers["wide"] == 1 and tiers["lean"] == 2
    assert "no interval and no tier: few" in sel.note
    assert "lean (tier 2) answers more accurately (1.00 over 30 graded) than every tier-1 model" in sel.note
    text = format_selection(sel)
    assert "not length-controlled" in text and "   3    –  few" in text and "not compared (too few traces)" in text
    # the header says why the best fit is not rank 1 (ReasonEval: a 1-trace model's 0.211 listed third)
    assert text.splitlines()[0].startswith("models ranked by fit (") and "too small for a tier after the others" in text.splitlines()[0]
    placed = format_selection(select_models(_profile_rows({"lean": -1.0, "wide": 1.0}), SETTINGS))
    assert "too small for a tier" not in placed


def test_select_on_one_model_says_there_is_nothing_to_rank_it_against():
    """A one-model run (THINK-Bench's Qwen3) ranked its model first at fit 0.000 without a word."""
    sel = select_models(_profile_rows({"only": 0.0}), SETTINGS)
    assert len(sel.rows) == 1 and "only only has traces here: there is no other model" in sel.note
    assert "one" not in select_models(_profile_rows({"a": 0.0, "b": 1.0}), SETTINGS).notes


def test_select_pairs_by_the_records_id_says_when_models_and_domains_are_crossed_unevenly_and_prints_no_minus_zero():
    from thinkprobe.choice import format_selection

    rows = _profile_rows({"a": 0.0, "b": 1.0}, paired=False)
    for r in rows:  # no question text, but each record's own id names its question across the models
        r["source_id"] = r["trace_id"].split("-")[1]
    assert select_models(rows, SETTINGS).resampling.startswith("questions")
    sel = select_models(rows, SETTINGS, like={d: 0.0 for d in DIMENSIONS})
    sel.rows[0]["fit"] = -0.0001
    assert " -0.000 " not in format_selection(sel) and "read the tiers" in format_selection(sel)


def test_a_like_profile_is_read_within_the_input_size_limit(tmp_path):
    """select --like reads its JSON as any input is read: a file over limits.max_file_mb is refused
    with a reason naming it, before it is parsed."""
    from thinkprobe.choice import read_like
    from thinkprobe.io.limits import InputLimits

    small = tmp_path / "like.json"
    small.write_text(json.dumps({"profile": {"Depth": 1.0, "Efficiency": -0.5}, "note": "x"}))
    assert read_like(small, InputLimits(max_file_mb=1)) == {"Depth": 1.0, "Efficiency": -0.5}
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"Depth": 1.0, "pad": "x" * 3_000_000}))
    with pytest.raises(ValueError, match="big.json"):
        read_like(big, InputLimits(max_file_mb=1))


def test_select_rejects_unknown_domain_and_dimension():
    rows = _profile_rows({"a": 0.0, "b": 1.0})
    with pytest.raises(ValueError, match="logic, math"):
        select_models(rows, SETTINGS, domain="poetry")
    with pytest.raises(ValueError, match="not a dimension"):
        parse_want("Depth+,Wisdom+")
    with pytest.raises(ValueError, match="'Depth\\+\\+' is not a dimension"):  # what was typed, not 'Depth+'
        parse_want("Depth++")
    with pytest.raises(ValueError, match="did you mean 'math'"):
        select_models(rows, SETTINGS, domain="Math")
    assert len(select_models(rows, SETTINGS, domain="math").rows) == 2
    # a dimension named twice, or with two signs, was read as the last one
    for text in ("Depth+,Depth-", "Depth+-"):
        with pytest.raises(ValueError):
            parse_want(text)
    assert parse_want("depth -, Efficiency") == {"Depth": -1, "Efficiency": 1}
    for text in (",", " , ", ""):  # read as the default, every dimension +, without a word
        with pytest.raises(ValueError, match="names no dimension"):
            parse_want(text)


def test_select_refuses_a_target_that_is_not_finite_and_ranks_within_a_group(tmp_path):
    from thinkprobe.choice import read_like

    (tmp_path / "list.json").write_text("[1, 2]")  # said "no dimension"
    with pytest.raises(ValueError, match="not a JSON object of dimensions"):
        read_like(tmp_path / "list.json")

    for bad in ('{"Depth": "NaN"}', '{"Depth": 1e400}'):  # every bootstrap draw was NaN: a traceback
        (tmp_path / "like.json").write_text(bad)
        with pytest.raises(ValueError, match="finite"):
            read_like(tmp_path / "like.json")
    # a dimension in any case, as --want reads it; a key that is no dimension nor a table's column is refused
    # ("Effic" had been dropped without a word), and true is no number
    assert read_like({"depth": 0.5, "Efficiency": 0.1, "model": "r1", "n": 12}) == {"Depth": 0.5, "Efficiency": 0.1}
    with pytest.raises(ValueError, match=r"'Effic' is no dimension \(did you mean Efficiency\?\)"):
        read_like({"Depth": 0.5, "Effic": 3})
    with pytest.raises(ValueError, match="Depth's value is not a number"):
        read_like({"Depth": True})
    with pytest.raises(ValueError, match="Depth is given twice"):
        read_like({"Depth": 1, "depth": 2})
    rows = _profile_rows({"a": 0.0, "b": 1.0})
    for k, r in enumerate(rows):
        r["group"] = "MiP" if k % 2 else "normal"
    in_group = select_models(rows, SETTINGS, group="MiP")
    assert in_group.group == "MiP" and sum(r["n"] for r in in_group.rows) == len(rows) // 2
    assert "group MiP" in __import__("thinkprobe.choice").choice.format_selection(in_group)
    with pytest.raises(ValueError, match="the groups of the run are MiP, normal"):
        select_models(rows, SETTINGS, group="nothing")
    with pytest.raises(ValueError, match="the groups of domain math are MiP$"):
        select_models(rows, SETTINGS, domain="math", group="nothing")


# ----------------------------------------------------------------------------- a run folder


MODELS = {"r1": 14, "qwq": 12, "solo": 1}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run = tmp_path_factory.mktemp("decisions")
    rng = np.random.default_rng(3)
    rows, graphs = [], []
    for model, count in MODELS.items():
        for k in range(count):
            domain = ("math", "logic")[k % 2]
            row = {"trace_id": f"{model}-{k}", "model": model, "domain": domain, "units": 10 + k, "edges": 9 + k,
                   "tokens": 90 + 9 * k}
            row.update({name: float(rng.normal(1, 0.3)) for name in INDICATORS})
            row.update({dim: float(rng.normal(0.5 if model == "r1" else -0.5, 0.3)) for dim in DIMENSIONS})
            rows.append(row)
            g = make_graph(row["trace_id"], model, domain, 6 + 3 * k)
            g["correct"] = bool(k % 2)
            graphs.append(g)
    write_run(run, rows, graphs)
    write_anomalies(run)
    return run


def test_anomalies_csv_has_a_row_per_trace_and_its_declared_schema(run_dir):
    with open(run_dir / ANOMALIES_TABLE.name, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(ANOMALIES_TABLE.columns)
    assert len(rows) == sum(MODELS.values())
    parquet = pq.read_table(run_dir / ANOMALIES_TABLE.parquet_name)
    assert parquet.schema == ANOMALIES_TABLE.arrow_schema() and parquet.num_rows == len(rows)
    solo = next(r for r in rows if r["model"] == "solo")
    assert solo["anomaly"] == "" and "solo has 1 trace" in solo["anomaly_reason"]
    assert all(0 <= float(r["failure_risk"]) <= 1 for r in rows)
    assert sorted(int(r["anomaly_rank"]) for r in rows if r["model"] == "qwq") == list(range(1, 13))


def test_select_command_prints_every_model_with_an_interval(run_dir, tmp_path):
    result = CliRunner().invoke(main, ["select", str(run_dir)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for model in ("r1", "qwq"):
        line = next(ln for ln in lines if f" {model} " in ln)
        assert "[" in line and "]" in line
    assert next(ln for ln in lines if " solo " in ln) and "no interval and no tier: solo" in result.output
    assert lines[2].split()[2] == "r1"  # the wider, deeper... model first
    as_json = json.loads(CliRunner().invoke(main, ["select", str(run_dir), "--json", "--want", "Depth-"]).output)
    assert as_json["models"][0]["model"] == "qwq" and as_json["criterion"] == "want Depth-"
    target = tmp_path / "like.json"
    target.write_text(json.dumps({"Depth": -0.5, "Breadth": -0.5}))
    like = CliRunner().invoke(main, ["select", str(run_dir), "--like", str(target), "--domain", "math"])
    assert like.exit_code == 0 and like.output.splitlines()[2].split()[2] == "qwq"
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({"Depth": 1, "Efficency": 2}))
    res = CliRunner().invoke(main, ["select", str(run_dir), "--like", str(typo)])
    assert res.exit_code != 0 and "'Efficency' is no dimension (did you mean Efficiency?)" in res.output
    typo.write_text("not json")
    res = CliRunner().invoke(main, ["select", str(run_dir), "--like", str(typo)])
    assert res.exit_code != 0 and f"--like {typo}: not a JSON profile" in res.output
    bad = CliRunner().invoke(main, ["select", str(run_dir), "--domain", "poetry"])
    assert bad.exit_code == 2 and "the domains of the run are logic, math" in bad.output
    # the API and the command are one code path
    assert [r["model"] for r in select_run(run_dir).rows] == [r.split()[2] for r in lines[2:5]]


def test_report_sections_list_unusual_traces_and_the_model_for_each_domain(run_dir):
    """The sections as report.html and report.md show them (tests/test_report.py checks that the
    report holds them); the whole report is not drawn here."""
    from thinkprobe.report.coverage import run_json
    from thinkprobe.report.decisions import RISK_HEADER, decision_sections, sections_html, sections_md
    from thinkprobe.report.glossary import GLOSSARY, glossary_items
    from thinkprobe.stats import load_table

    pages = {f"r1-{k}": f"traces/r1-{k}.html" for k in range(14)}
    sections = decision_sections(run_dir, load_table(run_dir), pages, run_json(run_dir))
    page, md = sections_html(sections, GLOSSARY), "\n".join(sections_md(sections))
    for title in ("Unusual traces and failure risk", "Which model for which domain"):
        assert f"<h2>{title}</h2>" in page and f"## {title}" in md
    unusual = page[:page.index("<h2>Which model")]
    assert unusual.count('<a href="traces/r1-') == SETTINGS.unusual_per_model and "solo has 1 trace" in unusual
    assert "[r1-" in md and "AUROC of failure_risk [95%]</th>" in unusual  # the run is graded: its table
    assert re.search(r"<td class=l>all</td><td>\d+</td><td>\d+</td><td>[\d.]+</td><td>[\d.]+</td>"
                     r"<td>[\d.]+ \[[\d.]+, [\d.]+\]</td>", unusual)
    assert ("| graded traces | n | wrong | share wrong | mean failure_risk | AUROC of failure_risk [95%] | "
            "AUROC of length alone | AUROC of model + length, cross-validated |") in md
    choice = page[page.index("<h2>Which model"):]
    assert "<td class=l>logic</td>" in choice and "<td class=l>math</td>" in choice
    defined = {name for _, items in glossary_items() for name, _ in items}
    assert {"anomaly", "anomaly_rank", "drivers", "failure_risk", "fit", "interval", "tier"} <= defined
    assert set(sections[0].header) <= defined | {"trace", "model"} and set(RISK_HEADER) <= defined
    assert set(sections[1].header) <= defined | {"domain"}  # every header of the choice table has hover text


def test_unusual_traces_whose_reasoning_is_code_are_marked(run_dir, tmp_path):
    """A trace whose reasoning is a program (provenance reasoning_is_code: MR-BEN's coding solutions) is
    unusual for that alone; the table said nothing of it."""
    import shutil

    from thinkprobe.anomalies import read_anomalies
    from thinkprobe.report.coverage import run_json
    from thinkprobe.report.decisions import CODE_MARK, decision_sections
    from thinkprobe.stats import load_table

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    top = min((a for a in read_anomalies(run) if a["model"] == "qwq"), key=lambda a: a["anomaly_rank"])["trace_id"]
    graphs = [json.loads(line) for line in (run / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]
    for g in graphs:
        if g["trace_id"] == top:
            g["provenance"] = {**(g.get("provenance") or {}), "reasoning_is_code": True}
    (run / "graphs.jsonl").write_text("".join(json.dumps(g) + "\n" for g in graphs), encoding="utf-8")
    unmarked = decision_sections(run, load_table(run), {}, run_json(run))[0]
    assert not any(CODE_MARK in row[4] for row in unmarked.rows)  # run.json counts none: graphs not read
    info = json.loads((run / "run.json").read_text(encoding="utf-8")) if (run / "run.json").exists() else {}
    info.setdefault("counts", {})["reasoning_is_code"] = 1
    (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
    section = decision_sections(run, load_table(run), {}, run_json(run))[0]
    marked = [row for row in section.rows if CODE_MARK in row[4]]
    assert [row[0][0] for row in marked] == [top] and "reasoning is a Python program" in section.note


def test_select_says_it_pools_groups_only_where_it_does(run_dir):
    from thinkprobe.stats import load_table

    rows = load_table(run_dir)
    for r in rows:  # each domain holds one group
        r["group"] = "MiP" if r["domain"] == "math" else "normal"
    assert "pools the run's groups (MiP, normal)" in select_run(run_dir, rows=rows).note
    assert "spread unevenly" not in select_run(run_dir, rows=rows).note  # every model has traces of both alike
    assert "pools" not in select_run(run_dir, rows=rows, domain="math").note
    # one model mostly in one group (a MiP run: QwQ 11 of 16 missing a premise, R1 8 of 15): said with the pooling
    skewed = [dict(r, group="MiP" if r["model"] == sorted({x["model"] for x in rows})[0] else "normal") for r in rows]
    assert "over which the models' traces are spread unevenly (Cramér's V 1.00" in select_run(run_dir, rows=skewed).note
    # the crossing of models and domains is said of the traces ranked: within group MiP (math only)
    # there is none to speak of, whatever the whole run's (a helper's MiP run got the whole run's)
    for r in rows:
        if r["model"] == "qwq":  # qwq answered math only
            r["domain"], r["group"] = "math", "MiP"
    assert "qwq has no logic traces" in select_run(run_dir, rows=rows).note
    assert "unevenly crossed" not in select_run(run_dir, rows=rows, group="MiP").note


def test_select_names_models_whose_reasoning_is_a_summary_or_cut_off(run_dir, tmp_path):
    """A trial: select ranked Venhoff et al.'s R1 distills (7 of 10 traces cut off by a token cap) and tts_knowledge's
    three summary models apart from the others with no word; the report's headline named the summaries only."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    first, second = list(MODELS)[:2]
    info = {"summarised_by_model": {first: MODELS[first]}, "truncated_by_model": {second: MODELS[second] // 2}}
    (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
    note = select_run(run).notes["reasoning"]
    assert note.startswith(f"The reasoning of {first} is a summary") and f"Many traces of {second} (" in note
    assert "reasoning" not in select_run(run_dir).notes


def by_id_domain(rows, trace_id):
    return next(r["domain"] for r in rows if r["trace_id"] == trace_id)


def test_the_runs_auroc_says_which_traces_the_model_saw_and_needs_both_kinds(run_dir, monkeypatch):
    """A run of MiP-Overthinking traces got AUROC 0.93 of which half came from the model's own
    training traces and most from the MiP / normal condition; one right trace among 25 gave an AUROC too."""
    import thinkprobe.report.decisions as decisions
    from thinkprobe.records import iter_graph_records
    from thinkprobe.stats import load_table

    rows = load_table(run_dir)
    anomalies = decisions.read_anomalies(run_dir)
    graphs = {g["trace_id"]: g for g in iter_graph_records(run_dir)}
    seen = [t for t in graphs if t.startswith("r1-")]  # as if the failure-risk model had been trained on these

    def risk_auroc(rows):  # as the unusual-traces section computes it
        graded = decisions._graded(rows, anomalies)
        return decisions._risk_auroc(rows, graded, set(seen) & set(graded), SETTINGS)

    note, header, table = risk_auroc(rows)
    by = {r[0]: r for r in table}
    graded = decisions._graded(rows, anomalies)
    assert f"{len(seen)} of the {len(graded)} graded traces are ones the failure-risk model was trained on" in note
    assert ("mostly in-sample (read it as no test" if 2 * len(seen) > len(graded) else "partly in-sample; the second") in note
    # most of them seen (Thought Anchors: 39 of 40): "mostly", no test of the model
    left = next(t for t in graded if t not in seen)
    note, _, table = decisions._risk_auroc(rows, graded, set(graded) - {left}, SETTINGS)
    assert "so the first row is mostly in-sample (read it as no test of the model)" in note
    # the rows by domain are out of sample: the domain without such a trace has a row that says so (it had
    # divided by zero)
    other = next(r for r in table if r[0].startswith("domain ") and r[0] != f"domain {by_id_domain(rows, left)}")
    assert other[1:3] == ["0", "0"] and other[5] == "no trace here"
    assert by["not trained on"][1:3] == ["13", "7"] and re.fullmatch(r"[\d.]+ \[[\d.]+, [\d.]+\]", by["not trained on"][5])
    assert "though they may come from a corpus the failure-risk model was trained on (in-distribution)" in note
    # and by domain, as by group (BIG-Bench Mistake: the domain alone ranked wrong answers at 0.74); here every
    # math trace is wrong and every logic trace right, so no domain holds both kinds
    assert by["domain math"][5] == by["domain logic"][5] == "too few of one kind (5 right and 5 wrong needed)"
    assert "within each domain (a domain can hold most of the wrong answers)" in note
    # the baseline beside it: the same graded traces ranked by their length alone
    from thinkprobe.stats import auroc

    graded = [r for r in rows if r["correct"] is not None]
    length = auroc([r["tokens"] for r in graded], [not r["correct"] for r in graded])
    assert by["all"][6] == f"{length:.3f}" and by["domain math"][6] == "–"
    # and the stronger one: model + log tokens cross-validated on the row's traces, as the outcome section's
    from thinkprobe.outcome import outcome_validity

    cv = outcome_validity(graded, SETTINGS)
    assert cv["status"] == "ok" and by["all"][7] == f"{cv['auroc_model_length']:.3f}" and by["domain math"][7] == "–"
    # whether its probabilities hold: the mean failure_risk beside the share wrong
    risks = {a["trace_id"]: a["failure_risk"] for a in anomalies}
    graded_risk = [risks[r["trace_id"]] for r in graded if risks.get(r["trace_id"]) is not None]
    assert by["all"][4] == f"{sum(graded_risk) / len(graded_risk):.2f}"
    assert by["all"][3] == f"{sum(not r['correct'] for r in graded) / len(graded):.2f}"
    gap = abs(float(by["all"][3]) - float(by["all"][4])) > decisions.CALIBRATION_GAP
    assert ("on this run read failure_risk as a ranking of the traces, not as a probability" in note) == gap
    # the design's rows leave the traces the model was trained on out (a new user's reading: the balanced
    # ReasoningFlow run's AIME row was 47 of 90 in-sample, and the note said only the first row was partly so)
    assert "within each domain (a domain can hold most of the wrong answers), over the traces the failure-risk model was not " \
           "trained on" in note
    unseen = [r for r in graded if r["trace_id"] not in seen]
    assert sum(int(by[f"domain {d}"][1]) for d in ("math", "logic")) == len(unseen) < len(graded)
    for k, r in enumerate(rows):  # two groups, each with traces the model was not trained on
        r["group"] = "AB"[k % 2]
    note, _, table = risk_auroc(rows)
    group_a = [r for k, r in enumerate(rows) if k % 2 == 0 and r["trace_id"] not in seen and r["correct"] is not None]
    assert "within each group" in note
    wrong_a = sum(not r["correct"] for r in group_a)
    assert next(r for r in table if r[0] == "group A")[1:3] == [str(len(group_a)), str(wrong_a)]
    few = [dict(r, correct=(r["trace_id"] != "r1-0")) for r in rows]
    all_row = risk_auroc(few)[2][0]
    assert all_row[2] == "1" and all_row[5] == "too few of one kind (5 right and 5 wrong needed)"


def test_in_sample_failure_risk_is_marked_in_the_table_and_on_the_trace_page(run_dir, tmp_path, monkeypatch):
    from thinkprobe.report.decisions import decision_sections
    """A fresh-eyes reading: in a run of MR-BEN traces every trace was one failure_risk was trained on, and
    an ungraded run never said so (the scan was made only with grades); the trace page called it the
    probability of a wrong answer, flatly."""
    import shutil

    import thinkprobe.report.decisions as decisions
    import thinkprobe.report.trace_pages as trace_pages
    import thinkprobe.risk as risk
    from thinkprobe.anomalies import read_anomalies
    from thinkprobe.outputs import ANOMALIES_TABLE
    from thinkprobe.report.coverage import run_json
    from thinkprobe.stats import load_table

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    # as if the model had been trained on three of qwq's traces
    monkeypatch.setattr(risk, "trace_key", lambda rec: rec["trace_id"])
    monkeypatch.setattr(risk, "training_keys", lambda: frozenset({"qwq-0", "qwq-1", "qwq-2"}))
    # anomalies.csv says so (a run writes it as it joins its chunks; here a run made before the column: rewritten)
    (run / ANOMALIES_TABLE.name).write_text("trace_id,model\n", encoding="utf-8")
    assert {a["trace_id"] for a in read_anomalies(run) if a["failure_risk_in_sample"]} == {"qwq-0", "qwq-1", "qwq-2"}
    rows = [dict(r, correct=None) for r in load_table(run)]  # ungraded
    section = decision_sections(run, rows, {}, run_json(run))[0]
    marked = [row[0][0] for row in section.rows if row[5].endswith(decisions.IN_SAMPLE)]
    assert marked and set(marked) <= {"qwq-0", "qwq-1", "qwq-2"} and section.after is None
    assert "3 of the run's traces (" in section.note and "their failure_risk is in-sample" in section.note
    (run / "traces").mkdir()  # as write_report makes it
    pages = trace_pages.write_trace_pages(run, 1)
    page = (run / pages["qwq-0"]).read_text(encoding="utf-8")
    assert "(in-sample: this trace is one the failure-risk model was trained on)" in page
    assert "in-sample" not in (run / pages["r1-0"]).read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- training labels (real data)


def test_training_labels_are_read_from_the_records_and_answers_cut_off(shared_data):
    from thinkprobe.training.risk_data import read_corpus

    anchors = read_corpus("thought_anchors", shared_data)
    assert len(anchors) == 40 and sum(e.wrong for e in anchors) == 20  # is_correct: 10 + 10 per model
    mip = read_corpus("mip_overthinking", shared_data)
    math_mip = [e for e in mip if e.domain == "math-MiP"]
    # eval_result 2 = incorrect, 1 = correct; 0 (abstains) and 3 (format error) are not graded
    assert (sum(e.wrong for e in math_mip), len(math_mip)) == (158, 194)
    assert {e.model for e in mip} == {"DeepSeek-R1", "QwQ-32B", "R1-Distill-Qwen-32B", "s1.1-32B"}
    assert not any("</think>" in e.reasoning or e.reasoning.lstrip().startswith("<think>") for e in mip + anchors)
    s1 = next(e for e in mip if e.model == "s1.1-32B")
    assert not s1.reasoning.startswith("think") and "\nanswer\n" not in s1.reasoning
    mr_ben = read_corpus("mr_ben", shared_data)
    assert not any("Solution:" in e.reasoning.splitlines()[-1] for e in mr_ben[:200])


def test_training_data_of_an_unfinished_run_comes_from_its_committed_chunks(tmp_path):
    """`train_failure_risk.py --reuse --partial`: a run still profiling contributes the traces of
    its committed chunks (never the chunk being written); without --partial it must have finished."""
    from thinkprobe.training.risk_fit import LABEL_COLUMNS, load_dataset

    parts = tmp_path / "c" / "run" / "parts"
    parts.mkdir(parents=True)
    graphs = [make_graph(f"t{k}", "m", "math", 6 + k) | {"record": k} for k in range(3)]
    (parts / "000000.jsonl").write_text("".join(json.dumps({"graph": g}) + "\n" for g in graphs[:2]))
    (parts / "000001.running").write_text(json.dumps({"graph": graphs[2]}) + "\n")
    with open(tmp_path / "c" / "labels.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(LABEL_COLUMNS)
        for k in range(3):
            w.writerow([k, f"t{k}", "c", "m", "math", k % 2])
    data = load_dataset(tmp_path, ["c"], partial=True)
    assert data["id"].tolist() == ["t0", "t1"] and data["wrong"].tolist() == [False, True]
    assert data["X"].shape == (2, len(RISK_FEATURES)) and data["X"][1, 0] > data["X"][0, 0]  # more units
    with pytest.raises(FileNotFoundError):
        load_dataset(tmp_path, ["c"])


def test_a_fitted_failure_risk_keeps_the_fewest_units_of_its_training_traces(tmp_path):
    """fit() reads min_units off its training traces and model.json keeps it: a trace shorter than
    all of them gets no failure_risk (the shipped model: 2)."""
    from thinkprobe.risk import FailureRisk
    from thinkprobe.training.risk_fit import LABEL_COLUMNS, fit, load_dataset

    parts = tmp_path / "c" / "run" / "parts"
    parts.mkdir(parents=True)
    graphs = [make_graph(f"t{k}", "m", "math", 3 + k) | {"record": k} for k in range(20)]
    (parts / "000000.jsonl").write_text("".join(json.dumps({"graph": g}) + "\n" for g in graphs))
    with open(tmp_path / "c" / "labels.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(LABEL_COLUMNS)
        for k in range(20):
            w.writerow([k, f"t{k}", "c", "m", "math", k % 2])
    model = fit(load_dataset(tmp_path, ["c"], partial=True))
    assert model.min_units == 3 and FailureRisk.from_json(model.to_json()).min_units == 3
    assert failure_risk(make_graph("short", "m", "math", 2), model) is None
    assert failure_risk(make_graph("long", "m", "math", 3), model) is not None


def test_prepare_takes_per_corpus_caps(tmp_path, shared_data):
    """`train_failure_risk.py --per-stratum thought_anchors=3`: at most 3 traces per (model, domain,
    wrong) cell of that corpus (2 models x right / wrong: 12 of its 40), the same draw each time;
    records and labels line up and no record carries its label."""
    from thinkprobe.training.risk_fit import prepare

    counts = prepare(tmp_path / "a", shared_data, ["thought_anchors"], per_stratum={"thought_anchors": 3})
    again = prepare(tmp_path / "b", shared_data, ["thought_anchors"], per_stratum={"thought_anchors": 3})
    assert counts == again == {"thought_anchors": 12}
    records = (tmp_path / "a" / "thought_anchors" / "records.jsonl").read_text(encoding="utf-8")
    assert records == (tmp_path / "b" / "thought_anchors" / "records.jsonl").read_text(encoding="utf-8")
    labels = list(csv.DictReader(open(tmp_path / "a" / "thought_anchors" / "labels.csv", encoding="utf-8")))
    rows = [json.loads(line) for line in records.splitlines()]
    assert [r["id"] for r in rows] == [x["id"] for x in labels] and sum(int(x["wrong"]) for x in labels) == 6
    assert not any("wrong" in r or "correct" in r for r in rows)


def test_a_perfect_failure_risk_auroc_keeps_an_interval():
    """Hanley & McNeil's standard error is 0 at an AUROC of 1: the report printed '1.00-1.00' on 5
    right and 5 wrong traces."""
    from thinkprobe.report.decisions import _auroc_cell, _risk_interval

    text = _auroc_cell(_risk_interval([(0.9, True)] * 5 + [(0.1, False)] * 5))
    low = float(text.split("[")[1].split(",")[0])
    assert text.startswith("1.000 [") and low < 0.95


def test_the_model_choice_table_says_told_apart_only_among_models_with_a_tier(tmp_path):
    """ProcessBench: one model of twelve had 5 traces, the rest fewer, and the table said 'told apart
    from the rest: yes' for a model told apart from no one."""
    from thinkprobe.report.decisions import _choice
    from thinkprobe.stats import load_table, stats_settings

    rows = _profile_rows({"big": 0.0}, n=6) + _profile_rows({"s1": 1.0}, n=2) + _profile_rows({"s2": -1.0}, n=2)
    for r in rows:
        r["domain"] = "math"
    run = write_run(tmp_path / "run", rows)
    section = _choice(run, load_table(run), stats_settings(run))
    assert section.rows[0][2] == "big" and section.rows[0][-1] == "– (no other model has a tier)"
    assert "gets no tier" in section.note


def test_select_gives_the_same_intervals_whatever_the_order_of_the_rows():
    """The report sorts its traces by id and the command read them in file order: the same seed gave
    the report [-0.06, 0.13] and the command [-0.045, 0.125] for one model."""
    rows = _profile_rows({"a": 0.0, "b": 0.3}, paired=False)
    first = select_models(rows, SETTINGS)
    again = select_models(list(reversed(rows)), SETTINGS)
    assert [(r["model"], r["ci_low"], r["ci_high"], r["tier"]) for r in first.rows] == \
        [(r["model"], r["ci_low"], r["ci_high"], r["tier"]) for r in again.rows]


def test_the_failure_risk_table_ends_with_a_verdict_against_the_model_and_length_baseline():
    """A first-time reader: the note never said whether failure_risk beat the baseline (tts: 0.746 from
    model + length against 0.673 [0.59, 0.74]). A verdict sentence says where the baseline lies against
    failure_risk's interval, and says nothing where either is missing."""
    from thinkprobe.report.decisions import _verdict

    interval = (0.673, 0.5912, 0.7364)
    assert "lies above failure_risk's interval (0.673 [0.59, 0.74])" in _verdict("all", interval, 0.746)
    assert "ranks the wrong answers better than the model + length baseline (0.550)" in _verdict("all", interval, 0.55)
    assert "cannot be told apart" in _verdict("all", interval, 0.700)
    # as printed: a baseline of 0.7404 lies within the interval the table shows as [0.59, 0.74]
    assert "cannot be told apart" in _verdict("all", interval, 0.7404)
    assert _verdict("all", interval, None) == "" and _verdict("all", None, 0.7) == ""
    # a baseline at or under chance (a new user's ReasoningFlow run: 0.479 against [0.51, 0.83]) is no yardstick
    assert "better than chance; the model + length baseline does not here (0.479)" in _verdict(
        "all", (0.67, 0.51, 0.83), 0.479)
    assert "neither failure_risk (0.560 [0.45, 0.67]) nor" in _verdict("all", (0.56, 0.45, 0.67), 0.40)
    # both at or under chance, the baseline inside failure_risk's interval (MR-BEN: 0.350 [0.20, 0.54], 0.27)
    assert "neither failure_risk (0.350 [0.20, 0.54]) nor the model + length baseline (0.270) ranks" in _verdict(
        "all", (0.35, 0.20, 0.54), 0.27)
    assert _verdict("not trained on", interval, 0.8).startswith(
        " Verdict over the traces the failure-risk model was not trained on:")


def test_the_verdict_says_when_the_design_alone_tells_wrong_from_right():
    """A new user's MiP run: the traces the failure-risk model had not seen were all wrong with a missing
    premise and all right without, and the verdict read failure_risk's 0.98 as ranking wrong answers, where
    it said which condition a trace came from."""
    from thinkprobe.report.decisions import _design_note

    rows = [{"trace_id": f"t{k}", "group": "MiP" if k < 20 else "normal", "domain": "math"} for k in range(40)]
    part = {f"t{k}": (0.9 if k < 20 else 0.1, k < 20) for k in range(40)}
    note = _design_note(rows, part, SETTINGS, "not trained on", {"group"})
    assert "the group alone tells them apart at AUROC 1.00" in note and "domain" not in note
    # the row it speaks of by name (it said "the last row", and rows by level follow it), and the rows by group
    assert note.startswith(" On the traces of the row 'not trained on' the group alone")
    assert "each trace scored by the share wrong of its group" in note and "read the rows within each group below" in note
    # MR-BEN's ten domains: more levels than the table lists, so no rows to read
    assert _design_note(rows, part, SETTINGS, "all", set()).endswith(
        "; the group has more than 8 values, too many to list.")
    mixed = {t: (p, int(t[1:]) % 2 == 0) for t, (p, _) in part.items()}  # wrong in both groups alike
    assert _design_note(rows, mixed, SETTINGS) == ""


def test_no_verdict_where_the_design_decides_and_levels_fall_back_to_every_graded_trace():
    """A new user's MiP run (150 traces): the failure-risk model had been trained on every right answer of the
    missing-premise condition and every wrong one without it (its sample is drawn per grade), so the traces it
    had not seen were MiP-wrong against normal-right: AUROC 1.000, a verdict 'ranks the wrong answers better'
    and rows within each group with too few of one kind. The design note stands in for the verdict, and the
    rows within each group take every graded trace (0.57 within MiP there: about length's)."""
    from thinkprobe.report.decisions import _risk_auroc

    rng = np.random.default_rng(0)
    rows, graded, seen = [], {}, set()
    for k in range(120):
        group, wrong = ("MiP", k % 4 != 0) if k < 60 else ("normal", k % 4 == 0)
        tid = f"t{k}"
        rows.append({"trace_id": tid, "model": f"m{k % 2}", "domain": "math", "group": group,
                     "tokens": float(rng.integers(200, 4000)), "question": None})
        graded[tid] = (float(rng.uniform(0.6, 1.0) if group == "MiP" else rng.uniform(0.0, 0.4)), wrong)
        if (group == "MiP") != wrong or k % 3 == 0:  # every rarer outcome in-sample, and a third of the rest
            seen.add(tid)
    note, _, table = _risk_auroc(rows, graded, seen, SETTINGS)
    assert [r[0] for r in table] == ["all", "not trained on", "group MiP", "group normal"]
    assert table[1][1] == str(len(graded) - len(seen)) and "Verdict" not in note
    assert "the group alone tells them apart" in note and "no verdict is drawn there" in note
    assert [r[1] for r in table[2:]] == ["60", "60"] and "over every graded trace (partly in-sample" in note
    assert "which traces it saw depends on their grades" in note
    # where the traces not trained on hold both kinds in every level, the levels are theirs, and a verdict is drawn
    both = {t for t in seen if int(t[1:]) % 3 == 0}
    note, _, table = _risk_auroc(rows, graded, both, SETTINGS)
    assert [r[1] for r in table[2:]] == [str(sum(r["group"] == g and r["trace_id"] not in both for r in rows))
                                         for g in ("MiP", "normal")]
    assert "over the traces the failure-risk model was not trained on." in note


def test_the_unusual_traces_say_when_a_models_groups_are_pooled():
    """A new user's MiP run: a model's most unusual traces were its missing-premise ones, scored against
    its traces of both conditions together, and nothing said so."""
    from thinkprobe.report.decisions import _pooled_groups

    rows = [{"trace_id": f"t{k}", "model": "m", "group": "MiP" if k % 3 == 0 else "normal"} for k in range(12)]
    assert _pooled_groups(rows, [{"trace_id": "t0"}, {"trace_id": "t3"}, {"trace_id": "t1"}]) == \
        "of those listed: MiP 2, normal 1"
    assert _pooled_groups([{**r, "group": None} for r in rows], [{"trace_id": "t0"}]) == ""
