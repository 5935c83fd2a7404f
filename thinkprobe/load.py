"""Load: the first pipeline stage (load -> segment -> type -> link -> graph -> indicators -> profile).
Streams the files people already have (JSONL / JSON / Parquet / Arrow / Hugging Face `save_to_disk`
folders / directories, gzipped or not) into `Trace` records, finding the reasoning in known fields,
content blocks or inline tags and noting where each value came from. Trace ids are unique per run.
"""
from __future__ import annotations

import functools
import gzip
import io
import json
import re
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Sequence

from thinkprobe.records import InputError, Section, Trace

__all__ = [
    "FieldMap", "Source", "parse_source", "source_path", "iter_records", "iter_traces", "iter_inputs",
    "record_traces", "detect", "peek", "format_peek", "usable", "unknown_fix",
]


@dataclass(frozen=True)
class FieldMap:
    """User overrides, tried before auto-detection.

    ``*_field`` are dotted paths into a record (``raw_text.response``, ``generations[0]``); ``model``
    and ``domain`` are constants for every record of the input; ``path_pattern`` takes them from the
    file path: a regular expression with named groups ``model`` / ``domain`` searched in the path
    (``(?P<model>[^/]+)/[^/]+\\.jsonl``), or a template matched against the end of the path
    (``{model}_{domain}_{}.jsonl.gz``; ``{}`` and ``*`` match any name part).
    Precedence: constant, then ``*_field``, then the path, then the auto-detected fields.
    """

    reasoning_field: str | None = None
    model_field: str | None = None
    domain_field: str | None = None
    id_field: str | None = None
    gold_field: str | None = None
    model: str | None = None
    domain: str | None = None
    path_pattern: str | None = None

    def __post_init__(self) -> None:
        if self.path_pattern:
            groups = set(_path_regex(self.path_pattern).groupindex)
            if not groups or groups - PATH_GROUPS:
                raise ValueError(f"path pattern {self.path_pattern!r} must name groups among {sorted(PATH_GROUPS)}, "
                                 f"e.g. '(?P<model>[^/]+)/(?P<domain>[^/]+)\\.jsonl' or '{{model}}/{{domain}}.jsonl'")

    def from_path(self, source: str) -> dict[str, str]:
        """The named groups ``path_pattern`` finds in a file path ({} when it does not match)."""
        if not self.path_pattern:
            return {}
        match = _path_regex(self.path_pattern).search(Path(source).as_posix())
        return {k: v for k, v in match.groupdict().items() if v} if match else {}


PATH_GROUPS = frozenset({"model", "domain"})
_TEMPLATE_SLOT = re.compile(r"\{(\w*)\}|\*")


@functools.lru_cache(maxsize=64)
def _path_regex(pattern: str) -> re.Pattern:
    if "(?P<" not in pattern:  # a template: {name} slots, {} and * match any part of one path component
        parts, last = [], 0
        for m in _TEMPLATE_SLOT.finditer(pattern):
            parts.append(re.escape(pattern[last : m.start()]))
            parts.append(f"(?P<{m.group(1)}>[^/]+?)" if m.group(1) else "[^/]*?")
            last = m.end()
        parts.append(re.escape(pattern[last:]))
        pattern = "(?:^|/)" + "".join(parts) + "$"
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"path pattern {pattern!r} is not a valid regular expression: {exc}") from None


_OVERRIDE_KEYS = {f.replace("_", "-"): f for f in
                  ("reasoning_field", "model_field", "domain_field", "id_field", "gold_field", "model", "domain",
                   "path_pattern")}


@dataclass(frozen=True)
class Source:
    """One input of a run: a file or folder with its own field overrides, or in-memory ``records``
    (then ``path`` is only the name that errors and generated ids use)."""

    path: str
    fields: FieldMap = FieldMap()
    records: Iterable[dict] | None = None


