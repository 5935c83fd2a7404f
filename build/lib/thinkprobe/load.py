"""Load: the first pipeline stage (load -> segment -> type -> link -> graph -> indicators -> profile).
Streams the files people already have (JSONL / JSON / Parquet / directories, gzipped or not) into
`Trace` records, finding the reasoning in known fields or inline tags and noting where each value came from.
"""
from __future__ import annotations

import gzip
import io
import json
import re
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from thinkprobe.records import InputError, Section, Trace

__all__ = ["FieldMap", "iter_records", "iter_traces", "detect", "peek", "format_peek"]


@dataclass(frozen=True)
class FieldMap:
    """User overrides: dotted paths (``raw_text.response``, ``generations[0]``) tried before auto-detection."""

    reasoning_field: str | None = None
    model_field: str | None = None
    domain_field: str | None = None
    id_field: str | None = None
    gold_field: str | None = None


# Detection order (spec section 6). Additions found in real data: `think_content` (THINK-Bench),
# `model_answer` (MiP-Overthinking), `category` (THINK-Bench, Venhoff et al.).
REASONING_FIELDS = (
    "reasoning_content", "reasoning", "reasonings", "thinking", "thought", "thought_summary",
    "full_cot", "thinking_trajectories[0]", "think_content",
)
TAGGED_FIELDS = ("response", "output", "prediction", "content", "model_answer")
ANSWER_FIELDS = ("content", "response", "output", "prediction")
MODEL_FIELDS = ("model", "model_name", "generator", "metadata.generator")
DOMAIN_FIELDS = ("domain", "task", "subject", "source", "problem_type", "category", "metadata.domain")
ID_FIELDS = ("trace_id", "id", "doc_id", "uid", "_id")
QUESTION_FIELDS = ("question", "problem", "prompt", "raw_text.question")
GOLD_FIELDS = ("answer", "correct_answer", "gold", "gold_answer", "metadata.correct_answer")
CORRECT_FIELDS = ("correct", "is_correct", "correctness", "grading", "metadata.correctness")
TURN_LISTS = ("messages", "conversations")
TURN_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")
ASSISTANT_ROLES = frozenset({"assistant", "gpt", "model"})
USER_ROLES = frozenset({"user", "human"})

TAG_PAIRS = (
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
    ("<thought>", "</thought>"),
    ("<|begin_of_thought|>", "<|end_of_thought|>"),
    ("◁think▷", "◁/think▷"),
    ("[THINK]", "[/THINK]"),
)
OSS_ANALYSIS = "<|channel|>analysis<|message|>"
OSS_FINAL = "<|channel|>final<|message|>"
# gpt-oss output decoded with special tokens skipped: "analysis<reasoning>assistantfinal<answer>".
OSS_BARE_ANALYSIS, OSS_BARE_FINAL = "analysis", "assistantfinal"
# Chat-template tokens that often survive at the edges of a span; they are not the model's words.
LEADING_TOKENS = ("<|begin_of_solution|>",)
TRAILING_TOKENS = (
    "<|end_of_solution|>", "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<｜end▁of▁sentence｜>",
    "<|return|>", "<|end|>", "</s>",
)

RECORD_LIST_KEYS = ("records", "data", "traces")
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet"}
PARQUET_BATCH_ROWS = 1024
WHOLE_FILE = "file"  # record locator for errors that concern the whole file

_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")
_MISSING = object()


# ----------------------------------------------------------------------------- raw records


