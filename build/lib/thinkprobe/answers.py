"""Candidate answers of a trace and their verification against a gold answer (spec section 5).
The redundancy suite reads them: candidates give the SEP its target and the answer transitions
(DR / SV / EE / EB) their states. Rules only; code is run in a separate, limited process.

Candidate rules, strongest first; a unit gives at most one candidate:
  boxed   ``\\boxed{...}`` / ``\\fbox{...}`` with nested braces (several in one unit are joined by ", ")
  phrase  "the answer is X", "final answer: X", "Answer: X" (the last one in the unit)
  option  the same phrases, or "option / choice (B)", when the value is an option letter
  code    the final fenced code block of the trace (one candidate, at the unit that opens it)
  bold    ``**X**`` in a unit of the answer section (the answer after the reasoning)
  number  the number a conclusion (CON) unit, or the last unit of the answer section, arrives at:
          after its last "=" / "is", else its last number

A number is a weak candidate: most conclusions state intermediate results, not answers. It is kept
only when its value is one the trace puts forward as an answer (the value of a boxed / phrase /
option / bold / code candidate) or the gold answer; in a trace without any such candidate, the last
number is the final answer and the numbers equal to it are kept.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

__all__ = ["Candidate", "KIND_RANK", "find_candidates", "final_candidate", "normalise", "answers_match",
           "to_number", "run_code_tests", "code_tests_of"]


@dataclass(frozen=True)
class Candidate:
    unit: int  # Thought Unit id
    value: str  # extracted answer text (raw; compare with answers_match)
    kind: str  # boxed | phrase | option | code | bold | number


# Strength of a rule: the final answer is the last candidate of the strongest kind (see final_candidate).
KIND_RANK = {"boxed": 0, "phrase": 1, "option": 1, "code": 2, "bold": 3, "number": 4}

# ----------------------------------------------------------------------------- extraction

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*")
_PHRASE = re.compile(
    r"\b(?:the\s+)?(?:final\s+|correct\s+)?answer\s*(?:is|should be|would be|must be|will be|=|:|：)\s*:?\s*",
    re.IGNORECASE)
_OPTION_PHRASE = re.compile(r"\b(?:option|choice)\s*\(?([A-J])\)?(?![\w])")
_OPTION_VALUE = re.compile(r"^\s*\(?([A-J])\)?(?:[.:)]|\s|$)")
_ANSWER_LABEL = re.compile(r"(?:#+\s*)?(?:the\s+)?(?:final\s+)?answer(?:\s+is)?\s*[:：]?", re.IGNORECASE)
_BOLD = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_HEDGE = re.compile(r"^(?:probably|likely|maybe|perhaps|definitely|indeed|actually|simply|just|still|then|"
                    r"therefore|thus|clearly|exactly|now|here|hence|so)\b[,:]?\s*", re.IGNORECASE)
_NOT_A_VALUE = re.compile(r"^(?:not|that|going|either|no\s+(?:longer|more|different|clear|single|way)\b|none of|wrong|"
                          r"incorrect|correct\b|in\b|the same|different|unclear|unknown|what|whether|this\b|to\b)",
                          re.IGNORECASE)
_MARKDOWN = re.compile(r"\*\*|__")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?%?|-?\.\d+")
_INLINE_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_CONCLUDES = re.compile(r"(?:=|≈|\\approx|\bis\b|\bare\b|\bequals\b|\bbe\b|\bgives\b|\bget\b)", re.IGNORECASE)
_ABBREVIATION = re.compile(r"(?:^|\W)(?:St|Dr|Mr|Mrs|Ms|Jr|Sr|Mt|Ft|vs|No)$")
_INITIAL = re.compile(r"[\w.]\s+[A-Z]$")  # "John B. Mortimer", "A. J. Hinch": a name initial, not an end
_SPECIAL_TOKEN = re.compile(r"<\|[^|]{1,40}\|>|<｜[^｜]{1,40}｜>|</s>")
_MAX_PHRASE_WORDS = 12
_MAX_VALUE_CHARS = 120


def boxed_values(text: str) -> list[str]:
    r"""Contents of every ``\boxed{...}`` in text, nested braces included.

    >>> boxed_values(r"so \boxed{\frac{1}{2}} and \boxed 7.")
    ['\\frac{1}{2}', '7']
    """
    out = []
    for m in _BOXED.finditer(text):
        i = m.end()
        if i < len(text) and text[i] == "{":
            depth, j = 0, i
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            if depth == 0:
                out.append(text[i + 1 : j].strip())
        else:
            token = re.match(r"[^\s$.,;]+", text[i:])
            if token:
                out.append(token.group(0))
    return [v for v in out if v]


def _unbox(text: str) -> str:
    r"""Every ``\boxed{X}`` replaced by X: ``a \boxed{\frac{1}{2}} b`` -> ``a \frac{1}{2} b``."""
    out, pos = [], 0
    for m in _BOXED.finditer(text):
        if m.start() < pos:
            continue
        arg = _braced(text, m.end()) if text[m.end() : m.end() + 1] == "{" else None
        if arg is None:
            continue
        out += [text[pos : m.start()], arg[0]]
        pos = arg[1]
    return "".join(out) + text[pos:]


def _cut_value(text: str) -> str:
    """The answer value at the start of text: up to the end of the sentence, outside of math."""
    text = text.lstrip()
    out, in_math, i = [], False, 0
    while i < len(text) and i < _MAX_VALUE_CHARS:
        ch = text[i]
        if ch == "$":
            in_math = not in_math
        elif text.startswith("\\(", i) or text.startswith("\\[", i):
            in_math = True
        elif text.startswith("\\)", i) or text.startswith("\\]", i):
            in_math = False
        elif not in_math:
            if ch in "\n!?":
                break
            if ch == "." and not (i > 0 and text[i - 1].isdigit() and text[i + 1 : i + 2].isdigit()) \
                    and not _ABBREVIATION.search(text[max(0, i - 4) : i]) \
                    and not (_INITIAL.search(text[max(0, i - 3) : i]) and re.match(r"\s?[A-Z][a-z.]", text[i + 1 : i + 4])) \
                    and not (re.fullmatch(r"[A-Z]", text[:i]) and re.match(r"\s?[A-Z]\.", text[i + 1 : i + 4])):
                break
            if re.match(r"\s+(?:because|since|which|but|so that|as)\b", text[i:]):
                break
        out.append(ch)
        i += 1
    return "".join(out).strip().strip("*").rstrip(",;:").strip()


def _phrase_value(text: str) -> tuple[str, str] | None:
    plain = _MARKDOWN.sub("", text)
    matches = list(_PHRASE.finditer(plain))
    for m in reversed(matches):
        value = _cut_value(plain[m.end():])
        while _HEDGE.match(value):
            value = _HEDGE.sub("", value, count=1)
        if len(value.split()) > _MAX_PHRASE_WORDS:  # "Yes, Winnie Ewing was alive when ..." -> "Yes"
            value = re.split(r",\s|\s[-–—]\s|\s\(", value, maxsplit=1)[0].strip()
        if not value or _NOT_A_VALUE.match(value) or len(value.split()) > _MAX_PHRASE_WORDS:
            continue
        letter = _OPTION_VALUE.match(value)
        if letter and (len(value.strip()) <= 3 or value.strip().startswith("(")):
            return letter.group(1), "option"
        return value, "phrase"
    m = None
    for m in _OPTION_PHRASE.finditer(plain):
        pass
    return (m.group(1), "option") if m else None


def _bold_value(text: str) -> str | None:
    values = [v.strip() for v in _BOLD.findall(text)]
    for v in reversed(values):
        words = v.lower()
        if v.endswith(":") or re.search(r"\b(?:answer|step|solution|final|conclusion|verification)\b", words) and not re.search(r"\d", v):
            continue
        if len(v.split()) <= _MAX_PHRASE_WORDS:
            return v
    return None


def conclusion_number(text: str) -> str | None:
    r"""The value a conclusion arrives at: the math or number after its last "=" / "is", else its
    last number.

    >>> conclusion_number("So $r = A/P = 24/24 = 1$.")
    '1'
    >>> conclusion_number("So the average speed is $240/4.5$ km/h.")
    '240/4.5'
    >>> conclusion_number("Thus, Chris is 10 years old now.")
    '10'
    """
    plain = _MARKDOWN.sub("", text)
    maths = [(m.start(), m.end(), next(g for g in m.groups() if g is not None)) for m in _INLINE_MATH.finditer(plain)]
    # An "=" inside the last math span wins: the right-hand side is the value.
    if maths:
        start, end, body = maths[-1]
        if "=" in body or "\\approx" in body or "≈" in body:
            rhs = re.split(r"=|\\approx|≈", body)[-1].strip()
            if rhs and _NUMBER.search(rhs):
                return rhs
    marks = list(_CONCLUDES.finditer(plain))
    if marks:
        tail = plain[marks[-1].end():]
        for start, end, body in maths:
            if start >= marks[-1].end() and not tail[: start - marks[-1].end()].strip(" $\\(:"):
                if _NUMBER.search(body):
                    return re.split(r"=|\\approx|≈", body)[-1].strip()
        m = _NUMBER.search(tail)
        if m:
            return m.group(0).strip()
    numbers = _NUMBER.findall(plain)
    return numbers[-1].strip() if numbers else None


def _unit_candidate(text: str, *, in_answer: bool, conclusion: bool) -> tuple[str, str] | None:
    text = _SPECIAL_TOKEN.sub("", text)
    boxed = boxed_values(text)
    if boxed:
        return ", ".join(boxed), "boxed"
    phrase = _phrase_value(text)
    if phrase:
        return phrase
    if in_answer:
        bold = _bold_value(text)
        if bold:
            return bold, "bold"
    if conclusion:
        number = conclusion_number(text)
        if number:
            return number, "number"
    return None


def _final_code_block(units: Sequence[dict]) -> tuple[int, str] | None:
    """The last fenced code block of the trace and the unit that opens it. Units are joined with
    newlines, so a block the segmenter split across units is still found whole."""
    joined, starts = [], []
    pos = 0
    for u in units:
        starts.append(pos)
        joined.append(u["text"])
        pos += len(u["text"]) + 1
    text = "\n".join(joined)
    blocks = list(_FENCE.finditer(text))
    if not blocks:
        return None
    block = blocks[-1]
    k = max(i for i, s in enumerate(starts) if s <= block.start())
    return int(units[k]["id"]), block.group(1)


def find_candidates(record: dict) -> list[Candidate]:
    r"""Candidate answers of a graph record (the dict written to graphs.jsonl), in unit order.

    >>> rec = {"units": [
    ...     {"id": 0, "section": "reasoning", "type": "RSN", "text": "Maybe the answer is 12."},
    ...     {"id": 1, "section": "reasoning", "type": "CON", "text": "So the speed is 14."},
    ...     {"id": 2, "section": "reasoning", "type": "CON", "text": "So x = 3.5."},
    ...     {"id": 3, "section": "answer", "type": "RSN", "text": r"Final: $\boxed{\frac{7}{2}}$"}]}
    >>> [(c.unit, c.value, c.kind) for c in find_candidates(rec)]
    [(0, '12', 'phrase'), (2, '3.5', 'number'), (3, '\\frac{7}{2}', 'boxed')]
    """
    units = sorted(record.get("units") or [], key=lambda u: u["id"])
    if not units:
        return []
    answer_ids = [u["id"] for u in units if u.get("section") == "answer"]
    last_answer = answer_ids[-1] if answer_ids else None
    code = _final_code_block(units)
    out = []
    label_before = False  # the previous unit was a bare "Answer:" label
    for u in units:
        found = _unit_candidate(u["text"], in_answer=u.get("section") == "answer",
                                conclusion=u.get("type") == "CON" or u["id"] == last_answer)
        if label_before and (found is None or found[1] == "number"):
            value = _cut_value(_MARKDOWN.sub("", _SPECIAL_TOKEN.sub("", u["text"])))
            if value and len(value.split()) <= _MAX_PHRASE_WORDS:
                found = (value, "phrase")
        label_before = bool(_ANSWER_LABEL.fullmatch(_MARKDOWN.sub("", u["text"]).strip()))
        if code and code[0] == u["id"] and (found is None or KIND_RANK[found[1]] > KIND_RANK["code"]):
            found = (code[1], "code")
        if found:
            out.append(Candidate(int(u["id"]), found[0], found[1]))
    return _keep_answer_numbers(out, record.get("gold_answer"))


def _keep_answer_numbers(candidates: list[Candidate], gold: Any) -> list[Candidate]:
    """Drop number candidates whose value is never put forward as an answer (module docstring)."""
    weak = [c for c in candidates if c.kind == "number"]
    if not weak:
        return candidates
    answers = list(dict.fromkeys(c.value for c in candidates if c.kind != "number"))
    if gold is not None and str(gold).strip():
        answers.append(str(gold))
    if not any(c.kind != "number" for c in candidates):
        answers.append(weak[-1].value)
    keep = {id(c) for c in weak if any(answers_match(c.value, a) for a in answers)}
    return [c for c in candidates if c.kind != "number" or id(c) in keep]


def final_candidate(candidates: Sequence[Candidate], record: dict) -> Candidate | None:
    """The trace's final answer: among the candidates of the last section that has any (the answer
    section when it states one), the last one of the strongest kind. Records with code tests take
    their final code block."""
    if not candidates:
        return None
    if code_tests_of(record) is not None:
        code = [c for c in candidates if c.kind == "code"]
        if code:
            return code[-1]
    section = {u["id"]: u.get("section", "reasoning") for u in record.get("units") or []}
    last_section = section.get(candidates[-1].unit, "reasoning")
    pool = [c for c in candidates if section.get(c.unit, "reasoning") == last_section]
    best = min(KIND_RANK[c.kind] for c in pool)
    return [c for c in pool if KIND_RANK[c.kind] == best][-1]


def code_tests_of(record: dict) -> Any:
    """The code tests a record carries (keys tests / test_cases / test), or None."""
    for key in ("tests", "test_cases", "test"):
        if record.get(key):
            return record[key]
    return None


# ----------------------------------------------------------------------------- normalisation

_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|textrm|texttt|mathrm|mathbf|mathit|mbox|operatorname|emph)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\[,;:!]|\\quad|\\qquad|\\ |~|\\displaystyle|\\left|\\right|\\big|\\Big")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\circ|\\degree")
_THOUSANDS = re.compile(r"(?<=\d)(?:\{,\}|,)(?=\d{3}(?!\d))")
_DOLLARS = re.compile(r"\\\$|\$")
_MATH_DELIMS = re.compile(r"^\\\(|\\\)$|^\\\[|\\\]$")


def normalise(value: Any) -> str:
    r"""Canonical text of an answer: LaTeX wrappers, math delimiters, markdown, degree and percent
    signs, currency and thousands separators removed; lower case; single spaces.

    >>> normalise(r"$\$20{,}000$")
    '20000'
    >>> normalise(r"\text{(B)}")
    '(b)'
    >>> normalise(r"\boxed{\dfrac{3}{4}}\,\text{ cm}.")
    '\\frac{3}{4} cm'
    """
    if value is None:
        return ""
    s = str(value).strip()
    if "####" in s:  # GSM8K: the gold solution ends "#### 18"
        s = s.rsplit("####", 1)[1]
    s = _SPECIAL_TOKEN.sub("", s)
    s = _MARKDOWN.sub("", s).replace("`", "")
    s = _unbox(s)
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    for _ in range(3):  # nested wrappers
        s = _TEXT_WRAPPERS.sub(r" \1", s)
    s = _SPACING.sub(" ", s)
    s = _DEGREES.sub("", s)
    s = s.replace("\\%", "").replace("%", "")
    s = _DOLLARS.sub("", s)
    s = _THOUSANDS.sub("", s)
    s = _MATH_DELIMS.sub("", s.strip())
    s = s.replace("²", "^2").replace("³", "^3")
    s = s.replace("−", "-").replace("×", "\\times ").replace("÷", "\\div ").replace("√", "\\sqrt")
    s = re.sub(r"\s+", " ", s).strip().rstrip(".;:!").strip()
    return s.lower()


# ----------------------------------------------------------------------------- numbers

_NUM_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)|(sqrt|pi)|(\*\*|[-+*/()]))")
_MAX_EXPONENT = 400
_NUMBER_WORDS = {w: k for k, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


def _braced(s: str, i: int) -> tuple[str, int] | None:
    """The argument of a LaTeX command at s[i:]: a {group} or a single character; (text, end)."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return None
    if s[i] != "{":
        return s[i], i + 1
    depth = 0
    for j in range(i, len(s)):
        depth += {"{": 1, "}": -1}.get(s[j], 0)
        if depth == 0:
            return s[i + 1 : j], j + 1
    return None


