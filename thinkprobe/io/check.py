"""Named fields checked against the records: a `--*-field` that no record has is a misspelling far
more often than a choice, and without this check it is ignored in silence (every trace grouped as
`unknown`, the answer or gold answer missing). Likewise a `--path-pattern` that some of a folder's
data files do not match: they are left out, and named (Venhoff et al.'s folder holds its
question list, messages.json, beside the models' files).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Sequence

from ..records import InputError
from .detect import get_path
from .formats import FORMATS, data_files, iter_records, source_files, unread_files
from .walk import walk_folder
from .sources import NAMED_FIELDS, FieldMap, Source, parse_source

__all__ = ["FieldWarning", "PatternWarning", "RunFolderWarning", "UnreadFilesWarning", "check_fields", "CHECKED_RECORDS"]


CHECKED_RECORDS = 200  # records read per input for the check (the first ones, in input order)


@dataclass(frozen=True)
class FieldWarning:
    """A named field that none of the records checked has."""

    option: str  # e.g. "--model-field"
    field: str
    input: str
    checked: int  # records read
    keys: tuple[str, ...]  # the top-level keys those records do have

    def __str__(self) -> str:
        shown = ", ".join(self.keys[:30]) + (f", ... ({len(self.keys)} keys)" if len(self.keys) > 30 else "")
        return (f"{self.option} {self.field!r} matched none of the first {self.checked} records of {self.input}; "
                f"their keys: {shown or 'none'}")

    def as_dict(self) -> dict:
        return {"option": self.option, "field": self.field, "input": self.input, "checked": self.checked,
                "keys": list(self.keys)}


@dataclass(frozen=True)
class PatternWarning:
    """A --path-pattern that some data files of an input do not match."""

    option: str  # "--path-pattern"
    field: str  # the pattern
    input: str
    checked: int  # data files in the input
    unmatched: tuple[str, ...]  # those it does not match, relative to the input
    folder: bool = True  # a folder's files (left out) or a file named as an input (read)
    missed: tuple[str, ...] = ()  # a file named as an input: what the pattern would have given it and no constant does

    def __str__(self) -> str:
        if not self.folder:
            named = " and ".join(filter(None, (", ".join(self.missed[:-1]), self.missed[-1])))
            return (f"{self.option} '{self.field}' does not match {self.input}: it is read, its {named} from its "
                    f"own fields, else unknown")
        shown = ", ".join(self.unmatched[:10]) + (f", ... ({len(self.unmatched)} files)" if len(self.unmatched) > 10 else "")
        return (f"{self.option} '{self.field}' matched {self.checked - len(self.unmatched)} of the {self.checked} data "
                f"files of {self.input}; the others are left out: {shown}; to profile them too, name them as "
                f"inputs of their own")

    def as_dict(self) -> dict:
        return {"option": self.option, "field": self.field, "input": self.input, "checked": self.checked,
                "unmatched": list(self.unmatched)}


@dataclass(frozen=True)
class RunFolderWarning:
    """ThinkProbe run folders found inside an input folder: their files are outputs, not read as input."""

    input: str
    runs: tuple[str, ...]  # relative to the input

    def __str__(self) -> str:
        shown = ", ".join(self.runs[:5]) + (f", ... ({len(self.runs)} folders)" if len(self.runs) > 5 else "")
        return (f"input folder {self.input} holds {len(self.runs)} ThinkProbe run folder"
                f"{'s' if len(self.runs) > 1 else ''} ({shown}): a run's outputs, not read as input")

    def as_dict(self) -> dict:
        return {"option": None, "field": None, "input": self.input, "runs": list(self.runs)}


@dataclass(frozen=True)
class UnreadFilesWarning:
    """Files of an input folder that are not data (no data file's name): not read, and named."""

    input: str
    unread: tuple[str, ...]  # relative to the input

    def __str__(self) -> str:
        n = len(self.unread)
        shown = ", ".join(self.unread[:10]) + (f", ... ({n} files)" if n > 10 else "")
        return (f"input folder {self.input} holds {n} file{'s' if n > 1 else ''} not read, without a data file's "
                f"name ({', '.join(FORMATS)}, optionally .gz): {shown}")

    def as_dict(self) -> dict:
        return {"option": None, "field": None, "input": self.input, "unread": list(self.unread)}


def _unread_warning(src: Source) -> UnreadFilesWarning | None:
    root = Path(src.path)
    if src.records is not None or not root.is_dir():
        return None
    unread = [f.relative_to(root).as_posix() for f in unread_files(root)]
    return UnreadFilesWarning(src.path, tuple(unread)) if unread else None


def _run_folder_warning(src: Source, out_dir: str | Path | None) -> RunFolderWarning | None:
    root = Path(src.path)
    if src.records is not None or not root.is_dir():
        return None
    own = Path(out_dir).resolve() if out_dir else None  # this run's -o: rerun, not an input
    runs = [r for r in walk_folder(root)[1] if r.resolve() != own]
    return RunFolderWarning(src.path, tuple(r.relative_to(root).as_posix() for r in runs)) if runs else None


def _pattern_warning(src: Source) -> PatternWarning | None:
    root = Path(src.path)
    if not src.fields.path_pattern or src.records is not None or not root.exists():
        return None
    if not root.is_dir():  # a file named as an input is read whatever the pattern finds in its path
        # what the pattern names and no PATH::model=... constant sets (a constant comes first: nothing is missed)
        missed = tuple(k for k in src.fields.path_names() if not getattr(src.fields, k))
        return None if src.fields.matches_path(root) or not missed else PatternWarning(
            "--path-pattern", src.fields.path_pattern, src.path, 1, (root.as_posix(),), folder=False, missed=missed)
    files = data_files(root)
    unmatched = tuple(f.relative_to(root).as_posix() for f in files if not src.fields.matches_path(f))
    return PatternWarning("--path-pattern", src.fields.path_pattern, src.path, len(files), unmatched) if unmatched else None


def check_fields(inputs: Sequence[str | Path | Source], fields: FieldMap = FieldMap(),
                 records: Sequence[dict] | None = None, limit: int = CHECKED_RECORDS,
                 out_dir: str | Path | None = None) -> list:
    """One warning per named field (per input) that none of the first `limit` records has, one per
    input whose data files --path-pattern does not all match, one per input folder holding
    ThinkProbe run folders (not read) other than `out_dir`, the run's own, and one per input folder
    holding files that are not data (not read: a README, notes; an archive is named in errors.jsonl)."""
    sources = [parse_source(i, fields) for i in inputs]
    if records is not None:
        sources.insert(0, Source("<memory>", fields, records))
    warnings: list[FieldWarning | PatternWarning | RunFolderWarning | UnreadFilesWarning] = []
    for src in sources:
        if (pattern := _pattern_warning(src)) is not None:
            warnings.append(pattern)
        if (runs := _run_folder_warning(src, out_dir)) is not None:
            warnings.append(runs)
        if (unread := _unread_warning(src)) is not None:
            warnings.append(unread)
        named = {name: getattr(src.fields, name) for name in NAMED_FIELDS if getattr(src.fields, name)}
        if not named:
            continue
        rows = (r for r in src.records) if src.records is not None else \
            (r for _, _, r in iter_records(src.path, keep=src.fields.matches_path)
             if not isinstance(r, InputError))  # the files the run reads
        seen, keys, checked = set(), {}, 0
        for record in islice(rows, limit):
            if not isinstance(record, dict):
                continue
            checked += 1
            keys.update(dict.fromkeys(map(str, record)))
            seen.update(name for name, path in named.items() if get_path(record, path)[0])
            if len(seen) == len(named):
                break
        if not checked:
            continue
        warnings.extend(FieldWarning("--" + name.replace("_", "-"), path, src.path, checked, tuple(keys))
                        for name, path in named.items() if name not in seen)
    return warnings


def repeated_input(inputs: Sequence[str | Path | Source], base: FieldMap = FieldMap()) -> str | None:
    """Why a run's inputs would read some data file twice under the same field settings, or None: a
    file named twice (however spelled), or one that an input folder also reads (directly or through a
    link). Every such record would be profiled twice, doubling its weight in every test (a review:
    `good.jsonl good.jsonl` gave 9 traces of 3 records, said only as duplicate ids). The same file
    under other settings (another reasoning field, another model name) is allowed; so is a file the
    folder does not read (a hidden one, one in a run folder)."""
    read: dict[str, tuple[int, Source]] = {}  # real path of a data file -> the first input that reads it
    for k, src in enumerate(parse_source(i, base) for i in inputs):
        root = Path(src.path)
        if src.records is not None or not root.exists():
            continue
        for f in source_files(root, src.fields.matches_path):
            real = os.path.realpath(f)
            if real not in read:
                read[real] = (k, src)
                continue
            j, other = read[real]
            if j == k or other.fields != src.fields:
                continue
            if Path(other.path).resolve() == root.resolve():
                return f"input {src.path} is named twice ({other.path}): its records would be profiled twice; name it once"
            return (f"inputs {other.path} and {src.path} both read {f}: its records would be profiled twice; name each "
                    "file in one input only")
    return None
