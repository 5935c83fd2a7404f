"""Detection: where a record keeps its reasoning (a dedicated field, chat completions, content
blocks, Responses output items, lm-eval samples, tags in a text field), its answer, model, domain,
id, question, gold answer and correctness, and where each value came from.
"""
from __future__ import annotations

import datetime
import decimal
import math
import re
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

from ..records import InputError, Section, Trace
from .fields import (ANSWER_FIELDS, DOMAIN_FIELDS, GOLD_FIELDS, ID_FIELDS, MODEL_FIELDS, QUESTION_FIELDS,
                     REASONING_FIELDS, TAGGED_FIELDS)
from .formats import strip_extensions, type_name
from .grades import CORRECT_FIELDS, GENERATION_CORRECT_FIELDS, GRADES, grade_key, parse_correct_values, read_grade, unread_codes
from .sources import FieldMap
from .guess import HIDDEN_REASONING, is_api_error, is_code, longest_text_hint, model_output, output_prompt, step_texts, tagged_field
from .apis import cut_by_limit, held_responses, hidden_reasoning_tokens
from .blocks import (BLOCK_SEPARATOR, ENCRYPTED, SUMMARY_FIELD, TURN_REASONING_KEYS, Found, field_candidates,
                     thought_parts, turn_candidates, typed_blocks)
from .blocks import joined as join_pieces
from .questions import missing_premise, premise_removed, with_options, without_turn_opening
from .tags import SPECIAL_TOKEN, TAG_PAIRS, Split, answer_parts, split_tags, trim

__all__ = ["get_path", "GRADES", "ENCRYPTED", "UNTAGGED", "CHOICE_MESSAGES", "record_position", "REASONING_FIELDS", "TAGGED_FIELDS", "ANSWER_FIELDS", "MODEL_FIELDS", "DOMAIN_FIELDS", "ID_FIELDS", "QUESTION_FIELDS", "GOLD_FIELDS", "CORRECT_FIELDS", "GENERATION_CORRECT_FIELDS", "TURN_LISTS", "TURN_REASONING_KEYS", "CHOICE_MESSAGE", "RESPONSES_OUTPUT", "LM_EVAL_RESPS", "BLOCK_SEPARATOR", "STEP_SEPARATOR", "ASSISTANT_ROLES", "USER_ROLES", "CODE_TEST_FIELDS", "detect", "record_model", "named_value"]


TURN_LISTS = ("messages", "conversations")


# OpenAI chat completions (vLLM, DeepSeek API): choices[0].message.reasoning(_content); inspect_ai's
# ModelOutput keeps the same under output; Ollama's /api/chat a `message` with `thinking`.
CHOICE_MESSAGE = "choices[0].message"


CHOICE_MESSAGES = (CHOICE_MESSAGE, "output.choices[0].message", "message")  # message: Ollama's /api/chat


GEMINI_PARTS = "candidates[0].content.parts"  # Gemini's generateContent: `thought` parts, then the answer's


# Why a record holds no reasoning to profile although it has a place for it (and ENCRYPTED, from .blocks).
UNTAGGED = ("untagged text: no reasoning field and no reasoning tags, so the whole text would be profiled as "
            "reasoning; left out by --untagged skip")
EMPTY_BESIDE_ANSWER = "empty reasoning beside an answer (given without thinking?)"


# OpenAI Responses API objects: an `output` list of typed items, also inside a batch result
RESPONSES_OUTPUT = ("output", "response.output", "response.body.output")


# lm-eval samples: `resps` holds the raw generations (a list per request), `filtered_resps` the
# extracted answers; the raw text is the trace.
LM_EVAL_RESPS = "resps"


# A list of steps is joined into one text with this (content blocks and summary parts with
# BLOCK_SEPARATOR, from .blocks); provenance says so and offsets point into the joined text.
STEP_SEPARATOR = "\n"


ASSISTANT_ROLES = frozenset({"assistant", "gpt", "model"})


USER_ROLES = frozenset({"user", "human"})


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


# Programming records: the tests their extracted code is run against (never in this process).
CODE_TEST_FIELDS = ("tests", "test_cases", "test")