def _latex_to_expr(s: str) -> str | None:
    """A LaTeX number expression as plain arithmetic (``\\frac{a}{b}`` -> ``((a)/(b))``)."""
    out, i = [], 0
    while i < len(s):
        if s.startswith("\\frac", i):
            a = _braced(s, i + 5)
            b = _braced(s, a[1]) if a else None
            if not b:
                return None
            ea, eb = _latex_to_expr(a[0]), _latex_to_expr(b[0])
            if ea is None or eb is None:
                return None
            out.append(f"(({ea})/({eb}))")
            i = b[1]
        elif s.startswith("\\sqrt", i):
            j, root = i + 5, None
            if s[j : j + 1] == "[":
                k = s.find("]", j)
                if k < 0:
                    return None
                root, j = _latex_to_expr(s[j + 1 : k]), k + 1
            a = _braced(s, j)
            if not a:
                return None
            ea = _latex_to_expr(a[0])
            if ea is None:
                return None
            out.append(f"sqrt({ea})" if root is None else f"(({ea})**(1/({root})))")
            i = a[1]
        elif s.startswith("\\pi", i):
            out.append(" pi ")
            i += 3
        elif s.startswith("\\cdot", i) or s.startswith("\\times", i):
            out.append("*")
            i += 5 if s.startswith("\\cdot", i) else 6
        elif s.startswith("\\div", i):
            out.append("/")
            i += 4
        elif s[i] == "\\":
            return None  # any other command (\infty, \in, \cup, \alpha...) is not a plain number
        elif s[i] == "^":
            out.append("**")
            i += 1
        elif s[i] in "{[":
            out.append("(")
            i += 1
        elif s[i] in "}]":
            out.append(")")
            i += 1
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


