"""The labelled corpora the failure-risk model is trained on (scripts/train_failure_risk.py),
read from their native files in ../shared/data (each folder's README says what its labels mean).

Every reader yields `Example`s: the reasoning text with the answer section cut off (what the
model is applied to: the independent check strips answers too), the model and domain, and
`wrong`, whether the final answer is wrong. The label is read from the record itself (a grade the
corpus ships, or the final answer compared with the gold one by `answers_match` where the corpus
ships none); the profile never sees it: `profile_records` writes records with only id, model,
domain, question and reasoning. Records without a usable label are left out.

    corpus              label (wrong =)                                  reasoning given to the profiler
    mip_overthinking    eval_result 2 (1 correct; 0 abstain, 3 format:   text before </think> (s1.1: between
                        left out); gsm8k/normal: boxed answer != gold;   "think" and "answer")
                        MiP formula / svamp left out (graded 0 / 1 only)
    tts_knowledge       grading B (A correct, C not attempted: left out)  `thought` (raw CoT models only)
    think_bench         boxed prediction != gold                          `think_content`
    reasoningflow       boxed / stated answer after </think> != gold      text before </think>
    thought_anchors     is_correct false                                  `solution` before </think>
    processbench        final_answer_correct false                        the steps
    big_bench_mistake   answer != target                                  the steps
    mr_ben              "Solution: Choice_X" != Ground_Truth_Answer       the steps but the last (the answer)
                        (_Modified where set)
"""
from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..redundancy.extraction import boxed_values
from ..redundancy.matching import answers_match

__all__ = ["Example", "CORPORA", "MATH_CORPORA", "read_corpus", "sample_examples", "final_answer"]


@dataclass(frozen=True)
class Example:
    id: str  # unique over all corpora: "<corpus>:<file>:<index>"
    corpus: str
    model: str
    domain: str
    question: str | None
    reasoning: str
    wrong: bool


_THINK_OPEN = re.compile(r"^\s*<think>\s*")
_PHRASE = re.compile(r"(?:final answer|answer)\s*(?:is|:)?\s*[:：]?\s*\**\s*\(?([^\n]{1,80})", re.IGNORECASE)


