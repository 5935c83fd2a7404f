"""The walk of an input folder: every path under it in sorted order, hidden ones left out, links to
folders followed (each real folder once; never a link back to the input folder or one above it, which
would walk the tree it lies in), a file reached twice through links read once, and the ThinkProbe run
folders inside it set apart (a run's own files are no input: an -o folder inside the input folder read
its own chunks, and an older run kept beside the data gave a warning per output file)."""
from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["walk_folder", "is_run_folder", "read_once"]

_MAX_MARK_BYTES = 64 << 20  # a run.json or manifest larger than this is no run's (and is not read to tell)


def _json_keys(path: Path) -> set[str]:
    try:
        if path.stat().st_size > _MAX_MARK_BYTES:
            return set()
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return set(value) if isinstance(value, dict) else set()


def is_run_folder(path: Path) -> bool:
    """A folder `thinkprobe profile` wrote (-o), told by its own files' contents, not their names (a
    sharded dataset's parts/manifest.json is data): an interrupted or running run's
    parts/manifest.json, or a finished run's run.json beside its graphs.jsonl. A folder it may not
    look into is none."""
    manifest = path / "parts" / "manifest.json"
    try:
        if manifest.is_file() and {"thinkprobe", "config_digest", "inputs"} <= _json_keys(manifest):
            return True
        return (path / "graphs.jsonl").exists() and (path / "run.json").is_file() and {
            "config", "coverage", "inputs"} <= _json_keys(path / "run.json")
    except OSError:
        return False


def walk_folder(root: Path) -> tuple[list[Path], list[Path]]:
    """(every file, link and folder under `root` but the hidden ones, sorted; the finished run folders
    found inside it, sorted). The contents of
    every run folder inside `root` are left out; one not finished (parts/manifest.json, no run.json
    yet: this run's own -o inside its input folder, being written, resumed or rerun) is not listed.
    `root` itself is walked even if it is a run."""
    paths: list[Path] = []
    runs: list[Path] = []
    skipped: set[Path] = set()
    seen: set[str] = set()
    above = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        real = os.path.realpath(dirpath)
        if real in seen or (here != root and os.path.commonpath([above, real]) == real):
            dirnames[:] = []  # a link back to a folder already walked, or to the input folder or one above it
            skipped.add(here)
            continue
        seen.add(real)
        if here != root and is_run_folder(here):
            skipped.add(here)
            if (here / "run.json").is_file():  # finished (a run writes run.json last)
                runs.append(here)
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        paths += [here / d for d in dirnames] + [here / f for f in filenames if not f.startswith(".")]
    return sorted(p for p in paths if p not in skipped), sorted(runs)


def read_once(paths: list[Path]) -> list[Path]:
    """`paths` with a file reached again through a link (the same real file) left out after its first."""
    files: set[str] = set()
    out = []
    for p in paths:
        real = os.path.realpath(p)
        if real not in files:
            files.add(real)
            out.append(p)
    return out
