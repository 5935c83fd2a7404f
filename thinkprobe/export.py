"""Export Thought Graphs from a run's graphs.jsonl: ReasoningFlow documents (spec section 7; node
offsets into the original response text, answer units included), GraphML, or node-link JSON.

ReasoningFlow edges run from the earlier (premise) node to the later one, so our backward edges
(critique, synthesis, repetition: j -> i) are written i -> j; the edge type says the direction.
Each edge type, critique by polarity, has its own label (RF_EDGE_LABELS), so the labels alone give
our types back: `thinkprobe.evalgold` reads a document whose metadata annotator is "thinkprobe"
through the inverse of this table (exactly), and any other document through spec section 7.

    inference           reason:infer            elaboration   reason:elaborate-fact
    branch              plan:proceed            repetition    reason:restate
    critique affirm     reflect:positive        synthesis     validate:support
    critique negate     reflect:negative
    critique uncertain  reflect:uncertain       (a critique without polarity is written uncertain)

What a reader who applies ReasoningFlow's own meanings (spec section 7) instead of this table
loses, and only this: synthesis has no ReasoningFlow label. Its faithful reading is reason:infer
(the synthesising unit is inferred from each earlier segment it draws together), which is our
inference's label; validate:support is the closest label that is free and that spec section 7 also
reads as inference, but in ReasoningFlow it says the later unit agrees with an independently
derived earlier one, not that it combines several. Either way such a reader, like eval-gold's
scoring, counts synthesis as inference. And plan:proceed means branch there only into an
assumption node: a branch into a unit not typed EXP (written reasoning, planning, ...) reads as
elaboration. Node labels lose SYN alone: it is written reasoning (ReasoningFlow has no synthesis
node) and reads back as RSN, as eval-gold scores it; a CRT unit is a reflection node that its
critique edge, an incoming reflect:*, marks as CRT (spec section 7).
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import networkx as nx

from .outputs import EXPORT_FILES, TOOL_FILES
from .records import iter_graph_records
from .tables import own_dir

__all__ = ["iter_graph_records", "to_reasoningflow", "to_networkx", "export", "RF_EDGE_LABELS", "EXPORT_ANNOTATOR"]

# (our edge type, critique polarity) -> the ReasoningFlow label written; one label each (see above).
RF_EDGE_LABELS: dict[tuple[str, str], str] = {
    ("inference", ""): "reason:infer", ("elaboration", ""): "reason:elaborate-fact", ("branch", ""): "plan:proceed",
    ("critique", "affirm"): "reflect:positive", ("critique", "negate"): "reflect:negative",
    ("critique", "uncertain"): "reflect:uncertain", ("synthesis", ""): "validate:support",
    ("repetition", ""): "reason:restate",
}
# The metadata annotator of the documents written here: it tells readers to use RF_EDGE_LABELS.
EXPORT_ANNOTATOR = "thinkprobe"
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
        polarity = (e["polarity"] or "uncertain") if e["type"] == "critique" else ""
        src, dst = sorted((e["src"], e["dst"]))
        edges.append({"id": f"e{k}", "source_node_id": f"resp{src}", "dest_node_id": f"resp{dst}",
                      "label": RF_EDGE_LABELS[e["type"], polarity],
                      "thinkprobe_type": e["type"], "polarity": e["polarity"]})
    return {
        "doc_id": rec["trace_id"],
        "raw_text": {"question": rec.get("question") or "", "response": response},
        "metadata": {"generator": rec["model"], "domain": rec["domain"], "correct_answer": rec.get("gold_answer"),
                     "correctness": rec.get("correct"), "annotator": EXPORT_ANNOTATOR, "is_human_annotated": False,
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


# What XML 1.0 cannot hold (control characters but tab and newlines, lone surrogates, U+FFFE/FFFF): a
# trace with an ANSI colour code or a NUL wrote GraphML that no parser reads.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(g: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """`g` with every text attribute's non-XML characters replaced by U+FFFD (GraphML only)."""
    def clean(attrs: dict) -> None:
        for key, value in attrs.items():
            if isinstance(value, str) and _NOT_XML.search(value):
                attrs[key] = _NOT_XML.sub("\ufffd", value)

    clean(g.graph)
    for _, attrs in g.nodes(data=True):
        clean(attrs)
    for _, _, attrs in g.edges(data=True):
        clean(attrs)
    return g


def export(run_dir: str | Path, fmt: str, out: str | Path | None = None) -> Path:
    """Write every graph of a run in `fmt`; returns the file (or folder, for graphml) written. A file
    is written whole through a temporary name of its own and then moved into place (a symlink at the
    target is replaced, not written through; nothing is left on failure); the run folder itself or a
    target among its own files (graphs.jsonl, parts/, traces/ ...) is refused (`-o RUN/graphs.jsonl`
    had emptied the graphs it was reading, `-o RUN/parts/000000.jsonl` broke --resume)."""
    run_dir = Path(run_dir)
    if out is not None:
        target, home = Path(out).resolve(), run_dir.resolve()
        inside = target.relative_to(home).parts if target.is_relative_to(home) else ()
        if target == home or (inside and inside[0] in TOOL_FILES and inside[0] not in EXPORT_FILES):
            raise ValueError(f"-o {out} is the run folder or one of its own files (parts/, traces/ ...); choose "
                             "another target")
    if fmt in ("reasoningflow", "json"):
        default = "reasoningflow.jsonl" if fmt == "reasoningflow" else "graphs.node_link.jsonl"
        target = Path(out or run_dir / default)
        if target.is_dir() and not target.is_symlink():
            raise ValueError(f"-o {out}: a folder; name the file to write")
        if not target.parent.is_dir():
            raise ValueError(f"-o {out}: no such folder {target.parent}")
        # a temporary name of its own beside the target (no file of the user's is taken), gone on failure
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with open(fd, "w", encoding="utf-8") as f:
                for rec in iter_graph_records(run_dir):
                    data = (to_reasoningflow(rec) if fmt == "reasoningflow"
                            else nx.node_link_data(to_networkx(rec), edges="edges"))
                    f.write(json.dumps(data, ensure_ascii=False) + "\n")
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)  # as open() would have made it (mkstemp's file is private)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    elif fmt == "graphml":
        target = own_dir(run_dir / "graphml") if out is None else Path(out)
        target.mkdir(parents=True, exist_ok=True)
        for k, rec in enumerate(iter_graph_records(run_dir)):
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in rec["trace_id"])[:80]
            nx.write_graphml(_xml_safe(to_networkx(rec)), target / f"{k:06d}_{safe}.graphml")
    else:
        raise ValueError(f"unknown export format {fmt!r}: use reasoningflow, graphml or json")
    return target
