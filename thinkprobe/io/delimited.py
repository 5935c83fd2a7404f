"""CSV and TSV with a header row (thinkprobe.io.formats reads every other format): one record per
row, quoted cells that span lines, a quote never closed named, a column named twice kept twice."""
from __future__ import annotations

import csv
import io
import re
import sys
from typing import BinaryIO, Callable, Iterator

from ..records import InputError
from .limits import READ_CHUNK, WHOLE_FILE, InputLimits, record_reason

__all__ = ["iter_delimited"]


def _unique_names(header: list[str]) -> list[str]:
    """A header's names made unique: a repeated name gets _2, _3 ... (the first keeps it; not pandas'
    ".1", which a field option would read as a path), so that no column is lost (the last of two
    `response` columns silently won)."""
    seen: dict[str, int] = {}
    out = []
    for name in header:
        if name in seen:
            seen[name] += 1
            while f"{name}_{seen[name]}" in header:
                seen[name] += 1
            name = f"{name}_{seen[name]}"
        else:
            seen[name] = 1
        out.append(name)
    return out


def _quote_problem(lines: list[str], delimiter: str, last: int) -> str | None:
    """Why a row read over several lines (ending on line `last`) is no row: a quote never closed takes
    the rest of the file into one cell, a quote closed in the wrong place folds the next rows in, and
    the lenient reader hands either over without a word (a strict reading of the same lines says)."""
    # blanks between a closing quote and the delimiter (or the line end) the lenient reader keeps: no misplaced quote
    space = "[ ]+" if delimiter == "\t" else "[ \t]+"
    blanks = re.compile('"' + space + "(?=" + re.escape(delimiter) + r"|\r?\n?$)")
    try:
        list(csv.reader([blanks.sub('"', line) for line in lines], delimiter=delimiter, strict=True))
    except csv.Error as exc:
        first = last - len(lines) + 1
        if "unexpected end of data" in str(exc):
            return (f"a quoted cell opened on line {first} is never closed: lines {first}-{last} (the rest of the "
                    "file) were read into it; close the quote")
        return (f"lines {first}-{last} were read as one row, a quote misplaced in them ({exc}): they may be "
                "several rows; check the quotes there")
    return None


def _bounded_text_lines(text: io.TextIOBase, max_chars: int | None, skipped: list) -> Iterator[str]:
    """The lines of a text stream; a line over `max_chars` is read on to its end in chunks, dropped
    (an empty line takes its place) and noted in `skipped` as (line number, characters)."""
    number = 0
    while line := text.readline(max_chars + 1 if max_chars else -1):
        number += 1
        if max_chars and len(line) > max_chars and not line.endswith(("\n", "\r")):
            size = len(line)
            while (line := text.readline(READ_CHUNK)) and not line.endswith(("\n", "\r")):
                size += len(line)
            size += len(line.rstrip("\r\n"))
            skipped.append((number, size))
            line = "\n"
        yield line


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # a byte that is not UTF-8, as errors="surrogateescape" keeps it


def iter_delimited(delimiter: str) -> Callable[[str, BinaryIO, InputLimits], Iterator[tuple[str, int | str, dict | InputError]]]:
    """CSV or TSV with a header row: one record per row, the header names as fields (quoted cells
    may span lines; an empty cell is a missing value). The locator is the row's 0-based position;
    a line over the record limit is skipped unread (its locator "line N") and the rows go on."""

    kind = "TSV" if delimiter == "\t" else "CSV"

    def read(source: str, fh: BinaryIO, limits: InputLimits) -> Iterator[tuple[str, int | str, dict | InputError]]:
        max_chars = limits.record_bytes
        # reasoning cells are long; the process-wide limit is set back when the file is read
        before = csv.field_size_limit(min(sys.maxsize, 2**31 - 1, max_chars or sys.maxsize))
        # an invalid byte costs its row only: kept as a surrogate and refused with the row
        text = io.TextIOWrapper(fh, encoding="utf-8-sig", newline="", errors="surrogateescape")
        skipped: list[tuple[int, int]] = []

        def over(number: int, size: int) -> InputError:
            return InputError(source, f"line {number}", "", record_reason(size, limits, "characters"))

        index, rows_read = 0, False
        row_lines: list[str] = []  # the lines of the row being read (a quoted cell may span several)

        def kept(lines: Iterator[str]) -> Iterator[str]:
            for line in lines:
                row_lines.append(line)
                yield line

        try:
            reader = csv.reader(kept(_bounded_text_lines(text, max_chars, skipped)), delimiter=delimiter)
            header = next(reader, None)
            if header and len(row_lines) > 1 and (problem := _quote_problem(row_lines, delimiter, reader.line_num)):
                yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"header row: {problem}")
                return
            if skipped:
                yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", "header row: " + over(*skipped[0]).reason)
                return
            if not header:
                yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", "no header row")
                return
            header = _unique_names([h.lstrip("\ufeff").strip() for h in header])  # a BOM left by a second save
            if any(_ESCAPED_BYTE.search(h) for h in header):
                yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", "header row: invalid UTF-8 (save the file "
                                                                             "as UTF-8)")
                return
            row_lines.clear()
            for index, row in enumerate(reader):
                rows_read = True
                lines = list(row_lines)
                row_lines.clear()
                first = reader.line_num - len(lines) + 1
                problem = _quote_problem(lines, delimiter, reader.line_num) if len(lines) > 1 else None
                # a line of this row's quoted cell over the limit: the row goes whole, not with a hole in it
                # (unless the quotes say the row swallowed others: that is said, with the line)
                inside = [n for n in skipped if len(lines) > 1 and first <= n[0] <= reader.line_num and not problem]
                for number, size in (n for n in skipped if n not in inside):  # lines skipped on their own
                    error = over(number, size)
                    yield source, error.record, error
                skipped.clear()
                if problem:
                    yield source, index, InputError(source, index, "", problem)
                    continue
                if inside:
                    yield source, index, InputError(source, index, "", "a line of its quoted cell: " + record_reason(
                        max(size for _, size in inside), limits, "characters"))
                    continue
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    yield source, index, InputError(source, index, "", f"row has {len(row)} cells, the header {len(header)}")
                    continue
                bad = next((k for k, cell in zip(header, row) if _ESCAPED_BYTE.search(cell)), None)
                if bad is not None:
                    yield source, index, InputError(source, index, bad, "invalid UTF-8 in this cell")
                    continue
                yield source, index, {k: (v if v != "" else None) for k, v in zip(header, row)}
            for error in (over(*line) for line in skipped):  # lines skipped after the last row
                yield source, error.record, error
        except UnicodeDecodeError as exc:
            yield source, index, InputError(source, index, "", f"invalid UTF-8 at byte {exc.start}")
        except csv.Error as exc:  # on the row after the last one read (csv cannot find the next row after it)
            at = index + 1 if rows_read else 0
            if "field larger than field limit" in str(exc):  # a quoted cell spanning lines past the limit
                yield source, at, InputError(source, at, "", f"a cell over the record limit ({limits.max_record_mb:g} "
                                             "MiB; --max-record-mb raises it): the rows after it are not read")
            else:
                yield source, at, InputError(source, at, "", f"malformed {kind}: {exc}")
        finally:
            csv.field_size_limit(before)

    return read
