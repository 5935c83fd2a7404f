"""The final answer of a trace among its candidate answers (thinkprobe.redundancy.extraction finds
them): the last of the strongest kind in the last section that states one, an option a multiple-choice
answer names beside its boxed value, none where the trace declines to answer, was cut off before
answering, or goes on past the conclusions it states.
"""
from __future__ import annotations

import re
from typing import Sequence

from .choices import led_option, question_options
from .extraction import KIND_RANK, Candidate, closing_unit, code_tests_of, conclusion_number
from .matching import answers_match
from .normalise import SPECIAL_TOKEN

__all__ = ["final_candidate"]


def final_candidate(candidates: Sequence[Candidate], record: dict) -> Candidate | None:
    """The trace's final answer: among the candidates of the last section that has any (the answer
    section when it states one), the last one of the strongest kind; on a multiple-choice question an
    option named after that boxed value (gpt-oss-120b's "\\boxed{6.3\\times10^{-7}} which corresponds to
    answer **A**": the letter is the pick), or by the unit that leads into it ("The expression obtained matches
    option **B**:" above "\\boxed{Z = ...}"). Records with code tests take their final code block. A reasoning
    cut off before it ended (provenance truncated) with no answer section has none: the model stopped before
    answering, and its last candidate is a step on the way, often a hedge ("Alternatively, perhaps the answer is
    ...", "I think it is option D ... if I made a mistake"); its candidates still count as candidates."""
    if not candidates or _cut_before_answering(record):
        return None
    if code_tests_of(record) is not None:
        code = [c for c in candidates if c.kind == "code"]
        if code:
            return code[-1]
    section = {u["id"]: u.get("section", "reasoning") for u in record.get("units") or []}
    if _abstains(record, {c.unit for c in candidates}):
        return None
    last_section = section.get(candidates[-1].unit, "reasoning")
    pool = [c for c in candidates if section.get(c.unit, "reasoning") == last_section]
    best = min(KIND_RANK[c.kind] for c in pool)
    final = [c for c in pool if KIND_RANK[c.kind] == best][-1]
    if final.kind == "boxed" and question_options(record.get("question")):
        # an option named after the boxed value, or by the unit that leads into it ("matches option **B**:")
        text = {u["id"]: u.get("text", "") for u in record.get("units") or []}
        named = [c for c in pool[pool.index(final) + 1:] if c.kind == "option"] or \
            [c for c in pool if c.kind == "option" and c.unit == final.unit - 1 and led_option(text.get(c.unit, ""))]
        if named:
            return named[-1]
    if all(c.kind == "number" for c in candidates) and not _ends_on(record, final):
        return None  # only conclusions' numbers, and the trace goes on past them: no answer put forward
    return final


def _cut_before_answering(record: dict) -> bool:
    """Whether the reasoning was cut off (a token limit: provenance truncated) before any answer section."""
    return bool((record.get("provenance") or {}).get("truncated")) and \
        not any(u.get("section") == "answer" for u in record.get("units") or ())


# an answer that declines: a question missing a premise (MiP-Overthinking), a fact the model does not know
_ABSTENTION = re.compile(r"\b(?:(?:not|in)? ?(?:enough|sufficient) (?:information|data|detail)|insufficient|"
                         r"(?:cannot|can't|can not|impossible to|unable to) (?:be )?(?:determined?|answer(?:ed)?|calculated?|"
                         r"solved?|found|find)|unanswerable|i (?:do not|don't) know|missing (?:information|premise|data|value))",
                         re.IGNORECASE)


def _abstains(record: dict, stated: set[int]) -> bool:
    """Whether the trace's answer declines to give one: its answer section (else its closing unit) states no
    candidate (`stated`: the units that do) and says the question cannot be answered. MiP-Overthinking's DSQ
    ends "Answer: The question does not provide enough information ...", and a hypothetical earlier in the
    reasoning ("typically one person per seat") had been read as its final answer."""
    units = record.get("units") or []
    answer = [u for u in units if u.get("section") == "answer"] or \
        [u for u in units if u["id"] == closing_unit(record)]
    return bool(answer) and not stated & {u["id"] for u in answer} and \
        any(_ABSTENTION.search(u.get("text", "")) for u in answer)


def _ends_on(record: dict, number: Candidate) -> bool:
    """Whether the trace ends on a conclusion's number: its closing unit is that conclusion, or arrives
    at the same value ("So 70 - 60 = $10." then "Therefore, Pam pays $10 more than Susan.")."""
    closing = closing_unit(record)
    if closing is None or number.unit == closing:
        return True
    text = next((u["text"] for u in record.get("units") or () if u["id"] == closing), "")
    value = conclusion_number(SPECIAL_TOKEN.sub("", text), number.value)
    return value is not None and answers_match(value, number.value)
