"""Tests for thinkprobe.io: formats, reasoning detection, provenance, bad records, peek; real data when present."""
from __future__ import annotations

import gzip
import json
from dataclasses import replace
from itertools import islice
from pathlib import Path

import pytest

from thinkprobe.io import (
    FieldMap, Source, detect, format_peek, iter_inputs, iter_records, iter_traces, parse_source, peek, record_traces,
)
from thinkprobe.records import InputError, Trace


def span(section) -> str:
    return section.text[section.start : section.end]


def write_jsonl(path: Path, records, gz: bool = False) -> Path:
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def write_json(path: Path, value) -> Path:
    data = json.dumps(value).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def one(record: dict, fields: FieldMap = FieldMap()) -> Trace:
    return detect(record, fields, "mem.jsonl", "line 1")


# ----------------------------------------------------------------------------- formats

TWO = [
    {"id": "t1", "model": "m", "reasoning": "First thought."},
    {"id": "t2", "model": "m", "response": "<think>Second thought.</think>Done."},
]


def _jsonl(tmp):
    return write_jsonl(tmp / "a.jsonl", TWO), ["line 1", "line 2"]


def _jsonl_gz(tmp):
    return write_jsonl(tmp / "a.jsonl.gz", TWO, gz=True), ["line 1", "line 2"]


def _ndjson_blank_lines(tmp):
    path = tmp / "a.ndjson"
    path.write_text("\n" + json.dumps(TWO[0]) + "\n\n" + json.dumps(TWO[1]) + "\n")
    return path, ["line 2", "line 4"]


def _json_list(tmp):
    return write_json(tmp / "a.json", TWO), [0, 1]


def _json_records(tmp):
    return write_json(tmp / "a.json.gz", {"meta": 1, "records": TWO}), [0, 1]


def _json_traces_key(tmp):
    return write_json(tmp / "a.json", {"traces": TWO}), [0, 1]


def _json_lines_named_json(tmp):
    return write_jsonl(tmp / "a.json", TWO), ["line 1", "line 2"]


def _parquet(tmp):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp / "a.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": r["id"], "model": r["model"], "reasoning": r.get("reasoning"),
                                          "response": r.get("response")} for r in TWO]), path)
    return path, [0, 1]


def _directory(tmp):
    root = tmp / "dir"
    (root / "sub").mkdir(parents=True)
    write_json(root / "b.json.gz", TWO[1])
    write_json(root / "sub" / "a.json", TWO[0])
    (root / "notes.txt").write_text("not data")
    write_json(root / ".hidden.json", {"reasoning": "hidden"})
    return root, [0, 0]


@pytest.mark.parametrize(
    "make",
    [_jsonl, _jsonl_gz, _ndjson_blank_lines, _json_list, _json_records, _json_traces_key,
     _json_lines_named_json, _parquet],
)
def test_formats_give_the_same_traces(tmp_path, make):
    path, locators = make(tmp_path)
    assert [loc for _, loc, _ in iter_records(path)] == locators
    traces = list(iter_traces(path))
    assert [t.trace_id for t in traces] == ["t1", "t2"]
    assert [span(t.reasoning) for t in traces] == ["First thought.", "Second thought."]
    assert span(traces[1].answer) == "Done."
    assert all(t.source == str(path) for t in traces)


def test_byte_order_marks_of_joined_or_twice_saved_files_are_no_part_of_the_data(tmp_path):
    """Two JSONL files with BOMs joined by `cat`: the second file's BOM opens line 2 (it had made that
    record malformed JSON). A CSV saved twice through a BOM-adding tool: the second BOM had stayed in
    the first column's name (`id` not found)."""
    bom = b"\xef\xbb\xbf"
    lines = [bom + json.dumps({"id": f"t{k}", "reasoning": f"Thought {k}.", "answer": "Done."}).encode() + b"\n"
             for k in (1, 2)]
    (tmp_path / "joined.jsonl").write_bytes(b"".join(lines))
    traces = list(iter_traces(tmp_path / "joined.jsonl"))
    assert [t.trace_id for t in traces] == ["t1", "t2"]
    assert [span(t.reasoning) for t in traces] == ["Thought 1.", "Thought 2."]
    (tmp_path / "twice.csv").write_bytes(bom + bom + b"id,reasoning,answer\nt1,Thought 1.,Done.\n")
    assert [t.trace_id for t in iter_traces(tmp_path / "twice.csv")] == ["t1"]


def test_directory_is_read_recursively_in_sorted_order(tmp_path):
    root, _ = _directory(tmp_path)
    records = list(iter_records(root))
    assert [Path(src).relative_to(root).as_posix() for src, _, _ in records] == ["b.json.gz", "sub/a.json"]
    assert [span(t.reasoning) for t in iter_traces(root)] == ["Second thought.", "First thought."]


def test_generated_ids_use_file_stem_or_path_inside_directory(tmp_path):
    write_jsonl(tmp_path / "run.jsonl.gz", [{"reasoning": "a"}, {"reasoning": "b"}], gz=True)
    assert [t.trace_id for t in iter_traces(tmp_path / "run.jsonl.gz")] == ["run:0", "run:1"]
    root = tmp_path / "d"
    for name in ("p1", "p2"):
        (root / name).mkdir(parents=True)
        write_json(root / name / "base_solution.json", {"reasoning": name})
    traces = list(iter_traces(root))
    assert [t.trace_id for t in traces] == ["p1/base_solution:0", "p2/base_solution:0"]
    assert traces[0].provenance["trace_id_from"] == "file:record"


def test_parquet_is_read_in_batches_and_keeps_nested_fields(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"doc_id": f"d{i}", "raw_text": {"question": "q", "response": f"step {i}"}} for i in range(2500)]
    path = tmp_path / "many.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=700)
    traces = list(iter_traces(path))
    assert len(traces) == 2500
    assert [t.record for t in traces[:3]] == [0, 1, 2] and traces[-1].trace_id == "d2499"
    assert span(traces[1234].reasoning) == "step 1234" and traces[0].question == "q"


def test_missing_path_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        list(iter_records(tmp_path / "nope.jsonl"))


# ----------------------------------------------------------------------------- tags

TAG_CASES = [
    # text, tag, reasoning, answer (None: no answer section), open_tag_missing, truncated
    ("<think>\n  Plan it.\n</think>\n\n42", "<think>", "Plan it.", "42", False, False),
    ("<thinking>Plan it.</thinking>42", "<thinking>", "Plan it.", "42", False, False),
    ("<reasoning>Plan it.</reasoning> 42", "<reasoning>", "Plan it.", "42", False, False),
    ("<think>Plan it.</think>\n<answer>42</answer>", "<think>", "Plan it.", "42", False, False),  # R1-Zero style
    ("<thought>Plan it.</thought>42", "<thought>", "Plan it.", "42", False, False),
    ("<|begin_of_thought|>\nPlan it.\n<|end_of_thought|>\n\n<|begin_of_solution|>\n42\n<|end_of_solution|>",
     "<|begin_of_thought|>", "Plan it.", "42", False, False),
    ("◁think▷Plan it.◁/think▷42", "◁think▷", "Plan it.", "42", False, False),
    ("[THINK]Plan it.[/THINK]42", "[THINK]", "Plan it.", "42", False, False),
    ("<|start|>assistant<|channel|>analysis<|message|>Plan it.<|end|>"
     "<|start|>assistant<|channel|>final<|message|>42<|return|>",
     "<|channel|>analysis<|message|>", "Plan it.", "42", False, False),
    ("<|channel|>analysis<|message|>Plan it.<|end|>", "<|channel|>analysis<|message|>", "Plan it.", None, False, False),
    ("<|channel|>analysis<|message|>Plan it", "<|channel|>analysis<|message|>", "Plan it", None, False, True),
    ("analysisPlan it.assistantfinal42", "analysis", "Plan it.", "42", False, False),
    ("Plan it.\n</think>\n\n42", "<think>", "Plan it.", "42", True, False),  # QwQ: opening tag missing
    ("<think>\nPlan it, then", "<think>", "Plan it, then", None, False, True),  # cut off
    # never closed, but the model ended its turn (Qwen3-8B on tts_knowledge: 72 of 800 records): not cut off
    ("<think>\nPlan it. Answer: 4.<|im_end|>", "<think>", "Plan it. Answer: 4.", None, False, False),
    ("Plan it with no tags.\n", None, "Plan it with no tags.", None, False, False),
    ("<think>a <think>b</think> c</think>42", "<think>", "a <think>b</think> c", "42", False, False),
    ("Q: 2+2?<｜Assistant｜><think>Plan it.</think>42<｜end▁of▁sentence｜>", "<think>", "Plan it.", "42", False, False),
    ("<think>Plan it.</think>  \n", "<think>", "Plan it.", None, False, False),  # empty answer: omitted
    ("<think>Ctrl\x0bchars\x01 kept</think>42", "<think>", "Ctrl\x0bchars\x01 kept", "42", False, False),
]


@pytest.mark.parametrize("text, tag, reasoning, answer, open_missing, truncated", TAG_CASES)
def test_tags(text, tag, reasoning, answer, open_missing, truncated):
    trace = one({"response": text})
    assert span(trace.reasoning) == reasoning
    assert trace.reasoning.text == text and trace.reasoning.field == "response"
    assert (span(trace.answer) if trace.answer else None) == answer
    p = trace.provenance
    assert (p["tag"], p["open_tag_missing"], p["truncated"]) == (tag, open_missing, truncated)
    assert p["answer_from"] == ("response" if answer else None)


# ----------------------------------------------------------------------------- where the reasoning is

