"""Where every record of a run went, gathered while the committed chunks are joined
(thinkprobe.runner.join_parts) and written to run.json, the printed summary and the report:

- coverage: per input file and per model, records read, traces profiled and records skipped by
  reason; a file or model with no trace profiled is a warning naming it;
- answers without thinking: an untagged text (no reasoning field, no reasoning tags) of a model whose
  other records carry reasoning, and shorter than that model's median reasoning, is the model's
  answer given without thinking (Qwen3's no-think outputs beside its thinking traces). It is skipped
  with that reason, or with ``--untagged separate`` profiled under ``<model>:no-think``. A longer
  one is kept as reasoning (MiP's R1-Distill traces cut off before their closing tag). Traces without a
  model (grouped as "unknown") are judged per input file, not together: a file of a non-reasoning model
  is not measured against another file's reasoning;
- grades: where each trace's verdict came from (the record's own grade, or the final answer matched
  against the gold answer), and how often the matcher disagrees with a record's grade.
"""
from __future__ import annotations

import json
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from .io.detect import record_position
from .io.formats import record_locator
from .io.grades import SOLUTION_LABELS, verdict_name
from .io.guess import HIDDEN_REASONING, OUTPUT_WORDS
from .redundancy import answers_match, has_gold, has_grade, is_expression
from .progress import one_line
from .segment import LOOP_MAX_PERIOD, longest_repeat

__all__ = ["NO_THINK", "ANSWER_WITHOUT_THINKING", "KEPT_LONG", "UntaggedAnswers", "Accounting", "reason_kind", "format_coverage"]


NO_THINK = ":no-think"  # appended to the model of its answers without thinking under --untagged separate


ANSWER_WITHOUT_THINKING = ("answer without thinking: untagged text of a model whose other records carry reasoning, "
                           "shorter than its median reasoning (--untagged separate profiles these as <model>"
                           f"{NO_THINK})")


_UNTAGGED = b'"untagged": true'  # as json.dumps writes a graph record's provenance


def reasoning_chars(g: Mapping) -> int:
    return sum(s["end"] - s["start"] for s in g.get("sections") or () if s.get("name") == "reasoning")


def _producer(g: Mapping) -> str:
    """Whose answers a trace is judged among: its model, or for a trace without one ("unknown"), its file."""
    return g["model"] if g["model"] != "unknown" else f"unknown\x00{g['source']}"


def answer_scan(g: Mapping) -> dict:
    """What UntaggedAnswers.scan reads of a graph record, written first on its part line
    (runner.finish_line) so that the scan decodes it alone, not the whole record."""
    return {"producer": _producer(g), "untagged": bool(g["provenance"].get("untagged")), "chars": reasoning_chars(g)}


SCAN_PREFIX = '{"scan": '  # how a part line that carries answer_scan starts
_DECODER = json.JSONDecoder()


