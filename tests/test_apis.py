"""Provider responses and harness samples as saved by people, each written to its documented schema
(thinkprobe.io.apis, thinkprobe.io.blocks): a fresh-eyes trial found Anthropic batch results all
skipped as failed OpenAI requests, lm-eval generations profiled once per filter, repeats and extra
choices dropped, cited answers cut to their first block, hidden reasoning profiled from the answer,
and outputs cut at a token limit never marked. The texts are our own."""
from __future__ import annotations

import json

import pytest

from thinkprobe.io import FieldMap, detect, iter_traces
from thinkprobe.io.guess import HIDDEN_REASONING
from thinkprobe.records import InputError, Trace

THOUGHT = "First, 12 plus 30 is 42. Let me check: 30 plus 12 is also 42. So the sum is 42."
OTHER = "The capital question: many guess Sydney, but the seat of government is Canberra."


def read(tmp_path, records, name="f.jsonl") -> tuple[list[Trace], list[InputError]]:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    items = list(iter_traces(path))
    return [t for t in items if isinstance(t, Trace)], [e for e in items if isinstance(e, InputError)]


def one(record: dict) -> Trace:
    return detect(record, FieldMap(), "mem.jsonl", "line 1")


def message(thinking: str, *texts: str, model="claude-x", **extra) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "thinking", "thinking": thinking, "signature": "c2ln"},
                        *({"type": "text", "text": t} for t in texts)], "stop_reason": "end_turn", **extra}


def test_anthropic_batch_results_are_read_and_failed_requests_named(tmp_path):
    records = [{"custom_id": "q-1", "result": {"type": "succeeded", "message": message(THOUGHT, "42")}},
               {"custom_id": "q-2", "result": {"type": "errored", "error": {"type": "error", "error": {
                   "type": "invalid_request_error", "message": "max_tokens too large"}}}},
               {"custom_id": "q-3", "result": {"type": "expired"}}]
    traces, errors = read(tmp_path, records)
    assert [(t.trace_id, t.model, t.answer.content) for t in traces] == [("q-1", "claude-x", "42")]
    assert traces[0].reasoning.content == THOUGHT and traces[0].provenance["layout"] == "anthropic_batch"
    assert [e.reason for e in errors] == ["batch request errored: max_tokens too large",
                                          "batch request expired"]


def test_openai_batch_names_a_refused_request_and_reads_every_choice(tmp_path):
    refused = {"custom_id": "r-1", "response": {"status_code": 400, "body": {"error": {"message": "Invalid 'n'"}}},
               "error": None}
    body = {"id": "c1", "model": "m", "choices": [
        {"index": k, "message": {"role": "assistant", "reasoning_content": text, "content": answer}, "finish_reason": "stop"}
        for k, (text, answer) in enumerate([(THOUGHT, "42"), (OTHER, "Canberra")])]}
    traces, errors = read(tmp_path, [refused, {"custom_id": "r-2", "response": {"status_code": 200, "body": body}}])
    assert [e.reason for e in errors] == ["batch request failed: status 400: Invalid 'n'"]
    assert [(t.trace_id, t.answer.content) for t in traces] == [("r-2:g0", "42"), ("r-2:g1", "Canberra")]
    assert traces[1].provenance["reasoning_from"] == "choices[1].message.reasoning_content"


def test_lm_eval_filters_profile_a_generation_once_and_repeats_each(tmp_path):
    """lm-eval writes each generation once per filter of its task, with that filter's grade; with
    `repeats` a request holds several generations, graded together (maj@k)."""
    gen = f"<think>\n{THOUGHT}\n</think>\nThe sum is 42. #### 42"
    base = {"doc": {"question": "What is 12 + 30?"}, "target": "42", "arguments": {}, "metrics": ["exact_match"]}
    records = [{**base, "doc_id": d, "resps": [[gen]], "filtered_resps": [r], "filter": f, "exact_match": g}
               for f, r, g in (("strict-match", "[invalid]", 0.0), ("flexible-extract", "42", 1.0)) for d in (0, 1)]
    traces, errors = read(tmp_path, records)
    assert [(t.trace_id, t.correct) for t in traces] == [("0", False), ("1", False)]  # the first filter's grade
    assert [e.reason for e in errors] == [f"a generation lm-eval wrote again under another filter: doc {d} under "
                                          "'flexible-extract', profiled once under the first filter it came with, "
                                          "'strict-match'" for d in (0, 1)]
    from thinkprobe.accounting import reason_kind
    assert {reason_kind(e.reason) for e in errors} == {"a generation lm-eval wrote again under another filter"}
    repeats = [{**base, "doc_id": 7, "resps": [[gen, f"<think>\n{OTHER}\n</think>\n41"]], "filtered_resps": ["42"],
                "filter": "maj@2", "exact_match": 1.0}]
    traces, errors = read(tmp_path, repeats, "r.jsonl")
    assert not errors and [t.trace_id for t in traces] == ["7:g0", "7:g1"]
    assert [t.correct for t in traces] == [None, None] and traces[1].answer.content == "41"


