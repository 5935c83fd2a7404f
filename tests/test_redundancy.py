"""Redundancy suite: SEPs on hand-built graphs whose answer is known (straight chain, refuted detour,
affirmed check, repetition, branch, premise closure), the per-trace row, the CSV files, and a
real-data check that the final-answer verdict agrees with the datasets' own correctness labels."""
from __future__ import annotations

import csv
import gzip
import json
import random
import re
from pathlib import Path

import pytest

from thinkprobe.outputs import REDUNDANCY_TABLE

from thinkprobe.redundancy import (COLUMNS, METRICS, MODEL_COLUMNS, annotate_record, isolated_units, redundancy_row,
                                   shortest_effective_path, write_redundancy)
from thinkprobe.redundancy.tables import table_row


def chain(n: int, kind: str = "inference") -> list[tuple[int, int, str]]:
    return [(i, i + 1, kind) for i in range(n - 1)]


def graph_record(texts: list[str], edges: list, types: str | None = None, **meta) -> dict:
    kinds = types.split() if types else ["RSN"] * len(texts)
    return {
        "trace_id": meta.pop("trace_id", "t"), "model": meta.pop("model", "m"), "domain": meta.pop("domain", "d"),
        "question": meta.pop("question", None), "gold_answer": meta.pop("gold_answer", None),
        "correct": meta.pop("correct", None),
        "units": [{"id": k, "section": "reasoning", "start": 0, "end": len(t), "text": t, "type": kinds[k],
                   "segment": 0, "cues": [], "tokens": len(t.split())} for k, t in enumerate(texts)],
        "edges": [{"src": e[0], "dst": e[1], "type": e[2], "polarity": e[3] if len(e) > 3 else None, "score": 1.0}
                  for e in edges],
        **meta,
    }


# ----------------------------------------------------------------------------- SEP on known graphs


def test_straight_chain_has_no_redundancy():
    rec = graph_record(["Let the count be n.", "Each box holds 3.", "There are 4 boxes.", "So n = 3 * 4.",
                        "So the answer is 12."], chain(5), types="FAC FAC FAC RSN CON", gold_answer="12")
    row, extra = redundancy_row(rec)
    assert extra["sep"] == [0, 1, 2, 3, 4] and extra["sep_path"] == [0, 1, 2, 3, 4]
    assert row["L_eff"] == 5 and row["R"] == 0.0 and extra["off_path_positions"] == []
    assert row["Acc"] == 1


def test_refuted_detour_is_jumped():
    # 1 is refuted by 2; the path goes from 1's premise 0 straight to the correction 3.
    edges = chain(5) + [(2, 1, "critique", "negate")]
    sep = shortest_effective_path(5, edges, target=4)
    assert sep.path == (0, 3, 4) and sep.units == (0, 3, 4)


def test_refuted_detour_in_a_trace():
    rec = graph_record(["Let n be the number of apples.", "So the answer is 5, by adding.", "Wait, that's wrong: we must multiply.",
                        "Multiplying gives 6.", "So the answer is 6."], chain(5) + [(2, 1, "critique", "negate")],
                       types="FAC CON CRT RSN CON", gold_answer="6")
    row, extra = redundancy_row(rec)
    assert extra["sep"] == [0, 3, 4]
    assert extra["off_path_positions"] == [0.25, 0.5]
    assert row["R"] == pytest.approx(2 / 5)
    assert [c["correct"] for c in extra["candidates"]] == [False, True]
    assert (row["DR"], row["SV"], row["EE"], row["EB"]) == (0, 0, 0, 1)


def test_first_unit_refuted_jumps_from_the_root():
    sep = shortest_effective_path(4, chain(4) + [(1, 0, "critique", "negate")], target=3)
    assert sep.path == (2, 3) and sep.units == (2, 3)


def test_affirmed_verification_is_skipped():
    # 2 checks 1 and confirms it; 3 builds on the check, and so on what was checked.
    edges = chain(4) + [(2, 1, "critique", "affirm")]
    sep = shortest_effective_path(4, edges, target=3)
    assert sep.path == (0, 1, 3) and sep.units == (0, 1, 3)


