"""CoTJudger's analyses (thinkprobe.redundancy.analyses) on small runs built here: difficulty levels
with ties and too few models, positions of off-path units, outcome tokens, transitions, the Pareto
frontier, node-type shares; a run with one model or no gold answers still gets its report, with the
reason for each missing figure; `thinkprobe report` draws them for a run made without them; the
same input gives the same bytes."""
from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from run_folder import make_graph, write_run
from thinkprobe.cli import main
from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.outputs import ANALYSES_JSON, ANALYSIS_TABLES, REDUNDANCY_TABLE, read_table
from thinkprobe.redundancy import write_redundancy
from thinkprobe.redundancy.analyses import LEVEL_RULE, Analyses, difficulty_level, pareto_frontier, question_key
from thinkprobe.report import write_report
from thinkprobe.stats import compute_stats


def record(trace_id: str, model: str, question: str | None, n: int = 10, off=(), domain: str = "math") -> dict:
    types = ("MET", "RSN", "RSN", "CRT", "CON")
    return {"trace_id": trace_id, "model": model, "domain": domain, "question": question, "provenance": {},
            "units": [{"id": i, "type": types[i % len(types)], "tokens": 5} for i in range(n)],
            "redundancy": {"off_path_positions": list(off)}}


def row(trace_id: str, model: str, acc: int | None, tokens: int = 50, r: float = 0.5, d: float = 1.0,
        transitions=(0, 1, 0, 0)) -> dict:
    known = acc is not None
    return {"trace_id": trace_id, "model": model, "domain": "math", "source_id": None, "Acc": acc, "Tokens": tokens,
            "|V|": 10, "Iso": 0, "|E|": 9, "D": d, "in_max": 1, "out_max": 1, "Self": 0.0, "Back": 0.0, "L_eff": 5,
            "R": r, "Unc": 0, **dict(zip(("DR", "SV", "EE", "EB"), transitions if known else (None,) * 4))}


def test_level_rule_with_ties_on_bin_edges():
    assert [difficulty_level(Fraction(k, 5)) for k in range(5, -1, -1)] == [1, 2, 3, 4, 5, 5]
    # a rate exactly on an edge (0.8, 0.6, ...) goes to the harder level; with 3 models level 3 cannot occur
    assert [difficulty_level(Fraction(k, 3)) for k in (3, 2, 1, 0)] == [1, 2, 4, 5]
    assert "floor" in LEVEL_RULE and "at least 3" in LEVEL_RULE


def test_levels_from_models_accuracy_with_repeats_and_too_few_models():
    a = Analyses()
    verdicts = {  # question -> model -> verdicts of its traces
        "Q easy": {"m1": [1], "m2": [1], "m3": [1], "m4": [1]},           # s = 1 -> 1
        "Q mid": {"m1": [1], "m2": [1, 0], "m3": [0], "m4": [1]},         # s = (1 + 1/2 + 0 + 1) / 4 = 5/8 -> 2
        "Q hard": {"m1": [0], "m2": [0], "m3": [0], "m4": [1]},           # s = 1/4 -> 4
        "Q two": {"m1": [0], "m2": [1]},                                  # 2 models: no level
    }
    k = 0
    for question, models in verdicts.items():
        for model, accs in models.items():
            for acc in accs:
                a.add(record(f"t{k}", model, question), row(f"t{k}", model, acc))
                k += 1
    a.add(record("ungraded", "m1", "Q easy"), row("ungraded", "m1", None))
    levels, summary = a.levels()
    by_question = {q: {lv for lv, key in zip(levels, a.keys) if key == question_key({"question": q})} for q in verdicts}
    assert by_question == {"Q easy": {1}, "Q mid": {2}, "Q hard": {4}, "Q two": {None}}
    assert summary["questions_per_level"] == {"1": 1, "2": 1, "3": 0, "4": 1, "5": 0}
    assert summary["questions_graded"] == 4 and summary["questions_with_level"] == 3
    # an ungraded trace of a levelled question still carries the question's level
    assert levels[-1] == 1


def test_questions_join_on_text_whitespace_insensitive_else_on_domain_and_own_id():
    assert question_key({"question": "What is\n 2 + 2?"}) == question_key({"question": "What is 2 + 2?"})
    assert question_key({"question": None, "domain": "d", "provenance": {"source_id": "7"}}) == "id:d:7"
    assert question_key({"question": "", "domain": "d", "provenance": {}}) is None


def test_pareto_frontier_and_ties():
    assert pareto_frontier([(0.5, 0.2), (0.5, 0.2), (0.4, 0.1), (0.3, 0.3)]) == [True, True, True, False]