def iter_records(path: str | Path) -> Iterator[tuple[str, int | str, dict | InputError]]:
    """Stream ``(source file, record locator, record or InputError)`` from a file or a directory.

    The locator is ``"line N"`` (1-based) for JSON Lines and the 0-based position otherwise.
    A bad record becomes an InputError and the stream goes on.
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"no such file or directory: {root}")
    files = _data_files(root) if root.is_dir() else [root]
    for file in files:
        yield from _iter_file(file)


def _data_files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*")
        if p.is_file() and _format_of(p) and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def _format_of(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return next((fmt for ext, fmt in FORMATS.items() if name.endswith(ext)), None)


def _strip_extensions(name: str) -> str:
    lower = name.lower()
    if lower.endswith(".gz"):
        name, lower = name[:-3], lower[:-3]
    for ext in FORMATS:
        if lower.endswith(ext):
            return name[: -len(ext)]
    return name


def _iter_file(file: Path) -> Iterator[tuple[str, int | str, dict | InputError]]:
    source = str(file)
    fmt = _format_of(file)
    if fmt is None:
        supported = ", ".join(FORMATS)
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"unsupported file type (expected {supported}, optionally .gz)")
        return
    gz = file.name.lower().endswith(".gz")
    try:
        with (gzip.open(file, "rb") if gz else open(file, "rb")) as fh:
            if fmt == "jsonl":
                yield from _iter_jsonl(source, fh)
            elif fmt == "json":
                yield from _iter_json(source, fh)
            else:
                yield from _iter_parquet(source, fh)
    except (OSError, EOFError) as exc:  # corrupt gzip, unreadable file: report it and move to the next file
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"cannot read file: {exc}")


def _iter_jsonl(source: str, fh: BinaryIO) -> Iterator[tuple[str, int | str, dict | InputError]]:
    # Bytes, line by line: never the whole file, and a bad line spoils only itself.
    number = 0
    try:
        for number, raw in enumerate(fh, start=1):
            locator = f"line {number}"
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if raw.strip():
                yield source, locator, _parse_record(source, locator, raw)
    except (OSError, EOFError) as exc:  # e.g. a gzip cut short: keep what was read, name where it broke
        locator = f"line {number + 1}"
        yield source, locator, InputError(source, locator, "", f"cannot read file: {exc}")


def _unencodable(value: Any) -> bool:
    """True when the decoded JSON holds a lone surrogate (from an escape like \\ud800): such a
    string cannot be written back as UTF-8, so the record is skipped rather than crash the run."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _parse_record(source: str, locator: int | str, raw: bytes) -> dict | InputError:
    if b"\x00" in raw:
        return InputError(source, locator, "", "NUL byte in record")
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return InputError(source, locator, "", f"invalid UTF-8 at byte {exc.start}")
    except json.JSONDecodeError as exc:
        return InputError(source, locator, "", f"malformed JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return InputError(source, locator, "", "malformed JSON: nested too deeply")
    if not isinstance(value, dict):
        return InputError(source, locator, "", f"record is a JSON {_type_name(value)}, not an object")
    if _SURROGATE_ESCAPE.search(raw) and _unencodable(value):
        return InputError(source, locator, "", "invalid Unicode: a lone surrogate escape (\\ud800-\\udfff)")
    return value


def _iter_json(source: str, fh: BinaryIO) -> Iterator[tuple[str, int | str, dict | InputError]]:
    data = fh.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\x00" in data:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", "NUL byte in file")
        return
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"invalid UTF-8 at byte {exc.start}")
        return
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # JSON Lines saved under a .json name
            yield from _iter_jsonl(source, io.BytesIO(data))
        else:
            yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
        return
    except RecursionError:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", "malformed JSON: nested too deeply")
        return
    check_unicode = bool(_SURROGATE_ESCAPE.search(data))
    if isinstance(value, dict):
        nested = next((value[k] for k in RECORD_LIST_KEYS if isinstance(value.get(k), list)), None)
        items = nested if nested is not None else [value]
    elif isinstance(value, list):
        items = value
    else:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"top level is a JSON {_type_name(value)}, not a list or object")
        return
    for index, item in enumerate(items):
        if isinstance(item, dict) and check_unicode and _unencodable(item):
            yield source, index, InputError(source, index, "", "invalid Unicode: a lone surrogate escape (\\ud800-\\udfff)")
        elif isinstance(item, dict):
            yield source, index, item
        else:
            yield source, index, InputError(source, index, "", f"record is a JSON {_type_name(item)}, not an object")