def test_uncertain_critique_changes_nothing():
    sep = shortest_effective_path(4, chain(4) + [(2, 1, "critique", "uncertain")], target=3)
    assert sep.units == (0, 1, 2, 3)


def test_repetitions_collapse_onto_their_source():
    edges = chain(5) + [(3, 1, "repetition")]
    sep = shortest_effective_path(5, edges, target=4)
    assert sep.path == (0, 1, 4) and sep.units == (0, 1, 4)


def test_repeated_answer_keeps_the_target():
    sep = shortest_effective_path(4, chain(4) + [(3, 1, "repetition")], target=3)
    assert sep.target == 3 and sep.units[-1] == 3


def test_branch_jumps_to_the_alternative():
    # 1-2 is the first approach; 3 opens an alternative to 1 and leads to the answer 4.
    edges = [(0, 1, "inference"), (1, 2, "inference"), (1, 3, "branch"), (3, 4, "inference")]
    assert shortest_effective_path(5, edges, target=4).units == (0, 3, 4)
    without_rule = [(0, 1, "inference"), (1, 2, "inference"), (1, 3, "elaboration"), (3, 4, "inference")]
    assert shortest_effective_path(5, without_rule, target=4).units == (0, 1, 3, 4)


def test_path_is_closed_under_inference_premises():
    edges = [(0, 1, "inference"), (0, 2, "inference"), (1, 3, "inference"), (3, 4, "inference"),
             (2, 4, "inference"), (2, 3, "elaboration")]
    sep = shortest_effective_path(5, edges, target=4)
    assert sep.path == (0, 2, 4)
    assert sep.units == (0, 1, 2, 3, 4)  # 4 also rests on 3, which rests on 1


def test_elaboration_is_not_a_premise():
    edges = [(0, 1, "inference"), (1, 2, "elaboration"), (0, 2, "inference"), (2, 3, "inference")]
    assert shortest_effective_path(4, edges, target=3).units == (0, 2, 3)


def test_graph_without_edges():
    assert shortest_effective_path(3, [], target=2).units == (2,)
    assert shortest_effective_path(0, [], target=0).units == ()


def test_sep_ends_at_first_correct_candidate():
    rec = graph_record(["Setup.", "So the answer is 6.", "Let me double-check by another route.", "Yes, so the answer is 6."],
                       chain(4), types="FAC CON RSN CON", gold_answer="6")
    row, extra = redundancy_row(rec)
    assert extra["sep"] == [0, 1] and row["R"] == 0.5 and row["sep_to"] == "first_correct"
    assert (row["SV"], row["DR"]) == (1, 0)


# ----------------------------------------------------------------------------- the row


def test_row_columns_and_graph_counts():
    edges = chain(4) + [(3, 1, "repetition"), (2, 0, "critique", "uncertain"), (0, 2, "elaboration")]
    rec = graph_record(["a b c", "d e", "f", "g h"], edges)
    row, _ = redundancy_row(rec)
    assert tuple(row) == (*COLUMNS, "sep_to")
    assert row["sep_to"] == "last_unit"  # no candidate, no conclusion
    assert row["Tokens"] == 8 and row["|V|"] == 4 and row["|E|"] == 6
    assert row["D"] == pytest.approx(6 / 3)
    assert row["Self"] == pytest.approx(1 / 6) and row["Back"] == pytest.approx(1 / 6)
    assert (row["in_max"], row["out_max"]) == (2, 2)


def test_unknown_correctness_leaves_cells_empty():
    rec = graph_record(["Setup.", "So x = 6.", "So the answer is 9."], chain(3), types="FAC CON CON")
    row, extra = redundancy_row(rec)
    for column in ("Acc", "DR", "SV", "EE", "EB"):
        assert row[column] is None  # null in graphs.jsonl, an empty cell in redundancy.csv
    assert extra["final_correct"] is None
    assert extra["sep"] == [0, 1, 2] and row["sep_to"] == "final_answer"  # to the final answer, ungraded


