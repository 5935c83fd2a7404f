"""Run configuration: the YAML in configs/ (thresholds, lexicons, model paths) merged with
command-line overrides. Every stage reads its section from here; the config hash guards --resume.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import yaml


def resource_dir(name: str) -> Path:
    """configs/ or models/: beside the package in a checkout (and an editable install), else where
    a wheel installs them, <prefix>/share/thinkprobe/<name>."""
    beside = Path(__file__).resolve().parent.parent / name
    if beside.is_dir():
        return beside
    return Path(sys.prefix) / "share" / "thinkprobe" / name


CONFIG_DIR = resource_dir("configs")
DEFAULT_CONFIG = CONFIG_DIR / "default.yaml"


def _merge(base: dict, override: Mapping) -> dict:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@dataclass(frozen=True)
class Config:
    data: Mapping[str, Any]

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> "Config":
        with open(DEFAULT_CONFIG, encoding="utf-8") as f:
            data = yaml.safe_load(f)
        if path:
            with open(path, encoding="utf-8") as f:
                data = _merge(data, yaml.safe_load(f) or {})
        if overrides:
            data = _merge(data, overrides)
        return cls(data)

    def with_overrides(self, overrides: Mapping[str, Any]) -> "Config":
        """This config with `overrides` merged over it (command-line options over the YAML)."""
        return Config(_merge(dict(self.data), overrides)) if overrides else self

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    @cached_property
    def digest(self) -> str:
        blob = json.dumps(self.data, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @cached_property
    def lexicon(self) -> dict[str, re.Pattern]:
        """One compiled alternation per lexicon category (a never-matching pattern when empty)."""
        compiled = {}
        for category, patterns in self.data["lexicon"].items():
            joined = "|".join(f"(?:{p})" for p in patterns) if patterns else r"(?!x)x"
            compiled[category] = re.compile(joined, re.IGNORECASE)
        return compiled

    @cached_property
    def filler(self) -> re.Pattern:
        return re.compile(self.data["segment"]["filler"], re.IGNORECASE)
