"""Writing the run's tables: floats at 6 significant digits, empty cells for missing values, and
atomic replacement, so every output file has stable bytes and is never seen half-written; and
reading a run's tables and graphs back (stats, report, export)."""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Iterator, Sequence


def fmt_float(x: float) -> str:
    """6 significant digits: stable bytes across batch sizes and platforms."""
    v = float(x)
    return "0" if v == 0 else format(v, ".6g")


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return fmt_float(value)
    return "" if value is None else value


def csv_text(rows: Sequence[dict], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([_cell(r.get(c)) for c in columns])
    return buf.getvalue()


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
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


def iter_graph_records(run_dir: str | Path, missing_ok: bool = False) -> Iterator[dict]:
    """The graph records of a run's graphs.jsonl, in order (none when missing_ok and it is absent)."""
    path = Path(run_dir) / "graphs.jsonl"
    if missing_ok and not path.exists():
        return
    with open(_run_file(path), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)
