"""What a record's model was asked, beyond the question field itself: MiP-Overthinking's question with a
premise removed (and whether the record's gold answer then answers another question), and answer options
kept apart from the question (MR-BEN's `Options`), and a prompt's closing turn opening left out. Used by
thinkprobe.io.detect."""
from __future__ import annotations

import re
from pathlib import Path

from .tags import TAG_PAIRS

__all__ = ["missing_premise", "premise_removed", "with_options", "without_turn_opening"]


# where a prompt hands over to the model: a role mark ("Assistant:", ChatML's, DeepSeek's), a reasoning tag
# opened for it, or both
_ROLE = r"\n[ \t]*Assistant[ \t]*:|<\|im_start\|>assistant|<｜Assistant｜>"
_TAG = "|".join(re.escape(opening) for opening, _ in TAG_PAIRS)
_TURN_OPENING = re.compile(rf"\s*(?:(?:{_ROLE})\s*(?:{_TAG})?|(?:{_TAG}))\s*\Z", re.IGNORECASE)


def without_turn_opening(question: str | None) -> str | None:
    """A whole prompt given as the question without the opening of the model's turn it ends with (Thought
    Anchors' "... Solution: \\n<think>\\n" and "... Assistant:\\n<think>\\n"): the template's words, not the
    question's."""
    if not question:
        return question
    found = _TURN_OPENING.search(question)
    return question[:found.start()] if found and found.start() else question


def missing_premise(record: dict) -> str | None:
    """MiP-Overthinking's missing-premise question, where a record whose output field does not name its
    prompt (`model_answer`: QwQ, s1.1, DSQ ...) holds it, beside the whole question or alone (svamp's phi3):
    only its missing-premise files do, and their models were asked it."""
    value = record.get("insufficient_question")
    return value if isinstance(value, str) and value.strip() else None


def with_options(record: dict, question: str | None) -> str | None:
    """The question with the record's answer options after it, where they stand apart (MR-BEN's `Options`,
    "A: ...\nB: ...", beside a `Question` that names none: its steps say "Choice A states ...")."""
    options = record.get("options", record.get("Options"))
    if isinstance(options, list) and options and all(isinstance(o, str) for o in options):
        options = "\n".join(f"{chr(65 + k)}. {o}" for k, o in enumerate(options[:26]))
    elif isinstance(options, dict) and options and all(isinstance(o, str) for o in options.values()):
        options = "\n".join(f"{k}. {o}" for k, o in options.items())
    if not question or not isinstance(options, str) or not options.strip() or options.strip()[:40] in question:
        return question
    return f"{question.rstrip()}\n{options.strip()}"


def premise_removed(record: dict, question: str | None, source: str) -> str | None:
    """Why a MiP-Overthinking record's gold does not answer what its model was asked, or None: the question
    it was asked is `insufficient_question`, or it holds no question and its file lies in the corpus's
    missing-premise folder (response/<dataset>/MiP/<model>/: svamp's DSQ, Gemma and Qwen32 keep only
    `model_answer`, `answer` and `eval_result`, as the whole question's files of math do)."""
    if question is not None and question == record.get("insufficient_question") != record.get("question"):
        return "the model was asked `insufficient_question`"
    if question is None and "MiP" in Path(source).parts[:-1]:
        return "the record holds no question and its file lies in MiP-Overthinking's missing-premise folder (MiP/)"
    return None