def parse_source(spec: str | Path | Source, base: FieldMap = FieldMap()) -> Source:
    """``PATH`` or ``PATH::key=value,key=value``: one input with per-input overrides over ``base``.

    Keys are the option names without dashes: reasoning-field, model-field, domain-field, id-field,
    gold-field, model, domain, path-pattern (underscores work too).

    >>> parse_source("a.jsonl::model=R1,reasoning-field=steps").fields.reasoning_field
    'steps'
    """
    if isinstance(spec, Source):
        return spec
    spec = str(spec)
    path, sep, options = spec.partition("::")
    if not sep or Path(spec).exists():
        return Source(spec, base)
    overrides = {}
    for item in re.split(r",(?=[\w-]+=)", options):
        key, eq, value = item.partition("=")
        name = _OVERRIDE_KEYS.get(key.strip().replace("_", "-"))
        if not eq or name is None:
            raise ValueError(f"input {spec!r}: cannot read override {item!r}; use key=value with key among "
                             f"{', '.join(_OVERRIDE_KEYS)}")
        overrides[name] = value.strip() or None
    return Source(path, replace(base, **overrides))


def source_path(spec: str | Path | Source) -> str:
    """The file or folder an input names (its ``::`` overrides removed)."""
    return parse_source(spec).path


# Detection order (spec section 6). Additions found in real data: `think_content` (THINK-Bench),
# `model_answer` (MiP-Overthinking), `category` (THINK-Bench, Venhoff et al.).
REASONING_FIELDS = (
    "reasoning_content", "reasoning", "reasonings", "thinking", "thought", "thought_summary",
    "full_cot", "thinking_trajectories[0]", "think_content",
)
TAGGED_FIELDS = ("response", "output", "prediction", "content", "model_answer")
ANSWER_FIELDS = ("content", "response", "output", "prediction")
MODEL_FIELDS = ("model", "model_name", "generator", "metadata.generator", "response.body.model")
DOMAIN_FIELDS = ("domain", "task", "subject", "source", "problem_type", "category", "metadata.domain")
ID_FIELDS = ("trace_id", "id", "doc_id", "uid", "_id", "uuid")  # uuid: OpenR1
# doc.*, target, exact_match: lm-eval samples files
QUESTION_FIELDS = ("question", "problem", "prompt", "raw_text.question", "doc.question", "doc.problem", "Question")
GOLD_FIELDS = ("answer", "correct_answer", "gold", "gold_answer", "metadata.correct_answer", "target",
               "Ground_Truth_Answer")
# final_answer_correct: ProcessBench; Model_Solution_Correctness ("correct"/"incorrect"): MR-BEN
CORRECT_FIELDS = ("correct", "is_correct", "correctness", "grading", "metadata.correctness", "exact_match",
                  "final_answer_correct", "Model_Solution_Correctness")
# OpenR1: one verdict per generation
GENERATION_CORRECT_FIELDS = ("correctness_math_verify", "correctness_llama", "correctness")
TURN_LISTS = ("messages", "conversations")
TURN_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")
# OpenAI chat completions (vLLM, DeepSeek API): choices[0].message.reasoning(_content)
CHOICE_MESSAGE = "choices[0].message"
# OpenAI Responses API objects: an `output` list of typed items, also inside a batch result
RESPONSES_OUTPUT = ("output", "response.output", "response.body.output")
# lm-eval samples: `resps` holds the raw generations (a list per request), `filtered_resps` the
# extracted answers; the raw text is the trace.
LM_EVAL_RESPS = "resps"
# Several pieces of one reasoning (content blocks, summary parts, a list of steps) are joined into one
# text with these separators; provenance says so and offsets point into the joined text.
BLOCK_SEPARATOR = "\n\n"
STEP_SEPARATOR = "\n"
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
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet", ".arrow": "arrow"}
# Hugging Face `save_to_disk` writes these beside its data-*.arrow files; they describe, not hold, records.
HF_METADATA_FILES = frozenset({"state.json", "dataset_info.json", "dataset_dict.json"})
# A JSON object whose values are all lists is read as records (columnar or grouped) unless it looks
# like one record whose fields hold lists: turns or typed blocks (lists of objects), or lists of texts
# or verdicts (in columnar form each of these would be a list of lists).
RECORD_OBJECT_LISTS = frozenset({"messages", "conversations", "content", "output", "choices"})
RECORD_VALUE_LISTS = frozenset({"generations", "steps", "filtered_resps", "reasonings", "thinking_trajectories",
                                "correctness_math_verify", "is_reasoning_complete"})
