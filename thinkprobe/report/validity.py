"""The report's outcome validity: whether the indicators tell wrong answers from right ones (each
indicator's AUROC, pooled and within model) and whether they add to model and length in a
cross-validated prediction, in the headline's sentence and the outcome section's text.
"""
from __future__ import annotations

import math
from typing import Mapping

from ..stats import TESTED, auroc_se
from .style import format_beside, format_number

__all__ = ["outcome_sentence", "gain_verdict", "outcome_rows", "outcome_text", "FACTOR_AUROC_NOTE"]


def outcome_sentence(stats: Mapping, n_models: int) -> str | None:
    """The headline's sentence on whether the indicators add to model and length in predicting a wrong
    answer (stats.json outcome.cross_validated); None where it was not tested."""
    cv = stats["outcome"]["cross_validated"]
    if cv["status"] != TESTED:
        return None
    with_them, without = cv["auroc_model_length_indicators"], cv["auroc_model_length"]
    # a fit without them worse than chance on held-out folds: a gain counted from there is no gain over
    # chance (MR-BEN: 0.51 with them, 0.27 without, had read "improves")
    from_chance = without < 0.5 <= with_them
    gain, margin = (with_them - 0.5 if from_chance else cv["gain"]), _gain_margin(cv)
    base = "model + length" if n_models >= 2 else "length"
    below = max(with_them, without) < 0.5
    return (f"On {cv['n']} graded traces ({cv['n_wrong']} wrong{_no_answer_note(cv, 'n_wrong_no_answer')}) adding the "
            f"indicators to {base} {gain_verdict(gain, margin)} the prediction of a wrong answer (cross-validated AUROC "
            f"{format_number(with_them, 2)} with them, {format_number(without, 2)} without; a gain needs more than "
            f"{format_number(margin, 2)} here, a conservative bound"
            + ("; both below 0.5: the fits do worse than chance on held-out folds, so neither tells right from wrong "
               "here" if below else "")
            + ("; the fit without them does worse than chance on held-out folds, so the gain is counted from 0.5"
               if from_chance else "") + ")." + _factor_note(cv, stats["settings"]["alpha"]))


def gain_verdict(gain: float, margin: float) -> str:
    """What adding the indicators does to the prediction of a wrong answer, said against `margin` (the
    gain the traces can tell from noise): a gain within it but over half of it is "may improve", not "does
    not change" (0.63 -> 0.73 under a margin of 0.11 read as no change)."""
    if abs(gain) > margin:
        return "improves" if gain > 0 else "worsens"
    if abs(gain) > margin / 2:
        return f"may {'improve' if gain > 0 else 'worsen'}, by less than these traces can confirm,"
    return "does not measurably change"


def _no_answer_note(counts: Mapping, key: str = "wrong_no_answer") -> str:
    """Where the matcher counted traces wrong because it found no final answer in them (an
    unfinished solution, a cut-off trace), how many (`key` of `counts`: the outcome's, or the
    cross-validated traces' own count): structure then tells finished from unfinished."""
    n = counts.get(key) or 0
    if not n:
        return ""
    return (f", {n} of them because no final answer was found in them, unfinished or unreadable: the indicators "
            f"may tell those apart rather than wrong answers from right ones")


FACTOR_AUROC_NOTE = 0.7  # a design factor telling wrong from right this well on its own, beyond chance, is said


def _factor_note(cv: Mapping, alpha: float = 0.05) -> str:
    """Where a domain or group alone tells wrong answers from right ones (cross_validated.factor_auroc:
    AUROC >= FACTOR_AUROC_NOTE, and above what shuffled grades give at p < alpha), that an indicator
    which differs between its levels may tell wrong answers apart through them."""
    named = [(by, f) for by, f in (cv.get("factor_auroc") or {}).items()
             if isinstance(f, Mapping) and f["auroc"] >= FACTOR_AUROC_NOTE and f["p"] < alpha]
    if not named:
        return ""
    said = "; ".join(f"the {by} alone tells wrong from right at AUROC {format_number(f['auroc'], 2)} ({format_number(f['chance'], 2)} "
                     f"with the grades shuffled, p {'< 0.001' if f['p'] < 0.001 else '= ' + format_number(f['p'], 3)})"
                     for by, f in named)
    return (f" Wrong answers follow the design: {said}, each trace scored by its {' or '.join(by for by, _ in named)}'s "
            f"share wrong; an indicator that differs between them may tell wrong answers apart through them.")


def _gain_margin(cv: Mapping) -> float:
    """1.96 standard errors of the difference of the two cross-validated AUROCs (Hanley & McNeil, the
    two taken as independent: a conservative bound, as both score the same traces)."""
    n_wrong, n_right = cv["n_wrong"], cv["n"] - cv["n_wrong"]
    return 1.96 * math.hypot(auroc_se(cv["auroc_model_length"], n_wrong, n_right),
                             auroc_se(cv["auroc_model_length_indicators"], n_wrong, n_right))