def test_an_answer_in_several_text_blocks_is_read_whole():
    cited = {"content": [{"type": "thinking", "thinking": THOUGHT, "signature": "c2ln"},
                         {"type": "text", "text": "The sum is "},
                         {"type": "text", "text": "42", "citations": [{"type": "char_location", "cited_text": "42"}]},
                         {"type": "text", "text": "."}]}
    trace = one(cited)
    assert trace.answer.content == "The sum is 42." and trace.answer.field == "content[1,2,3].text"
    responses = {"output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": THOUGHT}]},
                            {"type": "message", "content": [{"type": "output_text", "text": "The sum "},
                                                            {"type": "output_text", "text": "is 42."}]}]}
    assert one(responses).answer.content == "The sum is 42."


def test_reasoning_the_api_counted_but_did_not_return_is_no_reasoning():
    chat = {"model": "o-mini", "choices": [{"message": {"role": "assistant", "content": "42"}, "finish_reason": "stop"}],
            "usage": {"completion_tokens": 90, "completion_tokens_details": {"reasoning_tokens": 64}}}
    with pytest.raises(InputError) as err:
        one(chat)
    assert err.value.reason.startswith(HIDDEN_REASONING) and "counts 64 reasoning tokens" in err.value.reason
    assert err.value.field == "choices[0].message.content"
    chat["usage"]["completion_tokens_details"]["reasoning_tokens"] = 0  # a model that did not think: its text
    assert one(chat).provenance["untagged"] is True
    responses = {"object": "response", "reasoning": {"effort": "low", "summary": None},
                 "output": [{"type": "message", "content": [{"type": "output_text", "text": "42"}]}],
                 "usage": {"output_tokens_details": {"reasoning_tokens": 128}}}
    with pytest.raises(InputError) as err:
        one(responses)
    assert err.value.reason.startswith(HIDDEN_REASONING)
    # a Responses object's `reasoning` settings are no reasoning text; its encrypted item says so
    responses["output"].insert(0, {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"})
    with pytest.raises(InputError) as err:
        one(responses)
    assert "encrypted" in err.value.reason


@pytest.mark.parametrize("record, by", [
    ({"choices": [{"message": {"reasoning_content": THOUGHT, "content": None}, "finish_reason": "length"}]},
     "choices[0].finish_reason=length"),
    ({**message(THOUGHT), "stop_reason": "max_tokens"}, "stop_reason=max_tokens"),
    ({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
      "output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": THOUGHT}]}]},
     "incomplete_details.reason=max_output_tokens"),
])
def test_an_output_the_api_stopped_at_its_token_limit_is_truncated(record, by):
    trace = one(record)
    assert trace.provenance["truncated"] is True and trace.provenance["truncated_by"] == by
    assert one(message(THOUGHT, "42")).provenance["truncated"] is False


def test_omitted_redacted_or_chunked_thinking_and_openrouter_details():
    omitted = message("", "42")  # Anthropic's display "omitted": an empty, signed thinking block
    with pytest.raises(InputError) as err:
        one(omitted)
    assert "encrypted" in err.value.reason
    magistral = {"choices": [{"message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": [{"type": "text", "text": THOUGHT}]}, {"type": "text", "text": "42"}]}}]}
    trace = one(magistral)
    assert trace.reasoning.content == THOUGHT and trace.answer.content == "42"
    summary = {"choices": [{"message": {"role": "assistant", "content": "Canberra", "reasoning": None, "reasoning_details": [
        {"type": "reasoning.summary", "summary": OTHER, "format": "openai-responses-v1"}]}}]}
    trace = one(summary)
    assert trace.reasoning.content == OTHER and trace.provenance["summarised"] is True
    encrypted = {"choices": [{"message": {"role": "assistant", "content": "Canberra", "reasoning": None,
                                          "reasoning_details": [{"type": "reasoning.encrypted", "data": "gAAA"}]}}]}
    with pytest.raises(InputError) as err:
        one(encrypted)
    assert "encrypted" in err.value.reason