PARQUET_BATCH_ROWS = 1024
WHOLE_FILE = "file"  # record locator for errors that concern the whole file

_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


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
        and not _is_hf_metadata(p)
    )


def _is_hf_metadata(path: Path) -> bool:
    """state.json / dataset_info.json of a `save_to_disk` folder (or dataset_dict.json above its splits)."""
    if path.name not in HF_METADATA_FILES:
        return False
    folder = path.parent
    return any(folder.glob("*.arrow")) or any(folder.glob("*/state.json"))


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
            elif fmt == "arrow":
                yield from _iter_arrow(source, fh)
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
        items = nested if nested is not None else _object_records(value)
        if isinstance(items, InputError):
            yield source, WHOLE_FILE, _with_source(items, source)
            return
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


def _object_records(value: dict) -> list | InputError:
    """The records a top-level JSON object holds.

    - columnar: ``{"question": [...], "steps": [...]}``, equal-length lists of values -> one record per row;
    - grouped: ``{key: [record, record], ...}``, lists of objects (MR-BEN: question id -> solutions) ->
      each object is a record;
    - anything else is one record.
    """
    lists = [v for v in value.values() if isinstance(v, list)]
    if len(lists) != len(value) or not value or _one_record(value):
        return [value]
    if all(isinstance(item, dict) for column in lists for item in column):
        return [item for column in lists for item in column]
    if len(value) < 2:
        return [value]
    lengths = {len(column) for column in lists}
    if len(lengths) > 1:
        detail = ", ".join(f"{k}: {len(v)}" for k, v in islice(value.items(), 8))
        return InputError("", WHOLE_FILE, "", f"columnar JSON with lists of different lengths ({detail})")
    keys = list(value)
    return [dict(zip(keys, row)) for row in zip(*lists)]


def _one_record(value: dict) -> bool:
    return any(
        (k in RECORD_OBJECT_LISTS and v and all(isinstance(x, dict) for x in v))
        or (k in RECORD_VALUE_LISTS and v and not any(isinstance(x, list) for x in v))
        for k, v in value.items()
    )


def _with_source(error: InputError, source: str) -> InputError:
    return InputError(source, error.record, error.field, error.reason)


