"""Thought Graph construction (pipeline steps 2-6) for a batch of traces: unit spans by rule,
one encoder call for every unit of the batch (sorted by length across traces), TextTiling, cue
typing, linking, and final types. Returns graphs, or an InputError for a trace with no content.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .config import Config
from .encoder import Encoder
from .link import LinkInput, Linker
from .nodetypes import concreteness, cue_categories, finalise_type, provisional_type
from .records import InputError, ThoughtGraph, ThoughtUnit, Trace
from .segment import HEADER, tile, unit_spans
from .timing import StageTimes

__all__ = ["build_graphs"]


def units_of(trace: Trace, cfg: Config) -> tuple[list[ThoughtUnit], list[int]]:
    """Units of every section in order, without segments yet; and indices that force a block start."""
    units: list[ThoughtUnit] = []
    forced: list[int] = []
    for section in trace.sections:
        if units:
            forced.append(len(units))
        for start, end in unit_spans(section.text, section, cfg):
            text = section.text[start:end]
            if HEADER.match(text):
                forced.append(len(units))
            units.append(ThoughtUnit(len(units), section.name, start, end, text, segment=0))
    return units, forced


def build_graphs(traces: Sequence[Trace], cfg: Config, encoder: Encoder, linker: Linker,
                 times: StageTimes | None = None) -> list[ThoughtGraph | InputError]:
    times = times if times is not None else StageTimes()
    with times("split"):
        planned = [(trace, *units_of(trace, cfg)) for trace in traces]
    texts = [u.text for _, units, _ in planned for u in units]
    with times("encode"):
        embeddings, tokens = encoder.encode_and_count(texts)
    with times("tile_type"):
        results, link_inputs, link_owners = _tile_and_type(planned, embeddings, tokens, cfg)
    with times("link"):
        edge_lists = linker.link(link_inputs)
        for owner, edges in zip(link_owners, edge_lists):
            _attach_edges(results[owner], edges)
    return results


def _tile_and_type(planned, embeddings, tokens, cfg: Config):
    """TextTiling blocks, cue types and unit features per trace; graphs still without edges."""
    tiling = cfg["segment"]["tiling"]
    unit_set = frozenset(cfg["concreteness"]["units"])
    lex = cfg.lexicon
    results: list[ThoughtGraph | InputError] = []
    link_inputs, link_owners = [], []
    offset = 0
    for trace, units, forced in planned:
        n = len(units)
        emb, tok = embeddings[offset : offset + n], tokens[offset : offset + n]
        offset += n
        if n == 0:
            field = trace.reasoning.field if trace.reasoning else "reasoning"
            results.append(InputError(trace.source, trace.record, field, "no text to segment (empty after tags and whitespace)"))
            continue
        seg = tile(emb, forced, window=tiling["window"], min_block_units=tiling["min_block_units"],
                   cutoff_std=tiling["cutoff_std"], min_depth=tiling["min_depth"])
        typed = []
        for u in units:
            cues = cue_categories(u.text, cfg)
            typed.append(ThoughtUnit(u.index, u.section, u.start, u.end, u.text, int(seg[u.index]),
                                     provisional_type(cues, cfg), cues))
        graph = ThoughtGraph(
            trace=trace, units=typed, edges=[], embeddings=emb, tokens=tok,
            concreteness=np.array([concreteness(u.text, unit_set) for u in typed], dtype=np.float64),
            hedge=np.array([bool(lex["hedge"].search(u.text)) for u in typed], dtype=bool),
            perspective=np.array([bool(lex["perspective"].search(u.text)) for u in typed], dtype=bool),
        )
        link_inputs.append(LinkInput(typed, emb))
        link_owners.append(len(results))
        results.append(graph)
    return results, link_inputs, link_owners


def _attach_edges(graph: ThoughtGraph, edges) -> None:
    """Store the edges and settle the structural node types from each unit's outgoing edges."""
    outgoing: dict[int, list] = {}
    for e in edges:
        outgoing.setdefault(e.src, []).append(e)
    graph.edges = sorted(edges, key=lambda e: (e.src, e.dst, e.edge_type))
    graph.units = [
        ThoughtUnit(u.index, u.section, u.start, u.end, u.text, u.segment,
                    finalise_type(u.node_type, outgoing.get(u.index, ())), u.cues)
        for u in graph.units
    ]
