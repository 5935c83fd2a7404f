"""Segmentation (spec section 1, steps 2-3). Rules split a section into fragments (code fences
and display math kept whole, then lines, then spaCy's rule-based sentencizer with inline math and
code protected); filler fragments merge into the next one to make Thought Units; TextTiling over
the units' MiniLM embeddings groups them into topical blocks. Every unit keeps character offsets
into the original field text, and the units of a section tile its non-whitespace characters once.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Iterable, Iterator

import numba
import numpy as np

from .config import Config
from .io.tags import SPECIAL_TOKEN
from .records import Section

__all__ = ["Abbreviations", "default_abbreviations", "DOLLAR_MATH", "fragment_spans", "unit_spans", "settled_fragments", "is_filler", "merge_fragments", "tile",
           "word_chars", "load_sentencizer", "longest_repeat", "says"]

# Blocks kept whole: fenced code, display math, LaTeX environments.
_BLOCK = re.compile(
    r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|\\\[.*?(?:\\\]|\Z)|\$\$.*?(?:\$\$|\Z)|\\begin\{(\w+\*?)\}.*?(?:\\end\{\1\}|\Z)",
    re.DOTALL,
)
# Inline math between dollar signs, on one line. A "$" before a digit may be a price: it opens math
# only by pandoc's rule, the closing "$" with a non-space before it and no digit after it ("$3x + 2$"),
# so that prices are no math ("$41 on cupcakes. ... is $1", "$5-$10": every sentence between them was
# one unit); any other "$" pairs with the next one, spaces inside or not (QwQ's "$ x = 3. $").
DOLLAR_MATH = r"(?<![\\$])(?:\$(?![\d$])([^$\n]*?[^$\n\\])\$|\$(?=\d)([^$\n]*?[^\s$\\])\$(?!\d))"
# Inline spans a sentence boundary may not fall inside.
_INLINE = re.compile(DOLLAR_MATH + r"|\\\(.*?\\\)|`[^`\n]+`")
HEADER = re.compile(r"^\s{0,3}#{1,6}\s")
# Full-width sentence enders (CJK) end a sentence wherever they stand; spaCy's English
# tokenizer does not split unspaced CJK text into tokens.
_CJK_END = re.compile(r"(?<=[。！？])")
# An inline enumeration marker ("... so 1. first") belongs to the sentence after it.
_MARKER = re.compile(r"^\s*\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)]\s*(?:\*\*?|__?)?\s*$")  # "2.", "(b)", "10. **"
_ENUM_TAIL = re.compile(r"(?<=\s)(?:\d{1,2}|[a-z])[.)]$")
_WORD = re.compile(r"\w", re.UNICODE)
# what a unit says, for repeats: its words and signs, sentence punctuation and case aside (BIG-Bench Mistake's Dyck
# steps "( ; stack: ( (" and "< ; stack: ( ( <" are all the word "stack")
_SAYS = re.compile(r"\w+|[^\w\s.,;:!?'\"“”‘’]")
# spaCy's English exceptions read "B.", "Q.", "Pa." as abbreviations; before a capital (or an
# opening bracket / LaTeX command) they end a sentence unless they are a real abbreviation.
_MISSED_END = re.compile(r"[.!?]\s+(?=[A-Z(\[\\])")
_NEXT_WORD = re.compile(r"[\w'’]+")
# A title in bold on a line of its own, the parts of Gemini's and GPT-5's thought summaries open with one
# ("**Evaluating NBA Finals Scoring**"): at most 8 words, each opening with a letter, no sign or sentence stop
# ("**Answer: C**", "**x = 4.**" state something), no option ("**B**", "**Option B**") and no answer's heading
# ("**Final Answer**" before R1's box)
_BOLD_TITLE = re.compile(r"(?!\s*\*\*\s*(?:(?i:option|choice|answer)\s*)?\(?[A-J]\)?\s*\*\*)"  # "**B**": an option
                         r"(?![^\n]*(?i:answer))"  # "**Final Answer**": people keep it a unit (human D's dev traces)
                         r"\s*\*\*(?:[^\W\d_][\w'’,&()/-]*\s*){1,8}\*\*\s*")
# A bold title glued to the sentence before it ("... confirmation.**Investigating album rankings**"), as
# the reasoning summaries of OpenAI's models often come when their parts are joined without a break.
_GLUED_BOLD = re.compile(r"(?<=[.!?])\*\*(?=[^*\s][^*\n]*\*\*)")


@dataclass(frozen=True)
class Abbreviations:
    """The config's abbreviations (segment.abbreviations, final_abbreviations, sentence_starters): a cut
    right after one of them is dropped, after a final one unless the next word starts a sentence."""

    always: tuple[str, ...] = ()
    final: tuple[str, ...] = ()
    starters: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()  # opening a sentence, these are words, not abbreviations

    @classmethod
    def of(cls, seg) -> "Abbreviations":
        """The abbreviations of a config's segment section (one object, one compiled pattern, per lists)."""
        return _abbreviations(tuple(seg.abbreviations), tuple(seg.final_abbreviations), tuple(seg.sentence_starters),
                              tuple(seg.sentence_words))

    @cached_property
    def _pattern(self) -> re.Pattern:
        names = sorted({*self.always, *self.final}, key=len, reverse=True)
        alternation = "|".join(re.escape(n) for n in names) or r"(?!x)x"
        # not inside a longer word or dotted name ("Co." of "Co.", never of "Mexico."); the period included
        return re.compile(rf"(?<![\w.])({alternation})\.\Z")

    @cached_property
    def longest(self) -> int:
        return max((len(n) for n in (*self.always, *self.final)), default=0) + 2

    def holds(self, text: str, cut: int) -> bool:
        """Whether the cut before text[cut] follows an abbreviation that does not end a sentence there."""
        end = cut
        while end > 0 and text[end - 1].isspace():
            end -= 1
        m = self._pattern.search(text, max(0, end - self.longest), end)
        if m is None:
            return self._initials(text, cut, end)
        if m.group(1) not in self.final or m.group(1) in self.always:
            return True
        if m.group(1) in self.words and _opens_sentence(text, m.start()):
            return False
        word = _NEXT_WORD.match(text, cut)
        return not (word and word.group() in self.starters)

    def _initials(self, text: str, cut: int, end: int) -> bool:
        """A name's initials ("John F. Kennedy", "George H.W. Bush", "A.T. Still University") before a
        capitalised word that is not a sentence starter: one initial after a capitalised word, or two or
        more dotted letters anywhere. "the answer is B. Then", "Vitamin E. So" still end there."""
        m = _INITIALS.search(text, max(0, end - 12), end)
        if m is None:
            return False
        word = _NEXT_WORD.match(text, cut)
        if not (word and word.group()[0].isupper()) or word.group() in self.starters:
            return False
        return len(m.group(1)) > 2 or bool(_NAME_BEFORE.search(text, max(0, m.start() - 40), m.start()))