def detect(
    record: dict, fields: FieldMap, source: str, record_index: int | str, *, id_stem: str | None = None,
    generation: int | None = None,
) -> Trace:
    """Turn one raw record into a Trace, or raise InputError naming the field at fault.

    ``record_index`` is the locator from `iter_records`; errors repeat it, ``Trace.record`` gets the
    0-based position. ``id_stem`` replaces the file stem in generated trace ids. ``generation`` picks
    one entry of an OpenR1-style ``generations`` list (the id gets ``:g<N>``, the verdict comes from
    ``correctness_math_verify[N]``); `record_traces` makes one trace per generation.
    """

    def error(field: str, reason: str) -> InputError:
        if not isinstance(record, dict):
            return InputError(source, record_index, field, reason)
        return InputError(source, record_index, _origin(record, field), reason, trace_id=_record_id(record, fields, generation))

    if not isinstance(record, dict):
        raise error("", f"record is a {type_name(record)}, not an object")
    found = _locate_reasoning(record, fields, error, generation)
    reasoning_from, text = found.path, found.text
    split = split_tags(text)
    untagged = not found.dedicated and split.tag is None
    if untagged and fields.untagged == "skip":
        raise error(_origin(record, reasoning_from), UNTAGGED)
    start, end = trim(text, *split.reasoning)
    answer_fields = (fields.answer_field, *found.answer_fields) if fields.answer_field else found.answer_fields
    if start >= end:
        # beside an answer: a run without thinking (tts_knowledge's Claude and Gemini no-think records, an empty
        # thought_summary beside the response), or a tool that kept only the answer
        beside = _answer_section(record, answer_fields, reasoning_from, text, split, found.answer) is not None
        raise error(_origin(record, reasoning_from), EMPTY_BESIDE_ANSWER if beside else "empty reasoning")
    if untagged and is_api_error(text[start:end]):
        shown = text[start:end] if end - start <= 80 else text[start:start + 77] + "..."
        raise error(_origin(record, reasoning_from), f"the text is a generation API's error message ({shown!r}), "
                                                     "not a model's output")
    sections = [Section("reasoning", _origin(record, reasoning_from), text, start, end)]
    answer = _answer_section(record, answer_fields, reasoning_from, text, split, found.answer)
    if answer is None and found.dedicated and split.answer is None and (last := _CLOSING_ANSWER.search(text, start, end)):
        # a reasoning field of its own that ends "Answer: ..." beside an empty answer field (tts_knowledge's Qwen3
        # `thought`, budget-forced: it answered before closing its <think>, so it was not cut off): the answer
        answer, end = Section("answer", reasoning_from, text, *last.span(1)), trim(text, start, last.start())[1]
        split = replace(split, truncated=False)
        sections = [Section("reasoning", _origin(record, reasoning_from), text, start, end)]
    if answer is not None and answer.field != reasoning_from and split.tag is None and split.answer is not None:
        # a closing "#### 36" / "The answer is: 36" line of a text whose answer is another field's: reasoning
        start, end = trim(text, 0, len(text))
        sections = [Section("reasoning", _origin(record, reasoning_from), text, start, end)]
    if answer is not None:
        answer = Section("answer", _origin(record, answer.field), answer.text, answer.start, answer.end)
        if answer.field != _origin(record, reasoning_from) and answer.content.strip() == text[start:end].strip():
            # e.g. tts_knowledge's gpt-5-mini records whose thought_summary is the response
            raise error(_origin(record, reasoning_from), f"the reasoning is the answer itself ({answer.field} holds "
                                                         "the same text): nothing to profile as reasoning")
    if answer and answer.field == sections[0].field:  # blocks it tags as reasoning are reasoning (answer_parts)
        sections += [Section(name, answer.field, answer.text, a, b) for name, a, b in answer_parts(answer.text, answer.start, answer.end)]
    elif answer:
        sections.append(answer)

    position = record_position(record_index)
    from_path = fields.from_path(source)
    model, model_from = _model(record, fields, from_path.get("model"))
    domain, domain_from = named_value(record, fields.domain, fields.domain_field, from_path.get("domain"), DOMAIN_FIELDS)
    # a design factor the user names (never guessed): none when not named or not found
    group, group_from = named_value(record, fields.group, fields.group_field, from_path.get("group"), ())
    trace_id, trace_id_from = _first_scalar(record, _with_override(fields.id_field, ID_FIELDS))
    # the record's own id, kept apart from the run-unique trace id so runs join across models
    source_id = trace_id if fields.id_field or "source_id" not in record else record["source_id"]
    if trace_id is None:
        stem = id_stem if id_stem is not None else strip_extensions(Path(source).name)
        trace_id, trace_id_from = f"{stem}:{position}", "file:record"
    if generation is None and "layout" in record and isinstance(record.get("part"), int):
        generation = record["part"]  # one of a record's several choices / outputs / repeats (thinkprobe.io.apis)
    if generation is not None:
        trace_id = f"{trace_id}:g{generation}"
    gold_fields = tuple(f for f in GOLD_FIELDS if f != reasoning_from)
    gold, gold_from = _first_scalar(record, _with_override(fields.gold_field, gold_fields))
    grade = read_grade(record, get_path, fields.correct_field, parse_correct_values(fields.correct_values), generation)
    shared_grade = None
    several = ("layout" in record and isinstance(record.get("part"), int)) or (
        generation is not None and isinstance(record.get("generations"), list) and len(record["generations"]) > 1)
    if grade is not None and several and not fields.correct_field and grade.field in CORRECT_FIELDS:
        # one grade for a record's several choices (n > 1) or generations: which one it grades is not known
        shared_grade, grade = f"{grade.field}={grade.value}", None
    cut = cut_by_limit(record, get_path)  # where the API says the output stopped at its token limit
    provenance = {
        "reasoning_from": _origin(record, reasoning_from),
        "tag": split.tag,
        "open_tag_missing": split.open_tag_missing,
        "truncated": split.truncated or cut is not None and answer is None,  # an answer cut short: reasoning whole
        "answer_from": answer.field if answer else None,
        "model_from": _origin(record, model_from) or "default",
        "domain_from": _origin(record, domain_from) or "default",
        **({"group_from": _origin(record, group_from)} if group is not None else {}),
        "trace_id_from": _origin(record, trace_id_from),
        "gold_from": _origin(record, gold_from),
        "correct_from": _origin(record, grade.field) if grade else None,
        "untagged": untagged,
    }
    if grade is not None:
        provenance["grade"] = grade.value
        if grade.verdict is None and fields.correct_values is None and grade_key(grade.value) not in GRADES:
            provenance["unread_grade"] = f"{grade.field}={grade.value}"  # --correct-field holding words no default reads
    elif shared_grade is not None:
        provenance["shared_grade"] = shared_grade  # not applied: the answer matcher grades the choice
    elif codes := unread_codes(record, get_path):  # e.g. MiP's eval_result: a grade only --correct-values reads
        provenance["unread_grade"] = ", ".join(f"{field}={value}" for field, value in codes)
    if found.summarised or any(SUMMARY_FIELD.search(f) for f in (provenance["reasoning_from"] or "",
                                                                  (found.joined or {}).get("from", ""))) \
            or found.dedicated and any(_CLAUDE_SUMMARY.search(m) for m in (model, record.get("response_model"))
                                       if isinstance(m, str)):
        provenance["summarised"] = True  # a summary of hidden thinking (Gemini's thought_summary), not the chain itself
    if (lead := _before_reasoning(record, reasoning_from, text, split)) is not None:
        provenance["before_reasoning"] = lead  # the model's words before its opening tag, in no section
    if is_code(text[start:end]):
        provenance["reasoning_is_code"] = True  # a program, not prose (MR-BEN's coding solutions): counted in the summary
    if cut is not None:  # the API stopped the output at its token limit: in the reasoning, or in the answer
        provenance["truncated_by"] = cut
    if "layout" in record:
        provenance["layout"] = record["layout"]
    if source_id is not None:
        provenance["source_id"] = str(source_id)
    if found.joined:
        provenance["joined"] = found.joined
    if generation is not None:
        provenance["generation"] = generation
    # a named field first, then the prompt a `<model> (<prompt>)` output answers, then detection
    question = (fields.question_field and _question(record, fields.question_field)) or output_prompt(record, reasoning_from) \
        or missing_premise(record) or _question(record) or _prompt_turn(sections)
    question = with_options(record, without_turn_opening(question))
    if gold is not None and not fields.gold_field and (asked := premise_removed(record, question, source)):
        # MiP-Overthinking: the model was asked the question with a premise removed, which has no answer; the
        # record's gold answers the whole question (matched, a made-up premise would be graded correct)
        provenance["gold_not_asked"] = f"{gold_from} answers the whole question; {asked}"
        gold = None
        provenance["gold_from"] = None
    return Trace(
        trace_id=trace_id,
        model=model or "unknown",
        domain=domain or "unknown",
        group=group,
        sections=tuple(sections),
        question=question,
        gold_answer=gold,
        correct=grade.verdict if grade else None,
        provenance=provenance,
        source=source,
        record=position,
        code_tests=next((record[k] for k in CODE_TEST_FIELDS if record.get(k)), None),
    )