def test_gemini_responses_and_batch_lines(tmp_path):
    def response(parts, rid, thoughts=50):
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
                "usageMetadata": {"thoughtsTokenCount": thoughts}, "modelVersion": "gemini-x", "responseId": rid}
    shown = response([{"text": THOUGHT, "thought": True}, {"text": "42"}], "g-1")
    hidden = response([{"text": "Canberra"}], "g-2")
    plain = response([{"text": "Canberra"}], "g-3", thoughts=0)
    traces, errors = read(tmp_path, [shown, hidden, plain, {"key": "k-1", "response": shown}])
    assert [(t.trace_id, t.model) for t in traces] == [("g-1", "gemini-x"), ("g-3", "gemini-x"), ("k-1", "gemini-x")]
    assert traces[0].reasoning.content == THOUGHT and traces[0].answer.content == "42"
    assert traces[0].provenance["summarised"] is True and traces[1].provenance["untagged"] is True
    assert len(errors) == 1 and errors[0].reason.startswith(HIDDEN_REASONING) and "includeThoughts" in errors[0].reason
    assert errors[0].model == "gemini-x"  # counted under its model


def test_vllm_offline_outputs_are_one_trace_each(tmp_path):
    record = {"request_id": "5", "prompt": "What is 12 + 30?", "outputs": [
        {"index": 0, "text": f"{THOUGHT}\n</think>\n\n42", "finish_reason": "stop"},
        {"index": 1, "text": f"{OTHER}", "finish_reason": "length"}]}
    traces, errors = read(tmp_path, [record])
    assert not errors and [t.trace_id for t in traces] == ["5:g0", "5:g1"]
    assert traces[0].answer.content == "42" and traces[1].provenance["truncated"] is True
    assert traces[0].question == "What is 12 + 30?"


def test_claude_4_thinking_is_marked_a_summary_and_3_7_is_not():
    """Anthropic: Claude 4 and later return a summary of their thinking; Claude 3.7 Sonnet the whole of it."""
    assert one(message(THOUGHT, "42", model="claude-sonnet-4-5-20250929")).provenance.get("summarised") is True
    assert one(message(THOUGHT, "42", model="claude-opus-4-1")).provenance.get("summarised") is True
    assert "summarised" not in one(message(THOUGHT, "42", model="claude-3-7-sonnet-20250219")).provenance
    # a Claude 4 answer written in tags by a user's template is no API thinking: not marked
    assert "summarised" not in one({"model": "claude-sonnet-4", "response": f"<think>{THOUGHT}</think>42"}).provenance


def chunk(rid, delta=None, stop=None, index=0, **extra) -> dict:
    return {"id": rid, "object": "chat.completion.chunk", "created": 1, "model": "m", **extra,
            "choices": [{"index": index, "delta": delta or {}, "finish_reason": stop}]}


def test_a_cut_off_stream_or_a_chunk_without_an_id_says_it_is_a_piece_of_a_response(tmp_path):
    chunks = [chunk("s1", {"reasoning_content": piece}) for piece in ("First, ", "12 + 30")]
    traces, errors = read(tmp_path, [*chunks, {**chunk(None, {"content": "x"}, "stop")}])
    assert not traces and [(e.record, e.trace_id, e.model) for e in errors] == [("line 1", "s1", "m"), ("line 3", None, "m")]
    assert errors[0].reason == ("a streamed response cut off (2 chunks, line 1 to line 2): no chunk gives a "
                                "finish_reason, so it is not a whole response")
    assert errors[1].reason.startswith("a streamed chunk without an id: one piece of a response")