def _iter_arrow(source: str, fh: BinaryIO) -> Iterator[tuple[str, int | str, dict | InputError]]:
    """An Arrow IPC stream (what `datasets` writes as data-*.arrow) or an Arrow IPC file, batch by batch."""
    import pyarrow as pa

    index = 0
    try:
        try:
            reader = pa.ipc.open_stream(fh)
        except pa.ArrowInvalid:  # not a stream: the random-access IPC file format
            fh.seek(0)
            reader = pa.ipc.open_file(pa.BufferReader(fh.read()))
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        for batch in batches:
            for row in batch.to_pylist():
                yield source, index, row
                index += 1
    except pa.ArrowException as exc:
        yield source, index, InputError(source, index, "", f"cannot read Arrow: {exc}")


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
        return InputError(source, record_index, field, reason)

    if not isinstance(record, dict):
        raise error("", f"record is a {_type_name(record)}, not an object")
    found = _locate_reasoning(record, fields, error, generation)
    reasoning_from, text = found.path, found.text
    split = _split_tags(text)
    start, end = _trim(text, *split.reasoning)
    if start >= end:
        raise error(reasoning_from, "empty reasoning")
    sections = [Section("reasoning", reasoning_from, text, start, end)]
    answer = _answer_section(record, found.answer_fields, reasoning_from, text, split)
    if answer:
        sections.append(answer)

    position = _position(record_index)
    from_path = fields.from_path(source)
    model, model_from = _named(record, fields.model, fields.model_field, from_path.get("model"), MODEL_FIELDS)
    domain, domain_from = _named(record, fields.domain, fields.domain_field, from_path.get("domain"), DOMAIN_FIELDS)
    trace_id, trace_id_from = _first_scalar(record, _with_override(fields.id_field, ID_FIELDS))
    if trace_id is None:
        stem = id_stem if id_stem is not None else _strip_extensions(Path(source).name)
        trace_id, trace_id_from = f"{stem}:{position}", "file:record"
    if generation is not None:
        trace_id = f"{trace_id}:g{generation}"
    gold_fields = tuple(f for f in GOLD_FIELDS if f != reasoning_from)
    gold, gold_from = _first_scalar(record, _with_override(fields.gold_field, gold_fields))
    correct, correct_from = _correctness(record, generation)
    provenance = {
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
    }
    if found.joined:
        provenance["joined"] = found.joined
    if generation is not None:
        provenance["generation"] = generation
    return Trace(
        trace_id=trace_id,
        model=model or "unknown",
        domain=domain or "unknown",
        sections=tuple(sections),
        question=_question(record),
        gold_answer=gold,
        correct=correct,
        provenance=provenance,
        source=source,
        record=position,
        code_tests=next((record[k] for k in CODE_TEST_FIELDS if record.get(k)), None),
    )


def _named(record: dict, constant: str | None, field: str | None, from_path: str | None,
           auto: tuple[str, ...]) -> tuple[str | None, str | None]:
    """Model or domain: a constant option, then the named field, then the file path, then detection."""
    if constant:
        return constant, "option"
    if field:
        value, path = _first_scalar(record, (field,))
        if value is not None:
            return value, path
    if from_path:
        return from_path, "path"
    return _first_scalar(record, auto)


@dataclass(frozen=True)
class _Found:
    """Where the reasoning text is: a field path, its text, the fields a separate answer may be in,
    and, when several pieces were joined into one text, how."""

    path: str
    text: str
    answer_fields: tuple[str, ...]
    joined: dict | None = None


def _joined(path: str, pieces: list[tuple[str, str]], separator: str) -> tuple[str, str, dict | None]:
    """(field, text, joined provenance): one piece stays itself, several are joined with ``separator``."""
    if len(pieces) == 1:
        return pieces[0][0], pieces[0][1], None
    text = separator.join(piece for _, piece in pieces)
    return path, text, {"field": path, "parts": len(pieces), "separator": separator}


def _locate_reasoning(
    record: dict, fields: FieldMap, error: Callable[[str, str], InputError], generation: int | None = None
) -> _Found:
    if fields.reasoning_field:
        # An explicit choice never falls back silently to another field.
        path = fields.reasoning_field
        found, value = _get(record, path)
        if not found or value is None:
            raise error(path, f"field not found; {_keys_hint(record, path)}")
        joined = None
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            # a list of steps (ProcessBench, BIG-Bench Mistake, MR-BEN) is one trace
            path, value, joined = _joined(path, [(f"{path}[{i}]", v) for i, v in enumerate(value)], STEP_SEPARATOR)
        if not isinstance(value, str):
            raise error(path, f"expected text or a list of texts, found {_type_name(value)}")
        if not value.strip():
            raise error(path, "empty reasoning")
        return _Found(path, value, tuple(f for f in ANSWER_FIELDS if f != path), joined)

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
        return _Found(path, value, ANSWER_FIELDS)

    # Inline text: prefer the first field that carries reasoning tags (or a reasoning key inside a
    # chat turn, a thinking block); a tagless field counts only when nothing better exists and no
    # dedicated reasoning field said "empty" -- otherwise a final answer would be profiled as if it
    # were reasoning.
    tried = [*REASONING_FIELDS]
    plain = wrong = empty_inline = None
    for candidate, strong in _inline_candidates(record, generation):
        tried.append(candidate.path)
        value = candidate.text
        if value is None:
            continue
        if not isinstance(value, str):
            wrong = wrong or (candidate.path, value)
            continue
        if not value.strip():
            empty_inline = empty_inline or candidate.path
            continue
        if strong or _split_tags(value).tag is not None:
            return candidate
        plain = plain or candidate
    if empty_dedicated:
        raise error(empty_dedicated, "empty reasoning")
    if plain:
        return plain
    if wrong:
        raise error(wrong[0], f"expected text, found {_type_name(wrong[1])}")
    if empty_inline:
        raise error(empty_inline, "empty reasoning")
    raise error("reasoning", f"no reasoning text found; tried: {', '.join(dict.fromkeys(tried))}; "
                             f"{_keys_hint(record, '')} (name the field with --reasoning-field)")


