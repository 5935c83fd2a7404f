"""Thought Graph construction (pipeline steps 2-6) for a batch of traces: unit spans by rule,
one encoder call for every unit of the batch (sorted by length across traces), TextTiling, cue
typing, linking, and final types. Returns graphs, or an InputError for a trace with no content.
"""
from __future__ import annotations

from concurrent.futures import Executor
from functools import partial
from itertools import repeat
from typing import Sequence

import numpy as np

from .config import Config
from .encoder import Encoder
from .link import LinkInput, Linker, Typer, bind_encoder
from .nodetypes import concreteness, cue_categories, finalise_type, provisional_type
from .records import InputError, ThoughtGraph, ThoughtUnit, Trace
from .progress import one_line
from .segment import HEADER, longest_repeat, tile, unit_spans
from .timing import StageTimes

__all__ = ["build_graphs", "link_graphs", "units_of", "block_starts", "tile_and_type", "over_unit_limit"]


def units_of(trace: Trace, cfg: Config) -> tuple[list[ThoughtUnit], list[int]]:
    """Units of every section in order, without segments yet; and indices that force a block start.
    A trace that carries its own graph (`Trace.given`) keeps its units and their types."""
    if trace.given is not None:
        texts = {s.name: s.text for s in trace.sections}
        return [ThoughtUnit(k, section, start, end, texts[section][start:end], segment=0, node_type=node_type)
                for k, (section, start, end, node_type) in enumerate(trace.given.units)], []
    units: list[ThoughtUnit] = []
    for section in trace.sections:
        for start, end in unit_spans(section.text, section, cfg):
            units.append(ThoughtUnit(len(units), section.name, start, end, section.text[start:end], segment=0))
    return units, block_starts(units)


def block_starts(units: Sequence[ThoughtUnit]) -> list[int]:
    """Indices of the units that always start a topical block: the first unit of every section
    after the first, and headers."""
    return [k for k, u in enumerate(units) if (k and u.section != units[k - 1].section) or HEADER.match(u.text)]


def build_graphs(traces: Sequence[Trace], cfg: Config, encoder: Encoder, linker: Linker,
                 times: StageTimes | None = None, pool: Executor | None = None,
                 typer: Typer | None = None) -> list[ThoughtGraph | InputError]:
    """Thought Graphs of a batch of traces. The per-trace CPU stages (splitting; tiling and typing;
    a trained linker's and type head's features) run in `pool` when one is given; the encoder and
    the models see the whole batch at once.
    `typer` (a `link.Typer`), when given, replaces the cue types (the trained type head)."""
    times = times if times is not None else StageTimes()
    mapper = partial(pool.map, chunksize=4) if pool is not None else map
    with times("split"):
        planned = list(mapper(units_of, traces, repeat(cfg)))
    # A trace over the unit limit is not encoded: it becomes an error, the others go on.
    too_long = {k: err for k, (units, _) in enumerate(planned) if (err := over_unit_limit(traces[k], units, cfg))}
    planned = [([], []) if k in too_long else p for k, p in enumerate(planned)]
    texts = [u.text for units, _ in planned for u in units]
    bind_encoder(linker, encoder)  # a linker that reads the encoder's lower layers (the parser's reader)
    with times("encode"):
        embeddings, tokens = encoder.encode_and_count(texts)
    with times("tile_type"):
        bounds = np.cumsum([0] + [len(units) for units, _ in planned])
        results = list(mapper(tile_and_type, traces, planned,
                              (embeddings[a:b] for a, b in zip(bounds, bounds[1:])),
                              (tokens[a:b] for a, b in zip(bounds, bounds[1:])), repeat(cfg)))
    with times("link"):
        link_graphs([g for g in results if isinstance(g, ThoughtGraph)], linker, typer, mapper)
    for k, err in too_long.items():
        results[k] = err
    return results