def test_saved_stream_chunks_are_joined_into_one_trace_per_response(tmp_path):
    """Each chunk of a saved stream had been skipped as a piece of a response."""
    one_stream = [chunk("s1", {"role": "assistant", "content": None, "reasoning_content": ""}),
                  *(chunk("s1", {"reasoning_content": p}) for p in ("First, 12 plus 30 ", "is 42.")),
                  *(chunk("s1", {"content": p}) for p in ("The sum ", "is 42.")), chunk("s1", {}, "stop")]
    vllm = [chunk("s2", {"reasoning": "Canberra, "}), chunk("s2", {"reasoning": "not Sydney."}),
            chunk("s2", {"content": "Canberra"}), chunk("s2", {}, "length"),
            {"id": "s2", "object": "chat.completion.chunk", "model": "m", "choices": [], "usage": {"completion_tokens": 9}}]
    two = [chunk("s3", {"reasoning_content": f"Think {k}."}, index=k) for k in (0, 1)] + [
        chunk("s3", {"content": f"Answer {k}"}, "stop", index=k) for k in (0, 1)]
    plain = {"id": "p1", "reasoning_content": OTHER, "content": "Canberra"}
    traces, errors = read(tmp_path, [*one_stream, *vllm, plain, *two])
    assert not errors
    got = [(t.trace_id, t.record, t.model, t.reasoning.content, t.answer.content, t.provenance.get("truncated_by"),
            t.provenance.get("layout")) for t in traces]
    assert got == [("s1", 0, "m", "First, 12 plus 30 is 42.", "The sum is 42.", None, "stream_chunks"),
                   ("s2", 6, "m", "Canberra, not Sydney.", "Canberra", "choices[0].finish_reason=length", "stream_chunks"),
                   ("p1", 11, "unknown", OTHER, "Canberra", None, None),  # another record ends the stream before it
                   ("s3:g0", 12, "m", "Think 0.", "Answer 0", None, "stream_chunks"),
                   ("s3:g1", 12, "m", "Think 1.", "Answer 1", None, "stream_chunks")]
    assert traces[0].provenance["reasoning_from"] == "choices[0].delta.reasoning_content"
    assert traces[4].provenance["reasoning_from"] == "choices[1].delta.reasoning_content"
    # in memory, as in a file
    from thinkprobe.io import iter_inputs
    from thinkprobe.io.sources import Source

    items = list(iter_inputs([Source("<memory>", FieldMap(), one_stream)]))
    assert [(t.trace_id, t.answer.content) for t in items] == [("s1", "The sum is 42.")]


def test_ollama_chat_and_generate_responses():
    chat = {"model": "qwen3:8b", "created_at": "2025-06-01T00:00:00Z", "done": True, "done_reason": "stop",
            "message": {"role": "assistant", "content": "42", "thinking": THOUGHT}}
    trace = one(chat)
    assert (trace.model, trace.reasoning.content, trace.answer.content) == ("qwen3:8b", THOUGHT, "42")
    assert trace.provenance["reasoning_from"] == "message.thinking" and trace.provenance["truncated"] is False
    cut = one({**chat, "done_reason": "length"})
    assert cut.provenance["truncated_by"] == "done_reason=length"
    generate = {"model": "qwen3:8b", "response": "42", "thinking": THOUGHT, "done": True}
    assert one(generate).answer.content == "42"


# ----------------------------------------------------------------------------- a review's cases


def test_lm_eval_repeats_keep_their_own_text_and_the_users_fields(tmp_path):
    """A repeat cut off before its closing tag had been given repeat 0's text (the record kept `resps`,
    whose tagged first text won), and a repeat lost the model and task the user had added."""
    record = {"doc_id": 3, "doc": {}, "target": "3", "arguments": {}, "filter": "none", "metrics": ["exact_match"],
              "exact_match": 1.0, "model": "qwen-x", "task": "algebra", "filtered_resps": ["3"],
              "resps": [[f"<think>{THOUGHT}</think> 3", "Okay, so 2x = 6, which gives x equals", None]]}
    traces, errors = read(tmp_path, [record])
    assert [t.trace_id for t in traces] == ["3:g0", "3:g1"] and len(errors) == 1  # the null repeat: named
    assert traces[1].reasoning.content.startswith("Okay, so 2x = 6") and traces[1].provenance["reasoning_from"] == "resps[0][1]"
    assert {(t.model, t.domain, t.correct) for t in traces} == {("qwen-x", "algebra", None)}


def test_lm_eval_two_tasks_in_one_file_are_not_taken_for_one_filtered_twice(tmp_path):
    a = {"doc_id": 0, "doc": {}, "filter": "none", "resps": [["<think>A task.</think> 1"]], "filtered_resps": ["1"]}
    b = {"doc_id": 0, "doc": {}, "filter": "strict-match", "resps": [["<think>B task.</think> 2"]], "filtered_resps": ["2"]}
    odd = {"doc_id": {"not": "hashable"}, "doc": {}, "filter": "x", "resps": [["<think>C.</think> 3"]], "filtered_resps": []}
    traces, errors = read(tmp_path, [a, b, odd])
    assert not errors and [t.answer.content for t in traces] == ["1", "2", "3"]