def test_sep_to_says_what_r_runs_to_and_the_stored_record_says_the_same():
    rec = graph_record(["Setup.", "We compute more.", "Thus it holds.", "Some remark."], chain(4), types="FAC RSN CON RSN")
    row, extra = redundancy_row(rec)
    assert extra["sep_target"] == 2 and row["sep_to"] == "conclusion"
    stored = annotate_record(rec)
    assert table_row(stored)["sep_to"] == "conclusion"
    graded = annotate_record(graph_record(["So the answer is 5.", "No: so the answer is 6."], chain(2),
                                          types="CON CON", gold_answer="6"))
    assert table_row(graded)["sep_to"] == "first_correct" and table_row(graded)["L_eff"] == 2


def test_an_option_named_after_a_boxed_value_or_written_otherwise_is_that_option():
    """gpt-oss-120b on ReasoningFlow's GPQA boxes its value, then names the option ("\\boxed{6.3\\times10^{-7}\\ M}
    which corresponds to answer **A**."), or boxes the option's value written otherwise ("2.08 \\times 10^{-6} m"
    for "2.08*1e-6 m"), labels it with a dash ("C – triplet of triplets") or names it inside the box
    ("(choice B)"): each was judged against the gold letter and found wrong, 38 of its 198 traces."""
    question = ("Which value?\nA. 6.3*1e-7 M\nB. 2.08*1e-6 m\nC. triplet of triplets\nD. 2 peaks in standard HPLC and "
                "3 peaks in chiral HPLC")

    def acc(*texts, gold):
        rec = graph_record(list(texts), chain(len(texts)), types=" ".join(["CON"] * len(texts)), gold_answer=gold,
                           question=question)
        return redundancy_row(rec)[0]["Acc"]

    assert acc("Compute it.", "\\[\\boxed{6.3\\times10^{-7}\\ \\text{M}}\\]", "which corresponds to answer **A**.", gold="A") == 1
    assert acc("Compute it.", "\\[\\boxed{6.3\\times10^{-7}\\ \\text{M}}\\]", "which corresponds to answer **A**.", gold="B") == 0
    assert acc("Compute it.", "The answer is \\boxed{2.08 \\times 10^{-6} \\text{ m}}.", gold="B") == 1
    assert acc("Compute it.", "**Answer: C – triplet of triplets**", gold="C") == 1
    assert acc("Compute it.", "\\boxed{p = 1.4\\times10^{-28} \\qquad\\text{(choice B)}}", gold="B") == 1
    # a bare number is no option whose text merely holds it, and prose matches an option only as its text
    assert acc("Compute it.", "So the answer is 2.", gold="D") == 0


def test_a_candidate_stating_an_options_text_is_that_option():
    """SAT (Schoenfeld's episodes): the bold 'all fourth-grade students at the school' was judged against
    the gold letter 'B' and found wrong, turning a trace that never changed its answer into DR and EB."""
    question = "Which population?\nChoices:\nA) The 40 students who were surveyed\nB) All fourth-grade students at the school"
    rec = graph_record(["We compare the two.", "So the answer is all fourth-grade students at the school."], chain(2),
                       types="RSN CON", gold_answer="B", question=question)
    row, extra = redundancy_row(rec)
    assert row["Acc"] == 1 and extra["candidates"][0]["reason"] == "states option B's text, the gold option"
    wrong = graph_record(["So the answer is the 40 students who were surveyed."], [], types="CON", gold_answer="B",
                         question=question)
    assert redundancy_row(wrong)[0]["Acc"] == 0
    # only letters A, B, C ... count as options, and only a candidate equal to one option's text
    roman = "Which must be true?\nI. x > 0\nII. y > 0\n(A) I only (B) II only (C) I and II"
    for text, acc in (("So the answer is II only.", 0), ("So the answer is I only.", 1)):
        assert redundancy_row(graph_record([text], [], types="CON", gold_answer="A", question=roman))[0]["Acc"] == acc
    vague = graph_record(["So the answer is: it does not increase."], [], types="CON", gold_answer="A",
                         question="Effect?\nA) increase\nB) no change\nC) decrease")
    assert redundancy_row(vague)[0]["Acc"] == 0
    # Schoenfeld's SAT traces: a boxed or closing number states the option's value ("\boxed{5.4\%}" against
    # 'D) 5.4\%'), and "C)38" is option C: each was judged wrong, with DR/EB flips in traces that never
    # changed their answer
    sat = "By what percent?\nChoices:\nA) 4.1\\%\nB) 5.1\\%\nC) 38\nD) 5.4\\%"
    for text, gold, acc in (("The answer is \\boxed{5.4\\%}.", "D", 1), ("The answer is \\boxed{5.1\\%}.", "D", 0),
                            ("Therefore, the correct answer should be C)38.", "C", 1),
                            ("Therefore, the correct answer should be C)38.", "D", 0)):
        row, extra = redundancy_row(graph_record([text], [], types="CON", gold_answer=gold, question=sat))
        assert row["Acc"] == acc, (text, gold, extra["candidates"])
    flips = graph_record(["So 5.4%, option D.", "Check: 4.12 / 75.74 = 0.054.", "The answer is \\boxed{D}."],
                         chain(3), types="CON RSN CON", gold_answer="D", question=sat)
    row, extra = redundancy_row(flips)
    assert all(c["correct"] for c in extra["candidates"]) and row["DR"] == row["EB"] == row["EE"] == 0


