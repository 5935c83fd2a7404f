"""The linker's agreement with people's graphs, as the report gives it: run.json's linker_agreement (the
Spearman ρ of every variable between the linker's graphs and annotated graphs of the same traces,
measured once for the linker's weights), the rule that flags a variable as agreeing poorly, the effect
table's ρ columns and their note, and the headline's sentence on the differences they weaken.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from .markup import esc
from .style import and_list, format_number

__all__ = ["AGREEMENT_COLUMNS", "run_agreement", "agreement_note", "poorly_agreeing", "poor_agreement_sentence",
           "agreement_cell"]


AGREEMENT_COLUMNS = {"ρ people": "people", "ρ silver": "silver"}  # column: the set of the linker's agreement


def poor_agreement_sentence(found: Sequence[str], agreement: Mapping | None, cfg: Mapping) -> str:
    """' The linker's graphs agree with annotated graphs less well in X (ρ ...): ...' for the dimensions in
    `found` (the headline's) that agree poorly (`poorly_agreeing`) on a set the linker was measured on; ''
    for none."""
    if not agreement:
        return ""
    poor = [v for v in found if poorly_agreeing(agreement, v, cfg["min_agreement"])]
    if not poor:
        return ""
    people, silver = agreement["sets"]["people"], agreement["sets"]["silver"]
    rhos = [f"{v} (ρ {format_number(people['variables'][v]['spearman'], 2)} on {people['docs']} human-annotated "
            f"traces, {format_number(silver['variables'][v]['spearman'], 2)} on {silver['docs']} LLM-annotated ones)"
            for v in poor]
    one = len(poor) == 1
    return (f" The linker's graphs agree with annotated graphs less well in {and_list(rhos)}: under "
            f"{cfg['min_agreement']} on one set or both, so part of {'this' if one else 'these'} "
            f"difference{'' if one else 's'} may be the parser's rather than the models'.")


def _agrees_poorly(rho: float | None, floor: float) -> bool:
    """The ⚠ rule of the linker's agreement with annotated graphs, for one set: ρ under `floor`
    (stats.min_agreement), or none (the annotated graphs hold one value for every trace)."""
    return rho is None or rho < floor


def poorly_agreeing(agreement: Mapping, variable: str, floor: float) -> bool:
    """Whether `variable` agrees poorly (`_agrees_poorly`) on any set of the linker's agreement; a set
    without the variable counts as poor."""
    return any(_agrees_poorly(s["variables"].get(variable, {}).get("spearman"), floor)
               for s in agreement["sets"].values())


def run_agreement(run: Mapping) -> Mapping | None:
    """The `linker_agreement` of `run` (the run's run.json, as coverage.run_json reads it) where one was
    measured for the run's graphs, else None."""
    info = run.get("linker_agreement")
    return info if info and info.get("measured") else None


def agreement_note(stats: Mapping, run: Mapping) -> str:
    """What the effect table's ρ columns are (or why it has none), from `run` (the run's run.json); '' for
    a run of annotated graphs."""
    info = run.get("linker_agreement")
    if not info:
        if run.get("graph_source") == "input" or not run:  # annotated graphs: what people drew (or no run.json)
            return ""
        return ("How well this run's indicators agree with people's graphs is not recorded: its run.json predates "
                "that record (profile the traces again to have the effect table's ρ columns and their warnings; "
                "docs/accuracy.md gives the default linker's). Model differences may be the linker's as much as "
                "the models'.")
    if not info.get("measured"):
        return (f"How well this run's indicators agree with people's graphs is not known: {info['why']}. Model "
                f"differences may be the linker's ({info['linker']}) as much as the models'.")
    sets = info["sets"]
    return (f"ρ people, ρ silver: Spearman ρ across traces between the variable on the linker's ({info['linker']}) "
            f"graphs and on annotated graphs of the same traces: people, {sets['people']['label']}; silver, "
            f"{sets['silver']['label']}. Measured once for the linker's weights, not on this run "
            f"(`{info['command']}`). ⚠ under {stats['settings']['min_agreement']} on either, or – where the annotated "
            f"graphs hold the same value for every trace (people draw no synthesis edges): a difference in that "
            f"variable may be the parser's rather than the models'.")


def agreement_cell(agreement: Mapping, key: str, variable: str, floor: float, html_out: bool) -> str:
    """The effect table's cell of `variable` in the ρ column of set `key`: ρ, ⚠ where it agrees poorly."""
    v = agreement["sets"][key]["variables"].get(variable)
    if v is None:
        return "–"
    rho = v["spearman"]
    text = format_number(rho, 2) if rho is not None else "–"
    if _agrees_poorly(rho, floor):
        why = f"under {floor}" if rho is not None else "the annotated graphs hold one value for every trace"
        text = f'<span class="flag" title="{esc(why)}">{text} ⚠</span>' if html_out else f"{text} ⚠"
    return text
