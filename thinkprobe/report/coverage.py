"""The report's "Records read, profiled and skipped" section: run.json's coverage (per input file
and per model: records read, traces profiled, records skipped by reason) and where the verdicts came
from (the records' own grades, or the answer matched against the gold answer, and how often the two
disagree). Nothing a run left out goes unmentioned. Also the caveat, shared by the headline and `select`,
where some models' reasoning is a summary or often cut off (`summary_caveat`).
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Mapping

from ..accounting import KEPT_LONG, grade_notes
from ..outputs import RUN_JSON
from .markup import esc, html_table, md_table
from .style import and_list

__all__ = ["coverage_html", "coverage_md", "COVERAGE_HEADER", "run_json", "summary_caveat", "skipped_line", "CUT_SHARE"]

COVERAGE_HEADER = ("records", "traces", "skipped", "reasons")


def run_json(run_dir: Path) -> dict:
    """The run's run.json, {} when it is missing or unreadable (the report then says less)."""
    try:
        return json.loads((Path(run_dir) / RUN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


SKIPPED_SHARE = 0.25  # a run this share of whose records were not profiled says so in the report's opening
CUT_SHARE = 0.3  # a model this many of whose traces are cut off before their reasoning ends is named
ANSWER_SHARE = 0.2  # a model this share of whose units lie in answer sections is named, where another's are half as many


def summary_caveat(sizes: Mapping[str, int], run: Mapping | None) -> str:
    """The caveat, for the headline and `select`, where some models' reasoning is mostly (half or more of
    their traces) a summary of hidden thinking and others' is not (run.json's summarised_by_model: a new
    user read tts_knowledge's ranking of the three summary models lowest on Breadth as theirs, the coverage
    section alone saying what they are), or often (CUT_SHARE) cut off before it ends and others' is not
    (truncated_by_model: Venhoff et al.'s R1 distills, cut by a token cap, ranked apart with no word), or hold
    ANSWER_SHARE of their units in answer sections where others hold half as many (answer_units_by_model: a new
    user found Claude 3.7 Sonnet's lead in Depth half its worked answers, 38% of its units, against 1% of Qwen3's);
    `sizes`: traces per model; '' otherwise."""
    run = run or {}
    out = []
    summarised = run.get("summarised_by_model") or {}
    mostly = sorted(m for m, n in summarised.items() if sizes.get(m) and n >= sizes[m] / 2)
    if mostly and len(mostly) < len(sizes):
        out.append(f"The reasoning of {and_list(mostly)} is a summary the model gave of its hidden thinking, not the "
                   "chain itself (see the coverage section): part of a difference between them and the other models "
                   "may be the summarising.")
    truncated = run.get("truncated_by_model") or {}
    cut = sorted(m for m, n in truncated.items() if sizes.get(m) and n >= sizes[m] * CUT_SHARE)
    if cut and len(cut) < len(sizes):
        out.append(f"Many traces of {and_list([f'{m} ({truncated[m]} of {sizes[m]})' for m in cut])} are cut off before "
                   "their reasoning ends (see the coverage section): part of a difference between them and the other "
                   "models may be the cut.")
    answers = {m: t["answer"] / t["units"] for m, t in (run.get("answer_units_by_model") or {}).items()
               if sizes.get(m) and t.get("units")}
    many = sorted(m for m, share in answers.items() if share >= ANSWER_SHARE)
    floor = min((answers[m] for m in many), default=0.0)
    few = sorted(m for m, share in answers.items() if share * 2 <= floor) if many else []
    if many and few:
        low, high = f"{min(answers[m] for m in few):.0%}", f"{max(answers[m] for m in few):.0%}"
        out.append(f"The answer sections of {and_list([f'{m} ({answers[m]:.0%} of its units)' for m in many])} are part of "
                   f"their Thought Graphs and profiles, beside {low if low == high else f'{low}-{high}'} of the units of "
                   f"{and_list(few) if len(few) <= 3 else f'{len(few)} other models'}: part of a difference between them "
                   "may be how they write their answers (a worked answer restating the reasoning adds units, depth "
                   "and conclusions).")
    return " ".join(out)


def skipped_line(run: Mapping | None) -> str:
    """Where SKIPPED_SHARE of the records read were not profiled, that every figure covers the traces that
    were ('' otherwise): gpt-5-mini's SimpleQA file returned no reasoning summary for 431 of its 800
    records, and those were answered more accurately (0.36 against 0.28) than the ones the report
    covers, with no word of it beside the accuracy."""
    rows = ((run or {}).get("coverage") or {}).get("by_model") or []
    records, skipped = sum(r["records"] for r in rows), sum(r["skipped"] for r in rows)
    if not records or skipped < SKIPPED_SHARE * records:
        return ""
    reasons = Counter()
    for r in rows:
        reasons.update(r["reasons"])
    why = ", ".join(f"{reason} {n}" for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
    most = sorted((r for r in rows if r["skipped"]), key=lambda r: (-r["skipped"] / r["records"], r["model"]))
    models = ("; " + ", ".join(f"{r['model']} {r['skipped']} of {r['records']}" for r in most[:3])
              + (f" and {len(most) - 3} more" if len(most) > 3 else "") if len(rows) > 1 else "")
    return (f"{skipped} of the {records} records read were not profiled ({why}{models}; see the coverage section): "
            "every figure here, accuracy included, covers the traces that were, which need not be like the records "
            "left out.")


def _tables(run: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    coverage = run.get("coverage") or {}
    out = []
    for key, label in (("by_model", "model"), ("by_file", "file")):
        rows = coverage.get(key) or []
        if rows:
            out.append((label, [label, *COVERAGE_HEADER],
                        [[str(r[label]), str(r["records"]), str(r["traces"]), str(r["skipped"]),
                          ", ".join([f"{k}: {v}" for k, v in r["reasons"].items()]
                                    + [f"not read: {k}" for k in r.get("not_read", {})]) or "–"] for r in rows]))
    return out


def _by_model(counts: dict[str, int]) -> str:
    """'m1 5, m2 4': a count per model, most first (ties by name)."""
    return ", ".join(f"{m} {n}" for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _lines(run: dict) -> list[str]:
    lines = [f"Warning: {w}." for w in (*(run.get("coverage_warnings") or ()), *(run.get("short_trace_warnings") or ()),
                                        *(run.get("loop_warnings") or ()))]
    if truncated := run.get("truncated_by_model"):
        lines.append(f"{sum(truncated.values())} traces end before their reasoning does (an opening tag with no closing "
                     f"one: cut off at a length limit?, or an API's stop reason at its token limit) and are profiled as far as they go: {_by_model(truncated)}.")
    if cut := run.get("answer_cut_by_model"):
        lines.append(f"{sum(cut.values())} traces' answers stop at the API's token limit (their reasoning is whole); "
                     f"the last unit of each answer is cut and states no answer: {_by_model(cut)}.")
    if summarised := run.get("summarised_by_model"):
        lines.append(f"{sum(summarised.values())} traces' reasoning is a summary the model gave of its thinking "
                     "(thought_summary or a reasoning summary: the API shows no raw chain of thought), profiled like "
                     f"raw reasoning: a difference from raw traces may be the summarising; by model: "
                     f"{_by_model(summarised)}.")
    if before := run.get("before_reasoning_by_model"):
        lines.append(f"{sum(before.values())} traces have words of the model's before the tag that opens its reasoning "
                     f"(\"Here is my response:\"), profiled as neither reasoning nor answer: {_by_model(before)}.")
    untagged = run.get("untagged") or {}
    if untagged.get("profiled"):
        per_model = _by_model(untagged.get("by_model") or {})
        given = run.get("graph_source") == "input"  # annotated graphs: their text is what was annotated
        lines.append(f"{untagged['profiled']} traces are untagged text (no reasoning field and no reasoning tags"
                     + ("), profiled with the graphs they carry" if given else ": a non-reasoning model's output, a model "
                        "that writes no tags, a person's think-aloud or a worked solution?) profiled as chain of thought")
                     + " (provenance untagged; --untagged skip leaves them out)" + (f": {per_model}" if per_model else "")
                     + ".")
        if long := untagged.get("kept_long_by_model"):
            lines.append(f"{sum(long.values())} of them are {KEPT_LONG}: {_by_model(long)}.")
    if untagged.get("answers_without_thinking"):
        lines.append(f"{untagged['answers_without_thinking']} records were a model's answers without thinking "
                     "(untagged text of a model whose other records carry reasoning) and are left out of its profile "
                     "(--untagged separate profiles them as <model>:no-think).")
    grades = run.get("grades")
    if grades:
        rec, mat = grades["from_records"], grades["from_matcher"]
        lines.append(f"Verdicts: {sum(rec.values())} traces carry their own grade ({rec['correct']} correct, "
                     f"{rec['incorrect']} incorrect, {rec['not graded']} ungraded by their grade, as SimpleQA's 'not "
                     f"attempted': left out of Acc"
                     + (f"; read from {', '.join(grades['fields'])}" if grades["fields"] else "")
                     + f"), {sum(mat.values())} were judged by matching the final answer against the gold answer"
                     + (f" ({grades['matcher_no_answer']} of them incorrect because no final answer was found in them)"
                        if grades.get("matcher_no_answer") else "") + ", "
                     + (f"{grades['matcher_unanswered']} with a gold answer but no final answer found were left "
                        f"ungraded (--unanswered ungraded), " if grades.get("matcher_unanswered") else "")
                     + f"{grades['none']} have neither a grade nor a gold answer. A record's own grade always wins "
                       f"over the matcher.")
        lines.extend(grade_notes(grades))
    return lines


def coverage_html(run: dict) -> str:
    """The section from `run`, the run's run.json (`run_json`); '' where it has no coverage."""
    tables = _tables(run)
    if not tables:
        return ""
    from .glossary import GLOSSARY

    body = "".join(f"<p class=note>{esc(line).replace('`', '')}</p>" for line in _lines(run))
    body += "".join(f"<h3>By {label}</h3>" + html_table(header, [[esc(c) for c in r] for r in rows], left=1,
                                                         cls="dense", titles={h: GLOSSARY.get(h, "") for h in header})
                    for label, header, rows in tables)
    return "<h2>Records read, profiled and skipped</h2>" + body


def coverage_md(run: dict) -> list[str]:
    tables = _tables(run)
    if not tables:
        return []
    parts = ["## Records read, profiled and skipped", "", *(f"{line}\n" for line in _lines(run))]
    for label, header, rows in tables:
        parts += [f"### By {label}", "", md_table(header, rows), ""]
    return parts