def _json(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _jsonl(path: Path) -> Iterator[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _before_think_close(text: str) -> tuple[str, str]:
    """(reasoning, answer) of a `<think>...</think>answer` text; no closing tag: all reasoning."""
    i = text.find("</think>")
    reasoning, answer = (text, "") if i < 0 else (text[:i], text[i + len("</think>"):])
    return _THINK_OPEN.sub("", reasoning), answer


def final_answer(text: str) -> str | None:
    """The last \\boxed{} value of an answer text, else the value after its last "answer is / Answer:"."""
    boxed = boxed_values(text)
    if boxed:
        return boxed[-1]
    found = _PHRASE.findall(text)
    return found[-1].strip(" *.)") if found else None


def _graded(answer_text: str, gold) -> bool | None:
    """Whether the final answer of `answer_text` is wrong; None when none is found."""
    pred = final_answer(answer_text)
    if pred is None or gold is None or not str(gold).strip():
        return None
    return not answers_match(pred, gold)


# ----------------------------------------------------------------------------- the readers

_MIP_MODELS = {"deepseekR1": "DeepSeek-R1", "QwQ": "QwQ-32B", "DSQ": "R1-Distill-Qwen-32B", "s1.1": "s1.1-32B"}


def _s1_split(text: str) -> tuple[str, str]:
    """s1.1's layout: "think\\n<reasoning>\\nanswer\\n<answer>"."""
    body = re.sub(r"^\s*think\s*\n", "", text)
    i = body.rfind("\nanswer\n")
    return (body, "") if i < 0 else (body[:i], body[i + len("\nanswer\n"):])


def _mip(root: Path) -> Iterator[Example]:
    for path in sorted((root / "mip_overthinking" / "response").glob("*/*/*/response.json.gz")):
        dataset, condition, model_dir = path.parts[-4:-1]
        # MiP formula / svamp grade only 0 / 1 (abstained / answered: no gold to be right about)
        if model_dir not in _MIP_MODELS or (condition == "MiP" and dataset != "math"):
            continue
        for k, item in enumerate(_json(path)):
            key = "insufficient_question" if condition == "MiP" else "question"
            text = item.get(f"deepseek-reasoner ({key})") or item.get("model_answer")
            if not isinstance(text, str) or not text.strip():
                continue
            reasoning, answer = _s1_split(text) if model_dir == "s1.1" else _before_think_close(text)
            grade = item.get("eval_result")
            if grade is not None:
                if int(grade) not in (1, 2):  # 0 abstains, 3 format error: not an answer to grade
                    continue
                wrong = int(grade) == 2
            elif dataset == "gsm8k" and condition == "normal":
                gold = str(item.get("answer", "")).rsplit("####", 1)[-1].strip()
                wrong = _graded(answer or reasoning[-2000:], gold)
                if wrong is None:
                    continue
            else:
                continue
            yield Example(f"mip:{dataset}/{condition}/{model_dir}:{k}", "mip_overthinking", _MIP_MODELS[model_dir],
                          f"{dataset}-{condition}", item.get(key) or item.get("question"), reasoning, wrong)


_TTS_MODELS = ("r1-distill-qwen-7b", "r1-distill-qwen-14b", "r1-distill-llama-8b", "qwen3-8b", "qwen3-14b",
               "gpt-oss-20b", "grok-3-mini")


def _tts(root: Path) -> Iterator[Example]:
    for model_dir in _TTS_MODELS:
        for path in sorted((root / "tts_knowledge" / "outputs" / model_dir).glob("*.jsonl.gz")):
            stem = path.name[: -len(".jsonl.gz")]
            if "no_think" in stem:
                continue
            bench = "simpleqa" if "simpleqa" in stem else "frames"
            for k, r in enumerate(_jsonl(path)):
                grade = str(r.get("grading", "")).strip().upper()
                text = r.get("thought")
                if grade not in ("A", "B") or not isinstance(text, str) or not text.strip():
                    continue
                reasoning, _ = _before_think_close(text)
                yield Example(f"tts:{stem}:{k}", "tts_knowledge", model_dir, bench, r.get("problem"), reasoning,
                              grade == "B")


def _think_bench(root: Path) -> Iterator[Example]:
    for k, r in enumerate(_jsonl(root / "think_bench_qwen3" / "qwen3-32b_think_bench.jsonl.gz")):
        wrong = _graded(r.get("prediction") or "", r.get("answer"))
        if wrong is None:
            continue
        reasoning, _ = _before_think_close(r.get("think_content") or "")
        yield Example(f"think_bench:{k}", "think_bench", "Qwen3-32B", r.get("category") or "unknown",
                      r.get("question"), reasoning, wrong)


def _reasoningflow(root: Path) -> Iterator[Example]:
    for k, r in enumerate(_jsonl(root / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz")):
        meta = r["metadata"]
        if meta["generator"] not in ("DeepSeek-R1", "QwQ-32B", "gpt-oss-120b") or meta["domain"] == "argkp":
            continue
        reasoning, answer = _before_think_close(r["raw_text"]["response"])
        wrong = _graded(answer, meta.get("correct_answer")) if answer.strip() else None
        if wrong is None:
            continue
        yield Example(f"reasoningflow:{r['doc_id']}", "reasoningflow", meta["generator"], meta["domain"],
                      r["raw_text"]["question"], reasoning, wrong)


def _thought_anchors(root: Path) -> Iterator[Example]:
    for path in sorted((root / "thought_anchors").glob("*/*/*/base_solution.json")):
        model, condition, problem = path.parts[-4:-1]
        b = _json(path)
        if b.get("is_correct") is None or not (path.parent / "problem.json").exists():
            continue
        reasoning, _ = _before_think_close(b.get("solution") or "")
        question = _json(path.parent / "problem.json").get("problem")
        yield Example(f"thought_anchors:{model}/{condition}/{problem}", "thought_anchors", model, "math-L5",
                      question, reasoning, not b["is_correct"])


def _processbench(root: Path) -> Iterator[Example]:
    for path in sorted((root / "processbench").glob("*.json")):
        for item in _json(path):
            yield Example(f"processbench:{item['id']}", "processbench", item["generator"], path.stem,
                          item["problem"], "\n\n".join(item["steps"]), not item["final_answer_correct"])


def _big_bench_mistake(root: Path) -> Iterator[Example]:
    for path in sorted((root / "big_bench_mistake").glob("*.jsonl")):
        for k, r in enumerate(_jsonl(path)):
            if r.get("answer") is None or r.get("target") is None:
                continue
            wrong = str(r["answer"]).strip().lower() != str(r["target"]).strip().lower()
            yield Example(f"bbm:{path.stem}:{k}", "big_bench_mistake", "PaLM-2-L", path.stem, r.get("input"),
                          "\n".join(r["steps"]), wrong)


_CHOICE = re.compile(r"Choice[_\s]*\(?([A-J])\b")


def _mr_ben(root: Path) -> Iterator[Example]:
    for path in sorted((root / "mr_ben").glob("*.json.gz")):
        subject = path.name.split(".")[0]
        if subject == "coding":
            continue
        for question, solutions in _json(path).items():
            for j, s in enumerate(solutions):
                steps = s.get("Model_Solution_Steps")
                if not isinstance(steps, list) or len(steps) < 2:
                    continue
                m = _CHOICE.search(steps[-1])
                # the corrected key where one is set (as `profile` reads it): the original is wrong there
                gold = str(s.get("Ground_Truth_Answer_Modified") or s.get("Ground_Truth_Answer") or "").strip()
                if not m or not re.fullmatch(r"[A-J]", gold):
                    continue
                yield Example(f"mr_ben:{question}:{j}", "mr_ben", s["Sampled_Model"], subject, s.get("Question"),
                              "\n".join(steps[:-1]), m.group(1) != gold)


CORPORA: dict[str, Callable[[Path], Iterable[Example]]] = {
    "mip_overthinking": _mip, "tts_knowledge": _tts, "think_bench": _think_bench, "reasoningflow": _reasoningflow,
    "thought_anchors": _thought_anchors, "processbench": _processbench, "big_bench_mistake": _big_bench_mistake,
    "mr_ben": _mr_ben,
}
# Math corpora of thinking models: the held-out evaluation the acceptance target is about.
MATH_CORPORA = ("mip_overthinking", "thought_anchors", "reasoningflow", "think_bench")


def read_corpus(name: str, root: str | Path) -> list[Example]:
    """Every labelled example of a corpus with a non-empty reasoning text."""
    return [e for e in CORPORA[name](Path(root)) if e.reasoning.strip()]


def sample_examples(examples: list[Example], per_stratum: int, seed: int = 0) -> list[Example]:
    """At most `per_stratum` examples of each (model, domain, wrong) cell, drawn with a seeded
    generator; every wrong and right cell of a model keeps its share up to the cap."""
    cells: dict[tuple, list[Example]] = {}
    for e in examples:
        cells.setdefault((e.model, e.domain, e.wrong), []).append(e)
    rng = random.Random(seed)
    out = []
    for key in sorted(cells):
        members = cells[key]
        out += members if len(members) <= per_stratum else rng.sample(members, per_stratum)
    return sorted(out, key=lambda e: e.id)
