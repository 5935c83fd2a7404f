"""How well the default linker's profile agrees with people's graphs (its model folder's agreement.json,
scripts/linker_agreement.py): carried into run.json and shown in the report beside the effect sizes,
with the variables that agree poorly flagged and named in the headline where the models differ in them."""
import json
import shutil
from types import SimpleNamespace

import numpy as np

from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.link import find_model_dir, read_agreement
from thinkprobe.link.models import model_digest
from thinkprobe.link.registry import DEFAULT_LINKER, LINKERS
from thinkprobe.report import write_report
from thinkprobe.report.agreement import poorly_agreeing, run_agreement
from thinkprobe.report.coverage import run_json
from thinkprobe.report.text import headline
from thinkprobe.runner import linker_agreement
from thinkprobe.stats import compute_stats

from run_folder import write_run

SHIPPED = find_model_dir(LINKERS[DEFAULT_LINKER].model)


def test_the_shipped_linker_carries_its_agreement_measured_on_its_own_weights():
    data = read_agreement(SHIPPED)
    assert data is not None, "models/<default>/agreement.json is missing or of other weights: rerun scripts/linker_agreement.py"
    assert set(data["sets"]) == {"people", "silver"} and data["types"] == "head"
    people, silver = data["sets"]["people"], data["sets"]["silver"]
    assert people["docs"] == 20 and silver["docs"] >= 100
    for s in (people, silver):
        assert set(s["variables"]) == {*INDICATORS, *DIMENSIONS}
        rhos = [v["spearman"] for v in s["variables"].values() if v["spearman"] is not None]
        assert all(-1 <= r <= 1 for r in rhos) and len(rhos) >= 20
        # people's schema has no synthesis: their graphs give these 0 everywhere, so no rho
        assert s["variables"]["convergence_index"]["spearman"] is None


def test_agreement_of_other_weights_is_not_read(tmp_path):
    copy = shutil.copytree(SHIPPED, tmp_path / "model")
    assert read_agreement(copy) == read_agreement(SHIPPED)
    cfg = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    cfg["decode"]["threshold_near"] += 0.05  # other decoding: other graphs, so the measurement is not theirs
    (copy / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    assert read_agreement(copy) is None and model_digest(copy) != model_digest(SHIPPED)


def test_run_json_says_whether_the_agreement_applies():
    opts = SimpleNamespace(types="head")
    ours = linker_agreement(opts, SimpleNamespace(name="parser", model_dir=SHIPPED))
    assert ours["measured"] and ours["sets"] == read_agreement(SHIPPED)["sets"]
    other_types = linker_agreement(SimpleNamespace(types="cue"), SimpleNamespace(name="parser", model_dir=SHIPPED))
    assert not other_types["measured"] and "this run typed its units by cue" in other_types["why"]
    no_folder = linker_agreement(opts, SimpleNamespace(name="cue"))
    assert not no_folder["measured"] and "agreement.json" in no_folder["why"]


def _run_with_agreement(tmp_path, info):
    """A hand-built run of three models that differ in Structure and Breadth, with `info` as run.json's
    linker_agreement."""
    rng = np.random.default_rng(0)
    rows = [{"trace_id": f"{m}{k}", "model": m, "domain": "xy"[k % 2], "tokens": float(rng.integers(200, 900)),
             **{d: float(rng.normal()) for d in DIMENSIONS}, "Structure": shift + float(rng.normal(0, 0.3)),
             "Breadth": shift + float(rng.normal(0, 0.3))}
            for m, shift in (("a", 0.0), ("b", 1.5), ("c", 3.0)) for k in range(30)]
    run = write_run(tmp_path, rows)
    (run / "run.json").write_text(json.dumps({"linker_agreement": info}), encoding="utf-8")
    return run


def test_report_shows_the_agreement_and_flags_what_agrees_poorly(tmp_path):
    info = linker_agreement(SimpleNamespace(types="head"), SimpleNamespace(name="parser", model_dir=SHIPPED))
    people = info["sets"]["people"]["variables"]
    floor = compute_stats(_run_with_agreement(tmp_path / "probe", info))["settings"]["min_agreement"]
    poor = [d for d in ("Structure", "Breadth") if any(
        s["variables"][d]["spearman"] < floor for s in info["sets"].values())]
    run = _run_with_agreement(tmp_path / "run", info)
    write_report(run)
    md = (run / "report.md").read_text(encoding="utf-8")
    table = [line for line in md.splitlines() if line.startswith("| variable |")][0]
    assert table.endswith("| split-half | ρ people | ρ silver |")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines() if line.startswith("| ")}
    assert rows["convergence_index"].endswith("| – ⚠ | – ⚠ |")  # nothing to compare with in people's graphs
    for d in DIMENSIONS:
        cell = rows[f"{d} (dimension)"].split(" | ")[-2]
        rho = people[d]["spearman"]
        assert cell.startswith(f"{rho:.2f}") and (cell.endswith("⚠") == (d in poor or rho < floor))
    head = headline(compute_stats(run), run_agreement(run_json(run)))[0]
    assert "beyond trace length and chance the models differ in" in head
    for d in ("Structure", "Breadth"):
        assert (f"{d} (ρ {people[d]['spearman']:.2f} on 20 human-annotated traces" in head) == (d in poor), head
    assert "ρ people, ρ silver: Spearman ρ across traces" in md and info["command"] in md
    assert "<dt>ρ people</dt>" in (run / "report.html").read_text(encoding="utf-8")


