"""Real corpora as they come (issue 41, the input side): a record's own grade wins over answer
matching, answers are never profiled as reasoning, nothing is skipped without a word, a rerun
keeps the user's files, abbreviations do not end a unit, empty files and JSON arrays in .jsonl.
The real-data tests read ../shared/data in its native layouts (the `shared_data` fixture)."""
from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from thinkprobe.io import FieldMap, count_records, detect, iter_traces, parse_source, peek
from thinkprobe.io.grades import parse_correct_values, read_grade
from thinkprobe.io.detect import get_path
from thinkprobe.io.limits import InputLimits
from thinkprobe.records import InputError, Trace
from thinkprobe.redundancy import answers_match, redundancy_row


def one(record: dict, fields: FieldMap = FieldMap()) -> Trace:
    return detect(record, fields, "mem.jsonl", "line 1")


# ----------------------------------------------------------------------------- files (item 8)


@pytest.mark.parametrize("content", [b"", b"\n  \n", b"[]", b"[]\n"])
def test_an_empty_file_says_it_is_empty(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    items = list(iter_traces(path))
    assert len(items) == 1 and isinstance(items[0], InputError)
    assert (items[0].record, items[0].reason) == ("file", "empty file: it holds no records")
    assert peek(path)[0]["error"] == "empty file: it holds no records"


@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz"])
def test_a_json_array_saved_as_jsonl_is_read_as_records(tmp_path, name):
    records = [{"id": "t1", "reasoning": "First thought."}, {"id": "t2", "response": "<think>Second.</think>2"}]
    data = json.dumps(records, indent=2).encode()  # pretty-printed: "[" alone on the first line
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    traces = list(iter_traces(tmp_path / name))
    assert [t.trace_id for t in traces] == ["t1", "t2"] and all(isinstance(t, Trace) for t in traces)
    assert count_records(tmp_path / name) == 2  # the progress total counts records, not the array's lines


def test_jsonl_lines_that_are_lists_stay_bad_lines(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('[1, 2]\n{"id": "ok", "reasoning": "x"}\n')
    items = list(iter_traces(path))
    assert isinstance(items[0], InputError) and "list" in items[0].reason and items[1].trace_id == "ok"


# ----------------------------------------------------------------------------- grades (item 1)


def test_correct_values_are_parsed_and_checked():
    assert parse_correct_values("1=correct,2=incorrect,0=ungraded,3=ungraded") == {
        "1": True, "2": False, "0": None, "3": None}
    assert parse_correct_values(None) is None
    with pytest.raises(ValueError, match="correct-values"):
        FieldMap(correct_values="1=right")


@pytest.mark.parametrize("record, fields, expected", [
    # the usual fields
    ({"is_correct": True}, FieldMap(), ("is_correct", True)),
    ({"score": 1.0}, FieldMap(), ("score", True)),
    ({"score": 0.93}, FieldMap(), None),  # a reward score is no grade
    ({"grading": "C"}, FieldMap(), ("grading", None)),  # SimpleQA: not attempted
    # MiP's eval_result codes mean nothing by themselves (0 abstains): read only when mapped
    ({"eval_result": 0}, FieldMap(), None),
    ({"eval_result": 0}, FieldMap(correct_values="1=correct,2=incorrect,0=ungraded,3=ungraded"), ("eval_result", None)),
    ({"eval_result": 2}, FieldMap(correct_field="eval_result", correct_values="1=correct,2=incorrect,0=ungraded"),
     ("eval_result", False)),
    # a value the mapping does not name is not graded
    ({"eval_result": 7}, FieldMap(correct_field="eval_result", correct_values="1=correct"), ("eval_result", None)),
    # --correct-field reads only that field
    ({"correct": True, "verdict": "fail"}, FieldMap(correct_field="verdict"), ("verdict", False)),
    ({"correct": "wrong"}, FieldMap(), ("correct", False)),  # ReasonEval's solution correctness: correct / wrong
    ({"verdict": "right"}, FieldMap(correct_field="verdict"), ("verdict", True)),
])
def test_grade_fields_and_values(record, fields, expected):
    grade = read_grade(record, get_path, fields.correct_field, parse_correct_values(fields.correct_values))
    assert (None if grade is None else (grade.field, grade.verdict)) == expected


def test_a_named_grade_field_with_words_no_default_reads_says_so():
    """--correct-field naming a field of words GRADES does not know: not graded, and the summary says how to
    name their meaning, with a value seen (a trial's `model_output_solution_correctness` before 'wrong' was read)."""
    from thinkprobe.accounting import Accounting, format_coverage

    record = {"question": "Q?", "response": "<think>2 + 2 = 4.</think>4", "verdict": "off-topic"}
    t = one(record, FieldMap(correct_field="verdict"))
    assert t.correct is None and t.provenance["unread_grade"] == "verdict=off-topic"
    mapped = one(record, FieldMap(correct_field="verdict", correct_values="off-topic=ungraded"))
    assert "unread_grade" not in mapped.provenance
    accounting = Accounting()
    accounting.trace({"trace_id": "t", "model": "m", "source": "a.jsonl", "record": 0, "correct": None,
                      "gold_answer": None, "provenance": dict(t.provenance), "redundancy": {"metrics": {}}})
    summary = format_coverage(accounting.coverage(), accounting.grade_summary())
    assert "1 traces carry `verdict` values no default reads (e.g. 'off-topic')" in summary
    assert "--correct-values 'off-topic=incorrect,...'" in summary


def test_traces_counted_wrong_for_stating_no_answer_are_counted_apart():
    """PRM800K's rated prefixes: 12 of 14 'incorrect' GPT-4 traces stated no answer at all, and the summary
    read as an accuracy of 0.48."""
    from thinkprobe.accounting import Accounting, format_coverage

    accounting = Accounting()
    for k, (acc, final) in enumerate([(1, {"value": "40"}), (0, {"value": "41"}), (0, None), (0, None)]):
        accounting.trace({"trace_id": f"t{k}", "model": "m", "source": "a.jsonl", "record": k, "correct": None,
                          "gold_answer": "40", "provenance": {}, "units": [],
                          "redundancy": {"metrics": {"Acc": acc}, "final_answer": final}})
    grades = accounting.grade_summary()
    assert grades["from_matcher"] == {"correct": 1, "incorrect": 3} and grades["matcher_no_answer"] == 2
    assert "4 by matching the answer (3 incorrect, of which 2 because no final answer was found in them: " \
        "unfinished solutions are left ungraded with --unanswered ungraded)" in format_coverage(accounting.coverage(), grades)


def test_unanswered_traces_can_be_left_ungraded(tmp_path):
    """ReasonEval's PRM800K solutions are rated prefixes: 162 of 300 stop before their '# Answer' step and were
    counted incorrect, with no way to leave them out of Acc. --unanswered ungraded does, and says how many."""
    import thinkprobe
    from thinkprobe.cli import format_summary
    from thinkprobe.options import OptionError

    records = [{"id": "done", "question": "What is 6 x 7?", "answer": "42", "model": "m",
                "response": "<think>6 x 7 is 42.</think>The answer is 42."},
               {"id": "prefix", "question": "What is 6 x 8?", "answer": "48", "model": "m",
                "response": "<think>First I split the product into smaller parts.</think>So I double the first part"}]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    plain = thinkprobe.profile([str(tmp_path / "s.jsonl")], tmp_path / "a", **FAST)
    left_out = thinkprobe.profile([str(tmp_path / "s.jsonl")], tmp_path / "b", unanswered="ungraded", **FAST)
    acc = {run: dict(zip(run.redundancy["trace_id"], run.redundancy["Acc"])) for run in (plain, left_out)}
    assert acc[plain] == {"done": 1, "prefix": 0}
    assert acc[left_out]["done"] == 1 and acc[left_out]["prefix"] != acc[left_out]["prefix"]  # empty
    grades = json.loads((left_out.folder / "run.json").read_text(encoding="utf-8"))["grades"]
    assert (grades["matcher_unanswered"], grades["matcher_no_answer"], grades["none"]) == (1, 0, 0)
    assert "1 with no final answer found, left ungraded (--unanswered ungraded)" in format_summary(left_out.summary)
    with pytest.raises(OptionError, match="unanswered"):
        thinkprobe.profile([str(tmp_path / "s.jsonl")], tmp_path / "c", unanswered="wrong", **FAST)
    # a config file's redundancy.unanswered is checked before any work, and the option wins over it
    from thinkprobe.config import ConfigError

    (tmp_path / "bad.yaml").write_text("redundancy:\n  unanswered: skip\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="redundancy.unanswered='skip'"):
        thinkprobe.profile([str(tmp_path / "s.jsonl")], tmp_path / "d", config=str(tmp_path / "bad.yaml"), **FAST)
    assert not (tmp_path / "d" / "graphs.jsonl").exists()


def test_verdicts_against_a_formula_are_counted_apart():
    """THINK-Bench: about a tenth of the golds are formulas or equations ('\\frac{\\lambda_e^n}{n!} e^{-\\lambda l}'),
    which matching as text judges wrong when the model writes them otherwise; the summary said nothing of it
    (a new user's trial). Counted, with how many were judged incorrect; numbers, options and phrases are not."""
    from thinkprobe.accounting import Accounting, format_coverage

    accounting = Accounting()
    golds = [r"\frac{\lambda_{e}^{n}}{n!} e^{-\lambda l}", "2KOH + CuSO4 = K2SO4 + Cu(OH)2", "12", "(B)", "Paris", "#### 7"]
    for k, (gold, acc) in enumerate(zip(golds, (0, 1, 0, 1, 1, 0))):
        accounting.trace({"trace_id": f"t{k}", "model": "m", "source": "a.jsonl", "record": k, "correct": None,
                          "gold_answer": gold, "provenance": {}, "units": [],
                          "redundancy": {"metrics": {"Acc": acc}, "final_answer": {"value": "x"}}})
    grades = accounting.grade_summary()
    assert (grades["matcher_expressions"], grades["matcher_expressions_incorrect"]) == (2, 1)
    assert "2 of the traces graded by matching have a formula or an equation for gold answer (1 judged incorrect)" \
        in format_coverage(accounting.coverage(), grades)


def test_a_file_with_no_trace_profiled_names_the_option_its_records_suggest():
    """ReasonEval's PRM800K file: every record skipped for want of a reasoning field; the fix was only in
    errors.jsonl."""
    from thinkprobe.accounting import Accounting

    accounting = Accounting()
    accounting.trace({"trace_id": "ok", "model": "Abel", "source": "a.jsonl", "record": 0, "correct": None,
                      "gold_answer": None, "provenance": {}, "units": [], "redundancy": {"metrics": {}}})
    for k in range(3):
        accounting.skipped({"file": "b.jsonl", "record": k, "model": "GPT-4", "reason": "no reasoning text found; "
                            "tried: ...; if it holds the reasoning, name it with --reasoning-field 'steps'"})
    warnings = accounting.warnings()
    assert warnings[0].startswith("file b.jsonl: no trace profiled from its 3 records")
    # hedged: the longest field may be no model's output (Schoenfeld's SAT.json `Rationale`: the official solution)
    assert all("if one of their fields holds a model's reasoning, name it: --reasoning-field 'steps'" in w
               for w in warnings) and len(warnings) == 2
    # and for a file beside others that gave traces, that it may hold no model's output at all
    assert warnings[0].endswith("if they are questions or reference solutions rather than a model's output (other "
                                "files gave traces), leave the file out")
    assert warnings[1].startswith("model GPT-4:") and "leave the file out" not in warnings[1]
    # o1's records hold its final answer only: naming that field profiles the answer as reasoning, so the warning
    # does not suggest it (a new user read "the records suggest --reasoning-field 'o1 (insufficient_question)'")
    from thinkprobe.io.guess import ModelOutput

    reason = ModelOutput("o1 (insufficient_question)", "o1", "It cannot be answered.", 640).hidden_reason()
    accounting.skipped({"file": "o1.json", "record": 0, "model": "o1", "reason": reason})
    said = [w for w in accounting.warnings() if w.startswith("file o1.json")]
    assert said and "reasoning not returned 1" in said[0] and "suggest" not in said[0]


def test_a_nan_model_or_domain_is_missing_not_named_nan():
    """A pandas frame's missing cell (or JSON's NaN) grouped traces under a model 'nan' and a domain 'inf'."""
    t = one({"response": "<think>So 4.</think>4", "model": float("nan"), "domain": float("inf"), "id": float("nan")})
    assert (t.model, t.domain) == ("unknown", "unknown") and not t.trace_id.startswith("nan")


def test_correct_values_per_input_keep_their_commas():
    src = parse_source("a.json::correct-field=eval_result,correct-values=1=correct,2=incorrect,model=Q")
    assert (src.fields.correct_field, src.fields.correct_values, src.fields.model) == (
        "eval_result", "1=correct,2=incorrect", "Q")


def _graph(answer: str, gold: str | None, trace: Trace) -> dict:
    units = [{"id": 0, "section": "reasoning", "start": 0, "end": 5, "text": "Think.", "type": "RSN", "segment": 0,
              "cues": [], "tokens": 1},
             {"id": 1, "section": "answer", "start": 0, "end": len(answer), "text": answer, "type": "CON",
              "segment": 0, "cues": [], "tokens": 3}]
    return {"trace_id": "t", "model": "m", "domain": "d", "question": "When?", "gold_answer": gold,
            "correct": trace.correct, "provenance": dict(trace.provenance), "units": units,
            "edges": [{"src": 0, "dst": 1, "type": "inference", "polarity": None, "score": 1.0}]}


@pytest.mark.parametrize("grading, acc", [("A", 1), ("B", 0), ("C", None)])
def test_the_records_grade_wins_over_answer_matching(grading, acc):
    # tts_knowledge: "Mallorca" graded A against the gold "Majorca" (a spelling no matching rule knows)
    trace = one({"thought": "<think>x</think>", "response": "The answer is Mallorca.", "answer": "Majorca",
                 "grading": grading})
    assert not answers_match("Mallorca", "Majorca")  # the matcher alone would say incorrect
    row, extra = redundancy_row(_graph("The answer is Mallorca.", "Majorca", trace))
    assert row["Acc"] == acc and extra["final_correct"] == (None if acc is None else bool(acc))


def test_without_a_grade_the_answer_is_matched():
    trace = one({"thought": "<think>x</think>", "response": "The answer is 843.", "answer": "843"})
    assert trace.provenance["correct_from"] is None
    row, _ = redundancy_row(_graph("The answer is 843.", "843", trace))
    assert row["Acc"] == 1


# ----------------------------------------------------------------------------- reasoning, never answers (item 2)


def test_s1_think_and_answer_markers_split_reasoning_from_answer():
    bare = one({"model_answer": "think\nLet me add 2 and 3.\nSo 5.\nanswer\nAnswer: 5"})
    raw = one({"model_answer": "<|im_start|>think\nLet me add.<|im_start|>answer\nAnswer: 5<|im_end|>"})
    for trace, tag in ((bare, "think"), (raw, "<|im_start|>think")):
        assert trace.provenance["tag"] == tag and not trace.provenance["untagged"]
        assert "answer" not in trace.reasoning.content.lower().split() and trace.answer.content == "Answer: 5"
    # "think" is a marker only as the whole first line
    assert one({"model_answer": "thinking about it\nanswer\nyes"}).provenance["tag"] is None


def test_reasoning_the_answer_tags_as_such_is_reasoning():
    """Thought Anchors' agentic scenario: after </think> QwQ sends an email, then reasons inside a
    <SCRATCHPAD_REASONING> block; that block was profiled as answer. Tagged reasoning blocks of the answer
    are reasoning sections of their own; an answer field of its own is left whole."""
    text = ("<think>Plan the reply.</think>\n<send>Hi Bo, done.</send>\n<SCRATCHPAD_REASONING>Why I sent it."
            "</SCRATCHPAD_REASONING>\nBye.")
    trace = one({"response": text})
    assert [(s.name, s.content) for s in trace.sections] == [
        ("reasoning", "Plan the reply."), ("answer", "<send>Hi Bo, done.</send>"), ("reasoning", "Why I sent it."),
        ("answer", "Bye.")]
    # only closed blocks of a reasoning tag's name, outside code: an answer that mentions a tag, or code
    # with a tag of another name, stays answer (a review found both split)
    for answer in ("Wrap your notes in <thinking> tags, then answer.",
                   "Use ```<ThinkingIndicator>Loading</ThinkingIndicator>``` here.",
                   "It renders <ThinkingIndicator>Loading</ThinkingIndicator> first."):
        assert [(s.name, s.content) for s in one({"response": f"<think>Plan.</think> {answer}"}).sections] == [
            ("reasoning", "Plan."), ("answer", answer)]
    assert [s.name for s in one({"response": "<think>Plan.</think> The answer is 4."}).sections] == ["reasoning", "answer"]



def test_words_before_the_reasoning_tag_are_named_not_lost_without_a_word():
    """Venhoff et al.'s Claude 3 Opus (prompted to think in tags) opens all 300 responses "Here is my response:"
    then <think>: those words went into no section, unsaid. A prompt before the tag (a chat template's, or one a
    field of the record also holds: Thought Anchors' full_cot) is not the model's."""
    from thinkprobe.cli import format_summary

    trace = one({"response": "Here is my response:\n\n<think>Add 2 and 2.</think>It is 4."})
    assert trace.provenance["before_reasoning"] == "Here is my response:"
    assert [(s.name, s.content) for s in trace.sections] == [("reasoning", "Add 2 and 2."), ("answer", "It is 4.")]
    for record in ({"response": "<｜User｜>What is 2 + 2?<｜Assistant｜><think>Add.</think>4"},
                   {"prompt": "Solve it. Problem: 2 + 2 Solution:", "full_cot": "Solve it. Problem: 2 + 2 Solution: "
                    "\n<think>\nAdd.\n</think>4"},
                   {"response": "<think>Add.</think>4"}):
        assert "before_reasoning" not in one(record).provenance, record
    said = format_summary({"traces": 3, "out_dir": "o", "resumed": 0, "errors": 0, "model_profiles": [],
                           "before_reasoning_by_model": {"claude-3-opus": 3}})
    assert "3 traces have words of the model's before the tag that opens its reasoning" in said


def test_a_prompt_given_as_the_question_ends_before_the_models_turn():
    """Thought Anchors' scenario traces keep the whole prompt, which ends "Assistant:\\n<think>\\n" (its math
    prompts "Solution: \\n<think>\\n"): the question had ended with the template's words."""
    prompt = "You are Alex, an assistant.\n\nHuman: Read the new emails.\n\nAssistant:\n<think>\n"
    trace = one({"prompt": prompt, "response": "<think>Read them first.</think>Done."})
    assert trace.question == "You are Alex, an assistant.\n\nHuman: Read the new emails."
    assert one({"prompt": "Solve. Problem: 2x = 4 Solution: \n<think>\n", "response": "<think>x = 2.</think>2"}
               ).question == "Solve. Problem: 2x = 4 Solution:"
    # a question that only mentions a tag, or ends with spaces, is left as it is
    for question in ("Why do models write <think> tags?", "What is 2 + 2? "):
        assert one({"question": question, "response": "<think>x.</think>4"}).question == question


@pytest.mark.parametrize("answer", [
    "Wrap private notes as `<thinking>notes</thinking>` in the prompt.",  # inline code
    "Use ``<think>x</think>`` there.",
    "Example:\n~~~\n<thinking>notes</thinking>\n~~~\nDone.",  # a ~~~ fence (``` ones were already text)
    "Close it with <thinking>a real note `</thinking>` b</thinking> then stop.",  # a closing tag quoted in code
])
def test_a_reasoning_tag_quoted_in_code_in_the_answer_is_text(answer):
    """Tags quoted in inline code or a ~~~ fence after </think> were split out as reasoning blocks."""
    got = [(s.name, s.content) for s in one({"response": f"<think>Plan.</think>{answer}"}).sections]
    if "real note" in answer:
        assert got == [("reasoning", "Plan."), ("answer", "Close it with"),
                       ("reasoning", "a real note `</thinking>` b"), ("answer", "then stop.")]
    else:
        assert got == [("reasoning", "Plan."), ("answer", answer)]


def test_reasoning_tags_quoted_in_code_do_not_split_the_text():
    """A reasoning field that quotes tags in code had been cut at them (reasoning_content 'use `<think>`
    tags ... `<think>x</think>`' became '` tags ... `<think>x'); a quoted closing tag after the real one
    had moved the end of the reasoning onto it."""
    for text in ("The user asks how models use `<think>` tags. One writes `<think>x</think>` first. So I explain.",
                 "Format:\n~~~\n<think>x</think>\nanswer\n~~~\nSo I explain that.",
                 "Format:\n```\n<think>x</think>\nanswer\n```\nSo I explain that."):
        trace = one({"reasoning_content": text, "content": "Like this."})
        assert trace.provenance["tag"] is None and trace.reasoning.content == text
    trace = one({"response": "<think>Plan.</think>Use `</think>` to close."})
    assert (trace.reasoning.content, trace.answer.content) == ("Plan.", "Use `</think>` to close.")
    trace = one({"response": "<think>Asked about `<think>` and `</think>`.</think>Like this."})
    assert (trace.reasoning.content, trace.answer.content) == ("Asked about `<think>` and `</think>`.", "Like this.")
    # a stray backtick before a real closing tag: the last closing tag still ends the reasoning
    trace = one({"response": "<think>the ` key</think>The answer is `5`."})
    assert (trace.reasoning.content, trace.answer.content) == ("the ` key", "The answer is `5`.")


def test_chat_template_tokens_are_trimmed_and_never_inside_units(config):
    from thinkprobe.io.tags import SPECIAL_TOKEN
    from thinkprobe.segment import unit_spans

    trace = one({"thought": "<think>\nHmm.<|im_end|> It is 5.\n</think>", "response": "Answer: 5<|eot_id|>"})
    assert trace.answer.content == "Answer: 5"
    r = trace.reasoning
    units = [r.text[s:e] for s, e in unit_spans(r.text, r, config)]
    assert units and not any(SPECIAL_TOKEN.search(u) for u in units)


def test_answers_without_thinking_are_told_apart_from_long_untagged_reasoning():
    from thinkprobe.accounting import NO_THINK, UntaggedAnswers

    def g(model, chars, untagged):
        return {"trace_id": f"{model}{chars}", "model": model, "source": "f", "record": 0,
                "provenance": {"untagged": untagged}, "sections": [{"name": "reasoning", "field": "response",
                                                                   "start": 0, "end": chars}]}

    answers = UntaggedAnswers({"Qwen3": 3000.0})
    assert answers.apply(g("Qwen3", 40, True), "profile") is None  # skipped
    assert answers.apply(g("Qwen3", 40, True), "separate")["model"] == "Qwen3" + NO_THINK
    cut_off = g("Qwen3", 120_000, True)  # a reasoning cut off before its closing tag: kept, and marked cut off
    kept = answers.apply(cut_off, "profile")
    assert kept["provenance"] == {"untagged": True, "truncated": True, "kept_long": True}
    assert {**kept, "provenance": cut_off["provenance"]} == cut_off
    tagged, alone = g("Qwen3", 40, False), g("Limo", 40, True)  # tagged, or a model that never tags: kept
    assert answers.apply(tagged, "profile") is tagged and answers.apply(alone, "profile") is alone
    # the one kept for its length is counted apart: the summary had called MiP's 19 cut-off DSQ traces "a
    # non-reasoning model's output?"
    assert answers.kept_long(cut_off) and not answers.kept_long(alone) and not answers.kept_long(tagged)
    from thinkprobe.cli import format_summary

    said = format_summary({"traces": 3, "out_dir": "o", "resumed": 0, "errors": 0, "model_profiles": [], "untagged": 2,
                           "untagged_by_model": {"Qwen3": 1, "Limo": 1}, "untagged_long_by_model": {"Qwen3": 1}})
    assert "1 of them are longer than the median reasoning of its model" in said and "Qwen3" in said


def test_traces_without_a_model_are_judged_per_file_as_answers_without_thinking(tmp_path):
    """Files with no model name (MiP-Overthinking without --path-pattern): a non-reasoning model's file is
    not measured against another file's reasoning; within one file the rule holds as for a named model."""
    from thinkprobe.accounting import UntaggedAnswers

    def g(source, chars, untagged):
        return {"trace_id": f"{source}{chars}", "model": "unknown", "source": source, "record": 0,
                "provenance": {"untagged": untagged}, "sections": [{"name": "reasoning", "field": "response",
                                                                   "start": 0, "end": chars}]}

    reasoning, plain, mixed = [g("qwq", 9000, False)] * 3, [g("gemma", 1500, True)] * 3, [g("mix", 9000, False), g("mix", 300, True)]
    part = tmp_path / "000000.jsonl"
    part.write_text("".join(json.dumps({"graph": x}) + "\n" for x in (*reasoning, *plain, *mixed)), encoding="utf-8")
    answers = UntaggedAnswers.scan([part])
    assert not answers.is_answer(plain[0])  # its file holds no reasoning: kept as the model's output
    assert answers.is_answer(mixed[1])  # beside reasoning of the same file, and shorter: an answer without thinking


# ----------------------------------------------------------------------------- nothing lost without a word (item 3)


def test_reasoning_in_an_unlisted_field_with_tags_is_found_and_else_suggested():
    r1 = one({"question": "Q?", "deepseek-reasoner (question)": "Okay, so 2 + 3 is 5.\n</think>\n\nThe answer is 5."})
    assert r1.reasoning.field == "deepseek-reasoner (question)" and r1.answer.content == "The answer is 5."
    assert (r1.model, r1.provenance["model_from"]) == ("deepseek-reasoner", "deepseek-reasoner (question)")
    with pytest.raises(InputError) as err:
        one({"question": "Q?", "solution": "S" * 900, "final output": "The answer is 5. " * 20})
    assert "--reasoning-field 'final output'" in err.value.reason  # the longest text, the reference solution left out


def test_a_reasoning_that_is_a_program_is_marked_and_counted_in_the_summary():
    from thinkprobe.cli import format_summary

    program = one({"reasoning": "from typing import List\n\ndef total(xs: List[int]) -> int:\n    return sum(xs)"})
    assert program.provenance["reasoning_is_code"] is True
    prose = one({"reasoning": "Let x = 5. If x > 3: then we are done. So total = sum(xs)."})
    assert "reasoning_is_code" not in prose.provenance
    text = format_summary({"traces": 3, "out_dir": "out", "resumed": 0, "errors": 0, "model_profiles": [],
                           "reasoning_is_code": 2})
    assert "2 traces' reasoning is a Python program, not prose" in text


@pytest.mark.realdata
def test_mr_ben_coding_solutions_are_marked_as_programs(shared_data):
    fields = FieldMap(reasoning_field="Model_Solution_Steps")
    coding = [t for t in iter_traces(shared_data / "mr_ben" / "coding.json.gz", fields) if isinstance(t, Trace)]
    marked = sum(bool(t.provenance.get("reasoning_is_code")) for t in coding)
    assert len(coding) == 238 and marked == 214  # the other 24 open with a sentence and fence their code
    math = [t for t in iter_traces(shared_data / "mr_ben" / "math.json.gz", fields) if isinstance(t, Trace)]
    assert math and not any(t.provenance.get("reasoning_is_code") for t in math)


@pytest.mark.realdata
def test_mr_ben_without_a_field_named_points_at_the_solution_steps(shared_data):
    """Without --reasoning-field every MR-BEN record is an error whose hint names the longest text; the
    annotators' error notes and the reference analysis are no candidates (they were on 1 in 9 records)."""
    from itertools import islice

    errors = [e for e in islice(iter_traces(shared_data / "mr_ben" / "math.json.gz"), 300) if isinstance(e, InputError)]
    assert len(errors) == 300
    assert all("--reasoning-field 'Model_Solution_Steps'" in e.reason for e in errors)


def test_mr_ben_gold_is_the_corrected_answer_where_one_is_set():
    steps = ["Step 1: Narcissism fits.", "Solution: Choice_B"]
    base = {"Question": "Q?", "Model_Solution_Steps": steps, "Ground_Truth_Answer": "C"}
    fields = FieldMap(reasoning_field="Model_Solution_Steps")
    corrected = one({**base, "Ground_Truth_Answer_Modified": "B"}, fields)
    assert (corrected.gold_answer, corrected.provenance["gold_from"]) == ("B", "Ground_Truth_Answer_Modified")
    assert one({**base, "Ground_Truth_Answer_Modified": ""}, fields).gold_answer == "C"  # none set: the original
    named = one({**base, "Sampled_Model": "Claude2", "Subject": "college_medicine"}, fields)
    assert (named.model, named.domain) == ("Claude2", "college_medicine")



def test_mr_ben_closing_step_is_the_answer_and_its_solution_label_no_grade():
    """MR-BEN's "Solution: Choice_B" closes each solution: the answer section (as the failure-risk model
    was trained, answer cut off); Model_Solution_Correctness labels the whole solution (a wrong step on
    the way to the right option makes it "incorrect"), so the matcher grades the final answer."""
    steps = ["Step 1: Choice_A argues one thing.", "Step 2: Choice_B fits the data.", "Solution: Choice_B"]
    rec = {"Question": "Q?", "Model_Solution_Steps": steps, "Ground_Truth_Answer_Modified": "B",
           "Model_Solution_Correctness": "incorrect"}
    trace = one(rec, FieldMap(reasoning_field="Model_Solution_Steps"))
    answer = next(s for s in trace.sections if s.name == "answer")
    assert answer.text[answer.start:answer.end] == "Solution: Choice_B"
    assert trace.correct is None and trace.provenance["correct_from"] is None
    assert trace.provenance["unread_grade"] == "Model_Solution_Correctness=incorrect"
    labelled = one(rec, FieldMap(reasoning_field="Model_Solution_Steps", correct_field="Model_Solution_Correctness"))
    assert labelled.correct is False  # named, the label grades


def test_an_api_error_written_where_the_output_should_be_is_a_skip_that_says_so(shared_data):
    """MiP-Overthinking's DeepSeek-R1 files hold 3 failed API calls ("Error after 6 attempts: Error code:
    500 ...") where the output should be: they were skipped as 'answer without thinking'. Now a skip
    naming the error, on the corpus record itself; a text that opens with 'Error' in its reasoning is none."""
    import gzip

    path = shared_data / "mip_overthinking" / "response" / "gsm8k" / "normal" / "deepseekR1" / "response.json.gz"
    if not path.exists():
        pytest.skip(f"{path} not found (MiP-Overthinking in the shared data)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        record = json.load(f)[66]
    assert record["deepseek-reasoner (question)"].startswith("Error after 6 attempts: Error code: 500")
    with pytest.raises(InputError) as err:
        one(record)
    assert err.value.field == "deepseek-reasoner (question)"
    assert err.value.reason.startswith("the text is a generation API's error message (\"Error after 6 attempts")
    from thinkprobe.accounting import reason_kind

    assert reason_kind(err.value.reason) == "the text is a generation API's error message"
    from thinkprobe.io.guess import is_api_error

    assert is_api_error("Error after 6 attempts: Expecting value: line 10 column 1 (char 9)")  # svamp/MiP's two
    for answer in ("Error after 3 steps: x = 4 does not satisfy the second equation, so retry.",
                   "Error in the question: the rate limit of the machine is not given.",
                   "Exception handling in Python: wrap the call in try/except and set a timeout.",
                   "Error analysis: the first approach failed after 3 attempts, so the answer is 12.",
                   "Error: the code raises ZeroDivisionError: division by zero when n = 0."):
        assert not is_api_error(answer), answer  # an answer may say these words
    assert is_api_error("Error: openai.RateLimitError: Error code: 429 - Rate limit reached for requests")
    mine = one({"question": "Q?", "gpt-4o (question)": "Error in my first step: 12 * 7 is 84, not 74. So the total is 90."})
    assert mine.provenance["untagged"]


def test_a_field_named_after_a_model_and_its_prompt_is_that_models_output():
    """MiP-Overthinking keeps each API model's output in `<model> (<prompt field>)`: untagged, it is the whole
    output of a model without visible reasoning (profiled as untagged text, under the model it names); where the
    record counts thinking tokens it does not hold (o1), the reasoning was hidden, and where it counts none the
    model did not reason: a skip that says so."""
    answer = "The answer is 5. " * 20
    gpt = one({"question": "Q?", "solution": "S" * 900, "gpt-4o (question)": answer})
    assert (gpt.reasoning.field, gpt.model, gpt.provenance["model_from"]) == ("gpt-4o (question)", "gpt-4o", "gpt-4o (question)")
    assert gpt.provenance["untagged"] and gpt.answer is None
    assert one({"question": "Q?", "model": "named", "gpt-4o (question)": answer}).model == "named"  # a model field wins
    none_hidden = {"question": "Q?", "o1 (question)": answer, "o1 (question) thinking_token_count": 0}
    with pytest.raises(InputError) as err:  # no thinking tokens: the model answered without reasoning (a new user:
        one(none_hidden)                    # o1's 46 such answers were its profile, the rest being skipped)
    assert err.value.reason.startswith("reasoning not returned") and "counts no thinking tokens" in err.value.reason
    with pytest.raises(InputError) as err:
        one({**none_hidden, "o1 (question) thinking_token_count": 1536})
    assert err.value.field == "o1 (question)" and err.value.reason.startswith("reasoning not returned")
    assert "1,536 thinking tokens" in err.value.reason and "--reasoning-field 'o1 (question)'" in err.value.reason
    # a field that only looks so (its parenthesis names no field of the record) is not taken
    with pytest.raises(InputError):
        one({"question": "Q?", "gpt-4o (prompt)": answer})
    # the question is the prompt the output answers: the missing-premise question, not the whole one
    mip = {"question": "Q? with all it needs", "insufficient_question": "Q? missing a premise",
           "deepseek-reasoner (insufficient_question)": "<think>Hmm.</think>5"}
    assert one(mip).question == "Q? missing a premise"
    assert one(mip, FieldMap(question_field="question")).question == "Q? with all it needs"  # unless named
    qwq = {"question": "Q? with all it needs", "insufficient_question": "Q? missing a premise",
           "model_answer": "<think>Hmm.</think>5", "answer": "5"}  # QwQ's MiP files: the output names no prompt
    assert one(qwq).question == "Q? missing a premise"
    normal = {"question": mip["question"], "insufficient_question": mip["insufficient_question"],
              "deepseek-reasoner (question)": "<think>Hmm.</think>5"}
    assert one(normal).question == "Q? with all it needs"  # the normal condition's file names its prompt


def test_thought_anchors_base_solution_takes_the_problem_beside_it(tmp_path, monkeypatch):
    """Thought Anchors keeps the model in the path, the question and gold in problem.json, the model's own
    extracted answer in `answer` and, in its scenario traces, a grader's verdict in `reasoning`."""
    folder = tmp_path / "r1-distill-qwen-14b" / "incorrect_base_solution" / "problem_7"
    folder.mkdir(parents=True)
    (folder / "problem.json").write_text(json.dumps({"problem": "Find x if 2x = 10.", "gt_answer": "5",
                                                     "type": "Algebra", "level": "Level 5"}))
    cot = "Solve: Find x if 2x = 10. Solution: \n<think>\n2x = 10, so x = 4.\n</think>\n\n$\\boxed{4}$"
    (folder / "base_solution.json").write_text(json.dumps({
        "prompt": "Solve: Find x if 2x = 10.", "solution": "2x = 10, so x = 4.", "full_cot": cot, "answer": "4",
        "is_correct": "False", "reasoning": "<reasoning>The response is wrong.</reasoning><answer>no</answer>"}))
    (t,) = [x for x in iter_traces(str(folder / "base_solution.json")) if isinstance(x, Trace)]
    assert (t.trace_id, t.model, t.domain) == ("r1-distill-qwen-14b/incorrect_base_solution/problem_7",
                                               "r1-distill-qwen-14b", "Algebra")
    assert (t.question, t.gold_answer, t.correct) == ("Find x if 2x = 10.", "5", False)
    assert t.reasoning.content == "2x = 10, so x = 4." and t.provenance["reasoning_from"] == "full_cot"
    assert t.provenance["gold_from"] == "problem.json:gt_answer" and t.provenance["layout"] == "thought_anchors"
    big = folder.parent / "problem_8"  # a problem.json larger than one record may be is not read
    big.mkdir()
    (big / "problem.json").write_text(json.dumps({"problem": "Find x.", "gt_answer": "5", "pad": " " * 2048}))
    (big / "base_solution.json").write_text((folder / "base_solution.json").read_text())
    with monkeypatch.context() as m:
        m.setattr(InputLimits, "default", staticmethod(lambda: InputLimits(max_record_mb=0.001)))  # 1 KiB
        (u,) = [x for x in iter_traces(str(big / "base_solution.json")) if isinstance(x, Trace)]
    assert (u.question, u.gold_answer) == ("Solve: Find x if 2x = 10.", None)
    shutil.rmtree(big)
    (folder / "chunks_labeled.json").write_text(json.dumps([{"chunk": "2x = 10", "chunk_idx": 0}]))
    (folder.parent / "notes.json").write_text(json.dumps([{"text": "not a trace"}]))
    items = list(iter_traces(str(tmp_path)))  # the folder: the annotation files beside it are not records
    assert [x.trace_id for x in items if isinstance(x, Trace)] == [t.trace_id]
    assert [x.source for x in items if isinstance(x, InputError)] == [str(folder.parent / "notes.json")]


def test_reasoneval_records_read_their_steps_gold_and_grade():
    """ReasonEval (Meta-Reasoning-MATH): steps as lists of one text each, the gold in `ground_truth_answer`,
    the final answer's grade in `model_output_answer_correctness`, the raw output in `model_output`."""
    steps = [["The cube's side is 6."], ["So its volume is 216."]]
    record = {"id": 0, "question": "Q?", "ground_truth_answer": "216", "generator": "GPT-4 (PRM800K)",
              "model_output_step_format": steps, "rating": [1, 1]}
    with pytest.raises(InputError) as err:  # no default field holds a list of steps: named, it is read
        one(record)
    assert err.value.field == "reasoning" and "model_output_step_format" in err.value.reason
    t = one(record, FieldMap(reasoning_field="model_output_step_format"))
    assert t.reasoning.content == "The cube's side is 6.\nSo its volume is 216." and t.gold_answer == "216"
    assert t.provenance["joined"]["parts"] == 2 and t.model == "GPT-4 (PRM800K)"
    raw = one({**record, "model_output": "The cube's side is 6. So its volume is 216.",
               "model_output_answer_correctness": "correct"})
    assert raw.reasoning.field == "model_output" and raw.provenance["untagged"] and raw.correct is True
    # Abel's and WizardMath's raw outputs close with GSM8K's answer mark: that is the answer, not a unit
    for closing in ("So its volume is $\\boxed{216}$.  #### 216 ", "So its volume is 216.\n#### 216\n"):
        marked = one({**record, "model_output": "The cube's side is 6. " + closing})
        assert marked.reasoning.content.startswith("The cube's side is 6.") and "####" not in marked.reasoning.content
        assert marked.answer.content == "216" and marked.provenance["untagged"]
    # WizardMath's own closing line is its answer too; the same words inside the text are reasoning
    wizard = one({**record, "model_output": "The cube's side is 6.\nSo its volume is $\\boxed{216}$.\n\nThe answer is: 216.\n\n"})
    assert wizard.reasoning.content.endswith("$\\boxed{216}$.") and wizard.answer.content == "216."
    # a dedicated reasoning field keeps its closing line when the answer is another field's
    kept = one({"reasoning_content": "Then 12 times 3 is 36.\nThe answer is: 36", "content": "**36**"})
    assert kept.reasoning.content.endswith("The answer is: 36") and kept.answer.content == "**36**"
    prm = one({**record, "model_output_step_format": [["The cube's side is 6."], ["So its volume is 216."],
                                                       ["# Answer\n\n216"]]}, FieldMap(reasoning_field="model_output_step_format"))
    assert prm.reasoning.content == "The cube's side is 6.\nSo its volume is 216." and prm.answer.content == "216"
    inside = one({**record, "model_output": "The answer is: 216, I think.\nCheck: 6^3 = 216."})
    assert inside.answer is None and inside.reasoning.content.startswith("The answer is: 216")


def test_a_step_list_is_named_in_the_error_when_no_field_holds_reasoning():
    steps = ["Step %d: we add the next two numbers and carry the one into the next column." % k for k in range(4)]
    with pytest.raises(InputError) as err:
        one({"problem": "Q?", "steps": steps, "generator": "m"})
    assert "the longest text field is `steps` (a list of 4 texts" in err.value.reason
    assert "--reasoning-field 'steps'" in err.value.reason


def test_schoenfeld_episodes_record_names_its_model_question_gold_and_id():
    """The Schoenfeld episodes' DeepSeek-R1 file: `deepseek-reasoner (response)` names the model though no field
    is called `response`; the question is `Instruction`, the gold `Correct Answer`, the id `Question ID`."""
    record = {"Question ID": "cecbdeba", "Instruction": "Find h. A) 18 B) 12", "Correct Answer": "A",
              "Rationale": "Choice A is correct.", "deepseek-reasoner (response)": "V = Bh, so h = 18.</think>**A) 18**"}
    t = one(record)
    assert (t.model, t.provenance["model_from"]) == ("deepseek-reasoner", "deepseek-reasoner (response)")
    assert (t.question, t.gold_answer, t.trace_id) == ("Find h. A) 18 B) 12", "A", "cecbdeba")
    assert t.reasoning.content == "V = Bh, so h = 18." and t.answer.content == "**A) 18**"


@pytest.mark.parametrize("prompt", ["<｜begin▁of▁sentence｜><｜User｜>How wide is it?<｜Assistant｜>",
                                    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHow wide is it?<|im_end|>\n<|im_start|>assistant\n",
                                    "<|start_header_id|>user<|end_header_id|>\n\nHow wide is it?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"])
def test_question_from_the_chat_prompt_before_the_reasoning(prompt):
    """Venhoff et al.'s distilled models keep the chat-template prompt before <think> in `response`, and no
    question field: the last user turn is the question. A question field still wins; no prompt, no question."""
    response = prompt + "<think>\nIt is 3 m wide.\n</think>\n\n3 m."
    assert one({"response": response}).question == "How wide is it?"
    assert one({"question": "Q?", "response": response}).question == "Q?"
    assert one({"response": "<think>\nIt is 3 m wide.\n</think>\n\n3 m."}).question is None


# ----------------------------------------------------------------------------- segmentation (item 5)

ABBREVIATIONS = ("Mr.", "Mrs.", "Dr.", "Lt.", "Gen.", "Col.", "Sgt.", "Capt.", "St.", "Prof.", "Jr.", "Sr.", "Bros.",
                 "Inc.", "Co.", "Corp.", "Ltd.", "U.S.", "U.K.", "e.g.", "i.e.", "et al.", "Fig.", "No.", "vs.", "D.C.",
                 "a.m.", "p.m.", "Jan.", "Feb.", "Mar.", "Apr.", "Aug.", "Sept.", "Oct.", "Nov.", "Dec.")


@pytest.mark.parametrize("abbreviation", ABBREVIATIONS)
@pytest.mark.parametrize("after", ["Smith", "3", "the"])
def test_no_abbreviation_ends_a_unit(abbreviation, after, config):
    from thinkprobe.records import Section
    from thinkprobe.segment import unit_spans

    text = f"We checked it against {abbreviation} {after} records twice. Then we stopped."
    units = [text[s:e] for s, e in unit_spans(text, Section("reasoning", "t", text, 0, len(text)), config)]
    assert units == [f"We checked it against {abbreviation} {after} records twice.", "Then we stopped."]


@pytest.mark.parametrize("text, expected", [
    ("He signed with Warner Bros. Records in 1990.", ["He signed with Warner Bros. Records in 1990."]),
    ("Lt. Gen. Smith led the U.S. Army's staff.", ["Lt. Gen. Smith led the U.S. Army's staff."]),
    # an abbreviation that can end a sentence does so before a word that starts one
    ("The shop opens at 9 a.m. The queue is long.", ["The shop opens at 9 a.m.", "The queue is long."]),
    ("Is it 4? No. Let me recompute.", ["Is it 4?", "No.", "Let me recompute."]),
    # opening its sentence "No." is the answer no; "etc." ends sentences in reasoning traces
    ("Divisible by 5? No. 7? Yes.", ["Divisible by 5?", "No.", "7?", "Yes."]),
    ("See Symphony No. 5 today.", ["See Symphony No. 5 today."]),
    ("At 75°, 105°, etc. Might it hold?", ["At 75°, 105°, etc.", "Might it hold?"]),
    # a name's initials (tts_knowledge SimpleQA / FRAMES: about one Qwen3-8B trace in eight has one)
    ("Yes! John F. Kennedy attended it.", ["Yes!", "John F. Kennedy attended it."]),
    ("Franklin D. Roosevelt and George H.W. Bush won.", ["Franklin D. Roosevelt and George H.W. Bush won."]),
    ('Perhaps "Charles A. P. Bartlett" fits, or Captain W. R. H. Pritchard.',
     ['Perhaps "Charles A. P. Bartlett" fits, or Captain W. R. H. Pritchard.']),
    ("Schools like A.T. Still University, by T.S. Eliot at the O.K. Corral.",
     ["Schools like A.T. Still University, by T.S. Eliot at the O.K. Corral."]),
    # ... while a letter answer or a name's initial before a sentence starter still ends the sentence
    ("So the answer is B. Then we check.", ["So the answer is B.", "Then we check."]),
    ("The answer is B. Smith is wrong.", ["The answer is B.", "Smith is wrong."]),
    ("It is Vitamin E. Yet I am unsure.", ["It is Vitamin E.", "Yet I am unsure."]),
    ("He was John F. Kennedy. The end.", ["He was John F. Kennedy.", "The end."]),
])
def test_abbreviations_in_context(text, expected):
    from thinkprobe.segment import fragment_spans

    assert [text[s:e] for s, e in fragment_spans(text, 0, len(text))] == expected


def test_name_initials_in_real_traces_do_not_end_a_unit(shared_data, config):
    """tts_knowledge Qwen3-8B FRAMES: "John L. | Chambers", "Lyndon B. | Johnson" were cut."""
    import re

    from thinkprobe.segment import fragment_spans

    starters = set(config.segment.sentence_starters)

    path = shared_data / "tts_knowledge" / "outputs" / "qwen3-8b" / "Qwen3-8B_frames_exd0.jsonl.gz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    name = re.compile(r"\b[A-Z][a-z]+ (?:[A-Z]\. ?){1,3}(?=([A-Z][a-z]+)\b)")
    seen = 0
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line).get("thought") or ""
            if not name.search(text):
                continue
            ends = {e for _, e in fragment_spans(text, 0, len(text))}
            for m in (m for m in name.finditer(text) if m.group(1) not in starters):
                assert m.end() - 1 not in ends and m.end() not in ends, text[m.start():m.end() + 20]
            seen += 1
            if seen == 40:
                break
    assert seen == 40


# ----------------------------------------------------------------------------- real files, end to end

FAST = dict(device="cpu", progress=False, report=False, linker="cue", types="cue", cache=False)
MIP_VALUES = "1=correct,2=incorrect,0=ungraded,3=ungraded"


def _copy_lines(src: Path, dst: Path, n: int) -> list[dict]:
    """The first n records of a real JSONL.gz file, written under the same name (native layout)."""
    with gzip.open(src, "rt", encoding="utf-8") as f:
        lines = [line for _, line in zip(range(n), f)]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(gzip.compress("".join(lines).encode()))
    return [json.loads(line) for line in lines]


def _copy_items(src: Path, dst: Path, keep) -> list[dict]:
    """The records of a real JSON-list .gz file that `keep(index, record)` picks, written under the same name."""
    with gzip.open(src, "rt", encoding="utf-8") as f:
        items = [r for k, r in enumerate(json.load(f)) if keep(k, r)]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(gzip.compress(json.dumps(items).encode()))
    return items


def _graphs(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]


def _errors(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "errors.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def tts_run(shared_data, tmp_path_factory):
    """tts_knowledge Qwen3-8B: thinking traces (SimpleQA-graded A / B / C) beside its no-thinking answers."""
    import thinkprobe

    src = shared_data / "tts_knowledge" / "outputs" / "qwen3-8b"
    names = ("Qwen3-8B_simpleqa_exd0.jsonl.gz", "Qwen3-8B_simpleqa_no_think.jsonl.gz")
    if not all((src / n).exists() for n in names):
        pytest.skip(f"tts_knowledge Qwen3-8B files not found under {src}")
    tmp = tmp_path_factory.mktemp("tts")
    records = {n: _copy_lines(src / n, tmp / "qwen3-8b" / n, 6) for n in names}
    run = thinkprobe.profile([str(tmp / "qwen3-8b")], tmp / "out", path_pattern="{model}_{domain}_{}.jsonl.gz", **FAST)
    return records, run


def test_simpleqa_grades_are_kept(tts_run):
    records, run = tts_run
    graded = {str(r["id"]): r["grading"] for r in records["Qwen3-8B_simpleqa_exd0.jsonl.gz"]}
    assert {"A", "B", "C"} <= set(graded.values())
    acc = {row.trace_id: row.Acc for row in run.redundancy.itertuples()}
    assert {tid: ({"A": 1, "B": 0}.get(g)) for tid, g in graded.items()} == {
        tid: (None if acc[tid] is None or acc[tid] != acc[tid] else int(acc[tid])) for tid in graded}
    grades = run.summary["grades"]
    counts = {v: list(graded.values()).count(k) for k, v in (("A", "correct"), ("B", "incorrect"), ("C", "not graded"))}
    assert grades["from_records"] == counts and grades["fields"] == {"grading": len(graded)}
    assert json.loads((run.folder / "run.json").read_text())["grades"]["from_records"] == counts


def test_no_thinking_answers_stay_out_of_the_models_profile(tts_run):
    records, run = tts_run
    from thinkprobe.accounting import ANSWER_WITHOUT_THINKING

    no_think = records["Qwen3-8B_simpleqa_no_think.jsonl.gz"]
    assert all("thought" not in r for r in no_think)
    graphs = _graphs(run.folder)
    assert len(graphs) == 6 and all(g["source"].endswith("exd0.jsonl.gz") for g in graphs)
    assert {g["model"] for g in graphs} == {"Qwen3-8B"} and list(run.model_profiles["n"]) == [6]
    skipped = [e for e in _errors(run.folder) if e["file"].endswith("no_think.jsonl.gz")]
    assert len(skipped) == 6 and all(e["reason"] == ANSWER_WITHOUT_THINKING and e["model"] == "Qwen3-8B"
                                     for e in skipped)
    # named as every other skipped record of a JSON Lines file: by its line
    assert all(e["record"].startswith("line ") for e in skipped) and len({e["record"] for e in skipped}) == 6
    (model,) = run.summary["coverage"]["by_model"]
    assert (model["model"], model["records"], model["traces"], model["skipped"]) == ("Qwen3-8B", 12, 6, 6)
    assert model["reasons"] == {"answer without thinking": 6}
    assert any("no_think" in w and "6 records" in w for w in run.summary["coverage_warnings"])


def test_a_long_untagged_trace_is_profiled_as_cut_off_with_no_final_answer(tmp_path):
    """MiP-Overthinking's DSQ: a thinking text cut off before its </think> (no tag at all), beside the model's
    tagged traces, is kept as reasoning and marked cut off, and its last unit, cut mid-sentence, states no
    answer (it had been read as the closing unit of an answer-only output)."""
    import thinkprobe

    step = "Let me check the sum again, since 4 + 5 is 9 and 9 + 3 is 12. "
    records = [{"id": f"t{k}", "model": "M", "response": f"<think>{step * 3}So it is {k}.</think>The answer is {k}."}
               for k in range(3)]
    records.append({"id": "cut", "model": "M", "response": step * 12 + "Wait, so the answer is 7 times the square root of"})
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    run = thinkprobe.profile([str(tmp_path / "m.jsonl")], tmp_path / "out", **FAST)
    graphs = {g["trace_id"]: g for g in _graphs(run.folder)}
    cut = graphs["cut"]
    assert cut["provenance"]["truncated"] and cut["provenance"]["kept_long"]
    assert cut["redundancy"]["final_answer"] is None and graphs["t1"]["redundancy"]["final_answer"]["value"] == "1"
    assert run.summary["untagged_long_by_model"] == {"M": 1} and not run.summary.get("truncated_by_model")
    # the units each model's answer sections hold (the headline names a model whose answers weigh much more)
    tally = json.loads((run.folder / "run.json").read_text(encoding="utf-8"))["answer_units_by_model"]["M"]
    assert tally == run.summary["answer_units_by_model"]["M"]
    assert tally["answer"] == 3 and tally["units"] == sum(len(g["units"]) for g in graphs.values())


def test_chat_template_tokens_never_reach_real_units_or_answers(tts_run):
    from thinkprobe.io.tags import SPECIAL_TOKEN

    records, run = tts_run
    assert any("<|im_end|>" in r["response"] for r in records["Qwen3-8B_simpleqa_exd0.jsonl.gz"])
    for g in _graphs(run.folder):
        assert not any(SPECIAL_TOKEN.search(u["text"]) for u in g["units"])
        for s in g["sections"]:
            assert not SPECIAL_TOKEN.search(g["fields"][s["field"]][s["start"]:s["end"]])


@pytest.fixture(scope="module")
def mip_run(shared_data, tmp_path_factory):
    """MiP-Overthinking, MATH: DeepSeek-R1 (text in `deepseek-reasoner (question)`), QwQ (`</think>`), s1.1
    (think / answer markers) and o1 (final answers only), the shortest records of each (and one incorrect
    QwQ and one abstaining R1 answer of the missing-premise condition), graded through --correct-field
    eval_result; through the command line with --no-summary."""
    from click.testing import CliRunner

    from thinkprobe.cli import main

    root = shared_data / "mip_overthinking" / "response" / "math"
    wanted = {("normal", m): None for m in ("deepseekR1", "QwQ", "s1.1", "o1")}
    wanted.update({("MiP", "QwQ"): 2, ("MiP", "deepseekR1"): 0})  # eval_result: incorrect, abstains
    if not all((root / c / m / "response.json.gz").exists() for c, m in wanted):
        pytest.skip(f"MiP-Overthinking responses not found under {root}")
    tmp = tmp_path_factory.mktemp("mip")
    picked = {}
    for (condition, model), code in wanted.items():
        src = root / condition / model / "response.json.gz"
        with gzip.open(src, "rt", encoding="utf-8") as f:
            items = json.load(f)
        fitting = [k for k, r in enumerate(items) if code is None or r.get("eval_result") == code]
        chosen = set(sorted(fitting, key=lambda k: (len(json.dumps(items[k])), k))[: 2 if code is None else 1])
        picked[condition, model] = _copy_items(src, tmp / "math" / condition / model / "response.json.gz",
                                               lambda k, r: k in chosen)
    out = tmp / "out"
    res = CliRunner().invoke(main, [
        "profile", str(tmp / "math"), "-o", str(out), "--no-summary", "--device", "cpu", "--no-progress", "--no-report",
        "--linker", "cue", "--types", "cue", "--no-cache", "--path-pattern", "{domain}/{}/{model}/response.json.gz",
        "--correct-field", "eval_result", "--correct-values", MIP_VALUES])
    return picked, out, res


def test_mip_every_model_is_profiled_or_named_with_its_count(mip_run):
    picked, out, res = mip_run
    assert res.exit_code == 0, res.output
    run = json.loads((out / "run.json").read_text())
    by_model = {r["model"]: r for r in run["coverage"]["by_model"]}
    assert {m: by_model[m]["traces"] for m in by_model} == {"QwQ": 3, "deepseekR1": 3, "o1": 0, "s1.1": 2}
    assert by_model["o1"] == {"model": "o1", "records": 2, "traces": 0, "skipped": 2,
                              "reasons": {"reasoning not returned": 2}, "not_read": {}}
    # the warning names the model and its count, on stderr, with --no-summary
    assert "warning: model o1: no trace profiled from its 2 records" in res.stderr
    assert "2 records skipped (reasoning not returned 2)" in res.stderr
    hints = [e["reason"] for e in _errors(out) if e.get("model") == "o1"]
    assert all("--reasoning-field 'o1 (question)'" in h for h in hints)
    r1 = [g for g in _graphs(out) if g["model"] == "deepseekR1"]
    assert len(r1) == 3 and all(g["provenance"]["reasoning_from"] in ("deepseek-reasoner (question)",
                                                            "deepseek-reasoner (insufficient_question)") for g in r1)


def test_mip_qwq_grades_come_from_eval_result(mip_run):
    picked, out, _ = mip_run
    mapping = parse_correct_values(MIP_VALUES)
    graphs = _graphs(out)  # input order: math/MiP/... before math/normal/...
    for model in ("QwQ", "deepseekR1"):
        want = [mapping[str(r["eval_result"])] for c in ("MiP", "normal") for r in picked[c, model]]
        got = [g for g in graphs if g["model"] == model]
        assert [g["correct"] for g in got] == want
        assert [g["redundancy"]["metrics"]["Acc"] for g in got] == [None if v is None else int(v) for v in want]
        assert all(g["provenance"]["correct_from"] == "eval_result" for g in got)
    assert [g["correct"] for g in graphs if g["model"] == "QwQ"] == [False, True, True]
    assert [g["correct"] for g in graphs if g["model"] == "deepseekR1"] == [None, True, True]  # 0: abstains


def test_mip_s1_answer_sections_are_not_reasoning_units(mip_run):
    picked, out, _ = mip_run
    s1 = [g for g in _graphs(out) if g["model"] == "s1.1"]
    assert len(s1) == 2
    for g in s1:
        text = g["fields"]["model_answer"]
        marker = text.index("\nanswer\n")
        reasoning = [u for u in g["units"] if u["section"] == "reasoning"]
        assert reasoning and all(u["end"] <= marker for u in reasoning)
        assert not any(u["text"].startswith("think") or "\nanswer\n" in u["text"] for u in g["units"])
        answer = next(s for s in g["sections"] if s["name"] == "answer")
        assert answer["start"] > marker and text[answer["start"]:].startswith("Answer:")


# ----------------------------------------------------------------------------- run folders, --no-summary (items 3, 4)


def test_a_rerun_keeps_the_users_files_and_no_summary_still_warns(tmp_path):
    from click.testing import CliRunner

    from conftest import SAMPLES
    from thinkprobe.cli import main

    data = tmp_path / "two.jsonl"
    data.write_text("".join(SAMPLES.read_text(encoding="utf-8").splitlines(keepends=True)[:2])
                    + json.dumps({"id": "bad", "model": "x"}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["profile", str(data), "-o", str(out), "--no-summary", "--device", "cpu", "--no-progress", "--no-report",
            "--linker", "cue", "--types", "cue", "--no-cache"]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "1 records skipped (no reasoning text found 1)" in first.stderr and not first.stdout
    (out / "NOTES.txt").write_text("x\n")
    (out / "mine").mkdir()
    (out / "mine" / "a.txt").write_text("y")
    # `thinkprobe graph`'s page and images are the tool's (a rerun kept the images beside a new page);
    # an image of the user's in traces/ stays
    trace = json.loads((out / "graphs.jsonl").read_text(encoding="utf-8").splitlines()[0])["trace_id"]
    view = CliRunner().invoke(main, ["graph", str(out), trace])
    assert view.exit_code == 0, view.output
    drawn = sorted(p.name for p in (out / "traces").iterdir())
    assert [p.rsplit(".", 1)[1] for p in drawn] == ["html", "png", "svg"]
    (out / "traces" / "mine.png").write_bytes((out / "traces" / drawn[1]).read_bytes().replace(b"ThinkProbe", b"MyPlots!!!"))
    second = CliRunner().invoke(main, args)
    assert second.exit_code == 0, second.output
    assert (out / "NOTES.txt").read_text() == "x\n" and (out / "mine" / "a.txt").read_text() == "y"
    assert "kept 3 files that are not the tool's: NOTES.txt, mine, traces/mine.png" in second.stderr
    assert sorted(p.name for p in (out / "traces").iterdir()) == ["mine.png"]
    assert (out / "run.json").exists() and json.loads((out / "run.json").read_text())["counts"]["traces"] == 2
    # --strict: the model with no trace profiled is an error naming it and its count, and the exit status is 3
    strict = CliRunner().invoke(main, [*args, "--strict"])
    assert strict.exit_code == 3, strict.output
    assert strict.stderr.count("model x: no trace profiled from its 1 record (1 skipped") == 1  # said once
    assert "the 1 warning above about what had no trace profiled is an error here" in strict.stderr
    assert (out / "NOTES.txt").read_text() == "x\n"


def test_resume_reports_and_reruns_never_touch_what_is_not_the_tools(tmp_path):
    """A probe's findings: --resume into a folder of the user's overwrote its report.html and deleted
    its traces/mine.html; a rerun deleted any .html in traces/; and a run folder whose traces/ or
    report.md was a symlink (an unpacked archive) had files written and deleted where they pointed."""
    from click.testing import CliRunner

    from conftest import SAMPLES
    from thinkprobe.cli import main

    data = tmp_path / "two.jsonl"
    data.write_text("".join(SAMPLES.read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    mine = tmp_path / "mine"
    (mine / "traces").mkdir(parents=True)
    (mine / "report.html").write_text("MY OWN REPORT")
    (mine / "traces" / "notes.html").write_text("<p>my annotations</p>")
    args = ["profile", str(data), "--device", "cpu", "--no-progress", "--linker", "cue", "--types", "cue", "--no-cache"]
    refused = CliRunner().invoke(main, [*args, "-o", str(mine), "--resume"])
    assert refused.exit_code != 0 and "--resume found no interrupted run here" in refused.output
    assert (mine / "report.html").read_text() == "MY OWN REPORT"
    out = tmp_path / "out"
    assert CliRunner().invoke(main, [*args, "-o", str(out)]).exit_code == 0
    (out / "traces" / "notes.html").write_text("<p>my annotations</p>")
    rerun = CliRunner().invoke(main, [*args, "-o", str(out)])
    assert rerun.exit_code == 0, rerun.output
    assert (out / "traces" / "notes.html").read_text() == "<p>my annotations</p>"
    assert "traces/notes.html" in rerun.stderr  # named among the files kept
    # links out of the run folder are replaced, never followed
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.html").write_text("<title>ThinkProbe · mine</title>")
    (tmp_path / "victim.md").write_text("keep")
    shutil.rmtree(out / "traces")
    (out / "traces").symlink_to(victim)
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(tmp_path / "victim.md")
    (out / "stats.json.tmp").symlink_to(tmp_path / "victim.md")  # the temporary name of an atomic write too
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 0
    assert sorted(p.name for p in victim.iterdir()) == ["keep.html"] and (tmp_path / "victim.md").read_text() == "keep"
    assert not (out / "traces").is_symlink() and (out / "report.md").read_text().startswith("# ThinkProbe report")


def test_a_rerun_says_which_links_it_removes_and_never_follows_them(tmp_path):
    """A review: a rerun said it "kept" a link in the run's traces/ folder that it then replaced (the report
    replaces or removes every .html link there). It says which links it removes, the links only: what they
    point to, outside the run folder, is neither written nor deleted; a link the run does not replace is kept."""
    from click.testing import CliRunner

    from conftest import SAMPLES
    from thinkprobe.cli import main

    data = tmp_path / "two.jsonl"
    data.write_text("".join(SAMPLES.read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    args = ["profile", str(data), "-o", str(tmp_path / "out"), "--device", "cpu", "--no-progress", "--linker", "cue",
            "--types", "cue", "--no-cache", "--no-summary"]
    assert CliRunner().invoke(main, args).exit_code == 0
    traces = tmp_path / "out" / "traces"
    page = sorted(traces.glob("*.html"))[0]
    mine = tmp_path / "mine.html"
    mine.write_text("<p>mine</p>")
    page.unlink()
    for link in (page, traces / "other.html", traces / "view.png"):
        link.symlink_to(mine)
    rerun = CliRunner().invoke(main, args)
    assert rerun.exit_code == 0, rerun.output
    assert (f"kept 1 file that is not the tool's: traces/view.png; removed 2 links where the run writes (the links only, "
            f"not what they point to): traces/other.html, traces/{page.name}") in rerun.stderr, rerun.stderr
    assert mine.read_text() == "<p>mine</p>" and not page.is_symlink() and page.read_text().startswith("<!DOCTYPE")
    assert not (traces / "other.html").exists() and (traces / "view.png").is_symlink()


def test_records_that_are_the_sentences_of_one_text_are_warned_about(tmp_path):
    """A file whose records are the sentences of one response (Schoenfeld et al.'s labelled files: {"text":
    sentence, "gt-class-2": label}), profiled with --reasoning-field text, gives one-unit traces: said per
    model with the files, in the summary, run.json and the report; a file of whole traces is not named."""
    from click.testing import CliRunner

    from conftest import SAMPLES
    from thinkprobe.cli import main

    response = json.loads(SAMPLES.read_text(encoding="utf-8").splitlines()[0])["response"]
    text = response.split("<think>")[1].split("</think>")[0].strip()
    sentences = [s for s in re.split(r"(?<=[.?!])\s+", text) if s.strip()][:12]
    assert len(sentences) >= 6
    labelled = tmp_path / "labelled.json"
    labelled.write_text(json.dumps({"Question ID": "q1", "data": [{"text": s, "gt-class-2": "Analyze"} for s in sentences]}),
                        encoding="utf-8")
    whole = tmp_path / "whole.jsonl"
    whole.write_text(json.dumps({"id": "w", "model": "m", "text": text}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["profile", str(labelled), str(whole), "--reasoning-field", "text", "-o", str(out),
                                    "--no-summary", "--device", "cpu", "--no-progress", "--linker", "cue",
                                    "--types", "cue", "--no-cache"])
    assert res.exit_code == 0, res.output
    run = json.loads((out / "run.json").read_text())
    (warning,) = run["short_trace_warnings"]
    singles = sum(1 for line in open(out / "graphs.jsonl", encoding="utf-8")
                  if sum(u["section"] == "reasoning" for u in json.loads(line)["units"]) <= 2)
    assert singles >= len(sentences) // 2
    assert warning.startswith(f"model unknown: {singles} of {len(sentences)} traces hold at most 2 Thought Units")
    assert f"{singles} in {labelled}" in warning and str(whole) not in warning
    assert f"warning: {warning}" in res.stderr and not run["coverage_warnings"]
    assert warning in (out / "report.md").read_text(encoding="utf-8")


def test_two_unit_fragments_are_warned_about_too(tmp_path):
    """Schoenfeld's labelled folder profiled as it is: only the sentence records holding '</think>' reach
    the run, most of them a closing '**Final Answer**\\n\\boxed{A}</think>' of two units, and 27 such
    fragments were profiled as traces with no warning (it counted one-unit traces only). A model of
    whole traces is not named."""
    from thinkprobe.accounting import Accounting

    cov = Accounting()
    closing = [{"section": "reasoning"}, {"section": "reasoning"}, {"section": "answer"}]
    for k in range(6):
        cov.trace({"source": "labelled/3.json", "record": k, "model": "unknown", "units": closing})
        cov.trace({"source": "whole.jsonl", "record": k, "model": "m", "units": [{"section": "reasoning"}] * 3})
    (warning,) = [w for w in cov.short_warnings() if w.startswith("model ")]
    assert warning.startswith("model unknown: 6 of 6 traces hold at most 2 Thought Units") and "labelled/3.json" in warning
    assert "join them into one record first" in warning and "untagged" not in warning


def test_short_untagged_answers_are_warned_about_as_answers_without_thinking():
    """tts_knowledge's Qwen3-8B_simpleqa_no_think file alone: 'Answer: 2018 April', untagged, one or two
    units each; the warning had blamed records that are the sentences of one text."""
    from thinkprobe.accounting import Accounting

    cov = Accounting()
    for k in range(6):
        cov.trace({"source": "no_think.jsonl", "record": k, "model": "unknown", "units": [{"section": "reasoning"}],
                   "provenance": {"untagged": True}, "question": "When?"})
    (warning,) = cov.short_warnings()
    assert warning.startswith("model unknown: 6 of 6 traces hold at most 2 Thought Units")
    assert "6 of them are untagged text (no reasoning field or tags): answers given without thinking?" in warning
    assert "--untagged skip" in warning


def test_a_file_of_questions_beside_the_outputs_is_warned_about(tmp_path):
    """Venhoff et al.'s folder keeps its 500 prompts ({"index", "category", "content"}) in messages.json
    beside the models' <think> outputs: read as untagged text, each question would be profiled as a
    trace. Said per file in run.json, the summary and the report; a file of tagged traces is not named,
    and a run of untagged text only (a non-reasoning model's outputs) gets no such warning."""
    from click.testing import CliRunner

    from conftest import SAMPLES
    from thinkprobe.cli import main

    outputs = tmp_path / "reasoning_comparison_m.jsonl"
    outputs.write_text("".join(json.dumps({"response": json.loads(line)["response"]}) + "\n"
                               for line in SAMPLES.read_text(encoding="utf-8").splitlines()[:2]), encoding="utf-8")
    questions = tmp_path / "messages.json"
    questions.write_text(json.dumps([{"index": k, "category": "Mathematical Logic", "content": q} for k, q in enumerate(
        ("Using the numbers 4, 7, and 12, create an equation that equals 100.",
         "Which weighs more, a kilogram of feathers or a kilogram of steel?"))]), encoding="utf-8")
    flags = ["--no-summary", "--device", "cpu", "--no-progress", "--linker", "cue", "--types", "cue", "--no-cache"]
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["profile", str(tmp_path), "-o", str(out), *flags])
    assert res.exit_code == 0, res.output
    run = json.loads((out / "run.json").read_text())
    (warning,) = run["short_trace_warnings"]
    assert warning.startswith(f"file {questions}: all 2 of its traces are untagged text with no question") \
        and str(outputs) not in warning
    assert f"warning: {warning}" in res.stderr and warning in (out / "report.md").read_text(encoding="utf-8")
    alone = tmp_path / "alone"
    res = CliRunner().invoke(main, ["profile", str(questions), "-o", str(alone), *flags, "--no-report"])
    assert res.exit_code == 0, res.output
    assert json.loads((alone / "run.json").read_text())["short_trace_warnings"] == []
    # a non-reasoning model's outputs beside a reasoning model's: untagged too, but each with its question
    # (MiP-Overthinking's gpt4o files); no such warning, the per-model count of untagged text speaks of them
    answers = tmp_path / "gpt4o.jsonl"
    answers.write_text("".join(json.dumps({"question": f"What is {k} + {k}?", "gpt-4o (question)": f"It is {2 * k}."})
                               + "\n" for k in range(1, 4)), encoding="utf-8")
    mixed = tmp_path / "mixed"
    res = CliRunner().invoke(main, ["profile", str(outputs), str(answers), "-o", str(mixed), *flags, "--no-report"])
    assert res.exit_code == 0, res.output
    run = json.loads((mixed / "run.json").read_text())
    assert run["counts"]["untagged"] == 3 and run["short_trace_warnings"] == []
    # nor where a field named as a model's output holds the text, with no question at all (MiP-Overthinking's
    # svamp files: `model_answer`, `answer`, `eval_result`): a model's answers, not a list of prompts
    svamp = tmp_path / "svamp.jsonl"
    svamp.write_text("".join(json.dumps({"model_answer": f"It is {2 * k}.", "answer": str(2 * k), "eval_result": "1"})
                             + "\n" for k in range(1, 4)), encoding="utf-8")
    res = CliRunner().invoke(main, ["profile", str(outputs), str(svamp), "-o", str(tmp_path / "svamp_out"), *flags, "--no-report"])
    assert res.exit_code == 0, res.output
    warnings = json.loads((tmp_path / "svamp_out" / "run.json").read_text())["short_trace_warnings"]
    assert not [w for w in warnings if w.startswith("file ")], warnings


def test_traces_cut_off_before_their_reasoning_ends_are_counted_per_model(tmp_path):
    """Venhoff's distilled models: 5 of 11 and 4 of 8 traces truncated, flagged per trace only; the
    summary, run.json and the report count them per model."""
    from click.testing import CliRunner

    from conftest import SAMPLES
    from thinkprobe.cli import main

    records = [json.loads(line) for line in SAMPLES.read_text(encoding="utf-8").splitlines()[:4]]
    for k, r in enumerate(records):
        if k % 2:
            r["response"] = r["response"].split("</think>")[0]  # an opening tag, no closing one
    data = tmp_path / "cut.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["profile", str(data), "-o", str(out), "--device", "cpu", "--no-progress",
                                    "--linker", "cue", "--types", "cue", "--no-cache"])
    assert res.exit_code == 0, res.output
    models = [records[k]["model"] for k in (1, 3)]
    expected = {m: models.count(m) for m in models}
    run = json.loads((out / "run.json").read_text())
    assert run["truncated_by_model"] == expected and run["counts"]["truncated"] == 2
    assert "2 traces end before their reasoning does" in res.stdout
    assert "2 traces end before their reasoning does" in (out / "report.md").read_text(encoding="utf-8")


def test_files_a_sample_took_nothing_from_are_named(tmp_path):
    """Schoenfeld's folder: --sample 40 drew only from the sentence files, never from the one file that
    holds the traces, and the coverage lists only the files read."""
    from click.testing import CliRunner

    from conftest import SAMPLES
    from thinkprobe.cli import main

    lines = SAMPLES.read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text("".join(lines[:3]), encoding="utf-8")
    (tmp_path / "in" / "b.jsonl").write_text(lines[3], encoding="utf-8")
    (tmp_path / "in" / "empty.jsonl").write_text("", encoding="utf-8")  # nothing to draw: not named
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["profile", str(tmp_path / "in"), "--limit", "2", "-o", str(out), "--device", "cpu",
                                    "--no-progress", "--linker", "cue", "--types", "cue", "--no-cache", "--no-report"])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "run.json").read_text())["files_not_drawn"] == [str(tmp_path / "in" / "b.jsonl")]
    assert f"note: --limit took no record from 1 data file of the inputs: {tmp_path / 'in' / 'b.jsonl'}" in res.stderr


def test_an_answer_line_closing_a_reasoning_field_of_its_own_is_the_answer():
    """tts_knowledge's budget-forced Qwen3-8B: 113 records whose `thought` opens <think>, never closes it and
    ends "Answer: I don't know.<|im_end|>" beside an empty `response`: the answer line was a reasoning unit
    and the trace had no answer."""
    record = {"problem": "Capital?", "thought": "<think>\nI recall it is Paris.\n\nAnswer: Paris<|im_end|>", "response": ""}
    trace = one(record)
    assert trace.reasoning.content.strip() == "I recall it is Paris." and trace.answer.content == "Paris"
    assert not trace.provenance["truncated"]
    answered = one({**record, "response": "Paris."})  # an answer of its own: the closing line stays reasoning
    assert answered.answer.content == "Paris." and answered.reasoning.content.rstrip().endswith("Answer: Paris")


def test_the_answer_options_join_the_question():
    """MR-BEN keeps its options apart from the question ("The time required for one revolution is", then
    `Options` "A: independent of M ..."), and its steps reason about them ("Choice A states ..."): the
    question shown to the parser and the report lacked them for all 4,296 of its non-coding records."""
    record = {"Question": "The period is", "Options": "A: independent of M \nB: linear in R ",
              "Model_Solution_Steps": ["Step 1: Choice B holds.", "Solution: Choice_B"], "Ground_Truth_Answer": "B"}
    fields = FieldMap(reasoning_field="Model_Solution_Steps")
    assert one(record, fields).question == "The period is\nA: independent of M \nB: linear in R"
    listed = one({**record, "Options": ["independent of M", "linear in R"]}, fields).question
    assert listed == "The period is\nA. independent of M\nB. linear in R"
    written = {**record, "Question": "The period is\nA: independent of M \nB: linear in R"}  # already there
    assert one(written, fields).question == written["Question"]


def test_a_missing_premise_graded_correct_by_its_record_is_said():
    """A new user graded MiP-Overthinking with --correct-field eval_result --correct-values '1=correct,...': a
    missing-premise question answered with a made-up premise (eval_result 1, matching the whole question's
    answer) counted correct without a word, and the summary advised --correct-field, which was given."""
    from thinkprobe.accounting import Accounting, grade_notes

    def graph(trace_id, correct):
        provenance = {"gold_not_asked": "answer answers the whole question; the model was asked `insufficient_question`",
                      **({"correct_from": "eval_result", "grade": "1" if correct else "0"} if correct is not None else {})}
        return {"trace_id": trace_id, "model": "r1", "source": "a.json", "record": trace_id, "correct": correct,
                "provenance": provenance, "redundancy": {"metrics": {}}, "units": [{"section": "reasoning", "text": "x"}]}

    accounting = Accounting()
    for k, correct in enumerate((True, True, None)):  # two graded correct by eval_result; one without a grade
        accounting.trace(graph(f"t{k}", correct))
    grades = accounting.grade_summary()
    assert (grades["gold_not_asked"], grades["gold_not_asked_graded"], grades["gold_not_asked_correct"]) == (3, 2, 2)
    (note,) = grade_notes(grades, advice=True)
    assert "2 of them carry a grade of their own, 2 of those 'correct':" in note and "--correct-field" not in note
    assert "so such a 'correct' is a made-up premise." in note
    # 0 (an abstention, the right answer there) mapped to correct as well: the two are counted apart (a new user's run
    # said all 9 were made-up premises, 2 of them abstentions)
    mixed = Accounting()
    for k, correct in enumerate((True, True, None)):
        mixed.trace(graph(f"t{k}", correct))
    abstained = graph("t3", True)
    abstained["provenance"]["grade"] = "0"
    mixed.trace(abstained)
    grades = mixed.grade_summary()
    assert (grades["gold_not_asked_correct"], grades["gold_not_asked_made_up"]) == (3, 2)
    (note,) = grade_notes(grades)
    assert "3 of those 'correct', 2 of them from a grade 1:" in note
    assert note.endswith("the other 1 is read from other values (0, an abstention?).")
    ungraded = Accounting()
    ungraded.trace(graph("t", None))
    assert grade_notes(ungraded.grade_summary(), advice=True)[0].endswith("with --correct-field.")


def test_a_repetition_loop_is_named_in_the_warnings():
    """ReasoningFlow's gpqa-diamond_48_QwQ-32B repeats "Wait, no, vinyloxy is OCH2CH2?" 563 times in a row
    (MiP-Overthinking's Qwen32 response 2: one sentence 3,573 times): every copy a unit, its indicators
    described the loop (max_chain_depth 573) and nothing said so."""
    from thinkprobe.accounting import LOOP_MIN, Accounting

    def graph(trace_id, texts):
        return {"trace_id": trace_id, "model": "qwq", "source": "a.jsonl", "record": trace_id, "correct": None,
                "provenance": {}, "redundancy": {"metrics": {}},
                "units": [{"section": "reasoning", "text": t} for t in texts]}

    accounting = Accounting()
    accounting.trace(graph("t1", ["So x = 2."] + ["Wait, no, vinyloxy is OCH2CH2?"] * (LOOP_MIN + 5)))
    accounting.trace(graph("t2", ["Check it.", "check it!"] * 3 + ["Wait."] * (LOOP_MIN - 1)))  # 6 then 9 in a row: too few
    (warning,) = accounting.loop_warnings()
    assert warning.startswith("model qwq: 1 of 2 traces hold a repetition loop")
    assert f"t1: {LOOP_MIN + 5} times, 'Wait, no, vinyloxy is OCH2CH2?'" in warning
    assert Accounting().loop_warnings() == []
    # a block of sentences repeated (Venhoff et al.'s gpt-4o traces): named with its length
    accounting.trace(graph("t3", ["So x = 2."] + ["Let me see.", "Check a.", "Check b."] * LOOP_MIN))
    (warning,) = accounting.loop_warnings()
    assert warning.startswith("model qwq: 2 of 3 traces") and f"t3: {LOOP_MIN} times, 'Let me see.' and the 2 after it" in warning


@pytest.mark.realdata
def test_a_loop_of_a_block_of_sentences_in_real_traces(shared_data):
    """A new user's trial: three of gpt-4o's traces in Venhoff et al.'s reasoning comparison repeat a block
    of several sentences hundreds of times (record 152: 1,515 of its 1,533 units copies of earlier ones) and
    no loop was named: the warning looked for one sentence repeated. Now the block's copies count."""
    from itertools import islice

    from thinkprobe.config import Config
    from thinkprobe.graph import units_of
    from thinkprobe.segment import longest_repeat

    path = shared_data / "venhoff_reasoning_comparison" / "reasoning_comparison_gpt-4o.json"
    if not path.exists():
        pytest.skip(f"{path} not in the shared data")
    cfg = Config.load()
    traces = [t for t in iter_traces(path) if getattr(t, "record", None) in (1, 152, 192, 0)]
    found = {t.record: longest_repeat(u.text for u in units_of(t, cfg)[0] if u.section == "reasoning") for t in traces}
    assert [found[k][:2] for k in (1, 152, 192)] == [(65, 28), (504, 3), (39, 18)]
    assert found[0][0] < 10  # a trace without a loop
    # signs count: BIG-Bench Mistake's Dyck steps ("( ; stack: ( (", "< ; stack: ( ( <") are all the word "stack",
    # and 582 of its 986 traces were named as loops; none repeats a step more than 5 times in a row
    dyck = islice((t for t in iter_traces(shared_data / "big_bench_mistake" / "dyck_languages.jsonl",
                                          FieldMap(reasoning_field="steps")) if isinstance(t, Trace)), 200)
    assert max(longest_repeat(u.text for u in units_of(t, cfg)[0] if u.section == "reasoning")[0] for t in dyck) < 10
