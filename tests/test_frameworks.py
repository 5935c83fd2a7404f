"""Evaluation frameworks' logs read with no flag (inspect_ai .json / .eval, lighteval details in
three layouts, OpenAI Batch output, CSV / TSV), and the silent behaviours that used to mislead:
null reasoning falling back to the answer, untagged text unmarked, a named reasoning field dropping
the answer, misspelt field options ignored, detection stopping at a wrong-typed field, reused
output folders mixing runs, a progress bar that jumped per chunk, peek showing one file of a
folder, SimpleQA's "not attempted" counted wrong, and trace ids that do not join across models.

The files under tests/data/frameworks were written with inspect_ai's and lighteval's own classes
(scripts/fixtures/), the Batch and CSV files by their documented schemas.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import thinkprobe
from conftest import REPO
from thinkprobe.cli import main
from thinkprobe.io import FieldMap, detect, iter_traces, peek
from thinkprobe.io.check import check_fields
from thinkprobe.progress import Progress, select
from thinkprobe.records import InputError, Trace

FRAMEWORKS = REPO / "tests" / "data" / "frameworks"
DETAILS = FRAMEWORKS / "details"
FAST = dict(device="cpu", progress=False, report=False, linker="cue")


def traces_of(path) -> tuple[list[Trace], list[InputError]]:
    items = list(iter_traces(path))
    return [t for t in items if isinstance(t, Trace)], [e for e in items if isinstance(e, InputError)]


def one(record: dict, fields: FieldMap = FieldMap()) -> Trace:
    return detect(record, fields, "mem.jsonl", "line 1")


def clean(trace: Trace) -> bool:
    """No escaped newline, list bracket or quote of a Python repr in the reasoning or the answer."""
    text = "".join(s.content for s in trace.sections)
    return "\\n" not in text and not text.startswith(("[", "['")) and not text.endswith(("]", "']"))


# ----------------------------------------------------------------------------- 1. readers


@pytest.mark.parametrize("name", ["inspect_arith.json", "inspect_arith.eval"])
def test_inspect_logs_one_trace_per_sample_and_epoch(name):
    traces, errors = traces_of(FRAMEWORKS / name)
    assert [t.trace_id for t in traces] == ["q1:e1", "q2:e1", "q1:e2", "q2:e2"]
    assert {t.model for t in traces} == {"openrouter/deepseek/deepseek-r1"} and {t.domain for t in traces} == {"arith_check"}
    assert [t.provenance["source_id"] for t in traces] == ["q1", "q2", "q1", "q2"]
    assert all(t.reasoning.field.endswith(".reasoning") and t.answer is not None and clean(t) for t in traces)
    assert [t.correct for t in traces] == [True, True, True, False]  # scorer values C, C, C, I
    assert {t.provenance["correct_from"] for t in traces} == {"scores.match"}  # which scorer decided
    assert traces[0].gold_answer == "51" and traces[0].question == "What is 17 * 3?"
    assert traces[3].answer.content == "Yes" and "seems prime" in traces[3].reasoning.content
    # the redacted sample is skipped, with that reason
    assert len(errors) == 1 and errors[0].record == 2 and "redacted" in errors[0].reason


def test_inspect_attachments_are_resolved(tmp_path):
    log = json.loads((FRAMEWORKS / "inspect_arith.json").read_text())
    sample = log["samples"][0]
    text = sample["output"]["choices"][0]["message"]["content"][0]["reasoning"]
    sample["output"]["choices"][0]["message"]["content"][0]["reasoning"] = "attachment://abc123"
    sample["attachments"] = {"abc123": text}
    (tmp_path / "log.json").write_text(json.dumps(log))
    traces, _ = traces_of(tmp_path / "log.json")
    assert traces[0].reasoning.content == text.strip()


def test_lighteval_details_current_layout_with_reasonings_keeps_the_answer():
    traces, errors = traces_of(DETAILS / "deepseek" / "deepseek-reasoner")
    assert not errors and [t.trace_id for t in traces] == ["0", "1", "2"]
    assert {t.model for t in traces} == {"deepseek/deepseek-reasoner"} and {t.domain for t in traces} == {"lighteval|gsm_mini|0"}
    assert all(t.reasoning.field == "model_response.reasonings[0]" and t.answer.field == "model_response.text[0]"
               for t in traces)
    assert traces[2].answer.content == "The answer is 5." and [t.correct for t in traces] == [True, True, False]
    assert [t.gold_answer for t in traces] == ["144", "9", "4"]


def test_lighteval_pass_at_k_is_one_trace_per_generation():
    traces, errors = traces_of(DETAILS / "Qwen")
    assert not errors and [t.trace_id for t in traces] == ["0:g0", "0:g1", "1:g0", "1:g1"]
    for t in traces:
        assert t.provenance["tag"] == "<think>" and clean(t)
        units = t.reasoning.content
        assert "<think>" not in units and "</think>" not in units and "Answer:" not in units
        assert t.answer.content.startswith("Answer:")
        assert t.correct is None  # a pass@k metric grades all generations, not one


@pytest.mark.parametrize("model", ["deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "open-r1/OpenR1-Qwen-7B"])
def test_lighteval_flat_layouts_before_0_11_stringified_or_not(model):
    traces, errors = traces_of(DETAILS / model)
    assert not errors and len(traces) in (2, 3) and {t.model for t in traces} == {model}
    for t in traces:
        assert clean(t) and '"144"' in traces[0].reasoning.content  # the repr's quotes are decoded, not kept
        assert t.answer.content.startswith("The answer is") and t.correct is True


def test_openai_batch_output_keeps_the_answer_and_names_the_failed_request():
    traces, errors = traces_of(FRAMEWORKS / "openai_batch_output.jsonl")
    assert [(t.trace_id, t.model) for t in traces] == [("gsm-0", "deepseek-reasoner"), ("gsm-1", "o4-mini-2025-04-16")]
    assert [t.answer.content for t in traces] == ["He has 7 apples.", "40 km/h"]
    assert len(errors) == 1 and "batch request failed" in errors[0].reason


@pytest.mark.parametrize("name", ["traces.csv", "traces.tsv"])
def test_csv_and_tsv_with_multiline_cells(name):
    traces, errors = traces_of(FRAMEWORKS / name)
    assert not errors and [t.model for t in traces] == ["deepseek-r1", "llama-3-8b", "deepseek-r1"]
    assert traces[0].question == "What is 17 * 3?" and "\n" in traces[0].reasoning.content
    assert '"91 = 7 * 13"' in traces[2].reasoning.content  # a doubled quote inside a quoted cell
    assert [t.provenance["untagged"] for t in traces] == [False, True, False]


def test_every_layout_profiled_without_flags_end_to_end(tmp_path):
    run = thinkprobe.profile(str(FRAMEWORKS), tmp_path / "out", **FAST)
    assert run.summary["traces"] == 8 + 12 + 2 + 6 and run.summary["errors"] == 3
    assert run.summary["untagged"] == 2 and json.loads((run.folder / "run.json").read_text())["counts"]["untagged"] == 2
    by_model = json.loads((run.folder / "run.json").read_text())["untagged"]["by_model"]
    assert by_model == run.summary["untagged_by_model"] and sum(by_model.values()) == 2
    from thinkprobe.cli import format_summary

    line = next(x for x in format_summary(run.summary).splitlines() if "traces are untagged text" in x)
    traces = {row["model"]: row["traces"] for row in run.summary["coverage"]["by_model"]}
    assert line.endswith("by model: " + ", ".join(f"{m} {n} of {traces[m]}" for m, n in
                                                  sorted(by_model.items(), key=lambda kv: (-kv[1], kv[0]))))
    ind = run.indicators
    assert "source_id" in ind.columns and "source_id" in run.profiles.columns and "source_id" in run.redundancy.columns
    assert "unknown" not in set(ind[ind["trace_id"].str.contains(":e")]["model"])
    # the same question answered by several models joins on source_id, whatever the trace ids became
    q1 = ind[ind["source_id"] == "q1"]
    assert len(q1) == 4 and len(set(q1["trace_id"])) == 4


# ----------------------------------------------------------------------------- 2. honest detection


def test_null_reasoning_content_never_falls_back_to_the_answer():
    record = {"choices": [{"message": {"role": "assistant", "reasoning_content": None, "content": "The answer is 4."}}]}
    with pytest.raises(InputError) as err:
        one(record)
    assert err.value.field == "choices[0].message.reasoning_content" and "empty reasoning" in err.value.reason
    with pytest.raises(InputError):
        one({"reasoning": None, "response": "The answer is 4."})
    # tags elsewhere still count as reasoning
    assert one({"reasoning": None, "response": "<think>2 + 2 = 4.</think>4"}).reasoning.content == "2 + 2 = 4."


def test_untagged_text_is_marked_and_can_be_skipped():
    plain = {"response": "2 + 2 is 4. So the answer is 4."}
    assert one(plain).provenance["untagged"] is True
    assert one({"response": "<think>2 + 2 is 4.</think>4"}).provenance["untagged"] is False
    assert one({"reasoning_content": "2 + 2 is 4.", "content": "4"}).provenance["untagged"] is False
    with pytest.raises(InputError) as err:
        one(plain, FieldMap(untagged="skip"))
    assert "untagged" in err.value.reason


def test_encrypted_only_reasoning_is_skipped_with_that_reason():
    responses = {"output": [{"type": "reasoning", "summary": [], "encrypted_content": "gAAAA..."},
                            {"type": "message", "content": [{"type": "output_text", "text": "4"}]}]}
    anthropic = {"content": [{"type": "redacted_thinking", "data": "EmwK..."}, {"type": "text", "text": "4"}]}
    for record in (responses, anthropic):
        with pytest.raises(InputError) as err:
            one(record)
        assert "encrypted" in err.value.reason


def test_detection_tries_every_candidate_past_a_wrong_typed_one():
    trace = one({"reasoning": {"effort": "high"}, "output": {"tokens": 12},
                 "response": "<think>Half of 10 is 5.</think>5"})
    assert trace.reasoning.field == "response" and trace.answer.content == "5"


def test_a_named_reasoning_field_keeps_the_answer_beside_it_and_answer_field_exists():
    record = {"choices": [{"message": {"reasoning": "3 * 3 = 9.", "content": "9"}}], "extra": {"final": "nine"}}
    trace = one(record, FieldMap(reasoning_field="choices[0].message.reasoning"))
    assert trace.answer.field == "choices[0].message.content" and trace.answer.content == "9"
    named = one(record, FieldMap(reasoning_field="choices[0].message.reasoning", answer_field="extra.final"))
    assert named.answer.field == "extra.final" and named.answer.content == "nine"
    asked = one({"reasoning": "x", "meta": {"q": "Why?"}}, FieldMap(question_field="meta.q"))
    assert asked.question == "Why?"


def test_a_misspelt_field_option_is_a_warning_naming_the_keys_and_an_error_with_strict(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "a", "model_name": "m", "response": "<think>x y z.</think>z"}) + "\n")
    warnings = check_fields([str(path)], FieldMap(model_field="modle_name", id_field="id"))
    assert len(warnings) == 1 and warnings[0].option == "--model-field" and "model_name" in str(warnings[0])
    res = CliRunner().invoke(main, ["profile", str(path), "-o", str(tmp_path / "out"), "--model-field", "modle_name",
                                    "--strict", "--no-progress"])
    assert res.exit_code == 2 and "--model-field 'modle_name' matched none" in res.output
    res = CliRunner().invoke(main, ["peek", str(path), "--model-field", "modle_name"])  # peek warns as profile does
    assert res.exit_code == 0 and "warning: --model-field 'modle_name' matched none" in res.stderr


def test_a_path_pattern_that_misses_files_of_a_folder_is_a_warning_naming_them(tmp_path):
    """Venhoff et al.'s folder: the models' files beside the question list (messages.json), which the
    pattern that names the models does not match: read, its prompts became traces of a model 'unknown' in the
    norms and the statistics. Left out, and named."""
    folder = tmp_path / "venhoff"
    folder.mkdir()
    traces = [{"response": f"<think>Add them: 2 + {k} = {2 + k}. So it is {2 + k}.</think>{2 + k}"} for k in (2, 3)]
    for model in ("claude", "gpt"):
        (folder / f"reasoning_comparison_{model}.json").write_text(json.dumps(traces), encoding="utf-8")
    (folder / "messages.json").write_text(json.dumps([{"index": 0, "content": "What is 2 + 2?"}]), encoding="utf-8")
    pattern = "reasoning_comparison_{model}.json"
    warnings = check_fields([str(folder)], FieldMap(path_pattern=pattern))
    assert [(w.option, w.checked, w.unmatched) for w in warnings] == [("--path-pattern", 3, ("messages.json",))]
    assert "matched 2 of the 3 data files" in str(warnings[0]) and "the others are left out: messages.json" in str(warnings[0])
    assert check_fields([str(folder / "reasoning_comparison_gpt.json")], FieldMap(path_pattern=pattern)) == []
    (single,) = check_fields([str(folder / "messages.json")], FieldMap(path_pattern=pattern))  # named: read
    assert str(single).endswith("does not match " + str(folder / "messages.json") + ": it is read, its model from "
                                "its own fields, else unknown")
    # a constant gives what the pattern would have: nothing to warn of; the pattern's other names are still missed
    assert check_fields([str(folder / "messages.json") + "::model=questions"], FieldMap(path_pattern=pattern)) == []
    both = FieldMap(path_pattern="{model}_{domain}.json")
    (single,) = check_fields([str(folder / "messages.json") + "::domain=d"], both)
    assert str(single).endswith(": it is read, its model from its own fields, else unknown")
    (single,) = check_fields([str(folder / "messages.json")], FieldMap(path_pattern="{model}_{domain}_{group}.json"))
    assert str(single).endswith(": it is read, its model, domain and group from its own fields, else unknown")
    res = CliRunner().invoke(main, ["peek", str(folder), "--path-pattern", pattern])
    assert res.exit_code == 0 and "warning: --path-pattern" in res.stderr and "messages.json" in res.stderr
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["profile", str(folder), "-o", str(out), "--path-pattern", pattern, "--linker", "cue",
                                    "--types", "cue", "--no-cache", "--no-report", "--no-progress", "--device", "cpu"])
    assert res.exit_code == 0 and "warning: --path-pattern" in res.output, res.output
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["field_warnings"] == [{"option": "--path-pattern", "field": pattern, "input": str(folder), "checked": 3,
                                      "unmatched": ["messages.json"]}]
    assert run["counts"]["traces"] == 4 and run["counts"]["unknown_model"] == 0
    assert [Path(f["file"]).name for f in run["coverage"]["by_file"]] == ["reasoning_comparison_claude.json",
                                                                          "reasoning_comparison_gpt.json"]


def test_grades_not_attempted_is_not_graded():
    assert one({"reasoning": "x", "grading": "C"}).correct is None  # SimpleQA: C = not attempted
    assert one({"reasoning": "x", "grading": "A"}).correct is True
    assert one({"reasoning": "x", "grading": "B"}).correct is False
    assert one({"reasoning": "x", "correct": "not_attempted"}).correct is None


# ----------------------------------------------------------------------------- 3. output folders


def test_a_rerun_of_the_same_file_spelled_otherwise_is_a_rerun(tmp_path, monkeypatch):
    """The same input given once relative and once absolute was 'a run of other inputs'."""
    data = tmp_path / "a.jsonl"
    data.write_text(json.dumps({"id": "a", "model": "m", "response": "<think>One. Two.</think>2"}) + "\n")
    monkeypatch.chdir(tmp_path)
    thinkprobe.profile("a.jsonl", tmp_path / "out", **FAST)
    (tmp_path / "out" / "mine.txt").write_text("kept")
    run = thinkprobe.profile(str(data), tmp_path / "out", **FAST)
    assert list(run.indicators["trace_id"]) == ["a"] and (tmp_path / "out" / "mine.txt").read_text() == "kept"
    other = tmp_path / "b.jsonl"
    other.write_text(data.read_text())
    with pytest.raises(thinkprobe.api.OutputFolderError, match="a run of other inputs") as refused:
        thinkprobe.profile(str(other), tmp_path / "out", **FAST)
    assert "resume" not in str(refused.value)  # a review: --resume was offered, which continues the same inputs only


def test_output_folder_never_mixes_two_runs(tmp_path):
    data = tmp_path / "a.jsonl"
    data.write_text(json.dumps({"id": "a", "model": "m", "response": "<think>One. Two.</think>2"}) + "\n")
    other = tmp_path / "b.jsonl"
    other.write_text(json.dumps({"id": "b", "model": "m", "response": "<think>Three. Four.</think>4"}) + "\n")
    out = tmp_path / "out"
    thinkprobe.profile(str(data), out, **FAST)
    (out / "notes_on_run.txt").write_text("mine")
    (out / "indicators.csv").write_text("stale")
    thinkprobe.profile(str(data), out, **FAST)  # the same inputs: the run's files replaced, the user's kept
    assert (out / "notes_on_run.txt").read_text() == "mine" and (out / "indicators.csv").read_text() != "stale"
    with pytest.raises(thinkprobe.api.OutputFolderError, match="--overwrite"):
        thinkprobe.profile(str(other), out, **FAST)
    run = thinkprobe.profile(str(other), out, overwrite=True, **FAST)
    assert list(run.indicators["trace_id"]) == ["b"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    res = CliRunner().invoke(main, ["profile", str(data), "-o", str(foreign), "--no-progress", "--linker", "cue"])
    assert res.exit_code == 2 and "notes.txt" in res.output and (foreign / "notes.txt").exists()
    with pytest.raises(thinkprobe.api.OutputFolderError, match="not a folder"):  # was a raw NotADirectoryError
        thinkprobe.profile(str(data), data, **FAST)
    # records given in Python all read as <memory>: the same records rerun replace their run, other
    # records are another run (they replaced it without a word), as another file is
    mem = tmp_path / "mem"
    first = [{"id": "a", "model": "m", "response": "<think>One. Two.</think>2"}]
    thinkprobe.profile(first, mem, **FAST)
    thinkprobe.profile(first, mem, **FAST)
    with pytest.raises(thinkprobe.api.OutputFolderError, match="a run of other inputs"):
        thinkprobe.profile([{"id": "b", "model": "m", "response": "<think>Three.</think>3"}], mem, **FAST)
    assert list(thinkprobe.load_run(mem).indicators["trace_id"]) == ["a"]


def test_no_clearing_deletes_an_input_or_a_users_file_in_a_tool_folder(tmp_path):
    """--overwrite of a folder holding the input (or above it) is refused before anything is deleted;
    what it clears it names. A rerun keeps the user's files inside figures/, traces/ and parts/."""
    folder = tmp_path / "M"
    (folder / "data").mkdir(parents=True)
    data = folder / "data" / "a.jsonl"
    data.write_text(json.dumps({"id": "a", "model": "m", "response": "<think>One. Two.</think>2"}) + "\n")
    (folder / "notes.txt").write_text("mine")
    for out in (folder, folder / "data"):
        res = CliRunner().invoke(main, ["profile", str(data), "-o", str(out), "--overwrite", "--no-progress",
                                        "--linker", "cue", "--types", "cue", "--no-cache", "--device", "cpu"])
        assert res.exit_code == 2 and f"--overwrite would delete the input {data}" in res.output, res.output
    assert data.exists() and (folder / "notes.txt").read_text() == "mine"
    # nor a file an option names: a --config kept in the output folder had been deleted, then not found
    kept = tmp_path / "E"
    kept.mkdir()
    (kept / "my.yaml").write_text("limits:\n  max_units: 100000\n")
    res = CliRunner().invoke(main, ["profile", str(data), "-o", str(kept), "--overwrite", "--config", str(kept / "my.yaml"),
                                    "--no-progress", "--linker", "cue", "--types", "cue", "--no-cache", "--device", "cpu"])
    assert res.exit_code == 2 and f"--overwrite would delete {kept / 'my.yaml'} (--config), which lies in it" in res.output
    assert (kept / "my.yaml").exists()
    # a rerun would replace the run's own norms.json, which --norms names: refused, not half-written
    run = tmp_path / "N"
    args = ["profile", str(data), "-o", str(run), "--no-progress", "--linker", "cue", "--types", "cue", "--no-cache",
            "--device", "cpu", "--no-report"]
    assert CliRunner().invoke(main, args).exit_code == 0
    res = CliRunner().invoke(main, args + ["--norms", str(run / "norms.json")])
    assert res.exit_code == 2 and f"{run / 'norms.json'} (--norms) lies among the files a rerun replaces" in res.output
    assert (run / "norms.json").exists() and (run / "indicators.csv").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "old.txt").write_text("x")
    res = CliRunner().invoke(main, ["profile", str(data), "-o", str(other), "--overwrite", "--no-progress",
                                    "--linker", "cue", "--types", "cue", "--no-cache", "--device", "cpu", "--no-report"])
    assert res.exit_code == 0 and "cleared (--overwrite): removed old.txt" in res.stderr
    out = tmp_path / "out"
    args = ["profile", str(data), "-o", str(out), "--no-progress", "--linker", "cue", "--types", "cue", "--no-cache",
            "--device", "cpu"]
    assert CliRunner().invoke(main, args).exit_code == 0
    mine = [out / "figures" / "my_plot.png", out / "traces" / "my_note.md", out / "parts" / "keep.txt"]
    for path in mine:
        path.write_text("mine")
    (out / "figures" / "radar.png").write_text("stale")
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and all(path.read_text() == "mine" for path in mine)
    assert "figures/my_plot.png" in res.stderr and "parts/keep.txt" in res.stderr
    assert not (out / "figures" / "radar.png").exists() or (out / "figures" / "radar.png").read_bytes() != b"stale"


