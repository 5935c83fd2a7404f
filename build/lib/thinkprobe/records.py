"""Plain records that cross module borders: a loaded trace, its Thought Units and typed edges,
and the compact array form of a Thought Graph that the indicator kernels read.

Offsets are always character offsets into the *original* field string a section came from.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

NODE_TYPES: tuple[str, ...] = ("FAC", "RSN", "EXP", "SYN", "CRT", "MET", "CON", "RPT")
EDGE_TYPES: tuple[str, ...] = ("inference", "elaboration", "branch", "critique", "synthesis", "repetition")
FORWARD_EDGES = frozenset({"inference", "elaboration", "branch"})
BACKWARD_EDGES = frozenset({"critique", "synthesis", "repetition"})
POLARITIES: tuple[str, ...] = ("affirm", "negate", "uncertain")

NODE_INDEX = {t: i for i, t in enumerate(NODE_TYPES)}
EDGE_INDEX = {t: i for i, t in enumerate(EDGE_TYPES)}


@dataclass(frozen=True)
class Section:
    """A span of one original field: the reasoning, or the answer that follows it."""

    name: str  # "reasoning" | "answer"
    field: str  # where it came from, e.g. "response", "reasoning_content", "messages[-1].content"
    text: str  # the whole original field string (offsets point into it)
    start: int
    end: int

    @property
    def content(self) -> str:
        return self.text[self.start : self.end]


@dataclass(frozen=True)
class Trace:
    """One reasoning trace with its metadata and where every value came from."""

    trace_id: str
    model: str
    domain: str
    sections: tuple[Section, ...]
    question: str | None = None
    gold_answer: str | None = None
    correct: bool | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""  # file the record came from
    record: int = 0  # record index (0-based line / list position) inside that file
    code_tests: Any = None  # tests a programming record carries (run by the redundancy suite's sandbox)

    @property
    def reasoning(self) -> Section | None:
        return next((s for s in self.sections if s.name == "reasoning"), None)

    @property
    def answer(self) -> Section | None:
        return next((s for s in self.sections if s.name == "answer"), None)


@dataclass(frozen=True)
class ThoughtUnit:
    index: int
    section: str  # "reasoning" | "answer"
    start: int  # into the section's original field text
    end: int
    text: str
    segment: int  # layer-1 (TextTiling) block id, increasing along the trace
    node_type: str = "RSN"
    cues: tuple[str, ...] = ()  # lexicon categories that fired (filler cues of merged fragments included)


@dataclass(frozen=True)
class Edge:
    src: int
    dst: int
    edge_type: str
    polarity: str = ""  # only for critique edges: affirm | negate | uncertain
    score: float = 1.0


@dataclass
class ThoughtGraph:
    trace: Trace
    units: list[ThoughtUnit]
    edges: list[Edge]
    embeddings: np.ndarray  # (n, d) float32, unit-normalised
    tokens: np.ndarray  # (n,) int32, tokens per unit with the run's tokenizer
    concreteness: np.ndarray  # (n,) float64 in [0, 1]
    hedge: np.ndarray  # (n,) bool
    perspective: np.ndarray  # (n,) bool

    def arrays(self) -> "GraphArrays":
        n = len(self.units)
        edges = sorted(self.edges, key=lambda e: (e.src, e.dst, EDGE_INDEX[e.edge_type]))
        return GraphArrays(
            n=n,
            node_type=np.array([NODE_INDEX[u.node_type] for u in self.units], dtype=np.int8),
            edge_src=np.array([e.src for e in edges], dtype=np.int32),
            edge_dst=np.array([e.dst for e in edges], dtype=np.int32),
            edge_type=np.array([EDGE_INDEX[e.edge_type] for e in edges], dtype=np.int8),
            embeddings=np.ascontiguousarray(self.embeddings, dtype=np.float32).reshape(n, -1) if n else np.zeros((0, 1), np.float32),
            tokens=np.asarray(self.tokens, dtype=np.int32),
            concreteness=np.asarray(self.concreteness, dtype=np.float64),
            hedge=np.asarray(self.hedge, dtype=np.bool_),
            perspective=np.asarray(self.perspective, dtype=np.bool_),
        )


@dataclass(frozen=True)
class GraphArrays:
    """Compact array form of a Thought Graph: what the indicator kernels consume.

    Node i is the i-th Thought Unit in text order. Edge k goes edge_src[k] -> edge_dst[k] with
    type EDGE_TYPES[edge_type[k]]; forward edges have src < dst, backward edges src > dst.
    """

    n: int
    node_type: np.ndarray  # (n,) int8, index into NODE_TYPES
    edge_src: np.ndarray  # (m,) int32
    edge_dst: np.ndarray  # (m,) int32
    edge_type: np.ndarray  # (m,) int8, index into EDGE_TYPES
    embeddings: np.ndarray  # (n, d) float32, unit-normalised
    tokens: np.ndarray  # (n,) int32
    concreteness: np.ndarray  # (n,) float64
    hedge: np.ndarray  # (n,) bool
    perspective: np.ndarray  # (n,) bool


class InputError(ValueError):
    """A record that cannot be profiled: says which file, record and field, and why."""

    def __init__(self, source: str, record: int | str, field: str, reason: str):
        self.source, self.record, self.field, self.reason = source, record, field, reason
        super().__init__(f"{source}: record {record}: field {field!r}: {reason}")

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.source, "record": self.record, "field": self.field, "reason": self.reason}
