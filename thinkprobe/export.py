"""Export Thought Graphs from a run's graphs.jsonl: ReasoningFlow documents (spec section 7; node
offsets into the original response text, answer units included), GraphML, or node-link JSON.
"""
from __future__ import annotations

import json
from pathlib import Path

import networkx as nx

from .records import iter_graph_records

__all__ = ["iter_graph_records", "to_reasoningflow", "to_networkx", "export"]

# Our edge types written as the closest ReasoningFlow labels (the inverse of spec section 7's mapping).
_RF_EDGE = {
    "inference": "reason:infer", "elaboration": "reason:elaborate-fact", "branch": "plan:proceed",
    "synthesis": "reason:infer", "repetition": "reason:restate",
}
_RF_CRITIQUE = {"affirm": "reflect:positive", "negate": "reflect:negative", "uncertain": "reflect:uncertain"}
_RF_NODE = {"FAC": "fact", "RSN": "reasoning", "EXP": "assumption", "SYN": "reasoning", "CRT": "reflection",
            "MET": "planning", "CON": "conclusion", "RPT": "restatement"}


def _response_layout(rec: dict) -> tuple[str, dict[str, int]]:
    """The response text and, per section, the shift from its field offsets to response offsets.
    Sections from one field (inline tags) keep their offsets; sections from separate fields are
    joined as <think>reasoning</think>answer, as the traces were shown to the model."""
    fields = [s["field"] for s in rec["sections"]]
    if len(set(fields)) <= 1:
        return rec["fields"][fields[0]] if fields else "", {s["name"]: 0 for s in rec["sections"]}
    text, shift = "", {}
    for s in rec["sections"]:
        piece = rec["fields"][s["field"]]
        if s["name"] == "reasoning":
            text += "<think>\n"
            shift[s["name"]] = len(text)
            text += piece + "\n</think>\n\n"
        else:
            shift[s["name"]] = len(text)
            text += piece
    return text, shift


def to_reasoningflow(rec: dict) -> dict:
    response, shift = _response_layout(rec)
    nodes = []
    for u in rec["units"]:
        start = u["start"] + shift[u["section"]]
        nodes.append({"id": f"resp{u['id']}", "label": _RF_NODE[u["type"]], "text": u["text"], "source": "response",
                      "start": start, "end": start + len(u["text"]), "annotation": False,
                      "thinkprobe_type": u["type"], "section": u["section"]})
    edges = []
    for k, e in enumerate(rec["edges"]):
        label = _RF_CRITIQUE[e["polarity"] or "uncertain"] if e["type"] == "critique" else _RF_EDGE[e["type"]]
        # ReasoningFlow edges run from the earlier (premise) node to the node that uses it.
        src, dst = sorted((e["src"], e["dst"]))
        edges.append({"id": f"e{k}", "source_node_id": f"resp{src}", "dest_node_id": f"resp{dst}", "label": label,
                      "thinkprobe_type": e["type"], "polarity": e["polarity"]})
    return {
        "doc_id": rec["trace_id"],
        "raw_text": {"question": rec.get("question") or "", "response": response},
        "metadata": {"generator": rec["model"], "domain": rec["domain"], "correct_answer": rec.get("gold_answer"),
                     "correctness": rec.get("correct"), "annotator": "thinkprobe", "is_human_annotated": False,
                     "source": rec["source"],
                     # the response is several pieces (a list of steps, content blocks) joined by thinkprobe
                     **({"joined": rec["provenance"]["joined"]} if rec["provenance"].get("joined") else {})},
        "nodes": nodes,
        "edges": edges,
    }


def to_networkx(rec: dict) -> nx.MultiDiGraph:
    g = nx.MultiDiGraph(trace_id=rec["trace_id"], model=rec["model"], domain=rec["domain"])
    for u in rec["units"]:
        g.add_node(u["id"], text=u["text"], type=u["type"], section=u["section"], start=u["start"], end=u["end"],
                   segment=u["segment"])
    for e in rec["edges"]:
        g.add_edge(e["src"], e["dst"], type=e["type"], polarity=e["polarity"] or "", score=e["score"])
    return g


def export(run_dir: str | Path, fmt: str, out: str | Path | None = None) -> Path:
    """Write every graph of a run in `fmt`; returns the file (or folder, for graphml) written."""
    run_dir = Path(run_dir)
    if fmt == "reasoningflow":
        target = Path(out or run_dir / "reasoningflow.jsonl")
        with open(target, "w", encoding="utf-8") as f:
            for rec in iter_graph_records(run_dir):
                f.write(json.dumps(to_reasoningflow(rec), ensure_ascii=False) + "\n")
    elif fmt == "json":
        target = Path(out or run_dir / "graphs.node_link.jsonl")
        with open(target, "w", encoding="utf-8") as f:
            for rec in iter_graph_records(run_dir):
                data = nx.node_link_data(to_networkx(rec), edges="edges")
                f.write(json.dumps(data, ensure_ascii=False) + "\n")
    elif fmt == "graphml":
        target = Path(out or run_dir / "graphml")
        target.mkdir(parents=True, exist_ok=True)
        for k, rec in enumerate(iter_graph_records(run_dir)):
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in rec["trace_id"])[:80]
            nx.write_graphml(to_networkx(rec), target / f"{k:06d}_{safe}.graphml")
    else:
        raise ValueError(f"unknown export format {fmt!r}: use reasoningflow, graphml or json")
    return target