# ----------------------------------------------------------------------------- 4. progress, limit, peek


def test_progress_moves_within_a_chunk_before_any_trace_is_done(capsys):
    progress = Progress(total=64, enabled=True, refresh_s=60)
    try:
        progress.begin_chunk(64)
        progress.stage("split")
        progress.stage("encode")
        progress.expect_units(1000)
        progress.units(500)
        assert 0 < progress.bar.n < 64  # half the units encoded: the bar is inside the chunk
        for _ in range(64):
            progress.traces(1)
        assert progress.bar.n == 64
    finally:
        progress.close()
    err = capsys.readouterr().err
    assert "encoding units" in err and "splitting into sentences" in err  # stage names a reader understands
    assert "tile_type" not in err and "indicators_serialise" not in err


def test_limit_counts_traces_over_all_inputs_in_order(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": f"{name}{k}", "response": f"<think>step {k}.</think>{k}"}) + "\n" for k in range(2)))
    from thinkprobe.io import iter_inputs

    picked = list(select(iter_inputs([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]), limit=3))
    assert [t.trace_id for t in picked] == ["a0", "a1", "b0"]


def test_peek_on_a_folder_shows_every_file():
    rows = peek(str(FRAMEWORKS), n=1)
    files = {Path(r["file"]).name for r in rows}
    assert {"inspect_arith.json", "inspect_arith.eval", "openai_batch_output.jsonl", "traces.csv", "traces.tsv"} <= files
    assert sum(r["file"].endswith(".parquet") for r in rows) == 4


def test_readme_table_covers_every_layout_read():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| where your traces come from"):]
    for layout in ("inspect_ai", "lighteval", "lm-eval", "OpenAI Batch", "chat completions", "Responses API",
                   "Anthropic", "Hugging Face", "CSV or TSV"):
        assert layout in table.split("\n\n")[0], layout
    with open(FRAMEWORKS / "traces.csv", newline="") as f:
        assert next(csv.reader(f)) == ["model", "question", "response"]


def test_unknown_hint_names_the_misspelt_option_instead_of_suggesting_it_again():
    from thinkprobe.cli import format_summary

    summary = {"traces": 2, "out_dir": "out", "resumed": 0, "errors": 0, "model_profiles": [], "untagged": 1,
               "unknown": {"model": 2, "domain": 0},
               "field_warnings": ["--model-field 'modle' matched none of the first 2 records of a.jsonl; their keys: "
                                  "id, model_name, response"]}
    text = format_summary(summary)
    assert "warning: --model-field 'modle' matched none" in text
    assert "the --model-field 'modle' given matched no record" in text and "--model-field FIELD" not in text
    assert "1 traces are untagged text" in text


def test_report_steps_are_shown(tmp_path, capsys):
    from thinkprobe.report.writer import _Steps

    steps = _Steps(3, enabled=True)
    for name in ("statistics", "figure: radar", "per-trace pages"):
        steps(name)
    steps.close()
    err = capsys.readouterr().err
    assert "report: statistics" in err and "report: per-trace pages" in err and "3/3 steps" in err
