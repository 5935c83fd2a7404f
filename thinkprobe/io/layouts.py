"""The layouts evaluation frameworks write, turned into plain records that detection reads.

A file reader (thinkprobe.io.formats) yields raw records; a record in a framework's layout is
expanded here into the records of its traces, each keeping the framework's own fields (so
``--*-field`` paths into them still work) plus the few it derives, all named in `DERIVED`:

- inspect_ai logs (`.json` whole, `.eval` zip samples): one record per sample and epoch;
- lighteval details (current nested ``doc`` / ``model_response`` / ``metric`` columns, and the
  flat layout of releases before 0.11, whose lists were saved as strings up to 0.7): one record per
  generation, ``:g<N>`` when a row holds several (pass@k);
- OpenAI Batch output lines (``custom_id`` + ``response.body``): the body, with the request's id;
- Thought Anchors' ``<model>/<condition>_base_solution/<problem>/base_solution.json`` (Bogdan et al.
  2025): the trace in ``full_cot``, with the model from the path and the question, gold answer and
  MATH type from the sibling ``problem.json`` (the record's own ``answer`` is the model's extracted
  answer, kept as ``extracted_answer``; a ``reasoning`` field there is a grader's verdict, kept as
  ``grader_reasoning``).

`LAYOUTS` is the table: (name, test, expand) in the order tried; the first whose test passes
expands the record. A record no layout claims passes through unchanged.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterator

from ..records import InputError
from .apis import API_LAYOUTS, STREAM, finish_stream, is_stream_chunk, scalar_id, split_choices
from .limits import InputLimits

__all__ = ["LAYOUTS", "DERIVED", "INSPECT_GRADES", "expand", "finish", "lighteval_path_parts", "resolve_attachments",
           "literal"]


# Keys a layout adds to a record (besides the framework's own): provenance names them.
DERIVED = ("trace_id", "source_id", "model", "task", "reasoning", "response", "question", "gold", "correct", "layout",
           "derived_from", "generation")


# inspect_ai's scorer values (inspect_ai.scorer: CORRECT "C", INCORRECT "I", PARTIAL "P", NOANSWER
# "N"); partial and no-answer are not graded either way.
INSPECT_GRADES = {"C": True, "I": False, "P": None, "N": None}


ATTACHMENT = "attachment://"


LITERAL_MAX_ITEMS = 100_000


def literal(value: Any) -> Any:
    """A list or dict saved as its Python repr (lighteval before 0.8 stringified every column),
    decoded with `ast.literal_eval` (never `eval`); anything else as it is. Decoding costs about 1 KB
    per item (a 2 MB line of a million numbers took 1 GB), so a repr of many short items (more
    separators than LITERAL_MAX_ITEMS and than one per 50 characters) stays text."""
    if isinstance(value, str) and value[:1] in "[{(" and value[-1:] in "]})" \
            and value.count(",") + value.count(":") <= max(LITERAL_MAX_ITEMS, len(value) // 50):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


# ----------------------------------------------------------------------------- inspect_ai


def is_inspect_log(record: dict) -> bool:
    """A whole inspect_ai EvalLog (`.json`): an `eval` spec with task and model, and `samples`."""
    spec = record.get("eval")
    return isinstance(spec, dict) and "task" in spec and "model" in spec and (
        "samples" in record or "status" in record)


def resolve_attachments(value: Any, attachments: dict) -> Any:
    """inspect_ai moves long strings to ``sample.attachments`` and leaves ``attachment://<hash>``."""
    if not attachments:
        return value
    if isinstance(value, str):
        if value.startswith(ATTACHMENT):
            return attachments.get(value[len(ATTACHMENT):], value)
        return value
    if isinstance(value, list):
        return [resolve_attachments(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: resolve_attachments(v, attachments) for k, v in value.items()}
    return value


def inspect_sample(spec: dict, sample: dict) -> dict:
    """One inspect_ai EvalSample as a record: its own fields, the eval spec under `eval`, and the
    derived id (`<sample id>:e<epoch>`), model, task, question, gold and grade."""
    sample = resolve_attachments({k: v for k, v in sample.items() if k not in ("events", "attachments")},
                                 sample.get("attachments") or {})
    record = {**sample, "eval": spec, "layout": "inspect_ai"}
    sid = sample.get("id")
    record["source_id"] = None if sid is None else str(sid)
    record["trace_id"] = f"{sid}:e{sample.get('epoch', 1)}"
    record["model"] = spec.get("model")
    record["task"] = spec.get("task")
    question = sample.get("input")
    if isinstance(question, list):  # chat messages: the last user turn's text
        texts = [_message_text(m) for m in question if isinstance(m, dict) and m.get("role") == "user"]
        question = next((t for t in reversed(texts) if t), None)
    record["question"] = question if isinstance(question, str) else None
    target = sample.get("target")
    if isinstance(target, list):
        target = target[0] if len(target) == 1 else (" | ".join(map(str, target)) or None)
    record["gold"] = target
    record["correct"], scorer = _inspect_grade(sample.get("scores"))
    record["derived_from"] = {"trace_id": "id:epoch", "source_id": "id", "model": "eval.model", "task": "eval.task",
                              "question": "input", "gold": "target", "correct": scorer}
    return record


def _message_text(message: dict) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str)) or None
    return None


