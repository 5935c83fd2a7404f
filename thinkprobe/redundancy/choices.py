"""Multiple-choice questions: the lettered options a question lists, the one option a conclusion
emphasises in bold as its pick, and the one a unit names as it leads into the next. Used by
thinkprobe.redundancy.extraction and .final."""
from __future__ import annotations

import re
from itertools import takewhile

from .normalise import MARKDOWN

__all__ = ["question_options", "bold_option", "latex_plain", "led_option"]


_OPTION_LINE = re.compile(r"^\s*\(?([A-J])[).:]\s*(\S.*?)\s*$", re.MULTILINE)  # "B) All fourth-grade students"
_OPTION_INLINE = re.compile(r"\(([A-J])\)\s*([^()\n]+?)(?=\s*\([A-J]\)|\s*\n|\s*$)")  # "(A) 12 (B) 15 (C) 18"
# "... fraction? A:31.00% B:0.164 C:0.311 D:0.5" (THINK-Bench: 521 of its 1,103 questions)
_OPTION_COLON = re.compile(r"(?<![^\s])([A-J]):\s*(\S.*?)(?=\s+[A-J]:|\s*$)", re.DOTALL)


def question_options(question: str | None) -> dict[str, str]:
    """The lettered options a multiple-choice question lists ({letter: text}): inline ("(A) 12 (B) 15",
    "A:31.00% B:0.164") or on lines of their own ("B) All fourth-grade students", "C. 12"); only letters
    A, B, C ... in order (a Roman "I." or "II." is a statement, not an option); {} with fewer than two.

    >>> question_options("Which?\\nA) The 40 students\\nB) All students")
    {'A': 'The 40 students', 'B': 'All students'}
    >>> question_options("Which must be true?\\nI. x > 0\\nII. y > 0\\n(A) I only (B) II only (C) I and II")
    {'A': 'I only', 'B': 'II only', 'C': 'I and II'}
    >>> question_options("Name product (B) of reaction (A).\\n(E)-N-methyl is given.\\nA. LDA\\nB. DME")
    {'A': 'LDA', 'B': 'DME'}
    >>> question_options("The mole fraction? A:31.00% B:0.164 C:0.311 D:0.5")
    {'A': '31.00%', 'B': '0.164', 'C': '0.311', 'D': '0.5'}
    """
    if not question:
        return {}
    for pattern in (_OPTION_INLINE, _OPTION_LINE, _OPTION_COLON):
        found = [(m.group(1), m.group(2).strip()) for m in pattern.finditer(question)]
        # the last run A, B, C ...: the question may name a "(B)" or open a line "(E)-N-methyl..." before them
        for start in reversed([k for k, (letter, _) in enumerate(found) if letter == "A"]):
            run = list(takewhile(lambda kv: kv[1][0] == "ABCDEFGHIJ"[kv[0]], enumerate(found[start:start + 10])))
            if len(run) >= 2:
                return dict(option for _, option in run)
    return {}


# an option in bold, its text or not: "**C. ethyl 4-aminobenzoate**", "**Option C: ...**", "**D**", "**(B) ...**"
# (closed, or open to the unit's end where a sentence ended inside it: "**A. First you identify the virus.")
# (its text may hold a single "*": "**A. λ2 >= 1.22*λ1**")
_BOLD_OPTION = re.compile(r"\*\*\s*(?:(?i:option|choice)\s*)?\(?([A-J])\)?(?:(?:[.:)]\s(?:[^*\n]|\*(?!\*))*|[.:)]|\s*\([^*\n]*\)|)\s*\*\*(?!\w)"
                          r"|[.:)]\s[^*]*\Z)")
# said of the option beside it: it is rejected ("**B** is wrong", "not **B**", "rather than **B**")
_REJECTED_AFTER = re.compile(r"\W*(?:is|are|would be|seems?)?\s*(?:not\b|in(?:correct|valid)\b|wrong\b|false\b|ruled out\b|"
                             r"eliminated\b|unlikely\b|implausible\b|less\b)", re.IGNORECASE)
_LABELS = re.compile(r"\s*[:=]")  # "- **A** = (Z)-1-...", "**B (ELISA ...)**: This method ...": a compound or a list's heading
_REJECTED_BEFORE = re.compile(r"\b(?:not|than|instead of|except|over|eliminate|rule out|rules out)\s*$", re.IGNORECASE)


def bold_option(text: str) -> str | None:
    """The one option a conclusion emphasises in bold ("the best match is **C. ethyl 4-aminobenzoate**.",
    "Thus, **D** is the most reasonable choice.": GPQA answers of DeepSeek-V3 and Qwen2.5 in ReasoningFlow),
    unless it emphasises several, rejects it ("**B** is wrong") or heads what follows ("**A** = (Z)-1-...",
    "**B (ELISA)**: This method ...": a compound A, an option's analysis)."""
    letters = {m.group(1) for m in _BOLD_OPTION.finditer(text)
               if not _REJECTED_AFTER.match(text, m.end()) and not _REJECTED_BEFORE.search(text[:m.start()])
               and not _LABELS.match(text, m.end())}
    named = {m.group(1) for m in _BOLD_OPTION.finditer(text)}
    return letters.pop() if len(letters) == 1 and len(named) == 1 else None


_LATEX_STYLE = re.compile(r"\\(?:textbf|mathbf|text|mathrm|boldsymbol)\{([^{}]*)\}")
_LATEX_SPACE = re.compile(r"\\(?:[;,:! ]|quad|qquad)")


def latex_plain(text: str) -> str:
    r"""A unit's text with LaTeX's text styles unwrapped and its spacing commands as spaces, so that an
    option that opens display math reads as one (gpt-oss-120b: "\[\textbf{C.}\;|3,0,0\rangle ..." is
    option C).

    >>> latex_plain(r"\[\textbf{C.}\;|3,0,0\rangle")
    '\\[C. |3,0,0\\rangle'
    """
    return _LATEX_SPACE.sub(" ", _LATEX_STYLE.sub(r"\1", text))


# a unit that names the one option its next line gives: "The expression obtained matches option **B**:",
# "which corresponds to choice (C):" (gpt-oss-120b, then the boxed expression)
_LEADS_INTO = re.compile(r"\b(?i:match(?:es)?|corresponds? to|is|agrees? with)\s+(?i:the\s+)?(?i:option|choice|answer)\s*"
                         r"\**\s*\(?([A-J])\)?\s*\**\s*[:：]\s*$")


def led_option(text: str) -> str | None:
    """The option a unit names as it leads into the next ("... matches option **B**:", "__B__" alike), or None.

    >>> led_option("The expression obtained matches option **B**:"), led_option("Consider option B: it fails.")
    ('B', None)
    """
    m = _LEADS_INTO.search(MARKDOWN.sub("", text))
    return m.group(1) if m else None
