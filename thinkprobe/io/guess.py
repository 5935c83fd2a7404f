"""Reasoning in a field no list names: a top-level field whose text carries reasoning tags is taken
(MiP-Overthinking keeps DeepSeek-R1's output in `deepseek-reasoner (question)`: reasoning, `</think>`,
answer); when none does, the error names the longest text field, the likeliest home of the reasoning.

A field named after a model and the field it answered (`gpt-4o (question)`, `o1 (insufficient_question)`:
MiP-Overthinking's layout) is that model's output: it names the record's model when nothing else does, and
untagged it is the model's whole output (a non-reasoning model's answer, under --untagged), unless the record
counts thinking tokens it does not hold (`o1 (question) thinking_token_count`): then the reasoning was hidden.
"""
from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from typing import Iterable

from .tags import split_tags

__all__ = ["is_code", "is_api_error", "is_output_field", "output_prompt", "tagged_field", "longest_text_hint", "step_texts", "HINT_MIN_CHARS", "NOT_OUTPUT", "OUTPUT_WORDS", "ModelOutput",
           "model_output", "HIDDEN_REASONING"]


HINT_MIN_CHARS = 200  # a shorter text is an answer or a label, not a reasoning to suggest


# Long texts that are the task or an annotation, not the model's output (MATH's reference `solution`, MiP's
# premise-less question, MR-BEN's reference analysis and its annotators' error notes).
NOT_OUTPUT = ("solution", "reference_solution", "insufficient_question", "context", "passage", "system",
              "instruction", "system_prompt", "Ground_Truth_Analysis", "Options", "Model_Solution_First_Error_Step",
              "Model_Solution_Error_Reason", "Model_Solution_Rectified_First_Error_Step")


def _outputs(record: dict, skip: Iterable[str]) -> list[tuple[str, object]]:
    """(field, value) of the record's top-level fields outside `skip` and NOT_OUTPUT."""
    skipped = {*skip, *NOT_OUTPUT}
    return [(str(k), v) for k, v in record.items() if str(k) not in skipped]


def _texts(record: dict, skip: Iterable[str]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in _outputs(record, skip) if isinstance(v, str) and v.strip()]


def step_texts(path: str, value: object) -> list[tuple[str, str]] | None:
    """(path, text) of each step of a list of texts, or of a list of lists of texts (ReasonEval's
    `model_output_step_format`: one list per step); None for anything else."""
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(v, str) for v in value):
        return [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    if all(isinstance(v, list) and v and all(isinstance(x, str) for x in v) for v in value):
        return [(f"{path}[{i}][{j}]", x) for i, v in enumerate(value) for j, x in enumerate(v)]
    return None


def tagged_field(record: dict, skip: Iterable[str]) -> tuple[str, str] | None:
    """(field, text) of the first top-level text field outside `skip` whose text holds reasoning tags."""
    return next(((k, v) for k, v in _texts(record, skip) if split_tags(v).tag is not None), None)


def longest_text_hint(record: dict, skip: Iterable[str]) -> str:
    """'; the longest text field is `F` (N characters): name it with --reasoning-field 'F'' or ''. A list
    of texts (ProcessBench's `steps`) counts as its texts joined."""
    texts = [(field, text, None) for field, text in _texts(record, skip)]
    for field, value in _outputs(record, skip):
        if steps := step_texts(field, value):
            texts.append((field, "\n".join(text for _, text in steps), len(value)))
    if not texts:
        return ""
    field, text, steps = max(texts, key=lambda kv: len(kv[1]))
    if len(text) < HINT_MIN_CHARS:
        return ""
    size = f"{len(text):,} characters" if steps is None else f"a list of {steps:,} texts, {len(text):,} characters"
    return (f"; the longest text field is `{field}` ({size}): if it holds the reasoning, "
            f"name it with --reasoning-field '{field}'")


# `<model> (<field>)` where <field> is another text field of the record (the prompt the model answered,
# MiP-Overthinking) or a word for a model's output (`deepseek-reasoner (response)`, Schoenfeld episodes)
OUTPUT_WORDS = ("response", "output", "completion", "generation")
_OUTPUT_KEY = re.compile(r"^(?P<model>[^()]*[^()\s]) \((?P<prompt>[^()]+)\)$")
_HIDDEN_SUFFIX = " thinking_token_count"

HIDDEN_REASONING = "reasoning not returned"


@dataclass(frozen=True)
class ModelOutput:
    """A field holding a named model's output: the field, the model's name, its text, and the thinking
    tokens the record counts for it without holding them (None when it has no such count; 0 where the
    model did not think on this record: its output is the answer all the same)."""

    field: str
    model: str
    text: str
    hidden_tokens: int | None = None

    def hidden_reason(self) -> str:
        """The skip reason of an output whose reasoning the record does not hold."""
        counted = (f"counts {self.hidden_tokens:,} thinking tokens the record does not hold" if self.hidden_tokens else
                   "counts no thinking tokens (the model answered without reasoning)")
        return (f"{HIDDEN_REASONING}: `{self.field}{_HIDDEN_SUFFIX}` {counted}, so `{self.field}` is the final answer "
                f"only; to profile that answer as the reasoning, name it with --reasoning-field '{self.field}'")


def model_output(record: dict) -> ModelOutput | None:
    """The first top-level field named `<model> (<field>)` whose <field> is a text field of the record or
    one of OUTPUT_WORDS and whose own value is non-empty text; None when no field is named so."""
    for key, value in record.items():
        match = _OUTPUT_KEY.match(str(key))
        if not match or not isinstance(value, str) or not value.strip():
            continue
        if match["prompt"] not in OUTPUT_WORDS and not isinstance(record.get(match["prompt"]), str):
            continue
        hidden = record.get(f"{key}{_HIDDEN_SUFFIX}")  # an int, or its digits (MiP-Overthinking's svamp files)
        hidden = int(hidden) if isinstance(hidden, str) and hidden.strip().isdigit() else hidden
        counted = hidden if isinstance(hidden, int) and not isinstance(hidden, bool) and hidden >= 0 else None
        return ModelOutput(str(key), match["model"].strip(), value, counted)
    return None


def is_output_field(key: str | None) -> bool:
    """Whether a field is named as a model's whole output, `<model> (<field>)` ("o1 (question)")."""
    return _OUTPUT_KEY.match(str(key or "")) is not None


def output_prompt(record: dict, key: str | None) -> str | None:
    """The prompt a `<model> (<field>)` output answers: the record's <field> text (MiP-Overthinking's
    `deepseek-reasoner (insufficient_question)` answers `insufficient_question`, not `question`); None
    for any other key, or a <field> that is one of OUTPUT_WORDS.

    >>> output_prompt({"question": "Q", "insufficient_question": "Q'"}, "o1 (insufficient_question)")
    "Q'"
    """
    match = _OUTPUT_KEY.match(str(key or ""))
    if not match or match["prompt"] in OUTPUT_WORDS:
        return None
    value = record.get(match["prompt"])
    return value if isinstance(value, str) and value.strip() else None


# What prose never parses into: definitions, imports, compound statements.
_CODE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.For, ast.While,
               ast.If, ast.With, ast.Try)