def _inspect_grade(scores: Any) -> tuple[bool | None, str]:
    """(grade, where): the first scorer whose value is a grade (C / I, or a boolean / 0-1 number), and
    `scores.<that scorer>` (provenance names which of several scorers decided)."""
    if not isinstance(scores, dict):
        return None, "scores"
    for name, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else None
        if isinstance(value, str) and value in INSPECT_GRADES:
            if INSPECT_GRADES[value] is not None:
                return INSPECT_GRADES[value], f"scores.{name}"
        elif isinstance(value, bool):
            return value, f"scores.{name}"
        elif isinstance(value, (int, float)) and value in (0, 1):
            return bool(value), f"scores.{name}"
    return None, "scores"


def _expand_inspect(record: dict, source: str, locator: int | str, state: dict) -> Iterator[tuple[int | str, dict | InputError]]:
    samples = record.get("samples")
    if not isinstance(samples, list) or not samples:
        yield locator, InputError(source, locator, "samples", "inspect_ai log has no samples (a log written with "
                                  "log_samples=False, or a run that did not finish)")
        return
    for k, sample in enumerate(samples):
        if isinstance(sample, dict):
            yield k, inspect_sample(record["eval"], sample)
        else:
            yield k, InputError(source, k, "samples", "sample is not an object")


# ----------------------------------------------------------------------------- lighteval

_DETAILS_NAME = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.parquet$")


def lighteval_path_parts(source: str) -> dict[str, str]:
    """Model and task from lighteval's details path: ``.../details/<model...>/<date>/details_<task>_<date>.parquet``
    (the model name may hold slashes: ``deepseek-ai/DeepSeek-R1``)."""
    path = Path(source)
    match = _DETAILS_NAME.match(path.name)
    if not match:
        return {}
    parts = {"task": match["task"]}
    folders = path.parent.parts
    if "details" in folders[:-1]:
        at = len(folders) - 1 - folders[::-1].index("details")
        model = "/".join(folders[at + 1 : -1])
        if model:
            parts["model"] = model
    return parts


def is_lighteval_nested(record: dict) -> bool:
    return isinstance(record.get("doc"), (dict, str)) and isinstance(record.get("model_response"), (dict, str)) \
        and "metric" in record


def is_lighteval_flat(record: dict) -> bool:
    return "predictions" in record and "metrics" in record and ("full_prompt" in record or "example" in record)


# Metric names whose 0/1 value is a sample's grade: exact names of older releases (qem, em, ...),
# then name parts of current ones (extractive_match, math_pass@1:1_samples, gpqa_pass@1:...), in this
# order of preference; a metric that is not 0 or 1 (a score, a mean over samples) is no grade.
LIGHTEVAL_GRADE_NAMES = ("qem", "em", "pem", "pqem", "acc", "acc_norm")
LIGHTEVAL_GRADE_PARTS = ("extractive_match", "exact_match", "quasi_exact_match", "expr_gold_metric", "pass@1:1",
                         "pass@1", "accuracy")


def _grade_rank(name: str) -> int | None:
    if name in LIGHTEVAL_GRADE_NAMES:
        return LIGHTEVAL_GRADE_NAMES.index(name)
    return next((len(LIGHTEVAL_GRADE_NAMES) + i for i, part in enumerate(LIGHTEVAL_GRADE_PARTS) if part in name), None)


def _lighteval_grade(metrics: Any, generations: int) -> bool | None:
    """The sample's grade from its metric dict, only when it holds one generation (a pass@k
    metric is over all generations, not any one of them).

    >>> _lighteval_grade({"math_pass@1:1_samples": 1.0, "length": 812}, 1), _lighteval_grade({"qem": 0}, 1)
    (True, False)
    """
    if generations != 1 or not isinstance(metrics, dict):
        return None
    ranked = sorted((rank, name) for name in metrics if (rank := _grade_rank(str(name))) is not None)
    for _, name in ranked:
        value = metrics[name]
        if not isinstance(value, bool) and isinstance(value, (int, float)) and value in (0, 1):
            return bool(value)
    return None