def _keys_hint(record: dict, path: str) -> str:
    """The keys a record does have, at the deepest level of ``path`` that resolves."""
    node, walked = record, ""
    for key, index in _PATH_TOKEN.findall(path)[:-1]:
        step = f"{'.' if walked else ''}{key}" if key else f"[{index}]"
        found, value = _get(record, walked + step)
        if not found or not isinstance(value, (dict, list)):
            break
        node, walked = value, walked + step
    where = f"`{walked}`" if walked else "the record"
    if isinstance(node, list):
        return f"{where} is a list of {len(node)}"
    keys = [str(k) for k in node]
    shown = ", ".join(keys[:30]) + (f", ... ({len(keys)} keys)" if len(keys) > 30 else "")
    return f"{where} has: {shown or 'no keys'}"


def _inline_candidates(record: dict, generation: int | None = None) -> Iterator[tuple[_Found, bool]]:
    """(candidate, strong) for places that may hold reasoning inline, in order; a candidate's text may
    be None (absent) or a non-string (reported if nothing better turns up)."""
    for name in TAGGED_FIELDS:
        yield from _field_candidates(record.get(name), name)
    for base in RESPONSES_OUTPUT[1:]:  # a Responses API object nested in a batch result
        found, value = _get(record, base)
        blocks = _typed_blocks(value, base) if found and isinstance(value, list) else None
        if blocks:
            yield blocks, True
    resps = record.get(LM_EVAL_RESPS)
    if isinstance(resps, list) and resps:
        first = resps[0]
        if isinstance(first, list) and first:
            yield _Found(f"{LM_EVAL_RESPS}[0][0]", first[0], ()), False
        elif not isinstance(first, list):
            yield _Found(f"{LM_EVAL_RESPS}[0]", first, ()), False
    generations = record.get("generations")
    if isinstance(generations, list) and generations:
        g = generation if generation is not None and 0 <= generation < len(generations) else 0
        # a generation asked for by number is taken even without tags (OpenR1 rows repeat one in messages)
        yield _Found(f"generations[{g}]", generations[g], ()), generation is not None
    elif generations is not None and not isinstance(generations, list):
        yield _Found("generations", generations, ()), False
    for list_name in TURN_LISTS:
        turns = record.get(list_name)
        if not isinstance(turns, list):
            continue
        index = next((i for i in range(len(turns) - 1, -1, -1) if _role(turns[i]) in ASSISTANT_ROLES), None)
        if index is not None:
            yield from _turn_candidates(turns[index], f"{list_name}[{index}]")
    found, message = _get(record, CHOICE_MESSAGE)
    if found and isinstance(message, dict):
        yield from _turn_candidates(message, CHOICE_MESSAGE)
    found, value = _get(record, "raw_text.response")
    yield _Found("raw_text.response", value if found else None, ()), False


