"""Where a run's records come from: the inputs (a path, or PATH::key=value,... overrides) and the
field map that says where each record's reasoning, model, domain, group, id and gold answer are read.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

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
    model: str | None = None
    domain: str | None = None
    group: str | None = None
    path_pattern: str | None = None
    untagged: str = "profile"  # "skip": leave out traces whose reasoning is untagged whole text

    def __post_init__(self) -> None:
        if self.untagged not in UNTAGGED_CHOICES:
            raise ValueError(f"untagged={self.untagged!r}: use one of {', '.join(UNTAGGED_CHOICES)}")
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


PATH_GROUPS = frozenset({"model", "domain", "group"})


UNTAGGED_CHOICES = ("profile", "skip")


# the options that name one field of the records (checked against the records: thinkprobe.io.check)
NAMED_FIELDS = ("reasoning_field", "answer_field", "question_field", "model_field", "domain_field", "group_field",
                "id_field", "gold_field")


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
                  (*NAMED_FIELDS, "model", "domain", "group", "path_pattern", "untagged")}


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
    model-field, domain-field, group-field, id-field, gold-field, model, domain, group, path-pattern,
    untagged
    (underscores work too).

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
