"""The rule-based backend (`--linker cue`): typed edges from cue lexicons, embedding similarity
and position. Candidate pairs come from a window of neighbours plus the top-k most similar
earlier units (`base.candidate_pairs`), so backward edges can reach far.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..config import Config
from ..records import Edge, ThoughtUnit
from .candidates import Similarity, candidate_pairs
from .protocol import LinkInput

__all__ = ["CueLinker"]

_WORDS = re.compile(r"\w+", re.UNICODE)


class CueLinker:
    """Rule-based linker: every unit gets a forward parent among its neighbours (branch for
    exploration units, elaboration for facts and planning, inference otherwise); conclusions also
    take far premises; near-verbatim restatements get a repetition edge; units with a critique cue
    critique the best candidate (near or far); synthesis cues join the best units of two or more
    earlier topical blocks."""

    name = "cue"
    structural_types = False  # CRT / RPT come from cues and edges, not from a type head
    kind = "rules: cue lexicons, embedding similarity and position"
    cache_stats: dict[str, int] = {}  # nothing cached: rules are cheap

    @classmethod
    def load(cls, cfg: Config, *, model_dir=None, device: str = "cpu", cache_dir=None) -> "CueLinker":
        """The registry's loader (thinkprobe.link.registry): rules need no model, device or cache."""
        return cls(cfg)

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.p = cfg.link

    def link(self, batch: Sequence[LinkInput], mapper=map) -> list[list[Edge]]:
        return [self._link_one(item.units, item.embeddings) for item in batch]

    def candidates(self, item: LinkInput) -> list[np.ndarray]:
        p = self.p
        return candidate_pairs(item.embeddings, p.window, p.top_k)

    def polarity(self, text: str) -> str:
        """A critique's polarity from the lexicon: negate, affirm or uncertain (the cross-encoder reads it too)."""
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
        sim = Similarity(emb)  # no n x n matrix for a long trace: rows and top-k in blocks
        sim.prepare((p.top_k, p.window), (p.premise_max, p.window), (1, p.repetition_min_gap - 1))
        cands = candidate_pairs(sim, p.window, p.top_k)
        premises, premise_sim = sim.top_earlier(p.premise_max, lag=p.window)
        repeats, repeat_sim = sim.top_earlier(1, lag=p.repetition_min_gap - 1)
        words = [set(_WORDS.findall(u.text.lower())) for u in units]
        segments = np.array([u.segment for u in units])
        edges: list[Edge] = []
        for j in range(1, n):
            u = units[j]
            lo = max(0, j - p.window)
            near = np.arange(lo, j)
            band = sim.at(j, near)
            k = int(np.argmax(band + p.adjacent_bonus * (near == j - 1)))
            parent = int(near[k])
            kind = "branch" if u.node_type == "EXP" else "elaboration" if u.node_type in ("FAC", "MET") else "inference"
            edges.append(Edge(parent, j, kind, score=round(float(band[k]), 4)))

            if u.node_type == "CON" and lo > 0:
                edges += [Edge(int(i), j, "inference", score=round(float(v), 4))
                          for i, v in zip(premises[j], premise_sim[j]) if i >= 0 and v >= p.premise_min_similarity]

            if j - p.repetition_min_gap + 1 > 0:
                i, v = int(repeats[j, 0]), repeat_sim[j, 0]
                jac = len(words[i] & words[j]) / max(1, len(words[i] | words[j]))
                if v >= p.repetition_similarity or (v >= p.repetition_similarity_lexical and jac >= p.repetition_jaccard):
                    edges.append(Edge(j, i, "repetition", score=round(float(v), 4)))

            if "CRT" in u.cues:
                c = cands[j]
                cs = sim.at(j, c)
                ok = (c >= lo) | (cs >= p.critique_min_similarity)
                c, cs = c[ok], cs[ok]
                k = int(np.argmax(cs - p.critique_recency * (j - c)))
                edges.append(Edge(j, int(c[k]), "critique", self.polarity(u.text), round(float(cs[k]), 4)))

            # Synthesis needs an explicit cue, or a conclusion in the answer section (the final
            # answer draws the reasoning together); plain "so ..." conclusions stay inferences.
            if "synthesis" in u.cues or (u.node_type == "CON" and u.section == "answer"):
                # the most similar unit of each other block (the first one on ties), the best blocks first
                row = sim.row(j)  # one row at a time: linear memory
                idx = np.flatnonzero((segments[:j] != u.segment) & (row >= p.synthesis_min_similarity))
                idx = idx[np.lexsort((idx, -row[idx], segments[idx]))]
                best = idx[np.r_[True, segments[idx][1:] != segments[idx][:-1]]] if len(idx) else idx
                picks = sorted(best.tolist(), key=lambda i: (-row[i], i))[: p.synthesis_max_sources]
                if len(picks) >= 2:
                    edges += [Edge(j, i, "synthesis", score=round(float(row[i]), 4)) for i in sorted(picks)]
        return edges
