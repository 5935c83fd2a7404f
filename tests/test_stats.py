"""Variance statistics (thinkprobe.stats) on small hand-built run folders."""
import json
import math

import pytest
from scipy.stats import kruskal

from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.stats import CSV_COLUMNS, MIN_GROUP, compute_stats, holm, write_stats

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
    assert MIN_GROUP == 2
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


def test_constant_indicator_is_reported_not_a_crash(tmp_path):
    stats = compute_stats(write_run(tmp_path, rows_of({"a": [1, 2, 3], "b": [4, 5, 6]})))
    entry = variable(stats, "branching_factor")  # 0 for every trace
    assert entry["model"]["status"] == "constant" and entry["model"]["eps2"] is None
    assert entry["ratio"] is None
    # Only idea_count varies: one test per grouping enters the Holm family.
    assert stats["settings"]["family_size"] == 2
    assert "NaN" not in json.dumps(stats)


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