class UntaggedAnswers:
    """Which untagged traces of a run are a model's answers without thinking (see the module doc):
    the median reasoning length of every model (for traces without a model: every file) that has both
    untagged and reasoning-bearing traces."""

    def __init__(self, medians: Mapping[str, float] | None = None):
        self.medians = dict(medians or {})

    @classmethod
    def scan(cls, parts: Iterable[Path]) -> "UntaggedAnswers":
        """One pass over the committed chunks (skipped when none holds an untagged trace)."""
        parts = list(parts)
        if not any(_UNTAGGED in p.read_bytes() for p in parts):
            return cls()
        lengths: dict[str, list[int]] = defaultdict(list)
        untagged: set[str] = set()
        for part in parts:
            with open(part, encoding="utf-8") as f:
                for line in f:
                    if line.startswith(SCAN_PREFIX):  # decode the scan entry only
                        info = _DECODER.raw_decode(line, len(SCAN_PREFIX))[0]
                    elif (g := json.loads(line).get("graph")) is not None:  # a chunk of an older run
                        info = answer_scan(g)
                    else:
                        continue
                    if info["untagged"]:
                        untagged.add(info["producer"])
                    else:
                        lengths[info["producer"]].append(info["chars"])
        return cls({m: statistics.median(lengths[m]) for m in sorted(untagged) if lengths.get(m)})

    def is_answer(self, g: Mapping) -> bool:
        median = self.medians.get(_producer(g))
        return median is not None and bool(g["provenance"].get("untagged")) and reasoning_chars(g) < median

    def kept_long(self, g: Mapping) -> bool:
        """Whether an untagged trace is kept as reasoning for being longer than its model's median reasoning,
        where the model's other traces carry reasoning (MiP's DSQ, thinking cut off before its closing tag)."""
        return _producer(g) in self.medians and bool(g["provenance"].get("untagged")) and not self.is_answer(g)

    def apply(self, g: dict, policy: str) -> dict | None:
        """The graph record to keep (renamed under policy "separate"; marked cut off, provenance truncated and
        kept_long, when kept for its length), or None when it is skipped."""
        if self.kept_long(g):  # thinking cut off before its closing tag: its closing unit answers nothing
            return {**g, "provenance": {**g["provenance"], "truncated": True, "kept_long": True}}
        if not self.is_answer(g):
            return g
        if policy == "separate":
            return {**g, "model": g["model"] + NO_THINK, "provenance": {**g["provenance"], "no_think_of": g["model"]}}
        return None

    @staticmethod
    def error(g: Mapping) -> dict:
        """The errors.jsonl line of an answer without thinking left out of its model's profile."""
        reasoning = next((s["field"] for s in g.get("sections") or () if s.get("name") == "reasoning"), "reasoning")
        return {"file": g["source"], "record": record_locator(g["source"], g["record"]), "field": reasoning, "reason": ANSWER_WITHOUT_THINKING,
                "model": g["model"], "trace_id": g["trace_id"]}


KEPT_LONG = ("longer than the median reasoning of its model, whose other traces carry reasoning tags: kept as "
             "reasoning cut off before its closing tag (as MiP-Overthinking's R1-Distill traces?), not a non-reasoning "
             "model's output: its last unit is read as no final answer (provenance truncated, kept_long)")


# a field named as a model's output: "model_answer", "response", `o1 (question)` ...
_OUTPUT_NAME = re.compile("|".join(("answer", *OUTPUT_WORDS, r"\)$")), re.IGNORECASE)
_REASON_END = re.compile(r"[;:(]| in \d| at byte| over the limit")


def reason_kind(reason: str) -> str:
    """A skip reason without its record-specific detail, for counting: "no reasoning text found; tried
    ..." -> "no reasoning text found"; "malformed JSON: Expecting value (column 3)" -> "malformed JSON"."""
    if reason == ANSWER_WITHOUT_THINKING:
        return "answer without thinking"
    if re.match(r"\d+ Thought Units, over the limit", reason):
        return "over the Thought Unit limit"
    if re.match(r"trace text of [\d,]+ characters \(.*\), over the limit", reason):
        return "over the character limit"
    if re.match(r"repeats .{1,80}? of its file exactly", reason):
        return "repeats an earlier record of its file exactly"
    cut = _REASON_END.search(reason)
    return (reason[: cut.start()] if cut and cut.start() > 0 else reason).strip().rstrip(",") or "skipped"


@dataclass
class _Tally:
    records: set = field(default_factory=set)
    batch_records: int = 0  # the rows of refused batches ("rows 3-9": a Parquet row group, an Arrow batch)
    traces: int = 0
    reasons: Counter = field(default_factory=Counter)  # records skipped, by reason
    not_read: Counter = field(default_factory=Counter)  # files (or their rest) not read, records unknown, by reason
    hint: str = ""  # the first option a skip reason suggests ("--reasoning-field 'steps'"), for the warning

    def row(self) -> dict:
        return {"records": len(self.records) + self.batch_records, "traces": self.traces,
                "skipped": sum(self.reasons.values()), "reasons": _by_count(self.reasons),
                "not_read": _by_count(self.not_read)}


def _by_count(counts: Counter) -> dict:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _position(file: str, record) -> object:
    """An error's record as its trace names it: "line N" of a JSON Lines file is position N - 1
    (record_locator); any other locator is itself (a CSV's "line N" of a line skipped unread is no
    row position, and "sample x" is no position at all: both had been taken for record 0)."""
    if isinstance(record, str) and record.startswith("line ") and record_locator(file, 0) == "line 1":
        return record_position(record)
    return record


_BATCH = re.compile(r"rows (\d+)-(\d+)")  # the locator of a refused batch of rows (thinkprobe.io.columnar)


