"""Reasoning in a field no list names: a top-level field whose text carries reasoning tags is taken
(MiP-Overthinking keeps DeepSeek-R1's output in `deepseek-reasoner (question)`: reasoning, `</think>`,
answer); when none does, the error names the longest text field, the likeliest home of the reasoning.
"""
from __future__ import annotations

from typing import Iterable

from .tags import split_tags

__all__ = ["tagged_field", "longest_text_hint", "HINT_MIN_CHARS", "NOT_OUTPUT"]


HINT_MIN_CHARS = 200  # a shorter text is an answer or a label, not a reasoning to suggest


# Long texts that are the task, not the model's output (MATH's reference `solution`, MiP's premise-less question).
NOT_OUTPUT = ("solution", "reference_solution", "insufficient_question", "context", "passage", "system",
              "instruction", "system_prompt")


def _texts(record: dict, skip: Iterable[str]) -> list[tuple[str, str]]:
    skipped = {*skip, *NOT_OUTPUT}
    return [(str(k), v) for k, v in record.items()
            if isinstance(v, str) and v.strip() and str(k) not in skipped]


def tagged_field(record: dict, skip: Iterable[str]) -> tuple[str, str] | None:
    """(field, text) of the first top-level text field outside `skip` whose text holds reasoning tags."""
    return next(((k, v) for k, v in _texts(record, skip) if split_tags(v).tag is not None), None)


def longest_text_hint(record: dict, skip: Iterable[str]) -> str:
    """'; the longest text field is `F` (N characters): name it with --reasoning-field 'F'' or ''."""
    texts = _texts(record, skip)
    if not texts:
        return ""
    field, text = max(texts, key=lambda kv: len(kv[1]))
    if len(text) < HINT_MIN_CHARS:
        return ""
    return (f"; the longest text field is `{field}` ({len(text):,} characters): if it holds the reasoning, "
            f"name it with --reasoning-field '{field}'")
