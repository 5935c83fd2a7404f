"""Graphs that records carry (`profile --graph-source input`): a ReasoningFlow document's response
nodes and edges (human, LLM-annotated, or exported by ThinkProbe), or a ThinkProbe graph record
(a line of graphs.jsonl), read onto the trace as a `GivenGraph` so that the run profiles those
units and edges instead of segmenting and linking the text. Labels are mapped by
thinkprobe.reasoningflow, the mapping eval-gold uses. A graph that is missing, points outside its
text, names a missing node or carries an unknown label is an InputError naming the field; so is a
graph record's section, unit or edge of the wrong shape (an offset that is no integer, units given
twice or out of text order, an edge that is no object, a score that is no finite number), under
either --graph-source, so that one such record never ends the run.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping

from ..records import BACKWARD_EDGES, EDGE_TYPES, NODE_TYPES, Edge, GivenGraph, InputError, Section, Trace, group_of
from .detect import UNTAGGED, named_value, record_position
from .formats import type_name
from .sources import FieldMap

__all__ = ["GRAPH_SOURCES", "is_graph_record", "with_given_graph", "trace_of_graph_record"]

# --graph-source: "parse" segments and links the text (the default); "input" reads the record's graph.
GRAPH_SOURCES = ("parse", "input")


def is_graph_record(record: Any) -> bool:
    """A ThinkProbe graph record: a graphs.jsonl line (units, edges, sections and their field texts)."""
    return isinstance(record, dict) and all(k in record for k in ("units", "edges", "sections", "fields"))


def _oriented(a: int, b: int, kind: str, polarity: str = "", score: float = 1.0) -> Edge:
    """Our direction: forward edges from the earlier unit, backward ones (critique, synthesis,
    repetition) from the later unit to the earlier one it acts on."""
    lo, hi = min(a, b), max(a, b)
    return Edge(hi, lo, kind, polarity, score) if kind in BACKWARD_EDGES else Edge(lo, hi, kind, polarity, score)


def with_given_graph(record: Mapping, trace: Trace, locator: int | str) -> Trace | InputError:
    """`trace` with the graph its record carries (a ReasoningFlow document's nodes and edges), or
    the InputError that says what is wrong with it; `locator` names the record (as errors do)."""
    if "nodes" not in record:
        return InputError(trace.source, locator, "nodes",
                          "--graph-source input: the record carries no graph (ReasoningFlow `nodes` and `edges`, "
                          "or a ThinkProbe graph record with `units` and `edges`)")
    try:
        return replace(trace, given=_reasoningflow_graph(record, trace, locator),
                       provenance={**trace.provenance, "graph_from": "nodes, edges (ReasoningFlow)"})
    except InputError as exc:
        return exc


def _reasoningflow_graph(doc: Mapping, trace: Trace, locator: int | str) -> GivenGraph:
    from ..reasoningflow import NODE_LABEL_MAP, map_edge_label, node_types, read_edges, response_nodes, written_by_thinkprobe

    def error(field: str, reason: str) -> InputError:
        return InputError(trace.source, locator, field, reason)

    nodes = doc.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise error("nodes", "--graph-source input: no nodes in the record")
    position = {id(n): k for k, n in enumerate(nodes)}
    for k, n in enumerate(nodes):
        if not isinstance(n, dict) or "id" not in n or not isinstance(n.get("start"), int) or not isinstance(n.get("end"), int):
            raise error(f"nodes[{k}]", "a node needs an id and integer start / end offsets")
    response = response_nodes(doc)
    if not response:
        raise error("nodes", "--graph-source input: no response nodes (only context nodes)")
    text = _response_text(doc, trace, locator)
    sections = [s for s in trace.sections if s.text == text]
    units = []
    known_nodes = sorted(NODE_LABEL_MAP) + ["reflection"]
    for n in response:
        k = position[id(n)]
        start, end = n["start"], n["end"]
        if not 0 <= start < end <= len(text):
            raise error(f"nodes[{k}]", f"offsets {start}-{end} are outside the response text ({len(text)} characters)")
        if not n.get("thinkprobe_type") and n.get("label") not in known_nodes:
            raise error(f"nodes[{k}].label", f"unknown node label {n.get('label')!r} (known: {', '.join(known_nodes)})")
        if not sections:
            raise error("raw_text.response", "the trace's reasoning and answer were not read from raw_text.response")
        # the section it overlaps most; a node outside both (a <think> tag made a node) joins the nearest
        section = max(sections, key=lambda s: (min(end, s.end) - max(start, s.start), -abs(start - s.start)))
        units.append((section.name, start, end))
    types = node_types(doc, for_scoring=False)
    bad_types = [t for t in types if t not in NODE_TYPES]
    if bad_types:
        raise error("nodes", f"unknown thinkprobe_type {bad_types[0]!r} (known: {', '.join(NODE_TYPES)})")
    ids = {n["id"]: n for n in nodes}
    exported = written_by_thinkprobe(doc)
    for k, e in enumerate(doc.get("edges") or ()):
        ends = [e.get("source_node_id"), e.get("dest_node_id")] if isinstance(e, dict) else [None, None]
        missing = [i for i in ends if i not in ids]
        if missing:
            raise error(f"edges[{k}]", f"points to a missing node {missing[0]!r}")
        if any(ids[i].get("source", "response") != "response" for i in ends):
            continue  # question edges are left out, as eval-gold leaves them
        if e.get("thinkprobe_type"):
            if e["thinkprobe_type"] not in EDGE_TYPES:
                raise error(f"edges[{k}].thinkprobe_type", f"unknown edge type {e['thinkprobe_type']!r}")
        elif map_edge_label(str(e.get("label")), ids[ends[1]].get("label"), exported) is None:
            raise error(f"edges[{k}].label", f"unknown edge label {e.get('label')!r}")
    edges = sorted({_oriented(a, b, kind, pol) for a, b, kind, pol in read_edges(doc)},
                   key=lambda e: (e.src, e.dst, e.edge_type))
    return GivenGraph(tuple((s, a, b, t) for (s, a, b), t in zip(units, types)), tuple(edges), "reasoningflow")


def _response_text(doc: Mapping, trace: Trace, locator: int | str) -> str:
    raw = doc.get("raw_text")
    text = raw.get("response") if isinstance(raw, dict) else None
    if not isinstance(text, str):
        raise InputError(trace.source, locator, "raw_text.response",
                         "--graph-source input: a ReasoningFlow document needs raw_text.response, the text its "
                         "node offsets point into")
    return text


def graph_record_of_row(row: Mapping[str, Any]) -> dict:
    """A graph record from a row of graphs.parquet (thinkprobe.outputs.graph_rows' inverse): the field
    texts a dict again, tests and provenance read back from their JSON. A graphs.jsonl record is
    returned as it is."""
    import json

    if "provenance_json" not in row and not isinstance(row.get("fields"), list):
        return dict(row)
    rec = {k: v for k, v in row.items() if k not in ("tests_json", "provenance_json")}
    fields = row.get("fields")
    if isinstance(fields, list):  # a Parquet map reads back as (key, value) pairs
        rec["fields"] = {str(k): v for k, v in fields if isinstance(k, str)} if all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in fields) else fields
    for key in ("tests", "provenance"):
        text = row.get(f"{key}_json")
        if isinstance(text, str):
            try:
                rec[key] = json.loads(text)
            except ValueError:
                rec[key] = None
        elif key not in rec:
            rec[key] = None
    return rec


def trace_of_graph_record(record: Mapping, source: str, index: int | str, given: bool = True,
                          options: FieldMap | None = None) -> Trace | InputError:
    """The trace of a ThinkProbe graph record (a line of graphs.jsonl or a row of graphs.parquet), with
    its own units and edges as the given graph; with `given` False, its text alone, to be parsed again
    (`--graph-source parse` on a run's graphs: the text is its sections, not a field guessed). The
    run's options that name a constant (`--model`, `--domain`, `--group`, a --path-pattern's groups)
    replace the record's own, and `--untagged skip` leaves out its untagged traces, as for any record."""
    def error(field: str, reason: str) -> InputError:
        return InputError(source, index, field, reason)

    record = graph_record_of_row(record)  # a graphs.parquet row: its map and JSON columns read back
    fields = record.get("fields") or {}
    if not isinstance(fields, dict):
        return error("fields", "a graph record's `fields` must map each field name to its text")
    sections = _sections_of(record, fields, error)
    if isinstance(sections, InputError):
        return sections
    if not sections:
        return error("sections", "the graph record has no sections (the text it was made from)")
    provenance = record.get("provenance") if isinstance(record.get("provenance"), dict) else {}
    options = options or FieldMap()
    from_path = options.from_path(source)
    named = {}
    for key in ("model", "domain", "group"):  # as for any record: the option, the named field, the file path
        value, where = named_value(record, getattr(options, key), getattr(options, f"{key}_field"), from_path.get(key), ())
        if value is not None:
            named[key] = value
            provenance = {**provenance, f"{key}_from": where}
    if options.untagged == "skip" and provenance.get("untagged"):  # counted under its model, as any skip
        skipped = error(next((s.field for s in sections if s.name == "reasoning"), "reasoning"), UNTAGGED)
        skipped.model = str(named.get("model") or record.get("model") or "unknown")
        return skipped
    if given:
        graph = _given_of_graph_record(record, sections, error)
        if isinstance(graph, InputError):
            return graph
        provenance = {**provenance, "graph_from": "units, edges (ThinkProbe graph record)"}
    else:
        graph = None
        provenance = {**provenance, "text_from": "sections (ThinkProbe graph record; its graph parsed again)"}
    trace_id = record.get("trace_id")
    return Trace(str(trace_id) if trace_id is not None else f"{source}:{index}",
                 str(named.get("model") or record.get("model") or "unknown"),
                 str(named.get("domain") or record.get("domain") or "unknown"), tuple(sections),
                 question=record.get("question"), group=named.get("group") or group_of(record),
                 gold_answer=record.get("gold_answer"), correct=record.get("correct"),
                 provenance=provenance, source=source, record=record_position(index), given=graph)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _sections_of(record: Mapping, fields: dict, error) -> list[Section] | InputError:
    """A graph record's sections, each a named span of a field text it carries, or the error naming
    the first that is not."""
    listed = record.get("sections")
    if listed is None:
        return []
    if not isinstance(listed, list):
        return error("sections", f"must be a list of sections, not {type_name(listed)}")
    sections = []
    for k, s in enumerate(listed):
        text = fields.get(s.get("field")) if isinstance(s, dict) else None
        if not isinstance(text, str):
            return error(f"sections[{k}]", "names a field whose text the record does not carry (`fields`)")
        if not isinstance(s.get("name"), str) or not s["name"]:
            return error(f"sections[{k}].name", "a section needs a name (reasoning or answer)")
        if any(s["name"] == t.name for t in sections):
            return error(f"sections[{k}].name", f"section {s['name']!r} is given twice")
        if not (_is_int(s.get("start")) and _is_int(s.get("end")) and 0 <= s["start"] <= s["end"] <= len(text)):
            return error(f"sections[{k}]", f"needs integer start / end offsets within its field text ({len(text)} "
                                           f"characters): {s.get('start')!r}-{s.get('end')!r}"[:200])
        sections.append(Section(s["name"], s["field"], text, s["start"], s["end"]))
    return sections


def _given_of_graph_record(record: Mapping, sections: list[Section], error) -> GivenGraph | InputError:
    """The units and edges a graph record carries, checked against its sections."""
    units = record.get("units")
    if not isinstance(units, list) or not units:
        return error("units", "--graph-source input: no units in the graph record")
    order = {s.name: n for n, s in enumerate(sections)}
    by_name = {s.name: s for s in sections}
    given_units, last = [], None
    for k, u in enumerate(units):
        section = by_name.get(u.get("section")) if isinstance(u, dict) and isinstance(u.get("section"), str) else None
        if section is None:
            return error(f"units[{k}].section", f"names no section of the record: {u!r}"[:200])
        if not (_is_int(u.get("start")) and _is_int(u.get("end"))):
            return error(f"units[{k}]", f"needs integer start / end offsets: {u.get('start')!r}-{u.get('end')!r}"[:200])
        if not 0 <= u["start"] < u["end"] <= len(section.text):
            return error(f"units[{k}]", f"offsets {u['start']}-{u['end']} are outside its field text")
        if last is not None and (order[section.name], u["start"]) < (last[0], last[2]):  # text order, no overlap
            return error(f"units[{k}]", f"offsets {u['start']}-{u['end']} in {section.name} come before the end of "
                                        f"units[{k - 1}] (units are given once each, in text order)")
        if u.get("type") not in NODE_TYPES:
            return error(f"units[{k}].type", f"unknown node type {u.get('type')!r} (known: {', '.join(NODE_TYPES)})")
        given_units.append((section.name, u["start"], u["end"], u["type"]))
        last = (order[section.name], u["start"], u["end"])
    listed = record.get("edges")
    if listed is not None and not isinstance(listed, list):
        return error("edges", f"must be a list of edges, not {type_name(listed)}")
    edges = set()
    for k, e in enumerate(listed or ()):
        if not isinstance(e, dict):
            return error(f"edges[{k}]", f"an edge is an object with src, dst and type, not {type_name(e)}: {e!r}"[:200])
        if not all(_is_int(e.get(x)) and 0 <= e[x] < len(units) for x in ("src", "dst")):
            return error(f"edges[{k}]", f"points to a missing unit: {e!r}"[:200])
        if e.get("type") not in EDGE_TYPES:
            return error(f"edges[{k}].type", f"unknown edge type {e.get('type')!r} (known: {', '.join(EDGE_TYPES)})")
        polarity, score = e.get("polarity") or "", e.get("score", 1.0)
        if not isinstance(polarity, str):
            return error(f"edges[{k}].polarity", f"must be a text (affirm, negate, uncertain), not {polarity!r}"[:200])
        if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
            return error(f"edges[{k}].score", f"must be a finite number, not {score!r}"[:200])
        if e["src"] != e["dst"]:
            edges.add(_oriented(e["src"], e["dst"], e["type"], polarity, float(score)))
    return GivenGraph(tuple(given_units), tuple(sorted(edges, key=lambda e: (e.src, e.dst, e.edge_type))), "thinkprobe")
