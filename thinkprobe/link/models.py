"""Model folders of the trained backends (models/<name>/: config.json, weights, model card): where
they are found, their config.json read once per folder, and what a folder says of how well its graphs'
profiles agree with people's (agreement.json, written by scripts/linker_agreement.py).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ..config import resource_dir
from ..provenance import files_digest

__all__ = ["MODELS_DIR", "AGREEMENT_FILE", "find_model_dir", "read_model_dir", "model_digest", "read_agreement"]

MODELS_DIR = resource_dir("models")
AGREEMENT_FILE = "agreement.json"


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


def model_digest(path: str | Path) -> str:
    """Digest of what decides a model folder's graphs: its config.json and every weights file."""
    path = Path(path)
    names = ["config.json"] + sorted(p.name for p in path.glob("*.safetensors"))
    return files_digest((n, path / n) for n in names)


def read_agreement(path: str | Path) -> dict | None:
    """A model folder's agreement.json (the indicators' and dimensions' agreement with people's graphs
    of the same traces), or None where the folder has none or it was measured on other weights (its
    `model_digest` is not the folder's)."""
    file = Path(path) / AGREEMENT_FILE
    if not file.exists():
        return None
    data = json.loads(file.read_text(encoding="utf-8"))
    return data if data.get("model_digest") == model_digest(path) else None
