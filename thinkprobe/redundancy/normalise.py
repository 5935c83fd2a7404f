"""Answer normalisation: canonical text of an answer (LaTeX wrappers, delimiters, markdown, units,
separators removed) and its numeric value (fractions, roots, pi; parsed, never eval'ed), which
`matching.answers_match` compares.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

__all__ = ["normalise", "to_number", "BOXED", "FACTORIAL_EXPR", "MARKDOWN", "NUMBER", "SPECIAL_TOKEN"]

# Shared with extraction: markup that never belongs to an answer's value.
BOXED = re.compile(r"\\(?:boxed|fbox)\s*")
MARKDOWN = re.compile(r"\*\*|__")
# (a denominator in thousands too: "4/2,598,960", not "4/2")
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?)?%?|-?\.\d+")
SPECIAL_TOKEN = re.compile(r"<\|[^|]{1,40}\|>|<｜[^｜]{1,40}｜>|</s>")

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
    return "" if value is None else _normalise_text(str(value))


_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
# the arrow of a chemical equation, which a key may write as "=" (not "\to": a limit's)
_REACTION_ARROW = re.compile(r"\s*(?:[→⟶⇌⇄]|\\(?:long)?rightarrow(?![a-zA-Z])|\\rightleftharpoons)\s*")


@lru_cache(maxsize=1 << 16)
def _normalise_text(s: str) -> str:
    s = s.strip()
    if "####" in s:  # GSM8K: the gold solution ends "#### 18"
        s = s.rsplit("####", 1)[1]
    s = SPECIAL_TOKEN.sub("", s)
    s = MARKDOWN.sub("", s).replace("`", "")
    s = _unbox(s)
    s = _REACTION_ARROW.sub(" = ", s)  # "H₂S + 2 KOH → K₂S + 2 H₂O" against THINK-Bench's "H2S + 2KOH = K2S + 2H2O"
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    for _ in range(3):  # nested wrappers
        s = _TEXT_WRAPPERS.sub(r" \1", s)
    s = _SPACING.sub(" ", s)
    s = _DEGREES.sub("", s)
    s = s.replace("\\%", "").replace("%", "")
    s = _DOLLARS.sub("", s)
    s = _THOUSANDS.sub("", s)
    s = _MATH_DELIMS.sub("", s.strip())
    s = s.replace("²", "^2").replace("³", "^3").translate(_SUBSCRIPTS)  # H₂O is H2O
    s = s.replace("−", "-").replace("×", "\\times ").replace("÷", "\\div ").replace("√", "\\sqrt")
    s = s.replace("∈", "\\in ").replace("∞", "\\infty ")  # "x ∈ (-∞, 3]" is "x \in (-\infty, 3]"
    s = re.sub(r"\s+", " ", s).strip().rstrip(".;:").strip()
    if not (s.endswith("!") and FACTORIAL_EXPR.search(s)):  # "2 * 5! * 5!" keeps its factorial; "5!" is 5
        s = s.rstrip(".;:!").strip()
    return s.lower()



def _unbox(text: str) -> str:
    r"""Every ``\boxed{X}`` replaced by X: ``a \boxed{\frac{1}{2}} b`` -> ``a \frac{1}{2} b``."""
    out, pos = [], 0
    for m in BOXED.finditer(text):
        if m.start() < pos:
            continue
        arg = _braced(text, m.end()) if text[m.end() : m.end() + 1] == "{" else None
        if arg is None:
            continue
        out += [text[pos : m.start()], arg[0]]
        pos = arg[1]
    return "".join(out) + text[pos:]


# ----------------------------------------------------------------------------- numbers

_NUM_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)|(sqrt|pi)|(\*\*|[-+*/()!]))")
_MAX_EXPONENT = 400
_MAX_FACTORIAL = 170  # the largest whose value is a float
# an expression with a factorial in it: an operator beside a number with "!" ("2 * 5! * 5!", "10!/(2!8!)",
# "5! = 120")
FACTORIAL_EXPR = re.compile(r"[\d)}]!\s*(?:[-+*/^(=]|\\times|\\cdot|\d)|(?:[-+*/^]|\\times|\\cdot)\s*\d+!")
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
    """Recursive-descent arithmetic over numbers, + - * / **, factorials, parentheses, sqrt and pi, with
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
        while self.peek() == ("op", "!"):  # a factorial: "2 * 5! * 5!"
            self.take()
            if base != int(base) or not 0 <= base <= _MAX_FACTORIAL:
                raise ValueError("no factorial")
            base = float(math.factorial(int(base)))
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