# Initials at the end of a text: one to three capital letters, each with its period.
_INITIALS = re.compile(r"(?<![\w.])((?:[A-Z]\.){1,3})\Z")
# A capitalised word (a first name) or another initial ("Charles A. P. Bartlett") right before the initials.
_NAME_BEFORE = re.compile(r"(?<![\w.])(?:[A-Z][a-z]+|[A-Z]\.) \Z")


_MARKS = ".!?…"
_OPERATORS = "+-−=×/·<>≤≥≈"  # not "*": markdown's bold
_DECIMAL_END = re.compile(r"\d\.\d+\Z")


def _in_formula(text: str, cut: int) -> bool:
    """Whether the cut before text[cut] follows a mark that ends no sentence: a factorial ("n! / (r!(n-r)!)",
    "8! / (5! * 2!)", "n!!": a "!" or "!!" right after a digit, a closing bracket or a one-letter name; a
    capital after it still starts a sentence), an ellipsis inside a list ("(104, 114, ..., 194)") or the unknown of an
    equation ("x = ? cm"), an ellipsis between terms ("1 + 2 + ... + 10") or after a repeating decimal that a
    lower-case word goes on from ("8.333... cm")."""
    k = cut  # back over what lies between the last mark and the cut: spaces, brackets, operators
    while k > 0 and not (text[k - 1] in _MARKS or text[k - 1].isalnum() or text[k - 1] == "_"):
        k -= 1
    if k == 0 or text[k - 1] not in _MARKS:
        return False
    nxt = text[k:cut + 1].lstrip()[:1]
    if text[k - 1] == "!":
        j = k - 2 if k >= 3 and text[k - 2] == "!" else k - 1  # "n!!": a double factorial
        before = text[j - 1] if j >= 1 else ""
        factorial = before.isdigit() or before in (")", "]", "}") or (
            before.isascii() and before.isalpha() and not (j >= 2 and text[j - 2].isalpha()))
        return factorial and not (nxt.isupper() or nxt in ('"', "'", "“", "‘"))
    if text[k - 1] == "…" or text.endswith("...", 0, k):
        before = text[:k - (1 if text[k - 1] == "…" else 3)].rstrip()
        if nxt and nxt in ",)]}" + _OPERATORS or before and before[-1] in _OPERATORS:  # "1 + 2 + ... + 10"
            return True
        return nxt.islower() and bool(_DECIMAL_END.search(before))  # "≈ 8.333... cm": a repeating decimal goes on
    if text[k - 1] == "?":  # "x = ? cm": the unknown of an equation, no question; a capital after it still starts one
        line, end = text.rfind("\n", 0, k) + 1, text.find("\n", k)
        if (text.rfind("[", line, k) > text.rfind("]", line, k) and "]" in text[k:end if end >= 0 else None]
                and text[:k - 1].rstrip()[-1:] in ('"', "'") and nxt in ('"', "'")):
            return True  # '["argus" ? "avid"]': an order unknown between quoted items of a list
        return text[:k - 1].rstrip().endswith("=") and not (nxt.isupper() or nxt in ('"', "'", "“", "‘"))
    return False


