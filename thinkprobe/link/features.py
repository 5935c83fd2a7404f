"""Features the trained backends share: word overlap over a CSR token index (numba), lexicon and
text-shape flags per unit, symbol rates, and the pair features both the pair MLP and the parser read.
"""
from __future__ import annotations

import itertools
import re
from typing import Callable, Iterable, Mapping, Sequence

import numba
import numpy as np

from ..records import ThoughtUnit
from .candidates import FROM_LOOKBACK, FROM_SIMILARITY, FROM_WINDOW

__all__ = ["token_index", "word_index", "jaccard", "shared_weight", "shared_count", "SHAPE_PATTERNS", "TextFlags",
           "symbol_rates", "SHARED_PAIR_FEATURES", "RANK_COLUMN", "ORIGIN_COLUMNS", "rank_and_origin_columns",
           "shared_pair_features"]

_WORDS = re.compile(r"\w+", re.UNICODE)


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
# the columns of `shared_pair_features` that depend on the candidate set around a pair rather than
# on the pair alone: the rank term and the origin flags (see `rank_and_origin_columns`)
RANK_COLUMN, ORIGIN_COLUMNS = 1, slice(10, 13)


def rank_and_origin_columns(out: np.ndarray, rank: np.ndarray, origin: np.ndarray) -> None:
    """Fill the rank term (1 / (1 + rank)) and the origin flags (window, similarity, look-back) of
    pair features `out` in place."""
    out[:, RANK_COLUMN] = 1.0 / (1.0 + rank)
    out[:, ORIGIN_COLUMNS] = np.stack([(origin & f) > 0 for f in (FROM_WINDOW, FROM_SIMILARITY, FROM_LOOKBACK)], axis=1)


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
    out[:, 2] = s - best
    out[:, 3] = 1.0 / d
    out[:, 4] = np.log1p(d) / np.log1p(max(n, 2))
    out[:, 5] = seg[i] == seg[j]
    out[:, 6] = np.minimum(seg[j] - seg[i], 5) / 5.0
    out[:, 7] = answer[i]
    out[:, 8] = answer[j]
    out[:, 9] = jaccard(words[0], words[1], i, j)
    rank_and_origin_columns(out, rank, origin)
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