def test_correctness_label_without_gold():
    rec = graph_record(["So the answer is 5.", "No: so the answer is 6.", "Final answer: 6"], chain(3),
                       types="CON CON CON", correct=True)
    row, extra = redundancy_row(rec)
    assert [c["correct"] for c in extra["candidates"]] == [False, True, True]
    assert row["Acc"] == 1 and (row["EB"], row["SV"]) == (1, 1)
    assert extra["sep"] == [0, 1]
    row, extra = redundancy_row({**rec, "correct": False})
    assert [c["correct"] for c in extra["candidates"]] == [None, False, False]
    assert row["Acc"] == 0 and row["EE"] == 1


def test_gold_without_any_candidate_is_incorrect():
    row, extra = redundancy_row(graph_record(["Just musing.", "More musing."], chain(2), gold_answer="4"))
    assert row["Acc"] == 0 and extra["final_answer"] is None


def test_a_trace_cut_short_after_a_conclusion_has_no_final_answer():
    """Its conclusion's number is no final answer; with a gold answer it is wrong for want of one, and
    with a grade of its own the grade stands (it raised AttributeError on the missing final answer)."""
    texts = ["Let x be the width.", "So x = 5.", "Now the area of the other part."]
    row, extra = redundancy_row(graph_record(texts, chain(3), types="RSN CON RSN", gold_answer="12"))
    assert extra["final_answer"] is None and row["Acc"] == 0
    row, extra = redundancy_row(graph_record(texts, chain(3), types="RSN CON RSN", correct=True))
    assert extra["final_answer"] is None and row["Acc"] == 1
    # the grade speaks for no candidate then: none is "wrong, differing from a final answer graded correct"
    # (a review: a ProcessBench trace graded correct showed an error-to-error transition)
    assert [(c["correct"], c["reason"]) for c in extra["candidates"]] == [
        (None, "no final answer found for the record's grade to speak for")]
    assert row["EE"] == 0


def test_a_reasoning_cut_off_before_answering_has_no_final_answer():
    """ReasoningFlow's QwQ-32B gpqa-diamond_116 stops mid-thought at its token limit (no closing tag, no
    answer): its hedge "I think the correct answer is option D ... if I made a mistake" had been its final
    answer, graded correct. Cut off, it answered nothing; the hedge is still a candidate, and correct."""
    texts = ["The compound has one stereocentre.", "I think the correct answer is option D.",
             "But if I made a mistake, the molecule has a plane of symmetry"]
    cut = graph_record(texts, chain(3), types="RSN CON RSN", gold_answer="D", provenance={"truncated": True})
    row, extra = redundancy_row(cut)
    assert extra["final_answer"] is None and row["Acc"] == 0
    assert [(c["value"], c["correct"]) for c in extra["candidates"]] == [("D", True)]
    whole = graph_record(texts[:2], chain(2), types="RSN CON", gold_answer="D")
    assert redundancy_row(whole)[1]["final_answer"]["value"] == "D" and redundancy_row(whole)[0]["Acc"] == 1
    # cut off in its answer section (the API's token limit after the reasoning ended) it still answers
    answered = {**cut, "units": [{**u, "section": "answer" if u["id"] == 1 else u["section"]} for u in cut["units"][:2]]}
    assert redundancy_row(answered)[1]["final_answer"]["value"] == "D"