FIELD_CASES = [
    # record, reasoning_from, reasoning, answer_from, answer
    ({"reasoning_content": " Plan. ", "content": "42"}, "reasoning_content", "Plan.", "content", "42"),
    ({"reasoning": "Plan.", "response": "<think>Plan.</think>42"}, "reasoning", "Plan.", "response", "42"),
    ({"reasonings": ["Plan.", "Other."], "output": "42"}, "reasonings[0]", "Plan.", "output", "42"),
    ({"thinking": "Plan."}, "thinking", "Plan.", None, None),
    ({"thought": "<think>\nPlan.\n</think>", "response": "42<|im_end|>"}, "thought", "Plan.", "response", "42"),
    ({"thought_summary": "Plan.", "response": "42"}, "thought_summary", "Plan.", "response", "42"),
    ({"full_cot": "Solve: 2+2\n<think>Plan.</think>42"}, "full_cot", "Plan.", "full_cot", "42"),
    ({"thinking_trajectories": ["Plan.", "Again."], "attempt": "42"}, "thinking_trajectories[0]", "Plan.", None, None),
    ({"think_content": "<think>Plan.</think>", "prediction": "42"}, "think_content", "Plan.", "prediction", "42"),
    ({"prediction": "<think>Plan.</think>42"}, "prediction", "Plan.", "prediction", "42"),
    ({"model_answer": "Plan.</think>42"}, "model_answer", "Plan.", "model_answer", "42"),
    ({"generations": ["<think>Plan.</think>42", "other"]}, "generations[0]", "Plan.", "generations[0]", "42"),
    ({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q?"},
                   {"role": "assistant", "content": "<think>Plan.</think>42"}]},
     "messages[2].content", "Plan.", "messages[2].content", "42"),
    ({"conversations": [{"from": "human", "value": "Q?"},
                        {"from": "gpt", "value": "<|begin_of_thought|>Plan.<|end_of_thought|>42"}]},
     "conversations[1].value", "Plan.", "conversations[1].value", "42"),
    ({"messages": [{"role": "user", "content": "Q?"},
                   {"role": "assistant", "content": "42", "reasoning_content": "Plan."}]},
     "messages[1].reasoning_content", "Plan.", "messages[1].content", "42"),
    ({"raw_text": {"question": "Q?", "response": "Plan."}}, "raw_text.response", "Plan.", None, None),
    # an empty dedicated field gives way to tags elsewhere
    ({"reasoning_content": "", "content": "<think>Plan.</think>42"}, "content", "Plan.", "content", "42"),
    # a tagged field beats an earlier tagless one
    ({"output": "42", "messages": [{"role": "assistant", "content": "<think>Plan.</think>42"}]},
     "messages[0].content", "Plan.", "messages[0].content", "42"),
]


@pytest.mark.parametrize("record, reasoning_from, reasoning, answer_from, answer", FIELD_CASES)
def test_reasoning_fields(record, reasoning_from, reasoning, answer_from, answer):
    trace = one(record)
    assert (trace.reasoning.field, span(trace.reasoning)) == (reasoning_from, reasoning)
    assert trace.provenance["reasoning_from"] == reasoning_from
    got = (trace.answer.field, span(trace.answer)) if trace.answer else (None, None)
    assert got == (answer_from, answer)


def test_question_from_first_user_turn():
    record = FIELD_CASES[12][0]
    assert one(record).question == "Q?"


def test_explicit_overrides():
    record = {
        "deepseek-reasoner (question)": "Plan.</think>42",
        "raw_text": {"response": "<think>Other.</think>"},
        "meta": {"llm": "R1"}, "model": "ignored", "cat": "algebra", "qid": 7, "ref": "42",
    }
    fields = FieldMap(reasoning_field="deepseek-reasoner (question)", model_field="meta.llm",
                      domain_field="cat", id_field="qid", gold_field="ref")
    trace = one(record, fields)
    assert span(trace.reasoning) == "Plan." and span(trace.answer) == "42"
    assert (trace.model, trace.domain, trace.trace_id, trace.gold_answer) == ("R1", "algebra", "7", "42")
    p = trace.provenance
    assert (p["model_from"], p["domain_from"], p["trace_id_from"], p["gold_from"]) == ("meta.llm", "cat", "qid", "ref")
    assert span(one(record, FieldMap(reasoning_field="raw_text.response")).reasoning) == "Other."


def test_explicit_override_missing_falls_back_for_metadata_not_for_reasoning():
    record = {"reasoning": "Plan.", "model": "m"}
    assert one(record, FieldMap(model_field="nope")).model == "m"
    with pytest.raises(InputError) as err:
        one(record, FieldMap(reasoning_field="nope"))
    assert err.value.field == "nope"


# ----------------------------------------------------------------------------- metadata

METADATA_CASES = [
    ({"reasoning": "x"}, ("unknown", "default"), ("unknown", "default"), ("mem:0", "file:record")),
    ({"reasoning": "x", "model_name": "M", "task": "T", "doc_id": "D"}, ("M", "model_name"), ("T", "task"), ("D", "doc_id")),
    ({"reasoning": "x", "generator": "G", "subject": "S", "uid": 5}, ("G", "generator"), ("S", "subject"), ("5", "uid")),
    ({"reasoning": "x", "metadata": {"generator": "G", "domain": "D"}, "_id": "u"},
     ("G", "metadata.generator"), ("D", "metadata.domain"), ("u", "_id")),
    ({"reasoning": "x", "model": "", "problem_type": "P", "category": "C", "trace_id": "t", "id": "i"},
     ("unknown", "default"), ("P", "problem_type"), ("t", "trace_id")),
]


@pytest.mark.parametrize("record, model, domain, trace_id", METADATA_CASES)
def test_metadata(record, model, domain, trace_id):
    trace = detect(record, FieldMap(), "dir/mem.jsonl", "line 1")
    p = trace.provenance
    assert (trace.model, p["model_from"]) == model
    assert (trace.domain, p["domain_from"]) == domain
    assert (trace.trace_id, p["trace_id_from"]) == trace_id
    assert trace.record == 0


@pytest.mark.parametrize(
    "value, expected, graded",
    [(True, True, True), (False, False, True), (1, True, True), (0, False, True), ("true", True, True),
     ("False", False, True), ("A", True, True), ("B", False, True),
     # a grade read as not graded is still the record's grade (the answer matcher does not replace it)
     ("C", None, True), ("not_attempted", None, True),
     # values that are no grade: the field is not taken for one
     (None, None, False), ("maybe", None, False), (3, None, False)],
)
def test_correctness_values(value, expected, graded):
    trace = one({"reasoning": "x", "grading": value})
    assert trace.correct is expected
    assert trace.provenance["correct_from"] == ("grading" if graded else None)
    assert trace.provenance.get("grade") == (str(value) if graded else None)


@pytest.mark.parametrize(
    "record, gold, gold_from",
    [
        ({"reasoning": "x", "answer": 33}, "33", "answer"),
        ({"reasoning": "x", "metadata": {"correct_answer": "B"}}, "B", "metadata.correct_answer"),
        ({"reasoning": "x", "gold_answer": "7", "correct_answer": "8"}, "8", "correct_answer"),
        # BIG-Bench Mistake: "answer" is the model's own answer, "target" the gold
        ({"reasoning": "So the answer is 12", "answer": "12", "target": "88"}, "88", "target"),
        ({"reasoning": "x"}, None, None),
    ],
)
def test_gold(record, gold, gold_from):
    trace = one(record)
    assert (trace.gold_answer, trace.provenance["gold_from"]) == (gold, gold_from)


def test_answer_field_is_not_gold_when_it_holds_the_reasoning():
    trace = one({"answer": "Plan.", "gold": "42"}, FieldMap(reasoning_field="answer"))
    assert (trace.gold_answer, trace.provenance["gold_from"]) == ("42", "gold")


# ----------------------------------------------------------------------------- bad records


def test_bad_records_become_errors_and_the_stream_goes_on(tmp_path):
    lines = [
        b'{"id": "ok1", "reasoning": "Fine."}',
        b'{"id": "broken", "reasoning": ',
        b'{"id": "num", "reasoning": 5}',
        b'{"id": "blank", "reasoning": "  \\n "}',
        b'{"id": "nul", "reasoning": "a\x00b"}',
        b'{"id": "utf", "reasoning": "\xff\xfe"}',
        b'[1, 2]',
        b'{"id": "none", "prompt": "Q?"}',
        b'{"id": "dict", "output": {"text": "x"}}',
        b'{"id": "tagonly", "response": "<think> </think>answer"}',
        b'{"id": "stub", "raw_text": {"question": "Q?", "response": ""}}',
        b'{"id": "ok2", "reasoning": "Also fine."}',
    ]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    items = list(iter_traces(path))
    assert [i.trace_id for i in items if isinstance(i, Trace)] == ["ok1", "ok2"]
    errors = [(e.source, e.record, e.field) for e in items if isinstance(e, InputError)]
    assert errors == [
        (str(path), "line 2", ""),
        (str(path), "line 3", "reasoning"),
        (str(path), "line 4", "reasoning"),
        (str(path), "line 5", ""),
        (str(path), "line 6", ""),
        (str(path), "line 7", ""),
        (str(path), "line 8", "reasoning"),
        (str(path), "line 9", "output"),
        (str(path), "line 10", "response"),
        (str(path), "line 11", "raw_text.response"),
    ]
    reasons = [e.reason for e in items if isinstance(e, InputError)]
    assert "malformed JSON" in reasons[0] and "number" in reasons[1] and reasons[2] == "empty reasoning"
    assert "NUL" in reasons[3] and "UTF-8" in reasons[4] and "list" in reasons[5]
    assert "tried: reasoning_content" in reasons[6] and "the record has: id, prompt" in reasons[6]
    assert "object" in reasons[7] and reasons[9] == "empty reasoning"
    assert reasons[8] == "empty reasoning beside an answer (given without thinking?)"  # Qwen3's no-think template