def _turn_candidates(turn: dict, prefix: str) -> Iterator[tuple[_Found, bool]]:
    content_key = "content" if "content" in turn else "value"
    content_path = f"{prefix}.{content_key}"
    for key in TURN_REASONING_KEYS:
        if isinstance(turn.get(key), str) and turn[key].strip():
            yield _Found(f"{prefix}.{key}", turn[key], (content_path,)), True
    yield from _field_candidates(turn.get(content_key), content_path)


def _field_candidates(value, path: str) -> Iterator[tuple[_Found, bool]]:
    """The candidate a field's value at `path` gives: its reasoning (strong) when it is a list of
    typed blocks, the value itself (weak) when it is not typed blocks, none when the blocks hold no
    reasoning."""
    blocks = _typed_blocks(value, path) if isinstance(value, list) else None
    if blocks:
        yield blocks, True
    elif blocks is None:
        yield _Found(path, value, ()), False


def _typed_blocks(items: list, path: str) -> _Found | None | bool:
    """Reasoning in a list of typed blocks: Anthropic ``{"type": "thinking", "thinking": ...}`` content
    blocks, or OpenAI Responses ``{"type": "reasoning", "summary"/"content": [{"text": ...}]}`` output
    items. Several pieces are joined; the answer is the first text block / output_text part.
    Returns None when ``items`` are not typed blocks, False when they are but hold no reasoning."""
    if not items or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in items):
        return None
    pieces: list[tuple[str, str]] = []
    answers: list[str] = []
    for i, block in enumerate(items):
        kind = block["type"]
        if kind == "thinking" and isinstance(block.get("thinking"), str):
            pieces.append((f"{path}[{i}].thinking", block["thinking"]))
        elif kind == "reasoning":
            # raw reasoning text (content) when the API returns it, else the summary
            for part_list in ("content", "summary"):
                parts = block.get(part_list)
                texts = [(f"{path}[{i}].{part_list}[{k}].text", p["text"]) for k, p in enumerate(parts or ())
                         if isinstance(p, dict) and isinstance(p.get("text"), str)] if isinstance(parts, list) else []
                if texts:
                    pieces.extend(texts)
                    break
        elif kind == "text" and isinstance(block.get("text"), str):
            answers.append(f"{path}[{i}].text")
        elif kind == "message" and isinstance(block.get("content"), list):
            answers.extend(f"{path}[{i}].content[{k}].text" for k, part in enumerate(block["content"])
                           if isinstance(part, dict) and part.get("type") == "output_text")
    pieces = [(p, t) for p, t in pieces if t.strip()]
    if not pieces:
        return False
    field, text, joined = _joined(path, pieces, BLOCK_SEPARATOR)
    return _Found(field, text, tuple(answers[:1]), joined)


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


def _correctness(record: dict, generation: int | None = None) -> tuple[bool | None, str | None]:
    paths = CORRECT_FIELDS
    if generation is not None:
        paths = (*(f"{name}[{generation}]" for name in GENERATION_CORRECT_FIELDS), *CORRECT_FIELDS)
    for path in paths:
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


def record_traces(
    record: dict, fields: FieldMap = FieldMap(), source: str = "records", index: int | str = 0, *,
    id_stem: str | None = None,
) -> list[Trace | InputError]:
    """The traces of one in-memory record, with the same detection as files get: usually one, one per
    generation for an OpenR1-style ``generations`` list. A bad record gives its InputError (never raises).

    ``source`` names where the record came from (errors and generated ids use it), ``index`` its
    position there. Trace ids are unique within the record only; `iter_inputs` makes them unique per run.

    >>> [t.trace_id for t in record_traces({"uuid": "q7", "generations": ["<think>a</think>1", "<think>b</think>2"]})]
    ['q7:g0', 'q7:g1']
    """
    try:
        first: Trace | InputError = detect(record, fields, source, index, id_stem=id_stem)
    except InputError as exc:
        first = exc
    where = first.field if isinstance(first, InputError) else first.provenance["reasoning_from"]
    generations = record.get("generations") if isinstance(record, dict) else None
    if not where.startswith("generations[") or not isinstance(generations, list):
        return [first]
    out: list[Trace | InputError] = []
    for g in range(len(generations)):
        try:
            out.append(detect(record, fields, source, index, id_stem=id_stem, generation=g))
        except InputError as exc:
            out.append(exc)
    return out


