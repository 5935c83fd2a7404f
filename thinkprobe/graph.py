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

__all__ = ["build_graphs"]


def _units_of(trace: Trace, cfg: Config) -> tuple[list[ThoughtUnit], list[int]]:
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


def build_graphs(traces: Sequence[Trace], cfg: Config, encoder: Encoder, linker: Linker) -> list[ThoughtGraph | InputError]:
    planned = []
    for trace in traces:
        units, forced = _units_of(trace, cfg)
        planned.append((trace, units, forced))
    texts = [u.text for _, units, _ in planned for u in units]
    embeddings, tokens = encoder.encode_and_count(texts)

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

    for owner, edges in zip(link_owners, linker.link(link_inputs)):
        graph = results[owner]
        outgoing: dict[int, list] = {}
        for e in edges:
            outgoing.setdefault(e.src, []).append(e)
        graph.edges = sorted(edges, key=lambda e: (e.src, e.dst, e.edge_type))
        graph.units = [
            ThoughtUnit(u.index, u.section, u.start, u.end, u.text, u.segment,
                        finalise_type(u.node_type, outgoing.get(u.index, ())), u.cues)
            for u in graph.units
        ]
    return results
