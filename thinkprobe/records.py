"""Plain records that cross module borders: a loaded trace, its Thought Units and typed edges,
the compact array form of a Thought Graph that the indicator kernels read, and the graph record:
one line of graphs.jsonl, with its typed writer (`graph_record`, `dump_graph_record`) and reader
(`iter_graph_records`), which every module and script that reads a run's graphs goes through.

Offsets are always character offsets into the *original* field string a section came from.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, TypedDict

import numpy as np

from .tables import fmt_float

NODE_TYPES: tuple[str, ...] = ("FAC", "RSN", "EXP", "SYN", "CRT", "MET", "CON", "RPT")
EDGE_TYPES: tuple[str, ...] = ("inference", "elaboration", "branch", "critique", "synthesis", "repetition")
FORWARD_EDGES = frozenset({"inference", "elaboration", "branch"})
BACKWARD_EDGES = frozenset({"critique", "synthesis", "repetition"})

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
class GivenGraph:
    """A Thought Graph a record carries (`profile --graph-source input`): its units as typed spans
    of the trace's sections, (section name, start, end, node type) in text order, and its typed
    edges between them, in our direction."""

    units: tuple[tuple[str, int, int, str], ...]
    edges: tuple["Edge", ...]
    kind: str  # "reasoningflow" | "thinkprobe": what the record held


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
    given: GivenGraph | None = None  # the record's own graph, profiled instead of parsing the text
    group: str | None = None  # a design factor beside model and domain (--group-field); None: no group

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

    def __init__(self, source: str, record: int | str, field: str, reason: str, model: str | None = None,
                 trace_id: str | None = None):
        self.source, self.record, self.field, self.reason = source, record, field, reason
        self.model = model  # the record's model where it is known (run.json counts skips per model)
        self.trace_id = trace_id  # the id the record gives (a batch line's custom_id, ...) where it gives one
        super().__init__(f"{source}: record {record}: field {field!r}: {reason}")

    def __reduce__(self):  # to a worker process and back (--workers): rebuilt from its parts, not its message
        return type(self), (self.source, self.record, self.field, self.reason, self.model, self.trace_id)

    def as_dict(self) -> dict[str, Any]:
        out = {"file": self.source, "record": self.record, "field": self.field, "reason": self.reason}
        return out if self.model is None else {**out, "model": self.model}


# ----------------------------------------------------------------------------- the graph record
# One line of graphs.jsonl. TypedDicts rather than dataclasses: the record is JSON on disk, and
# its readers (redundancy, answers, export, report, evalgold, the tests' hand-built records) index
# it as a dict; the types document and check the shape without a conversion on every read.
# Missing values are null (None), never "", so dataframe readers infer one type per column.


class SectionRecord(TypedDict):
    name: str  # "reasoning" | "answer"
    field: str  # key into GraphRecord["fields"]
    start: int
    end: int


class UnitRecord(TypedDict):
    id: int  # 0..n-1 in text order
    section: str
    start: int  # into fields[section's field]
    end: int
    text: str
    type: str  # one of NODE_TYPES
    segment: int
    cues: list[str]
    tokens: int


class EdgeRecord(TypedDict):
    src: int
    dst: int
    type: str  # one of EDGE_TYPES
    polarity: str | None  # critique edges: affirm | negate | uncertain; else None
    score: float


class CandidateRecord(TypedDict):
    unit: int
    value: str
    kind: str
    correct: bool | None
    reason: str


class FinalAnswerRecord(TypedDict):
    unit: int
    value: str
    kind: str


class RedundancyRecord(TypedDict):
    metrics: dict[str, int | float | None]  # redundancy.csv's metric columns; None = unknown
    sep: list[int]
    sep_path: list[int]
    sep_target: int | None
    candidates: list[CandidateRecord]
    final_answer: FinalAnswerRecord | None
    final_correct: bool | None
    off_path_positions: list[float]


class _GraphRecordBase(TypedDict):
    trace_id: str
    model: str
    domain: str
    source: str  # the input file ("<memory>" for records given in memory)
    record: int  # 0-based record position in that input
    question: str | None
    gold_answer: str | None
    correct: bool | None  # the record's own grade; the run's verdict is redundancy["final_correct"]
    provenance: dict[str, Any]
    sections: list[SectionRecord]
    fields: dict[str, str]  # original field text by field name
    units: list[UnitRecord]
    edges: list[EdgeRecord]
    indicators: dict[str, float]  # the 19 indicators, 6 significant digits


class GraphRecord(_GraphRecordBase, total=False):
    group: str  # the trace's group (--group-field, --group, (?P<group>...)); absent when it has none
    tests: Any  # the tests a programming record carries, as the input gave them
    redundancy: RedundancyRecord  # added by the redundancy suite


GRAPH_RECORD_KEYS: tuple[str, ...] = tuple(_GraphRecordBase.__annotations__)
# What the reader insists on: the graph itself. Hand-built records (tests, other tools) may omit
# the provenance, the field texts and the indicators; a reader that needs them says so itself.
REQUIRED_KEYS: tuple[str, ...] = ("trace_id", "model", "domain", "units", "edges")
GRAPHS_FILE = "graphs.jsonl"


def graph_record(g: ThoughtGraph, indicators: Mapping[str, float]) -> GraphRecord:
    """The graph record of a built Thought Graph and its indicators (before the redundancy suite)."""
    t = g.trace
    fields_text: dict[str, str] = {}
    for s in t.sections:
        fields_text.setdefault(s.field, s.text)
    return {
        "trace_id": t.trace_id, "model": t.model, "domain": t.domain,
        **({"group": t.group} if t.group is not None else {}),
        "source": t.source, "record": t.record,
        "question": t.question, "gold_answer": t.gold_answer, "correct": t.correct,
        **({"tests": t.code_tests} if t.code_tests is not None else {}),
        "provenance": dict(t.provenance),
        "sections": [{"name": s.name, "field": s.field, "start": s.start, "end": s.end} for s in t.sections],
        "fields": fields_text,
        "units": [{"id": u.index, "section": u.section, "start": u.start, "end": u.end, "text": u.text,
                   "type": u.node_type, "segment": u.segment, "cues": list(u.cues),
                   "tokens": int(g.tokens[u.index])} for u in g.units],
        "edges": [{"src": e.src, "dst": e.dst, "type": e.edge_type, "polarity": e.polarity or None,
                   "score": e.score} for e in g.edges],
        "indicators": {k: float(fmt_float(v)) for k, v in indicators.items()},
    }


def group_of(record: GraphRecord | Mapping[str, Any]) -> str | None:
    """The trace's group (a design factor beside model and domain), None when it has none."""
    value = record.get("group")
    return None if value is None or value == "" else str(value)


