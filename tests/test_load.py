"""Tests for thinkprobe.load: formats, reasoning detection, provenance, bad records, peek; real data when present."""
from __future__ import annotations

import gzip
import json
from itertools import islice
from pathlib import Path

import pytest

from thinkprobe.load import FieldMap, detect, format_peek, iter_records, iter_traces, peek
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
    "value, expected",
    [(True, True), (False, False), (1, True), (0, False), ("true", True), ("False", False),
     ("A", True), ("B", False), ("C", False), (None, None), ("maybe", None), (3, None)],
)
def test_correctness_values(value, expected):
    trace = one({"reasoning": "x", "grading": value})
    assert trace.correct is expected
    assert trace.provenance["correct_from"] == ("grading" if expected is not None else None)


@pytest.mark.parametrize(
    "record, gold, gold_from",
    [
        ({"reasoning": "x", "answer": 33}, "33", "answer"),
        ({"reasoning": "x", "metadata": {"correct_answer": "B"}}, "B", "metadata.correct_answer"),
        ({"reasoning": "x", "gold_answer": "7", "correct_answer": "8"}, "8", "correct_answer"),
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
    assert "tried: reasoning_content" in reasons[6] and "object" in reasons[7] and reasons[8] == reasons[9] == "empty reasoning"


def test_empty_dedicated_field_does_not_turn_the_answer_into_reasoning():
    with pytest.raises(InputError) as err:
        one({"thought_summary": "", "response": "The answer is 42."})
    assert (err.value.field, err.value.reason) == ("thought_summary", "empty reasoning")


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
    assert items[0] == ("a.jsonl.gz", "line 1", "InputError")
    assert items[-2:] == [("c.parquet", 0, "InputError"), ("d.jsonl", 0, "Trace")]
    assert ("b.jsonl.gz", 0, "Trace") in items and items[-3][2] == "InputError"


def test_duplicate_ids_get_suffixes(tmp_path):
    records = [{"id": i, "reasoning": "x"} for i in ("a", "a", "b", "a", "a#2")]
    traces = list(iter_traces(write_jsonl(tmp_path / "d.jsonl", records)))
    assert [t.trace_id for t in traces] == ["a", "a#2", "b", "a#3", "a#2#2"]
    assert [t.provenance.get("duplicate_of") for t in traces] == [None, "a", None, "a", "a#2"]


# ----------------------------------------------------------------------------- peek


def test_peek(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [
        {"id": "x", "model": "M", "domain": "math", "response": "Plan.</think>42", "answer": "42", "correct": True},
        {"id": "y", "reasoning": 3},
        {"id": "z", "reasoning": "z"},
    ])
    rows = peek(path, n=2)
    assert len(rows) == 2
    assert rows[0] == {
        "record": "line 1", "trace_id": "x", "trace_id_from": "id", "model": "M", "model_from": "model",
        "domain": "math", "domain_from": "domain", "reasoning_from": "response", "tag": "<think>",
        "open_tag_missing": True, "truncated": False, "answer_from": "response", "reasoning_chars": 5,
        "answer_chars": 2, "gold_from": "answer", "correct_from": "correct", "error": None,
    }
    assert rows[1]["record"] == "line 2" and "reasoning" in rows[1]["error"] and rows[1]["trace_id"] is None
    table = format_peek(rows)
    assert "M <- model" in table and "open_tag_missing" in table and "ERROR" in table
    assert len(table.splitlines()) == 3


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
    assert all(isinstance(t, Trace) for t in traces)
    for t in traces:
        assert t.reasoning.field == "thought" and t.provenance["tag"] == "<think>"
        assert "</think>" not in span(t.reasoning) and span(t.reasoning)
        assert t.answer.field == "response" and not span(t.answer).endswith("<|im_end|>")
        assert t.provenance["correct_from"] == "grading" and t.correct is not None
        assert t.provenance["gold_from"] == "answer" and t.question


@pytest.mark.realdata
def test_tts_knowledge_empty_summaries_are_errors_not_traces(shared_data):
    path = real(shared_data, "tts_knowledge/outputs/gpt-5-mini/gpt-5-mini_simpleqa_low_effort.jsonl.gz")
    items = list(islice(iter_traces(path), 50))
    errors = [i for i in items if isinstance(i, InputError)]
    assert errors and all((e.field, e.reason) == ("thought_summary", "empty reasoning") for e in errors)
    assert any(isinstance(i, Trace) and i.model.startswith("gpt-5-mini") for i in items)


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
        assert t.trace_id.endswith("/base_solution:0")


@pytest.mark.realdata
def test_think_bench_and_venhoff_layouts(shared_data):
    bench = list(islice(iter_traces(real(shared_data, "think_bench_qwen3/qwen3-32b_think_bench.jsonl.gz")), 10))
    assert all(t.reasoning.field == "think_content" and t.answer.field == "prediction" for t in bench)
    assert all(t.provenance["domain_from"] == "category" for t in bench)
    claude = list(iter_traces(real(shared_data, "venhoff_reasoning_comparison/reasoning_comparison_claude-3-7-sonnet.json")))
    assert len(claude) == 300 and all(isinstance(t, Trace) for t in claude)
    assert all(t.reasoning.field == "response" and not t.provenance["truncated"] for t in claude)
    distill = list(iter_traces(real(shared_data, "venhoff_reasoning_comparison/reasoning_comparison_deepseek-qwen-14b.json")))
    assert sum(t.provenance["truncated"] for t in distill if isinstance(t, Trace)) > 100