def _built_run(tmp_path: Path, models=("m1", "m2", "m3", "m4"), graded=True) -> Path:
    """A run folder with graphs.jsonl (records made here), no analysis tables yet."""
    rows, graphs = [], []
    for m, model in enumerate(models):
        for q in range(5):
            trace_id = f"{model}-q{q}"
            g = make_graph(trace_id, model, "math", 8 + 3 * q + m)
            g["question"] = f"Question number {q}?"
            g["gold_answer"] = ("42" if (q + m) % 5 else "41") if graded else None
            g["correct"] = None
            graphs.append(g)
            ind = {"trace_id": trace_id, "model": model, "domain": "math", "units": 9, "edges": 8, "tokens": 50}
            ind.update({name: (q + m) % 4 / 4 for name in INDICATORS})
            ind.update({d: 0.1 * (q - m) for d in DIMENSIONS})
            rows.append(ind)
    return write_run(tmp_path / "run", rows, graphs)


def test_report_draws_every_analysis_for_a_run_made_without_them(tmp_path):
    run = _built_run(tmp_path)
    res = CliRunner().invoke(main, ["report", str(run)])
    assert res.exit_code == 0, res.output
    info = json.loads((run / "analyses.json").read_text())
    assert info["missing"] == {}
    for name in ("difficulty", "positions", "outcome_tokens", "lengths", "transitions", "pareto", "roles", "dynamics"):
        assert (run / "figures" / f"{name}.png").read_bytes().startswith(b"\x89PNG"), name
    for table in ANALYSIS_TABLES:
        assert (run / table.name).exists(), table.name
    levels = {r["level"] for r in read_table(run, REDUNDANCY_TABLE)}
    assert levels - {""} and levels <= {"1", "2", "3", "4", "5"}
    md = (run / "report.md").read_text()
    assert "## CoTJudger's analyses" in md and "![Where redundancy sits](figures/positions.png)" in md
    assert "▲" in md and "▼" in md  # best and worst model value per column
    stats = compute_stats(run)  # what stats.json holds
    assert stats["outcome"]["wrong"] == 4 and stats["outcome"]["wrong_no_answer"] == 0  # records without redundancy
    assert stats["redundancy_by_level"] and {"model", "level", "n", "D", "R"} <= set(stats["redundancy_by_level"][0])
    # computed again from the graphs (the report reads what is there): the same bytes
    before = {t.name: (run / t.name).read_bytes() for t in ANALYSIS_TABLES}
    for name in [*before, ANALYSES_JSON]:
        (run / name).unlink()
    write_redundancy(run)
    assert before == {t.name: (run / t.name).read_bytes() for t in ANALYSIS_TABLES}


@pytest.mark.parametrize("case", ["one model", "no gold"])
def test_a_run_without_the_data_still_gets_its_report_with_reasons(tmp_path, case):
    run = _built_run(tmp_path, models=("solo",) if case == "one model" else ("m1", "m2", "m3"),
                     graded=case == "one model")
    write_report(run)
    info = json.loads((run / "analyses.json").read_text())
    md = (run / "report.md").read_text()
    assert "difficulty" in info["missing"] and not (run / "figures" / "difficulty.png").exists()
    if case == "one model":
        assert "single model" in info["missing"]["pareto"] and "at most 1 per question" in info["missing"]["difficulty"]
    else:
        assert {"outcome_tokens", "transitions", "pareto"} <= set(info["missing"])
        assert "no gold answers" in info["missing"]["pareto"]
    for reason in info["missing"].values():
        assert f"Not drawn: {reason}." in md
    assert (run / "figures" / "positions.png").exists() and (run / "figures" / "lengths.png").exists()


def test_positions_and_dynamics_tables():
    a = Analyses()
    a.add(record("a", "m", "q", n=21, off=[0.0, 0.95, 1.0]), row("a", "m", 1))
    a.add(record("b", "m", "q2", n=1), row("b", "m", 0))
    out, _ = a.tables()
    pos = out["positions.csv"]
    assert [r["off_sep"] for r in pos if r["off_sep"]] == [1, 2]  # 0.0 in bin 0; 0.95 and 1.0 in the last bin
    assert sum(r["density"] * (r["end"] - r["start"]) for r in pos) == pytest.approx(1.0)
    assert sum(r["units"] for r in pos) == 22
    dyn = [r for r in out["dynamics.csv"] if r["bin"] == 0]
    assert sum(r["share"] for r in dyn) == pytest.approx(1.0)
    roles = {(r["by"], r["name"], r["type"]): r["units"] for r in out["roles.csv"]}
    assert roles[("model", "m", "MET")] == 5 + 1  # ids 0, 5, 10, 15, 20 and the one-unit trace