def source_id(record: GraphRecord | Mapping[str, Any]) -> str | None:
    """The record's own id (provenance ``source_id``), None when the input record had none."""
    value = (record.get("provenance") or {}).get("source_id")
    return None if value is None else str(value)


def find_graph_record(path: str | Path, trace_id: str) -> dict:
    """The graph record of `trace_id` in the graphs.jsonl at `path`, or else of the one trace whose
    record had that id of its own (`source_id`: the id in the input file, which a run may have renamed
    to keep trace ids unique); a ValueError names what was not found or which traces share the id."""
    # Only parse lines that can hold the id, however the writer escaped non-ASCII characters.
    needles = {json.dumps(trace_id), json.dumps(trace_id, ensure_ascii=False)}
    path = Path(path)
    by_source = []
    if path.exists():
        with open(path, encoding="utf-8") as f:
            for line in f:
                if any(n in line for n in needles):
                    rec = json.loads(line)
                    if rec["trace_id"] == trace_id:
                        return rec
                    if source_id(rec) == trace_id:
                        by_source.append(rec)
    if len(by_source) == 1:
        return by_source[0]
    if by_source:
        shown = ", ".join(repr(r["trace_id"]) for r in by_source[:10]) + (", ..." if len(by_source) > 10 else "")
        raise ValueError(f"{trace_id!r} is the record id of {len(by_source)} traces in {path} ({shown}): "
                         f"pass one of their trace ids")
    raise ValueError(f"trace {trace_id!r} not found in {path}: neither a trace id nor a record's own id (source_id)")


def answer_cut(provenance: Mapping[str, Any]) -> bool:
    """Whether the API stopped the trace at its token limit in the answer, the reasoning whole
    (provenance ``truncated_by`` without ``truncated``): the answer's last unit is cut mid-way."""
    return bool(provenance.get("truncated_by")) and not provenance.get("truncated")


def dump_graph_record(record: GraphRecord) -> str:
    """One graphs.jsonl line (newline included)."""
    return json.dumps(record, ensure_ascii=False) + "\n"


def load_graph_record(line: str, source: str = GRAPHS_FILE, line_no: int = 0) -> GraphRecord:
    """A graph record from its JSON line; a malformed one raises InputError naming file, line and field."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {line_no}", "", f"not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise InputError(source, f"line {line_no}", "", "not a graph record (a JSON object)")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise InputError(source, f"line {line_no}", missing[0], "missing: not a thinkprobe graph record")
    return record  # type: ignore[return-value]


def iter_graph_records(run_dir: str | Path, missing_ok: bool = False) -> Iterator[GraphRecord]:
    """The graph records of a run's graphs.jsonl, in order (none when missing_ok and it is absent)."""
    path = Path(run_dir) / GRAPHS_FILE
    if not path.exists():
        if missing_ok:
            return
        raise FileNotFoundError(f"{path} not found: pass the -o folder of a `thinkprobe profile` run")
    with open(path, encoding="utf-8") as f:
        for k, line in enumerate(f, start=1):
            if line.strip():
                yield load_graph_record(line, str(path), k)
