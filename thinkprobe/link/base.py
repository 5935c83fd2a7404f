"""What every linker shares (spec section 1, step 5): the input a linker receives (`LinkInput`),
the `Linker` protocol, candidate search (a window of neighbours, the top-k most similar earlier
units, a cue-driven look-back), word overlap, and decoding pair-class probabilities into edges.
Backends live beside it: `cue` (rules), `pairmlp` (trained pair MLP + type head), `crossencoder`.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Protocol, Sequence

import numba
import numpy as np

from ..records import Edge, ThoughtUnit

__all__ = [
    "LinkInput", "Linker", "PAIR_CLASSES", "TYPE_CLASSES", "FORWARD_CLASSES", "CRITIQUE_CLASSES", "REPETITION_CLASS",
    "FROM_WINDOW", "FROM_SIMILARITY", "FROM_LOOKBACK", "SIM_BLOCK", "Similarity", "as_similarity", "CandidateParams", "candidate_pairs", "candidates",
    "candidate_arrays", "token_index", "word_index", "jaccard", "shared_weight", "shared_count", "decode_edges", "TextFlags", "symbol_rates", "SHARED_PAIR_FEATURES",
    "shared_pair_features", "SHAPE_PATTERNS",
]

# No edge, then the 6 edge types; critique split by polarity.
PAIR_CLASSES: tuple[str, ...] = (
    "none", "inference", "elaboration", "branch", "critique:affirm", "critique:negate", "critique:uncertain",
    "synthesis", "repetition",
)
FORWARD_CLASSES = (1, 2, 3)
CRITIQUE_CLASSES = (4, 5, 6)
REPETITION_CLASS = 8
TYPE_CLASSES: tuple[str, ...] = ("FAC", "RSN", "EXP", "CRT", "MET", "CON", "RPT")

_WORDS = re.compile(r"\w+", re.UNICODE)
# Candidate origins (bit flags, also pair features).
FROM_WINDOW, FROM_SIMILARITY, FROM_LOOKBACK = 1, 2, 4


@dataclass(frozen=True)
class LinkInput:
    """One trace as the linker sees it: units (provisional types, cues, segments) and embeddings."""

    units: Sequence[ThoughtUnit]
    embeddings: np.ndarray  # (n, d), unit-normalised


class Linker(Protocol):
    """What a linking backend offers (every backend in thinkprobe.link follows it; the contract
    test tests/test_link_contract.py checks each one).

    - `link(batch, mapper=map)`: the edges of each trace of `batch`, in order (a list of `Edge`
      per `LinkInput`). A batch spans many traces so that a model can score the candidate pairs
      of all of them together. `mapper` is the run's map (a worker pool's `map`, or the builtin):
      a backend may use it for per-trace CPU work, or ignore it; every backend accepts it.
      Edges point only to existing units; forward edges (inference, elaboration, branch) go
      i -> j with i < j and every unit but the first gets one; backward edges (critique with a
      polarity, synthesis, repetition) go j -> i with i < j. Same input, same edges.
    - `candidates(item)`: for each unit j of one trace, the earlier units i it considered as
      partners (an int array per unit; evalgold scores recall within them).
    - `cache_stats`: {"hits", "misses"} of its per-trace score cache ({} when it keeps none).
    - `structural_types`: True when it gives every provisional CRT / RPT unit the critique or
      repetition edge those types need, so a type head may assign them.
    - `name` (the run manifest's linker) and `kind` (what it is, in words, for `thinkprobe doctor`).
    """

    name: str
    kind: str
    structural_types: bool

    def link(self, batch: Sequence[LinkInput], mapper=map) -> list[list[Edge]]: ...

    def candidates(self, item: LinkInput) -> list[np.ndarray]: ...

    @property
    def cache_stats(self) -> dict[str, int]: ...


def candidate_pairs(sim: "Similarity | np.ndarray", window: int, top_k: int) -> list[np.ndarray]:
    """Earlier-unit candidates for each unit j: the `window` preceding units plus the `top_k`
    most similar earlier units beyond the window. `sim`: a `Similarity`, or the unit embeddings.

    >>> e = np.eye(6); e[5] = e[0] + 0.5 * e[5]
    >>> [c.tolist() for c in candidate_pairs(e, window=2, top_k=1)]
    [[], [0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 3, 4]]
    """
    sim = as_similarity(sim)
    top = sim.top_earlier(top_k, lag=window)[0]
    out = []
    for j in range(sim.n):
        near = np.arange(max(0, j - window), j)
        far = top[j][top[j] >= 0]
        out.append(np.unique(np.concatenate([far, near]).astype(np.int64)))
    return out


# ----------------------------------------------------------------------------- similarity

# Most similarity values held at once for one trace (float32: 64 MB). A trace of up to
# sqrt(SIM_BLOCK) = 4096 units gets its whole matrix at once; a longer one is read in strips of
# rows. A memory bound only: strips give the same values as the whole matrix.
SIM_BLOCK = 1 << 24


@numba.njit(cache=True)
def _top_rows(strip, r0, k, lag, idx, val):  # pragma: no cover - compiled
    """For each row q = r0 + r of `strip` (similarities of unit q to units 0..): the `k` most
    similar units among 0 .. q-lag-1, most similar first, ties to the earlier unit (the order of a
    stable argsort of -similarity); -1 where there are fewer."""
    for r in range(strip.shape[0]):
        end = r0 + r - lag
        m = 0
        for t in range(max(end, 0)):
            x = strip[r, t]
            if m == k and not x > val[r0 + r, k - 1]:
                continue
            pos = m if m < k else k - 1
            while pos > 0 and x > val[r0 + r, pos - 1]:
                idx[r0 + r, pos] = idx[r0 + r, pos - 1]
                val[r0 + r, pos] = val[r0 + r, pos - 1]
                pos -= 1
            idx[r0 + r, pos] = t
            val[r0 + r, pos] = x
            if m < k:
                m += 1


@numba.njit(cache=True)
def _rank_and_best(strip, r0, i, j, rank, best):  # pragma: no cover - compiled
    """For pairs (i[k] < j[k]) with j[k] in this strip's rows: how many earlier units of j are
    more similar to j than i is (0 = i is the most similar), and j's best similarity to any
    earlier unit."""
    for k in range(len(i)):
        r = j[k] - r0
        v = strip[r, i[k]]
        c = 0
        m = strip[r, 0]
        for t in range(j[k]):
            x = strip[r, t]
            if x > v:
                c += 1
            if x > m:
                m = x
        rank[k] = c
        best[k] = m


class Similarity:
    """Cosine similarities between the units of one trace (embeddings unit-normalised), without
    an n x n matrix for a long trace: up to `block` values are held at once, as strips of rows
    `emb[r0:r1] @ emb[:r1].T` (plain matrix products, so never the whole-trace `A @ A.T` that
    OpenBLAS turns into its symmetric product). A short trace keeps its whole matrix. Every
    question a linker asks (most similar earlier units, ranks, single values) is answered in
    memory linear in the trace length.

    >>> e = np.eye(4, dtype=np.float32); e[3] = e[0]
    >>> Similarity(e).top_earlier(2, lag=1)[0].tolist()
    [[-1, -1], [-1, -1], [0, -1], [0, 1]]
    """

    def __init__(self, emb: np.ndarray, block: int | None = None):
        self.emb = np.ascontiguousarray(emb, dtype=np.float32)
        self.n = len(self.emb)
        self.rows = max(1, (block or SIM_BLOCK) // max(1, self.n))
        self.dense = self.emb @ self.emb.T if self.n <= self.rows else None
        self._top: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def strips(self):
        """(r0, r1, S) with S[r, t] the similarity of units r0 + r and t, for t < r1."""
        if self.dense is not None:
            yield 0, self.n, self.dense
            return
        for r0 in range(0, self.n, self.rows):
            r1 = min(self.n, r0 + self.rows)
            yield r0, r1, self.emb[r0:r1] @ self.emb[:r1].T

    def at(self, j: int, idx: np.ndarray) -> np.ndarray:
        """Similarities of unit j to the units `idx`."""
        if self.dense is not None:
            return self.dense[j, idx]
        return self.emb[idx] @ self.emb[j]

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Similarities of the pairs (i[k], j[k])."""
        if self.dense is not None:
            return self.dense[i, j]
        out = np.zeros(len(i), dtype=np.float32)
        for s in range(0, len(i), self.rows):
            out[s:s + self.rows] = np.einsum("ij,ij->i", self.emb[i[s:s + self.rows]], self.emb[j[s:s + self.rows]])
        return out

    def row(self, j: int) -> np.ndarray:
        """Similarities of unit j to every earlier unit (0 .. j-1)."""
        if self.dense is not None:
            return self.dense[j, :j]
        return self.emb[:j] @ self.emb[j]

    def adjacent(self) -> np.ndarray:
        """a[q] = similarity of units q and q-1 (a[0] = 0): the band next to the diagonal."""
        out = np.zeros(self.n, dtype=np.float32)
        if self.n > 1:
            k = np.arange(1, self.n)
            out[1:] = self.dense[k, k - 1] if self.dense is not None else np.einsum("ij,ij->i", self.emb[1:], self.emb[:-1])
        return out

    def top_earlier(self, k: int, lag: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """For each unit q: the `k` most similar units among 0 .. q-lag-1 (indices, -1 where there
        are fewer, and similarities), most similar first, ties to the earlier unit."""
        self.prepare((k, lag))
        return self._top[(k, lag)]

    def prepare(self, *specs: tuple[int, int]) -> None:
        """Compute `top_earlier(k, lag)` for several (k, lag) in one pass over the strips."""
        todo = [key for key in dict.fromkeys(specs) if key not in self._top]
        if not todo:
            return
        for key in todo:
            self._top[key] = (np.full((self.n, key[0]), -1, dtype=np.int64),
                              np.full((self.n, key[0]), -np.inf, dtype=np.float32))
        todo = [key for key in todo if key[0]]
        if todo:
            for r0, _, strip in self.strips():
                for k, lag in todo:
                    _top_rows(strip, r0, k, lag, *self._top[(k, lag)])

    def rank_and_best(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For pairs (i < j): how many earlier units of j are more similar to j than i is (0 = i
        is the most similar), and j's best similarity to an earlier unit."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        order = np.argsort(j, kind="stable")
        si, sj = i[order], j[order]
        rank = np.zeros(len(i), dtype=np.int64)
        best = np.zeros(len(i), dtype=np.float32)
        for r0, r1, strip in self.strips():
            a, b = np.searchsorted(sj, [r0, r1])
            if b > a:
                _rank_and_best(strip, r0, si[a:b], sj[a:b], rank[a:b], best[a:b])
        out_rank, out_best = np.empty_like(rank), np.empty_like(best)
        out_rank[order], out_best[order] = rank, best
        return out_rank, out_best


def as_similarity(x: "Similarity | np.ndarray") -> Similarity:
    """A `Similarity` from one, or from a trace's unit embeddings."""
    return x if isinstance(x, Similarity) else Similarity(x)


# ----------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class CandidateParams:
    window: int = 3  # preceding units always considered
    top_k: int = 5  # most similar earlier units beyond the window
    plan_lookback: int = 2  # earlier planning (MET-cue) units beyond the window
    conclusion_lookback: int = 3  # earlier conclusion-cue units, for conclusion and critique units
    block_lookback: int = 2  # starts of the unit's topical block and of the blocks before it
    number_lookback: int = 0  # the parser's: earlier units that last mentioned a number of the unit
    horizon: int = 0  # the parser's: similar units searched among this many before the unit (0: all)

    @classmethod
    def from_dict(cls, d: Mapping) -> "CandidateParams":
        return cls(**{k: int(v) for k, v in d.items() if k in cls.__dataclass_fields__})


def candidates(units: Sequence[ThoughtUnit], sim: "Similarity | np.ndarray", p: CandidateParams) -> list[tuple[np.ndarray, np.ndarray]]:
    """Earlier-unit candidates for each unit j with their origin flags: the `window` preceding
    units, the `top_k` most similar earlier units beyond them, and a look-back driven by cues:
    the last planning units (a plan governs the steps that carry it out), the last conclusion
    units for units that conclude or critique (answers confirm or revise earlier answers), and
    the starts of the current and previous topical blocks. `sim`: a `Similarity`, or the unit
    embeddings.

    >>> from thinkprobe.records import ThoughtUnit as U
    >>> us = [U(k, "reasoning", 0, 1, "x", segment=0, cues=("MET",) if k == 0 else ()) for k in range(6)]
    >>> [c.tolist() for c, _ in candidates(us, np.eye(6), CandidateParams(window=2, top_k=0, block_lookback=0))]
    [[], [0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 3, 4]]
    """
    n = len(units)
    met = [k for k, u in enumerate(units) if "MET" in u.cues]
    con = [k for k, u in enumerate(units) if "CON" in u.cues]
    block_start: dict[int, int] = {}
    for k, u in enumerate(units):
        block_start.setdefault(u.segment, k)
    starts = sorted(block_start.values())
    top = as_similarity(sim).top_earlier(p.top_k, lag=p.window)[0] if p.top_k and n else None
    out = []
    for j in range(n):
        origin: dict[int, int] = {}
        lo = max(0, j - p.window)
        for i in range(lo, j):
            origin[i] = origin.get(i, 0) | FROM_WINDOW
        if lo and p.top_k:
            for i in top[j][top[j] >= 0]:
                origin[int(i)] = origin.get(int(i), 0) | FROM_SIMILARITY
        look = [k for k in met if k < lo][-p.plan_lookback:] if p.plan_lookback else []
        cues = units[j].cues
        if p.conclusion_lookback and ("CON" in cues or "CRT" in cues):
            look += [k for k in con if k < lo][-p.conclusion_lookback:]
        if p.block_lookback:
            look += [s for s in starts if s < lo][-p.block_lookback:]
        for i in look:
            origin[i] = origin.get(i, 0) | FROM_LOOKBACK
        idx = np.array(sorted(origin), dtype=np.int64)
        out.append((idx, np.array([origin[i] for i in idx], dtype=np.int64)))
    return out


def candidate_arrays(units: Sequence[ThoughtUnit], sim: "Similarity | np.ndarray", p: CandidateParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`candidates` as flat arrays over all pairs: i, j (i < j) and the origin flags, ordered by j.

    >>> from thinkprobe.records import ThoughtUnit as U
    >>> us = [U(k, "reasoning", 0, 1, "x", segment=0) for k in range(3)]
    >>> [a.tolist() for a in candidate_arrays(us, np.eye(3), CandidateParams(window=2, top_k=0, block_lookback=0))]
    [[0, 0, 1], [1, 2, 2], [1, 1, 1]]
    """
    cands = candidates(units, sim, p)
    if not cands:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return (np.concatenate([c for c, _ in cands]), np.repeat(np.arange(len(cands)), [len(c) for c, _ in cands]),
            np.concatenate([o for _, o in cands]))


# ----------------------------------------------------------------------------- features


def token_index(units: Sequence[ThoughtUnit], tokens: Callable[[str], Iterable[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's distinct tokens (`tokens(text)`) as sorted ids (CSR: indptr, ids), ids given in
    order of first appearance in the trace."""
    vocab: dict[str, int] = {}
    rows = [sorted({vocab.setdefault(w, len(vocab)) for w in tokens(u.text)}) for u in units]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    return indptr, np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=int(indptr[-1]))


def word_index(units: Sequence[ThoughtUnit]) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's distinct lower-cased words as sorted ids (CSR: indptr, ids), for word overlap."""
    return token_index(units, lambda text: _WORDS.findall(text.lower()))


@numba.njit(cache=True)
def shared_weight(indptr, ids, weight, a, b):  # pragma: no cover - compiled
    """For pairs (a[k], b[k]) of rows of a CSR of sorted ids (`word_index`): the sum of `weight`
    over the ids both rows hold (sorted id lists intersected by merging); weight 1 counts them."""
    out = np.zeros(len(a), dtype=np.float64)
    for k in range(len(a)):
        p, pe, q, qe = indptr[a[k]], indptr[a[k] + 1], indptr[b[k]], indptr[b[k] + 1]
        total = 0.0
        while p < pe and q < qe:
            if ids[p] == ids[q]:
                total += weight[ids[p]]
                p += 1
                q += 1
            elif ids[p] < ids[q]:
                p += 1
            else:
                q += 1
        out[k] = total
    return out


def shared_count(indptr, ids, a, b) -> np.ndarray:
    """For pairs (a[k], b[k]) of rows of a CSR of sorted ids: how many ids both rows hold."""
    return shared_weight(indptr, ids, np.ones(int(ids.max()) + 1 if len(ids) else 0), a, b)


def jaccard(indptr, ids, a, b):
    """Word-set Jaccard of units a[k] and b[k]."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    inter = shared_count(indptr, ids, a, b)
    size = np.diff(indptr)
    return inter / np.maximum(1, size[a] + size[b] - inter)


# Text-shape flags (regular expressions, matched case-insensitively) that scripts/train_linker.py
# stores in a new model's config.json (scripts/train_parser.py adds two); a trained model reads its
# own copy from there, so changing these changes only models trained afterwards.
SHAPE_PATTERNS = {
    "ends_colon": r":\s*$",
    "question": r"\?\s*$",
    "starts_so": r"^\W*(?:so|therefore|thus|hence|then)\b",
    "starts_but": r"^\W*(?:but|however|although|though|yet)\b",
    "starts_let": r"^\W*(?:let|let's|let me|we can|we need|i need|i should|i'll|i will)\b",
    "starts_order": r"^\W*(?:first|second|third|next|now|finally|step \d|then)\b",
    "has_equation": r"=|\\\[|\$\$|\\frac|\\boxed",
    "starts_markup": r"^\W*(?:#|\*\*|\d+[.)]|[-*] )",
    "recall": r"\b(?:recall|remember|know that|is defined|formula|law|theorem|constant|principle)\b",
    "problem_ref": r"\b(?:the (?:problem|question)|given|we are told|it says|the options?)\b",
    "case": r"\b(?:case|if|suppose|assume|assuming|consider|let's say)\b",
    "example": r"\b(?:for example|for instance|e\.g\.|such as|like)\b",
    "first_person_state": r"\b(?:i think|i'm|i am|i don't|i'm not sure|seems|hmm)\b",
    "affirm": r"\b(?:correct|right|yes|good|makes sense|consistent|matches|checks out)\b",
    "negate": r"\b(?:wrong|incorrect|no|not|mistake|error|doesn't|can't|isn't)\b",
    "final": r"\b(?:final answer|the answer|answer is|\\boxed|therefore the|in conclusion|in summary)\b",
}


class TextFlags:
    """Base of the trained backends' unit featurizers: lexicon cue flags (the run's config), then
    text-shape flags (patterns stored with the model, not in code), then `numeric` more columns
    that the subclass fills."""

    numeric = 0

    def __init__(self, cue_names: Sequence[str], shape_patterns: Mapping[str, str]):
        self.cue_names = list(cue_names)
        self.shape_names = list(shape_patterns)
        self.shapes = [re.compile(p, re.IGNORECASE) for p in shape_patterns.values()]

    @property
    def size(self) -> int:
        return len(self.cue_names) + len(self.shape_names) + self.numeric

    def flags(self, units: Sequence[ThoughtUnit]) -> tuple[np.ndarray, list[str], np.ndarray, int]:
        """(features, texts, text lengths, f): float32 features of `units` (n, size) with the cue
        and shape flags set and the numeric columns, from column f on, zero."""
        out = np.zeros((len(units), self.size), dtype=np.float32)
        texts = [u.text for u in units]
        c = len(self.cue_names)
        for k, u in enumerate(units):
            cues = set(u.cues)
            out[k, :c] = [name in cues for name in self.cue_names]
        for col, pattern in enumerate(self.shapes, start=c):
            out[:, col] = [pattern.search(t) is not None for t in texts]
        return out, texts, np.array([len(t) for t in texts], dtype=np.float64), c + len(self.shape_names)


def symbol_rates(texts: Sequence[str], length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Share of digits and of operator characters in each text (`length`: the texts' lengths)."""
    per_char = np.maximum(1.0, length)
    return ([sum(map(str.isdigit, t)) for t in texts] / per_char,
            [sum(map(t.count, "=+-*/^<>")) for t in texts] / per_char)


# columns of `shared_pair_features`
SHARED_PAIR_FEATURES = 16


def shared_pair_features(units: Sequence[ThoughtUnit], i: np.ndarray, j: np.ndarray, origin: np.ndarray,
                         s: np.ndarray, rank: np.ndarray, best: np.ndarray,
                         words: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The pair features both trained backends read, float32 (m, 16), for candidate pairs (i < j)
    with similarity `s`, its rank among j's candidates (0 = the most similar) and j's best
    similarity `best` (per pair): similarity, 1 / (1 + rank), gap to the best, 1 / distance, log
    distance over log trace length, same block, blocks apart (capped at 5, / 5), i and j in the
    answer, word overlap, origin flags (window, similarity, look-back), and whether i is the plan
    in force at j (the last planning unit before it), opens j's block, or opens the one before."""
    m = len(i)
    out = np.zeros((m, SHARED_PAIR_FEATURES), dtype=np.float32)
    if not m:
        return out
    n = len(units)
    seg = np.array([u.segment for u in units])
    answer = np.array([u.section == "answer" for u in units])
    d = (j - i).astype(np.float32)
    out[:, 0] = s
    out[:, 1] = 1.0 / (1.0 + rank)
    out[:, 2] = s - best
    out[:, 3] = 1.0 / d
    out[:, 4] = np.log1p(d) / np.log1p(max(n, 2))
    out[:, 5] = seg[i] == seg[j]
    out[:, 6] = np.minimum(seg[j] - seg[i], 5) / 5.0
    out[:, 7] = answer[i]
    out[:, 8] = answer[j]
    out[:, 9] = jaccard(words[0], words[1], i, j)
    out[:, 10] = (origin & FROM_WINDOW) > 0
    out[:, 11] = (origin & FROM_SIMILARITY) > 0
    out[:, 12] = (origin & FROM_LOOKBACK) > 0
    last_plan = np.full(n, -1)
    block_start = np.zeros(n, dtype=np.int64)
    prev_start = np.full(n, -1)
    plan, start, before = -1, 0, -1
    for k, u in enumerate(units):
        if k and u.segment != units[k - 1].segment:
            before, start = start, k
        last_plan[k], block_start[k], prev_start[k] = plan, start, before
        if "MET" in u.cues:
            plan = k
    out[:, 13] = last_plan[j] == i
    out[:, 14] = block_start[j] == i
    out[:, 15] = prev_start[j] == i
    return out


def decode_edges(units: Sequence[ThoughtUnit], probs: np.ndarray, i: np.ndarray, j: np.ndarray, origin: np.ndarray,
                 decode: Mapping[str, float]) -> list[Edge]:
    """Edges of one trace from the class probabilities of its candidate pairs (the decoding `pairmlp.TrainedLinker` describes).

    `decode` holds the thresholds on the edge probability (1 - P(none)): `threshold_near` (pairs
    from the window) and `threshold_far` (the others). `labels_follow_types`: a unit that is not
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
    keep = edge_p >= np.where(near, decode["threshold_near"], decode["threshold_far"])
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
