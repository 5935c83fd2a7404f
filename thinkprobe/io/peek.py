"""`thinkprobe peek`: where the values of the first records of each input come from, as rows and a table.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

from ..records import InputError, Trace, answer_cut
from .formats import strip_extensions
from .grades import SOLUTION_LABELS, verdict_name
from .sources import FieldMap, Source
from .traces import peek_inputs

__all__ = ["peek", "format_peek", "usable", "unknown_fix", "model_path_template"]


PEEK_MAX_FILES = 20  # files of one folder shown by peek; a row says how many more there are


def peek(paths: str | Path | Source | Sequence[str | Path | Source], n: int = 5,
         fields: FieldMap = FieldMap(), max_files: int = PEEK_MAX_FILES) -> list[dict]:
    """The detected mapping for the first ``n`` traces or errors of each input file (a folder: of
    each of its first ``max_files`` data files): what `thinkprobe peek` shows. Each row names its
    file; an error row carries the whole reason."""
    inputs = [paths] if isinstance(paths, (str, Path, Source)) else list(paths)
    rows = []
    for item in peek_inputs(inputs, fields, n, max_files):
        if isinstance(item, dict):  # files of a folder not shown
            row = dict.fromkeys(_PEEK_KEYS)
            row.update(file=item["folder"], record="...",
                       note=f"{item['more_files']} more files not shown (peek a file, or the folder with fewer files)")
            rows.append(row)
        elif not isinstance(item, Source):  # a Source opens each file's rows
            rows.append(_peek_row(*item))
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
            "group": item.group,
            "group_from": p.get("group_from"),
            "reasoning_from": p["reasoning_from"],
            "tag": p["tag"],
            "open_tag_missing": p["open_tag_missing"],
            "truncated": p["truncated"],
            "truncated_by": p.get("truncated_by"),
            "answer_from": p["answer_from"],
            "reasoning_chars": reasoning.end - reasoning.start,
            "answer_chars": answer.end - answer.start if answer else 0,
            "gold_from": p["gold_from"],
            "correct_from": p["correct_from"],
            "grade": p.get("grade"),
            "correct": item.correct,
            "unread_grade": p.get("unread_grade"),
            "joined": p.get("joined"),
            "untagged": bool(p.get("untagged")),
            "layout": p.get("layout"),
            "error": None,
            "note": None,
    }


_PEEK_KEYS = (
    "file", "record", "trace_id", "trace_id_from", "model", "model_from", "domain", "domain_from", "group", "group_from",
    "reasoning_from", "tag", "open_tag_missing", "truncated", "truncated_by", "answer_from", "reasoning_chars",
    "answer_chars", "gold_from", "correct_from", "grade", "correct", "unread_grade", "joined", "untagged", "layout", "error",
    "note",
)


def format_peek(rows: list[dict]) -> str:
    """A plain-text table of `peek` rows: each value with the field it came from, under the name of the
    file it was read from; error rows give the whole reason. A group column appears when a record has a
    group (--group-field, --group, (?P<group>...) in --path-pattern)."""
    grouped = any(row.get("group") is not None for row in rows)
    header = ("record", "trace_id", "model", "domain", *(("group",) if grouped else ()), "reasoning", "answer", "gold",
              "correct")
    lines: list[tuple[str, ...]] = [header]
    spans: set[int] = set()  # lines that span the table: file names and errors, never clipped
    file = None
    shown, same = None, []  # the last error shown in full; the records after it that repeat it

    def repeated() -> None:
        if same:
            spans.add(len(lines))
            where = (same[0] if len(same) == 1 else f"lines {same[0][5:]}-{same[-1][5:]}"
                     if same[0].startswith("line ") and same[-1].startswith("line ") else f"{same[0]}-{same[-1]}")
            lines.append((where, f"ERROR the same as above ({len(same)} record{'s' if len(same) > 1 else ''})"))
            same.clear()

    for row in rows:
        if row.get("file") != file:
            repeated()
            file = row.get("file")
            spans.add(len(lines))
            lines.append((f"{file}:",))
        if row.get("error") and row["error"] == shown:  # Schoenfeld's folder: 120 lines of one error
            same.append(str(row["record"]))
            continue
        repeated()
        shown = row.get("error")
        if row.get("error") or row.get("note"):
            spans.add(len(lines))
            lines.append((str(row["record"]), f"ERROR {row['error']}" if row.get("error") else row["note"]))
            continue
        flags = [name for name in ("open_tag_missing", "truncated", "untagged") if row.get(name)]
        if row.get("joined"):
            flags.append(f"joined {row['joined']['parts']} parts")
        tag = row["tag"] or "no tag"
        reasoning = f"{row['reasoning_from']} {tag} {row['reasoning_chars']:,} ch" + "".join(f" [{f}]" for f in flags)
        answer = f"{row['answer_from']} {row['answer_chars']:,} ch" if row["answer_from"] else "-"
        if answer_cut(row):  # the API stopped the answer at its token limit
            answer += " [cut]"
        lines.append((
            str(row["record"]),
            f"{row['trace_id']} <- {row['trace_id_from']}",
            f"{row['model']} <- {row['model_from']}",
            f"{row['domain']} <- {row['domain_from']}",
            *((f"{row['group']} <- {row['group_from']}" if row.get("group") is not None else "-",) if grouped else ()),
            reasoning,
            answer,
            row["gold_from"] or "-",
            _grade_cell(row),
        ))
    repeated()
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


def _grade_cell(row: dict) -> str:
    """What decides the trace's verdict: the record's grade (field=value -> verdict), else the answer
    matched against the gold answer, else nothing; a grade in codes only --correct-values reads is named."""
    if row.get("correct_from"):
        cell = f"{row['correct_from']}={row['grade']} -> {verdict_name(row.get('correct'))}"
        return cell + ("; needs --correct-values" if row.get("unread_grade") else "")
    cell = "matcher vs gold" if row.get("gold_from") else "-"
    if row.get("unread_grade"):
        label = row["unread_grade"].partition("=")[0] in SOLUTION_LABELS
        cell += f"; {row['unread_grade']} " + ("is a solution label, not read" if label else "needs --correct-values")
    return cell


def usable(rows: list[dict]) -> bool:
    """True when at least one peeked record gives a trace (`thinkprobe peek` exits 1 otherwise)."""
    return any(not row["error"] and not row.get("note") for row in rows)


def unknown_fix(key: str, sources: Iterable[str] = ()) -> str:
    """What to pass when traces have no ``key`` ("model" or "domain") and are grouped as unknown; for a
    model, a ready --path-pattern when those traces' files differ in a part that reads as model names."""
    fix = (f"name it with --{key} NAME (one value for an input), --{key}-field FIELD (a field of the records) "
           f"or --path-pattern '(?P<{key}>...)' (a part of the file path); per input: PATH::{key}=NAME")
    sources = list(sources)
    template = model_path_template(sources) if key == "model" else None
    if template is None:
        return fix
    where = "their files differ in a part that reads" if len(set(sources)) > 1 else "a part of their file's path reads"
    return f"{where} as a model's name: --path-pattern '{template}' takes it from the path; or {fix}"


