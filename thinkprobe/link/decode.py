"""Decoding pair-class probabilities into the edges of one trace (the trained backends share it):
thresholds near and far, one edge per pair, the edge a structural type needs, and the rules that
keep the graph's shape close to the one people draw (issue 40): a unit need not have a forward
parent, a label its unit's type forbids does not turn into another, a synthesis needs two blocks.
Every rule is a key of the model folder's `decode` mapping (its config.json), chosen on held-out
graphs by the profile they give (docs/accuracy.md); a key that is absent keeps the earlier
behaviour, so older model folders decode as they did.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..records import Edge, ThoughtUnit
from .candidates import FROM_WINDOW
from .protocol import CRITIQUE_CLASSES, FORWARD_CLASSES, PAIR_CLASSES, REPETITION_CLASS

__all__ = ["decode_edges", "thresholds", "DECODE_KEYS"]

# What each key of a model's `decode` mapping does (the model card and docs/accuracy.md say the same).
DECODE_KEYS = {
    "threshold_near": "edge-probability threshold of the pairs from the window",
    "threshold_far": "edge-probability threshold of the other pairs",
    "thresholds_by_distance": "[[max distance, threshold], ...]: thresholds by j - i instead of near / far",
    "labels_follow_types": "critique labels only for units typed CRT, repetition only for units typed RPT",
    "critique_types": "with labels_follow_types, the unit types that may carry a critique label (default ['CRT']; "
                      "people also draw a plan's 'let me check that again' as a critique of what it checks: ['CRT', "
                      "'MET'], with plans_elaborate false)",
    "vetoed": "what a pair whose most probable label its unit's type forbids becomes: 'convert' (its most "
              "probable allowed label; the default) or 'drop' (no edge)",
    "plans_elaborate": "a planning unit's critique pair becomes an elaboration",
    "force_parent": "every unit but the first gets a forward parent on a window pair that carries no edge yet, above "
                    "the threshold or not (default true; false: a unit without a probable parent opens a new line of "
                    "thought)",
    "force_structural": "a unit typed CRT (RPT) without a critique (repetition) edge gets its most probable one",
    "force_in_window": "... among the pairs of its window only",
    "synthesis_min_blocks": "synthesis edges stand only where a unit draws on units of at least this many "
                            "topical blocks; otherwise they are read as inference (0: no such rule)",
    "threshold_critique": "a unit typed CRT also critiques every candidate (window or beyond) whose pair carries no "
                          "edge yet and whose critique probability (its three polarities together) reaches this "
                          "(absent: no such edges): people's critiques reach farther back than one most probable "
                          "target",
    "structural_parent_max": "a unit that leaves its own critique, repetition or synthesis edge keeps a forward "
                             "in-edge only at this probability or above, a planning unit (MET) always (absent: always)",
}


def thresholds(i: np.ndarray, j: np.ndarray, near: np.ndarray, decode: Mapping) -> np.ndarray:
    """The edge-probability threshold of each candidate pair: with `thresholds_by_distance`
    ([[max distance, threshold], ...], increasing distances; the last entry's threshold beyond
    them), by the distance j - i; else `threshold_near` for window pairs, `threshold_far` for others.

    >>> thresholds(np.array([0, 0, 0]), np.array([1, 3, 20]), np.array([True, True, False]),
    ...            {"thresholds_by_distance": [[1, 0.2], [3, 0.4], [10, 0.5], [10**9, 0.6]]}).tolist()
    [0.2, 0.4, 0.6]
    """
    table = decode.get("thresholds_by_distance")
    if not table:
        return np.where(near, decode["threshold_near"], decode["threshold_far"])
    limits = np.array([row[0] for row in table])
    values = np.array([row[1] for row in table], dtype=np.float64)
    return values[np.minimum(np.searchsorted(limits, j - i, side="left"), len(values) - 1)]


def _allowed_labels(units: Sequence[ThoughtUnit], probs: np.ndarray, j: np.ndarray,
                    decode: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """The label (PAIR_CLASSES index) of every pair and whether its most probable label was vetoed:
    with `labels_follow_types`, critique only for a unit typed CRT and repetition only for RPT."""
    labels = probs[:, 1:]
    vetoed = np.zeros(len(j), dtype=bool)
    if decode.get("labels_follow_types") and len(j):
        labels = labels.copy()
        kind = np.array([units[b].node_type for b in j])
        first = 1 + np.argmax(labels, axis=1)
        not_crt, not_rpt = ~np.isin(kind, decode.get("critique_types", ["CRT"])), kind != "RPT"
        vetoed = (np.isin(first, CRITIQUE_CLASSES) & not_crt) | ((first == REPETITION_CLASS) & not_rpt)
        labels[np.ix_(not_crt, [c - 1 for c in CRITIQUE_CLASSES])] = -1.0
        labels[not_rpt, REPETITION_CLASS - 1] = -1.0
    label = 1 + np.argmax(labels, axis=1) if len(j) else np.zeros(0, dtype=np.int64)
    if decode.get("plans_elaborate") and len(j):
        # A planning unit ("let me double-check") announces a check rather than making it: the
        # pair stays, as an elaboration, and the unit stays MET; the check's verdict critiques.
        plan = np.array([units[b].node_type == "MET" for b in j], dtype=bool)
        label[plan & np.isin(label, CRITIQUE_CLASSES)] = FORWARD_CLASSES[1]
    return label, vetoed


def decode_edges(units: Sequence[ThoughtUnit], probs: np.ndarray, i: np.ndarray, j: np.ndarray, origin: np.ndarray,
                 decode: Mapping) -> list[Edge]:
    """Edges of one trace from the class probabilities of its candidate pairs (i < j; column 0 is
    P(no edge)), as `decode` says (`DECODE_KEYS`).

    A pair carries at most one edge: its most probable allowed label where its edge probability
    (1 - P(none)) reaches the threshold. Then, per unit: a forward parent from its window where
    `force_parent` asks for one and it has none (on a pair that carries no edge yet); the edge its
    structural type needs (`force_structural`), which takes the pair's place if the pair already
    carries one, so no pair ever gets a forward and a backward edge; a unit typed CRT critiques every
    other free pair whose critique probability reaches `threshold_critique`. Last, synthesis edges of a unit
    that draws on fewer than `synthesis_min_blocks` blocks become inference, and forward in-edges
    below `structural_parent_max` of a unit with its own critique, repetition or synthesis edge go.

    A unit whose only probable partner is vetoed keeps no parent when `force_parent` is false:

    >>> from thinkprobe.records import ThoughtUnit as U
    >>> us = [U(k, "reasoning", 0, 1, "x", 0, "RSN") for k in range(3)]
    >>> p = np.array([[0.2, 0.7, 0, 0, 0, 0, 0, 0, 0.1],    # 0 -> 1: inference
    ...               [0.3, 0.1, 0, 0, 0, 0.6, 0, 0, 0],    # 0 -> 2: critique, but 2 is not CRT
    ...               [0.9, 0.1, 0, 0, 0, 0, 0, 0, 0]])     # 1 -> 2: nothing
    >>> i, j, o = np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([1, 1, 1])
    >>> d = {"threshold_near": 0.5, "threshold_far": 0.5, "labels_follow_types": True, "force_parent": False}
    >>> [(e.src, e.dst, e.edge_type) for e in decode_edges(us, p, i, j, o, {**d, "vetoed": "drop"})]
    [(0, 1, 'inference')]
    >>> [(e.src, e.dst, e.edge_type) for e in decode_edges(us, p, i, j, o, d)]
    [(0, 1, 'inference'), (0, 2, 'inference')]
    """
    n = len(units)
    near = (origin & FROM_WINDOW) > 0
    edge_p = 1.0 - probs[:, 0]
    label, vetoed = _allowed_labels(units, probs, j, decode)
    keep = edge_p >= thresholds(i, j, near, decode)
    if decode.get("vetoed", "convert") == "drop":
        keep &= ~vetoed
    picked: dict[int, int] = {int(k): int(label[k]) for k in np.flatnonzero(keep)}  # pair -> its one class
    order = np.argsort(j, kind="stable")
    bounds = np.searchsorted(j[order], np.arange(n + 1))
    force_parent = decode.get("force_parent", True)
    critique_at = decode.get("threshold_critique")
    forward = set(FORWARD_CLASSES)
    for b in range(1, n):
        ks = order[bounds[b]:bounds[b + 1]]
        if not len(ks):
            continue
        got = {picked[k] for k in ks.tolist() if k in picked}
        if force_parent and not got & forward:
            window = np.array([k for k in ks[near[ks]].tolist() if k not in picked], dtype=np.int64)
            if len(window):
                fwd = probs[np.ix_(window, FORWARD_CLASSES)]
                k = int(np.argmax(fwd.max(axis=1)))
                picked[int(window[k])] = FORWARD_CLASSES[int(np.argmax(fwd[k]))]
        wanted = {"CRT": CRITIQUE_CLASSES, "RPT": (REPETITION_CLASS,)}.get(units[b].node_type)
        if wanted and decode.get("force_structural", True) and not got & set(wanted):
            # a forced target stays local with force_in_window: far ones were mostly wrong
            pool = ks[near[ks]] if decode.get("force_in_window") else ks
            if len(pool):
                part = probs[np.ix_(pool, wanted)]
                k = int(np.argmax(part.sum(axis=1)))
                picked[int(pool[k])] = wanted[int(np.argmax(part[k]))]
        if critique_at is not None and units[b].node_type == "CRT":
            part = probs[np.ix_(ks, CRITIQUE_CLASSES)]
            for k, row in zip(ks.tolist(), part):
                if k not in picked and row.sum() >= critique_at:
                    picked[k] = CRITIQUE_CLASSES[int(np.argmax(row))]
    edges = set()
    for k, cls in picked.items():
        a, b, kind, score = int(i[k]), int(j[k]), PAIR_CLASSES[cls], round(float(edge_p[k]), 4)
        if cls in FORWARD_CLASSES:
            edges.add(Edge(a, b, kind, score=score))
        elif cls in CRITIQUE_CLASSES:
            edges.add(Edge(b, a, "critique", kind.split(":")[1], score))
        else:
            edges.add(Edge(b, a, kind, score=score))
    edges = _synthesis_needs_blocks(units, edges, decode.get("synthesis_min_blocks", 0))
    if decode.get("structural_parent_max") is not None:
        plans = {u.index for u in units if u.node_type == "MET"}
        edges = _structural_units_parentless(edges, decode["structural_parent_max"], plans)
    return sorted(edges, key=lambda e: (e.src, e.dst, e.edge_type))


def _synthesis_needs_blocks(units: Sequence[ThoughtUnit], edges: set[Edge], blocks: int) -> set[Edge]:
    """Synthesis edges of a unit whose synthesis targets lie in fewer than `blocks` topical blocks
    become the inference edges they read as (target -> unit)."""
    if not blocks:
        return edges
    by_unit: dict[int, list[Edge]] = {}
    for e in edges:
        if e.edge_type == "synthesis":
            by_unit.setdefault(e.src, []).append(e)
    out = set(edges)
    for es in by_unit.values():
        if len({units[e.dst].segment for e in es}) < blocks:
            out.difference_update(es)
            out.update(Edge(e.dst, e.src, "inference", score=e.score) for e in es)
    return out


def _structural_units_parentless(edges: set[Edge], keep_at: float, plans: set[int]) -> set[Edge]:
    """Without forward in-edges under `keep_at`: the units that leave their own critique, repetition or
    synthesis edge (people draw most of them with that edge alone, and a forward parent beside it
    closes a cycle), `plans` aside: a plan that announces a check ("let me verify the sum") follows
    from the step before it and critiques what it checks, the cycle people draw (ReasoningFlow's
    plan:verify; on human D's traces 9 of 20 hold one, and recurrence_ratio had read 0 on all of ours).
    A plan that critiques the unit just before it has no forward parent to keep: the pair carries one edge."""
    own = {e.src for e in edges if e.edge_type in ("critique", "repetition", "synthesis")} - plans
    return {e for e in edges if not (e.dst in own and e.src < e.dst and (e.score or 0.0) < keep_at)}
