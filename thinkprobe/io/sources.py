"""Where a run's records come from: the inputs (a path, or PATH::key=value,... overrides) and the
field map that says where each record's reasoning, model, domain, group, id and gold answer are read.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

from .grades import parse_correct_values

__all__ = ["FieldMap", "NAMED_FIELDS", "UNTAGGED_CHOICES", "PATH_GROUPS", "Source", "parse_source", "source_path"]


@dataclass(frozen=True)
class FieldMap:
    """User overrides, tried before auto-detection.

    ``*_field`` are dotted paths into a record (``raw_text.response``, ``generations[0]``); ``model``,
    ``domain`` and ``group`` are constants for every record of the input; ``path_pattern`` takes them
    from the file path: a regular expression with named groups ``model`` / ``domain`` / ``group``
    searched in the path (``(?P<model>[^/]+)/[^/]+\\.jsonl``), or a template matched against the end
    of the path (``{model}_{domain}_{group}.jsonl.gz``; ``{}`` and ``*`` match any name part).
    ``group`` is a third design factor beside model and domain (a condition, a thinking budget); unlike
    them it is never guessed from the records, and a trace without one has none.
    Precedence: constant, then ``*_field``, then the path, then the auto-detected fields.
    """

    reasoning_field: str | None = None
    answer_field: str | None = None
    question_field: str | None = None
    model_field: str | None = None
    domain_field: str | None = None
    group_field: str | None = None
    id_field: str | None = None
    gold_field: str | None = None
    correct_field: str | None = None
    correct_values: str | None = None  # 'V=correct,V=incorrect,V=ungraded,...' (thinkprobe.io.grades)
    model: str | None = None
    domain: str | None = None
    group: str | None = None
    path_pattern: str | None = None
    untagged: str = "profile"  # UNTAGGED_CHOICES; "skip": leave out traces whose reasoning is untagged whole text

    def __post_init__(self) -> None:
        parse_correct_values(self.correct_values)  # a ValueError names what cannot be read
        if self.untagged not in UNTAGGED_CHOICES:
            raise ValueError(f"untagged={self.untagged!r}: use one of {', '.join(UNTAGGED_CHOICES)}")
        if self.path_pattern:
            groups = set(_path_regex(self.path_pattern).groupindex)
            if not groups or groups - PATH_GROUPS:
                raise ValueError(f"path pattern {self.path_pattern!r} must name groups among {sorted(PATH_GROUPS)}, "
                                 f"e.g. '(?P<model>[^/]+)/(?P<domain>[^/]+)\\.jsonl' or '{{model}}/{{domain}}.jsonl'")

    def matches_path(self, source: str | Path) -> bool:
        """Whether a data file is one the run reads: every file without a ``path_pattern``, else those
        it matches (a folder's other files, a question list beside the models' files, are left out)."""
        return not self.path_pattern or _path_regex(self.path_pattern).search(Path(source).as_posix()) is not None

    def path_names(self) -> tuple[str, ...]:
        """What ``path_pattern`` takes from a file path (model, domain, group: those it names)."""
        names = _path_regex(self.path_pattern).groupindex if self.path_pattern else {}
        return tuple(k for k in ("model", "domain", "group") if k in names)

    def from_path(self, source: str) -> dict[str, str]:
        """The named groups ``path_pattern`` finds in a file path ({} when it does not match)."""
        if not self.path_pattern:
            return {}
        match = _path_regex(self.path_pattern).search(Path(source).as_posix())
        return {k: v for k, v in match.groupdict().items() if v} if match else {}


PATH_GROUPS = frozenset({"model", "domain", "group"})


# profile: untagged text profiled as chain of thought (a model's answers without thinking are skipped at
# the join, thinkprobe.accounting); separate: those answers profiled as <model>:no-think; skip: none profiled.
UNTAGGED_CHOICES = ("profile", "separate", "skip")


# the options that name one field of the records (checked against the records: thinkprobe.io.check)
NAMED_FIELDS = ("reasoning_field", "answer_field", "question_field", "model_field", "domain_field", "group_field",
                "id_field", "gold_field", "correct_field")


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
                  (*NAMED_FIELDS, "correct_values", "model", "domain", "group", "path_pattern", "untagged")}


@dataclass(frozen=True)
class Source:
    """One input of a run: a file or folder with its own field overrides, or in-memory ``records``
    (then ``path`` is only the name that errors and generated ids use)."""

    path: str
    fields: FieldMap = FieldMap()
    records: Iterable[dict] | None = None


def parse_source(spec: str | Path | Source, base: FieldMap = FieldMap()) -> Source:
    """``PATH`` or ``PATH::key=value,key=value``: one input with per-input overrides over ``base``.

    Keys are the option names without dashes: reasoning-field, answer-field, question-field,
    model-field, domain-field, group-field, id-field, gold-field, correct-field, correct-values, model,
    domain, group, path-pattern, untagged (underscores work too). correct-values keeps its own commas.

    >>> parse_source("a.jsonl::model=R1,reasoning-field=steps").fields.reasoning_field
    'steps'
    >>> parse_source("a.json::correct-field=eval_result,correct-values=1=correct,2=incorrect").fields.correct_values
    '1=correct,2=incorrect'
    """
    if isinstance(spec, Source):
        return spec
    spec = str(spec)
    path, sep, options = spec.partition("::")
    if not sep or Path(spec).exists():
        return Source(spec, base)
    overrides: dict[str, str | None] = {}
    name = None
    for item in re.split(r",(?=[\w-]+=)", options):
        key, eq, value = item.partition("=")
        if name == "correct_values" and key.strip().replace("_", "-") not in _OVERRIDE_KEYS:
            overrides[name] = f"{overrides[name] or ''},{item.strip()}"  # the next VALUE=LABEL pair
            continue
        name = _OVERRIDE_KEYS.get(key.strip().replace("_", "-"))
        if not eq or name is None:
            raise ValueError(f"input {spec!r}: cannot read override {item!r}; use key=value with key among "
                             f"{', '.join(_OVERRIDE_KEYS)}")
        overrides[name] = value.strip() or None
    return Source(path, replace(base, **overrides))


def source_path(spec: str | Path | Source) -> str:
    """The file or folder an input names (its ``::`` overrides removed)."""
    return parse_source(spec).path