# Claude 4 and later return a summary of their thinking, wherever it is saved (Anthropic's extended-thinking
# documentation; Claude 3.7 Sonnet returns it whole)
_CLAUDE_SUMMARY = re.compile(r"claude-(?:(?:opus|sonnet|haiku)-)?[4-9](?!\d)", re.IGNORECASE)  # also claude-sonnet-4.5


def record_model(record: Any, fields: FieldMap, source: str) -> str | None:
    """The model a record would be grouped under, by the same precedence as its trace's (for a
    record that gives no trace: its skip is counted per model)."""
    from_path = fields.from_path(source).get("model")
    if not isinstance(record, dict):
        return fields.model or from_path
    return _model(record, fields, from_path)[0]


def _model(record: dict, fields: FieldMap, from_path: str | None) -> tuple[str | None, str | None]:
    """The model and where it came from: as `named_value`, then the name in a `<model> (<field>)` output field."""
    model, model_from = named_value(record, fields.model, fields.model_field, from_path, MODEL_FIELDS)
    if model is None and (output := model_output(record)):
        return output.model, output.field
    return model, model_from


def _origin(record: dict, path: str | None) -> str | None:
    """Where a value a framework layout derived (thinkprobe.io.layouts) was read from: its
    `derived_from` names a derived field, or (a key ending in "." or "[") the start of a path it moved
    (one of several choices read as choices[0])."""
    derived = record.get("derived_from")
    if not isinstance(derived, dict) or path is None:
        return path
    if path in derived:
        return derived[path]
    start = next((k for k in derived if k.endswith((".", "[")) and path.startswith(k)), None)
    return derived[start] + path[len(start):] if start else path