class _Parser:
    """Recursive-descent arithmetic over numbers, + - * / **, parentheses, sqrt and pi, with
    implicit multiplication ("2sqrt(3)", "3(4)"). Nothing is ever eval'ed."""

    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens, self.k = tokens, 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.k] if self.k < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.tokens[self.k]
        self.k += 1
        return tok

    def expr(self) -> float:
        value = self.term()
        while (t := self.peek()) and t[1] in "+-" and t[0] == "op":
            self.take()
            value = value + self.term() if t[1] == "+" else value - self.term()
        return value

    def term(self) -> float:
        value = self.unary()
        while (t := self.peek()) and (t[0] == "op" and t[1] in ("*", "/") or t[0] in ("num", "name") or t == ("op", "(")):
            if t[0] == "op" and t[1] in ("*", "/"):
                self.take()
                rhs = self.unary()
                value = value * rhs if t[1] == "*" else value / rhs
            else:  # implicit multiplication
                value = value * self.power()
        return value

    def unary(self) -> float:
        t = self.peek()
        if t and t[0] == "op" and t[1] in "+-":
            self.take()
            v = self.unary()
            return -v if t[1] == "-" else v
        return self.power()

    def power(self) -> float:
        base = self.atom()
        t = self.peek()
        if t == ("op", "**"):
            self.take()
            exponent = self.unary()
            if abs(exponent) > _MAX_EXPONENT or abs(base) > 1e100:
                raise ValueError("exponent too large")
            return base ** exponent
        return base

    def atom(self) -> float:
        kind, text = self.take()
        if kind == "num":
            return float(text)
        if kind == "name" and text == "pi":
            return math.pi
        if kind == "name" and text == "sqrt":
            arg = self.atom()
            return math.sqrt(arg)
        if (kind, text) == ("op", "("):
            value = self.expr()
            if self.take() != ("op", ")"):
                raise ValueError("unbalanced")
            return value
        raise ValueError(f"unexpected {text!r}")