def test_empty_dedicated_field_does_not_turn_the_answer_into_reasoning():
    with pytest.raises(InputError) as err:
        one({"thought_summary": "", "response": "The answer is 42."})
    # said as what it likely is (tts_knowledge's Claude and Gemini no-think records: an empty thought_summary)
    assert (err.value.field, err.value.reason) == ("thought_summary", "empty reasoning beside an answer (given without "
                                                                      "thinking?)")
    with pytest.raises(InputError) as err:
        one({"thought_summary": "", "answer": "42"})  # `answer` is a gold answer's field, not the model's
    assert err.value.reason == "empty reasoning"
    # an answer in a field detection does not know, named with --answer-field: beside it, as beside a known one
    for record, fields in (({"thought_summary": "", "final": "42"}, FieldMap(answer_field="final")),
                           ({"my_thoughts": "", "final": "42"}, FieldMap(reasoning_field="my_thoughts", answer_field="final")),
                           ({"response": "<think> </think>", "final": "42"}, FieldMap(answer_field="final"))):
        with pytest.raises(InputError) as err:
            one(record, fields)
        assert err.value.reason == "empty reasoning beside an answer (given without thinking?)", record
        with pytest.raises(InputError) as err:
            one(record, replace(fields, answer_field=None))
        assert err.value.reason == "empty reasoning", record
    # the record counts reasoning tokens it does not hold (tts_knowledge's gpt-5-mini, 2,228 records): the model
    # thought and its reasoning was not returned, which is not an empty reasoning
    with pytest.raises(InputError) as err:
        one({"thought_summary": "", "response": "The answer is 42.", "reasoning_tokens": 384})
    assert err.value.field == "thought_summary" and err.value.reason.startswith("reasoning not returned: ")
    assert "`reasoning_tokens` counts 384 reasoning tokens" in err.value.reason


def test_a_reasoning_field_that_holds_the_answer_is_no_reasoning():
    with pytest.raises(InputError) as err:
        one({"thought_summary": "Answer: 78", "response": "Answer: 78 "})
    assert err.value.field == "thought_summary" and err.value.reason.startswith("the reasoning is the answer itself")
    assert "response holds the same text" in err.value.reason
    kept = one({"thought_summary": "He died in 1926, aged 78. Answer: 78", "response": "Answer: 78"})
    assert [s.field for s in kept.sections] == ["thought_summary", "response"]


@pytest.mark.parametrize(
    "content, reason",
    [(b"[1, 2", "malformed JSON"), (b'"just a string"', "top level"), (b'[{"reasoning": "x"}, 3]', None)],
)
def test_bad_json_files(tmp_path, content, reason):
    path = tmp_path / "f.json"
    path.write_bytes(content)
    items = list(iter_traces(path))
    if reason:
        assert len(items) == 1 and items[0].record == "file" and reason in items[0].reason
    else:
        assert isinstance(items[0], Trace) and (items[1].record, items[1].field) == (1, "")


def test_unreadable_files_are_reported_and_the_next_file_still_read(tmp_path):
    (tmp_path / "a.jsonl.gz").write_bytes(b"not gzip at all")
    cut = gzip.compress(b'{"reasoning": "x"}\n{"reasoning": "y"}\n')
    (tmp_path / "b.jsonl.gz").write_bytes(cut[:-12])  # gzip stream cut short after both lines
    (tmp_path / "c.parquet").write_bytes(b"garbage")
    write_jsonl(tmp_path / "d.jsonl", [{"reasoning": "z"}])
    items = [(Path(i.source).name, i.record, type(i).__name__) for i in iter_traces(tmp_path)]
    assert items[0] == ("a.jsonl.gz", "file", "InputError")  # the whole file: it is no gzip stream
    assert items[-2:] == [("c.parquet", "file", "InputError"), ("d.jsonl", 0, "Trace")]
    assert ("b.jsonl.gz", 0, "Trace") in items and items[-3][2] == "InputError"


def test_duplicate_ids_get_suffixes(tmp_path):
    records = [{"id": i, "reasoning": f"x{k}"} for k, i in enumerate(("a", "a", "b", "a", "a#2"))]
    traces = list(iter_traces(write_jsonl(tmp_path / "d.jsonl", records)))
    assert [t.trace_id for t in traces] == ["a", "a#2", "b", "a#3", "a#2#2"]
    assert [t.provenance.get("duplicate_of") for t in traces] == [None, "a", None, "a", "a#2"]


def test_a_record_repeated_exactly_in_its_file_is_skipped_once_named(tmp_path):
    """MiP-Overthinking's missing-premise GSM8K files hold each record twice (record i equals record
    i + 582): both were profiled. A record that repeats an earlier one of its file (text, question,
    model, grade, its own id if it has one) is skipped and says which; the same record in another file
    or under another id is profiled."""
    same = {"question": "Q?", "answer": "4", "model_answer": "<think>2 + 2 = 4.</think>4"}
    first = write_jsonl(tmp_path / "a.jsonl", [same, {**same, "model_answer": "<think>2 + 2 = 5.</think>5"}, same, same])
    items = list(iter_traces(first))
    assert [type(i).__name__ for i in items] == ["Trace", "Trace", "InputError", "InputError"]
    assert items[2].reason.startswith("repeats line 1 of its file exactly") and items[3].record == "line 4"
    from thinkprobe.accounting import reason_kind  # counted as one reason, not one per record repeated

    assert {reason_kind(i.reason) for i in items[2:]} == {"repeats an earlier record of its file exactly"}
    write_jsonl(tmp_path / "b.jsonl", [same])
    assert [type(i).__name__ for i in iter_traces(tmp_path)] == ["Trace", "Trace", "InputError", "InputError", "Trace"]
    ids = write_jsonl(tmp_path / "c.jsonl", [{"id": "x", **same}, {"id": "y", **same}, {"id": "x", **same}])
    assert [getattr(i, "trace_id", None) for i in iter_traces(ids)] == ["x", "y", "x"]  # the third: an error
    assert isinstance(list(iter_traces(ids))[2], InputError)


def test_duplicates_of_an_undrawn_record_are_counted_and_said():
    from thinkprobe.cli import format_summary
    from thinkprobe.runner import Joined, duplicates_of_undrawn
    joined = Joined(rows=[{"trace_id": "a"}, {"trace_id": "a#2"}, {"trace_id": "b#2"}],
                    duplicates=[{"trace_id": "a#2", "duplicate_of": "a"}, {"trace_id": "b#2", "duplicate_of": "b"}])
    assert duplicates_of_undrawn(joined) == 1  # "b" kept its id on a record --sample did not draw
    result = {"traces": 3, "out_dir": "o", "resumed": 0, "errors": 0, "duplicates": 2, "duplicates_of_undrawn": 1,
              "model_profiles": {}}
    assert "1 of them repeat the id of a record that is no trace of this run" in format_summary(result)
    assert "no trace of this run" not in format_summary({**result, "duplicates_of_undrawn": 0})


# ----------------------------------------------------------------------------- peek


def test_records_that_are_the_sentences_of_one_reasoning_are_one_skip_not_fragments(tmp_path):
    """Schoenfeld's responses_labeled/*.json hold one response as sentence records ({"text", labels}): the
    sentence carrying </think> ("**Final Answer** \\boxed{A}</think>") had been profiled as a whole trace of
    one or two units (27 such traces), the other 3,087 sentences skipped one by one."""
    from thinkprobe.io.formats import sentences_of_one_reasoning

    sentences = [f"Step {k}: the sum so far is {k * 3}." for k in range(12)] + ["So the answer is 33.</think>", "33"]
    doc = {"Question ID": "q1", "data": [{"text": t, "label": "Explore"} for t in sentences]}
    path = tmp_path / "1.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (item,) = list(iter_traces(str(path)))
    assert isinstance(item, InputError) and item.record == "file" and item.field == "text"
    assert "14 records are the sentences of one reasoning" in item.reason and "join them" in item.reason
    # short records with no tag, a record that opens and closes its reasoning, or a field a trace is read from:
    # records as before
    plain = [{"text": t.replace("</think>", ""), "label": "x"} for t in sentences]
    whole = [{"text": "<think>Add.</think>33" if k == 3 else t, "label": "x"} for k, t in enumerate(plain)]
    named = [{"response": d["text"], "label": "x"} for d in doc["data"]]
    assert [sentences_of_one_reasoning(r) for r in (doc["data"], plain, whole, named, doc["data"][:9])] == [
        "text", None, None, None, None]


def test_peek_of_a_big_folder_shows_every_subfolder(tmp_path):
    """Schoenfeld's folder: 38 responses_labeled/*.json (unreadable without --reasoning-field) filled
    peek's 20 files, hid responses_original/ (the readable layout) and peek exited 1."""
    (tmp_path / "labeled").mkdir()
    (tmp_path / "original").mkdir()
    for k in range(30):
        write_jsonl(tmp_path / "labeled" / f"{k:02d}.jsonl", [{"text": "x"}])
    write_jsonl(tmp_path / "original" / "r1.jsonl", [{"reasoning": "We add 2 and 2. That gives 4.", "model": "R1"}])
    rows = peek(tmp_path, n=1, max_files=4)
    shown = [Path(r["file"]).parent.name for r in rows if r["record"] != "..."]
    assert shown == ["labeled", "labeled", "labeled", "original"]
    assert next(r for r in rows if "original" in r["file"])["model"] == "R1"
    assert rows[-1]["note"].startswith("27 more files not shown")