# Words that open or make up the names of model families, matched as a word of a path part (followed by
# a digit, a capital as in deepseekR1, a separator or the end).
MODEL_WORDS = re.compile(r"(?i)(?:^|[^a-z0-9])(?:gpt|o[134]|claude|sonnet|opus|haiku|gemini|gemma|llama|qwen\d*|qwq|"
                         r"deepseek|r1|mistral|mixtral|magistral|phi\d*|grok|s1(?:\.\d)?|kimi|glm|olmo|"
                         r"nemotron|granite|minimax|hunyuan|ernie|doubao|openthinker|exaone)(?=$|[^a-z]|\d|(?-i:[A-Z]))")


def model_path_template(sources: Iterable[str]) -> str | None:
    """A --path-pattern template that takes the model from the files' paths: the one path part (a
    folder, or an ``_``-separated field of the file name) whose values differ between the files and
    mostly read as models' names (`MODEL_WORDS`); None when there is no such part or several. Only
    files alike in depth, suffix and number of name fields are compared.

    >>> model_path_template(["d/reasoning_comparison_gpt-4o.json", "d/reasoning_comparison_claude-3-opus.json"])
    'reasoning_comparison_{model}.json'
    >>> model_path_template(["o/qwen3-14b/q_frames.jsonl.gz", "o/gpt-5-mini/g_frames.jsonl.gz"])
    '{model}/{}'
    >>> model_path_template(["runs/train.jsonl", "runs/test.jsonl"]) is None
    True
    >>> model_path_template(["d/messages.json", "d/run_qwq-32b.json", "d/run_r1.json"])  # files alike only
    'run_{model}.json'

    One file: the one field of its name, or else the one folder, that reads as a model's name (THINK-Bench's
    single file):

    >>> model_path_template(["tb/qwen3-32b_think_bench.jsonl.gz"]), model_path_template(["runs/test.jsonl"])
    ('{model}_think_bench.jsonl.gz', None)
    """
    groups: dict[tuple, list[tuple[str, ...]]] = {}  # files alike in depth, suffix and fields of the name
    for parts in sorted({tuple(Path(s).as_posix().split("/")) for s in sources}):
        stem = strip_extensions(parts[-1])
        groups.setdefault((len(parts), parts[-1][len(stem):], stem.count("_")), []).append(parts)
    if len(groups) == 1 and len(group := next(iter(groups.values()))) == 1:
        return _one_files_model_part(group[0])
    found = {t for (_, suffix, _), group in groups.items() if len(group) > 1 and (t := _model_part(group, suffix))}
    return found.pop() if len(found) == 1 else None