DISAGREEMENT_EXAMPLES = 10
_HINT = re.compile(r"--[a-z-]+-field '[^']+'")  # an option a skip reason suggests, with its value


@dataclass
class Accounting:
    """Coverage and grade counts of a run, fed one graph record or skipped record at a time."""

    files: dict[str, _Tally] = field(default_factory=lambda: defaultdict(_Tally))
    models: dict[str, _Tally] = field(default_factory=lambda: defaultdict(_Tally))
    grades: Counter = field(default_factory=Counter)
    grade_fields: Counter = field(default_factory=Counter)
    unread: Counter = field(default_factory=Counter)
    unread_value: dict = field(default_factory=dict)  # the first unread value per field, for the hint
    shared: Counter = field(default_factory=Counter)  # one record-level grade for several choices: not applied
    few_units: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))  # model -> file -> traces
    few_untagged: Counter = field(default_factory=Counter)  # model -> those of its few_units traces that are untagged
    # file -> traces whose reasoning is untagged text with no question beside it (a file of prompts?)
    untagged_alone: Counter = field(default_factory=Counter)
    # model -> [(copies, trace_id, the sentence, period)] of traces holding a repetition loop (LOOP_MIN copies in a row
    # of a sentence, period 1, or of a block of `period` sentences)
    loops: dict[str, list] = field(default_factory=lambda: defaultdict(list))
    checked: int = 0  # traces with both a grade (correct or incorrect) and a gold answer
    disagreements: list[dict] = field(default_factory=list)
    disagreement_count: int = 0

    def trace(self, g: Mapping) -> None:
        key = (g["source"], g["record"])
        for tally in (self.files[g["source"]], self.models[g["model"]]):
            tally.records.add(key)
            tally.traces += 1
        provenance = g.get("provenance") or {}
        if sum(u.get("section") == "reasoning" for u in g.get("units") or ()) <= FEW_UNITS:
            self.few_units[g["model"]][g["source"]] += 1
            self.few_untagged[g["model"]] += bool(provenance.get("untagged"))
        if loop := repetition_loop(g.get("units") or ()):
            copies, period, text = loop
            self.loops[g["model"]].append((copies, str(g.get("trace_id")), text, period))
        if provenance.get("untagged") and not g.get("question") and not _OUTPUT_NAME.search(provenance.get("reasoning_from") or ""):
            self.untagged_alone[g["source"]] += 1  # a field named as a model's output holds no question (svamp's model_answer)
        self._grade(g)

    def skipped(self, error: Mapping) -> None:
        """An errors.jsonl line: a record skipped; a refused batch ("rows 3-9"), each of its rows a
        record skipped; or a file not read, or its rest (record "file": how many records it holds is
        not known, so it counts as none, under not_read)."""
        file, record = str(error.get("file")), error.get("record")
        reason = str(error.get("reason", ""))
        kind = reason_kind(reason)
        model = error.get("model") or "unknown"
        tallies = [self.files[file]] + ([] if record == "file" else [self.models[model]])
        # an option a skip reason suggests; not where the reasoning was not returned: naming the answer's field
        # there profiles the final answer as reasoning (o1's `o1 (insufficient_question)`)
        hint = None if reason.startswith(HIDDEN_REASONING) else _HINT.search(reason)
        batch = _BATCH.fullmatch(record) if isinstance(record, str) else None
        for tally in tallies:
            if record == "file":
                tally.not_read[kind] += 1
            elif batch:
                rows = int(batch.group(2)) - int(batch.group(1)) + 1
                tally.batch_records += rows
                tally.reasons[kind] += rows
            else:
                tally.records.add((file, _position(file, record)))
                tally.reasons[kind] += 1
            if hint and not tally.hint:
                tally.hint = hint.group(0)

    def _grade(self, g: Mapping) -> None:
        provenance = g.get("provenance") or {}
        metrics = (g.get("redundancy") or {}).get("metrics") or {}
        if has_grade(g):
            self.grades[f"record {verdict_name(g.get('correct'))}"] += 1
            self.grade_fields[provenance.get("correct_from") or "correct"] += 1
            gold = g.get("gold_answer")
            if isinstance(g.get("correct"), bool) and gold is not None and str(gold).strip():
                final = (g.get("redundancy") or {}).get("final_answer")
                matched = bool(final) and answers_match(final["value"], gold)
                self.checked += 1
                if matched != g["correct"]:
                    self.disagreement_count += 1
                    if len(self.disagreements) < DISAGREEMENT_EXAMPLES:
                        self.disagreements.append({
                            "trace_id": g["trace_id"], "model": g["model"], "grade": provenance.get("grade"),
                            "grade_from": provenance.get("correct_from"), "gold": str(gold),
                            "final_answer": final["value"] if final else None,
                            "matcher": "correct" if matched else "incorrect"})
        elif metrics.get("Acc") in (0, 1):
            self.grades[f"matcher {verdict_name(bool(metrics['Acc']))}"] += 1
            if is_expression(g.get("gold_answer")):
                self.grades["matcher expression"] += 1
                self.grades["matcher expression incorrect"] += not metrics["Acc"]
            if not metrics["Acc"] and not (g.get("redundancy") or {}).get("final_answer"):
                self.grades["matcher no answer"] += 1  # incorrect because no answer was found at all
        elif has_gold(g) and not (g.get("redundancy") or {}).get("final_answer"):
            self.grades["matcher unanswered"] += 1  # no answer found, left ungraded (unanswered: ungraded)
        else:
            self.grades["none"] += 1
        if provenance.get("shared_grade"):
            self.shared[provenance["shared_grade"].partition("=")[0]] += 1
        if provenance.get("gold_not_asked"):
            self.grades["gold not asked"] += 1
            if has_grade(g):  # graded by the record's own grade (MiP's eval_result mapped with --correct-values)
                self.grades["gold not asked graded"] += 1
                self.grades["gold not asked correct"] += g.get("correct") is True
                # of those, read from eval_result 1 (the answer matches the whole question's): a made-up premise;
                # a user who also mapped 0 (an abstention) to correct has both kinds among the 'correct'
                self.grades["gold not asked made up"] += g.get("correct") is True and str(provenance.get("grade")) == "1"
        if provenance.get("unread_grade"):
            name, _, value = provenance["unread_grade"].partition("=")
            self.unread[name] += 1
            self.unread_value.setdefault(name, value.split(",")[0][:40])

    # ------------------------------------------------------------------------- results

    def coverage(self) -> dict:
        return {"by_file": [{"file": f, **t.row()} for f, t in sorted(self.files.items())],
                "by_model": [{"model": m, **t.row()} for m, t in sorted(self.models.items())],
                "what": "records read (a record may give several traces: one per generation), traces profiled and "
                        "records skipped by reason (a refused batch of rows counts its rows), per input file and per "
                        "model; not_read: files, or the rest of a file, refused unread, whose records are not known "
                        "(counted as none), by reason; errors.jsonl lists every skip"}

    def grade_summary(self) -> dict:
        return {
            "from_records": {v: self.grades[f"record {v}"] for v in ("correct", "incorrect", "not graded")},
            "fields": dict(sorted(self.grade_fields.items())),
            "from_matcher": {v: self.grades[f"matcher {v}"] for v in ("correct", "incorrect")},
            "matcher_no_answer": self.grades["matcher no answer"],
            "matcher_unanswered": self.grades["matcher unanswered"],
            "none": self.grades["none"],
            "gold_not_asked": self.grades["gold not asked"],
            "gold_not_asked_graded": self.grades["gold not asked graded"],
            "gold_not_asked_correct": self.grades["gold not asked correct"],
            "gold_not_asked_made_up": self.grades["gold not asked made up"],
            "matcher_expressions": self.grades["matcher expression"],
            "matcher_expressions_incorrect": self.grades["matcher expression incorrect"],
            "unread_codes": dict(sorted(self.unread.items())),
            "unread_examples": dict(sorted(self.unread_value.items())),
            "shared_grades": dict(sorted(self.shared.items())),
            "matcher_checked": self.checked,
            "matcher_disagrees": self.disagreement_count,
            "disagreements": self.disagreements,
            "what": "a record's own grade (from_records) always decides its verdict; the final answer is matched "
                    "against the gold answer (from_matcher) only where the record has no grade; matcher_no_answer: "
                    "those counted incorrect because no final answer was found in them; matcher_unanswered: traces "
                    "with a gold answer and no final answer found, left ungraded (--unanswered ungraded); "
                    "gold_not_asked: traces whose "
                    "record's gold answer answers another question than the one the model was asked (MiP-Overthinking's "
                    "question with a premise removed), so it is not used (gold_not_asked_graded of them graded by the record's own "
                    "grade, gold_not_asked_correct of those correct, gold_not_asked_made_up of those read from a grade "
                    "value 1: an answer matching the whole question's); matcher_expressions: traces the matcher judged "
                    "against a gold answer that is a formula or an equation, not a number, option or phrase "
                    "(matcher_expressions_incorrect of them judged incorrect): compared as normalised text, an "
                    "equivalent expression written otherwise counts as incorrect. matcher_disagrees: "
                    "traces with a grade and a gold answer where the matcher would have said otherwise (of "
                    "matcher_checked); unread_codes: traces whose grade field holds codes (or, named with --correct-field, "
                    "words) that only --correct-values can read, with one such value per field in unread_examples; "
                    "shared_grades: traces that are one of a record's several choices or generations, whose one "
                    "record-level grade is not applied to each (which it grades is not known; the matcher grades "
                    "them), by field",
        }

    def warnings(self) -> list[str]:
        """One line per input file and per model (a named one) of which no trace was profiled; none when
        the run profiled nothing at all (the run says that itself)."""
        out = []
        if not any(t.traces for t in self.files.values()):
            return out
        for kind, tallies in (("file", self.files), ("model", self.models)):
            for name, t in sorted(tallies.items()):
                if t.traces == 0 and not (kind == "model" and name == "unknown"):
                    row = t.row()
                    why = ", ".join(f"{reason} {n}" for reason, n in row["reasons"].items())
                    unread = "not read: " + ", ".join(row["not_read"]) if row["not_read"] else ""
                    n = row["records"]
                    if not n and unread:
                        out.append(f"{kind} {name}: {unread} (see errors.jsonl)")
                        continue
                    out.append(f"{kind} {name}: no trace profiled from its {n} record{'' if n == 1 else 's'} "
                               f"({row['skipped']} skipped: {why}{'; ' + unread if unread else ''}; see errors.jsonl)"
                               + (f"; if one of their fields holds a model's reasoning, name it: {t.hint}" if t.hint else "")
                               # other files gave traces: most often a file of the questions or of reference solutions
                               # (Schoenfeld's SAT.json, whose 'Rationale' is the official solution)
                               + ("; if they are questions or reference solutions rather than a model's output (other "
                                  "files gave traces), leave the file out" if kind == "file" and t.hint else ""))
        return out

    def short_warnings(self) -> list[str]:
        """Traces that are likely not a reasoning as given. One line per model (traces without one
        together) of which at least FEW_UNITS_SHARE of at least FEW_UNITS_MIN traces hold at most
        FEW_UNITS Thought Units of reasoning: most often a file whose records are the sentences of one
        text (Schoenfeld et al.'s labelled responses), each profiled as a whole trace; of those, the
        records that reach the run are often a closing "**Final Answer** \boxed{A}</think>" of two
        units. One line per file whose every trace is untagged text with no question beside it, where
        another file's traces are not: most often a file of the questions themselves beside the
        outputs (Venhoff et al.'s messages.json). A non-reasoning model's outputs come with their
        questions (MiP-Overthinking's gpt4o files): the per-model count of untagged text speaks of those."""
        out = []
        if any(t.traces > self.untagged_alone[f] for f, t in self.files.items()):
            for f, n in sorted(self.untagged_alone.items()):
                if n == self.files[f].traces:
                    out.append(f"file {f}: all {n} of its traces are untagged text with no question beside them (no "
                               "reasoning field, tags or question field) where other files' traces are not; if it holds "
                               "questions or prompts rather than a model's output, leave it out of the inputs (name the "
                               "other files, or a --path-pattern it does not match)")
        for model, files in sorted(self.few_units.items()):
            n, total = sum(files.values()), self.models[model].traces
            if total >= FEW_UNITS_MIN and n >= FEW_UNITS_SHARE * total:
                where = ", ".join(f"{k} in {f}" for f, k in files.most_common(3))
                more = f", ... ({len(files)} files)" if len(files) > 3 else ""
                # untagged (no reasoning field or tags): a model's answers given without thinking, most often
                # (tts_knowledge's *_no_think files), which no option of the input can turn into reasoning
                untagged = self.few_untagged[model]
                why = (f"; {untagged} of them are untagged text (no reasoning field or tags): answers given without "
                       "thinking? They hold no reasoning to profile: leave them out (--untagged skip); or, if a file's "
                       "records are the sentences of one text, join them into one record first" if 2 * untagged >= n
                       else "; each record is profiled as a whole trace, so if a file's records are the sentences of "
                            "one text, join them into one record first")
                out.append(f"model {one_line(model)}: {n} of {total} traces hold at most {FEW_UNITS} Thought Units of reasoning "
                           f"({where}{more}){why}; the indicators of so short a trace say little about reasoning")
        return out


    def loop_warnings(self) -> list[str]:
        """One line per model some of whose traces hold a repetition loop: one sentence, or a block of up to
        LOOP_MAX_PERIOD, LOOP_MIN or more times in a row (a decoding that degenerated, often until the length
        limit). Every copy is a unit, so the trace's indicators describe the loop (QwQ-32B's 563 copies:
        max_chain_depth 573; gpt-4o's 505 copies of 3 sentences: redundancy_ratio 0.001)."""
        out = []
        for model, found in sorted(self.loops.items()):
            found = sorted(found, key=lambda x: (-x[0], x[1]))
            said = "; ".join(f"{t}: {n} times, {one_line(text)[:60]!r}" + (f" and the {p - 1} after it" if p > 1 else "")
                             for n, t, text, p in found[:3])
            out.append(f"model {one_line(model)}: {len(found)} of {self.models[model].traces} traces hold a repetition loop "
                       f"(one sentence, or a block of up to {LOOP_MAX_PERIOD}, {LOOP_MIN} or more times in a row: {said}"
                       f"{', ...' if len(found) > 3 else ''}); every "
                       "copy is profiled as a Thought Unit, so those traces' indicators describe the loop: read their pages "
                       "before their profile, or leave them out (--max-repeat 10)")
        return out