def test_several_generations_of_a_record_without_an_id_or_with_a_named_id_field(tmp_path):
    from thinkprobe.io import iter_inputs

    choice = {"message": {"role": "assistant", "reasoning_content": THOUGHT, "content": "42"}}
    records = [{"question_id": "q1", "id": "c1", "choices": [choice, choice]}, {"choices": [choice, choice]}]
    path = tmp_path / "noid.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert [t.trace_id for t in iter_inputs([str(path)])] == ["c1:g0", "c1:g1", "noid:1:g0", "noid:1:g1"]
    named = [t.trace_id for t in iter_inputs([str(path)], FieldMap(id_field="question_id"))]
    assert named[:2] == ["q1:g0", "q1:g1"]


def test_gemini_candidates_without_text_and_blocked_prompts_are_named(tmp_path):
    good = {"content": {"role": "model", "parts": [{"text": THOUGHT, "thought": True}, {"text": "42"}]},
            "finishReason": "STOP"}
    two = {"candidates": [good, {"finishReason": "SAFETY"}], "modelVersion": "gemini-x", "responseId": "r1"}
    budget = {"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}],
              "usageMetadata": {"thoughtsTokenCount": 1021}, "modelVersion": "gemini-x", "responseId": "r2"}
    blocked = {"promptFeedback": {"blockReason": "OTHER"}, "usageMetadata": {"promptTokenCount": 5},
               "modelVersion": "gemini-x"}
    snake = {"candidates": [{"content": {"role": "model", "parts": [{"text": THOUGHT, "thought": True},
                                                                    {"text": OTHER, "thought": True}, {"text": "42"}]},
                             "finish_reason": "STOP"}], "model_version": "gemini-y", "response_id": "r3"}
    traces, errors = read(tmp_path, [two, budget, blocked, snake])
    assert [t.trace_id for t in traces] == ["r1:g0", "r3"]
    assert [e.reason for e in errors] == [
        "the candidate holds no text (finishReason SAFETY)",
        "the candidate holds no text (finishReason MAX_TOKENS); its thinking took the whole output budget "
        "(1,021 thinking tokens, none returned)", "the prompt was blocked (OTHER): the response has no output"]
    assert {e.model for e in errors} == {"gemini-x"}
    snaked = traces[1]
    assert snaked.model == "gemini-y" and snaked.provenance["model_from"] == "model_version"
    assert snaked.provenance["joined"]["parts"] == 2 and snaked.provenance["summarised"] is True
    assert snaked.reasoning.content == f"{THOUGHT}\n\n{OTHER}" and snaked.answer.content == "42"


def test_provenance_names_the_choice_and_the_parts_read(tmp_path):
    def magistral(text):
        return {"message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": text}]}, {"type": "text", "text": "4"},
            {"type": "text", "text": "2"}]}}
    traces, _ = read(tmp_path, [{"id": "m", "choices": [magistral(THOUGHT), magistral(OTHER)]}])
    assert traces[1].provenance["reasoning_from"] == "choices[1].message.content[0].thinking[0].text"
    assert traces[1].provenance["answer_from"] == "choices[1].message.content[1,2].text" and traces[1].answer.content == "42"
    hidden = {"id": "h", "usage": {"completion_tokens_details": {"reasoning_tokens": 9}},
              "choices": [{"message": {"role": "assistant", "content": "4"}}] * 2}
    _, errors = read(tmp_path, [hidden], "h.jsonl")
    assert [e.field for e in errors] == ["choices[0].message.content", "choices[1].message.content"]
    responses = {"output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": THOUGHT}]},
                            {"type": "message", "content": [{"type": "output_text", "text": "4"},
                                                            {"type": "output_text", "text": "2"}]}]}
    assert one(responses).provenance["answer_from"] == "output[1].content[0,1].text"


def test_a_token_limit_stop_after_the_reasoning_ended_cuts_the_answer_only():
    whole = {"choices": [{"message": {"reasoning_content": THOUGHT, "content": "The sum is"}, "finish_reason": "length"}]}
    trace = one(whole)
    assert trace.provenance["truncated"] is False and trace.provenance["truncated_by"] == "choices[0].finish_reason=length"
    assert one({"model": "anthropic/claude-sonnet-4.5", "reasoning_content": THOUGHT, "content": "42"}).provenance["summarised"]


