"""The five-dimensional cognitive profile (spec section 1, step 8). A `Normalizer` is fit on the
indicators of a corpus (mean and standard deviation per indicator), saved as norms.json, and
applied to the same or another corpus; each dimension is the mean of its indicators' signed
z-scores, so every dimension reads "more X".
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from .indicators import DIMENSIONS, INDICATORS, SIGNS

__all__ = ["Normalizer", "profile_row", "group_profiles", "DIMENSION_NAMES"]

DIMENSION_NAMES: tuple[str, ...] = tuple(DIMENSIONS)


@dataclass
class Normalizer:
    """z = (x - mean_) / std_ per indicator; a constant indicator (std_ 0) scores 0."""

    mean_: dict[str, float] = field(default_factory=dict)
    std_: dict[str, float] = field(default_factory=dict)
    n_: int = 0

    def fit(self, rows: Sequence[Mapping[str, float]]) -> "Normalizer":
        self.n_ = len(rows)
        for name in INDICATORS:
            values = [float(r[name]) for r in rows]
            mean = math.fsum(values) / len(values) if values else 0.0
            var = math.fsum((v - mean) ** 2 for v in values) / len(values) if values else 0.0
            self.mean_[name], self.std_[name] = mean, math.sqrt(var)
        return self

    def is_flat(self, name: str) -> bool:
        """Whether one value holds indicator `name` over the fitted rows (std at most 1e-12): z scores it 0."""
        return not self.std_[name] > 1e-12

    def z(self, row: Mapping[str, float]) -> dict[str, float]:
        out = {}
        for name in INDICATORS:
            out[name] = 0.0 if self.is_flat(name) else (float(row[name]) - self.mean_[name]) / self.std_[name]
        return out

    def to_json(self) -> dict:
        return {"n_traces": self.n_, "indicators": {k: {"mean": self.mean_[k], "std": self.std_[k]} for k in INDICATORS},
                "signs": dict(SIGNS), "dimensions": {d: list(v) for d, v in DIMENSIONS.items()}}

    @classmethod
    def load(cls, path: str | Path) -> "Normalizer":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            stats = data["indicators"]
            missing = [k for k in INDICATORS if k not in stats]
            if missing:
                raise ValueError(f"no statistics for {', '.join(missing)}")
            return cls({k: float(stats[k]["mean"]) for k in INDICATORS},
                       {k: float(stats[k]["std"]) for k in INDICATORS}, int(data.get("n_traces", 0)))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"--norms {path}: not a ThinkProbe norms.json ({exc})") from exc


def profile_row(z: Mapping[str, float]) -> dict[str, float]:
    """5D-CP of one trace: per dimension, the mean of its indicators' signed z-scores."""
    return {dim: sum(SIGNS[i] * z[i] for i in names) / len(names) for dim, names in DIMENSIONS.items()}


def group_profiles(rows: Iterable[Mapping], keys: Sequence[str]) -> list[dict]:
    """Mean profile per group of `keys` (e.g. ("model",) or ("model", "domain")), sorted by key."""
    groups: dict[tuple, list[Mapping]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for key in sorted(groups):
        members = groups[key]
        row = dict(zip(keys, key))
        row["n"] = len(members)
        for dim in DIMENSION_NAMES:
            row[dim] = math.fsum(m[dim] for m in members) / len(members)
        out.append(row)
    return out