def named_value(record: dict, constant: str | None, field: str | None, from_path: str | None,
                auto: tuple[str, ...]) -> tuple[str | None, str | None]:
    """Model, domain or group: a constant option, then the named field, then the file path, then detection."""
    if constant:
        return constant, "option"
    if field:
        value, path = _first_scalar(record, (field,))
        if value is not None:
            return value, path
    if from_path:
        return from_path, "path"
    return _first_scalar(record, auto)


# "answer" is not among them: records keep their gold answer under that name more often than the model's.
_ANSWER_SIBLINGS = ("content", "text")


def _siblings(path: str) -> tuple[str, ...]:
    """Answer fields beside a named reasoning field: ``choices[0].message.reasoning`` ->
    ``choices[0].message.content``; ``model_response.reasonings[2]`` -> ``model_response.text[2]``."""
    match = re.fullmatch(r"(?:(.*)\.)?[^.\[\]]+((?:\[-?\d+\])*)", path)
    if not match:
        return ()
    parent, index = match.group(1), match.group(2)
    return tuple(f"{parent + '.' if parent else ''}{name}{index}" for name in _ANSWER_SIBLINGS)


def _locate_reasoning(
    record: dict, fields: FieldMap, error: Callable[[str, str], InputError], generation: int | None = None
) -> Found:
    if fields.reasoning_field:
        # An explicit choice never falls back silently to another field.
        path = fields.reasoning_field
        found, value = get_path(record, path)
        if not found or value is None:
            raise error(path, f"field not found; {_keys_hint(record, path)}")
        joined = None
        if steps := step_texts(path, value):
            # a list of steps (ProcessBench, BIG-Bench Mistake, MR-BEN; ReasonEval's lists of one text each) is one trace
            path, value, joined = join_pieces(path, steps, STEP_SEPARATOR)
        if not isinstance(value, str):
            raise error(path, f"expected text or a list of texts, found {type_name(value)}")
        if not value.strip():
            raise error(path, _empty_reasoning(record, path, fields.answer_field))
        # the answer detection would have found stays: beside the named field, then where the record keeps one
        try:
            auto = _locate_reasoning(record, FieldMap(), error, generation).answer_fields
        except InputError:
            auto = ()
        answers = tuple(dict.fromkeys(f for f in (*_siblings(path), *auto, *ANSWER_FIELDS) if f != path))
        return Found(path, value, answers, joined, dedicated=True)

    # Every candidate is tried before giving up; a place of the wrong type is only reported when no
    # other holds reasoning. A dedicated place that is present but empty (null reasoning_content,
    # encrypted blocks) means the record has no reasoning to show: its answer is never profiled as
    # if it were reasoning, unless another place carries reasoning tags.
    held = held_responses(record)
    if len(held) > 1:  # one response under a key is read as if alone (thinkprobe.io.apis); of several, which?
        raise error(next(iter(held)), "; ".join(f"{k} holds {kind}" for k, kind in held.items()) + ": which is the "
                    "trace? Name its reasoning, e.g. --reasoning-field " + next(
                        f"{k}.choices[0].message.reasoning_content" if "chat" in kind else f"{k}.content[0].thinking"
                        for k, kind in held.items()))
    tried, wrong, empty, plain, empty_inline = [*REASONING_FIELDS], None, None, None, None
    for candidate, strong in (*_dedicated_candidates(record), *_inline_candidates(record, generation)):
        tried.append(candidate.path)
        if candidate.empty:
            empty = empty or candidate
            continue
        value = candidate.text
        if value is None:
            continue
        if not isinstance(value, str):
            if candidate.dedicated and empty is None:  # a reasoning field that holds no text blocks the fallback
                empty = Found(candidate.path, None, (), dedicated=True, empty=True,
                               reason=f"expected text, found {type_name(value)}")
            wrong = wrong or (candidate.path, value)
            continue
        if not value.strip():
            if candidate.dedicated:
                empty = empty or candidate
            else:
                empty_inline = empty_inline or candidate.path
            continue
        if strong or candidate.dedicated or split_tags(value).tag is not None:
            return candidate
        plain = plain or candidate
    if empty:
        if hidden := hidden_reasoning_tokens(record, get_path):  # GPT-5's summary left empty: its thinking was hidden
            raise error(empty.path, f"{HIDDEN_REASONING}: `{empty.path}` is empty and `{hidden[0]}` counts "
                                    f"{hidden[1]:,} reasoning tokens, so the model thought and its reasoning was not "
                                    "returned; the text is the final answer only")
        # never the answer profiled as if it were reasoning
        raise error(empty.path, _empty_reasoning(record, empty.path, fields.answer_field)
                    if empty.reason == "empty reasoning" else empty.reason)
    known = (*tried, *QUESTION_FIELDS, *GOLD_FIELDS, *ID_FIELDS, *MODEL_FIELDS, *DOMAIN_FIELDS)
    other = tagged_field(record, known)  # a field no list names, holding reasoning tags
    if other:
        return Found(other[0], other[1], ())
    if hidden := hidden_reasoning_tokens(record, get_path):  # o-series, GPT-5: the thinking is counted, not returned
        where = plain.path if plain else "reasoning"
        raise error(where, f"{HIDDEN_REASONING}: `{hidden[0]}` counts {hidden[1]:,} reasoning tokens the record does not "
                           "hold" + (" (Gemini returns summaries of them with includeThoughts)" if "hought" in hidden[0]
                                     else "") + ", so its text is the final answer only"
                           + (f"; to profile that answer as the reasoning, name it with --reasoning-field '{plain.path}'"
                              if plain else ""))
    if plain:
        return plain
    if output := model_output(record):  # `gpt-4o (question)`: a named model's output, no reasoning tags
        if output.hidden_tokens is not None:
            raise error(output.field, output.hidden_reason())
        return Found(output.field, output.text, ())
    if wrong:
        hint = (f" (a list of texts, as steps: --reasoning-field {wrong[0]} joins them into one trace)"
                if isinstance(wrong[1], list) and wrong[1] and all(isinstance(x, str) for x in wrong[1]) else "")
        raise error(wrong[0], f"expected text, found {type_name(wrong[1])}{hint}")
    if empty_inline:
        raise error(empty_inline, _empty_reasoning(record, named=fields.answer_field))
    raise error("reasoning", f"no reasoning text found; tried: {', '.join(dict.fromkeys(tried))}; "
                             f"{_keys_hint(record, '')} (name the field with --reasoning-field)"
                             f"{longest_text_hint(record, known)}")