# Brackets and quotation marks that open what follows them.
_OPENERS = "([{\"'“‘«"


def _before_openers(text: str, cut: int) -> int:
    """A cut right after opening brackets or quotation marks that follow a space moves before them:
    "ten. (5!) ways" is cut before "(", never between "(" and "5"; '"b" (2). "hippy": "h"' before the
    quote that opens "hippy", not after it."""
    k = cut
    while k > 0 and text[k - 1] in _OPENERS:
        k -= 1
    return k if k < cut and (k == 0 or text[k - 1].isspace()) else cut


def _opens_sentence(text: str, start: int) -> bool:
    """Whether the word at `start` is the first of its sentence (only spaces back to an end mark)."""
    while start > 0 and text[start - 1].isspace():
        start -= 1
    return start == 0 or text[start - 1] in ".!?:;"


@lru_cache(maxsize=8)
def _abbreviations(always: tuple[str, ...], final: tuple[str, ...], starters: tuple[str, ...],
                   words: tuple[str, ...]) -> Abbreviations:
    return Abbreviations(always, final, frozenset(starters), frozenset(words))


@lru_cache(maxsize=1)
def default_abbreviations() -> Abbreviations:
    """The default config's abbreviations (also what answer extraction reads an answer's end by)."""
    return Abbreviations.of(Config.load().segment)
# Sentence-final punctuation beyond spaCy's defaults: ellipses end sentences in reasoning traces.
_EXTRA_PUNCT = ["...", "…", "?!", "!?", "??", "!!"]


@lru_cache(maxsize=1)
def _nlp():
    import spacy  # imported here: it costs a second or more, and only segmentation needs it

    nlp = spacy.blank("en")  # English tokenizer exceptions keep "e.g.", "Dr.", "3.14" whole
    sentencizer = nlp.add_pipe("sentencizer")
    sentencizer.punct_chars = set(sentencizer.punct_chars) | set(_EXTRA_PUNCT)
    nlp.max_length = 10**8
    return nlp


def load_sentencizer() -> None:
    """Load spaCy's sentence splitter now (it loads on the first split otherwise)."""
    _nlp()


def word_chars(text: str) -> int:
    return len(_WORD.findall(text))


