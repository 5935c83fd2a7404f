"""Answer matching: whether a predicted answer equals the gold one (`answers_match`), on the
normalised texts and numbers of `normalise`; the verdicts of the redundancy suite rest on it.
"""
from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from functools import lru_cache
from typing import Any, Iterable

from .normalise import NUMBER, normalise, to_number

__all__ = ["answers_match", "is_expression"]


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b)) or abs(a - b) < 1e-12


_UNIT_TAIL = re.compile(r"^(?P<head>.*?[\d})a-z])\s*(?P<tail>(?<=[\d}) ])[a-z][a-z\s/^.\-23]*)$")
_SHORT_UNITS = frozenset("m cm mm km kg g mg s ms h hr hrs min l ml mph kph kmh ft in yd mi lb lbs oz sq cu rs usd "
                           "kb mb gb tb kw mw kj pa hz kcal mol".split())
_ARTICLES = re.compile(r"\b(?:the|a|an)\b")
_MAX_CONTAINING_WORDS = 15
_LIST_MARK = re.compile(r"[,;]|\band\b|\bor\b|&")
_ALTERNATIVES = re.compile(r";|\bor\b|/")
_QUALIFIED = re.compile(r"(?!.*\b(?:and|or)\b)[^,;&/()\[\]{}\\^_=+*<>]+,[^,;&/()\[\]{}\\^_=+*<>]+")  # two parts, one comma
_NOTE = re.compile(r"([^()]*\w)\s+\([^()\\^_=+*]*[a-z]{2}[^()\\^_=+*]*\)")  # "6 (boston)": a note after the answer
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|none|isn't|aren't|wasn't|weren't)\b")
_PRED_SEPARATORS = re.compile(r"\s*(?:,\s|≈|\\approx|\bapprox(?:imately)?\b|\babout\b|\(\s*(?:about|approx|≈))")


def _squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


def _unit_of(s: str) -> str:
    """The unit tail of a value ('53 km/h' -> 'km/h'), spaces dropped; '' without one."""
    m = _UNIT_TAIL.match(s)
    return re.sub(r"\s+", "", m.group("tail")) if m and _strip_unit(s) else ""


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
        # "(b) 115", "option b", "b: 115", THINK-Bench's "b:115.130", "correct choice: a"
        m = re.match(r"^(?:(?:correct\s+)?(?:option|choice)\s*:?\s*)?(?:\(([a-j])\)|([a-j])(?:[).]\s|:|$))", s.strip())
        if m:
            return m.group(1) or m.group(2)
    return None


_OPTION = r"(?:\([a-j]\)|[a-j])"  # "c" or "(c)", never "(a, b)": a pair is no list of options
_LETTER_LIST = re.compile(rf"{_OPTION}(?:(?:\s*(?:[,;&、]|\band\b)\s*|\s+){_OPTION})+")
_KEY = re.compile(r"[A-J]{2,10}|\(?[A-J]\)?(?:(?:\s*[,;&]\s*|\s+and\s+|\s+)\(?[A-J]\)?)+")  # as keys are written


def _option_set(s: str, key: bool = True) -> frozenset[str] | None:
    """The options of a multiple-answer key or choice: "ac", "a, c", "a and c", "(a) and (c)" ->
    {a, c}; None for anything else. Written together ("ac"), the letters must be distinct, and in a
    `key` in order, as answer keys write them (so a gold "bad" or "cab" stays a word)."""
    s = re.sub(r"^(?:the\s+)?(?:correct\s+)?(?:options?|choices?|answers?)\s*(?:are|is)?\s*:?\s*", "", s.strip())
    if re.fullmatch(r"[a-j]{2,10}", s):
        return frozenset(s) if len(set(s)) == len(s) and (not key or list(s) == sorted(s)) else None
    if _LETTER_LIST.fullmatch(s):
        letters = re.findall(r"(?<![a-z])[a-j](?![a-z])", s)
        return frozenset(letters) if len(set(letters)) == len(letters) > 1 else None
    return None