def test_peek(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [
        {"id": "x", "model": "M", "domain": "math", "response": "Plan.</think>42", "answer": "42", "correct": True},
        {"id": "y", "reasoning": 3},
        {"id": "z", "reasoning": "z"},
    ])
    rows = peek(path, n=2)
    assert len(rows) == 2
    assert rows[0] == {
        "file": str(path), "joined": None, "record": "line 1", "trace_id": "x", "trace_id_from": "id", "model": "M", "model_from": "model",
        "domain": "math", "domain_from": "domain", "group": None, "group_from": None, "reasoning_from": "response", "tag": "<think>",
        "open_tag_missing": True, "truncated": False, "truncated_by": None, "answer_from": "response", "reasoning_chars": 5,
        "answer_chars": 2, "gold_from": "answer", "correct_from": "correct", "grade": "True", "correct": True,
        "unread_grade": None, "untagged": False, "layout": None, "error": None, "note": None,
    }
    assert rows[1]["record"] == "line 2" and "reasoning" in rows[1]["error"] and rows[1]["trace_id"] is None
    table = format_peek(rows)
    assert "M <- model" in table and "open_tag_missing" in table and "ERROR" in table
    assert table.splitlines()[1] == f"{path}:" and len(table.splitlines()) == 4


# ----------------------------------------------------------------------------- real data


def real(shared_data: Path, relative: str) -> Path:
    path = shared_data / relative
    if not path.exists():
        pytest.skip(f"real data not found: {path} (set THINKPROBE_DATA to the shared data folder)")
    return path


@pytest.mark.realdata
def test_reasoningflow_v1_raw(shared_data):
    traces = list(islice(iter_traces(real(shared_data, "reasoningflow/v1/v1_raw_data.jsonl.gz")), 20))
    assert len(traces) == 20 and all(isinstance(t, Trace) for t in traces)
    for t in traces:
        assert t.provenance["model_from"] == "metadata.generator" and t.model != "unknown"
        assert t.reasoning.field == "raw_text.response" and span(t.reasoning).strip()
        assert "<think>" not in span(t.reasoning) and "</think>" not in span(t.reasoning)
        assert t.question and t.gold_answer
    qwq = [t for t in traces if t.model == "QwQ-32B"]
    assert qwq and all(t.provenance["open_tag_missing"] and t.answer for t in qwq if "</think>" in t.reasoning.text)
    assert all(t.provenance["tag"] == "<think>" for t in traces if t.model in ("DeepSeek-R1", "gpt-oss-120b"))
    assert all(t.provenance["tag"] is None for t in traces if t.model == "DeepSeek-V3")


@pytest.mark.realdata
def test_reasoningflow_v0_human_directory_keeps_node_offsets(shared_data):
    root = real(shared_data, "reasoningflow/v0/v0_human_D")
    traces = list(iter_traces(root))
    assert len(traces) == 20 and all(isinstance(t, Trace) for t in traces)
    raw = {rec["doc_id"]: rec for _, _, rec in iter_records(root)}
    for t in traces:
        assert t.provenance["tag"] is None and t.reasoning.text == raw[t.trace_id]["raw_text"]["response"]
        assert span(t.reasoning) == t.reasoning.text.strip()
        # human node offsets point into the same original field string
        for node in raw[t.trace_id]["nodes"]:
            if node["source"] == "response":
                assert t.reasoning.text[node["start"] : node["end"]] == node["text"]


@pytest.mark.realdata
def test_tts_knowledge_thought_with_tags_and_grading(shared_data):
    path = real(shared_data, "tts_knowledge/outputs/qwen3-8b/Qwen3-8B_simpleqa_exd0.jsonl.gz")
    traces = list(islice(iter_traces(path), 20))
    grades = [r["grading"] for _, _, r in islice(iter_records(path), 20)]
    assert all(isinstance(t, Trace) for t in traces)
    assert {"A", "C"} <= set(grades)  # SimpleQA's grader: A correct, B incorrect, C not attempted
    for t, grade in zip(traces, grades):
        assert t.reasoning.field == "thought" and t.provenance["tag"] == "<think>"
        assert "</think>" not in span(t.reasoning) and span(t.reasoning)
        assert t.answer.field == "response" and not span(t.answer).endswith("<|im_end|>")
        # "not attempted" is not graded: neither right nor wrong
        assert t.correct is {"A": True, "B": False, "C": None}[grade]
        assert t.provenance["correct_from"] == "grading" and t.provenance["grade"] == grade
        assert t.provenance["gold_from"] == "answer" and t.question


@pytest.mark.realdata
def test_tts_knowledge_empty_summaries_are_errors_not_traces(shared_data):
    path = real(shared_data, "tts_knowledge/outputs/gpt-5-mini/gpt-5-mini_simpleqa_low_effort.jsonl.gz")
    items = list(islice(iter_traces(path), 50))
    errors = [i for i in items if isinstance(i, InputError)]
    assert errors and all(e.field == "thought_summary" and e.reason.startswith("reasoning not returned: `thought_summary` "
                                                                             "is empty and `reasoning_tokens` counts")
                          for e in errors)
    assert any(isinstance(i, Trace) and i.model.startswith("gpt-5-mini") for i in items)
    # summaries that repeat the response (29 in the six gpt-5-mini files) are not profiled as reasoning
    same = [i for i in iter_traces(real(shared_data, "tts_knowledge/outputs/gpt-5-mini/gpt-5-mini_simpleqa_medium_effort.jsonl.gz"))
            if isinstance(i, InputError) and i.reason.startswith("the reasoning is the answer itself")]
    assert len(same) == 8 and all(e.field == "thought_summary" for e in same)


@pytest.mark.realdata
def test_mip_overthinking_json_list_missing_open_tag_and_explicit_field(shared_data):
    traces = list(iter_traces(real(shared_data, "mip_overthinking/response/math/normal/QwQ/response.json.gz")))
    assert len(traces) == 52 and all(isinstance(t, Trace) for t in traces)
    assert all(t.reasoning.field == "model_answer" and t.provenance["open_tag_missing"] for t in traces)
    assert all("</think>" not in span(t.reasoning) for t in traces)
    r1 = real(shared_data, "mip_overthinking/response/math/normal/deepseekR1/response.json.gz")
    traces = list(iter_traces(r1, FieldMap(reasoning_field="deepseek-reasoner (question)")))
    assert all(isinstance(t, Trace) and t.domain != "unknown" for t in traces)  # from `subject`


@pytest.mark.realdata
def test_thought_anchors_full_cot_skips_the_prompt(shared_data):
    root = real(shared_data, "thought_anchors/deepseek-r1-distill-llama-8b/correct_base_solution")
    traces = [t for t in iter_traces(root) if isinstance(t, Trace) and t.source.endswith("base_solution.json")]
    assert len(traces) == 10
    for t in traces:
        assert t.reasoning.field == "full_cot" and t.provenance["tag"] == "<think>"
        assert not span(t.reasoning).startswith("Solve this math problem") and t.correct is True
        # the layout: the id and the model from the path, the gold from problem.json beside the file
        assert t.trace_id.startswith("deepseek-r1-distill-llama-8b/correct_base_solution/problem_")
        assert t.model == "deepseek-r1-distill-llama-8b" and t.provenance["gold_from"] == "problem.json:gt_answer"


@pytest.mark.realdata
def test_mip_overthinking_what_a_new_user_found_misread(shared_data):
    """A first-time user's run over MiP-Overthinking's native files: the missing-premise question's
    answers matched against the whole question's gold (a made-up premise graded correct), each GSM8K
    missing-premise record profiled twice (the file holds it twice), o-series answers with no thinking
    tokens (or counted as text, in svamp) profiled as reasoning, and --correct-field said missing where
    only the question files the pattern leaves out lack it."""
    from thinkprobe.io.check import FieldWarning, check_fields

    mip = shared_data / "mip_overthinking"
    gpt4o = list(iter_traces(real(shared_data, "mip_overthinking/response/gsm8k/MiP/gpt4o/response.json.gz")))
    assert len(gpt4o) == 1164 and sum(isinstance(t, Trace) for t in gpt4o) == 582
    assert all(t.reason.startswith(f"repeats record {k - 582} of its file exactly") for k, t in enumerate(gpt4o) if k >= 582)
    asked = [t for t in gpt4o if isinstance(t, Trace) and t.provenance.get("gold_not_asked")]
    assert len(asked) == 575 and all(t.gold_answer is None for t in asked)  # 7 records ask the whole question
    assert all(t.gold_answer is not None for t in gpt4o if isinstance(t, Trace) and t not in asked)
    o1 = list(iter_traces(real(shared_data, "mip_overthinking/response/formula/MiP/o1/response.json.gz")))
    assert all(isinstance(t, InputError) and t.reason.startswith("reasoning not returned") for t in o1)
    assert "counts no thinking tokens" in o1[44].reason
    svamp = list(islice(iter_traces(real(shared_data, "mip_overthinking/response/svamp/MiP/o1/response.json.gz")), 5))
    assert all(isinstance(t, InputError) and t.reason.startswith("reasoning not returned") for t in svamp)
    assert "counts 640 thinking tokens" in svamp[0].reason  # '640', a string there
    fields = FieldMap(path_pattern="{domain}/{group}/{model}/response.json.gz", correct_field="eval_result")
    assert not [w for w in check_fields([mip], fields) if isinstance(w, FieldWarning)]
    # svamp's missing-premise files without the whole question: phi3 keeps the question it asked alone, DSQ none
    # at all; their `answer` (91.0: the whole question's) was matched. math's whole-question DSQ file, with the
    # same fields, keeps its gold.
    phi3 = list(islice(iter_traces(real(shared_data, "mip_overthinking/response/svamp/MiP/phi3/response.json.gz")), 20))
    assert all(isinstance(t, Trace) and t.gold_answer is None and t.question for t in phi3)
    assert phi3[0].question.startswith("Dan had $ 3 left") and "insufficient" in phi3[0].provenance["gold_not_asked"]
    dsq = list(islice(iter_traces(real(shared_data, "mip_overthinking/response/svamp/MiP/DSQ/response.json.gz")), 20))
    assert all(t.gold_answer is None and "MiP/" in t.provenance["gold_not_asked"] for t in dsq)
    whole = list(islice(iter_traces(real(shared_data, "mip_overthinking/response/math/normal/DSQ/response.json.gz")), 20))
    assert all(t.gold_answer is not None and "gold_not_asked" not in t.provenance for t in whole)


