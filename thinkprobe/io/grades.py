"""A record's own grade: which field holds it, what its value means (correct, incorrect, or not
graded), and how `--correct-field` / `--correct-values` name and map one. A grade the record carries
always wins over matching the final answer against the gold answer (thinkprobe.redundancy), which
applies only where no grade exists.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Mapping

__all__ = ["GRADES", "GRADE_LABELS", "CORRECT_FIELDS", "GENERATION_CORRECT_FIELDS", "CODE_FIELDS", "Grade",
           "parse_correct_values", "grade_key", "read_grade", "unread_codes", "verdict_name", "SOLUTION_LABELS"]


# Grades read from a correctness field, written down once (README, "Profile your traces"): True correct, False
# incorrect, None not graded. SimpleQA's grader letters: A correct, B incorrect, C not attempted.
GRADES: dict[str, bool | None] = {
    "true": True, "yes": True, "correct": True, "right": True, "1": True, "a": True, "pass": True, "passed": True,
    "false": False, "no": False, "incorrect": False, "wrong": False, "0": False, "b": False, "fail": False,
    "failed": False,
    "c": None, "not_attempted": None, "not attempted": None, "partial": None, "n/a": None, "ungraded": None,
}


# What --correct-values maps a value to.
GRADE_LABELS: dict[str, bool | None] = {"correct": True, "incorrect": False, "ungraded": None}


# Where records keep their grade, in the order tried. final_answer_correct: ProcessBench;
# eval_result: MiP-Overthinking (codes, below).
CORRECT_FIELDS = ("correct", "is_correct", "correctness", "grading", "metadata.correctness", "exact_match",
                  "final_answer_correct", "model_output_answer_correctness", "score", "eval_result")


# Labels of a whole solution, not of its final answer: MR-BEN's Model_Solution_Correctness is
# "incorrect" for a solution with a wrong step on its way to the right option (252 of 2,922 readable
# choices). Not read as the grade (the answer matcher grades such records); --correct-field reads one.
SOLUTION_LABELS = frozenset({"Model_Solution_Correctness"})


# OpenR1: one verdict per generation
GENERATION_CORRECT_FIELDS = ("correctness_math_verify", "correctness_llama", "correctness")


# Fields whose numbers are codes with no standard meaning (MiP-Overthinking's eval_result: 0 abstains,
# 1 correct, 2 incorrect, 3 format error): their words are read, their numbers only through --correct-values.
CODE_FIELDS = frozenset({"eval_result"})


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?")


_VALUE_ITEM = re.compile(r"\s*([^=,]+?)\s*=\s*(\w+)\s*")


@functools.lru_cache(maxsize=64)
def parse_correct_values(spec: str | None) -> dict[str, bool | None] | None:
    """``'1=correct,2=incorrect,0=ungraded'`` as {grade key: verdict}; None when not given.

    >>> parse_correct_values("1=correct, 2=incorrect,0=ungraded,3=ungraded")
    {'1': True, '2': False, '0': None, '3': None}
    """
    if spec is None or not str(spec).strip():
        return None
    mapping: dict[str, bool | None] = {}
    for item in str(spec).split(","):
        match = _VALUE_ITEM.fullmatch(item)
        label = match.group(2).lower() if match else None
        if label not in GRADE_LABELS:
            raise ValueError(f"--correct-values {spec!r}: cannot read {item.strip()!r}; write VALUE=LABEL pairs "
                             f"separated by commas, LABEL one of {', '.join(GRADE_LABELS)} "
                             "(e.g. '1=correct,2=incorrect,0=ungraded')")
        mapping[grade_key(match.group(1))] = GRADE_LABELS[label]
    return mapping


def grade_key(value: Any) -> str | None:
    """A grade value as the key GRADES and --correct-values use: lower-case text; 1.0 -> "1"; true -> "true"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, (int, float, str)):
        key = str(value).strip().lower()
        return key or None
    return None


class Grade:
    """A grade found in a record: the field, its raw value as text, and the verdict (True correct,
    False incorrect, None not graded)."""

    __slots__ = ("field", "value", "verdict")

    def __init__(self, field: str, value: str, verdict: bool | None):
        self.field, self.value, self.verdict = field, value, verdict

    def __repr__(self) -> str:
        return f"Grade({self.field!r}, {self.value!r}, {self.verdict!r})"


def read_grade(record: dict, get_path: Callable[[dict, str], tuple[bool, Any]], field: str | None = None,
               values: Mapping[str, bool | None] | None = None, generation: int | None = None) -> Grade | None:
    """The record's grade, or None when it carries none.

    ``field`` (--correct-field) is the only field read when given: every value it holds is a grade,
    mapped by ``values`` (--correct-values; a value they do not name is not graded) or else by GRADES.
    Without it the usual fields are tried in order and the first whose value GRADES knows is the
    grade (a field holding something else, e.g. a reward score of 0.93, is not a grade); numbers in
    a CODE_FIELDS field are only read through ``values``.
    """
    if field:
        found, value = get_path(record, field)
        key = grade_key(value) if found else None
        if key is None:
            return None
        mapping = values if values is not None else GRADES
        return Grade(field, str(value), mapping.get(key))
    paths = CORRECT_FIELDS
    if generation is not None:
        paths = (*(f"{name}[{generation}]" for name in GENERATION_CORRECT_FIELDS), *CORRECT_FIELDS)
    for path in paths:
        found, value = get_path(record, path)
        key = grade_key(value) if found else None
        if key is None:
            continue
        if values is not None and key in values:
            return Grade(path, str(value), values[key])
        if path in CODE_FIELDS and _NUMBER.fullmatch(key):
            continue
        if key in GRADES:
            return Grade(path, str(value), GRADES[key])
    return None


def unread_codes(record: dict, get_path: Callable[[dict, str], tuple[bool, Any]]) -> list[tuple[str, str]]:
    """(field, value) of the CODE_FIELDS a record holds a number in (a grade that only --correct-values
    can read), and of the SOLUTION_LABELS it holds (a label no default reads as the answer's grade)."""
    out = []
    for path in sorted(CODE_FIELDS):
        found, value = get_path(record, path)
        key = grade_key(value) if found else None
        if key is not None and _NUMBER.fullmatch(key):
            out.append((path, str(value)))
    for path in sorted(SOLUTION_LABELS):
        found, value = get_path(record, path)
        if found and grade_key(value) is not None:
            out.append((path, str(value)))
    return out


def verdict_name(verdict: bool | None) -> str:
    return {True: "correct", False: "incorrect", None: "not graded"}[verdict]
