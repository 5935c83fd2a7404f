"""Linking (spec section 1, step 5): typed edges between Thought Units. Candidate pairs come from a
window of neighbours plus the top-k most similar earlier units, so backward edges can reach far.
`Linker` is the interface a trained pair classifier plugs into; `CueLinker` is the rule-based
default that combines cue lexicons, embedding similarity and position.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from .config import Config
from .records import Edge, ThoughtUnit

__all__ = ["LinkInput", "Linker", "CueLinker", "candidate_pairs"]

_WORDS = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class LinkInput:
    """One trace as the linker sees it: units (provisional types, cues, segments) and embeddings."""

    units: Sequence[ThoughtUnit]
    embeddings: np.ndarray  # (n, d), unit-normalised


class Linker(Protocol):
    """Typed edges for a batch of traces. A batch spans many traces so that a model-based linker
    can score all candidate pairs of the batch together, sorted by length. A linker whose `link`
    also takes `mapper` gets the run's worker-pool map for its per-trace CPU work (the trained
    linker does); one that does not is called with the batch alone."""

    name: str

    def link(self, batch: Sequence[LinkInput]) -> list[list[Edge]]: ...


def candidate_pairs(sim: np.ndarray, window: int, top_k: int) -> list[np.ndarray]:
    """Earlier-unit candidates for each unit j: the `window` preceding units plus the `top_k`
    most similar earlier units beyond the window.

    >>> s = np.eye(6); s[5, 0] = s[0, 5] = 0.9
    >>> [c.tolist() for c in candidate_pairs(s, window=2, top_k=1)]
    [[], [0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 3, 4]]
    """
    out = []
    for j in range(sim.shape[0]):
        near = np.arange(max(0, j - window), j)
        far_end = max(0, j - window)
        far = np.argsort(-sim[j, :far_end], kind="stable")[:top_k] if far_end and top_k else np.zeros(0, int)
        out.append(np.unique(np.concatenate([far, near]).astype(np.int64)))
    return out


class CueLinker:
    """Rule-based linker: every unit gets a forward parent among its neighbours (branch for
    exploration units, elaboration for facts and planning, inference otherwise); conclusions also
    take far premises; near-verbatim restatements get a repetition edge; units with a critique cue
    critique the best candidate (near or far); synthesis cues join the best units of two or more
    earlier topical blocks."""

    name = "cue"

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.p = cfg["link"]

    def link(self, batch: Sequence[LinkInput]) -> list[list[Edge]]:
        return [self._link_one(item.units, item.embeddings) for item in batch]

    def _polarity(self, text: str) -> str:
        lex = self.cfg.lexicon
        if lex["critique_negate"].search(text):
            return "negate"
        if lex["critique_affirm"].search(text):
            return "affirm"
        return "uncertain"

    def _link_one(self, units: Sequence[ThoughtUnit], emb: np.ndarray) -> list[Edge]:
        p = self.p
        n = len(units)
        if n < 2:
            return []
        sim = emb @ emb.T
        cands = candidate_pairs(sim, p["window"], p["top_k"])
        words = [set(_WORDS.findall(u.text.lower())) for u in units]
        edges: list[Edge] = []
        for j in range(1, n):
            u = units[j]
            row = sim[j]
            lo = max(0, j - p["window"])
            near = np.arange(lo, j)
            score = row[lo:j] + p["adjacent_bonus"] * (near == j - 1)
            parent = int(near[int(np.argmax(score))])
            kind = "branch" if u.node_type == "EXP" else "elaboration" if u.node_type in ("FAC", "MET") else "inference"
            edges.append(Edge(parent, j, kind, score=round(float(row[parent]), 4)))

            if u.node_type == "CON" and lo > 0:
                far = np.argsort(-row[:lo], kind="stable")[: p["premise_max"]]
                edges += [Edge(int(i), j, "inference", score=round(float(row[i]), 4))
                          for i in far if row[i] >= p["premise_min_similarity"]]

            gap_end = j - p["repetition_min_gap"] + 1
            if gap_end > 0:
                i = int(np.argmax(row[:gap_end]))
                jac = len(words[i] & words[j]) / max(1, len(words[i] | words[j]))
                if row[i] >= p["repetition_similarity"] or (row[i] >= p["repetition_similarity_lexical"] and jac >= 0.6):
                    edges.append(Edge(j, i, "repetition", score=round(float(row[i]), 4)))

            if "CRT" in u.cues:
                c = cands[j]
                ok = (c >= lo) | (row[c] >= p["critique_min_similarity"])
                c = c[ok]
                target = int(c[int(np.argmax(row[c] - p["critique_recency"] * (j - c)))])
                edges.append(Edge(j, target, "critique", self._polarity(u.text), round(float(row[target]), 4)))

            # Synthesis needs an explicit cue, or a conclusion in the answer section (the final
            # answer draws the reasoning together); plain "so ..." conclusions stay inferences.
            if "synthesis" in u.cues or (u.node_type == "CON" and u.section == "answer"):
                best: dict[int, int] = {}
                for i in range(j):
                    s = units[i].segment
                    if s != u.segment and row[i] >= p["synthesis_min_similarity"] and (s not in best or row[i] > row[best[s]]):
                        best[s] = i
                picks = sorted(best.values(), key=lambda i: (-row[i], i))[: p["synthesis_max_sources"]]
                if len(picks) >= 2:
                    edges += [Edge(j, i, "synthesis", score=round(float(row[i]), 4)) for i in sorted(picks)]
        return edges