def test_unc_counts_candidate_units():
    rec = graph_record(["The answer is 1.", "The answer is 2.", "The answer is 3."], chain(3), gold_answer="3")
    assert redundancy_row(rec)[0]["Unc"] == 1
    assert redundancy_row({**rec, "units": rec["units"][:2], "edges": rec["edges"][:1]})[0]["Unc"] == 0


def test_code_candidate_runs_its_tests_only_when_allowed():
    from thinkprobe.redundancy import NOT_ALLOWED, RedundancyParams, isolation_problem

    code = "```python\ndef double(x):\n    return 2 * x\n```"
    rec = graph_record(["I will write it.", code], chain(2), tests=["assert double(4) == 8"], correct=True)
    row, extra = redundancy_row(rec)  # by default no code runs: ungraded, the label set aside as with tests
    assert row["Acc"] is None and extra["candidates"][0]["reason"] == NOT_ALLOWED
    problem = isolation_problem()
    if problem:
        pytest.skip(f"this machine cannot isolate model-written code: {problem}")
    allowed = RedundancyParams(allow_code_execution=True)
    row, extra = redundancy_row(rec, allowed)
    assert row["Acc"] == 1 and extra["candidates"][0]["kind"] == "code"
    row, extra = redundancy_row({**rec, "tests": ["assert double(4) == 9"]}, allowed)
    assert row["Acc"] == 0 and "failed" in extra["candidates"][0]["reason"]


def test_isolated_units_need_both_conditions():
    units = [{"id": 0, "text": "The train travels 150 km at 60 km/h."},
             {"id": 1, "text": "Bananas are botanically berries, curiously enough."},
             {"id": 2, "text": "The train time is 150 / 60 hours."}]
    q = "How long does the train take?"
    assert isolated_units(units, chain(3), q) == [1]
    assert isolated_units(units, chain(3) + [(2, 1, "critique", "negate")], q) == []  # linked beyond the backbone
    assert isolated_units(units, [], None) == [1]


def test_thresholds_come_from_the_config(tmp_path):
    from thinkprobe.config import Config
    from thinkprobe.redundancy import RedundancyParams

    assert RedundancyParams.from_config(Config.load()) == RedundancyParams()  # the defaults are the file's
    strict = RedundancyParams.from_config(Config.load(overrides={"redundancy": {"iso_overlap": 0.9}}))
    assert strict.iso_overlap == 0.9 and strict.code_timeout_s == RedundancyParams().code_timeout_s
    units = ["The train travels 150 km at 60 km/h.", "The train time is 150 / 60 hours, about 2.5 hours."]
    rec = graph_record(units, chain(2), question="How long does the train take?")
    assert redundancy_row(rec)[0]["Iso"] == 0 and redundancy_row(rec, strict)[0]["Iso"] > 0
    # write_redundancy takes the run's own thresholds from its run.json
    (tmp_path / "graphs.jsonl").write_text(json.dumps(rec) + "\n")
    (tmp_path / "run.json").write_text(json.dumps({"config": {"redundancy": {"iso_overlap": 0.9}}}))
    write_redundancy(tmp_path)
    with open(tmp_path / "redundancy.csv", newline="") as f:
        assert int(next(csv.DictReader(f))["Iso"]) > 0


def test_unit_ids_are_renumbered():
    rec = graph_record(["a.", "So the answer is 2."], [], types="RSN CON", gold_answer="2")
    rec["units"][0]["id"], rec["units"][1]["id"] = 10, 20
    rec["edges"] = [{"src": 10, "dst": 20, "type": "inference", "polarity": None}]
    row, extra = redundancy_row(rec)
    assert extra["sep"] == [0, 1] and row["Acc"] == 1