def _key_options(gold: str) -> frozenset[str] | None:
    """The options of a gold answer that is a multiple-answer key as keys are written: capital
    letters A-J, together and in order ("AC") or listed ("A, C"); a word or symbol ("Cd", "be",
    "ace") is no key."""
    raw = gold.strip()
    return _option_set(normalise(raw)) if _KEY.fullmatch(raw) else None


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


def _alternative_forms(g: str) -> list[str] | None:
    """The items of a gold that lists one number in several written forms (SAT's student-produced
    answers: ".2, 1/5", ".3833, 23/60"): a fraction and decimals equal to it, or, with three or more
    decimals, its truncation or rounding; else None. A set of values ("-2, 3") is not such a list."""
    parsed = _as_list(g)
    if not parsed or parsed[1]:
        return None
    items = parsed[0]
    exact = [to_number(x) for x in items if "/" in x or "\\frac" in x]
    if not exact or any(v is None for v in exact) or any(not _close(v, exact[0]) for v in exact):
        return None
    for x in items:
        value = to_number(x)
        if value is None:
            return None
        if _close(value, exact[0]):
            continue
        m = re.fullmatch(r"-?\d*\.(\d{3,})", x.strip())
        if not m or abs(value - exact[0]) >= 10.0 ** -len(m.group(1)):
            return None
    return items


def _scalar_match(p: str, g: str, loose: bool = True) -> bool:
    """Same single answer. `loose` allows text containment (the whole prediction only, never a
    piece cut from it) and a lone number in a sentence."""
    if _squash(p) == _squash(g):
        return True
    pn, gn = to_number(p), to_number(g)
    if pn is not None and gn is not None:
        return _close(pn, gn)
    if loose and (pn is None) != (gn is None) and (_sentence_number(p, gn) if pn is None else _sentence_number(g, pn)):
        return True  # "He was 52 years old" for 52; 52 for the gold "The painter was 52." (FRAMES' are sentences)
    if gn is None and re.search(r"[a-z]{2}", g) and not g.startswith("\\"):
        # A text answer ("east", "Pope Innocent X"): same words, articles, accents and punctuation
        # aside, or one contained in the other as a whole run of words when the longer is a short
        # sentence ("Navin earns the most" for "Navin").
        pw, gw = _words(p), _words(g)
        if not pw or not gw:
            return False
        if pw == gw:
            return True
        pc = _conjunction(p)
        if pc and pc == _conjunction(g):  # the same items in another order ("Tasmania and Victoria")
            return True
        if not loose:
            return False
        named = all(len(w) > 1 and w.isalpha() for w in pw)
        if named and _QUALIFIED.fullmatch(g) and pw == _words(g.split(",")[0]):
            return True  # the name a gold qualifies: "Omaha, Nebraska", "Edward Heath, 1970" (not "sin x, cos x")
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
    return False


def _sentence_number(sentence: str, value: float) -> bool:
    """Whether `sentence` (three words or more) states one number, and that is `value`: an answer given in
    a sentence, or a gold answer written as one ("She was 51 years old."; never "April 2, 1961" for 1961)."""
    numbers = NUMBER.findall(sentence) if len(re.findall(r"[a-z]{2,}", sentence)) >= 3 else []
    return len(numbers) == 1 and (number := to_number(numbers[0])) is not None and _close(number, value)


_CONJUNCTION = re.compile(r"[,;&]|\band\b")


def _conjunction(answer: str) -> list[tuple[str, ...]] | None:
    """The items of a short list answer joined by commas or "and", sorted; None unless 2+ items of at
    most three words each."""
    items = [tuple(_words(x)) for x in _CONJUNCTION.split(answer)]
    items = [x for x in items if x]
    return sorted(items) if len(items) >= 2 and all(len(x) <= 3 for x in items) else None


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


_BASE_NUMERAL = re.compile(r"([0-9a-z]+)_\{?(\d{1,2})\}?")