class _RunIds:
    """Trace ids unique across a whole run. The first trace keeps its id; a later one from another file
    becomes ``<file label>:<id>``, one from the same file (or still taken) gets ``#2``, ``#3``...;
    provenance keeps the original as ``duplicate_of``."""

    def __init__(self) -> None:
        self.owner: dict[str, str] = {}
        self.last_suffix: dict[str, int] = {}

    def claim(self, trace: Trace, file_label: str) -> Trace:
        original = trace.trace_id
        if original not in self.owner:
            self.owner[original] = trace.source
            return trace
        candidate = original
        if self.owner[original] != trace.source:
            candidate = (f"{file_label}:{trace.record}" if trace.provenance.get("trace_id_from") == "file:record"
                         else f"{file_label}:{original}")
        if candidate in self.owner:
            suffix = self.last_suffix.get(candidate, 1) + 1
            while f"{candidate}#{suffix}" in self.owner:
                suffix += 1
            self.last_suffix[candidate] = suffix
            candidate = f"{candidate}#{suffix}"
        self.owner[candidate] = trace.source
        return replace(trace, trace_id=candidate, provenance={**trace.provenance, "duplicate_of": original})


def iter_traces(path: str | Path, fields: FieldMap = FieldMap()) -> Iterator[Trace | InputError]:
    """Stream the Traces of one file or folder in input order; a bad record yields its InputError."""
    return iter_inputs([Source(str(path), fields)])


def iter_inputs(
    inputs: Sequence[str | Path | Source], fields: FieldMap = FieldMap()
) -> Iterator[Trace | InputError]:
    """Stream the Traces of all inputs of a run, in order, with ids unique across the run.

    An input is a path, a ``PATH::key=value,...`` spec (see `parse_source`) or a `Source`, whose own
    overrides replace ``fields``. A bad record yields its InputError instead of raising.
    """
    for _, item in _detect_inputs(inputs, fields):
        yield item


def _detect_inputs(
    inputs: Sequence[str | Path | Source], fields: FieldMap
) -> Iterator[tuple[int | str, Trace | InputError]]:
    sources = [parse_source(i, fields) for i in inputs]
    labels = _input_labels([s.path for s in sources])
    ids = _RunIds()
    for src, label in zip(sources, labels):
        if src.records is not None:
            records = ((src.path, i, r) for i, r in enumerate(src.records))
            root = None
        else:
            root = Path(src.path)
            records = iter_records(root)
        for source, locator, record in records:
            if isinstance(record, InputError):
                yield locator, record
                continue
            # In a folder, files like */base_solution.json share a stem; the relative path does not.
            file_label = label
            if root is not None and root.is_dir():
                inner = _strip_extensions(Path(source).relative_to(root).as_posix())
                file_label = inner if len(sources) == 1 else f"{label}/{inner}"
                stem = inner
            else:
                stem = label
            for item in record_traces(record, src.fields, source, locator, id_stem=stem):
                yield locator, item if isinstance(item, InputError) else ids.claim(item, file_label)


def _input_labels(paths: list[str]) -> list[str]:
    """A short readable name per input: the file name without extensions, with as many parent folders
    as it takes to tell inputs apart (twelve */base_solution.json -> p1/base_solution, ...)."""
    parts = [tuple(x for x in Path(_strip_extensions(Path(p).as_posix())).parts if x != "/") or ("input",)
             for p in paths]
    depth = [1] * len(paths)
    while True:
        labels = ["/".join(ps[-d:]) for ps, d in zip(parts, depth)]
        seen: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            seen.setdefault(label, []).append(i)
        clashing = [i for group in seen.values() if len(group) > 1 for i in group if depth[i] < len(parts[i])]
        if not clashing:
            return labels
        for i in clashing:
            depth[i] += 1