def test_odd_batch_lines_and_in_memory_records_take_the_same_layouts(tmp_path):
    import thinkprobe

    records = [{"custom_id": None, "result": {"type": "succeeded", "message": message(THOUGHT, "42")}},
               {"custom_id": "x", "result": {"type": "succeeded", "message": None}}]
    traces, errors = read(tmp_path, records, "b.jsonl")
    assert traces[0].trace_id == "msg_1" and traces[0].provenance["reasoning_from"] == "result.message.content[0].thinking"
    assert [e.reason for e in errors] == ["batch request succeeded but its result holds no message"]
    run = thinkprobe.profile([records[0], {"custom_id": "q", "result": {"type": "expired"}}], tmp_path / "mem",
                             device="cpu", linker="cue", types="cue", progress=False, report=False)
    assert run.summary["traces"] == 1 and run.summary["errors"] == 1
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf\xef\xbb\xbf" + json.dumps(message(THOUGHT, "42")).encode() + b"\n")
    assert len(list(iter_traces(tmp_path / "bom.jsonl"))) == 1 and isinstance(next(iter_traces(tmp_path / "bom.jsonl")), Trace)


def test_older_lm_eval_files_without_metrics_or_filter_names(tmp_path):
    """lm-eval up to 0.4.2 (and forks) write the metric values at the top level with no `metrics` list
    and no `filter`: every repeat had carried the score of all repeats, and a generation written once per
    filter had been profiled twice with opposite grades (a review)."""
    gen = f"<think>{THOUGHT}</think> The answer is 42"
    repeats = {"doc_id": 0, "doc": {"question": "12 + 30?"}, "target": "42", "arguments": [], "model": "m",
               "resps": [[gen, "<think>Guess.</think> The answer is 41"]], "filtered_resps": ["42"], "exact_match": 0.0}
    traces, errors = read(tmp_path, [repeats])
    assert not errors and [(t.trace_id, t.correct) for t in traces] == [("0:g0", None), ("0:g1", None)]
    twice = [{"doc_id": 1, "doc": {}, "target": "42", "resps": [[gen]], "filtered_resps": [r], "exact_match": g}
             for r, g in (("[invalid]", 0.0), ("42", 1.0))]
    traces, errors = read(tmp_path, twice, "t.jsonl")
    assert [(t.trace_id, t.correct) for t in traces] == [("1", False)]
    assert [e.reason for e in errors] == ["a generation lm-eval wrote again under another filter: doc 1 (this record "
                                          "names no filter), profiled once under its first record (which names no "
                                          "filter), with that record's grade"]
    other_task = [{**twice[0], "doc": {"question": "Another task's question"}}]  # the same doc_id and text
    traces, errors = read(tmp_path, twice[:1] + other_task, "u.jsonl")
    assert len(traces) == 2 and not errors


def test_an_answer_cut_at_the_token_limit_states_nothing_and_is_counted(tmp_path):
    """The reasoning ended and the API stopped the answer at its token limit ("The answer is 3" of 30):
    the cut unit is no final answer, the trace is not "cut before its reasoning ends", and the summary
    counts it (a review: it had been graded as the answer, without a word)."""
    import thinkprobe
    from thinkprobe.cli import format_summary

    cut = {"id": "c1", "model": "m", "question": "What is 12 + 30?", "answer": "42",
           "choices": [{"message": {"reasoning_content": THOUGHT, "content": "Adding them. The answer is 4"},
                        "finish_reason": "length"}]}
    whole = {**cut, "id": "c2", "choices": [{"message": {"reasoning_content": THOUGHT, "content": "The answer is 42"},
                                             "finish_reason": "stop"}]}
    run = thinkprobe.profile([cut, whole], tmp_path / "o", device="cpu", linker="cue", types="cue", progress=False,
                             report=False)
    red = {g["trace_id"]: g["redundancy"] for g in run.graphs}
    assert red["c1"]["final_answer"] is None or red["c1"]["final_answer"]["value"] != "4"
    assert red["c2"]["final_answer"]["value"] == "42"
    assert run.summary["answer_cut_by_model"] == {"m": 1} and not run.summary["truncated_by_model"]
    assert "1 traces' answers stop at the API's token limit" in format_summary(run.summary)