def _auroc_with_interval(outcome: Mapping, key: str = "auroc_wrong", low: str = "ci_low", high: str = "ci_high") -> str:
    """'0.70 [0.61, 0.80]': an indicator's AUROC with its DeLong interval (stats.json's outcome entry; the
    within-model AUROC with its own, in a stats.json that has it)."""
    value = outcome[key]
    if value is None or outcome.get(low) is None:
        return format_number(value, 2)

    # 0.495 is not shown as 0.50: whether 0.5 is inside is what it says
    return f"{format_number(value, 2)} [{format_beside(outcome[low], 0.5)}, {format_beside(outcome[high], 0.5)}]"


def outcome_rows(stats: Mapping) -> list[list[str]]:
    return [[e["variable"], _auroc_with_interval(e["outcome"]),
             _auroc_with_interval(e["outcome"], "auroc_wrong_within_model", "within_ci_low", "within_ci_high")]
            for e in stats["variables"] if e["outcome"] is not None]


def _within_counts(stats: Mapping) -> str:
    """How many (wrong, right) pairs of one model the within-model AUROCs rest on, and from how many
    traces; none under stats.min_class of either kind."""
    per = next((e["outcome"].get("per_model") or {} for e in stats["variables"] if e["outcome"] is not None), {})
    wrong, right = sum(p["n_wrong"] for p in per.values()), sum(p["n_correct"] for p in per.values())
    pairs = sum(p["n_wrong"] * p["n_correct"] for p in per.values())
    if not per:
        return ": no model has both a wrong and a right answer"
    least = stats["settings"]["min_class"]
    return (f": {pairs} pairs from {wrong} wrong and {right} right answers of the {len(per)} model"
            f"{'s' if len(per) != 1 else ''} with both" + (f"; too few for a within-model AUROC, which needs {least} wrong "
                                                           f"and {least} right answers among them" if min(wrong, right) < least else ""))


# where stats.json's outcome.labels_from says the verdicts came from, in words (the file and field after)
LABEL_SOURCES = {"graphs.jsonl correct": "the records' own grades, graphs.jsonl correct",
                 "redundancy.csv Acc": "the final answers matched to the gold answers, redundancy.csv Acc"}


def outcome_text(stats: Mapping) -> str:
    o = stats["outcome"]
    cv = o["cross_validated"]
    ungraded = stats["n_traces"] - o["graded"]
    text = (f"{o['graded']} of the {stats['n_traces']} traces graded ({o['wrong']} wrong{_no_answer_note(o)}; "
            f"verdicts: {'; and '.join(LABEL_SOURCES.get(s, s) for s in (o['labels_from'] or '').split(' + '))})"
            + (f"; the other {ungraded} have no verdict (ungraded by their record, e.g. not attempted, or without a "
               f"gold answer) and take no part here" if ungraded else "")
            + f".{_factor_note(cv, stats['settings']['alpha'])} ")
    if outcome_rows(stats):
        text += ("AUROC of each indicator for a wrong answer, pooled over all graded traces (with its 95% interval, "
                 "DeLong's: with 24 variables about one interval in twenty leaves out "
                 "0.5 by chance alone) and within model (pairs of "
                 f"one model only{_within_counts(stats)}; its 95% interval computed the same way, the models combined by their "
                 f"numbers of pairs). Where the two disagree, the pooled AUROC mostly tells which models are wrong more "
                 f"often; the within-model one, whether the variable flags a model's own wrong answers. ")
    else:
        text += (f"No AUROC per indicator: it needs {stats['settings']['min_class']} right and "
                 f"{stats['settings']['min_class']} wrong traces. ")
    if cv["status"] == TESTED:
        repeats = cv.get("repeats") or 1  # runs made before 2026-12-06 drew the folds once
        drawn = (f"{cv['folds']} stratified folds drawn {repeats} times, seeds {cv['seed']} to {cv['seed'] + repeats - 1}, "
                 f"AUROCs averaged" if repeats > 1 else f"{cv['folds']} stratified folds, seed {cv['seed']}")
        text += (f"Cross-validated logistic regression ({drawn}): model + "
                 f"log tokens AUROC {format_number(cv['auroc_model_length'], 3)}; + the 19 indicators "
                 f"{format_number(cv['auroc_model_length_indicators'], 3)} (gain {format_number(cv['gain'], 2)}; "
                 f"1.96 standard errors of the difference, Hanley & McNeil: {format_number(_gain_margin(cv), 2)}).")
    else:
        text += f"No cross-validated comparison: {cv.get('reason', '')}."
    return text