def to_number(value: Any) -> float | None:
    r"""The value of a numeric answer (fractions, mixed numbers, roots, pi, percent), or None.

    >>> to_number(r"\frac{160}{3}") == 160 / 3, to_number(r"2\frac{1}{2}"), to_number(r"2\sqrt{4}")
    (True, 2.5, 4.0)
    >>> to_number("x + 1") is None
    True
    """
    s = normalise(value)
    s = re.sub(r"^[a-z]\w*(?:_\{?\w+\}?)?\s*=\s*", "", s)  # "x = 5"
    if s in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[s])
    if not s or len(s) > 200:
        return None
    mixed = re.fullmatch(r"(-?)(\d+)\s*\\frac\{(\d+)\}\{(\d+)\}", s)
    if mixed and int(mixed.group(4)) != 0:
        v = int(mixed.group(2)) + int(mixed.group(3)) / int(mixed.group(4))
        return -v if mixed.group(1) else v
    expr = _latex_to_expr(s)
    if expr is None:
        return None
    tokens, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = _NUM_TOKEN.match(expr, pos)
        if not m:
            return None
        num, name, op = m.groups()
        tokens.append(("num", num) if num else ("name", name) if name else ("op", op))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    if not tokens or not any(t[0] == "num" or t == ("name", "pi") for t in tokens):
        return None
    try:
        parser = _Parser(tokens)
        value = parser.expr()
        if parser.peek() is not None:
            return None
    except (ValueError, ZeroDivisionError, OverflowError, IndexError, TypeError):
        return None
    if isinstance(value, complex) or not math.isfinite(value):
        return None
    return float(value)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b)) or abs(a - b) < 1e-12