def _empty_reasoning(record: dict, field: str = "", named: str | None = None) -> str:
    """Why a record's reasoning field is empty: beside an answer field holding text (the one --answer-field
    `named`, or one detection knows), or not."""
    beside = any(isinstance(value := get_path(record, path)[1], str) and value.strip()
                 for path in ((named, *ANSWER_FIELDS) if named else ANSWER_FIELDS) if path != field)
    return EMPTY_BESIDE_ANSWER if beside else "empty reasoning"


def _dedicated_candidates(record: dict) -> Iterator[tuple[Found, bool]]:
    """The dedicated reasoning fields, in order (a list of reasoning texts gives its first)."""
    for path in REASONING_FIELDS:
        found, value = get_path(record, path)
        if not found or path == "reasoning" and isinstance(value, dict) and isinstance(record.get("output"), list):
            continue  # a Responses object's `reasoning` is its request's settings (effort, summary), not text
        if path == "reasonings" and isinstance(value, list):
            if not value or value[0] is None:
                yield Found(path, None, ANSWER_FIELDS, dedicated=True, empty=True), True
                continue
            path, value = "reasonings[0]", value[0]
        if value is None:
            yield Found(path, None, ANSWER_FIELDS, dedicated=True, empty=True), True
        else:
            yield Found(path, value, ANSWER_FIELDS, dedicated=True), True