@pytest.mark.realdata
def test_think_bench_and_venhoff_layouts(shared_data):
    bench = list(islice(iter_traces(real(shared_data, "think_bench_qwen3/qwen3-32b_think_bench.jsonl.gz")), 10))
    assert all(t.reasoning.field == "think_content" and t.answer.field == "prediction" for t in bench)
    assert all(t.provenance["domain_from"] == "category" for t in bench)
    # its own 1-based record number names each trace, as the corpus does (the file position was off by one)
    assert [t.trace_id for t in bench] == [str(k) for k in range(1, 11)]
    claude = list(iter_traces(real(shared_data, "venhoff_reasoning_comparison/reasoning_comparison_claude-3-7-sonnet.json")))
    assert len(claude) == 300 and all(isinstance(t, Trace) for t in claude)
    assert all(t.reasoning.field == "response" and not t.provenance["truncated"] for t in claude)
    distill = list(iter_traces(real(shared_data, "venhoff_reasoning_comparison/reasoning_comparison_deepseek-qwen-14b.json")))
    assert sum(t.provenance["truncated"] for t in distill if isinstance(t, Trace)) > 100


# ----------------------------------------------------------------------------- formats people have

FORMATS_DIR = Path(__file__).parent / "data" / "formats"

# file, FieldMap, then per trace: (trace_id, model, reasoning_from, reasoning, answer_from, answer, correct)
FORMAT_CASES = [
    ("samples_gsm8k_cot_2025-03-14T10-22-05.123456.jsonl", FieldMap(model="Qwen3-8B"), [
        ("0", "Qwen3-8B", "resps[0][0]",
         "Tom starts with 3 apples. He buys 4 more, so 3 + 4 = 7.\nLet me double check: 7 - 4 = 3. Yes.",
         "resps[0][0]", "The answer is 7.", True),
        ("1", "Qwen3-8B", "resps[0][0]",
         "Speed is distance over time. 60 / 1.5 = 45? No wait, 1.5 * 40 = 60, so it is 40.",
         "resps[0][0]", "The speed is 40 km/h.", False),
    ]),
    ("openai_responses.jsonl", FieldMap(), [
        ("resp_001", "gpt-5-mini-2025-08-07", "output",
         "**Working out the area**\n\nThe rectangle is 4 by 6, so its area is 24.\n\n"
         "**Checking units**\n\nBoth sides are in metres, so the area is 24 square metres.",
         "output[1].content[0].text", "The area is 24 m².", None),
        ("resp_002", "gpt-oss-120b", "output[0].content[0].text",
         "We need the larger of 0.9 and 0.11. Compare tenths: 9 > 1. So 0.9 is larger.",
         "output[1].content[0].text", "0.9 is larger.", None),
    ]),
    ("anthropic_thinking.jsonl", FieldMap(), [
        ("msg_01A", "claude-sonnet-4-20250514", "content[0].thinking",
         "The user asks for the capital of Australia. Many people say Sydney, but the capital is Canberra.",
         "content[1].text", "The capital of Australia is Canberra.", None),
        ("msg_01B", "claude-sonnet-4-20250514", "content",
         "First I look up the boiling point of water at sea level: 100 °C.\n\n"
         "At altitude the pressure is lower, so water boils below 100 °C.",
         "content[3].text", "About 100 °C at sea level, less at altitude.", None),
    ]),
    ("vllm_reasoning.jsonl", FieldMap(), [
        ("chatcmpl-9f2", "Qwen/Qwen3-8B", "choices[0].message.reasoning",
         "Okay, 17 is prime? It is not divisible by 2, 3 or 5, and 5 squared is 25 > 17. So yes.",
         "choices[0].message.content", "Yes, 17 is prime.", None),
        ("q-18", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "reasoning", "18 = 2 * 9, so it is not prime.",
         "content", "No, 18 is not prime.", None),
    ]),
    ("openr1.jsonl", FieldMap(), [
        ("5a1c-77:g0", "unknown", "generations[0]", "Subtract 3: 2x = 8. Divide by 2: x = 4.",
         "generations[0]", "x = \\boxed{4}", True),
        ("5a1c-77:g1", "unknown", "generations[1]",
         "2x + 3 = 11 so 2x = 14? No, 11 - 3 = 8, so x = 4. Hmm, I wrote 5 first.",
         "generations[1]", "x = \\boxed{5}", False),
    ]),
    ("openthoughts.jsonl", FieldMap(), [
        ("openthoughts:0", "unknown", "conversations[1].value",
         "Okay, 12 * 13. 12 * 10 = 120 and 12 * 3 = 36, so 156.\n\nLet me verify: 13 * 12 = 130 + 26 = 156.",
         "conversations[1].value", "\\boxed{156}", None),
    ]),
]


@pytest.mark.parametrize("name, fields, expected", FORMAT_CASES, ids=[c[0].split(".")[0][:20] for c in FORMAT_CASES])
def test_formats_people_have(name, fields, expected):
    traces = list(iter_traces(FORMATS_DIR / name, fields))
    assert all(isinstance(t, Trace) for t in traces)
    got = [(t.trace_id, t.model, t.reasoning.field, span(t.reasoning), t.answer.field, span(t.answer), t.correct)
           for t in traces]
    assert got == expected


def test_joined_blocks_tile_the_joined_text():
    thinking = next(t for t in iter_traces(FORMATS_DIR / "anthropic_thinking.jsonl") if t.trace_id == "msg_01B")
    assert thinking.provenance["joined"] == {"field": "content", "parts": 2, "separator": "\n\n"}
    assert thinking.reasoning.text == span(thinking.reasoning)  # nothing to trim: the text is the joined pieces


def test_lm_eval_and_openr1_metadata():
    lm = next(iter(iter_traces(FORMATS_DIR / "samples_gsm8k_cot_2025-03-14T10-22-05.123456.jsonl")))
    assert (lm.question, lm.gold_answer, lm.provenance["correct_from"]) == (
        "Tom has 3 apples and buys 4 more. How many apples does he have?", "7", "exact_match")
    r1 = list(iter_traces(FORMATS_DIR / "openr1.jsonl"))
    assert [t.provenance["generation"] for t in r1] == [0, 1]
    assert [t.provenance["correct_from"] for t in r1] == ["correctness_math_verify[0]", "correctness_math_verify[1]"]
    assert all(t.question == "Find x if 2x + 3 = 11." and t.gold_answer == "4" and t.record == 0 for t in r1)


def test_record_traces_never_raises_and_gives_one_error_per_bad_generation():
    items = record_traces({"id": "p", "generations": ["<think>ok</think>1", "  ", 5]}, source="mem")
    assert [type(i).__name__ for i in items] == ["Trace", "InputError", "InputError"]
    assert items[0].trace_id == "p:g0"
    assert [(i.field, i.reason) for i in items[1:]] == [
        ("generations[1]", "empty reasoning"), ("generations[2]", "expected text, found number")]
    assert [type(i).__name__ for i in record_traces(["not", "a", "record"])] == ["InputError"]


