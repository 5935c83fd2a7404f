"""The report's "which models differ" section: every pair of models on the five dimensions (thinkprobe.pairwise,
the rows pairwise.csv holds), raw and length-controlled, as one Section of thinkprobe.report.decisions.
"""
from __future__ import annotations

from typing import Mapping

from ..indicators import DIMENSIONS
from ..statuses import TESTED
from .decisions import Section
from .style import format_number

__all__ = ["PAIRS_HEADER", "pairs_section"]

DIMS = tuple(DIMENSIONS)
PAIRS_HEADER = ["model a", "model b", *DIMS]


def _cell(row: Mapping | None) -> str:
    if row is None:
        return "–"
    if row["status"] != TESTED:
        return row["status"]
    return format_number(row["p_superiority"], 2) + (" *" if row["significant"] else "")


def pairs_section(stats: Mapping) -> Section:
    """One row per pair of models with enough traces; a cell: P(a > b) raw, then length-controlled
    (`stats`: compute_stats' result, which holds the rows)."""
    info = stats["pairwise"]
    found = {(r["variable"], r["model_a"], r["model_b"], r["length_controlled"]): r
             for r in info["rows"] if r["kind"] == "dimension"}
    models = info["models"]
    rows = []
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            rows.append([a, b, *(f"{_cell(found.get((d, a, b, 0)))} ({_cell(found.get((d, a, b, 1)))})" for d in DIMS)])
    cfg = stats["settings"]
    sizes = info.get("family_size") or {}
    uneven = (" (in this run models and domains are unevenly crossed: see the headline)"
              if ((stats.get("crossing") or {}).get("domain") or {}).get("uneven") else "")
    note = (f"Each cell: P(a > b), the chance that a random trace of model a lies higher on the dimension than a random "
            f"trace of model b (0.5: no difference, 1: every trace of a above every trace of b); in brackets the same on "
            f"what trace length does not explain. * : the difference holds after Holm's correction over every pair of "
            f"every dimension (α {cfg['alpha']}; {sizes.get('dimension', 0)} raw and "
            f"{sizes.get('dimension_length_controlled', 0)} length-controlled tests). Two-sided Mann-Whitney tests, "
            f"unpaired and not stratified by domain, so where two models answered different domains the difference "
            f"mixes in the domains'{uneven}. pairwise.csv holds every indicator too, with the intervals of P(a > b), the "
            f"medians and the p-values.")
    if info.get("too_few"):
        note += (f" Not compared, with fewer than {cfg['min_group']} traces: " + ", ".join(info["too_few"]) + ".")
    return Section("Which models differ", note, PAIRS_HEADER, rows, empty="Fewer than two models with enough traces: no pairs to compare.")