def over_unit_limit(trace: Trace, units: Sequence[ThoughtUnit], cfg: Config) -> InputError | None:
    """The error of a trace split into more Thought Units than the run's `limits.max_units`
    (--max-units), or whose reasoning says one sentence, or a block of up to segment.LOOP_MAX_PERIOD,
    `limits.max_repeat` or more times in a row (--max-repeat: a repetition loop); 0: no limit. None
    where it is within both; such a trace is not encoded (both engines)."""
    limits = cfg["limits"]
    field = trace.reasoning.field if trace.reasoning else "reasoning"
    if limits["max_units"] and len(units) > limits["max_units"]:
        return InputError(trace.source, trace.record, field, f"{len(units)} Thought Units, over the limit of "
                          f"{limits['max_units']} (raise it with --max-units)", trace.model)
    if limits["max_repeat"]:
        copies, period, text = longest_repeat(u.text for u in units if u.section == "reasoning")
        if copies >= limits["max_repeat"]:
            what = "one sentence" if period == 1 else f"a block of {period} sentences"
            return InputError(trace.source, trace.record, field, f"a repetition loop: {what} {copies} times in a row "
                              f"({one_line(text)[:60]!r}{'...' if period > 1 else ''}), at or over the limit of "
                              f"{limits['max_repeat']} (--max-repeat; 0: none)", trace.model)
    return None


def link_graphs(graphs: Sequence[ThoughtGraph], linker: Linker, typer: Typer | None = None, mapper=map) -> None:
    """Type (with `typer`, when given) and link graphs that have embeddings but no edges yet, in
    place: per-trace features through `mapper`, the trained models over the whole batch. A graph
    whose trace carries its own graph takes its edges and keeps its types as they are."""
    for g in graphs:
        if g.trace.given is not None:
            g.edges = list(g.trace.given.edges)
    graphs = [g for g in graphs if g.trace.given is None]
    if not graphs:
        return
    if typer is not None:
        retyped = typer.batch([(g.units, g.embeddings, g.trace.question) for g in graphs], mapper)
        for g, units in zip(graphs, retyped):
            g.units = units
    inputs = [LinkInput(g.units, g.embeddings, g.trace.question) for g in graphs]
    edge_lists = linker.link(inputs, mapper=mapper)
    for graph, edges in zip(graphs, edge_lists):
        _attach_edges(graph, edges)


def tile_and_type(trace: Trace, planned: tuple[list[ThoughtUnit], list[int]], emb: np.ndarray, tok: np.ndarray,
                  cfg: Config) -> ThoughtGraph | InputError:
    """TextTiling blocks, cue types and unit features of one trace: its graph, still without edges."""
    units, forced = planned
    if not units:
        field = trace.reasoning.field if trace.reasoning else "reasoning"
        return InputError(trace.source, trace.record, field, "no text to segment (empty after tags and whitespace)",
                          trace.model)
    tiling = cfg.tiling
    lex = cfg.lexicon
    seg = tile(emb, forced, window=tiling.window, min_block_units=tiling.min_block_units,
               cutoff_std=tiling.cutoff_std, min_depth=tiling.min_depth)
    typed = []
    for u in units:
        cues = cue_categories(u.text, cfg)
        node_type = u.node_type if trace.given is not None else provisional_type(cues, cfg)
        typed.append(ThoughtUnit(u.index, u.section, u.start, u.end, u.text, int(seg[u.index]), node_type, cues))
    unit_set = frozenset(cfg["concreteness"]["units"])
    return ThoughtGraph(
        trace=trace, units=typed, edges=[], embeddings=emb, tokens=tok,
        concreteness=np.array([concreteness(u.text, unit_set) for u in typed], dtype=np.float64),
        hedge=np.array([bool(lex["hedge"].search(u.text)) for u in typed], dtype=bool),
        perspective=np.array([bool(lex["perspective"].search(u.text)) for u in typed], dtype=bool),
    )


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
