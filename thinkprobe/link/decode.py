"""Decoding pair-class probabilities into the edges of one trace (the trained backends share it):
thresholds near and far, then the invariants every graph keeps (a forward parent per unit, the
edge a structural type needs).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..records import Edge, ThoughtUnit
from .candidates import FROM_WINDOW
from .protocol import CRITIQUE_CLASSES, FORWARD_CLASSES, PAIR_CLASSES, REPETITION_CLASS

__all__ = ["decode_edges", "thresholds"]


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


def decode_edges(units: Sequence[ThoughtUnit], probs: np.ndarray, i: np.ndarray, j: np.ndarray, origin: np.ndarray,
                 decode: Mapping[str, float]) -> list[Edge]:
    """Edges of one trace from the class probabilities of its candidate pairs (the decoding `pairmlp.TrainedLinker` describes).

    `decode` holds the thresholds on the edge probability (1 - P(none)): `threshold_near` (pairs
    from the window) and `threshold_far` (the others), or `thresholds_by_distance` (see `thresholds`). `labels_follow_types`: a unit that is not
    provisionally CRT (RPT) takes no critique (repetition) label; that pair keeps its edge
    probability and takes its most probable other label, so that a unit's structural type
    (`nodetypes.finalise_type`) comes from the type head rather than from one pair's label."""
    near = (origin & FROM_WINDOW) > 0
    edge_p = 1.0 - probs[:, 0]
    labels = probs[:, 1:]
    if decode.get("labels_follow_types") and len(j):
        labels = labels.copy()
        kind = np.array([units[b].node_type for b in j])
        labels[np.ix_(kind != "CRT", [c - 1 for c in CRITIQUE_CLASSES])] = -1.0
        labels[kind != "RPT", REPETITION_CLASS - 1] = -1.0
    label = 1 + np.argmax(labels, axis=1)
    if decode.get("plans_elaborate"):
        # A planning unit ("let me double-check") announces a check rather than making it: the
        # pair stays, as an elaboration, and the unit stays MET; the check's verdict critiques.
        plan = np.array([units[b].node_type == "MET" for b in j], dtype=bool)
        label[plan & np.isin(label, CRITIQUE_CLASSES)] = FORWARD_CLASSES[1]
    keep = edge_p >= thresholds(i, j, near, decode)
    picked = {(int(k), int(label[k])) for k in np.flatnonzero(keep)}
    have: dict[int, set[int]] = {}
    for k, c in picked:
        have.setdefault(int(j[k]), set()).add(c)
    order = np.argsort(j, kind="stable")
    bounds = np.searchsorted(j[order], np.arange(len(units) + 1))
    for b in range(1, len(units)):
        ks = order[bounds[b]:bounds[b + 1]]
        if not len(ks):
            continue
        got = have.get(b, set())
        if not got & set(FORWARD_CLASSES):
            window = ks[near[ks]]
            fwd = probs[np.ix_(window, FORWARD_CLASSES)]
            k = int(np.argmax(fwd.max(axis=1)))
            picked.add((int(window[k]), FORWARD_CLASSES[int(np.argmax(fwd[k]))]))
        wanted = {"CRT": CRITIQUE_CLASSES, "RPT": (REPETITION_CLASS,)}.get(units[b].node_type)
        if wanted and decode.get("force_structural", True) and not got & set(wanted):
            if decode.get("force_in_window"):
                ks = ks[near[ks]]  # a forced target stays local: far ones were mostly wrong
            part = probs[np.ix_(ks, wanted)]
            k = int(np.argmax(part.sum(axis=1)))
            picked.add((int(ks[k]), wanted[int(np.argmax(part[k]))]))
    edges = set()
    for k, cls in picked:
        a, b, kind, score = int(i[k]), int(j[k]), PAIR_CLASSES[cls], round(float(edge_p[k]), 4)
        if cls in FORWARD_CLASSES:
            edges.add(Edge(a, b, kind, score=score))
        elif cls in CRITIQUE_CLASSES:
            edges.add(Edge(b, a, "critique", kind.split(":")[1], score))
        else:
            edges.add(Edge(b, a, kind, score=score))
    return sorted(edges, key=lambda e: (e.src, e.dst, e.edge_type))