def _numeral_digits(s: str) -> str | None:
    """The digits of a numeral written with its base ("2516_8", "10110_{2}", "ab_{16}"), or None: the
    question names the base, and an answer often leaves it out.

    >>> _numeral_digits("2516_8"), _numeral_digits("10110_{2}"), _numeral_digits("x_1"), _numeral_digits("19_8")
    ('2516', '10110', None, None)
    """
    m = _BASE_NUMERAL.fullmatch(s)
    if not m or not 2 <= int(m.group(2)) <= 36:
        return None
    return m.group(1) if all(int(c, 36) < int(m.group(2)) for c in m.group(1)) else None


def _pred_variants(p: str) -> Iterable[tuple[str, bool]]:
    """Forms of a prediction to compare, and whether text containment may apply to each."""
    yield p, True
    if digits := _numeral_digits(p):
        yield digits, False
    if "=" in p:
        yield p.rsplit("=", 1)[1].strip(), False
    if m := re.fullmatch(r"[a-z]\w*\s*\\in\b\s*(.+)", p):
        yield m.group(1), False
    m = _PRED_SEPARATORS.search(p)
    head = p[: m.start()].strip() if m else ""
    # "160/3 km/h, about 53.33" keeps its head; "3, 5" is two answers, not the first one.
    if head and not (m.group(0).strip() in ",;" and not re.match(r"[a-z]{2}", p[m.end():].strip())):
        yield head, False
        if "=" in head:
            yield head.rsplit("=", 1)[1].strip(), False


def _gold_variants(g: str) -> Iterable[str]:
    yield g
    if digits := _numeral_digits(g):  # "2516_8" against "2516"
        yield digits
    if note := _NOTE.fullmatch(g):
        yield note.group(1)
    m = re.fullmatch(r"[a-z]\w*\s*(?:=|\\in\b)\s*(.+)", g)  # "x = 5"; "x \in [-2,7]", an interval
    if m:
        yield m.group(1)


_INTERVAL = re.compile(r"(?:[a-z]\w*\s*\\in\s*)?([\[(])[^\[\](),]+,[^\[\](),]+([\])])")


def _interval_ends(s: str) -> tuple[str, str] | None:
    """The brackets of an interval of two ends ("[-2, 7)", "x \\in (0, 1]"), or None."""
    m = _INTERVAL.fullmatch(s.strip())
    return (m.group(1), m.group(2)) if m else None


_SYMBOLIC = re.compile(r"\\[a-z]+|[\^_=]|[a-z]\s*[+\-*/]\s*\w|\w\s*[+\-*/]\s*[a-z]|[a-z]\(")


def is_expression(gold: Any) -> bool:
    r"""Whether a gold answer is a formula or an equation rather than a number, an option letter or a
    phrase: what matching as text may call wrong when it is written otherwise (THINK-Bench's physics
    and chemistry answers).

    >>> is_expression(r"\frac{\lambda_{e}^{n}}{n!} e^{-\lambda l}"), is_expression("2KOH + CuSO4 = K2SO4 + Cu(OH)2")
    (True, True)
    >>> is_expression(r"\frac{3}{4}"), is_expression("(B)"), is_expression("Paris"), is_expression("#### 18"), is_expression("2516_8")
    (False, False, False, False, False)
    """
    if gold is None or not str(gold).strip() or to_number(gold) is not None:
        return False
    text = normalise(gold)
    return not re.fullmatch(r"\(?[a-j]\)?", text) and not _numeral_digits(text) and bool(_SYMBOLIC.search(text))


