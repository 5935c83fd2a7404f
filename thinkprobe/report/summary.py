"""The report's opening lines: what the run holds (traces, models, domains, the group), how its traces
were chosen (--sample, --limit) and what was left ungraded (code answers with code execution off), from
stats.json's counts and the run's run.json, and which traces have a page.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from .coverage import skipped_line
from .style import display_label
from .text import counted, has_group, traces_word

__all__ = ["summary_text"]


def summary_text(run_dir: Path, stats: Mapping, pages: Mapping, run: Mapping) -> list[str]:
    """The report's opening lines; `run`: the run's run.json (coverage.run_json)."""
    groups = stats["groupings"]
    lines = [f"{traces_word(stats['n_traces'])} from {counted(groups, 'model')} and {counted(groups, 'domain')} "
             f"(run folder `{run_dir.name}`)."]
    lines += _selection_lines(run)
    lines += [line] if (line := skipped_line(run)) else []
    lines += _code_not_run_lines(run)
    if has_group(stats):
        named = groups["group"]["groups"]
        without = stats["n_traces"] - sum(named.values())
        lines.append(f"A third grouping factor, the group, has {len(named)} value{'s' if len(named) != 1 else ''} ("
                     + ", ".join(f"{display_label(g)}: {n}" for g, n in named.items()) + " traces)"
                     + (f"; {without} trace{'s' if without != 1 else ''} without a group take no part in its tests"
                        if without else "") + ".")
    if not pages:
        lines.append("No per-trace pages: graphs.jsonl is missing or empty.")
    elif stats["n_traces"] > len(pages):
        lines.append(f"Per-trace pages exist for the first {len(pages)} traces of graphs.jsonl "
                     f"(of {stats['n_traces']}); draw any other with `thinkprobe graph {run_dir.name} TRACE_ID`.")
    return lines


def _selection_lines(info: Mapping) -> list[str]:
    """That the traces are a sample (--sample) or the first records (--limit) of the inputs, from run.json."""
    selection = info.get("selection")
    if not selection:
        return []
    counts = info.get("counts") or {}
    taken = (counts.get("traces") or 0) + (counts.get("errors") or 0)
    asked = min(x for x in (selection.get("sample"), selection.get("limit")) if x is not None)
    if counts and taken < asked:  # the inputs hold fewer: every record was taken
        return []
    if selection.get("sample") is not None:
        return [f"The traces are a random sample of {selection['sample']} records of the inputs (--sample, seed "
                f"{selection.get('seed', 0)}): the counts per file and model below are of the sample, and every "
                f"figure describes it, not the whole inputs."]
    return [f"The traces are the first {selection['limit']} records of the inputs (--limit), not all of them."]


def _code_not_run_lines(info: Mapping) -> list[str]:
    """run.json's count of code answers left ungraded (code execution off), with how to allow it."""
    from ..redundancy import not_run_line

    count = (info.get("counts") or {}).get("code_not_run")
    return [not_run_line(count)] if count else []