def _one_files_model_part(parts: tuple[str, ...]) -> str | None:
    """The template for one file: the one field of its name that reads as a model's name, else the one folder."""
    stem = strip_extensions(parts[-1])
    fields = stem.split("_")
    named = [i for i, f in enumerate(fields) if MODEL_WORDS.search(f)]
    if len(named) == 1:
        return _name_template(fields, named[0], parts[-1][len(stem):])
    folders = [depth for depth in range(2, len(parts) + 1) if MODEL_WORDS.search(parts[-depth])]
    return _folder_template(folders[0]) if not named and len(folders) == 1 else None


def _name_template(fields: Sequence[str], index: int, suffix: str) -> str:
    """A file name's template: its `_`-separated fields with the one at `index` the model ("run_{model}.json")."""
    return "_".join("{model}" if i == index else part for i, part in enumerate(fields)) + suffix


def _folder_template(depth: int) -> str:
    """A path's template whose folder `depth` parts up from the end names the model ("{model}/{}")."""
    return "{model}/" + "/".join("{}" for _ in range(depth - 1))


def _model_part(parts: list[tuple[str, ...]], suffix: str) -> str | None:
    """The template for files alike (one depth, one `suffix`, one number of name fields), or None."""
    found = []
    for depth in range(1, len(parts[0]) + 1):  # from the file name up
        values = {p[-depth] for p in parts}
        if len(values) < 2:
            continue
        if depth == 1:
            fields = [strip_extensions(v).split("_") for v in values]
            varying = [i for i in range(len(fields[0])) if len({f[i] for f in fields}) > 1]
            if len(varying) == 1 and _models(f[varying[0]] for f in fields):
                found.append(_name_template(fields[0], varying[0], suffix))
        elif _models(values):
            found.append(_folder_template(depth))
    return found[0] if len(found) == 1 else None


def _models(values: Iterable[str]) -> bool:
    """Most of the values read as models' names (MiP-Overthinking's folders: DSQ, Limo among gpt4o, QwQ...)."""
    values = list(values)
    named = sum(bool(MODEL_WORDS.search(v)) for v in values)
    return named >= 2 and named * 2 > len(values)


def _clip(cell: str, width: int) -> str:
    cell = cell.replace("\n", " ")
    return cell if len(cell) <= width else cell[: width - 1] + "…"