def answers_match(pred: Any, gold: Any) -> bool:
    r"""Whether a predicted answer equals the gold one: same normalised text, same number (relative
    tolerance 1e-6, units stripped), same option letter, or the same set / tuple of those.

    >>> answers_match(r"\dfrac{160}{3}\text{ km/h}", "160/3")
    True
    >>> answers_match("The answer is (B)", r"\text{(B)}"), answers_match("1,250", "1250.0")
    (False, True)
    >>> answers_match(r"\{-2, 1 - \sqrt{5}, 1 + \sqrt{5}\}", r"\{1\pm\sqrt{5},-2\}")
    True
    >>> answers_match(r"\dfrac{23}{60}", ".3833,  23/60"), answers_match("3", "-2, 3")  # forms of one value; a set
    (True, False)
    >>> answers_match("2516", "2516_8"), answers_match("2516_{8}", "2516_8"), answers_match("2517", "2516_8")  # a base
    (True, True, False)
    >>> answers_match("[-2, 7]", r"x \in [-2,7]"), answers_match(r"x \in (0, 1]", "(0,1]")  # an interval named
    (True, True)
    >>> answers_match(r"x \in [-2,7]", "(-2, 7)"), answers_match("[0,1)", "(0,1]")  # its brackets count
    (False, False)
    >>> answers_match("H₂S + 2 KOH → K₂S + 2 H₂O", "H2S + 2KOH = K2S + 2H2O")  # a reaction's arrow, its subscripts
    True
    """
    if pred is None or gold is None:
        return False
    return _texts_match(str(pred), str(gold))


@lru_cache(maxsize=1 << 16)
def _texts_match(pred: str, gold: str) -> bool:
    """answers_match on the texts; memoised, since a long trace restates the same values often."""
    p, g = normalise(pred), normalise(gold)
    if not p or not g:
        return False
    if _squash(p) == _squash(g):
        return True
    if (day := _calendar_day(p)) and (gold_day := _calendar_day(g)):  # "November 5, 1966" for "5 Nov 1966"
        return day == gold_day
    ends_p, ends_g = _interval_ends(p), _interval_ends(g)
    if ends_p and ends_g and ends_p != ends_g:  # [a, b) is not (a, b]: open or closed is the question
        return False
    if letter := _option_letter(g):
        return _option_letter(p, loose=True) == letter
    options = _key_options(gold)
    chosen = _option_set(p, key=False) if options else None
    if chosen is not None:  # a multiple-answer key against a choice of options: the same ones, in any layout
        return chosen == options
    if forms := _alternative_forms(g):
        return any(_texts_match(pred, form) for form in forms)
    for pv, loose in dict.fromkeys(_pred_variants(p)):
        for gv in dict.fromkeys(_gold_variants(g)):
            bare_p, bare_g = _strip_unit(pv), _strip_unit(gv)
            forms_p, forms_g = [pv, *filter(None, [bare_p])], [gv, *filter(None, [bare_g])]
            pairs = [(a, b) for a in forms_p for b in forms_g
                     if not (a == bare_p and b == bare_g and _unit_of(pv) != _unit_of(gv))]  # 10 kW is not 10 MW
            if any(_same(a, b, loose) for a, b in pairs):
                return True
    return False


_MONTH = re.compile(r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
                    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b|^\d{4}-\d{2}-\d{2}$")


def _calendar_day(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) of a text that is a date and nothing else, day, month and year given, the month by
    name or in ISO form ("5 november 1966", "june 14th, 1900", "1993-10-31"); None for anything else: a
    date without its day or year, a date in a sentence, numbers alone ("03/04/2001" reads two ways).

    >>> _calendar_day("november 5, 1966") == _calendar_day("5 nov 1966") == (1966, 11, 5)
    True
    >>> _calendar_day("september 21st"), _calendar_day("may 2009"), _calendar_day("born on may 8, 2009")
    (None, None, None)
    """
    if len(text) > 40 or not _MONTH.search(text):
        return None
    from dateutil import parser  # python-dateutil: every spelling of a date, and what a text leaves out of it

    try:  # what is missing from the text is taken from the default: a field both defaults leave apart is missing
        first, second = (parser.parse(text, default=datetime(1, 1, 1)), parser.parse(text, default=datetime(2, 2, 2)))
    except (ValueError, OverflowError):
        return None
    return (first.year, first.month, first.day) if first == second else None
