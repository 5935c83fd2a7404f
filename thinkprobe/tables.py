"""Writing the run's tables: floats at 6 significant digits, empty cells for missing values, and
atomic replacement, so every output file has stable bytes and is never seen half-written; and
reading a run's CSV tables back. Which files a run has, and their columns, is declared in
thinkprobe.outputs; the graph records are read and written by thinkprobe.records."""
from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any, Sequence


def fmt_float(x: float) -> str:
    """6 significant digits: stable bytes across batch sizes and platforms."""
    v = float(x)
    return "0" if v == 0 else format(v, ".6g")


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return fmt_float(value)
    return "" if value is None else value


def csv_text(rows: Sequence[dict], columns: Sequence[str]) -> str:
    """The rows as CSV, "\n" after each. A row with a carriage return in a cell (a model name from CRLF
    data, "gpt\r") is quoted whole: the csv module quotes only the line terminator's characters, and a
    bare "\r" split the row when read back (the tables then held 18 traces of 12)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(columns)
    for r in rows:
        cells = [_cell(r.get(c)) for c in columns]
        (quoted if any(isinstance(v, str) and "\r" in v for v in cells) else writer).writerow(cells)
    return buf.getvalue()


def write_own(path: Path, data: str | bytes) -> None:
    """Write one of the tool's files in a run folder without following a symlink there: the link
    itself is replaced, never what it points to (a run folder unpacked from someone's archive may hold
    links out of it)."""
    if path.is_symlink():
        path.unlink()
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")


def own_dir(path: Path) -> Path:
    """One of the tool's folders in a run folder, as a real folder: a symlink in its place is removed
    (not followed, not emptied), so that nothing is written or deleted where it points."""
    if path.is_symlink():
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)
    return path


def fresh_tmp(path: Path) -> Path:
    """`path`.tmp with nothing there: whatever held the name (a stale file, or a symlink planted in a
    run folder, which a write would follow) is removed first."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    return tmp


def write_atomic(path: Path, text: str) -> None:
    """Write `path` whole or not at all: through `path`.tmp, replaced into place. Neither name is
    followed if it is a symlink (the link is replaced, never what it points to)."""
    tmp = fresh_tmp(path)
    with open(tmp, "x", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _run_file(path: Path) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: pass the -o folder of a `thinkprobe profile` run")
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    """A table of a run, as dicts of strings."""
    with open(_run_file(Path(path)), encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))