def _iter_parquet(source: str, fh: BinaryIO) -> Iterator[tuple[str, int | str, dict | InputError]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    index = 0
    try:
        for batch in pq.ParquetFile(fh).iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for row in batch.to_pylist():
                yield source, index, row
                index += 1
    except pa.ArrowException as exc:
        yield source, index, InputError(source, index, "", f"cannot read Parquet: {exc}")


# ----------------------------------------------------------------------------- tags


@dataclass(frozen=True)
class _Split:
    """Where reasoning and answer lie inside one text, before whitespace trimming."""

    tag: str | None
    reasoning: tuple[int, int]
    answer: tuple[int, int] | None
    open_tag_missing: bool = False
    truncated: bool = False


def _split_tags(text: str) -> _Split:
    """Find the reasoning span by inline tags; without tags the whole text is the reasoning."""
    split = _split_gpt_oss(text) or _split_paired_tags(text)
    if split:
        return split
    lead = len(text) - len(text.lstrip())
    final = text.find(OSS_BARE_FINAL)
    if text.startswith(OSS_BARE_ANALYSIS, lead) and final > lead:
        start = lead + len(OSS_BARE_ANALYSIS)
        return _Split(OSS_BARE_ANALYSIS, (start, final), (final + len(OSS_BARE_FINAL), len(text)))
    return _Split(None, (0, len(text)), None)


def _split_gpt_oss(text: str) -> _Split | None:
    begin = text.find(OSS_ANALYSIS)
    if begin < 0:
        return None
    start = begin + len(OSS_ANALYSIS)
    final = text.find(OSS_FINAL, start)
    limit = final if final >= 0 else len(text)
    end = text.rfind("<|end|>", start, limit)
    if final >= 0:
        if end < 0:  # no <|end|>: stop at the "<|start|>assistant" header of the final message
            header = text.rfind("<|start|>", start, final)
            end = header if header >= 0 else final
        return _Split(OSS_ANALYSIS, (start, end), (final + len(OSS_FINAL), len(text)))
    if end < 0:
        return _Split(OSS_ANALYSIS, (start, len(text)), None, truncated=True)
    return _Split(OSS_ANALYSIS, (start, end), None)


def _split_paired_tags(text: str) -> _Split | None:
    # The style whose first tag comes earliest wins; a prompt before the opening tag is skipped.
    best = None
    for opening, closing in TAG_PAIRS:
        o, c = text.find(opening), text.rfind(closing)
        if o < 0 and c < 0:
            continue
        first = o if o >= 0 else c
        if best is None or first < best[0]:
            best = (first, opening, closing, o, c)
    if best is None:
        return None
    _, opening, closing, o, c = best
    if o >= 0 and c >= o + len(opening):  # first opening .. last closing: nested/repeated tags stay inside
        return _Split(opening, (o + len(opening), c), (c + len(closing), len(text)))
    if o >= 0:
        return _Split(opening, (o + len(opening), len(text)), None, truncated=True)
    return _Split(opening, (0, c), (c + len(closing), len(text)), open_tag_missing=True)


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink [start, end) so it starts and ends on a character of the model's own text."""
    while True:
        before = (start, end)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        for token in LEADING_TOKENS:
            if text.startswith(token, start, end):
                start += len(token)
        for token in TRAILING_TOKENS:
            if end - start >= len(token) and text.endswith(token, start, end):
                end -= len(token)
        if (start, end) == before:
            return start, end


# ----------------------------------------------------------------------------- detection


# Programming records: the tests their extracted code is run against (never in this process).
CODE_TEST_FIELDS = ("tests", "test_cases", "test")


def detect(
    record: dict, fields: FieldMap, source: str, record_index: int | str, *, id_stem: str | None = None
) -> Trace:
    """Turn one raw record into a Trace, or raise InputError naming the field at fault.

    ``record_index`` is the locator from `iter_records`; errors repeat it, ``Trace.record`` gets the
    0-based position. ``id_stem`` replaces the file stem in generated trace ids.
    """

    def error(field: str, reason: str) -> InputError:
        return InputError(source, record_index, field, reason)

    if not isinstance(record, dict):
        raise error("", f"record is a {_type_name(record)}, not an object")
    reasoning_from, text, answer_fields = _locate_reasoning(record, fields, error)
    split = _split_tags(text)
    start, end = _trim(text, *split.reasoning)
    if start >= end:
        raise error(reasoning_from, "empty reasoning")
    sections = [Section("reasoning", reasoning_from, text, start, end)]
    answer = _answer_section(record, answer_fields, reasoning_from, text, split)
    if answer:
        sections.append(answer)

    position = _position(record_index)
    model, model_from = _first_scalar(record, _with_override(fields.model_field, MODEL_FIELDS))
    domain, domain_from = _first_scalar(record, _with_override(fields.domain_field, DOMAIN_FIELDS))
    trace_id, trace_id_from = _first_scalar(record, _with_override(fields.id_field, ID_FIELDS))
    if trace_id is None:
        stem = id_stem if id_stem is not None else _strip_extensions(Path(source).name)
        trace_id, trace_id_from = f"{stem}:{position}", "file:record"
    gold_fields = tuple(f for f in GOLD_FIELDS if f != reasoning_from)
    gold, gold_from = _first_scalar(record, _with_override(fields.gold_field, gold_fields))
    correct, correct_from = _correctness(record)
    return Trace(
        trace_id=trace_id,
        model=model or "unknown",
        domain=domain or "unknown",
        sections=tuple(sections),
        question=_question(record),
        gold_answer=gold,
        correct=correct,
        provenance={
            "reasoning_from": reasoning_from,
            "tag": split.tag,
            "open_tag_missing": split.open_tag_missing,
            "truncated": split.truncated,
            "answer_from": answer.field if answer else None,
            "model_from": model_from or "default",
            "domain_from": domain_from or "default",
            "trace_id_from": trace_id_from,
            "gold_from": gold_from,
            "correct_from": correct_from,
        },
        source=source,
        record=position,
        code_tests=next((record[k] for k in CODE_TEST_FIELDS if record.get(k)), None),
    )


def _locate_reasoning(
    record: dict, fields: FieldMap, error: Callable[[str, str], InputError]
) -> tuple[str, str, tuple[str, ...]]:
    """Return (field path, its text, fields to take a separate answer from)."""
    if fields.reasoning_field:
        # An explicit choice never falls back silently to another field.
        path = fields.reasoning_field
        found, value = _get(record, path)
        if not found or value is None:
            raise error(path, "field not found")
        if isinstance(value, list) and value and isinstance(value[0], str):
            path, value = f"{path}[0]", value[0]
        if not isinstance(value, str):
            raise error(path, f"expected text, found {_type_name(value)}")
        if not value.strip():
            raise error(path, "empty reasoning")
        return path, value, tuple(f for f in ANSWER_FIELDS if f != path)

    empty_dedicated = None
    for path in REASONING_FIELDS:
        found, value = _get(record, path)
        if not found or value is None:
            continue
        if path == "reasonings" and isinstance(value, list):
            if not value:
                empty_dedicated = empty_dedicated or path
                continue
            if isinstance(value[0], str):
                path, value = "reasonings[0]", value[0]
        if not isinstance(value, str):
            raise error(path, f"expected text, found {_type_name(value)}")
        if not value.strip():
            empty_dedicated = empty_dedicated or path
            continue
        return path, value, ANSWER_FIELDS

    # Inline text: prefer the first field that carries reasoning tags (or a reasoning key inside a
    # chat turn); a tagless field counts only when nothing better exists and no dedicated reasoning
    # field said "empty" -- otherwise a final answer would be profiled as if it were reasoning.
    tried = [*REASONING_FIELDS]
    plain = wrong = empty_inline = None
    for path, value, answer_fields, strong in _inline_candidates(record):
        tried.append(path)
        if value is None:
            continue
        if not isinstance(value, str):
            wrong = wrong or (path, value)
            continue
        if not value.strip():
            empty_inline = empty_inline or path
            continue
        if strong or _split_tags(value).tag is not None:
            return path, value, answer_fields
        plain = plain or (path, value, answer_fields)
    if empty_dedicated:
        raise error(empty_dedicated, "empty reasoning")
    if plain:
        return plain
    if wrong:
        raise error(wrong[0], f"expected text, found {_type_name(wrong[1])}")
    if empty_inline:
        raise error(empty_inline, "empty reasoning")
    raise error("reasoning", f"no reasoning text found; tried: {', '.join(dict.fromkeys(tried))}")


def _inline_candidates(record: dict) -> Iterator[tuple[str, Any, tuple[str, ...], bool]]:
    """(path, value, answer fields, strong) for fields that may hold reasoning inline, in order."""
    for name in TAGGED_FIELDS:
        yield name, record.get(name), (), False
    generations = record.get("generations")
    if isinstance(generations, list) and generations:
        yield "generations[0]", generations[0], (), False
    elif generations is not None and not isinstance(generations, list):
        yield "generations", generations, (), False
    for list_name in TURN_LISTS:
        turns = record.get(list_name)
        if not isinstance(turns, list):
            continue
        index = next((i for i in range(len(turns) - 1, -1, -1) if _role(turns[i]) in ASSISTANT_ROLES), None)
        if index is None:
            continue
        turn = turns[index]
        content_key = "content" if "content" in turn else "value"
        content_path = f"{list_name}[{index}].{content_key}"
        for key in TURN_REASONING_KEYS:
            if isinstance(turn.get(key), str) and turn[key].strip():
                yield f"{list_name}[{index}].{key}", turn[key], (content_path,), True
        yield content_path, turn.get(content_key), (), False
    found, value = _get(record, "raw_text.response")
    yield "raw_text.response", value if found else None, (), False


def _answer_section(
    record: dict, answer_fields: tuple[str, ...], reasoning_from: str, text: str, split: _Split
) -> Section | None:
    for path in answer_fields:
        if path == reasoning_from:
            continue
        found, value = _get(record, path)
        if not found or not isinstance(value, str) or not value.strip():
            continue
        # The answer field may repeat the reasoning inside tags; only what follows them is the answer.
        own = _split_tags(value)
        span = (0, len(value)) if own.tag is None else own.answer
        if span:
            start, end = _trim(value, *span)
            if start < end:
                return Section("answer", path, value, start, end)
    if split.answer:
        start, end = _trim(text, *split.answer)
        if start < end:
            return Section("answer", reasoning_from, text, start, end)
    return None


def _question(record: dict) -> str | None:
    for path in QUESTION_FIELDS:
        found, value = _get(record, path)
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


def _correctness(record: dict) -> tuple[bool | None, str | None]:
    for path in CORRECT_FIELDS:
        found, value = _get(record, path)
        verdict = _to_bool(value) if found else None
        if verdict is not None:
            return verdict, path
    return None, None


def _to_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in {"true", "yes", "correct", "1", "a"}:  # "A": SimpleQA grader's "correct"
            return True
        if word in {"false", "no", "incorrect", "0", "b", "c"}:  # "B" incorrect, "C" not attempted
            return False
    return None


def _first_scalar(record: dict, paths: tuple[str, ...]) -> tuple[str | None, str | None]:
    for path in paths:
        found, value = _get(record, path)
        if not found or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) or (isinstance(value, str) and value.strip()):
            return str(value), path
    return None, None