# Columns lighteval saved as Python reprs before 0.8 (and that a round trip through pandas may stringify):
# only these are decoded, so a question that happens to look like a list stays text.
LIGHTEVAL_LIST_COLUMNS = frozenset({"doc", "model_response", "metric", "predictions", "gold", "metrics", "specifics",
                                    "choices", "gold_index", "text", "reasonings", "specific", "text_post_processed"})


def _decoded(row: dict) -> dict:
    return {k: literal(v) if k in LIGHTEVAL_LIST_COLUMNS else v for k, v in row.items()}


def _expand_lighteval(record: dict, source: str, locator: int | str, state: dict) -> Iterator[tuple[int | str, dict | InputError]]:
    nested = is_lighteval_nested(record)
    record = _decoded(record)
    if nested:
        doc = _decoded(record["doc"]) if isinstance(record.get("doc"), dict) else {}
        response = _decoded(record["model_response"]) if isinstance(record.get("model_response"), dict) else {}
        record["doc"], record["model_response"] = doc, response
        texts, reasonings = response.get("text"), response.get("reasonings")
        question = doc.get("query") if isinstance(doc.get("query"), str) else doc.get("original_query")
        choices, gold_index = doc.get("choices"), doc.get("gold_index")
        if isinstance(gold_index, list):
            gold_index = gold_index[0] if len(gold_index) == 1 else None
        gold = choices[gold_index] if isinstance(choices, list) and isinstance(gold_index, int) and \
            0 <= gold_index < len(choices) else None
        source_id = doc.get("id")
        metrics = record.get("metric")
        text_field, reasoning_field = "model_response.text", "model_response.reasonings"
    else:
        texts, reasonings = record.get("predictions"), None
        question = record.get("example") if isinstance(record.get("example"), str) else record.get("full_prompt")
        golds = record.get("gold")
        gold = golds[0] if isinstance(golds, list) and len(golds) == 1 else (golds if isinstance(golds, str) else None)
        specifics = record.get("specifics")
        source_id = specifics.get("id") if isinstance(specifics, dict) else None
        metrics = record.get("metrics")
        text_field, reasoning_field = "predictions", None
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts:
        yield locator, InputError(source, locator, text_field, "lighteval details row without generated text "
                                  "(a log-likelihood task: nothing to profile)")
        return
    where = lighteval_path_parts(source)
    position = locator if isinstance(locator, int) else 0
    base_id = str(source_id) if source_id not in (None, "") else None
    for g, text in enumerate(texts):
        reasoning = reasonings[g] if isinstance(reasonings, list) and g < len(reasonings) else None
        derived = {
            "layout": "lighteval",
            "source_id": base_id,
            "trace_id": (base_id or f"{Path(source).name}:{position}") + (f":g{g}" if len(texts) > 1 else ""),
            "model": where.get("model"),
            "task": where.get("task"),
            "response": text,
            "question": question if isinstance(question, str) else None,
            "gold": None if gold is None else str(gold),
            "correct": _lighteval_grade(metrics, len(texts)),
        }
        if isinstance(reasoning, str) and reasoning.strip():
            derived["reasoning"] = reasoning
        out = {k: v for k, v in record.items() if k not in DERIVED}
        out.update({k: v for k, v in derived.items() if v is not None or k in ("correct",)})
        out["generation"] = g
        out["derived_from"] = {
            "response": f"{text_field}[{g}]", "reasoning": f"{reasoning_field}[{g}]",
            "trace_id": ("doc.id" if nested else "specifics.id") if base_id else "file:record",
            "source_id": "doc.id" if nested else "specifics.id", "model": "path", "task": "path",
            "question": "doc.query" if nested else "example", "gold": "doc.choices[doc.gold_index]" if nested else "gold",
            "correct": "metric" if nested else "metrics"}
        yield locator, out


# ----------------------------------------------------------------------------- OpenAI Batch


def is_openai_batch(record: dict) -> bool:
    """An OpenAI Batch output line: `custom_id` and a `response` key (null when the request failed; an
    Anthropic batch result has `result` instead)."""
    return "custom_id" in record and "response" in record and isinstance(record["response"], (dict, type(None))) and (
        record["response"] is None or "body" in record["response"])