def test_an_answer_field_that_mentions_a_reasoning_tag_is_kept_whole():
    """A review: with the reasoning in its own field, an answer mentioning "<thinking> tags" lost all of
    itself, and one with <think> inside a code block kept only what followed the closing tag. An answer
    field that repeats the reasoning in tags still keeps only what follows them."""
    for answer in ("Ask it to reason inside <thinking> tags before answering. And 2+3: the answer is 5.",
                   "```jsx\nconst A = () => <think>{busy}</think>;\n```\nThe answer is 5."):
        trace = one({"reasoning_content": THOUGHT, "content": answer})
        assert trace.answer.content == answer
    for repeated in (f"<think>{THOUGHT}</think>\n42", f"[THINK]{THOUGHT}[/THINK]42", f"{THOUGHT}</think>42"):
        assert one({"reasoning_content": THOUGHT, "content": repeated}).answer.content == "42", repeated


def test_peek_says_where_an_api_stopped_a_trace(tmp_path):
    from thinkprobe.io import format_peek, peek

    records = [{"id": "c1", "choices": [{"message": {"reasoning_content": THOUGHT, "content": "The sum is"},
                                         "finish_reason": "length"}]},
               {"id": "c2", "choices": [{"message": {"reasoning_content": THOUGHT, "content": None},
                                         "finish_reason": "length"}]}]
    path = tmp_path / "cut.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    rows = peek(str(path))
    assert [(r["truncated"], r["truncated_by"]) for r in rows] == [
        (False, "choices[0].finish_reason=length"), (True, "choices[0].finish_reason=length")]
    shown = format_peek(rows)
    assert "[cut]" in shown.splitlines()[2] and "[truncat" in shown.splitlines()[3]


def test_a_skipped_record_keeps_the_id_its_layout_gave_it(tmp_path):
    """errors.jsonl's trace_id was null for every skip, even where the layout knew the request's id."""
    import pickle

    from thinkprobe.runner import finish_line

    records = [{"custom_id": "oa-1", "response": {"status_code": 500, "body": {"error": {"message": "boom"}}}},
               {"custom_id": "oa-2", "response": {"status_code": 200, "body": {
                   "id": "c", "model": "m", "choices": [{"message": {"role": "assistant", "content": ""}}]}}},
               {"responseId": "gem-1", "candidates": [{"finishReason": "MAX_TOKENS", "content": {"parts": []}}]},
               {"responseId": "gem-2", "candidates": [{"finishReason": "SAFETY"}, {"finishReason": "SAFETY"}]},
               {"key": "gk-1", "response": {"responseId": "r", "candidates": [],
                                            "promptFeedback": {"blockReason": "SAFETY"}}},
               {"custom_id": "an-1", "result": {"type": "errored", "error": {"error": {"message": "overloaded"}}}},
               {"custom_id": "an-2", "result": {"type": "succeeded", "message": message("")}},
               {"id": "plain-1", "reasoning_content": ""},
               {"reasoning_content": ""}]  # no id: none made up
    traces, errors = read(tmp_path, records)
    assert not traces
    ids = ["oa-1", "oa-2", "gem-1", "gem-2:g0", "gem-2:g1", "gk-1", "an-1", "an-2", "plain-1", None]
    assert [e.trace_id for e in errors] == ids
    assert [json.loads(finish_line(e, e.trace_id, None, None))["error"]["trace_id"] for e in errors] == ids
    assert pickle.loads(pickle.dumps(errors[0])).trace_id == "oa-1"  # to a worker and back (--workers)


def completion(reasoning: str, *answers: str, finish="stop", **extra) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "deepseek-r1", **extra, "choices": [
        {"index": k, "message": {"role": "assistant", "reasoning_content": reasoning, "content": a}, "finish_reason": finish}
        for k, a in enumerate(answers)]}


