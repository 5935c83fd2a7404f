"""Node typing (spec section 2, pipeline step 4). Lexical cues from the lexicon in configs/ give
each Thought Unit a provisional type; the structural types (SYN, RPT, CRT) are settled after
linking by `finalise_types`. Also the per-unit features the indicators read: hedge and
perspective markers and concreteness.
"""
from __future__ import annotations

import re
from typing import Sequence

from .config import Config
from .records import Edge

__all__ = ["cue_categories", "provisional_type", "finalise_type", "concreteness"]

_TOKEN = re.compile(r"\\[A-Za-z]+|\\[()\[\]]|\$\$?|\d+(?:[.,]\d+)*|\w+|[^\w\s]", re.UNICODE)
_MATH = set("=+-−*/^<>≤≥≠≈∑∏∫√π∞±×÷·%∂∇∈∉⊂⊆∪∩→⇒⇔≡∝θλμσΔΩαβγ|")
# math delimiters ($, $$, \( \), \[ \]) mark where math is, they are no token of it
_PUNCT = {*".,;:!?'\"()[]{}…—–‐`", "$", "$$", "\\(", "\\)", "\\[", "\\]"}
_SENTENCE_END = set(".!?:")


def cue_categories(text: str, cfg: Config) -> tuple[str, ...]:
    """Lexicon categories whose patterns match the unit text, in lexicon order."""
    return tuple(cat for cat, pattern in cfg.lexicon.items() if pattern.search(text))


def provisional_type(cues: Sequence[str], cfg: Config) -> str:
    for node_type in cfg["type_priority"]:
        if node_type in cues:
            return node_type
    return "RSN"


def finalise_type(provisional: str, outgoing: Sequence[Edge]) -> str:
    """Structural types come from the unit's outgoing backward edges: a repetition edge makes
    RPT, a critique edge CRT, two or more synthesis edges SYN, except that a conclusion stays a
    conclusion when it draws blocks together (its synthesis edges stay: what it states is the
    conclusion; spec section 2 leaves the order open, and people label such units conclusions),
    and a plan stays a plan when it critiques ("let me check that sum again": people type it
    planning and draw its edge as a critique of what it checks, ReasoningFlow's plan:verify).
    A critique cue without a critique edge falls back to reasoning.

    >>> from thinkprobe.records import Edge
    >>> syn = [Edge(9, 1, "synthesis"), Edge(9, 4, "synthesis")]
    >>> finalise_type("RSN", syn), finalise_type("CON", syn), finalise_type("CRT", [])
    ('SYN', 'CON', 'RSN')
    >>> finalise_type("MET", [Edge(9, 4, "critique")]), finalise_type("RSN", [Edge(9, 4, "critique")])
    ('MET', 'CRT')
    """
    kinds = [e.edge_type for e in outgoing]
    if "repetition" in kinds:
        return "RPT"
    if "critique" in kinds and provisional != "MET":
        return "CRT"
    if kinds.count("synthesis") >= 2 and provisional != "CON":
        return "SYN"
    return "RSN" if provisional == "CRT" else provisional


_MINUS_AFTER = re.compile(r"\s*[\d(\\.]")
_MINUS_BEFORE = re.compile(r"[\d)]\s*$")


def _is_minus(text: str, i: int) -> bool:
    """Whether the "-" at i is a minus: a number, "(" or a LaTeX command after it, or a number or ")"
    before it ("5 - 3", "-3", "x - (a + b)"); a hyphen ("well-known"), a dash in prose or a list
    bullet is punctuation."""
    if text[i + 1:i + 2] == " " and not text[text.rfind("\n", 0, i) + 1:i].strip():
        return False  # "- 3 apples": a list bullet opening its line
    return bool(_MINUS_AFTER.match(text, i + 1) or _MINUS_BEFORE.search(text[max(0, i - 20):i]))


def concreteness(text: str, units: frozenset[str]) -> float:
    r"""Share of tokens that are numbers, math symbols or LaTeX commands, measurement units after
    a number, or named entities (capitalised words not opening a sentence). Math delimiters ($, \(
    ...) are punctuation, and so is a "-" that is no minus (`_is_minus`).

    >>> round(concreteness("So Paris has 2 km of roads = 5 m each.", frozenset({"km", "m"})), 3)
    0.545
    >>> [round(concreteness(t, frozenset()), 3) for t in ("Then x = 5 - 3.", "Then $x = 5 - 3$.", "Then \\(x = 5 − 3\\).")]
    [0.667, 0.667, 0.667]
    >>> [round(concreteness(t, frozenset()), 3) for t in ("- 3 apples", "-3 apples", "x = 2\n- 4 more")]
    [0.5, 0.667, 0.6]
    """
    # a "-" that is no minus is read as the hyphen sign (U+2010, punctuation)
    tokens = ["\u2010" if m.group(0) == "-" and not _is_minus(text, m.start()) else m.group(0) for m in _TOKEN.finditer(text)]
    words = [t for t in tokens if t not in _PUNCT]
    if not words:
        return 0.0
    concrete = 0
    prev = ""
    sentence_start = True
    for tok in tokens:
        if tok in _PUNCT:
            sentence_start = sentence_start or tok in _SENTENCE_END
            prev = tok
            continue
        if tok[0].isdigit() or tok in _MATH or tok.startswith("\\"):
            concrete += 1
        elif tok.lower() in units and prev[:1].isdigit():
            concrete += 1
        elif tok[0].isupper() and not sentence_start and tok != "I":
            concrete += 1
        sentence_start = False
        prev = tok
    return concrete / len(words)