LOOP_MIN = 10  # copies in a row of one sentence that make a repetition loop (the summary's warning)


def repetition_loop(units) -> tuple[int, int, str] | None:
    """(copies, period, text) of the most copies in a row of one reasoning unit (graphs.jsonl's) or of a block of
    them (segment.longest_repeat), where they reach LOOP_MIN; else None.

    >>> repetition_loop([{"section": "reasoning", "text": t} for t in ["So x = 2."] + ["Wait, no."] * 12])
    (12, 1, 'Wait, no.')
    """
    found = longest_repeat(str(u.get("text", "")) for u in units if u.get("section") == "reasoning")
    return found if found[0] >= LOOP_MIN else None


FEW_UNITS = 2  # Thought Units of reasoning a trace may hold and still be counted as likely no reasoning as given
FEW_UNITS_MIN = 5  # traces of a model before its share of such traces is judged
FEW_UNITS_SHARE = 0.5


def format_coverage(coverage: Mapping, grades: Mapping | None = None, max_rows: int = 30) -> str:
    """The coverage as a plain-text table (printed summary): per file, then per model."""
    lines = []
    for key, label in (("by_model", "model"), ("by_file", "file")):
        rows = coverage.get(key) or []
        if not rows:
            continue
        names = [one_line(r[label]) for r in rows[:max_rows]]
        width = max(len(label), *(len(n) for n in names))
        lines.append(f"{label:<{width}} {'records':>8} {'traces':>7} {'skipped':>8}  reasons")
        for name, r in zip(names, rows):
            reasons = ", ".join([f"{k} {v}" for k, v in r["reasons"].items()]
                                + [f"not read: {k}" + (f" {v}" if v > 1 else "") for k, v in r.get("not_read", {}).items()])
            lines.append(f"{name:<{width}} {r['records']:>8} {r['traces']:>7} {r['skipped']:>8}  {reasons}".rstrip())
        if len(rows) > max_rows:
            lines.append(f"... {len(rows) - max_rows} more (run.json coverage)")
        lines.append("")
    if grades:
        rec, mat = grades["from_records"], grades["from_matcher"]
        lines.append(f"grades: {sum(rec.values())} from the records ({rec['correct']} correct, {rec['incorrect']} "
                     f"incorrect, {rec['not graded']} ungraded by their grade, e.g. not attempted: left out of Acc)" + (
                         f" in {', '.join(grades['fields'])}" if grades["fields"] else "")
                     + f"; {sum(mat.values())} by matching the answer"
                     + (f" ({mat['incorrect']} incorrect, of which {grades['matcher_no_answer']} because no final answer "
                        f"was found in them: unfinished solutions are left ungraded with --unanswered ungraded)"
                        if grades.get("matcher_no_answer") else
                        f" ({mat['incorrect']} incorrect)" if sum(mat.values()) else "")
                     + (f"; {grades['matcher_unanswered']} with no final answer found, left ungraded (--unanswered "
                        f"ungraded)" if grades.get("matcher_unanswered") else "")
                     + f"; {grades['none']} with neither a grade nor a gold answer")
        lines.extend(grade_notes(grades, advice=True))
    return "\n".join(lines).rstrip()