# ----------------------------------------------------------------------------- matching

_UNIT_TAIL = re.compile(r"^(?P<head>.*?[\d})a-z])\s*(?P<tail>(?<=[\d}) ])[a-z][a-z\s/^.\-23]*)$")
_SHORT_UNITS = frozenset("m cm mm km kg g mg s ms h hr hrs min l ml mph kph kmh ft in yd mi lb lbs oz sq cu rs usd".split())
_ARTICLES = re.compile(r"\b(?:the|a|an)\b")
_MAX_CONTAINING_WORDS = 15
_LIST_MARK = re.compile(r"[,;]|\band\b|\bor\b|&")
_ALTERNATIVES = re.compile(r";|\bor\b|/")
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|none|isn't|aren't|wasn't|weren't)\b")
_PRED_SEPARATORS = re.compile(r"\s*(?:,\s|≈|\\approx|\bapprox(?:imately)?\b|\babout\b|\(\s*(?:about|approx|≈))")


def _squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


def _strip_unit(s: str) -> str | None:
    """'53 km/h' -> '53', '10 dollars' -> '10'; None when there is no unit-like tail."""
    m = _UNIT_TAIL.match(s)
    if not m or to_number(m.group("head")) is None:
        return None
    words = re.findall(r"[a-z]+", m.group("tail"))
    if words and all(len(w) >= 3 or w in _SHORT_UNITS for w in words):
        return m.group("head").strip()
    return None


