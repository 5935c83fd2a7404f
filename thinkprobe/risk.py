"""Failure risk: the calibrated probability that a trace's final answer is wrong, from the structure
of its reasoning alone.

`risk_features(record)` turns a graph record (a line of graphs.jsonl, or `records.graph_record` of a
graph being built) into the model's features. It reads the units of the reasoning (never those of
the answer section), their types, cues, token counts and text, and the typed edges between them;
nothing else: not the answer section, the question, the gold answer, the grade or the redundancy
suite's verdicts. The candidate answers it counts (`redundancy.extraction.find_candidates`) are
found in the reasoning with no gold answer given. So a grade or a gold answer never moves the
risk, nor does the answer section's text directly; the parser, though, types and links the
reasoning's units having read the whole trace, so a trace profiled with its answer section can
score slightly differently from the same trace cut before it (0.001-0.006 on three MiP-Overthinking
traces; the model was trained on traces cut before their answers).

`trace_key(record)` names a trace by its reasoning's opening words and signs, and `training_keys()` lists the
keys of the traces the shipped model was trained on (models/failure-risk/training_traces.json), so
a run can say which of its traces the model has seen.

`load_failure_risk()` loads the shipped model (models/failure-risk/model.json: a logistic
regression on standardised features, then Platt calibration; trained by
scripts/train_failure_risk.py, described in its README); `FailureRisk.probability(features)` maps
one feature row (or a list of them) to probabilities; `failure_risk(record)` does both, and gives
None for a reasoning shorter than every training trace (model.json's `min_units`).

>>> import math
>>> rec = {"units": [
...     {"id": 0, "section": "reasoning", "type": "RSN", "text": "So x = 4.", "cues": [], "tokens": 5},
...     {"id": 1, "section": "reasoning", "type": "CRT", "text": "Wait, maybe x = 5.", "cues": ["CRT", "hedge"], "tokens": 7},
...     {"id": 2, "section": "answer", "type": "CON", "text": "The answer is 5.", "cues": ["CON"], "tokens": 5}],
...   "edges": [{"src": 0, "dst": 1, "type": "inference"}, {"src": 1, "dst": 0, "type": "critique", "polarity": "negate"}]}
>>> f = risk_features(rec)
>>> round(math.expm1(f["log_tokens"])), f["share_CRT"], f["critique_negate_rate"], f["recurrence"]
(12, 0.5, 0.5, 1.0)
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .records import EDGE_TYPES, NODE_TYPES

__all__ = ["RISK_FEATURES", "MODEL_DIR", "risk_features", "FailureRisk", "load_failure_risk", "failure_risk",
           "shipped_model", "trace_key",
           "training_keys", "TRAINING_KEYS_FILE"]

_TAIL = 0.2  # the last fifth of the units: how a trace ends
_CUES = ("hedge", "perspective", "synthesis", "critique_negate", "critique_affirm")

# The features, in the order the model's weights follow. Counts enter as log(1 + x); shares are
# of reasoning units (types, cues), rates per reasoning unit (edges, candidates).
RISK_FEATURES: tuple[str, ...] = (
    "log_units", "log_tokens", "log_tokens_per_unit", "segments_per_unit",
    *(f"share_{t}" for t in NODE_TYPES),
    *(f"rate_{e}" for e in EDGE_TYPES),
    "backward_share", "critique_negate_rate", "critique_affirm_rate", "recurrence", "revision_span",
    "chain_depth", "log_chain_depth",
    *(f"cue_{c}" for c in _CUES),
    *(f"tail_{t}" for t in ("CRT", "EXP", "MET", "RPT", "CON")), "tail_hedge",
    "candidates_per_unit", "log_candidates", "log_distinct_answers", "answer_changes_per_candidate",
    "log_answer_changes", "final_answer_support", "settle_position", "after_last_candidate", "no_candidate",
)


def _reasoning_units(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    units = [u for u in record.get("units") or () if u.get("section", "reasoning") != "answer"]
    return sorted(units, key=lambda u: int(u["id"]))


_TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
KEY_TOKENS = 400
KEY_WHAT = f"risk.trace_key: sha1 of the reasoning's first {KEY_TOKENS} tokens (words and signs), 16 hex digits"


def trace_key(record: Mapping[str, Any]) -> str | None:
    """A trace's reasoning named by its first KEY_TOKENS tokens (lower case; a run of letters and
    digits, or any other sign but a space, over its reasoning units in order): the same trace
    profiled again, in another run or with its answer section, gets the same key. Signs count: BIG-Bench
    Mistake's Dyck traces are nearly all brackets, and by their words alone 986 had 491 keys (a run
    counted traces the failure-risk model never saw as its training traces). None for a trace
    without reasoning text."""
    tokens: list[str] = []
    for u in _reasoning_units(record):
        tokens += _TOKEN.findall(str(u.get("text", "")).lower())
        if len(tokens) >= KEY_TOKENS:
            break
    return hashlib.sha1(" ".join(tokens[:KEY_TOKENS]).encode("utf-8")).hexdigest()[:16] if tokens else None


@functools.lru_cache(maxsize=4)
def training_keys(path: str | Path | None = None) -> frozenset[str]:
    """`trace_key`s of the traces a failure-risk model folder was trained on (empty when it lists none)."""
    folder = Path(path) if path is not None else MODEL_DIR
    file = (folder if folder.is_dir() else folder.parent) / TRAINING_KEYS_FILE
    return frozenset(json.loads(file.read_text(encoding="utf-8"))["keys"]) if file.exists() else frozenset()


def _longest_path(n: int, edges: Sequence[tuple[int, int]]) -> int:
    """Edges on the longest path of forward edges (src < dst), by one pass in target order."""
    depth = np.zeros(n, dtype=np.int64)
    for s, d in sorted(edges, key=lambda e: (e[1], e[0])):
        if s < d:
            depth[d] = max(depth[d], depth[s] + 1)
    return int(depth.max()) if n else 0


def _on_cycles(n: int, edges: Sequence[tuple[int, int]]) -> int:
    """Units in a strongly connected component of more than one unit."""
    if not n or not edges:
        return 0
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    src, dst = zip(*edges)
    graph = coo_matrix((np.ones(len(edges)), (src, dst)), shape=(n, n)).tocsr()
    _, labels = connected_components(graph, directed=True, connection="strong")
    sizes = np.bincount(labels)
    return int((sizes[labels] > 1).sum())


def _candidate_features(units: Sequence[Mapping[str, Any]], n: int) -> dict[str, float]:
    """Candidate answers put forward in the reasoning (no gold answer given) and how they move."""
    from .redundancy.extraction import find_candidates
    from .redundancy.matching import answers_match

    position = {int(u["id"]): k for k, u in enumerate(units)}
    record = {"units": [{**u, "section": "reasoning"} for u in units], "gold_answer": None}
    cands = find_candidates(record)
    count = len(cands)
    if not count:
        return {"candidates_per_unit": 0.0, "log_candidates": 0.0, "log_distinct_answers": 0.0,
                "answer_changes_per_candidate": 0.0, "log_answer_changes": 0.0, "final_answer_support": 0.0,
                "settle_position": 1.0, "after_last_candidate": 1.0, "no_candidate": 1.0}
    distinct: list[str] = []
    for c in cands:
        if not any(answers_match(c.value, d) for d in distinct):
            distinct.append(c.value)
    same_as_next = [answers_match(a.value, b.value) for a, b in zip(cands, cands[1:])]
    changes = sum(not s for s in same_as_next)
    last = cands[-1].value
    support = sum(answers_match(c.value, last) for c in cands) / count
    settle = len(cands) - 1  # first candidate of the last run of the final value
    while settle > 0 and same_as_next[settle - 1]:
        settle -= 1
    span = max(n - 1, 1)
    return {"candidates_per_unit": count / n, "log_candidates": math.log1p(count),
            "log_distinct_answers": math.log1p(len(distinct)),
            "answer_changes_per_candidate": changes / max(count - 1, 1), "log_answer_changes": math.log1p(changes),
            "final_answer_support": support, "settle_position": position[cands[settle].unit] / span,
            "after_last_candidate": (n - 1 - position[cands[-1].unit]) / span, "no_candidate": 0.0}


def risk_features(record: Mapping[str, Any]) -> dict[str, float]:
    """The failure-risk features of a graph record (RISK_FEATURES order), from its reasoning units
    and the edges between them only (module docstring); a trace without reasoning units gets zeros."""
    units = _reasoning_units(record)
    n = len(units)
    if not n:
        return {name: 0.0 for name in RISK_FEATURES} | {"no_candidate": 1.0}
    position = {int(u["id"]): k for k, u in enumerate(units)}
    edges = [(position[int(e["src"])], position[int(e["dst"])], e["type"], e.get("polarity"))
             for e in record.get("edges") or () if int(e["src"]) in position and int(e["dst"]) in position]
    tokens = float(sum(int(u.get("tokens") or len(str(u.get("text", "")).split())) for u in units))
    types = [u.get("type", "RSN") for u in units]
    cues = [set(u.get("cues") or ()) for u in units]
    tail = max(1, int(round(_TAIL * n)))
    critiques = [(s, d, p) for s, d, kind, p in edges if kind == "critique"]
    flow = [(s, d) for s, d, kind, _ in edges if kind in ("inference", "elaboration")]
    depth = _longest_path(n, flow)
    f: dict[str, float] = {
        "log_units": math.log1p(n), "log_tokens": math.log1p(tokens), "log_tokens_per_unit": math.log(max(tokens, 1) / n),
        "segments_per_unit": len({u.get("segment", 0) for u in units}) / n,
        **{f"share_{t}": types.count(t) / n for t in NODE_TYPES},
        **{f"rate_{e}": sum(kind == e for _, _, kind, _ in edges) / n for e in EDGE_TYPES},
        "backward_share": sum(s > d for s, d, _, _ in edges) / max(len(edges), 1),
        "critique_negate_rate": sum(p == "negate" for _, _, p in critiques) / n,
        "critique_affirm_rate": sum(p == "affirm" for _, _, p in critiques) / n,
        "recurrence": _on_cycles(n, [(s, d) for s, d, _, _ in edges]) / n,
        "revision_span": (sum(abs(s - d) for s, d, _ in critiques) / len(critiques) / n) if critiques else 0.0,
        "chain_depth": depth / n, "log_chain_depth": math.log1p(depth),
        **{f"cue_{c}": sum(c in cs for cs in cues) / n for c in _CUES},
        **{f"tail_{t}": types[-tail:].count(t) / tail for t in ("CRT", "EXP", "MET", "RPT", "CON")},
        "tail_hedge": sum("hedge" in cs for cs in cues[-tail:]) / tail,
        **_candidate_features(units, n),
    }
    return {name: float(f[name]) for name in RISK_FEATURES}


# ----------------------------------------------------------------------------- the model


def _model_dir() -> Path:
    from .config import resource_dir

    return resource_dir("models") / "failure-risk"


MODEL_DIR = _model_dir()
TRAINING_KEYS_FILE = "training_traces.json"


@dataclass(frozen=True)
class FailureRisk:
    """A logistic regression on standardised features followed by Platt calibration:
    p = sigmoid(a * (w . z + b) + c), z = (x - mean) / scale clipped to [-clip, clip] (so one
    feature far outside the training range, such as a rare cycle, cannot decide the risk alone)."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    calibration: tuple[float, float]  # (a, c)
    card: Mapping[str, Any]  # what model.json says about its training (data, date, evaluation)
    clip: float | None = None  # |z| bound of the standardised features (None: unbounded)
    min_units: int = 0  # the fewest reasoning units of a training trace: a shorter trace gets no risk

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "FailureRisk":
        return cls(tuple(data["features"]), np.asarray(data["mean"], np.float64), np.asarray(data["scale"], np.float64),
                   np.asarray(data["coef"], np.float64), float(data["intercept"]),
                   (float(data["calibration"]["a"]), float(data["calibration"]["c"])),
                   {k: v for k, v in data.items()
                    if k not in ("mean", "scale", "coef", "intercept", "clip", "min_units")},
                   None if data.get("clip") is None else float(data["clip"]), int(data.get("min_units", 0)))

    def to_json(self) -> dict:
        return {**self.card, "features": list(self.features), "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "coef": self.coef.tolist(), "intercept": self.intercept,
                "calibration": {"a": self.calibration[0], "c": self.calibration[1]},
                **({} if self.clip is None else {"clip": self.clip}),
                **({"min_units": self.min_units} if self.min_units else {})}

    def matrix(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        missing = [f for f in self.features if rows and f not in rows[0]]
        if missing:
            raise KeyError(f"feature row lacks {missing[:3]}: build it with thinkprobe.risk.risk_features")
        return np.array([[float(r[f]) for f in self.features] for r in rows], dtype=np.float64).reshape(len(rows), -1)

    def standardised(self, x: np.ndarray) -> np.ndarray:
        z = (x - self.mean) / self.scale
        return z if self.clip is None else np.clip(z, -self.clip, self.clip)

    def logit(self, x: np.ndarray) -> np.ndarray:
        return self.standardised(x) @ self.coef + self.intercept

    def probability(self, features: Mapping[str, float] | Sequence[Mapping[str, float]]):
        """P(the final answer is wrong) of one feature row (a float) or of a list of rows (an array)."""
        single = isinstance(features, Mapping)
        rows = [features] if single else list(features)
        a, c = self.calibration
        p = 1.0 / (1.0 + np.exp(-(a * self.logit(self.matrix(rows)) + c)))
        return float(p[0]) if single else p


@functools.lru_cache(maxsize=4)
def load_failure_risk(path: str | Path | None = None) -> FailureRisk:
    """The failure-risk model of `path` (a folder holding model.json, or the file), default the shipped one."""
    path = Path(path) if path is not None else MODEL_DIR
    file = path / "model.json" if path.is_dir() else path
    if not file.exists():
        raise FileNotFoundError(f"{file} not found: train it with scripts/train_failure_risk.py")
    return FailureRisk.from_json(json.loads(file.read_text(encoding="utf-8")))


def failure_risk(record: Mapping[str, Any], model: FailureRisk | None = None) -> float | None:
    """P(the final answer of the trace is wrong) from a graph record's reasoning structure; None for a
    reasoning of fewer units than any the model was trained on (`min_units`: a one-unit "Yes." had got
    its model's lowest risk, read off features far outside what the model saw)."""
    model = model or load_failure_risk()
    if len(_reasoning_units(record)) < model.min_units:
        return None
    return model.probability(risk_features(record))


def shipped_model() -> FailureRisk | None:
    """The shipped failure-risk model, None where none is installed."""
    try:
        return load_failure_risk()
    except FileNotFoundError:
        return None