def _strip(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _cut_long(text: str, start: int, end: int, limit: int) -> Iterable[tuple[int, int]]:
    """Cut a span longer than `limit` at whitespace, so no unit swallows a whole huge line."""
    while end - start > limit:
        cut = text.rfind(" ", start + limit // 2, start + limit)
        cut = cut if cut > start else start + limit
        yield start, cut
        start = cut
    yield start, end


def _blocks(text: str, start: int, end: int) -> Iterator[re.Match]:
    """The blocks kept whole in text[start:end), in order. A LaTeX environment on one line inside
    inline math or code ("$a = \\begin{pmatrix} x \\\\ y \\end{pmatrix}$ is", "$\\boxed{\\begin{...}...}$")
    is part of its sentence, not a block: cut out, it would tear the formula in three units."""
    for m in _BLOCK.finditer(text, start, end):
        if m.group(1) is not None and "\n" not in m.group():
            line = text.rfind("\n", start, m.start()) + 1 or start
            stop = text.find("\n", m.end(), end)
            stop = end if stop < 0 else stop
            if any(i.start() < m.start() and m.end() < i.end() for i in _INLINE.finditer(text, line, stop)):
                continue
        yield m


def _at_comma(piece: str, cut: int) -> bool:
    """A sentence neither ends on a comma or semicolon nor starts with one: "the second, etc., up to the
    eighth hour", "Joseph A. Roebling Sr., the famous ...", "right?), so r is also" were cut there."""
    return piece[:cut].rstrip().endswith((",", ";")) or piece[cut:].lstrip().startswith((",", ";"))


def _line_spans(text: str, start: int, end: int) -> Iterable[tuple[int, int, bool]]:
    """Yield (start, end, whole) pieces of [start, end): blocks kept whole, else single lines."""
    pos = start
    for m in _blocks(text, start, end):
        yield from _lines(text, pos, m.start())
        yield from _cut_special(text, m.start(), m.end(), True)
        pos = m.end()
    yield from _lines(text, pos, end)


def _lines(text: str, start: int, end: int) -> Iterable[tuple[int, int, bool]]:
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl < 0 else nl
        yield from _cut_special(text, pos, stop, bool(HEADER.match(text, pos, stop)))
        pos = stop + 1


def _cut_special(text: str, start: int, end: int, whole: bool) -> Iterable[tuple[int, int, bool]]:
    """[start, end) without the chat-template special tokens in it (<|im_end|> ...): never part of a unit."""
    if "<" in text[start:end]:
        for m in SPECIAL_TOKEN.finditer(text, start, end):
            yield start, m.start(), whole
            start = m.end()
    yield start, end, whole


def _before_enum_marker(text: str, cut: int) -> int:
    # Only when the next sentence starts in lower case: "is 2. Then" is a sentence end.
    if not text[cut:cut + 1].islower():
        return cut
    end = cut
    while end > 0 and text[end - 1].isspace():
        end -= 1
    # The marker is at most three characters after a space: look at that tail only, not text[:cut].
    m = _ENUM_TAIL.search(text, max(0, end - 4), end)
    return m.start() if m else cut


def _inside(spans: list[tuple[int, int]], pos: int) -> bool:
    """Whether pos falls strictly inside one of the sorted, disjoint (start, end) spans."""
    k = bisect.bisect_left(spans, (pos,)) - 1  # the last span starting before pos
    return k >= 0 and spans[k][0] < pos < spans[k][1]


# A run of this many punctuation characters without a space ("!!!!...", "****..."): its own fragment,
# never read by spaCy, whose tokenizer splits such a run one character at a time in quadratic time
# (10,000 took 8-17 s, 20,000 took 30 s, a longer one stalled a batch).
_PUNCT_RUN = re.compile(r"[^\w\s]{200,}")


def _split_runs(text: str, a: int, b: int) -> list[tuple[int, int, bool]]:
    """text[a:b] as (start, end, whole) pieces: each long punctuation run a whole piece of its own,
    the prose around it pieces spaCy reads."""
    out, at = [], a
    for m in _PUNCT_RUN.finditer(text, a, b):
        if m.start() > at:
            out.append((at, m.start(), False))
        out.append((m.start(), m.end(), True))
        at = m.end()
    if at < b:
        out.append((at, b, False))
    return [(s, e, whole) for s, e, whole in out if whole or _strip(text, s, e)]


def fragment_spans(text: str, start: int, end: int, max_line_chars: int = 20000,
                   abbreviations: Abbreviations | None = None) -> list[tuple[int, int]]:
    """Rule-based fragments of text[start:end]: stripped (start, end) pairs in order; no fragment ends
    at an abbreviation (`abbreviations`, default: the default config's).

    >>> t = "Okay. Let x = 3.14, e.g. pi.\\n\\n```py\\nprint(1)\\n```\\nSo $a. b$ holds."
    >>> [t[s:e] for s, e in fragment_spans(t, 0, len(t))]
    ['Okay.', 'Let x = 3.14, e.g. pi.', '```py\\nprint(1)\\n```', 'So $a. b$ holds.']
    """
    pieces: list[tuple[int, int, bool]] = []
    for s, e, whole in _line_spans(text, start, end):
        span = _strip(text, s, e)
        if span:
            for a, b in _cut_long(text, span[0], span[1], max_line_chars) if not whole else [span]:
                pieces += _split_runs(text, a, b) if not whole else [(a, b, whole)]
    abbreviations = abbreviations or default_abbreviations()
    prose = [(s, e) for s, e, whole in pieces if not whole]
    sentences = iter(_nlp().pipe(text[s:e] for s, e in prose))
    out: list[tuple[int, int]] = []
    for s, e, whole in pieces:
        if whole:
            out.append((s, e))
            continue
        doc = next(sentences)
        piece = text[s:e]  # what spaCy read (Doc.text is rebuilt from every token on each access)
        protected = [(m.start(), m.end()) for m in _INLINE.finditer(piece)]
        cuts = {sent.start_char for sent in doc.sents} | {m.start() for m in _CJK_END.finditer(piece)}
        cuts |= {m.end() for m in _MISSED_END.finditer(piece)} | {m.start() for m in _GLUED_BOLD.finditer(piece)}
        cuts = sorted({_before_openers(piece, c) for c in cuts if 0 < c < len(piece)})
        cuts = [c for c in cuts if 0 < c and not _inside(protected, c) and not abbreviations.holds(piece, c)
                and not _in_formula(piece, c) and not _at_comma(piece, c)]
        bounds = [0]
        for c in (_before_enum_marker(piece, c) for c in cuts):
            # An enumeration marker ("1.", "(b)") opening the line stays with its item.
            if c > bounds[-1] and not _MARKER.match(piece[bounds[-1]:c]):
                bounds.append(c)
        bounds.append(len(piece))
        for a, b in zip(bounds, bounds[1:]):
            span = _strip(text, s + a, s + b)
            if span:
                out.append(span)
    return out


# A markup tag alone ("</SCRATCHPAD_REASONING>", "<tool_use:email>", "<answer>"): no thought of its own
_TAG_ONLY = re.compile(r"\s*</?[A-Za-z_][\w:.-]*(?:\s[^<>]*)?/?>\s*")


def is_filler(fragment: str, cfg: Config) -> bool:
    """Whether a fragment merges into the next Thought Unit instead of making one: filler
    (`segment.filler`), fewer word characters than `segment.min_unit_chars` ("1.", "(a)"), a
    markup tag alone, or a bold title (a thought summary's "**Evaluating NBA Finals Scoring**")."""
    return (bool(cfg.filler.match(fragment)) or word_chars(fragment) < cfg.segment.min_unit_chars
            or _TAG_ONLY.fullmatch(fragment) is not None or _BOLD_TITLE.fullmatch(fragment) is not None)


def merge_fragments(text: str, frags: list[tuple[int, int]], cfg: Config) -> list[tuple[int, int]]:
    """Thought Unit spans from fragments: filler fragments merged into the following one (into the
    previous one at the end)."""
    units: list[tuple[int, int]] = []
    pending: int | None = None  # start of filler waiting for the next content fragment
    pending_end = 0
    for s, e in frags:
        if pending is not None and _special_between(text, pending_end, s):
            units.append((pending, pending_end))  # a merge never spans a chat-template token
            pending = None
        if is_filler(text[s:e], cfg):
            pending = s if pending is None else pending
            pending_end = e
            continue
        units.append((pending if pending is not None else s, e))
        pending = None
    if pending is not None:
        last_end = frags[-1][1]
        if units and not _special_between(text, units[-1][1], pending):
            units[-1] = (units[-1][0], last_end)
        else:
            units.append((pending, last_end))
    return units


def unit_spans(text: str, section: Section, cfg: Config) -> list[tuple[int, int]]:
    """Thought Unit spans of a section: fragments with filler and enumeration markers merged into
    the following fragment (into the previous one at the end of the section)."""
    seg = cfg.segment
    frags = fragment_spans(text, section.start, section.end, seg.max_line_chars, Abbreviations.of(seg))
    return merge_fragments(text, frags, cfg)


def settled_fragments(text: str, start: int, end: int, cfg: Config) -> tuple[list[tuple[int, int]], int]:
    """For a section still being written (a streamed generation, text[start:end) so far): the
    fragments that no text written after `end` can change, and the position to go on from.

    `start` is a section start or a position this function returned. Fragments are settled up to
    the last line break outside every code and math block (a block still open, or ending at
    `end`, may grow). Lines are split, and blocks found, the same way from such a break as from the
    section start, so the fragments are those `fragment_spans` gives for the whole section;
    `merge_fragments` makes units of them once a fragment that is not filler follows the filler.

    >>> from thinkprobe.config import Config
    >>> t = "Let x be 2.\\nOkay.\\n```py\\nx = 1\\n\\ny = 2"
    >>> frags, resume = settled_fragments(t, 0, len(t), Config.load())
    >>> [t[s:e] for s, e in frags], t[resume:]
    (['Let x be 2.', 'Okay.'], '```py\\nx = 1\\n\\ny = 2')
    """
    blocks = [(m.start(), m.end()) for m in _blocks(text, start, end)]
    if blocks and blocks[-1][1] == end:  # may still be open (or grow): nothing from its start on is settled
        end = blocks.pop()[0]
    cut = text.rfind("\n", start, end)
    while cut >= 0 and _inside(blocks, cut):
        cut = text.rfind("\n", start, blocks[bisect.bisect_left(blocks, (cut,)) - 1][0])
    if cut < 0:
        return [], start
    return fragment_spans(text, start, cut, cfg.segment.max_line_chars, Abbreviations.of(cfg.segment)), cut + 1


def _special_between(text: str, start: int, end: int) -> bool:
    return "<" in text[start:end] and SPECIAL_TOKEN.search(text, start, end) is not None


@numba.njit(cache=True)
def depth_scores(emb: np.ndarray, window: int) -> np.ndarray:
    """Hearst depth score at each gap between unit g and g+1 (cosine of block means). Linear in the
    number of units: each gap sums at most 2 * window rows, and the peaks on either side come from
    one pass each way (climbing from g stops where climbing from its neighbour stops)."""
    n = emb.shape[0]
    gaps = n - 1
    sims = np.zeros(gaps)
    for g in range(gaps):
        lo, hi = max(0, g - window + 1), min(n, g + 1 + window)
        left = emb[lo : g + 1].sum(axis=0)
        right = emb[g + 1 : hi].sum(axis=0)
        denom = np.sqrt((left * left).sum() * (right * right).sum())
        sims[g] = (left * right).sum() / denom if denom > 0 else 0.0
    left_peak = sims.copy()  # highest point reached climbing left from g while it does not fall
    for g in range(1, gaps):
        if sims[g - 1] >= sims[g]:
            left_peak[g] = left_peak[g - 1]
    right_peak = sims.copy()
    for g in range(gaps - 2, -1, -1):
        if sims[g + 1] >= sims[g]:
            right_peak[g] = right_peak[g + 1]
    depth = np.zeros(gaps)
    for g in range(gaps):
        depth[g] = (left_peak[g] - sims[g]) + (right_peak[g] - sims[g])
    return depth


def tile(emb: np.ndarray, forced: Iterable[int] = (), *, window: int = 3, min_block_units: int = 3,
         cutoff_std: float = 0.5, min_depth: float = 0.05) -> np.ndarray:
    """TextTiling: segment id per unit. A boundary before unit g+1 where the depth score of gap g
    exceeds mean + cutoff_std * std (and min_depth), deepest first, min_block_units apart.
    `forced` holds unit indices that always start a block (section changes, headers).

    >>> e = np.array([[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1]], dtype=np.float32)
    >>> tile(e).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    n = emb.shape[0]
    starts = {i for i in forced if 0 < i < n}
    if n >= 2 * min_block_units:
        depth = depth_scores(np.ascontiguousarray(emb, dtype=np.float64), window)
        cutoff = max(min_depth, depth.mean() + cutoff_std * depth.std())
        taken = sorted(starts)  # kept sorted: a new boundary only needs its two neighbours checked
        for g in np.argsort(-depth, kind="stable"):
            if depth[g] <= cutoff:
                break
            b = int(g) + 1
            if b < min_block_units or n - b < min_block_units:
                continue
            k = bisect.bisect_left(taken, b)
            if (k == 0 or b - taken[k - 1] >= min_block_units) and (k == len(taken) or taken[k] - b >= min_block_units):
                taken.insert(k, b)
        starts.update(taken)
    first = np.zeros(n, dtype=np.int32)
    first[sorted(starts)] = 1
    return np.cumsum(first, dtype=np.int32)


def says(text: str) -> tuple[str, ...]:
    """What a unit says, for telling repeats: its words and signs in order, case and sentence punctuation aside.

    >>> says("Wait, let me check: x = 2."), says("( ; stack: ( (")
    (('wait', 'let', 'me', 'check', 'x', '=', '2'), ('(', 'stack', '(', '('))
    """
    return tuple(_SAYS.findall(text.lower()))


LOOP_MAX_PERIOD = 50  # the longest block of units whose copies in a row make a repetition loop


def longest_repeat(texts: Iterable[str], max_period: int = LOOP_MAX_PERIOD) -> tuple[int, int, str]:
    """(copies, period, text): the most copies in a row of one text or of a block of up to `max_period`
    texts (its `period`), the same words and signs in the same order (case and sentence punctuation aside:
    `says`), and the block's
    first text; (1, 1, text) where nothing repeats, (0, 0, '') for no text with words. A long one is a
    repetition loop (accounting.LOOP_MIN, limits.max_repeat): gpt-4o's traces in Venhoff et al. repeat
    a block of 3, 18 or 28 sentences hundreds of times.

    >>> longest_repeat(["So x = 2."] + ["Wait, no."] * 12 + ["So x = 3."])
    (12, 1, 'Wait, no.')
    >>> longest_repeat(["Hmm."] + ["Let me see.", "Check a.", "Check b."] * 10 + ["Let me see."])
    (10, 3, 'Let me see.')
    >>> longest_repeat(["( ; stack: (", "( ; stack: ( (", "< ; stack: ( ( <", "wait, no", "Wait... no!"])
    (2, 1, 'wait, no')
    """
    texts = list(texts)
    ids: dict[tuple[str, ...], int] = {}
    codes = np.array([ids.setdefault(words, len(ids)) if (words := says(t)) else -1 - k
                      for k, t in enumerate(texts)], dtype=np.int64)  # a text without words repeats nothing
    first = np.flatnonzero(codes >= 0)
    best = (1, 1, texts[first[0]].strip()) if len(first) else (0, 0, "")
    for p in range(1, min(max_period, len(texts) - 1) + 1):
        same = np.concatenate(([0], (codes[p:] == codes[:-p]).astype(np.int8), [0]))
        change = np.flatnonzero(np.diff(same))  # runs of units equal to the one p before: [start, end) pairs
        if not len(change):
            continue
        starts, lengths = change[::2], change[1::2] - change[::2]
        j = int(np.argmax(lengths))
        if (copies := int(lengths[j]) // p + 1) > best[0]:
            best = (copies, p, texts[int(starts[j])].strip())  # the run's first unit repeats the one p before it
    return best