def grade_notes(grades: Mapping, advice: bool = False) -> list[str]:
    """The sentences that qualify a run's grades (run.json `grades`), worded once for the printed summary
    and the report; `advice`: each with what to do about it (the summary)."""
    out = []
    if n := grades.get("gold_not_asked"):
        graded, correct = grades.get("gold_not_asked_graded", 0), grades.get("gold_not_asked_correct", 0)
        made_up = grades.get("gold_not_asked_made_up", correct)  # a run before 2026-12-08 did not count them apart
        said = (f"{n} traces answer a question with a premise removed (MiP-Overthinking's insufficient_question, or "
                "no question in a file of its MiP folder): their record's gold answer is the whole question's, so it is "
                "not matched (provenance gold_not_asked)")
        if graded:  # a new user mapped eval_result 1 to correct: a made-up premise's answer counted right
            said += (f"; {graded} of them carry a grade of their own, {correct} of those 'correct'"
                     + (f", {made_up} of them from a grade 1" if made_up != correct else "")
                     + ": MiP-Overthinking's eval_result 1 says the answer matches the whole question's, which a question "
                     "with a premise removed does not have (abstaining, 0, is the right answer there), so such a 'correct' "
                     "is a made-up premise"
                     + (f"; the other {correct - made_up} {'is' if correct - made_up == 1 else 'are'} read from other "
                        "values (0, an abstention?)."
                        if made_up != correct else "."))
        else:
            said += ("; grade them by the record's own grade, if any, with --correct-field." if advice
                     else ": without a grade of their own they are ungraded.")
        out.append(said)
    if n := grades.get("matcher_expressions"):
        out.append(f"{n} of the traces graded by matching have a formula or an equation for gold answer "
                   f"({grades['matcher_expressions_incorrect']} judged incorrect): they are compared as normalised "
                   "text, so an equivalent expression written otherwise counts as incorrect"
                   + ("; check some by hand (run.json grades)." if advice else "."))
    if grades.get("matcher_checked"):
        out.append(f"The answer matcher disagrees with the record's grade on {grades['matcher_disagrees']} of "
                   f"{grades['matcher_checked']} traces that have both (the grade is kept; run.json "
                   "grades.disagreements).")
    for name, n in (grades.get("shared_grades") or {}).items():
        out.append(f"{n} traces are each one of a record's several choices or generations, and the record holds one "
                   f"grade, `{name}`: which of them it grades is not known, so it is not applied (the answer matcher "
                   f"grades each; --correct-field {name} gives the record's grade to every one).")
    for name, n in (grades.get("unread_codes") or {}).items():
        example = (grades.get("unread_examples") or {}).get(name, "")
        if name in SOLUTION_LABELS:
            out.append(f"{n} traces carry `{name}`, a label of the whole solution (a wrong step on the way to the "
                       f"right answer makes it incorrect), not of the final answer: the answer matcher grades them; "
                       f"--correct-field {name} grades by the label instead.")
        elif example and not example.strip().lstrip("-").replace(".", "", 1).isdigit():  # words: name their meaning
            out.append(f"{n} traces carry `{name}` values no default reads (e.g. '{example}'), so they are not "
                       f"graded: name what each means, e.g. --correct-field {name} --correct-values "
                       f"'{example}=incorrect,...'.")
        else:
            out.append(f"{n} traces carry `{name}` codes that only --correct-values reads, so they are not graded: "
                       f"e.g. --correct-field {name} --correct-values '1=correct,2=incorrect,0=ungraded'.")
    return out
