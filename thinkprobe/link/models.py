"""Model folders of the trained backends (models/<name>/: config.json, weights, model card): where
they are found, and their config.json read once per folder.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ..config import resource_dir

__all__ = ["MODELS_DIR", "find_model_dir", "read_model_dir"]

MODELS_DIR = resource_dir("models")


def find_model_dir(name: str) -> Path:
    """A model folder: `name` itself when it is a folder, else models/<name> or models/linker-<name>."""
    path = Path(name)
    if path.is_dir():
        return path
    for candidate in (MODELS_DIR / name, MODELS_DIR / f"linker-{name}"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no linker model {name!r}: not a folder, and not in {MODELS_DIR}")


@lru_cache(maxsize=8)
def read_model_dir(path: str) -> dict:
    """config.json of a model folder (cached; `read_model_dir.cache_clear()` after writing one)."""
    cfg_path = Path(path) / "config.json"
    if not cfg_path.exists():
        raise FileNotFoundError(f"{path} has no config.json: not a ThinkProbe model folder")
    return json.loads(cfg_path.read_text(encoding="utf-8"))