def _hf_folder(root: Path, rows: list[dict], shards: int = 2) -> Path:
    """The layout `datasets.Dataset.save_to_disk` writes: Arrow IPC streams beside two JSON descriptions."""
    import pyarrow as pa

    root.mkdir(parents=True)
    table = pa.Table.from_pylist(rows)
    per = -(-len(rows) // shards)
    files = []
    for k in range(shards):
        name = f"data-{k:05d}-of-{shards:05d}.arrow"
        with pa.OSFile(str(root / name), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.slice(k * per, per))
        files.append({"filename": name})
    (root / "state.json").write_text(json.dumps({"_data_files": files, "_fingerprint": "f00", "_split": None}))
    (root / "dataset_info.json").write_text(json.dumps({"features": {k: {"dtype": "string"} for k in rows[0]}}))
    return root


HF_ROWS = [{"id": f"h{i}", "model": "m", "reasoning_content": f"Step {i}: add {i}.", "content": str(i)} for i in range(5)]


def test_hugging_face_save_to_disk_folder(tmp_path):
    root = _hf_folder(tmp_path / "ds", HF_ROWS)
    assert [Path(src).name for src, _, _ in iter_records(root)] == ["data-00000-of-00002.arrow"] * 3 + [
        "data-00001-of-00002.arrow"] * 2
    traces = list(iter_traces(root))
    assert [t.trace_id for t in traces] == [r["id"] for r in HF_ROWS]
    assert [span(t.reasoning) for t in traces] == [r["reasoning_content"] for r in HF_ROWS]


def test_dataset_dict_folder_reads_every_split_and_no_metadata(tmp_path):
    _hf_folder(tmp_path / "dd" / "train", HF_ROWS[:3], shards=1)
    _hf_folder(tmp_path / "dd" / "test", HF_ROWS[3:], shards=1)
    (tmp_path / "dd" / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    traces = list(iter_traces(tmp_path / "dd"))
    assert [t.trace_id for t in traces] == ["h3", "h4", "h0", "h1", "h2"]  # sorted paths: test/ before train/


def test_datasets_save_to_disk_is_read_when_datasets_is_installed(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list(HF_ROWS).save_to_disk(str(tmp_path / "saved"))
    assert [t.trace_id for t in iter_traces(tmp_path / "saved")] == [r["id"] for r in HF_ROWS]


def test_arrow_ipc_file_format(tmp_path):
    import pyarrow as pa

    path = tmp_path / "t.arrow"
    table = pa.Table.from_pylist(HF_ROWS)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    assert [t.trace_id for t in iter_traces(path)] == [r["id"] for r in HF_ROWS]
    (tmp_path / "bad.arrow").write_bytes(b"not arrow")
    [error] = list(iter_traces(tmp_path / "bad.arrow"))
    assert isinstance(error, InputError) and error.record == "file" and "cannot read Arrow" in error.reason
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")  # the whole file, not its record 0
    [error] = list(iter_traces(tmp_path / "bad.parquet"))
    assert error.record == "file" and "cannot read Parquet" in error.reason


# ----------------------------------------------------------------------------- columnar and grouped JSON


def test_columnar_json_is_read_as_records():
    traces = list(iter_traces(FORMATS_DIR / "columnar.json"))
    assert [(t.trace_id, t.model, span(t.reasoning), span(t.answer), t.record) for t in traces] == [
        ("c1", "m-a", "Add the two numbers: 2 + 2 = 4.", "4", 0),
        ("c2", "m-a", "Half of 10 is 5.", "5", 1),
        ("c3", "m-b", "3 squared is 9.", "9", 2),
    ]


def test_columnar_json_with_unequal_lists_is_one_clear_error(tmp_path):
    path = write_json(tmp_path / "cols.json", {"id": ["a", "b"], "reasoning": ["x"]})
    [error] = list(iter_traces(path))
    assert (error.source, error.record, error.field) == (str(path), "file", "")
    assert error.reason == "columnar JSON with lists of different lengths (id: 2, reasoning: 1)"


def test_grouped_json_reads_every_object_of_every_list():
    fields = FieldMap(reasoning_field="Model_Solution_Steps", model_field="Sampled_Model", domain_field="Subject")
    traces = list(iter_traces(FORMATS_DIR / "mrben_grouped.json", fields))
    # Model_Solution_Correctness labels the whole solution, not the final answer: no grade (the matcher grades)
    assert [(t.trace_id, t.model, t.domain, t.correct) for t in traces] == [
        ("mrben_grouped:0", "Claude2", "high_school_biology", None),
        ("mrben_grouped:1", "GPT3.5", "high_school_biology", None),
        ("mrben_grouped:2", "mistral-medium", "high_school_biology", None),
    ]
    assert [t.provenance["unread_grade"].split("=")[0] for t in traces] == ["Model_Solution_Correctness"] * 3
    assert traces[1].question == "Which organelle makes ATP?"
    assert traces[1].reasoning.text == "Step 1: Plants make energy in chloroplasts.\nSolution: Chloroplast"


@pytest.mark.parametrize("value", [
    {"messages": [{"role": "assistant", "content": "<think>a</think>b"}]},
    {"generations": ["<think>a</think>1", "<think>b</think>2"], "correctness_math_verify": [True, False]},
])
def test_an_object_of_in_record_lists_stays_one_record(tmp_path, value):
    assert len(list(iter_traces(write_json(tmp_path / "one.json", value)))) == len(value.get("generations", [0]))


# ----------------------------------------------------------------------------- a list of steps


def test_steps_list_is_one_trace_joined_with_newlines():
    steps = ["Step 1: 3 + 4 = 7.", "Step 2: 7 * 2 = 14.", "Solution: 14"]
    trace = one({"id": "s", "steps": steps, "final_answer_correct": True}, FieldMap(reasoning_field="steps"))
    assert trace.reasoning.field == "steps" and trace.reasoning.text == "\n".join(steps)
    # the closing "Solution: 14" step is the answer section (MR-BEN's form)
    assert (trace.reasoning.start, trace.reasoning.end) == (0, len("\n".join(steps[:2])))
    answer = next(s for s in trace.sections if s.name == "answer")
    assert answer.text[answer.start:answer.end] == "Solution: 14"
    assert trace.provenance["joined"] == {"field": "steps", "parts": 3, "separator": "\n"}
    offsets, start = [], 0
    for step in steps:  # every step is found at its own offset in the joined text
        offsets.append(trace.reasoning.text.index(step, start))
        start = offsets[-1] + len(step)
    assert offsets == [0, 19, 39]  # 18 + 1 and 18 + 1 + 19 + 1


def test_reasoningflow_export_says_the_steps_were_joined():
    from thinkprobe.export import to_reasoningflow

    steps = ["Step 1: a.", "Step 2: b."]
    rec = {"trace_id": "s", "model": "m", "domain": "d", "source": "x", "question": None, "gold_answer": None,
           "correct": None, "provenance": {"joined": {"field": "steps", "parts": 2, "separator": "\n"}},
           "sections": [{"name": "reasoning", "field": "steps", "start": 0, "end": 21}],
           "fields": {"steps": "\n".join(steps)}, "units": [], "edges": []}
    doc = to_reasoningflow(rec)
    assert doc["raw_text"]["response"] == "Step 1: a.\nStep 2: b."
    assert doc["metadata"]["joined"] == {"field": "steps", "parts": 2, "separator": "\n"}


# ----------------------------------------------------------------------------- run-wide ids


def test_two_files_with_the_same_ids_get_file_prefixes(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [{"id": i, "reasoning": f"a{i}"} for i in (10, 21)])
    b = write_jsonl(tmp_path / "b.jsonl", [{"id": i, "reasoning": f"b{i}"} for i in (10, 81, 21)])
    traces = list(iter_inputs([a, b]))
    # once b's ids meet a's, every later id of b is prefixed: one naming per file (81 repeats nothing)
    assert [t.trace_id for t in traces] == ["10", "21", "b:10", "b:81", "b:21"]
    assert [t.provenance.get("duplicate_of") for t in traces] == [None, None, "10", None, "21"]
    assert [t.provenance.get("renamed_from") for t in traces] == [None, None, None, "81", None]
    assert [span(t.reasoning) for t in traces] == ["a10", "a21", "b10", "b81", "b21"]


def test_same_stem_in_two_folders_and_repeats_within_a_file(tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run2").mkdir()
    a = write_jsonl(tmp_path / "run1" / "out.jsonl", [{"id": "x", "reasoning": "1"}])
    b = write_jsonl(tmp_path / "run2" / "out.jsonl", [{"id": "x", "reasoning": "2"}, {"id": "x", "reasoning": "3"}])
    assert [t.trace_id for t in iter_inputs([a, b])] == ["x", "run2/out:x", "run2/out:x#2"]


def test_twelve_one_record_files_get_twelve_ids(tmp_path):
    paths = []
    for k in range(12):
        (tmp_path / f"problem_{k}").mkdir()
        paths.append(write_json(tmp_path / f"problem_{k}" / "base_solution.json", {"full_cot": f"Think {k}."}))
    traces = list(iter_inputs(paths))
    assert [t.trace_id for t in traces] == [f"problem_{k}/base_solution:0" for k in range(12)]
    assert not any("duplicate_of" in t.provenance for t in traces)


def test_records_without_ids_in_files_of_one_name_are_no_duplicates(tmp_path):
    """Ids made from the file name and position (the records have none) are told apart by the
    file's folder; none is a renamed duplicate (MiP-Overthinking's response.json.gz layout)."""
    paths = []
    for cond in ("normal", "missing"):
        (tmp_path / cond).mkdir()
        paths.append(write_jsonl(tmp_path / cond / "response.jsonl", [{"reasoning": f"{cond} {k}"} for k in range(2)]))
    traces = list(iter_inputs(paths))
    assert len({t.trace_id for t in traces}) == 4
    assert not any("duplicate_of" in t.provenance for t in traces)


def test_two_folders_with_the_same_inner_files(tmp_path):
    """A new user's MiP-Overthinking run over the normal/ and MiP/ folders: the first folder's ids were
    bare (deepseekR1/response:9) and the second's carried its name (MiP/deepseekR1/response:2), so the
    first folder's traces could not be told by id. Every folder's made ids carry its label."""
    for run in ("r1", "r2"):
        (tmp_path / run / "p").mkdir(parents=True)
        write_json(tmp_path / run / "p" / "base_solution.json", {"full_cot": run})
    traces = list(iter_inputs([tmp_path / "r1", tmp_path / "r2"]))
    assert [t.trace_id for t in traces] == ["r1/p/base_solution:0", "r2/p/base_solution:0"]
    assert [t.trace_id for t in iter_inputs([tmp_path / "r1"])] == ["p/base_solution:0"]  # one input: no label
    assert "duplicate_of" not in traces[1].provenance  # the records have no id: nothing was repeated


# ----------------------------------------------------------------------------- naming what records lack


def test_model_and_domain_constants_win_over_fields():
    trace = one({"reasoning": "x", "model": "in-record"}, FieldMap(model="R1", domain="math"))
    assert (trace.model, trace.domain, trace.provenance["model_from"], trace.provenance["domain_from"]) == (
        "R1", "math", "option", "option")


@pytest.mark.parametrize("pattern", [
    r"(?P<model>[^/]+)/(?P<domain>[^/_]+)_[^/]*\.jsonl",
    "{model}/{domain}_{}.jsonl",
    "{model}/{domain}_*.jsonl",
])
def test_model_and_domain_from_the_path(tmp_path, pattern):
    (tmp_path / "qwen3-8b").mkdir()
    path = write_jsonl(tmp_path / "qwen3-8b" / "simpleqa_exd0.jsonl", [{"reasoning": "x"}, {"reasoning": "y", "model": "m"}])
    traces = list(iter_traces(path, FieldMap(path_pattern=pattern)))
    assert [(t.model, t.domain, t.provenance["model_from"]) for t in traces] == [
        ("qwen3-8b", "simpleqa", "path"), ("qwen3-8b", "simpleqa", "path")]
    # a record field named explicitly still wins over the path
    assert next(iter(iter_traces(path, FieldMap(path_pattern=pattern, model_field="model")))).model == "qwen3-8b"
    assert list(iter_traces(path, FieldMap(path_pattern=pattern, model_field="model")))[1].model == "m"


def test_a_path_pattern_without_known_groups_is_refused():
    with pytest.raises(ValueError, match="must name groups"):
        FieldMap(path_pattern=r"(?P<modle>[^/]+)\.jsonl")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        FieldMap(path_pattern="(?P<model>[^/]+")


def test_per_input_overrides_let_two_layouts_share_a_run(tmp_path):
    steps = write_jsonl(tmp_path / "pb.jsonl", [{"id": "p1", "steps": ["a.", "b."], "generator": "Qwen"}])
    chats = write_jsonl(tmp_path / "chat.jsonl", [{"id": "c1", "messages": [
        {"role": "user", "content": "Q?"}, {"role": "assistant", "content": "<think>c.</think>d"}]}])
    base = FieldMap(model="ignored-when-overridden")
    traces = list(iter_inputs([f"{steps}::reasoning-field=steps,model=Qwen2.5-Math", f"{chats}::domain=chat"], base))
    assert [(t.trace_id, t.model, t.domain, t.reasoning.field, t.reasoning.text) for t in traces] == [
        ("p1", "Qwen2.5-Math", "unknown", "steps", "a.\nb."),
        ("c1", "ignored-when-overridden", "chat", "messages[1].content", "<think>c.</think>d"),
    ]
    # without the override the steps file is skipped with a message that names the keys it has
    [error, _] = list(iter_inputs([steps, chats]))
    assert isinstance(error, InputError) and "the record has: id, steps, generator" in error.reason


def test_parse_source():
    assert parse_source("a.jsonl") == Source("a.jsonl", FieldMap())
    src = parse_source(r"d/x.jsonl::path_pattern=(?P<model>\w{2,8})/,domain-field=meta.task", FieldMap(model="m"))
    assert src.path == "d/x.jsonl"
    assert src.fields == FieldMap(model="m", path_pattern=r"(?P<model>\w{2,8})/", domain_field="meta.task")
    with pytest.raises(ValueError, match="cannot read override 'colour=red'"):
        parse_source("a.jsonl::colour=red")


def test_explicit_field_not_found_lists_the_keys_where_the_path_stopped():
    with pytest.raises(InputError) as err:
        one({"raw_text": {"question": "Q", "answer": "A"}, "id": 1}, FieldMap(reasoning_field="raw_text.response"))
    assert err.value.reason == "field not found; `raw_text` has: question, answer"
    with pytest.raises(InputError) as err:
        one({"id": 1, "text": "x"}, FieldMap(reasoning_field="steps"))
    assert (err.value.source, err.value.record, err.value.field) == ("mem.jsonl", "line 1", "steps")
    assert err.value.reason == "field not found; the record has: id, text"


# ----------------------------------------------------------------------------- peek on several paths


def test_peek_several_paths_names_files_and_exits_1_when_nothing_is_usable(tmp_path):
    from click.testing import CliRunner

    from thinkprobe.cli import main

    root = tmp_path / "folder"
    root.mkdir()
    bad = write_jsonl(root / "inner.jsonl", [{"id": "y", "prompt": "only a prompt " * 20}])
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": "g", "reasoning": "fine"}])
    runner = CliRunner()
    result = runner.invoke(main, ["peek", str(root)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[1] == f"{bad}:"  # a folder's rows name the file they come from
    assert lines[2].startswith("line 1") and lines[2].endswith("(name the field with --reasoning-field)")  # not cut
    result = runner.invoke(main, ["peek", str(root), f"{good}::model=M", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert [(r["file"], r["trace_id"], r["model"]) for r in rows] == [(str(bad), None, None), (str(good), "g", "M")]
    result = runner.invoke(main, ["peek", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "no such file or directory" in result.output


def test_peek_says_a_repeated_error_once(tmp_path):
    """Schoenfeld's folder of sentence files: 120 lines of one error, the one file that reads well
    after 20 files of it. An error the same as the one shown above is a count; the JSON keeps every row."""
    from click.testing import CliRunner

    from thinkprobe.cli import main

    root = tmp_path / "sentences"
    root.mkdir()
    for k in range(3):
        write_jsonl(root / f"{k}.jsonl", [{"text": f"Sentence {j}.", "label": "Read"} for j in range(5)])
    write_jsonl(root / "z.jsonl", [{"id": "g", "reasoning": "fine"}, {"prompt": "other"}])
    result = CliRunner().invoke(main, ["peek", str(root)])
    lines = result.output.splitlines()
    errors = [ln for ln in lines if "no reasoning text found" in ln]
    assert len(errors) == 2, result.output  # the first in full, and z.jsonl's own (another record's fields)
    assert "lines 2-5  ERROR the same as above (4 records)" in lines, result.output
    assert lines.count("lines 1-5  ERROR the same as above (5 records)") == 2
    rows = json.loads(CliRunner().invoke(main, ["peek", str(root), "--json"]).output)
    assert sum(1 for r in rows if r.get("error")) == 16


def test_peek_shows_the_ids_the_run_gives(tmp_path):
    """Several inputs whose files share a name (MiP-Overthinking's */response.json): peek showed each file's
    records as response:N, while the run names the later files' traces after their folders."""
    inputs = []
    for name in ("normal", "MiP"):
        folder = tmp_path / name / "model"
        folder.mkdir(parents=True)
        write_jsonl(folder / "response.jsonl", [{"reasoning": f"Step {k} of {name}."} for k in range(3)])
        inputs.append(str(tmp_path / name / "model"))
    shown = [r["trace_id"] for r in peek(inputs, n=2)]
    run = [t.trace_id for t in iter_inputs(inputs)]
    assert shown == run[0:2] + run[3:5] and len(set(shown)) == 4


def test_peek_on_a_large_folder_notes_the_files_left_out_without_calling_them_errors(tmp_path):
    from thinkprobe.io.peek import usable

    for k in range(3):
        write_jsonl(tmp_path / f"f{k}.jsonl", [{"id": f"r{k}", "reasoning": "fine"}])
    rows = peek(tmp_path, n=1, max_files=2)
    assert [r["trace_id"] for r in rows] == ["r0", "r1", None]
    assert rows[-1]["error"] is None and rows[-1]["note"].startswith("1 more files not shown")
    table = format_peek(rows)
    assert "ERROR" not in table and table.splitlines()[-1].endswith("(peek a file, or the folder with fewer files)")
    assert usable(rows) and not usable(rows[-1:])  # a note alone is nothing to profile


# ----------------------------------------------------------------------------- tts_knowledge: model from the file name


@pytest.mark.realdata
def test_tts_knowledge_grouped_by_model_from_the_file_name(shared_data):
    root = real(shared_data, "tts_knowledge/outputs")
    files = [root / "qwen3-8b" / "Qwen3-8B_simpleqa_exd0.jsonl.gz",
             root / "claude-sonnet-4" / "claude-sonnet4_simpleqa_budget1024.jsonl.gz",
             root / "grok-3-mini" / "grok-3-mini_simpleqa_low_effort.jsonl.gz"]
    files = [f for f in files if f.exists()]
    if len(files) < 2:
        pytest.skip("tts_knowledge files not found")
    fields = FieldMap(path_pattern="{model}_{domain}_{}.jsonl.gz")
    by_model: dict[str, int] = {}
    for f in files:
        for t in islice(iter_traces(f, fields), 20):
            if isinstance(t, Trace):
                assert t.provenance["model_from"] == "path" and t.domain == "simpleqa"
                by_model[t.model] = by_model.get(t.model, 0) + 1
    assert sorted(by_model) == sorted(f.name.split("_")[0] for f in files)
    assert "unknown" not in by_model


def test_in_memory_records_share_the_run_wide_ids(tmp_path):
    path = write_jsonl(tmp_path / "disk.jsonl", [{"id": "a", "reasoning": "from disk"}])
    records = [{"id": "a", "reasoning": "from memory"}, {"reasoning": "no id"}, {"id": "b", "reasoning": 3}]
    items = list(iter_inputs([path, Source("frame", FieldMap(model="M"), records=records)]))
    assert [(getattr(i, "trace_id", None), getattr(i, "model", None)) for i in items[:3]] == [
        ("a", "unknown"), ("frame:a", "M"), ("frame:1", "M")]
    assert (items[3].source, items[3].record, items[3].field) == ("frame", 2, "reasoning")


def test_lm_eval_task_from_the_samples_file_name():
    fields = FieldMap(path_pattern=r"samples_(?P<domain>.+)_\d{4}-\d\d-\d\dT", model="Qwen3-8B")
    traces = list(iter_traces(FORMATS_DIR / "samples_gsm8k_cot_2025-03-14T10-22-05.123456.jsonl", fields))
    assert [(t.model, t.domain, t.provenance["domain_from"]) for t in traces] == [("Qwen3-8B", "gsm8k_cot", "path")] * 2


def test_a_run_over_two_files_with_the_same_ids_lists_the_renamed_ones(tmp_path):
    """End to end: run.json and the summary name the duplicates and the option that fixes `unknown`."""
    from thinkprobe.cli import format_summary
    from thinkprobe.engine import RunOptions, run_profile

    text = "First I add the numbers. Then I check the result. Wait, that is wrong. Let me redo it."
    a = write_jsonl(tmp_path / "a.jsonl", [{"id": i, "reasoning": f"{text} ({i})"} for i in (10, 21)])
    b = write_jsonl(tmp_path / "b.jsonl", [{"id": i, "reasoning": f"{text} [{i}]"} for i in (10, 84)])
    out = tmp_path / "out"
    result = run_profile(RunOptions(inputs=[str(a), f"{b}::model=B"], out_dir=str(out), progress=False,
                                    linker="cue", types="cue", cache=False))
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["duplicate_ids"] == [{"trace_id": "b:10", "duplicate_of": "10", "file": str(b), "record": 0}]
    assert run["counts"]["unknown_model"] == 2 and set(run["unknown_fix"]) == {"model", "domain"}
    assert "--model NAME" in run["unknown_fix"]["model"] and "--path-pattern" in run["unknown_fix"]["model"]
    ids = [json.loads(line)["trace_id"] for line in (out / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert ids == ["10", "21", "b:10", "b:84"]  # b prefixed from its first repeated id on
    summary = format_summary(result)
    assert "1 trace ids repeated an earlier trace's id" in summary and "--model-field FIELD" in summary


def test_models_named_only_by_the_file_names_get_a_ready_path_pattern(tmp_path):
    """Venhoff et al.'s layout: one file per model (reasoning_comparison_<model>.json), no model field.
    The summary offers the --path-pattern that reads them, and that pattern names every model."""
    from thinkprobe.cli import format_summary
    from thinkprobe.engine import RunOptions, run_profile

    text = "<think>First I add the numbers. Then I check the result. Wait, that is wrong.</think> 12"
    folder = tmp_path / "venhoff"
    folder.mkdir()
    for model in ("claude-3-7-sonnet", "gpt-4o", "deepseek-llama-8b"):
        (folder / f"reasoning_comparison_{model}.json").write_text(
            json.dumps([{"response": f"{text} ({model} {i})"} for i in range(2)]), encoding="utf-8")
    from click.testing import CliRunner

    from thinkprobe.cli import main

    peeked = CliRunner().invoke(main, ["peek", "-n", "1", str(folder)])
    assert peeked.exit_code == 0
    assert "note: 3 of the records shown have no model" in peeked.stderr
    assert "--path-pattern 'reasoning_comparison_{model}.json'" in peeked.stderr
    options = dict(out_dir=str(tmp_path / "out"), progress=False, linker="cue", types="cue", cache=False)
    summary = format_summary(run_profile(RunOptions(inputs=[str(folder)], **options)))
    assert "6 traces have no model" in summary
    assert "--path-pattern 'reasoning_comparison_{model}.json'" in summary
    result = run_profile(RunOptions(inputs=[f"{folder}::path-pattern=reasoning_comparison_{{model}}.json"],
                                    **{**options, "out_dir": str(tmp_path / "out2")}))
    assert sorted((r["model"], r["n"]) for r in result["model_profiles"]) == [
        ("claude-3-7-sonnet", 2), ("deepseek-llama-8b", 2), ("gpt-4o", 2)]
    assert result["unknown"]["model"] == 0
    # one file (THINK-Bench's qwen3-32b_think_bench.jsonl.gz): the part of its name that reads as a model's
    one = tmp_path / "qwen3-32b_think_bench.jsonl"
    one.write_text("".join(json.dumps({"response": f"{text} ({i})"}) + "\n" for i in range(2)), encoding="utf-8")
    summary = format_summary(run_profile(RunOptions(inputs=[str(one)], **{**options, "out_dir": str(tmp_path / "o3")})))
    assert "a part of their file's path reads as a model's name: --path-pattern '{model}_think_bench.jsonl'" in summary
    result = run_profile(RunOptions(inputs=[str(one)], path_pattern="{model}_think_bench.jsonl",
                                    **{**options, "out_dir": str(tmp_path / "o4")}))
    assert [(r["model"], r["n"]) for r in result["model_profiles"]] == [("qwen3-32b", 2)]


def test_an_untagged_generation_is_not_replaced_by_the_tagged_chat_copy():
    record = {"uuid": "u", "generations": ["<think>a</think>1", "plain b"],
              "messages": [{"role": "assistant", "content": "<think>a</think>1"}]}
    assert [(t.trace_id, t.reasoning.field, span(t.reasoning)) for t in record_traces(record)] == [
        ("u:g0", "generations[0]", "a"), ("u:g1", "generations[1]", "plain b")]


def test_a_field_that_is_there_but_null_is_said_to_be_null():
    """A Parquet row whose response is null: 'no reasoning text found; ... the record has: id, model,
    response' named the field it had just said it could not find."""
    with pytest.raises(InputError) as err:
        detect({"id": "x", "model": "m", "response": None}, FieldMap(), "t.parquet", 0)
    assert "the record has: id, model, response (null)" in err.value.reason


def test_a_list_of_texts_where_text_was_expected_says_how_to_join_it():
    with pytest.raises(InputError) as err:
        detect({"id": "x", "response": ["First step.", "Second step."]}, FieldMap(), "t.parquet", 0)
    assert "--reasoning-field response joins them into one trace" in err.value.reason


def test_parquet_ids_of_timestamp_and_decimal_type_name_their_traces(tmp_path):
    """A Parquet id column of timestamp or decimal type gave file:N ids and an empty source_id."""
    import datetime
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": pa.array([decimal.Decimal("12.50"), decimal.Decimal("7")], pa.decimal128(5, 2)),
                      "when": [datetime.datetime(2026, 1, 2, 3, 4, 5), datetime.datetime(2026, 1, 3)],
                      "response": ["<think>One. Two.</think>a", "<think>Three. Four.</think>b"]})
    pq.write_table(table, tmp_path / "t.parquet")
    assert [t.trace_id for t in iter_traces(tmp_path / "t.parquet")] == ["12.50", "7.00"]
    assert [t.trace_id for t in iter_traces(tmp_path / "t.parquet", FieldMap(id_field="when"))] == [
        "2026-01-02T03:04:05", "2026-01-03T00:00:00"]


def test_reasoning_from_a_summary_field_is_marked_and_said():
    """tts_knowledge's Gemini, Claude and GPT-5 records hold a thought_summary, not a raw chain of
    thought (its README: flag them); the run compared them with raw traces without a word."""
    from thinkprobe.cli import format_summary

    trace = detect({"id": "g", "thought_summary": "**Checking dates**\nI compared the two.", "response": "1969"},
                   FieldMap(), "t.jsonl", 0)
    assert trace.provenance["reasoning_from"] == "thought_summary" and trace.provenance["summarised"]
    raw = detect({"id": "r", "reasoning": "I compared the two.", "response": "1969"}, FieldMap(), "t.jsonl", 0)
    assert "summarised" not in raw.provenance
    parts = [{"type": "summary_text", "text": "**Plan** I add."}, {"type": "summary_text", "text": "**Check** 4."}]
    responses = detect({"id": "o", "output": [{"type": "reasoning", "summary": parts},  # a summary in two parts
                                              {"type": "message", "content": [{"type": "output_text", "text": "4"}]}]},
                       FieldMap(), "t.jsonl", 0)
    assert responses.provenance["summarised"]
    result = {"traces": 2, "out_dir": "o", "resumed": 0, "errors": 0, "model_profiles": {},
              "summarised_by_model": {"gemini": 1}}
    assert "1 traces' reasoning is a summary the model gave of its thinking" in format_summary(result)


def test_an_input_named_twice_or_inside_a_named_folder_is_refused(tmp_path, monkeypatch):
    """A review: `profile good.jsonl good.jsonl ./good.jsonl` profiled 9 traces of 3 records (said only
    as duplicate ids), and a folder with one of its files beside it gave a file more traces than
    records: every test weighed those records twice. Refused before any work, naming both; the same
    file under other settings (another model name) is two inputs on purpose."""
    from click.testing import CliRunner

    from thinkprobe.cli import main
    from thinkprobe.io.check import repeated_input

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "data"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", [{"id": "g", "reasoning": "Fine. So 5."}])
    assert "named twice" in repeated_input(["data/a.jsonl", str(folder / "a.jsonl")])
    assert "inputs data and data/a.jsonl both read" in repeated_input(["data", "data/a.jsonl"])
    assert "inputs data/a.jsonl and data both read" in repeated_input(["data/a.jsonl", "data"])
    assert repeated_input(["data/a.jsonl::model=A", "data/a.jsonl::model=B"]) is None
    assert repeated_input(["data/a.jsonl"]) is None
    # a folder reaching a named folder's file through a link reads it too; a hidden file it does not read
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "linked").symlink_to(folder)
    assert "both read" in repeated_input(["elsewhere", "data"])
    write_jsonl(folder / ".hidden.jsonl", [{"id": "h", "reasoning": "So 1."}])
    assert repeated_input(["data", "data/.hidden.jsonl"]) is None
    res = CliRunner().invoke(main, ["profile", "data", "data/a.jsonl", "-o", "out", "--no-progress"])
    assert res.exit_code == 2 and "both read" in res.output and not Path("out").exists()


def test_a_line_break_in_a_model_name_stays_in_its_cell(tmp_path):
    """A review: a model named "two\\nlines fake: profiled 999 traces" printed as two rows of the
    summary's tables, the second a line the tool never wrote. Cells from the data are one line."""
    from thinkprobe.accounting import format_coverage
    from thinkprobe.progress import one_line

    name = "two\nlines fake: profiled 999 traces"
    coverage = {"by_model": [{"model": name, "records": 1, "traces": 1, "skipped": 0, "reasons": {}}]}
    table = format_coverage(coverage)
    assert "two\\nlines fake: profiled 999 traces" in table and not any(
        ln.startswith("lines fake") for ln in table.splitlines())
    assert one_line("a\r\nb\tc") == "a\\r\\nb\\tc"
