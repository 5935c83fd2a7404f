"""Candidate answers of a trace and their verification against a gold answer (spec section 5).
The redundancy suite reads them: candidates give the SEP its target and the answer transitions
(DR / SV / EE / EB) their states. Rules only; code is run in a separate, limited process.

Candidate rules, strongest first; a unit gives at most one candidate:
  boxed   ``\\boxed{...}`` / ``\\fbox{...}`` with nested braces (several in one unit are joined by ", ")
  phrase  "the answer is X", "final answer: X", "Answer: X" (the last one in the unit)
  option  the same phrases, or "option / choice (B)" (MR-BEN: "Solution: Choice_B", "Solution: A"), when the
          value is an option letter
  code    the final fenced code block of the trace (one candidate, at the unit that opens it)
  bold    ``**X**`` in a unit of the answer section (the answer after the reasoning)
  number  the number a conclusion (CON) unit, or the last unit of the answer section, arrives at:
          after its last "=" / "is", else its last number (the last one equal to the result computed
          last before it, where it restates that among other numbers)

A number is a weak candidate: most conclusions state intermediate results, not answers. It is kept
only when its value is one the trace puts forward as an answer (the value of a boxed / phrase /
option / bold / code candidate) or the gold answer; in a trace without any such candidate, the last
number is the final answer and the numbers equal to it are kept, provided the trace ends on it:
a number stands for the final answer only when the trace's closing unit (its last, a sign-off such
as "Let me know if ..." after it aside) states it or arrives at the same value. A trace that goes on past its last conclusion
without arriving anywhere (a step list cut short, reasoning that trails off) has no final answer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..io.guess import is_output_field
from ..records import answer_cut
from ..segment import DOLLAR_MATH, default_abbreviations
from .choices import bold_option, latex_plain, led_option, question_options
from .matching import answers_match
from .normalise import BOXED, FACTORIAL_EXPR, MARKDOWN, NUMBER, SPECIAL_TOKEN, to_number

__all__ = ["Candidate", "KIND_RANK", "find_candidates", "code_tests_of", "boxed_values", "closing_unit",
           "conclusion_number", "OPTION_LABEL"]


@dataclass(frozen=True)
class Candidate:
    unit: int  # Thought Unit id
    value: str  # extracted answer text (raw; compare with answers_match)
    kind: str  # boxed | phrase | option | code | bold | number


# Strength of a rule: the final answer is the last candidate of the strongest kind (see final_candidate).
KIND_RANK = {"boxed": 0, "phrase": 1, "option": 1, "code": 2, "bold": 3, "number": 4}

_PHRASE = re.compile(
    r"\b(?:the\s+)?(?:final\s+|correct\s+)?answer\s*(?:is|should be|would be|must be|will be|=|:|：)\s*:?\s*",
    re.IGNORECASE)
# An option the reasoning settles on: MR-BEN's closing step "Solution: Choice_B" / "Solution: Choice D" /
# "Solution: A", "the correct choice is B", "the closest option is B", "I'd go with option D" / "I choose B.",
# "option C is correct". An option only named ("Choice_B argues that ...", "Then there's option B: ..."), a point
# picked ("Let's pick A = (0, 0)", "choose C columns") or a pronoun ("the best choice is I think C") is none.
_PICKED = r"\b(?i:go(?:ing)?\s+with|choose|chose|pick|picked|select|selected|opt\s+for)\s+"
_OPTION_WORD = r"(?i:option|choice)(?:\s*|\\?_)"  # "option ", "Choice_", "choice\_"
_OPTION_PHRASE = re.compile(
    r"(?:\bSolution:\s*(?:[Cc]hoice(?:\\?_|\s)?)?"
    rf"|\bConclusion:\s*{_OPTION_WORD}"  # "Conclusion: Choice_A: ..." ("Conclusion: C is ..." may name a compound)
    r"|\b(?i:correct|right|best|final|closest|most\s+(?:appropriate|suitable|likely|plausible|accurate))\s+(?i:option|choice|statement)"
    r"\s*(?i:is|would be|should be|must be)?\s*(?i:therefore\s+)?:?\s*"
    rf"(?:{_OPTION_WORD})?"
    rf"|\b(?i:solution)\s+(?i:is|would be)\s+(?i:therefore\s+)?{_OPTION_WORD}"  # "the (correct) solution is Choice_A"
    rf"|{_PICKED}{_OPTION_WORD}"
    rf"|{_PICKED}(?=\(?[A-J]\)?\s*(?:[.;!]|$))"
    r")\(?([A-J])\)?(?![\w])")
# "option C is correct", "Choice_D: wavelength only is the correct answer" (an option's text between), "Option C is
# the closest" (after "none of the options match exactly")
_OPTION_IS_RIGHT = re.compile(r"\b(?i:option|choice)\s*(?:\\?_)?\s*\(?([A-J])\)?(?::[^.;!?\n]{1,150}?)?,?\s+"
                              r"(?i:is|seems|must be|should be)\s+(?i:the\s+)?(?i:correct|right|answer|closest)\b")
# in the trace's closing unit: "Therefore, the strongest acid is Choice_A: HBrO.", "... is S. aureus (Choice D)."
# (earlier, "Compound X is Option B" may name an intermediate, not the answer)
_IS_OPTION = re.compile(rf"\b(?i:is|are)\s+(?i:therefore\s+)?{_OPTION_WORD}\(?([A-J])\)?(?![\w])"
                        rf"|\(\s*{_OPTION_WORD}([A-J])\s*\)\s*[.!]?\**\s*$")
# "A" and "I" are words too: followed by a word in lower case ("I think", "A car travels") they are no option
_A_OR_I_WORD = re.compile(r"\s+(?!(?:because|since|as|which|and|or|nor|but|so|here|now|is|was|seems|would|should|must|"
                          r"from|for|with|then)\b)[a-z]")
_OPTION_NAMES = re.compile(r"(?i:\b(?:options?|choices?))\s*(?:\\?_)?\s*")  # stripped to read the letters
_ONE_OPTION = r"(?:(?i:(?:options?|choices?))\s*(?:\\?_)?\s*)?\(?[A-J]\)?"
_LIST_SEP = r"\s*(?:,\s*(?:or|and)\b|,|/|&|\bor\b|\band\b)\s*"
_OPTION_LIST = re.compile(rf"{_ONE_OPTION}(?:{_LIST_SEP}{_ONE_OPTION})+")
# more options after a settled one, up to the end of the clause ("Solution: Choice_C or Choice_D.",
# "Choice_B/C - Creatine ..."); "B and I think so", "B, A is close" name no more options
_MORE_OPTIONS = re.compile(rf"\)?(?:{_LIST_SEP}{_ONE_OPTION})+(?=\s*(?:[.;:!)(\n]|$|[-–—]\s))")
# a hedge between options: "A or D, but ...", "Choice_B/C; but ..." (options listed with "or" or "/", then "but")
_LISTED_OPTIONS = re.compile(rf"\)?(?:{_LIST_SEP}{_ONE_OPTION})+")
_ALTERNATIVES = re.compile(r"\bor\b|/")
_HEDGED = re.compile(r"[^.!?\n]{0,80}?[,;]?\s+but\b")
_NAMED_OPTION = re.compile(r"(?i:option|choice)\s*(?:\\?_)?\s*\(?([A-J])\)?(?![\w])")
_OPTION_VALUE = re.compile(r"^\s*\(?([A-J])\)?(?:[.:)](?![A-Za-z])|\s|$)")  # "A.J": initials, no option
# "B) Those who responded ...", "C)38", "D)$5.4\%$": an option and its text
OPTION_LABEL = re.compile(r"^\s*\(?([A-J])\)(?:\s+\S|(?=[\d$\\]))")
_ANSWER_LABEL = re.compile(r"(?:#+\s*)?(?:the\s+)?(?:final\s+|correct\s+)?answer(?:\s+is)?\s*[:：]?", re.IGNORECASE)
# a sentence that leads into the option it names on the next line: "the correct answer is:" / "B. A = ..."
_OPTION_LEAD = re.compile(r"\b(?:answer\b[^:\n]{0,30}\b(?:is|would be|should be|must be)|(?:correct|right|best|final|"
                          r"incorrect|wrong|false|true)\s+(?:option|choice|statement|match|conclusion|one)(?:s|es)?\b[^:\n]{0,20}\b(?:is|are|would be|"
                          r"should be|must be)|\bmost\s+(?:plausible|likely|probable|reasonable|appropriate|suitable)\b[^:\n.]{0,40}\b"
                          r"(?:is|would be))\s*[:：]?\s*$", re.IGNORECASE)  # not "the answer choices are:", "the first option is:"
# a sentence that ends on the option it settles on, in bold: "The only option that does not satisfy ... is **Option B**."
_BOLD_PICK = re.compile(r"\b(?i:option|choice|answer)\b[^.\n]{0,200}\bis\s+\*\*\s*(?:(?i:option|choice)\s*)?\(?[A-J]\)?\*\*"
                        r"\s*[.!]?\s*$")
_OPTION_START = re.compile(r"^\W{0,3}(?:(?i:option|choice)\s+)?([A-J])(?:\*\*)?[.):](?:\s|\*)")  # "B. 0", "**D: CBr₄** is ...", "**Option A**: ..."
_BOLD = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_HEDGE = re.compile(r"^(?:(?:probably|likely|maybe|perhaps|definitely|indeed|actually|simply|just|still|then|"
                    r"therefore|thus|clearly|exactly|now|here|hence|so|approximately|about|around|roughly|nearly)\b"
                    r"|~|≈|\\approx\b)[,:]?\s*", re.IGNORECASE)
_APPROX = re.compile(r"^\s*approx\.\s*", re.IGNORECASE)
# "If the answer is 10, the total would be 30": a hypothesis, not an answer put forward
_SUPPOSED = re.compile(r"(?:^|[\n,.;:!?(]\s*)(?:if|suppose|supposing|assume|assuming|unless)\b[^,.;:!?\n]*$", re.IGNORECASE)
_NOT_A_VALUE = re.compile(r"^(?:not|that|going|either|no\s+(?:longer|more|different|clear|single|way)\b|none of|wrong|"
                          r"incorrect|correct\b|in\b|the same|different|unclear|unknown|what|whether|this\b|to\b|"
                          r"if\b)",  # "Possible answer: If I knew it was ..."
                          re.IGNORECASE)
# a closing unit that answers a multiple-choice question with none of its options
_NONE_OF_THEM = re.compile(r"\bnone of the (?:\w+ ){0,2}(?:choices|options|answers)\b(?:[^.!?\n]{0,60}?\b(?:is|are) "
                           r"(?:correct|right|valid)\b|[^.!?\n]{0,20}\bmatch)", re.IGNORECASE)
NONE_OF_THEM = "none of the options"
_UNFINISHED = re.compile(r"(?:=|\?)\s*$")  # "Final Answer: 3 * 29524 = ?": a sum still to do
_EMPTY_VALUE = re.compile(r"^[\s'\"‘’“”`.,;:!?]*$")  # a lone quote or stop (brackets are Dyck languages' answers)
_QUOTES = "'\"‘“`"
_INLINE_MATH = re.compile(r"\$\$(.+?)\$\$|" + DOLLAR_MATH + r"|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_CONCLUDES = re.compile(r"(?:=|≈|\\approx|\bis\b|\bare\b|\bequals\b|\bbe\b|\bgives\b|\bget\b)", re.IGNORECASE)
_INITIAL = re.compile(r"[\w.]\s+[A-Z]$")  # "John B. Mortimer", "A. J. Hinch": a name initial, not an end
_MAX_PHRASE_WORDS = 12
_MAX_CLOSING_WORDS = 40  # the closing unit's answer may be longer: BIG-Bench's word sorting lists 13-20 words
# ... when it reads as a list, not a sentence ("There are 210 ways he can pick 3 boys and 2 girls"): few of these
_FUNCTION_WORDS = frozenset("a an the is are was were be been there it this that of to for and or can we i you "
                            "he she they his her which who when so with by on in at as from not had has have did does"
                            .split())
_MAX_VALUE_CHARS = 120
_NAMED_VALUE = re.compile(r"[A-Za-z](?:_\{?\w+\}?)?\s*=\s*(.+)")  # "y = -2x", "a_1 = 3n": a variable and its value
_MAX_CLOSING_CHARS = 400  # a list of up to _MAX_CLOSING_WORDS words


def boxed_values(text: str) -> list[str]:
    r"""Contents of every ``\boxed{...}`` in text, nested braces included.

    >>> boxed_values(r"so \boxed{\frac{1}{2}} and \boxed 7.")
    ['\\frac{1}{2}', '7']
    """
    out = []
    for m in BOXED.finditer(text):
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


_SENTENCE_OPENERS = frozenset(
    "This The That These Those There Then Thus Therefore Hence So It Its He She We They I A An And But Also In On At "
    "Let Now Wait Yes No However If When Since Because Final Answer Note Here".split())


def _initials(text: str, i: int) -> bool:
    """Whether the period at text[i] closes one initial of a run of them ("A.J. Hinch", "J.R.R.
    Tolkien", "E.T. the Extra-Terrestrial", "M.S. Subbulakshmi"): a lone capital with another initial
    after it, or after one before it. A single initial ("B. Paris") is left to the option rules."""
    single = i >= 1 and text[i - 1].isupper() and (i == 1 or not text[i - 2].isalnum())
    if not single:
        return False
    if re.match(r"\s?[A-Z]\.", text[i + 1 : i + 4]):  # another initial follows
        return True
    after_one = i >= 3 and text[i - 2] == "." and text[i - 3].isupper() and (i == 3 or not text[i - 4].isalnum())
    nxt = re.match(r"\s?(\w+)", text[i + 1 : i + 40])
    # "E.T. the ...", "A.J. Hinch" go on; "the U.S. This is because ...": a sentence opener ends it
    return bool(after_one and nxt) and nxt.group(1) not in _SENTENCE_OPENERS


def _cut_value(text: str, max_chars: int = _MAX_VALUE_CHARS) -> str:
    """The answer value at the start of text: up to the end of the sentence, outside of math."""
    text = text.lstrip()
    out, in_math, i = [], False, 0
    while i < len(text) and i < max_chars:
        ch = text[i]
        if ch == "$":
            in_math = not in_math
        elif text.startswith("\\(", i) or text.startswith("\\[", i):
            in_math = True
        elif text.startswith("\\)", i) or text.startswith("\\]", i):
            in_math = False
        elif not in_math:
            if ch == "!" and i and (text[i - 1].isdigit() or text[i - 1] == ")") \
                    and FACTORIAL_EXPR.search(text[: i + 4]):
                pass  # a factorial in an expression ("2 * 5! * 5!"); a lone "5!" ends the sentence
            elif ch in "\n!?":
                break
            if ch == "." and not (i > 0 and text[i - 1].isdigit() and text[i + 1 : i + 2].isdigit()) \
                    and not default_abbreviations().holds(text, len(text) - len(text[i + 1:].lstrip())) \
                    and not (_INITIAL.search(text[max(0, i - 3) : i]) and re.match(r"\s?[A-Z][a-z.]", text[i + 1 : i + 4])) \
                    and not (re.fullmatch(r"[A-Z]", text[:i]) and re.match(r"\s?[A-Z]\.", text[i + 1 : i + 4])) \
                    and not _initials(text, i):
                break
            if re.match(r"\s+(?:(?:because|since|which|but|so that|as)\b|i\.e\.|e\.g\.)|,\s+(?:that is\b|i\.e\.|e\.g\.)",
                        text[i:]):
                break
        out.append(ch)
        i += 1
    return "".join(out).strip().strip("*").rstrip(",;:").strip()


def _phrase_value(text: str, closing: bool = False, prior: str | None = None) -> tuple[str, str] | None:
    """The value a phrase puts forward ("the answer is X", "Answer: X"), or an option it names. A
    value that is a sentence restating `prior` (the result computed last before it) among other words
    is that number (Gemma's "**Answer:** Terry spends $75.00 on yogurt over 30 days.")."""
    plain = MARKDOWN.sub("", text)
    matches = list(_PHRASE.finditer(plain))
    after = 0  # where a decision may be read: past a hedge between options
    for m in reversed(matches):
        if m.start() and plain[m.start() - 1] in _QUOTES:  # "put it after 'Answer:'": the phrase named, not used
            continue
        if _SUPPOSED.search(plain[max(0, m.start() - 80):m.start()]):
            continue
        value = _cut_value(_APPROX.sub("", plain[m.end():], count=1),  # "approx. 5": its stop ends no sentence
                           _MAX_CLOSING_CHARS if closing else _MAX_VALUE_CHARS)
        while _HEDGE.match(value):
            value = _HEDGE.sub("", value, count=1)
        several = _OPTION_LIST.fullmatch(value.strip().rstrip("."))
        hedge = _HEDGED.match(plain, m.end()) if several and _ALTERNATIVES.search(value) else None
        if hedge:  # "the answer is A or D, but D is impossible": the decision after "but", if one is stated
            after = hedge.end()
            break
        if several:  # "(A), (B), (C), or (D)", "(A) or (B)", "Choice_A/B/C/D": all of them, not the first
            return _letters(value), "option"
        labelled = OPTION_LABEL.match(value)  # "B) Those who responded ...": the option, its text however long
        if labelled:
            return labelled.group(1), "option"
        whole = value.split()  # a list the closing unit states, with or without commas, is kept whole
        listed = (closing and len(whole) <= _MAX_CLOSING_WORDS and len(value) < _MAX_CLOSING_CHARS - 1
                  and sum(w.strip(",;").lower() in _FUNCTION_WORDS for w in whole) <= 2)
        if len(whole) > _MAX_PHRASE_WORDS and not listed:  # "Yes, Winnie Ewing was alive when ..." -> "Yes"
            value = re.split(r",\s|\s[-–—]\s|\s\(", value, maxsplit=1)[0].strip()
        words = value.split()
        if _EMPTY_VALUE.match(value) or _NOT_A_VALUE.match(value) or _UNFINISHED.search(value) \
                or (len(words) > _MAX_PHRASE_WORDS and not listed):
            continue
        letter = _OPTION_VALUE.match(value)
        if letter and (len(value.strip()) <= 3 or value.strip().startswith("(")):
            return letter.group(1), "option"
        named = _NAMED_OPTION.match(value)  # "the answer is Choice_B" / "option (C)"
        if named:
            return named.group(1), "option"
        if len(words) >= 3 and to_number(value) is None and (restated := _restated(_numbers(value), prior)):
            return restated[-1], "phrase"
        return value, "phrase"
    found = [*_OPTION_PHRASE.finditer(plain, after), *_OPTION_IS_RIGHT.finditer(plain, after),
             *(_IS_OPTION.finditer(plain, after) if closing else ())]
    settled = [(m, m.lastindex or 1) for m in found]
    settled = [(m, g) for m, g in settled if m.group(g) is not None]
    settled = [(m, g) for m, g in settled
               if not (m.group(g) in "AI" and _A_OR_I_WORD.match(plain, m.end(g) + (plain[m.end(g):m.end(g) + 1] == ")")))
               and not _SUPPOSED.search(plain[max(0, m.start() - 80):m.start()])]  # "If option B is correct, ..."
    while settled:
        last, g = max(settled, key=lambda mg: mg[0].start())
        listed = _LISTED_OPTIONS.match(plain, last.end(g))
        hedge = _HEDGED.match(plain, listed.end()) if listed and _ALTERNATIVES.search(listed.group(0)) else None
        if hedge:  # "Solution: Choice_C or Choice_D, but ...": a decision after "but", or none
            settled = [(m, g) for m, g in settled if m.start() >= hedge.end()]
            continue
        more = _MORE_OPTIONS.match(plain, last.end(g))  # "Solution: Choice_C or Choice_D", "Choice_A/B/C/D"
        return (_letters(last.group(g) + more.group(0)) if more else last.group(g)), "option"
    return None


def _letters(value: str) -> str:
    """The option letters a list of options names, in order ("Choice_C or Choice_D" -> "C, D")."""
    return ", ".join(dict.fromkeys(re.findall(r"(?<![A-Za-z])[A-J](?![a-z])", _OPTION_NAMES.sub(" ", value))))


def _bold_value(text: str) -> str | None:
    """The bold span of an answer-section unit that could be an answer: not a heading ("1. **Plug in
    the values**:", "**Step 2:**", "**Final Answer**"), and none where a unit emphasises several
    values ("**4** appears **10** times": a worked explanation)."""
    values = []
    for m in _BOLD.finditer(text):
        v = m.group(1).strip()
        if v.endswith(":") or re.match(r"\s*:", text[m.end():]) or re.match(r"(?:step|part|case)\s*\d+\s*[:.)]", v.lower()):
            continue  # a heading or a label ("**Step 3: Compute**")
        if re.search(r"\b(?:answer|step|solution|final|conclusion|verification)\b", v.lower()) and not re.search(r"\d", v):
            continue
        values.append(v)
    if len(values) != 1:
        return None
    return values[0] if len(values[0].split()) <= _MAX_PHRASE_WORDS else None


_RESULT = re.compile(r"(?:=|≈|\\approx)(?:\s|\\[$(\[]|\$|\\(?:text|mathbf|textbf)\s*\{)*(" + NUMBER.pattern + ")")


def last_result(text: str) -> str | None:
    r"""The number the last "=" / "≈" of a text arrives at, where a number follows it.

    >>> last_result(r"\[ 15 \times 5.00 = \$75.00. \] Then 60 / 4 days = 15 days")
    '15'
    """
    found = None
    for m in _RESULT.finditer(MARKDOWN.sub("", text)):
        found = m.group(1)
    return found.strip() if found else None


def conclusion_number(text: str, prior: str | None = None) -> str | None:
    r"""The value a conclusion arrives at: the math or number after its last "=" / "is", else its
    last number; of several numbers, the last one equal to `prior` (the result the trace computed
    last before it, `last_result`), where one is: a conclusion restates its result among the
    question's numbers ("Therefore, Terry spends $75.00 on yogurt over 30 days.").

    >>> conclusion_number("So $r = A/P = 24/24 = 1$.")
    '1'
    >>> conclusion_number("So the average speed is $240/4.5$ km/h.")
    '240/4.5'
    >>> conclusion_number("Thus, Chris is 10 years old now.")
    '10'
    >>> conclusion_number("Therefore, Terry spends $75.00 on yogurt over 30 days.", prior="75.00")
    '75.00'
    """
    plain = MARKDOWN.sub("", text)
    maths = [(m.start(), m.end(), next(g for g in m.groups() if g is not None)) for m in _INLINE_MATH.finditer(plain)]
    # An "=" inside the last math span wins: the right-hand side is the value.
    if maths:
        start, end, body = maths[-1]
        if "=" in body or "\\approx" in body or "≈" in body:
            rhs = re.split(r"=|\\approx|≈", body)[-1].strip()
            if rhs and NUMBER.search(rhs):
                return rhs
    marks = list(_CONCLUDES.finditer(plain))
    if marks:
        tail = plain[marks[-1].end():]
        for start, end, body in maths:
            if start >= marks[-1].end() and not tail[: start - marks[-1].end()].strip(" $\\(:"):
                if NUMBER.search(body):
                    return re.split(r"=|\\approx|≈", body)[-1].strip()
        m = NUMBER.search(tail)
        if m:
            return m.group(0).strip()
    numbers = _numbers(plain)
    return (_restated(numbers, prior) or numbers or [None])[-1]


def _numbers(text: str) -> list[str]:
    """The numbers of a text, but not a subscript, power or label's digits ("3P_0", "x^2", "CO2")."""
    return [m.group(0).strip() for m in NUMBER.finditer(text) if not re.match(r"[A-Za-z_^]", text[m.start() - 1:m.start()])]


def _restated(numbers: Sequence[str], prior: str | None) -> list[str]:
    """The `numbers` equal to `prior`, the result computed last before them (none without one)."""
    return [n for n in numbers if answers_match(n, prior)] if prior is not None else []


def _formula(text: str) -> str | None:
    """A whole answer section that is one value written as math, no words ("(2, 4)", "1+2i", "2516_8",
    "\\frac{11+9a}{20}", "\\cot x", "C"): the value itself, not the last number in it; also a variable set
    to such a value that is no number ("y = -2x", WizardMath's line: not its -2). Another equation, a
    sentence or a label ("Final Answer") is none."""
    bare = MARKDOWN.sub("", text).strip().rstrip(".").strip()
    named = _NAMED_VALUE.fullmatch(bare)
    value = named.group(1) if named and to_number(named.group(1)) is None else bare
    if not value or "\n" in bare or len(bare) > _MAX_VALUE_CHARS or "=" in value or "$" in bare \
            or _ANSWER_LABEL.fullmatch(bare) or _EMPTY_VALUE.match(bare):
        return None
    words = re.sub(r"\\[A-Za-z]+", " ", value)  # LaTeX commands are no words
    return None if re.search(r"[A-Za-z]{2,}|[.!?;:](?:\s|$)", words) else bare


def _unit_candidate(text: str, *, in_answer: bool, conclusion: bool, closing: bool = False,
                    alone: bool = False, prior: str | None = None) -> tuple[str, str] | None:
    text = SPECIAL_TOKEN.sub("", text)
    boxed = boxed_values(text)
    if boxed:
        return ", ".join(boxed), "boxed"
    phrase = _phrase_value(text, closing, prior)
    if phrase:
        return phrase
    if alone and (formula := _formula(text)):  # the answer section is this one value
        return formula, "phrase"
    if in_answer and conclusion:  # an answer section that is a bare value ("\\frac{3}{2}." after "The answer is:")
        bare = MARKDOWN.sub("", text).strip().rstrip(".").strip()
        math = _INLINE_MATH.fullmatch(bare)  # or one formula: "$\\frac{\\sin 80^\\circ}{\\cos 80^\\circ}$" (its 80 was taken)
        body = next(g for g in math.groups() if g is not None) if math else ""
        if body and len(bare) <= _MAX_CLOSING_CHARS and not re.search(r"\$|\\[()\[\]]", body):  # "$3$ or $4$": two
            return body.strip(), "phrase"
        if bare and len(bare) <= _MAX_VALUE_CHARS and to_number(bare) is not None:
            return bare, "phrase"
    if in_answer:
        bold = _bold_value(text)
        if bold:
            return bold, "bold"
    if conclusion:
        number = conclusion_number(text, prior)
        if number:
            return number, "number"
    return None


# an answer field that is no answer: an abstention or a courtesy ("I don't know.", "Hope this helps")
_NO_ANSWER = re.compile(r"^(?:i\b|i'|we\b|sorry|hope\b|sure\b|thanks?\b|thank you|unknown|not sure|cannot|can't|"
                        r"no answer|none\b|n/?a$)", re.IGNORECASE)


def _bare_answer(text: str, reasoning: str) -> tuple[str, str] | None:
    """A whole answer field that is the answer itself: one line of up to _MAX_CLOSING_WORDS words with
    no sentence in it (no ". ", "? ", ": " ...), no code and no abstention, which the reasoning states
    too ("abc bcd cde" after "The answer is abc bcd cde", "] ] )", "Paris")."""
    if "```" in text:  # a code block is code's to read (a program's answer is run against its tests)
        return None
    bare = MARKDOWN.sub("", SPECIAL_TOKEN.sub("", text)).strip().rstrip(".").strip()
    if not bare or "\n" in bare or len(bare) >= _MAX_CLOSING_CHARS or len(bare.split()) > _MAX_CLOSING_WORDS \
            or re.search(r"[.!?;:](?:\s|$)", bare) or _NO_ANSWER.match(bare):
        return None
    said = " ".join(reasoning.lower().split())
    return (bare, "phrase") if " ".join(bare.lower().split()) in said else None


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
    # the closing unit: the answer section's last, or the last of an answer-only model's untagged text
    # ("θ = 90°."), which has no answer section; never of a thinking trace or one cut off
    provenance = record.get("provenance") or {}
    whole_output = provenance.get("untagged") or is_output_field(provenance.get("reasoning_from"))
    closes = whole_output and not provenance.get("truncated")
    # (its closing unit: a sign-off after it, "Let me know if ...", states nothing)
    last_answer = answer_ids[-1] if answer_ids else closing_unit(record) if closes else None
    # where "The answer is ..." may state a long list: the trace's last unit (answer section or not), unless cut off
    last_unit = None if provenance.get("truncated") else (answer_ids or [units[-1]["id"]])[-1]
    code = _final_code_block(units)
    # an answer field of its own holding one unit, the bare answer the reasoning states ("a b c ...": BIG-Bench
    # Mistake's `answer`)
    fields = {s.get("name"): s.get("field") for s in record.get("sections") or ()}
    own_answer = answer_ids[0] if len(answer_ids) == 1 and fields.get("answer") not in (None, fields.get("reasoning")) \
        else None
    # an answer section of one unit, after the answer mark of its own field ("# Answer", "####", "The answer is:")
    own_value = answer_ids[0] if len(answer_ids) == 1 else None
    cut = _cut_unit(record, units)
    out = []
    label_before = lead_before = False  # the previous unit was a bare "Answer:" label / led into an option
    listed = bool(question_options(record.get("question")))  # a multiple-choice question: option lines mean options
    prior = None  # the result the units before computed last
    for u in units:
        if u["id"] == cut:
            continue
        found = _unit_candidate(u["text"], in_answer=u.get("section") == "answer",
                                conclusion=u.get("type") == "CON" or u["id"] == last_answer,
                                closing=u["id"] == last_unit, alone=u["id"] == own_value, prior=prior)
        prior = last_result(u["text"]) or prior
        if label_before and (found is None or found[1] == "number"):
            value = _cut_value(MARKDOWN.sub("", SPECIAL_TOKEN.sub("", u["text"])))
            if value and len(value.split()) <= _MAX_PHRASE_WORDS:
                found = (value, "phrase")
        if (lead_before or label_before) and listed and (found is None or found[1] in ("number", "phrase", "bold")) \
                and (m := _OPTION_START.match(latex_plain(u["text"]))):
            found = (m.group(1), "option")
        if listed and found is None and (letter := led_option(u["text"])):
            found = (letter, "option")  # "... matches option **B**:", its value on the next line (final.py)
        if listed and (found is None or found[1] in ("number", "bold")) and (lead_before or label_before or u["id"] in (
                last_answer, last_unit) or u.get("type") == "CON" or _BOLD_PICK.search(u["text"])) \
                and (letter := bold_option(u["text"])):
            found = (letter, "option")
        if listed and (found is None or found[1] == "number") and u["id"] in (last_answer, last_unit) \
                and _NONE_OF_THEM.search(MARKDOWN.sub("", u["text"])):
            found = (NONE_OF_THEM, "phrase")  # MR-BEN's "Solution: None of the given choices match ...": an answer
        # a label closing the unit ("---\n\n### Correct Answer:"): the answer is the next unit
        label_before = bool(_ANSWER_LABEL.fullmatch(MARKDOWN.sub("", u["text"]).strip().rsplit("\n", 1)[-1].strip()))
        lead_before = bool(_OPTION_LEAD.search(MARKDOWN.sub("", u["text"])))
        if found is None and u["id"] == own_answer:
            found = _bare_answer(u["text"], "\n".join(v["text"] for v in units if v.get("section") != "answer"))
        if code and code[0] == u["id"] and (found is None or KIND_RANK[found[1]] > KIND_RANK["code"]):
            found = (code[1], "code")
        if found:
            out.append(Candidate(int(u["id"]), found[0], found[1]))
    return _keep_answer_numbers(_keep_answer_bold(out, set(answer_ids)), record.get("gold_answer"))


def _keep_answer_bold(candidates: list[Candidate], answer: set[int]) -> list[Candidate]:
    """Bold is the weakest sign of an answer: where the answer section states one by a stronger rule
    (boxed, a phrase, an option, code), its bold values that differ from those are emphasis in a
    worked solution ("so **48** full cycles"), not answers put forward."""
    strong = [c.value for c in candidates if c.unit in answer and c.kind in ("boxed", "phrase", "option", "code")]
    bold = [c for c in candidates if c.kind == "bold"]
    if not bold or not strong:
        return candidates
    drop = {id(c) for c in bold if not any(answers_match(c.value, v) for v in strong)}
    return [c for c in candidates if id(c) not in drop]


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


# a closing courtesy after the answer, which states nothing: "Let me know if you'd like ...", "Hope this helps!"
_SIGN_OFF = re.compile(r"^\W*(?:(?:please\s+)?let me know|i hope|hope (?:this|that|it)|(?:please\s+)?feel free|"
                       r"if you (?:have|need|want|would like|'d like)\b|good luck|happy to help|thanks?\b|thank you|"
                       r"enjoy)", re.IGNORECASE)


def closing_unit(record: dict) -> int | None:
    """Id of the unit a trace ends on: its last, sign-offs and units without a letter or digit after
    it aside."""
    units = sorted(record.get("units") or [], key=lambda u: u["id"])
    cut = _cut_unit(record, units)
    for u in reversed(units):
        text = MARKDOWN.sub("", SPECIAL_TOKEN.sub("", str(u.get("text", ""))))
        if u["id"] != cut and re.search(r"\w", text) and not _SIGN_OFF.match(text):
            return int(u["id"])
    return int(units[-1]["id"]) if units else None


# how a whole unit ends: a sentence's closing mark (then quotes, brackets, emphasis), or closed display math
_UNIT_END = re.compile(r"(?:[.!?。！？…]['\"”’)\]}*$]*|\\\]|\$\$|\\\))\s*$")


def _cut_unit(record: dict, units: Sequence[dict]) -> int | None:
    """The unit a token limit cut mid-way: the answer's last when the API stopped the answer (provenance
    truncated_by, the reasoning whole), or the trace's last when its reasoning was cut off (provenance
    truncated) and it ends no sentence. Cut mid-way ("The answer is 3" of "30", "so the answer is 7 times
    the square root of"), it states nothing, nor ends the trace."""
    provenance = record.get("provenance") or {}
    if answer_cut(provenance):
        return next((int(u["id"]) for u in reversed(units) if u.get("section") == "answer"), None)
    if provenance.get("truncated") and units and not _UNIT_END.search(str(units[-1].get("text", ""))):
        return int(units[-1]["id"])
    return None


def code_tests_of(record: dict) -> Any:
    """The code tests a record carries (keys tests / test_cases / test), or None."""
    for key in ("tests", "test_cases", "test"):
        if record.get(key):
            return record[key]
    return None