# ----------------------------------------------------------------------------- files


def test_write_redundancy(tmp_path: Path):
    records = [
        graph_record(["Setup.", "So the answer is 6."], chain(2), types="FAC CON", trace_id="a", model="m1", gold_answer="6"),
        graph_record(["Setup.", "So the answer is 5."], chain(2), types="FAC CON", trace_id="b", model="m1", gold_answer="6"),
        graph_record(["Setup.", "So the answer is 5."], chain(2), types="FAC CON", trace_id="c", model="m1"),
        graph_record(["Only words here."], [], trace_id="d", model="m0"),
    ]
    records[0] = annotate_record(records[0])
    with open(tmp_path / "graphs.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    result = write_redundancy(tmp_path)
    assert result["traces"] == 4
    with open(tmp_path / "redundancy.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == REDUNDANCY_TABLE.columns == (*COLUMNS, "level", "sep_to")
    by_id = {r[0]: dict(zip(REDUNDANCY_TABLE.columns, r)) for r in rows[1:]}
    assert (by_id["a"]["Acc"], by_id["b"]["Acc"], by_id["c"]["Acc"]) == ("1", "0", "")
    assert by_id["c"]["DR"] == "" and by_id["a"]["R"] == "0"
    with open(tmp_path / "model_redundancy.csv", newline="") as f:
        models = list(csv.reader(f))
    assert tuple(models[0]) == MODEL_COLUMNS
    m = {r[0]: dict(zip(MODEL_COLUMNS, r)) for r in models[1:]}
    assert m["m1"]["n"] == "3" and m["m1"]["Acc"] == "0.5"  # the trace without gold is left out
    assert m["m1"]["n_graded"] == "2" and m["m0"]["n_graded"] == "0"  # what Acc is the mean of
    assert m["m0"]["Acc"] == "" and m["m0"]["|V|"] == "1"


def test_write_redundancy_on_an_empty_run(tmp_path: Path):
    (tmp_path / "graphs.jsonl").write_text("")
    write_redundancy(tmp_path)
    assert (tmp_path / "redundancy.csv").read_text().strip().split(",") == [*COLUMNS, "level", "sep_to"]
    assert (tmp_path / "model_redundancy.csv").read_text().strip().split(",") == list(MODEL_COLUMNS)


def test_annotate_keeps_the_path():
    rec = graph_record(["Let n be it.", "So n = 5.", "Wait, that's wrong.", "So the answer is 6."],
                       chain(4) + [(2, 1, "critique", "negate")], types="FAC CON CRT CON", gold_answer="6")
    out = annotate_record(rec)
    assert "redundancy" not in rec
    red = out["redundancy"]
    assert red["sep"] == [0, 3] and red["sep_path"] == [0, 3] and red["final_correct"] is True
    assert set(red["metrics"]) == set(METRICS)
    json.dumps(out)  # serialisable as a graphs.jsonl line


# ----------------------------------------------------------------------------- real data

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\\$*])|\n+")
_CONCLUSION = re.compile(r"^\W*(?:therefore|thus|hence|so|in conclusion|final answer)\b|\\boxed|answer", re.IGNORECASE)
MIP_MODELS = {"deepseekR1": "DeepSeek-R1", "DSQ": "R1-Distill-Qwen-32B", "QwQ": "QwQ-32B", "s1.1": "s1.1-32B"}


def cheap_graph(trace_id: str, model: str, answer_text: str, gold: str) -> dict:
    """A graph record without the encoder: the answer text split into sentences and lines, a chain
    of inference edges, CON for sentences with a conclusion cue. The verdict depends only on
    answer extraction, so linking does not matter here."""
    pieces = [p.strip() for p in _SENTENCE.split(answer_text) if p and p.strip()]
    types = " ".join("CON" if _CONCLUSION.search(p) else "RSN" for p in pieces)
    rec = graph_record(pieces or [""], chain(len(pieces)), types=types or "RSN", trace_id=trace_id, model=model,
                       gold_answer=gold)
    for u in rec["units"]:
        u["section"] = "answer"
    return rec