def _option_letter(s: str, loose: bool = False) -> str | None:
    m = re.fullmatch(r"\(?([a-j])\)?", s.strip())
    if m:
        return m.group(1)
    if loose:
        m = re.match(r"^(?:option\s+|choice\s+)?\(([a-j])\)|^(?:option\s+|choice\s+)?([a-j])(?:[).:]\s|$)", s.strip())
        if m:
            return m.group(1) or m.group(2)
    return None


def _split_top(s: str) -> list[str]:
    """Split at commas outside braces and parentheses."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def _as_list(s: str) -> tuple[list[str], bool] | None:
    """Elements of a set / tuple / list answer and whether their order matters; None if scalar."""
    t = s.strip()
    ordered = False
    if t.startswith("\\{") and t.endswith("\\}"):
        t = t[2:-2]
    elif len(t) >= 2 and t[0] in "([" and t[-1] in ")]" and "," in t:
        ordered, t = True, t[1:-1]
    parts = _split_top(t)
    if len(parts) < 2:
        return None
    out = []
    for p in parts:  # a ± b is two answers
        if "\\pm" in p:
            out += [p.replace("\\pm", "+", 1), p.replace("\\pm", "-", 1)]
        else:
            out.append(p)
    return out, ordered


def _scalar_match(p: str, g: str, loose: bool = True) -> bool:
    """Same single answer. `loose` allows text containment (the whole prediction only, never a
    piece cut from it) and a lone number in a sentence."""
    if _squash(p) == _squash(g):
        return True
    pn, gn = to_number(p), to_number(g)
    if pn is not None and gn is not None:
        return _close(pn, gn)
    if gn is None and re.search(r"[a-z]{2}", g) and not g.startswith("\\"):
        # A text answer ("east", "Pope Innocent X"): same words, articles, accents and punctuation
        # aside, or one contained in the other as a whole run of words when the longer is a short
        # sentence ("Navin earns the most" for "Navin").
        pw, gw = _words(p), _words(g)
        if not pw or not gw:
            return False
        if pw == gw:
            return True
        if not loose:
            return False
        if len(pw) < len(gw) and _is_list_item(pw, g, _LIST_MARK):
            return False  # one item of a list answer ("Victoria" for "Victoria and Tasmania")
        if len(gw) < len(pw) and _is_list_item(gw, p, _ALTERNATIVES):
            return False  # the gold among alternatives ("Stella Rimington; Walter McDonald")
        short, long_ = (pw, gw) if len(pw) < len(gw) else (gw, pw)
        if len(long_) > _MAX_CONTAINING_WORDS or not any(w.isalpha() and len(w) > 1 for w in short):
            return False  # numbers are compared as numbers, not found inside text
        if any(long_[k : k + len(short)] == short for k in range(len(long_) - len(short) + 1)):
            return True
        # The gold's words in order inside a short sentence: "A is a knight; B and C are knaves"
        # for "A knight; B and C knaves", unless the sentence negates what the gold does not.
        if len(gw) >= 2 and len(pw) > len(gw) and not (_NEGATION.search(p) and not _NEGATION.search(g)):
            it = iter(pw)
            return all(w in it for w in gw)
        return False
    if loose and gn is not None and pn is None and len(re.findall(r"[a-z]{2,}", p)) >= 3:
        numbers = _NUMBER.findall(p)  # "He was 52 years old" for 52
        if len(numbers) == 1:
            value = to_number(numbers[0])
            return value is not None and _close(value, gn)
    return False


def _is_list_item(words: list[str], answer: str, marks: re.Pattern) -> bool:
    items = [_words(x) for x in marks.split(answer)]
    items = [x for x in items if x]
    return len(items) >= 2 and all(len(x) <= 3 for x in items) and words in items


def _words(s: str) -> list[str]:
    folded = "".join(ch for ch in unicodedata.normalize("NFKD", s) if not unicodedata.combining(ch))
    words = _ARTICLES.sub(" ", re.sub(r"[^\w\s]", " ", folded)).split()
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def _same(p: str, g: str, loose: bool = True) -> bool:
    if _scalar_match(p, g, loose):
        return True
    pl, gl = _as_list(p), _as_list(g)
    if pl and gl and len(pl[0]) == len(gl[0]):
        if pl[1] and gl[1]:
            return all(_scalar_match(a, b, False) for a, b in zip(pl[0], gl[0]))
        left = list(pl[0])
        for b in gl[0]:
            hit = next((k for k, a in enumerate(left) if _scalar_match(a, b, False)), None)
            if hit is None:
                return False
            left.pop(hit)
        return True
    return False


def _pred_variants(p: str) -> Iterable[tuple[str, bool]]:
    """Forms of a prediction to compare, and whether text containment may apply to each."""
    yield p, True
    if "=" in p:
        yield p.rsplit("=", 1)[1].strip(), False
    m = _PRED_SEPARATORS.search(p)
    head = p[: m.start()].strip() if m else ""
    # "160/3 km/h, about 53.33" keeps its head; "3, 5" is two answers, not the first one.
    if head and not (m.group(0).strip() in ",;" and not re.match(r"[a-z]{2}", p[m.end():].strip())):
        yield head, False
        if "=" in head:
            yield head.rsplit("=", 1)[1].strip(), False


def _gold_variants(g: str) -> Iterable[str]:
    yield g
    m = re.fullmatch(r"[a-z]\w*\s*=\s*(.+)", g)
    if m:
        yield m.group(1)


def answers_match(pred: Any, gold: Any) -> bool:
    r"""Whether a predicted answer equals the gold one: same normalised text, same number (relative
    tolerance 1e-6, units stripped), same option letter, or the same set / tuple of those.

    >>> answers_match(r"\dfrac{160}{3}\text{ km/h}", "160/3")
    True
    >>> answers_match("The answer is (B)", r"\text{(B)}"), answers_match("1,250", "1250.0")
    (False, True)
    >>> answers_match(r"\{-2, 1 - \sqrt{5}, 1 + \sqrt{5}\}", r"\{1\pm\sqrt{5},-2\}")
    True
    """
    if pred is None or gold is None:
        return False
    p, g = normalise(pred), normalise(gold)
    if not p or not g:
        return False
    if _squash(p) == _squash(g):
        return True
    letter = _option_letter(g)
    if letter:
        return _option_letter(p, loose=True) == letter
    for pv, loose in dict.fromkeys(_pred_variants(p)):
        for gv in dict.fromkeys(_gold_variants(g)):
            forms_p = [pv] + [x for x in [_strip_unit(pv)] if x]
            forms_g = [gv] + [x for x in [_strip_unit(gv)] if x]
            if any(_same(a, b, loose) for a in forms_p for b in forms_g):
                return True
    return False


# ----------------------------------------------------------------------------- code sandbox

_RESULT_FILE = "__thinkprobe_result.json"

# Runs inside the child interpreter: limits first, then no network, then the user code.
_HARNESS = r'''
import json, sys
def _report(passed, reason):
    with open(%(result)r, "w") as f:
        json.dump({"passed": passed, "reason": reason}, f)
try:
    import resource
    _mb = %(memory_mb)d * 1024 * 1024
    for _lim, _val in ((resource.RLIMIT_AS, (_mb, _mb)), (resource.RLIMIT_CPU, (%(cpu_s)d, %(cpu_s)d + 1)),
                       (resource.RLIMIT_FSIZE, (16 << 20, 16 << 20)), (resource.RLIMIT_CORE, (0, 0)),
                       (getattr(resource, "RLIMIT_NPROC", None), (0, 0))):
        if _lim is not None:
            try:
                resource.setrlimit(_lim, _val)
            except (ValueError, OSError):
                pass
except ImportError:
    pass
import socket
def _no_network(*args, **kwargs):
    raise OSError("network access is disabled in the ThinkProbe sandbox")
socket.socket = _no_network
socket.create_connection = _no_network
socket.socketpair = _no_network
socket.getaddrinfo = _no_network
socket.gethostbyname = _no_network
import os, subprocess
def _no_processes(*args, **kwargs):
    raise OSError("starting processes is disabled in the ThinkProbe sandbox")
for _name in ("system", "popen", "fork", "forkpty", "execv", "execve", "execvp", "execvpe", "execl", "execle",
              "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp"):
    if hasattr(os, _name):
        setattr(os, _name, _no_processes)
subprocess.Popen = _no_processes
import io
def _run(src, name, stdin_text=None):
    g = {"__name__": "__main__" if stdin_text is not None else "solution", "__builtins__": __builtins__}
    old_in, old_out = sys.stdin, sys.stdout
    if stdin_text is not None:
        sys.stdin, sys.stdout = io.StringIO(stdin_text), io.StringIO()
    try:
        try:
            exec(compile(src, name, "exec"), g)
        except SystemExit:
            pass
        return g, (sys.stdout.getvalue() if stdin_text is not None else None)
    finally:
        sys.stdin, sys.stdout = old_in, old_out
def _main():
    src = open("solution.py", encoding="utf-8").read()
    spec = json.load(open("tests.json", encoding="utf-8"))
    if spec["mode"] == "asserts":
        g, _ = _run(src, "solution.py")
        for k, test in enumerate(spec["tests"]):
            try:
                exec(compile(test, "test_%%d" %% k, "exec"), g)
            except AssertionError:
                return False, "test %%d failed" %% k
    else:
        for k, case in enumerate(spec["tests"]):
            _, out = _run(src, "solution.py", case["input"])
            if out.split() != str(case["output"]).split():
                return False, "test %%d: wrong output" %% k
    return True, "all %%d tests passed" %% len(spec["tests"])
try:
    _report(*_main())
except MemoryError:
    _report(False, "memory limit exceeded")
except RecursionError:
    _report(False, "recursion limit exceeded")
except BaseException as exc:
    _report(False, "error: %%s: %%s" %% (type(exc).__name__, str(exc)[:200]))
'''


def _test_spec(tests: Any) -> dict | None:
    """Tests as {"mode": "asserts" | "io", "tests": [...]}: assert code (a string or a list of
    strings), stdin/stdout cases (a list of {"input", "output"}) or APPS-style {"inputs", "outputs"}."""
    if isinstance(tests, str):
        return {"mode": "asserts", "tests": [tests]} if tests.strip() else None
    if isinstance(tests, dict) and "inputs" in tests and "outputs" in tests:
        cases = [{"input": i if isinstance(i, str) else "\n".join(map(str, i)), "output": o if isinstance(o, str) else "\n".join(map(str, o))}
                 for i, o in zip(tests["inputs"], tests["outputs"])]
        return {"mode": "io", "tests": cases} if cases else None
    if isinstance(tests, (list, tuple)) and tests:
        if all(isinstance(t, str) for t in tests):
            return {"mode": "asserts", "tests": list(tests)}
        if all(isinstance(t, dict) and "input" in t and "output" in t for t in tests):
            return {"mode": "io", "tests": [{"input": str(t["input"]), "output": str(t["output"])} for t in tests]}
    return None


def run_code_tests(code: str, tests: Any, timeout_s: float = 5, memory_mb: int = 512) -> tuple[bool | None, str]:
    """Run extracted code against tests in a separate ``python -I`` process, in a fresh temporary
    folder, with address-space, CPU-time, file-size and process limits and no network.

    Returns (passed, reason): True / False with why; None when there is nothing to run (no code,
    tests in an unknown form) or the sandbox itself could not start. A timeout, a memory blow-up or
    a crash of the child is a failed test, never an exception here.

    The limits are set by the child itself before it reads the user code, not by a ``preexec_fn``:
    a ``preexec_fn`` may deadlock when the parent runs threads (torch, tokenizers), as the profiler does.
    """
    if not code or not code.strip():
        return None, "no code"
    spec = _test_spec(tests)
    if spec is None:
        return None, "no usable tests"
    cpu_s = max(1, int(math.ceil(timeout_s)))
    with tempfile.TemporaryDirectory(prefix="thinkprobe-sandbox-") as tmp:
        work = Path(tmp)
        (work / "solution.py").write_text(code, encoding="utf-8")
        (work / "tests.json").write_text(json.dumps(spec), encoding="utf-8")
        (work / "harness.py").write_text(_HARNESS % {"result": _RESULT_FILE, "memory_mb": int(memory_mb), "cpu_s": cpu_s},
                                         encoding="utf-8")
        env = {"PATH": os.defpath, "HOME": tmp, "TMPDIR": tmp, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
               "LANG": "C.UTF-8"}
        try:
            proc = subprocess.Popen([sys.executable, "-I", "harness.py"], cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            return None, f"sandbox did not start: {exc}"
        try:
            _, err = proc.communicate(timeout=timeout_s + 1.0)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return False, f"timeout after {timeout_s:g} s"
        finally:
            _kill_group(proc)
        result = work / _RESULT_FILE
        if result.exists():
            try:
                data = json.loads(result.read_text(encoding="utf-8"))
                return bool(data["passed"]), str(data["reason"])
            except (ValueError, KeyError):
                pass
        if proc.returncode is not None and proc.returncode < 0:
            import signal

            sig = -proc.returncode
            if sig == getattr(signal, "SIGXCPU", -1) or sig == signal.SIGKILL:
                return False, f"timeout: CPU limit of {cpu_s} s"
            return False, f"killed by signal {sig}"
        tail = (err or b"").decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        if "MemoryError" in tail[0]:
            return False, "memory limit exceeded"
        return False, f"no result (exit code {proc.returncode}) {tail[0][:200]}".strip()


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        import signal

        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()