def _with_override(override: str | None, paths: tuple[str, ...]) -> tuple[str, ...]:
    return (override, *paths) if override else paths


def _get(record: dict, path: str) -> tuple[bool, Any]:
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


def _position(locator: int | str) -> int:
    if isinstance(locator, int):
        return locator
    match = re.fullmatch(r"line (\d+)", str(locator))
    return int(match.group(1)) - 1 if match else 0


def _type_name(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


# ----------------------------------------------------------------------------- traces


def iter_traces(path: str | Path, fields: FieldMap = FieldMap()) -> Iterator[Trace | InputError]:
    """Stream Traces in input order; a bad record yields its InputError instead of raising."""
    for _, item in _detect_all(path, fields):
        yield item


def _detect_all(path: str | Path, fields: FieldMap) -> Iterator[tuple[int | str, Trace | InputError]]:
    root = Path(path)
    taken: set[str] = set()
    last_suffix: dict[str, int] = {}
    for source, locator, record in iter_records(root):
        if isinstance(record, InputError):
            yield locator, record
            continue
        # In a directory, files like */base_solution.json share a stem; the relative path does not.
        stem = _strip_extensions(Path(source).relative_to(root).as_posix()) if root.is_dir() else None
        try:
            trace = detect(record, fields, source, locator, id_stem=stem)
        except InputError as exc:
            yield locator, exc
            continue
        original = trace.trace_id
        if original in taken:
            suffix = last_suffix.get(original, 1) + 1
            while f"{original}#{suffix}" in taken:
                suffix += 1
            last_suffix[original] = suffix
            trace = replace(trace, trace_id=f"{original}#{suffix}", provenance={**trace.provenance, "duplicate_of": original})
        taken.add(trace.trace_id)
        yield locator, trace


# ----------------------------------------------------------------------------- peek


def peek(path: str | Path, n: int = 5, fields: FieldMap = FieldMap()) -> list[dict]:
    """The detected mapping for the first ``n`` records: what `thinkprobe peek` shows."""
    rows = []
    for locator, item in islice(_detect_all(path, fields), n):
        if isinstance(item, InputError):
            row = dict.fromkeys(_PEEK_KEYS)
            row.update(record=locator, error=f"{item.field}: {item.reason}" if item.field else item.reason)
            rows.append(row)
            continue
        p, reasoning, answer = item.provenance, item.reasoning, item.answer
        rows.append({
            "record": locator,
            "trace_id": item.trace_id,
            "trace_id_from": p["trace_id_from"],
            "model": item.model,
            "model_from": p["model_from"],
            "domain": item.domain,
            "domain_from": p["domain_from"],
            "reasoning_from": p["reasoning_from"],
            "tag": p["tag"],
            "open_tag_missing": p["open_tag_missing"],
            "truncated": p["truncated"],
            "answer_from": p["answer_from"],
            "reasoning_chars": reasoning.end - reasoning.start,
            "answer_chars": answer.end - answer.start if answer else 0,
            "gold_from": p["gold_from"],
            "correct_from": p["correct_from"],
            "error": None,
        })
    return rows


_PEEK_KEYS = (
    "record", "trace_id", "trace_id_from", "model", "model_from", "domain", "domain_from",
    "reasoning_from", "tag", "open_tag_missing", "truncated", "answer_from", "reasoning_chars",
    "answer_chars", "gold_from", "correct_from", "error",
)


def format_peek(rows: list[dict]) -> str:
    """A plain-text table of `peek` rows: each value with the field it came from."""
    header = ("record", "trace_id", "model", "domain", "reasoning", "answer", "gold", "correct")
    lines = [header]
    for row in rows:
        if row.get("error"):
            lines.append((str(row["record"]), f"ERROR {row['error']}"))
            continue
        flags = [name for name in ("open_tag_missing", "truncated") if row[name]]
        tag = row["tag"] or "no tag"
        reasoning = f"{row['reasoning_from']} {tag} {row['reasoning_chars']:,} ch" + "".join(f" [{f}]" for f in flags)
        answer = f"{row['answer_from']} {row['answer_chars']:,} ch" if row["answer_from"] else "-"
        lines.append((
            str(row["record"]),
            f"{row['trace_id']} <- {row['trace_id_from']}",
            f"{row['model']} <- {row['model_from']}",
            f"{row['domain']} <- {row['domain_from']}",
            reasoning,
            answer,
            row["gold_from"] or "-",
            row["correct_from"] or "-",
        ))
    cells = [[_clip(c, 60 if len(line) == len(header) else 200) for c in line] for line in lines]
    widths = [max(len(line[i]) for line in cells if len(line) == len(header)) for i in range(len(header))]
    out = []
    for line in cells:
        if len(line) < len(header):  # error rows span the table after the record column
            out.append(f"{line[0]:<{widths[0]}}  {line[1]}")
        else:
            out.append("  ".join(f"{c:<{w}}" for c, w in zip(line, widths)).rstrip())
    return "\n".join(out)


def _clip(cell: str, width: int) -> str:
    cell = cell.replace("\n", " ")
    return cell if len(cell) <= width else cell[: width - 1] + "…"