def test_a_run_without_a_measured_agreement_says_so_and_has_no_columns(tmp_path):
    info = {"linker": "cue", "measured": False, "why": "no agreement.json measured on these weights"}
    run = _run_with_agreement(tmp_path, info)
    write_report(run)
    md = (run / "report.md").read_text(encoding="utf-8")
    assert "ρ people" not in md.split("## Glossary")[0].replace("ρ people, ρ silver", "")
    assert "How well this run's indicators agree with people's graphs is not known: no agreement.json" in md
    assert run_agreement(run_json(run)) is None


def test_a_run_made_before_the_agreement_was_recorded_says_it_is_not_recorded():
    """A fresh-eyes reading: runs profiled before run.json carried linker_agreement lost every parser
    caveat without a word (the note was meant to be empty for annotated-graph runs only)."""
    from thinkprobe.report.agreement import agreement_note

    old = agreement_note({"settings": {"min_agreement": 0.6}}, {"graph_source": "parse", "counts": {"traces": 3}})
    assert old.startswith("How well this run's indicators agree with people's graphs is not recorded")
    assert agreement_note({"settings": {"min_agreement": 0.6}}, {"graph_source": "input"}) == ""


def test_unusual_traces_mark_the_drivers_that_agree_poorly(tmp_path):
    """On tts_knowledge the most unusual traces were set apart by cross_branch_connectivity and
    convergence_index (z 4-9), indicators of synthesis edges that people's graphs never hold."""
    from thinkprobe.report.decisions import _drivers

    info = linker_agreement(SimpleNamespace(types="head"), SimpleNamespace(name="parser", model_dir=SHIPPED))
    poor = {n for n in INDICATORS if poorly_agreeing(info, n, 0.6)}
    assert {"cross_branch_connectivity", "convergence_index", "recurrence_ratio"} <= poor
    assert "hedging_density" not in poor and "semantic_spread" not in poor
    assert (_drivers("cross_branch_connectivity +8.6; hedging_density +3.1; convergence_index -2.0", poor)
            == "cross_branch_connectivity +8.6 ⚠; hedging_density +3.1; convergence_index -2.0 ⚠")
    assert _drivers(None, poor) == "–" and _drivers("semantic_spread +2.2", set()) == "semantic_spread +2.2"
