"""The walk of an input folder: every path under it in sorted order, hidden ones left out, links to
folders followed (each real folder once, so a link loop ends), and the ThinkProbe run folders inside
it set apart (a run's own files are no input: an -o folder inside the input folder read its own
chunks, and an older run kept beside the data gave a warning per output file)."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["walk_folder", "is_run_folder"]


def is_run_folder(path: Path) -> bool:
    """A folder `thinkprobe profile` wrote (-o): a finished run's run.json beside its graphs.jsonl, or
    an interrupted one's parts/manifest.json."""
    return (path / "parts" / "manifest.json").is_file() or (
        (path / "run.json").is_file() and (path / "graphs.jsonl").exists())


def walk_folder(root: Path) -> tuple[list[Path], list[Path]]:
    """(every file, link and folder under `root` but the hidden ones, sorted; the finished run folders
    found inside it, sorted). The contents of every run folder inside `root` are left out; one not
    finished (parts/manifest.json, no run.json yet: this run's own -o inside its input folder, being
    written, resumed or rerun) is not listed, so nothing is said of it. `root` itself is walked even if it is
    a run."""
    paths: list[Path] = []
    runs: list[Path] = []
    skipped: set[Path] = set()
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        real = os.path.realpath(dirpath)
        if real in seen:  # a link back to a folder already walked
            dirnames[:] = []
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