IS_CODE_MAX_CHARS = 200_000  # no model-written solution is longer; parsing 200 KB peaks near 40 MB
_CODE_LINE = re.compile(r"^[ \t]*(?:async[ \t]+def|def|class|import|from|for|while|if|with|try)\b", re.MULTILINE)


def is_code(text: str) -> bool:
    """Whether a reasoning text is a Python program rather than prose: it parses as Python and holds a
    definition, an import or a compound statement (a bare word or "x = 5" parses too, prose never does
    with these). MR-BEN's coding solutions are such programs.

    >>> is_code("def f(x):\\n    return x + 1"), is_code("So x = 5. Then we stop."), is_code("Hmm")
    (True, False, False)

    Parsing costs 100-200 times a text's size in memory ("Wait, Wait, ..." is a valid tuple), so a text
    with no line opening such a statement, or longer than IS_CODE_MAX_CHARS, is prose unparsed.
    """
    if len(text) > IS_CODE_MAX_CHARS or not _CODE_LINE.search(text):
        return False
    try:
        with warnings.catch_warnings():  # "\d" in a string literal of the program: a SyntaxWarning
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return any(isinstance(node, _CODE_NODES) for node in ast.walk(tree))


# An API call that failed, written where the output should be (MiP-Overthinking: "Error after 6 attempts:
# Error code: 500 - {'error': {'message': 'Internal Server Error', ...}}", "Error after 6 attempts: Expecting
# value: line 10 column 1 (char 9)"): a short untagged text that opens with an error and carries a client's
# or server's signature: retries counted right after it, an error or status code, an HTTP reason phrase, a
# JSON error payload, or an API client's exception class (RateLimitError:). Words alone ("Error in the question: the rate limit ...",
# "Exception handling: set a timeout") are not enough: an answer may say them.
API_ERROR = re.compile(
    r"\s*(?:error after \d+ (?:attempts|retries|tries)\b|(?:\[?error\]?\b|exception\b|traceback \(most recent call last\))"
    r"(?=.*?(?:(?:error|status) code\s*[:=]?\s*[1-5]\d\d\b|\b(?:internal server error|service unavailable|bad gateway|"
    r"gateway time-?out|too many requests)\b|['\"]error['\"]\s*:\s*[{'\"]|"
    r"\b\w*(?:api|ratelimit|connection|timeout|authentication|server|http|request|unavailable)\w*(?:error|exception):)))",
    re.IGNORECASE | re.DOTALL)
API_ERROR_MAX_CHARS = 2000


def is_api_error(text: str) -> bool:
    """Whether an untagged text is a failed API call's error message rather than a model's output.

    >>> is_api_error("Error after 6 attempts: Error code: 500 - {'error': {'message': 'Internal Server Error'}}")
    True
    >>> is_api_error("Error in my reasoning: 5 + 3 is 8, not 9.")
    False
    """
    return len(text) <= API_ERROR_MAX_CHARS and API_ERROR.match(text) is not None
