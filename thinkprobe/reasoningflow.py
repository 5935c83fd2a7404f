"""ReasoningFlow documents (the graphs of ../shared/data/reasoningflow, human or LLM-annotated, and
ThinkProbe's own `export --format reasoningflow`): reading them, their response nodes, and the one
mapping of their node and edge labels onto our node and edge types (spec section 7), used by
`thinkprobe eval-gold`, by the silver training labels and by `profile --graph-source input`.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from .export import EXPORT_ANNOTATOR, RF_EDGE_LABELS

__all__ = ["NODE_LABEL_MAP", "GOLD_TYPES", "EDGE_LABEL_MAP", "SCORE_EDGE_TYPES", "DISTANCE_BINS", "THINK_TAG", "load_docs", "response_nodes", "written_by_thinkprobe", "map_edge_label", "node_types", "edge_types", "read_edges"]

# Node labels -> our types (spec section 7). Reflection is decided per node, see `node_types`.
NODE_LABEL_MAP = {
    "fact": "FAC", "reasoning": "RSN", "example": "RSN", "assumption": "EXP", "planning": "MET",
    "restatement": "RPT", "conclusion": "CON",
}


# Our SYN has no ReasoningFlow label: a unit drawing earlier parts together is reasoning there.
GOLD_TYPES: tuple[str, ...] = ("FAC", "RSN", "EXP", "CRT", "MET", "CON", "RPT")


_TYPE_FOR_SCORING = {"SYN": "RSN"}


# Edge labels -> (our type, critique polarity) (spec section 7). plan:proceed and plan:decompose
# are not in the spec: both connect a plan to the step that carries it out or details it, which is
# our elaboration; into an assumption node they open a case or option, which is our branch.
EDGE_LABEL_MAP: dict[str, tuple[str, str]] = {
    "reason:infer": ("inference", ""), "reason:execute": ("inference", ""), "validate:support": ("inference", ""),
    "reason:elaborate-fact": ("elaboration", ""), "reason:exemplify": ("elaboration", ""),
    "plan:verify": ("critique", "uncertain"), "plan:backtrack": ("critique", "negate"),
    "reflect:positive": ("critique", "affirm"), "reflect:negative": ("critique", "negate"),
    "reflect:uncertain": ("critique", "uncertain"), "validate:attack": ("critique", "negate"),
    "reason:restate": ("repetition", ""),
    "plan:proceed": ("elaboration", ""), "plan:decompose": ("elaboration", ""),
}


_BRANCHING_LABELS = frozenset({"plan:proceed", "plan:decompose"})


# Misspellings found in the LLM-annotated files.
_LABEL_ALIASES = {"reasoning:infer": "reason:infer", "reasoning:execute": "reason:execute",
                  "validate:refute": "validate:attack"}


# A synthesis edge j -> i is what ReasoningFlow writes as i -reason:infer-> j; gold has no synthesis.
_EDGE_FOR_SCORING = {"synthesis": "inference"}


# Documents ThinkProbe exported carry one label per edge type and polarity (export.RF_EDGE_LABELS):
# their labels are read through its inverse, exactly; the map above is for labels people and other
# annotators chose, and stays as it is for them.
_EXPORTED_EDGE_LABELS: dict[str, tuple[str, str]] = {label: kind for kind, label in RF_EDGE_LABELS.items()}


SCORE_EDGE_TYPES: tuple[str, ...] = ("inference", "elaboration", "branch", "critique", "repetition")


# Gold-node distance bins for recall / precision by distance: (name, lowest, highest).
DISTANCE_BINS: tuple[tuple[str, int, int], ...] = (("1", 1, 1), ("2-3", 2, 3), ("4-10", 4, 10), (">10", 11, 1 << 62))


THINK_TAG = re.compile(r"</?think>|<\|(?:begin|end)_of_(?:thought|solution)\|>")


def load_docs(path: str | Path) -> list[dict]:
    """ReasoningFlow documents from a folder of JSON files or a JSON / JSONL file (gzipped or not)."""
    from .io.formats import iter_records

    docs = []
    for _, _, record in iter_records(path):
        if isinstance(record, dict) and "raw_text" in record and "nodes" in record:
            docs.append(record)
    if not docs:
        raise ValueError(f"{path}: no ReasoningFlow documents (records with raw_text and nodes)")
    return docs


def response_nodes(doc: Mapping) -> list[dict]:
    """The response nodes of a document in text order (context nodes left out)."""
    return sorted((n for n in doc["nodes"] if n.get("source", "response") == "response"),
                  key=lambda n: (n["start"], n["end"]))


def written_by_thinkprobe(doc: Mapping) -> bool:
    """Whether `doc` was exported by ThinkProbe (its metadata annotator), so that its edge labels
    are read through `thinkprobe.export.RF_EDGE_LABELS` rather than spec section 7."""
    return (doc.get("metadata") or {}).get("annotator") == EXPORT_ANNOTATOR


def map_edge_label(label: str, dest_label: str | None = None, exported: bool = False) -> tuple[str, str] | None:
    """(our edge type, polarity) of a ReasoningFlow edge label, or None when it has no mapping.
    `exported`: the label comes from a document ThinkProbe wrote (`written_by_thinkprobe`), read
    through the inverse of the export's label table.

    >>> map_edge_label("reflect:negative")
    ('critique', 'negate')
    >>> map_edge_label("plan:proceed", "assumption")
    ('branch', '')
    >>> map_edge_label("plan:proceed", "reasoning"), map_edge_label("plan:proceed", "reasoning", exported=True)
    (('elaboration', ''), ('branch', ''))
    """
    label = _LABEL_ALIASES.get(label, label)
    if exported and label in _EXPORTED_EDGE_LABELS:
        return _EXPORTED_EDGE_LABELS[label]
    if label in _BRANCHING_LABELS and dest_label == "assumption":
        return "branch", ""
    return EDGE_LABEL_MAP.get(label)


def node_types(doc: Mapping, for_scoring: bool = True) -> list[str]:
    """Our type for each response node; for scoring (the default) SYN counts as RSN.

    Nodes written by ThinkProbe carry `thinkprobe_type`. Otherwise the label is mapped; a
    reflection node is CRT when it evaluates an earlier node (an incoming reflect:* or
    validate:attack edge: node_labels.yaml's "meta-evaluation of a step" and "applicability of a
    fact"), and MET otherwise (emotions, rhetorical phrases, filler about the thinking itself).
    """
    nodes = response_nodes(doc)
    evaluated = {e["dest_node_id"] for e in doc.get("edges", ())
                 if (map_edge_label(e["label"]) or ("", ""))[0] == "critique"
                 and _LABEL_ALIASES.get(e["label"], e["label"]).startswith(("reflect:", "validate:"))}
    out = []
    for n in nodes:
        if n.get("thinkprobe_type"):
            t = n["thinkprobe_type"]
        elif n.get("label") == "reflection":
            t = "CRT" if n["id"] in evaluated else "MET"
        else:
            t = NODE_LABEL_MAP.get(n.get("label"), "RSN")
        out.append(_TYPE_FOR_SCORING.get(t, t) if for_scoring else t)
    return out


def edge_types(doc: Mapping) -> list[tuple[int, int, str, str]]:
    """`read_edges` for scoring: synthesis counts as inference (gold has no synthesis)."""
    return [(a, b, _EDGE_FOR_SCORING.get(kind, kind), pol) for a, b, kind, pol in read_edges(doc)]


def read_edges(doc: Mapping) -> list[tuple[int, int, str, str]]:
    """(i, j, our edge type, polarity) per edge between two response nodes, i and j node positions
    in text order; edges touching a context node, self-loops and unmapped labels are left out. An
    edge's `thinkprobe_type` (and `polarity`) wins over its label; a label is mapped by
    `map_edge_label`, through the export's table in a document ThinkProbe wrote."""
    nodes = response_nodes(doc)
    index = {n["id"]: k for k, n in enumerate(nodes)}
    labels = {n["id"]: n.get("label") for n in nodes}
    exported = written_by_thinkprobe(doc)
    out = []
    for e in doc.get("edges", ()):
        a, b = index.get(e["source_node_id"]), index.get(e["dest_node_id"])
        if a is None or b is None or a == b:
            continue
        if e.get("thinkprobe_type"):
            kind, pol = e["thinkprobe_type"], e.get("polarity") or ""
        else:
            mapped = map_edge_label(e["label"], labels[e["dest_node_id"]], exported)
            if mapped is None:
                continue
            kind, pol = mapped
        out.append((a, b, kind, pol))
    return out
