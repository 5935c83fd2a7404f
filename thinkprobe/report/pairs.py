"""The report's "which models differ" section: every pair of models on the five dimensions (thinkprobe.pairwise,
the rows pairwise.csv holds), raw and length-controlled, as one Section of thinkprobe.report.decisions.
"""
from __future__ import annotations

from typing import Mapping

from ..indicators import DIMENSIONS
from ..pairwise import LENGTH_OVERLAP_MIN, PAIRED_MIN_SHARE
from ..statuses import TESTED
from .decisions import Section
from .style import format_number

__all__ = ["PAIRS_HEADER", "pairs_section"]

DIMS = tuple(DIMENSIONS)
PAIRS_HEADER = ["model a", "model b", *DIMS]


def _cell(row: Mapping | None, alpha: float, mark_overlap: bool = False) -> str:
    if row is None:
        return "–"
    if row["status"] != TESTED:
        return row["status"]
    far = mark_overlap and row["length_overlap"] is not None and row["length_overlap"] < LENGTH_OVERLAP_MIN
    return (format_number(row["p_superiority"], 2) + (" *" if row["significant"] else " °" if _gated(row, alpha) else "")
            + (" †" if far else ""))


def _gated(row: Mapping, alpha: float) -> bool:
    """The pair's own Holm p is under alpha, but the variable's model test is not significant (no star)."""
    return not row["significant"] and row["p_holm"] is not None and row["p_holm"] < alpha


# The model test that gates a pair's star (stats.json pairwise.gate): what it says, what its absence says.
_GATES = {
    "kruskal-wallis": ("the effect-size table finds the models differ in that dimension (the same test, raw or "
                       "length-controlled): no pair is starred where the models as a whole are not",
                       "the effect-size table does not find the models differ in that dimension: a difference this "
                       "comparison finds and the test across all traces does not confirm"),
    "friedman": ("Friedman's test of the models' mean values on the questions every model answered finds the models "
                 "differ in that dimension (Holm over the variables tested, raw or length-controlled apart): no pair is starred "
                 "where the models as a whole are not, question by question (the effect-size table's Kruskal-Wallis "
                 "test, across all traces, counts the questions' differences as noise and may miss a difference this "
                 "finds)",
                 "Friedman's test of all the models, question by question, does not find them differ in that dimension"),
    "sign-flip": ("the same p stays under it with Holm over the variables tested (raw or length-controlled apart; "
                  "with two models the pair is the model test)",
                  "it does not with Holm over the variables tested"),
}


def _design_sentence(paired: int, pairs: int, uneven: str, gate: str, min_group: int) -> str:
    """How the pairs were compared: question by question where two models answered the same questions."""
    by_question = ("compared question by question: P(a > b) is the mean over the questions both answered of that "
                   "chance among the question's traces, so a question's difficulty and its domain cancel out of it"
                   + (" (not out of the effect-size table's test, which gates the *)" if gate == "kruskal-wallis" else ""))
    across = (f"compared across all their traces, not stratified by domain: where two models answered different "
              f"domains their difference includes the domains' difference{uneven}")
    if paired == pairs:
        return f"Every pair of models answered the same questions and is {by_question}. "
    if not paired:
        return (f"No two models answered enough of the same questions to be compared question by question (at least "
                f"{min_group}, holding {PAIRED_MIN_SHARE:.0%} of each model's traces): each pair is {across}. ")
    return (f"{paired} of the {pairs} pairs answered the same questions and are {by_question}; the others are "
            f"{across}. ")


def pairs_section(stats: Mapping) -> Section:
    """One row per pair of models with enough traces; a cell: P(a > b) raw, then length-controlled
    (`stats`: compute_stats' result, which holds the rows)."""
    info = stats["pairwise"]
    cfg = stats["settings"]
    found = {(r["variable"], r["model_a"], r["model_b"], r["length_controlled"]): r
             for r in info["rows"] if r["kind"] == "dimension"}
    models = info["models"]
    alpha = cfg["alpha"]
    rows = [[a, b, *(f"{_cell(found.get((d, a, b, 0)), alpha)} ({_cell(found.get((d, a, b, 1)), alpha, True)})"
                     for d in DIMS)]
            for i, a in enumerate(models) for b in models[i + 1:]]
    few = (f"Not compared, with fewer than {cfg['min_group']} traces: " + ", ".join(info["too_few"]) + "."
           if info.get("too_few") else "")
    if not rows:
        return Section("Which models differ", few, PAIRS_HEADER, [],
                       empty="Fewer than two models with enough traces: no pairs to compare.")
    uneven = ("; in this run models and domains are unevenly crossed (see the headline)"
              if ((stats.get("crossing") or {}).get("domain") or {}).get("uneven") else "")
    far = any(LENGTH_OVERLAP_MIN > (r["length_overlap"] if r["length_overlap"] is not None else 1) for r in found.values())
    designs = list((info.get("designs") or {}).values())
    paired = designs.count("paired")
    every = bool(designs) and paired == len(designs)  # every pair compared question by question
    chance = ("on the same question, a random trace of model a lies higher on the dimension than a random trace of "
              "model b (0.5: no difference; 1: on every question every trace of a above every trace of b)"
              if every else
              "a random trace of model a lies higher on the dimension than a random trace of model b (0.5: no "
              "difference; 1: every trace of a above every trace of b)")
    test = ("the sign-flip test over the questions" if every else
            "Brunner-Munzel's test" if not paired else
            "Brunner-Munzel's test; question by question, the sign-flip test over the questions")
    gate = (info.get("gate") or {}).get("test", "kruskal-wallis")
    said, unsaid = _GATES[gate]
    gated = (f"° : the pair's Holm-adjusted p is under {alpha}, but {unsaid}"
             + (" (where questions or domains differ much, the question-by-question comparison is the more sensitive)"
                if paired and gate == "kruskal-wallis" else "")
             + ": read it as a lead to check, not an established difference. "
             if any(_gated(r, alpha) for r in found.values()) else "")
    note = (f"Each cell: P(a > b), the chance that {chance}, and in brackets the "
            f"same on what trace length does not explain (the length-controlled values of the effect sizes above). "
            + _design_sentence(paired, len(designs), uneven, gate, cfg["min_group"]) +
            f"* : the two-sided test of P(a > b) = 0.5 ({test}) gives a Holm-adjusted p under {cfg['alpha']} over "
            f"the dimension's {len(rows)} pair{'s' if len(rows) != 1 else ''}, and {said}. "
            + gated
            + (f"† : the two models' trace lengths overlap little (under {round(100 * LENGTH_OVERLAP_MIN)}% of one "
               f"model's traces lie within the other's 10-90% range of lengths), so the length-controlled value "
               f"extrapolates the run's length line and may even reverse the raw one. " if far else "")
            + "pairwise.csv holds every indicator too, with the intervals of P(a > b), the medians, the p-values, the "
              "length overlap and each pair's design."
            + (f" {few}" if few else ""))
    return Section("Which models differ", note, PAIRS_HEADER, rows)