# ----------------------------------------------------------------------------- peek


def peek(paths: str | Path | Source | Sequence[str | Path | Source], n: int = 5,
         fields: FieldMap = FieldMap()) -> list[dict]:
    """The detected mapping for the first ``n`` traces or errors of each input: what `thinkprobe peek`
    shows. Each row names its file; an error row carries the whole reason."""
    inputs = [paths] if isinstance(paths, (str, Path, Source)) else list(paths)
    rows = []
    for spec in inputs:
        for locator, item in islice(_detect_inputs([spec], fields), n):
            rows.append(_peek_row(locator, item))
    return rows


def _peek_row(locator: int | str, item: Trace | InputError) -> dict:
    if isinstance(item, InputError):
        row = dict.fromkeys(_PEEK_KEYS)
        row.update(file=item.source, record=locator,
                   error=f"field {item.field!r}: {item.reason}" if item.field else item.reason)
        return row
    p, reasoning, answer = item.provenance, item.reasoning, item.answer
    return {
            "file": item.source,
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
            "joined": p.get("joined"),
            "error": None,
    }


_PEEK_KEYS = (
    "file", "record", "trace_id", "trace_id_from", "model", "model_from", "domain", "domain_from",
    "reasoning_from", "tag", "open_tag_missing", "truncated", "answer_from", "reasoning_chars",
    "answer_chars", "gold_from", "correct_from", "joined", "error",
)


def format_peek(rows: list[dict]) -> str:
    """A plain-text table of `peek` rows: each value with the field it came from, under the name of the
    file it was read from; error rows give the whole reason."""
    header = ("record", "trace_id", "model", "domain", "reasoning", "answer", "gold", "correct")
    lines: list[tuple[str, ...]] = [header]
    spans: set[int] = set()  # lines that span the table: file names and errors, never clipped
    file = None
    for row in rows:
        if row.get("file") != file:
            file = row.get("file")
            spans.add(len(lines))
            lines.append((f"{file}:",))
        if row.get("error"):
            spans.add(len(lines))
            lines.append((str(row["record"]), f"ERROR {row['error']}"))
            continue
        flags = [name for name in ("open_tag_missing", "truncated") if row[name]]
        if row.get("joined"):
            flags.append(f"joined {row['joined']['parts']} parts")
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
    cells = [[c.replace("\n", " ") if k in spans else _clip(c, 60) for c in line] for k, line in enumerate(lines)]
    table = [line for k, line in enumerate(cells) if k not in spans]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    out = []
    for k, line in enumerate(cells):
        if len(line) == 1:
            out.append(line[0])
        elif k in spans:  # error rows span the table after the record column
            out.append(f"{line[0]:<{widths[0]}}  {line[1]}")
        else:
            out.append("  ".join(f"{c:<{w}}" for c, w in zip(line, widths)).rstrip())
    return "\n".join(out)


def usable(rows: list[dict]) -> bool:
    """True when at least one peeked record gives a trace (`thinkprobe peek` exits 1 otherwise)."""
    return any(not row["error"] for row in rows)


def unknown_fix(key: str) -> str:
    """What to pass when traces have no ``key`` ("model" or "domain") and are grouped as unknown."""
    return (f"name it with --{key} NAME (one value for an input), --{key}-field FIELD (a field of the records) "
            f"or --path-pattern '(?P<{key}>...)' (a part of the file path); per input: PATH::{key}=NAME")


def _clip(cell: str, width: int) -> str:
    cell = cell.replace("\n", " ")
    return cell if len(cell) <= width else cell[: width - 1] + "…"