def _keys_hint(record: dict, path: str) -> str:
    """The keys a record does have, at the deepest level of ``path`` that resolves."""
    node, walked = record, ""
    for key, index in _PATH_TOKEN.findall(path)[:-1]:
        step = f"{'.' if walked else ''}{key}" if key else f"[{index}]"
        found, value = get_path(record, walked + step)
        if not found or not isinstance(value, (dict, list)):
            break
        node, walked = value, walked + step
    where = f"`{walked}`" if walked else "the record"
    if isinstance(node, list):
        return f"{where} is a list of {len(node)}"
    keys = [f"{k} (null)" if node[k] is None or (isinstance(node[k], str) and not node[k].strip()) else str(k)
            for k in node]  # present, but empty
    shown = ", ".join(keys[:30]) + (f", ... ({len(keys)} keys)" if len(keys) > 30 else "")
    return f"{where} has: {shown or 'no keys'}"


def _inline_candidates(record: dict, generation: int | None = None) -> Iterator[tuple[Found, bool]]:
    """(candidate, strong) for places that may hold reasoning inline, in order; a candidate's text may
    be None (absent) or a non-string (reported if nothing better turns up)."""
    for name in TAGGED_FIELDS:
        yield from field_candidates(record.get(name), name)
    for base in RESPONSES_OUTPUT[1:]:  # a Responses API object nested in a batch result
        found, value = get_path(record, base)
        blocks = typed_blocks(value, base) if found and isinstance(value, list) else None
        if blocks:
            yield blocks, True
    resps = record.get(LM_EVAL_RESPS)
    if isinstance(resps, list) and resps:
        first = resps[0]
        if isinstance(first, list) and first:
            yield Found(f"{LM_EVAL_RESPS}[0][0]", first[0], ()), False
        elif not isinstance(first, list):
            yield Found(f"{LM_EVAL_RESPS}[0]", first, ()), False
    generations = record.get("generations")
    if isinstance(generations, list) and generations:
        g = generation if generation is not None and 0 <= generation < len(generations) else 0
        # a generation asked for by number is taken even without tags (OpenR1 rows repeat one in messages)
        yield Found(f"generations[{g}]", generations[g], ()), generation is not None
    elif generations is not None and not isinstance(generations, list):
        yield Found("generations", generations, ()), False
    found, parts = get_path(record, GEMINI_PARTS)
    if found and isinstance(parts, list) and (gemini := thought_parts(parts, GEMINI_PARTS)):
        yield gemini
    for choice in CHOICE_MESSAGES:
        found, message = get_path(record, choice)
        if found and isinstance(message, dict):
            yield from turn_candidates(message, choice)
    for list_name in TURN_LISTS:
        turns = record.get(list_name)
        if not isinstance(turns, list):
            continue
        index = next((i for i in range(len(turns) - 1, -1, -1) if _role(turns[i]) in ASSISTANT_ROLES), None)
        if index is not None:
            yield from turn_candidates(turns[index], f"{list_name}[{index}]")
    found, value = get_path(record, "raw_text.response")
    yield Found("raw_text.response", value if found else None, ()), False