def _expand_batch(record: dict, source: str, locator: int | str, state: dict) -> Iterator[tuple[int | str, dict | InputError]]:
    response = record.get("response")
    body = response.get("body") if isinstance(response, dict) else None
    status = response.get("status_code") if isinstance(response, dict) else None
    if not isinstance(body, dict) or isinstance(status, int) and status >= 400:
        error = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) else record.get("error")
        reason = error.get("message") if isinstance(error, dict) else None
        if isinstance(status, int) and status >= 400:
            reason = f"status {status}" + (f": {reason}" if reason else "")
        yield locator, InputError(source, locator, "response.body", f"batch request failed: {reason or 'no response body'}",
                                  trace_id=scalar_id(record["custom_id"]))
        return
    out = {k: v for k, v in body.items() if k not in ("id",)}
    out.update(layout="openai_batch", trace_id=str(record["custom_id"]), source_id=str(record["custom_id"]),
               batch={k: v for k, v in record.items() if k != "response"},
               derived_from={"trace_id": "custom_id", "source_id": "custom_id", "model": "response.body.model"})
    out["response_id"] = body.get("id")
    yield from split_choices(out, locator)  # a body of several choices (n > 1): one record each


# ----------------------------------------------------------------------------- Thought Anchors

_ANCHORS_CONDITION = "_base_solution"


def is_thought_anchors(record: dict) -> bool:
    """A Thought Anchors base solution: the prompt, the thinking (`solution`) and prompt + thinking + answer
    (`full_cot`) as text."""
    return all(isinstance(record.get(k), str) for k in ("prompt", "solution", "full_cot"))


def _read_json(path: Path) -> dict:
    """A small JSON object beside an input file (Thought Anchors' problem.json); {} when it is missing,
    not an object, or larger than one record may be (limits.max_record_mb: it is read whole)."""
    bound = InputLimits.default().max_record_mb * 2**20
    try:
        if bound and path.stat().st_size > bound:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _expand_anchors(record: dict, source: str, locator: int | str, state: dict) -> Iterator[tuple[int | str, dict | InputError]]:
    path = Path(source)
    problem = _read_json(path.parent / "problem.json")
    out = {k: v for k, v in record.items() if k not in DERIVED and k != "answer"}
    if "answer" in record:
        out["extracted_answer"] = record["answer"]
    if "reasoning" in record:
        out["grader_reasoning"] = record["reasoning"]
    derived: dict[str, Any] = {"reasoning": record["full_cot"], "layout": "thought_anchors"}
    origin = {"reasoning": "full_cot"}
    if len(path.parts) >= 4 and path.parts[-3].endswith(_ANCHORS_CONDITION):
        derived["model"], origin["model"] = path.parts[-4], "path"
        derived["trace_id"], origin["trace_id"] = "/".join(path.parts[-4:-1]), "path"
    for key, field in (("question", "problem"), ("gold", "gt_answer"), ("task", "type")):
        if isinstance(problem.get(field), str) and problem[field].strip():
            derived[key], origin[key] = problem[field], f"problem.json:{field}"
    out.update(derived)
    out["derived_from"] = origin
    yield locator, out


def finish(source: str, state: dict) -> Iterator[tuple[int | str, dict | InputError]]:
    """What one file's records left pending in `state` (the chunks of its last stream), once it ends."""
    yield from finish_stream(source, state)


LAYOUTS: tuple[tuple[str, Callable[[dict], bool], Callable[..., Iterator]], ...] = (
    ("inspect_ai", is_inspect_log, _expand_inspect),
    ("lighteval", is_lighteval_nested, _expand_lighteval),
    ("lighteval (before 0.11)", is_lighteval_flat, _expand_lighteval),
    ("openai_batch", is_openai_batch, _expand_batch),
    ("thought_anchors", is_thought_anchors, _expand_anchors),
    *API_LAYOUTS,  # Anthropic batches, Gemini, several choices, vLLM offline, lm-eval (thinkprobe.io.apis)
)


def expand(source: str, locator: int | str, record: dict, state: dict | None = None
           ) -> Iterator[tuple[int | str, dict | InputError]]:
    """The records one raw record stands for: expanded by the first layout that claims it, else itself.
    `state`: a dict kept across one file's records (lm-eval's filters are told apart by it; a stream's chunks
    are kept in it until the stream ends: call `finish` after the file's last record)."""
    if state and state.get(STREAM) is not None and not (isinstance(record, dict) and "layout" not in record
                                                         and is_stream_chunk(record)):
        yield from finish_stream(source, state)  # another kind of record ends the stream
    if isinstance(record, dict) and "layout" not in record:
        for _, test, expander in LAYOUTS:
            if test(record):
                yield from expander(record, source, locator, {} if state is None else state)
                return
    yield locator, record
