"""Indicator agreement (thinkprobe.agreement): Spearman rho, bootstrap interval and scaled mean
absolute difference per indicator and dimension between predicted and gold graphs, and model
identification from the indicators; `eval-gold` prints and writes the agreement."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from thinkprobe.agreement import format_agreement, indicator_agreement, model_identification
from thinkprobe.cli import main
from thinkprobe.indicators import INDICATORS

from test_graph_source import rf_doc, write_jsonl


def rows(n, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    return {f"d{k}": {name: float(rng.normal() + shift) for name in INDICATORS} for k in range(n)}


def by_name(result):
    return {v["variable"]: v for v in result["variables"]}


def test_the_same_values_agree_perfectly_and_shifted_ones_keep_their_ranks():
    gold = rows(12)
    same = by_name(indicator_agreement(gold, gold, resamples=200))
    assert all(same[name]["spearman"] == pytest.approx(1.0) and same[name]["mean_abs_diff_sd"] == 0 for name in INDICATORS)
    shifted = {k: {name: v + 5 for name, v in r.items()} for k, r in gold.items()}  # same order, off by 5
    moved = by_name(indicator_agreement(gold, shifted, resamples=200))
    assert moved["idea_count"]["spearman"] == pytest.approx(1.0) and moved["idea_count"]["mean_abs_diff_sd"] > 1
    assert set(same) == set(INDICATORS) | {"Breadth", "Depth", "Structure", "Metacognition", "Efficiency"}


def test_the_table_shows_both_means_beside_rho_and_the_scaled_difference():
    gold = rows(12)
    shifted = {k: {name: v + 5 for name, v in r.items()} for k, r in gold.items()}
    result = indicator_agreement(gold, shifted, resamples=200)
    line = next(x for x in format_agreement(result).splitlines() if x.startswith("idea_count "))
    v = by_name(result)["idea_count"]
    cells = line.split()
    assert float(cells[1]) == pytest.approx(1.0)
    assert float(cells[-3]) == pytest.approx(v["gold_mean"], rel=1e-2) and float(cells[-2]) == pytest.approx(v["gold_mean"] + 5, rel=1e-2)
    assert float(cells[-1]) == pytest.approx(v["mean_abs_diff_sd"], abs=0.01)


def test_constant_values_and_unmatched_documents():
    gold, pred = rows(10), rows(10, seed=1)
    for r in pred.values():
        r["idea_count"] = 3.0  # the prediction ranks nothing
    for r in gold.values():
        r["revision_depth"] = 0.0  # nothing to agree with
    pred["extra"] = dict(pred["d0"])  # a document the gold does not have is not scored
    result = indicator_agreement(gold, pred, resamples=200)
    v = by_name(result)
    assert result["docs"] == 10
    assert v["idea_count"]["spearman"] == 0.0 and v["revision_depth"]["spearman"] is None
    assert v["revision_depth"]["mean_abs_diff_sd"] is None


def test_the_interval_brackets_rho_and_is_seeded():
    gold = rows(30)
    noisy = {k: {name: x + np.random.default_rng(7).normal(0, 0.5) for name, x in r.items()} for k, r in gold.items()}
    a, b = (indicator_agreement(gold, noisy, resamples=200, seed=3) for _ in range(2))
    assert a == b
    for v in a["variables"]:
        lo, hi = v["ci"]
        assert lo <= v["spearman"] <= hi


def test_model_identification_separates_separable_models_and_reports_chance():
    table = [{"model": m, **{name: float(k * 10 + i % 3) for name in INDICATORS}} for k, m in enumerate("abc")
             for i in range(10)]
    r = model_identification(table, "model")
    assert r["status"] == "tested" and r["accuracy"] == 1.0 and r["chance"] == pytest.approx(1 / 3)
    mixed = [{**row, "model": "ab"[i % 2]} for i, row in enumerate(table)]  # labels unrelated to the values
    assert model_identification(mixed, "model")["accuracy"] < 0.8
    assert model_identification(table[:1], "model")["status"] == "not testable"


def test_eval_gold_prints_and_writes_the_agreement(tmp_path):
    docs = [rf_doc(f"d{k}", text=("We need 2 + 3. That is 5. Wait, is that right? Yes, 2 + 3 = 5. So the answer is 5."
                                 + " Hmm, maybe." * k)) for k in range(4)]
    gold = write_jsonl(tmp_path / "gold.jsonl", docs)
    res = CliRunner().invoke(main, ["eval-gold", str(gold), "--baseline", "--device", "cpu",
                                    "--json", str(tmp_path / "scores.json")])
    assert res.exit_code == 0, res.output
    assert "indicator agreement with the gold graphs (4 documents" in res.output
    scores = json.loads((tmp_path / "scores.json").read_text(encoding="utf-8"))
    agreement = scores["indicator_agreement"]
    assert agreement["docs"] == 4 and len(agreement["variables"]) == 24
    res = CliRunner().invoke(main, ["eval-gold", str(gold), "--baseline", "--no-indicators", "--device", "cpu",
                                    "--json", str(tmp_path / "plain.json")])  # nothing is profiled: fast
    assert "indicator_agreement" not in json.loads((tmp_path / "plain.json").read_text(encoding="utf-8"))
