"""Lone surrogates (a JSON escape like \\ud83d: an emoji cut in two) in a record: a string holding one
cannot be written back as UTF-8, so a run's digest, cache keys and outputs would fail on it. Each is
replaced by U+FFFD, and the fields they were in are kept on the record (its provenance names them)."""
from __future__ import annotations

import json
import re
from typing import Any, Sequence

__all__ = ["LONE_SURROGATE", "SURROGATE_ESCAPE", "RepairedRecord", "repaired", "unencodable", "unicode_safe"]


def unencodable(value: Any) -> bool:
    """True when the decoded JSON holds a lone surrogate (from an escape like \\ud800): such a
    string cannot be written back as UTF-8 (`repaired` replaces it)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class RepairedRecord(dict):
    """A record whose lone surrogates were replaced (`repaired`); `repaired_unicode`: the fields they
    were in (the trace's provenance names them). A plain dict in every other way."""

    repaired_unicode: list[str]


def repaired(value: dict) -> RepairedRecord:
    """A record whose keys and strings hold lone surrogates (a JSON escape like \\ud83d: an emoji cut
    in two) with each replaced by U+FFFD, the fields they were in kept on it: one cut emoji cost the
    whole trace, in a field it may not even use."""
    fields: list[str] = []

    def fix(x: Any, path: str) -> Any:
        if isinstance(x, str):
            if LONE_SURROGATE.search(x):
                fields.append(path or "(record)")
                return LONE_SURROGATE.sub("\ufffd", x)
            return x
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                key = LONE_SURROGATE.sub("\ufffd", str(k))
                if key != k:
                    fields.append(f"{path}.{key}" if path else key)
                out[key] = fix(v, f"{path}.{key}" if path else key)
            return out
        if isinstance(x, list):
            return [fix(v, f"{path}[{i}]") for i, v in enumerate(x)]
        return x

    out = RepairedRecord(fix(value, ""))
    out.repaired_unicode = list(dict.fromkeys(fields))
    return out


def unicode_safe(record: Any, fields: Sequence[str] = ()) -> Any:
    """An in-memory record (thinkprobe.profile's, a stream's) with its lone surrogates replaced by
    U+FFFD, as a file's are (`repaired`; they crashed the run's digest). `fields`: fields already
    repaired by the caller (a stream repairs each piece as it is fed), named in the provenance too."""
    if not isinstance(record, dict):
        return record
    try:
        bad = unencodable(record)
    except (TypeError, ValueError, RecursionError):  # not JSON (the reader says so later), or too deep
        bad = False
    if not bad and not fields:
        return record
    out = repaired(record) if bad else RepairedRecord(record)
    out.repaired_unicode = list(dict.fromkeys([*fields, *(out.repaired_unicode if bad else [])]))
    return out
