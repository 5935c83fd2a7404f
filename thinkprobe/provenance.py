"""Identity of what a run depends on: a digest of files (inputs, model folders, weights) and the
installed version of a library. run.json, the resume manifest, the caches' keys and `doctor` all
take theirs from here, so one file always gets one digest.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable

__all__ = ["file_digest", "files_digest", "package_version"]


def files_digest(named_files: Iterable[tuple[str, str | Path]], *, seed: str = "", length: int = 24) -> str:
    """sha256 over `seed`, then each (name, file) in order: the name, then the file's bytes (read in
    blocks, so large weights never sit in memory twice); the first `length` hex digits.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp) / "a.txt"; _ = p.write_text("x")
    ...     files_digest([("a.txt", p)]) == files_digest([("a.txt", p)]) != files_digest([("b.txt", p)])
    True
    """
    h = hashlib.sha256(seed.encode())
    for name, path in named_files:
        h.update(name.encode())
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()[:length]


def file_digest(path: str | Path, length: int = 16) -> str:
    """Digest of a file (its name and bytes), or of a folder (every file below it that a run reads from:
    by relative path, walked as inputs are, thinkprobe.io.walk: hidden files and run folders left out,
    links to folders followed)."""
    path = Path(path)
    if path.is_dir():
        from .io.walk import walk_folder

        return files_digest(((str(p.relative_to(path)), p) for p in walk_folder(path)[0] if p.is_file()),
                            length=length)
    return files_digest([(path.name, path)], length=length)


def package_version(dist: str) -> str | None:
    """The installed version of distribution `dist`, or None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None