def _answer_section(
    record: dict, answer_fields: tuple[str, ...], reasoning_from: str, text: str, split: Split,
    joined_answer: tuple[str, str] | None = None,
) -> Section | None:
    """The answer: the first answer field holding text (`joined_answer`: (name, text) of one joined from
    several pieces), else what follows the reasoning's closing tag."""
    for path in answer_fields:
        if path == reasoning_from:
            continue
        found, value = (True, joined_answer[1]) if joined_answer and path == joined_answer[0] else get_path(record, path)
        if not found or not isinstance(value, str) or not value.strip():
            continue
        # The answer field may repeat the reasoning inside tags, opening it (or only closing it, its opening
        # tag missing); only what follows them is the answer. A tag it mentions, never closed or after text
        # (in code, in prose: "reason inside <thinking> tags"), is part of the answer.
        own = split_tags(value)
        before = value[:own.reasoning[0]].strip()  # the opening tag and what precedes it
        repeats = own.tag is not None and not own.truncated and (own.open_tag_missing or (
            len(before) <= 64 and "`" not in before and not _PROSE.search(before)))
        span = own.answer if repeats else (0, len(value))
        if span:
            start, end = trim(value, *span)
            if start < end:
                return Section("answer", path, value, start, end)
    if split.answer:
        start, end = trim(text, *split.answer)
        if start < end:
            return Section("answer", reasoning_from, text, start, end)
    return None


_CLOSING_ANSWER = re.compile(r"\n[ \t]*\n[ \t]*(?:\*\*)?(?:Final )?Answer:(?:\*\*)?[ \t]*(\S[^\n]*?)\s*(?:<\|[a-z_]+\|>\s*)*\Z",
                             re.IGNORECASE)
_PROSE = re.compile(r"[A-Za-z]{3,}[ ,;]+[A-Za-z]{3,}")  # words before a tag: text that mentions it, not an opening


def _question(record: dict, field: str | None = None) -> str | None:
    for path in _with_override(field, QUESTION_FIELDS):
        found, value = get_path(record, path)
        if found and isinstance(value, str) and value.strip():
            return value
    for list_name in TURN_LISTS:
        turns = record.get(list_name)
        if isinstance(turns, list):
            for turn in turns:
                if _role(turn) in USER_ROLES:
                    value = turn.get("content", turn.get("value"))
                    if isinstance(value, str) and value.strip():
                        return value
    return None


# The last user turn of a chat-template prompt kept before the reasoning in the same field (Venhoff et
# al.'s distilled models: "<｜User｜>...<｜Assistant｜><think>..."): DeepSeek, ChatML, Llama 3.
_PROMPT_TURN = re.compile(r"<｜User｜>(.*?)<｜Assistant｜>|<\|im_start\|>user\n(.*?)<\|im_end\|>"
                          r"|<\|start_header_id\|>user<\|end_header_id\|>\n*(.*?)<\|eot_id\|>", re.DOTALL)