def test_a_provider_response_kept_under_a_key_is_read_as_if_alone(tmp_path):
    """{"id", "model", "response": <chat completion or Message>} gave only 'expected text, found object'."""
    records = [{"id": "q1", "model": "x", "question": "2+2?", "response": completion(THOUGHT, "42")},
               {"id": "q2", "response": message(THOUGHT, "42", model="claude-sonnet-4-5")},
               {"uid": "q3", "output": completion(THOUGHT, "42", "43", finish="length")}]
    traces, errors = read(tmp_path, records)
    assert not errors
    got = [(t.trace_id, t.model, t.question, t.reasoning.content, t.answer.content, t.provenance["reasoning_from"],
            t.answer.field) for t in traces]
    assert got == [("q1", "x", "2+2?", THOUGHT, "42", "response.choices[0].message.reasoning_content",
                    "response.choices[0].message.content"),
                   ("q2", "claude-sonnet-4-5", None, THOUGHT, "42", "response.content[0].thinking", "response.content[1].text"),
                   ("q3:g0", "deepseek-r1", None, THOUGHT, "42", "output.choices[0].message.reasoning_content",
                    "output.choices[0].message.content"),
                   ("q3:g1", "deepseek-r1", None, THOUGHT, "43", "output.choices[1].message.reasoning_content",
                    "output.choices[1].message.content")]
    assert traces[1].provenance["summarised"] and traces[1].provenance["model_from"] == "response.model"
    assert traces[2].provenance["truncated_by"] == "choices[0].finish_reason=length"
    # the outer model named: the response's own still marks Claude 4's thinking a summary
    traces, _ = read(tmp_path, [{"id": "q", "model": "mine", "response": message(THOUGHT, "42", model="claude-opus-4")}])
    assert traces[0].model == "mine" and traces[0].provenance["summarised"]
    # the response's id is an id of last resort; a named field still reads the path into the key
    traces, _ = read(tmp_path, [{"response": completion(THOUGHT, "42")}])
    assert traces[0].trace_id == "chatcmpl-1" and traces[0].provenance["trace_id_from"] == "response.id"
    named = detect({"response": completion(THOUGHT, "42")}, FieldMap(reasoning_field="response.choices[0].message.content"),
                   "f", 0)
    assert named.reasoning.content == "42"


def test_two_provider_responses_in_one_record_are_named_not_guessed(tmp_path):
    record = {"id": "q", "response": completion(THOUGHT, "42"), "output": completion(OTHER, "Canberra")}
    traces, errors = read(tmp_path, [record])  # had read `output` silently
    assert not traces and errors[0].field == "response"
    assert errors[0].reason.startswith("response holds an OpenAI chat completion; output holds an OpenAI chat "
                                       "completion: which is the trace?")
    named = detect(record, FieldMap(reasoning_field="output.choices[0].message.reasoning_content"), "f", 0)
    assert named.reasoning.content == OTHER


def test_one_grade_for_several_choices_is_not_given_to_each(tmp_path):
    """A reviewer's probe: a record of two choices (n = 2) and one `correct` gave that grade to both choices,
    though it may grade either. It is not applied (provenance shared_grade; the matcher grades each choice
    against the gold answer); a grade per generation is, and --correct-field applies the record's to all."""
    choice = {"message": {"role": "assistant", "reasoning_content": THOUGHT, "content": "The sum is 42."}}
    wrong = {"message": {"role": "assistant", "reasoning_content": THOUGHT, "content": "The sum is 41."}}
    record = {"id": "q", "answer": "42", "correct": True, "choices": [choice, wrong]}
    traces, _ = read(tmp_path, [record])
    assert [t.correct for t in traces] == [None, None]
    assert [t.provenance.get("shared_grade") for t in traces] == ["correct=True"] * 2
    assert one({"id": "q", "correct": True, "choices": [choice]}).correct is True  # one choice: its grade
    forced = [detect(record | {"choices": [c], "part": g, "layout": "chat_choices"},
                     FieldMap(correct_field="correct"), "m.jsonl", "line 1") for g, c in enumerate(record["choices"])]
    assert [t.correct for t in forced] == [True, True]
    openr1 = {"uuid": "r", "correct": False, "generations": [f"<think>{THOUGHT}</think>42", f"<think>{OTHER}</think>41"],
              "correctness_math_verify": [True, False]}
    assert [t.correct for t in read(tmp_path, [openr1], "r.jsonl")[0]] == [True, False]  # per generation: read


def test_the_summary_says_why_a_shared_grade_was_not_applied(tmp_path):
    from click.testing import CliRunner

    from thinkprobe.cli import main

    choice = {"message": {"role": "assistant", "reasoning_content": THOUGHT, "content": "The sum is 42."}}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "q", "answer": "42", "correct": True, "choices": [choice, choice]}) + "\n")
    res = CliRunner().invoke(main, ["profile", str(path), "-o", str(tmp_path / "out"), "--device", "cpu", "--no-progress",
                                    "--linker", "cue", "--types", "cue", "--no-cache", "--no-report"])
    assert res.exit_code == 0, res.output
    assert ("2 traces are each one of a record's several choices or generations, and the record holds one grade, "
            "`correct`") in res.output
    grades = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))["grades"]
    assert grades["shared_grades"] == {"correct": 2} and grades["from_matcher"]["correct"] == 2