def _mip_answer(model_dir: str, condition: str, item: dict) -> str:
    if model_dir == "deepseekR1":
        text = item["deepseek-reasoner (question)" if condition == "normal" else "deepseek-reasoner (insufficient_question)"]
    else:
        text = item["model_answer"]
    if "</think>" in text:
        return text.rsplit("</think>", 1)[1]
    marks = list(re.finditer(r"\nanswer\n", text))  # s1.1: "think ... answer ..."
    return text[marks[-1].end():] if marks else text[-3000:]


@pytest.mark.realdata
def test_final_answer_verdict_agrees_with_dataset_labels(shared_data: Path):
    root = shared_data / "mip_overthinking" / "response" / "math"
    if not root.is_dir():
        pytest.skip(f"MiP-Overthinking responses not found under {root}")
    rng = random.Random(7)
    records, labels = [], []
    for condition in ("normal", "MiP"):
        for model_dir, model in MIP_MODELS.items():
            path = root / condition / model_dir / "response.json.gz"
            if not path.exists():
                continue
            with gzip.open(path, "rt", encoding="utf-8") as f:
                items = [x for x in json.load(f) if x.get("eval_result") in (1, 2)]
            for k, item in enumerate(rng.sample(items, min(7, len(items)))):
                records.append(cheap_graph(f"{condition}/{model_dir}/{k}", model, _mip_answer(model_dir, condition, item),
                                           str(item["answer"])))
                labels.append(item["eval_result"] == 1)
    if len(records) < 20:
        pytest.skip("too few labelled MiP-Overthinking records")
    assert len(records) <= 60
    verdicts = []
    for rec in records:
        row, extra = redundancy_row(rec)
        assert row["Acc"] in (0, 1) and 0 <= row["R"] <= 1
        verdicts.append(extra["final_correct"])
    agreement = sum(v == lab for v, lab in zip(verdicts, labels)) / len(labels)
    assert any(labels) and not all(labels), "the sample should hold both correct and incorrect answers"
    assert agreement >= 0.85, f"final-answer verdict agrees with the dataset label on only {agreement:.0%}"


def test_repetition_chains_merge_onto_the_earliest_unit():
    # 4 restates 2, which restates 1; 3 restates 4 as well: all collapse onto 1.
    edges = chain(6) + [(2, 1, "repetition"), (4, 2, "repetition"), (4, 3, "repetition")]
    sep = shortest_effective_path(6, edges, target=5)
    assert sep.path == (0, 1, 5) and sep.units == (0, 1, 5)
    # the target is never merged into an earlier unit
    sep = shortest_effective_path(4, chain(4) + [(3, 2, "repetition"), (3, 1, "repetition")], target=2)
    assert sep.target == 2 and sep.units == (0, 1, 2)


def test_an_answer_without_a_forward_parent_still_has_its_path():
    """The default parser leaves a unit that synthesises, critiques or repeats without a forward parent
    (issue 40); the SEP must not then start at the answer itself (L_eff 1, R near 1: 18 of 42 Thought
    Anchors traces did). A synthesising answer rests on what it combines, a repeating or checking one
    hangs on its source; a unit that builds on the question alone still starts at the root."""
    from thinkprobe.redundancy import shortest_effective_path

    chain = [(k, k + 1, "inference") for k in range(5)]  # 0 -> ... -> 5, then 6, 7 and 8 with no forward parent
    synth = shortest_effective_path(9, chain + [(6, 5, "synthesis"), (6, 2, "synthesis")], target=6)
    assert synth.path == (0, 1, 2, 6) and synth.units == tuple(range(7))  # every synthesised result is a premise
    assert shortest_effective_path(9, chain + [(7, 5, "repetition")], target=7).path == (0, 1, 2, 3, 4, 5, 7)
    checked = shortest_effective_path(9, chain + [(8, 5, "critique", "affirm")], target=8)
    assert checked.path == (0, 1, 2, 3, 4, 5, 8) and 8 in checked.units
    assert shortest_effective_path(9, chain, target=8).path == (8,)  # nothing to hang on: the root