def _before_reasoning(record: dict, reasoning_from: str, text: str, split: Split) -> str | None:
    """The model's own words before the tag that opens its reasoning (Claude 3 Opus prompted to think in
    tags, Venhoff et al.: "Here is my response:" then <think>), at most 80 characters of them; None when
    there are none. A prompt before it is not the model's: a chat template's (DeepSeek's "<｜User｜>...
    <｜Assistant｜>": only what follows its last special token counts), or one a field of the record holds
    too (Thought Anchors' `full_cot` after its `prompt`)."""
    if split.tag not in _OPENINGS or split.open_tag_missing:
        return None
    lead = SPECIAL_TOKEN.split(text[:split.reasoning[0] - len(split.tag)])[-1].strip()
    if not re.search(r"\w", lead):
        return None
    head = " ".join(lead.split())[:60]
    if any(isinstance(v, str) and head in " ".join(v.split()) for k, v in record.items() if k != reasoning_from):
        return None
    return lead if len(lead) <= 80 else lead[:77] + "..."


_OPENINGS = frozenset(opening for opening, _ in TAG_PAIRS)


def _prompt_turn(sections: list[Section]) -> str | None:
    """The question from a chat-template prompt before the reasoning, when no field holds one."""
    reasoning = next((s for s in sections if s.name == "reasoning"), None)
    if reasoning is None or reasoning.start == 0:
        return None
    turns = [next(g for g in m.groups() if g is not None).strip() for m in _PROMPT_TURN.finditer(reasoning.text[:reasoning.start])]
    return turns[-1] if turns and turns[-1] else None


def _first_scalar(record: dict, paths: tuple[str, ...]) -> tuple[str | None, str | None]:
    for path in paths:
        found, value = get_path(record, path)
        if not found or isinstance(value, bool) or isinstance(value, float) and not math.isfinite(value):
            continue  # NaN (a missing cell of a pandas frame, JSON's NaN) names no model, domain or id
        if isinstance(value, (int, float)) or (isinstance(value, str) and value.strip()):
            return str(value), path
        if isinstance(value, (decimal.Decimal, uuid.UUID)):  # Parquet's decimal and uuid ids
            return str(value), path
        if isinstance(value, (datetime.date, datetime.time)):  # Parquet's timestamp ids (datetime is a date)
            return value.isoformat(), path
    return None, None


def _record_id(record: dict, fields: FieldMap, generation: int | None) -> str | None:
    """The id a record gives its trace (a layout's, e.g. a batch line's custom_id, or an id field), as its
    trace would get it (``:g<N>`` for one of several generations); None where it gives none."""
    trace_id = _first_scalar(record, _with_override(fields.id_field, ID_FIELDS))[0]
    if generation is None and "layout" in record and isinstance(record.get("part"), int):
        generation = record["part"]
    return None if trace_id is None else trace_id if generation is None else f"{trace_id}:g{generation}"


def _with_override(override: str | None, paths: tuple[str, ...]) -> tuple[str, ...]:
    return (override, *paths) if override else paths


def get_path(record: dict, path: str) -> tuple[bool, Any]:
    """Resolve ``a.b[0].c``; a key that literally equals the whole path wins (keys may hold dots)."""
    if path in record:
        return True, record[path]
    node: Any = record
    for key, index in _PATH_TOKEN.findall(path):
        if key:
            if not isinstance(node, dict) or key not in node:
                return False, None
            node = node[key]
        else:
            i = int(index)
            if not isinstance(node, list) or not -len(node) <= i < len(node):
                return False, None
            node = node[i]
    return True, node


def _role(turn: Any) -> str | None:
    if not isinstance(turn, dict):
        return None
    role = turn.get("role", turn.get("from"))
    return role.lower() if isinstance(role, str) else None


def record_position(locator: int | str) -> int:
    if isinstance(locator, int):
        return locator
    match = re.fullmatch(r"line (\d+)", str(locator))
    return int(match.group(1)) - 1 if match else 0
