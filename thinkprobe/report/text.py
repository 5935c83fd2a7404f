"""The report's text: the headline findings, effect-size, reliability and outcome tables, and the
notes that define how each number was computed.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..pairwise import LENGTH_OVERLAP_MIN
from ..stats import ICC_MIN_CLUSTERS, TESTED, UNNAMED
from .agreement import AGREEMENT_COLUMNS, agreement_cell, poor_agreement_sentence
from .coverage import summary_caveat
from .validity import outcome_sentence
from .glossary import GLOSSARY
from .markup import esc
from .style import DIMS, and_list, display_label, format_beside, format_number
from ..progress import one_line

__all__ = ["no_icc_text", "headline", "profile_ci_rows", "EFFECT_HEADER", "EFFECT_TITLES", "effect_header", "effect_rows", "has_group", "counted", "interval_text", "icc_rows", "too_few_text", "method_note", "effect_interval_note", "NO_RADAR", "z_text"]


def _dims(stats: Mapping) -> list[Mapping]:
    return [e for e in stats["variables"] if e["kind"] == "dimension"]


def interval_text(ci: Sequence[float] | None) -> str:
    """' [0.30, 0.44]': a bootstrap interval (stats.json's eps2_corrected_ci, a ratio's ci) to follow its
    value; '' where there is none (a test not run, a run whose stats.json predates the intervals)."""
    return f" [{format_number(ci[0], 2)}, {format_number(ci[1], 2)}]" if ci else ""


def _interval_cell(ci: Sequence[float] | None, html_out: bool) -> str:
    """interval_text for a table cell: in HTML on a line of its own under the value (class ci), so that the
    effect table keeps within a 1000 px window."""
    text = interval_text(ci)
    return f'<span class="ci">{esc(text.strip())}</span>' if html_out and text else text


def has_group(stats: Mapping) -> bool:
    """Whether the run has the third grouping factor (some trace has a group) and so group tests."""
    return "group" in stats["groupings"]


def _factor_sentence(stats: Mapping, by: str) -> str | None:
    """Where the domain (or the group) matters after length control, or that it does not; None
    with fewer than two of them."""
    if by not in stats["groupings"] or len(stats["groupings"][by]["groups"]) < 2:
        return None
    crossing = (stats.get("crossing") or {}).get(by) or {}
    if (crossing.get("cramers_v") or 0.0) >= SAME_SPLIT_V:
        return (f"The {by} splits the traces as the model does (Cramér's V {format_number(crossing['cramers_v'], 2)}): "
                f"what differs by {by} here is what differs by model.")
    floor = stats["settings"]["ratio_floor"]
    tests = [(e["length_controlled"][by], e["variable"]) for e in _dims(stats)]
    found = sorted(((t["eps2_corrected"], v) for t, v in tests
                    if t["status"] == TESTED and t.get("significant") and (t["eps2_corrected"] or 0) >= floor), reverse=True)
    ci = {v: t.get("eps2_corrected_ci") for t, v in tests}
    if found:
        return (f"The {by} matters most for "
                + and_list([f"{v} (length-controlled ε² {format_number(x, 2)}{interval_text(ci[v])})" for x, v in found[:2]])
                + " after length control.")
    tiny = [v for t, v in tests if t["status"] == TESTED and t.get("significant")]
    untested = [v for t, v in tests if t["status"] != TESTED]
    if len(untested) == len(tests):
        return f"No dimension could be tested by {by} once length is removed (see the effect sizes)."
    not_tested = f" ({and_list(untested)} could not be tested once length is removed)" if untested else ""
    if tiny:
        return (f"By {by}, {and_list(tiny)} {'differs' if len(tiny) == 1 else 'differ'} significantly but by less than "
                f"corrected ε² {floor} once length and chance are removed; no other {'tested ' if untested else ''}"
                f"dimension differs{not_tested}.")
    return (f"No {'tested ' if untested else ''}dimension differs significantly by {by} once length and chance are "
            f"removed (Holm-corrected, corrected ε² at least {floor}){not_tested}.")


def _domain_group_sentence(stats: Mapping) -> str | None:
    """That domains and groups are unevenly crossed, where they are (a MiP run: every missing-premise
    trace is math, gsm8k only normal): the domain and group sentences then each carry the other."""
    c = stats.get("domain_group_crossing") or {}
    if not c.get("uneven"):
        return None
    what = _crossing_detail(c, lambda d, g: f"no {display_label(g)} traces of {display_label(d)}")
    return (f"Domains and groups are unevenly crossed ({what}): a difference by domain may be one of group, and "
            f"the other way round.")


def _crossing_detail(c: Mapping, cell) -> str:
    """A crossing's first three empty cells (`cell(first, second)` words one), how many more, and
    Cramér's V: what the uneven-crossing sentences say of it."""
    empty = [cell(a, b) for a, b in c["empty_cells"][:3]]
    more = len(c["empty_cells"]) - len(empty)
    what = ", ".join(empty) + (f", {more} more such cells" if more > 0 else "")
    v = f"Cramér's V {format_number(c['cramers_v'], 2)}" if c.get("cramers_v") is not None else ""
    return ", ".join(x for x in (what, v) if x)


def _crossing_sentence(stats: Mapping) -> str | None:
    """That models and domains (or groups) are unevenly crossed, where they are: a model test over the
    whole run then mixes in the domain."""
    parts = []
    for by, c in (stats.get("crossing") or {}).items():
        if not c.get("uneven"):
            continue
        what = _crossing_detail(c, lambda m, d: f"{display_label(m)} has no {display_label(d)} traces")
        parts.append((by, f"by {by}: {what}"))
    if not parts:
        return None
    return ("Models are unevenly crossed with " + and_list([f"{by}s" for by, _ in parts]) + " ("
            + "; ".join(d for _, d in parts) + "): a model difference here may be a difference of "
            + " or ".join(f"{by}" for by, _ in parts) + "; compare models within one "
            + " or one ".join(f"{by} ({'model × domain table, ' if by == 'domain' else ''}`thinkprobe select --{by}`)"
                              for by, _ in parts) + ".")


FEW_MODELS = 5  # fewer models than this: a high split-half reliability is weak support
SAME_SPLIT_V = 0.99  # Cramér's V from which a domain or group is the model under another name


def _question_by_question(stats: Mapping, names: Sequence[str], smallest: str) -> str:
    """' (smallest)', or where the pairs are gated by Friedman's test over the questions and it finds the
    models differ in some of `names` (no model difference across traces, length-controlled), says so."""
    gate = (stats.get("pairwise") or {}).get("gate") or {}
    found = [t["variable"] for t in gate.get("tests", []) if gate.get("test") == "friedman"
             and t["length_controlled"] == 1 and t["significant"] and t["variable"] in names]
    if not found:
        return f" ({smallest})"
    return (f" across traces (Kruskal-Wallis; {smallest}), though question by question (Friedman's test, every "
            f"model having answered the same questions) the models differ in {and_list(found)}: see which models differ")


def _smallest_model(groups: Mapping) -> str:
    """'the smallest model has 4 traces' (how few traces the tests could rest on), or of the tested ones,
    naming the models too small to be tested (under stats.min_group: a 1-trace model is in the run but in
    no test)."""
    sizes, left = groups["model"]["groups"], groups["model"].get("too_few") or []
    tested = [n for m, n in sizes.items() if m not in left]
    if not left or not tested:
        return f"the smallest model has {traces_word(min(sizes.values()))}"
    shown = [f"{one_line(m)} ({traces_word(sizes[m])})" for m in left[:3]]
    named = and_list(shown) if len(left) <= 3 else f"{', '.join(shown)} and {len(left) - 3} more"
    return f"the smallest tested model has {traces_word(min(tested))}; too small to test: {named}"


def counted(groups: Mapping, by: str, min_group: int | None = None) -> str:
    """'5 domains', '5 domains (1 with fewer than 2 traces, not tested)' with `min_group`, '5 domains (2
    traces without one, not tested)' where some traces have no named domain ('unknown': in no domain test),
    or 'no named domain' where no trace has one (no such group to count)."""
    names = [g for g in groups[by]["groups"] if g != UNNAMED]  # a run's stats.json before 2026-12-08 held it
    if not names:
        return f"no named {by}"
    few, unnamed = len(groups[by].get("too_few") or []), groups[by].get("unnamed", 0)
    notes = [*([f"{few} with fewer than {min_group} traces"] if few and min_group is not None else []),
             *([f"{traces_word(unnamed)} without one"] if unnamed else [])]
    return f"{len(names)} {by}{'s' if len(names) != 1 else ''}" + (f" ({', '.join(notes)}, not tested)" if notes else "")


def _extrapolated(stats: Mapping) -> dict[str, float]:
    """{model: its stats.json length_overlap} of the models whose lengths the others' barely overlap (under
    pairwise.LENGTH_OVERLAP_MIN): their length-controlled values extrapolate the run's length line."""
    return {m: share for m, share in (stats.get("length_overlap") or {}).items() if share < LENGTH_OVERLAP_MIN}


def _extrapolated_sentence(stats: Mapping) -> str:
    """' X's traces are mostly shorter than the other models' ...': where a model's lengths lie outside the
    others' (stats.json length_overlap under pairwise.LENGTH_OVERLAP_MIN), its length-controlled values
    rest on the run's length line beyond the lengths it wrote; '' where none does."""
    far = _extrapolated(stats)
    if not far or len(stats["length_overlap"]) < 2:
        return ""
    one = len(far) == 1
    named = and_list([display_label(m) for m in sorted(far)])
    shares = and_list([f"{round(100 * share)}%" for _, share in sorted(far.items())])
    return (f" Length control extrapolates for {named}: only {shares} of {'its' if one else 'their'} traces"
            f"{'' if one else ', respectively,'} lie within the other models' 10–90% range of lengths, so "
            f"{'its' if one else 'their'} length-controlled differences rest on the run's length line beyond the "
            f"lengths {'it' if one else 'they'} wrote and may even reverse the raw ones (the report's Which models "
            f"differ marks such pairs †).")


def _carried_sentence(stats: Mapping, variables: Sequence[str]) -> str:
    """' Breadth's length-controlled difference is carried by X alone ...': a dimension whose every
    significant length-controlled pair involves one model whose lengths the others barely overlap (its
    difference may be the length line's extrapolation, not the model's); '' where none is."""
    far = set(_extrapolated(stats))
    carried = {}
    for v in variables:
        pairs = [{r["model_a"], r["model_b"]} for r in (stats.get("pairwise") or {}).get("rows", ())
                 if r["variable"] == v and r["length_controlled"] == 1 and r["significant"]]
        common = set.intersection(*pairs) & far if pairs else set()
        if common:
            carried[v] = sorted(common)[0]
    if not carried:
        return ""
    return " " + " ".join(
        f"{v}'s length-controlled difference is carried by {display_label(m)} alone (every pair of models that "
        f"differs in it involves {display_label(m)}, whose lengths the others' barely overlap): it may be the length "
        f"line's extrapolation rather than a difference of the models." for v, m in carried.items())


def headline(stats: Mapping, agreement: Mapping | None = None, run: Mapping | None = None) -> list[str]:
    """Three to five sentences with numbers: which dimensions separate the models beyond length
    and chance (naming those whose values agree poorly with people's graphs, with the linker's
    `agreement`: `run_agreement`; and, from the run's run.json `run`, those whose reasoning is a summary
    or often cut off: `summary_caveat`), how much length explains, how reliable the model means are, where
    the domain (and the group, in a run with one) matters, and (with graded answers) whether the
    indicators add to model and length."""
    cfg = stats["settings"]
    floor, min_rel = cfg["ratio_floor"], cfg["min_reliability"]
    groups = stats["groupings"]
    n_models = len(groups["model"]["groups"])
    dims = _dims(stats)
    opening = (f"{traces_word(stats['n_traces'])} from {counted(groups, 'model', cfg['min_group'])} and "
               f"{counted(groups, 'domain', cfg['min_group'])}")
    out = []

    def lc(e, by):
        return e["length_controlled"][by]

    if n_models < 2:
        out.append(f"{opening}: with one model there are no model differences to measure.")
    else:
        sep = sorted(((lc(e, "model")["eps2_corrected"], e["variable"]) for e in dims
                      if lc(e, "model")["status"] == TESTED and lc(e, "model").get("significant")
                      and lc(e, "model")["eps2_corrected"] >= floor), reverse=True)
        found = {v for _, v in sep}
        tiny = [e["variable"] for e in dims if e["variable"] not in found and lc(e, "model")["status"] == TESTED
                and lc(e, "model").get("significant")]  # significant, but under the floor
        untested = [e["variable"] for e in dims if lc(e, "model")["status"] != TESTED]
        rest = [e["variable"] for e in dims if e["variable"] not in found and e["variable"] not in tiny
                and e["variable"] not in untested]
        not_tested = (f"; {and_list(untested)} could not be tested once length is removed (see the effect sizes)"
                      if untested else "")
        ci = {e["variable"]: lc(e, "model").get("eps2_corrected_ci") for e in dims}
        if sep:
            out.append(f"{opening}: beyond trace length and chance the models differ in "
                       + and_list([f"{v} (length-controlled ε² {format_number(x, 2)}{interval_text(ci[v])})" for x, v in sep])
                       + (f"; {and_list(tiny)} {'differs' if len(tiny) == 1 else 'differ'} significantly but by less than "
                          f"corrected ε² {floor}" if tiny else "")
                       + (f"; {and_list(rest)} {'shows' if len(rest) == 1 else 'show'} no significant model difference "
                          f"once length and chance are removed{_question_by_question(stats, rest, _smallest_model(groups))}"
                          if rest else "") + not_tested + "."
                       + _carried_sentence(stats, [v for _, v in sep])
                       + poor_agreement_sentence([v for _, v in sep], agreement, cfg))
        elif len(untested) < len(dims):
            best = max(((lc(e, "model")["eps2_corrected"] or 0.0, e["variable"]) for e in dims
                        if e["variable"] not in untested), default=(0.0, "–"))
            out.append(f"{opening}: no {'tested ' if untested else ''}dimension separates the models significantly once "
                       f"length and chance are removed (largest corrected length-controlled ε² {format_number(best[0], 2)}"
                       f"{interval_text(ci.get(best[1]))}, "
                       f"{best[1]}; {_smallest_model(groups)}){not_tested}.")
        else:
            out.append(f"{opening}: no dimension could be tested for model differences once length is removed "
                       f"(see the effect sizes).")
    if n_models >= 2 and (crossing := _crossing_sentence(stats)):
        out[-1] += " " + crossing
    if n_models >= 2 and (caveat := summary_caveat(groups["model"]["groups"], run)):
        out[-1] += " " + caveat
    fits = [(e["length_controlled"]["fit"]["r2"], e["variable"]) for e in dims
            if e["length_controlled"]["fit"]["r2"] is not None]
    if fits:
        top = max(fits)
        out.append(f"Log tokens alone explain {min(fits)[0] * 100:.0f}–{top[0] * 100:.0f}% of the "
                   f"variance of a dimension (most: {top[1]})." + _extrapolated_sentence(stats))
    usable = sum(1 for c in groups["model"]["groups"].values() if c >= 2)  # models a split-half can use
    rel = [(e["reliability"]["split_half"]["spearman_brown"], e["variable"]) for e in dims
           if e["reliability"]["split_half"]["spearman_brown"] is not None]
    if rel:
        weak = [f"{v} ({format_beside(x, min_rel)})" for x, v in rel if x < min_rel]
        strong = [v for x, v in rel if x >= min_rel]
        rel_lc = [(e["reliability"]["split_half_length_controlled"]["spearman_brown"], e["variable"]) for e in dims
                  if e["reliability"]["split_half_length_controlled"]["spearman_brown"] is not None]
        weak_lc = [f"{v}'s {format_beside(x, min_rel)}" for x, v in rel_lc if x < min_rel]
        text = (f"Split-half reliability of the model means is {format_number(min(rel)[0], 2)}–{format_number(max(rel)[0], 2)}"
                f" across dimensions"
                + (f" ({format_number(min(rel_lc)[0], 2)}–{format_number(max(rel_lc)[0], 2)} after length control"
                   + (f", under {min_rel}: {and_list(weak_lc)}" if weak_lc else "") + ")" if rel_lc else ""))
        text += (f"; for {and_list(weak)} it is under {min_rel}: these data do not support model differences there."
                 if weak else f", at least {min_rel} for all {len(strong)}.")
        if strong and usable < FEW_MODELS:
            text += (f" With {usable} models a reliability of {min_rel} or more{' (' + and_list(strong) + ')' if weak else ''} "
                     f"is weak support: a correlation over {usable} model means is often high by chance.")
        out.append(text)
    elif n_models >= 2:
        out.append(f"Only {usable} model{'s' if usable != 1 else ''} with 2 or more traces, and a split-half "
                   f"reliability of model means needs 3: treat model differences as unconfirmed.")
    factors = [s for s in (_factor_sentence(stats, by) for by in ("domain", "group")) if s]
    if factors and (confounded := _domain_group_sentence(stats)):
        factors.append(confounded)
    if factors:  # one item, so that the outcome sentence still fits in five
        out.append(" ".join(factors))
    if sentence := outcome_sentence(stats, n_models):
        out.append(sentence)
    return out[:5]


def z_text(value: float | None) -> str:
    """A z-score at 2 decimals: 0.00, not the 1e-07 that profile.csv's 6 significant digits leave of 0."""
    return format_number(0.0 if value is not None and abs(value) < 5e-5 else value, 2)


def profile_note(stats: Mapping, run: Mapping | None = None, rows: Sequence[Mapping] = ()) -> str:
    """The caption of the model-profile table: the interval named only where some model has one, the
    mean the z-scores are against (the run's own, or the norms it was given: the norms of `run`, the
    run's run.json), and, against the run's own, the indicators one value holds in all its `rows`."""
    from .trace_pages import run_norms

    with_ci = any(v["ci_low"] is not None for mp in stats["model_profiles"] for v in mp["dimensions"].values())
    level = round(100 * stats["settings"]["ci_level"])
    norms = run_norms(run) if run is not None else None
    zero = "this run's mean" if norms is None else f"the mean of the norms in {norms}"
    return ("Mean signed z-score per dimension" + (f" with its {level}% bootstrap interval (a model with one trace "
                                                   "has none)" if with_ci else " (no interval: no model has 2 traces)")
            + f"; 0 is {zero}. Means follow a few extreme traces where the tests below, on ranks, do not: an "
              f"interval away from 0 with no difference in the effect sizes is such a mean."
            + ("" if norms is not None else _constant_note(rows)))


def _constant_note(rows: Sequence[Mapping]) -> str:
    """Dimensions that average an indicator one value holds in every trace (its z 0: perspective_taking
    where no trace has a perspective marker), and by how much that shrinks them."""
    from ..cognitive_profile import Normalizer
    from ..indicators import DIMENSIONS

    norms = Normalizer().fit(rows) if rows else None
    said = []
    for dim, names in DIMENSIONS.items():
        flat = [n for n in names if norms is not None and norms.is_flat(n)]  # what Normalizer.z scores 0
        if len(flat) == len(names):
            said.append(f"{dim} is 0 in every trace: each of its indicators ({and_list(flat)}) holds one value")
        elif flat:
            said.append(f"{and_list(flat)} (one value in every trace, z 0) still count{'s' if len(flat) == 1 else ''} "
                        f"in {dim}'s mean, which is {len(names) - len(flat)}/{len(names)} of what its other "
                        f"indicators alone give")
    return f" Here {'; '.join(said)}." if said else ""


def traces_word(n: int) -> str:
    return f"{n} trace{'' if n == 1 else 's'}"


def profile_ci_rows(stats: Mapping) -> list[list[str]]:
    out = []
    for mp in stats["model_profiles"]:
        cells = [mp["model"], str(mp["n"])]
        for d in DIMS:
            v = mp["dimensions"][d]
            ci = f" [{z_text(v['ci_low'])}, {z_text(v['ci_high'])}]" if v["ci_low"] is not None else ""
            cells.append(f"{z_text(v['mean'])}{ci}")
        out.append(cells)
    return out


EFFECT_HEADER = ["variable", "ε² model", "ε² domain", "corrected model", "corrected domain", "ratio",
                 "length-controlled model", "length-controlled domain", "length-controlled ratio", "split-half"]


# With a group factor: its three columns beside the domain's (effect_header).
GROUP_COLUMNS = {"ε² domain": "ε² group", "corrected domain": "corrected group",
                 "length-controlled domain": "length-controlled group"}


def effect_header(stats: Mapping, agreement: Mapping | None = None) -> list[str]:
    """EFFECT_HEADER, with the group's columns after the domain's when the run has groups, and the
    agreement with annotated graphs last where the linker's was measured (`run_agreement`)."""
    head = list(EFFECT_HEADER) if not has_group(stats) else \
        [c for h in EFFECT_HEADER for c in ((h, GROUP_COLUMNS[h]) if h in GROUP_COLUMNS else (h,))]
    return head + (list(AGREEMENT_COLUMNS) if agreement else [])


EFFECT_TITLES = {
    "ε² group": "Kruskal-Wallis ε² grouped by group (the third design factor), raw values, over the traces that "
                "have a group; * Holm p < α",
    "corrected group": "ε²(group) minus the ε² random group labels give, (k − 1) / (n − 1)",
    "length-controlled group": "corrected ε² by group of what a fit on log tokens leaves; * Holm p < α",
    "ε² model": "Kruskal-Wallis ε² = H / (n − 1) grouped by model, raw values; * Holm p < α",
    "ε² domain": "Kruskal-Wallis ε² grouped by domain, raw values; * Holm p < α",
    "corrected model": "ε²(model) minus the ε² random model labels give, (k − 1) / (n − 1); [95% bootstrap interval]",
    "corrected domain": "ε²(domain) minus the ε² random domain labels give, (k − 1) / (n − 1)",
    "ratio": "corrected ε²(model) / corrected ε²(domain); – when both are under the floor; ≥ / ≤ when one side was "
             "raised to the floor; [95% bootstrap interval]",
    "length-controlled model": "corrected ε² by model of what a fit on log tokens leaves, [95% bootstrap interval]; "
                               "* Holm p < α",
    "length-controlled domain": "corrected ε² by domain of what a fit on log tokens leaves; * Holm p < α",
    "length-controlled ratio": "the ratio of the two length-controlled corrected values, [95% bootstrap interval]",
    "split-half": "split-half reliability of the model means (Spearman-Brown); ⚠ under the minimum: model "
                  "differences not supported",
    "ρ people": "Spearman ρ between the variable on the linker's graphs and on a person's graphs of the same traces "
                "(measured once for the linker); ⚠ under the minimum: a difference may be the parser's",
    "ρ silver": "the same against Gemini-3.1-pro's graphs of the traces the linker held out in training",
}


def _eps_cell(test: Mapping, key: str, html_out: bool, interval: bool = False) -> str:
    """A test's `key` (with its bootstrap interval, `key`_ci, where `interval`), * where significant."""
    if test["status"] != TESTED:
        return f'<span title="{esc(test.get("reason", ""))}">{test["status"]}</span>' if html_out else test["status"]
    text = format_number(test.get(key), 2)
    ci = test.get(f"{key}_ci") if interval else None
    if test.get("significant"):
        p = f"Holm p = {test['p_holm']:.2g}"  # p-values as small as 1e-24: not format_number's noise floor
        return (f'<span class="sig" title="{esc(p)}">{text} *</span>{_interval_cell(ci, True)}' if html_out
                else f"{text}{interval_text(ci)} *")
    return text + _interval_cell(ci, html_out)


def _ratio_cell(ratio: Mapping, html_out: bool = False, tail: float = 0.025) -> str:
    """The ratio ('≥ ' where its domain side was raised to the floor, '≤ ' where its model side was) and its
    interval, an end marked the same way where more than `tail` of the resamples floored that side (the
    domain's floored ratios are the largest: the high end is then a lower bound; the model's, the low end)."""
    if ratio["value"] is None:
        return "–"
    text = {"domain": "≥ ", "model": "≤ ", None: ""}[ratio["floored"]] + format_number(ratio["value"], 2)
    ci, floored = ratio.get("ci"), ratio.get("ci_floored") or {}
    if not ci:
        return text
    ends = (("≤" if floored.get("model", 0) > tail else "") + format_number(ci[0], 2),  # no space: the table's
            ("≥" if floored.get("domain", 0) > tail else "") + format_number(ci[1], 2))  # width in a 1000 px window
    shown = f"[{ends[0]}, {ends[1]}]"
    return text + (f'<span class="ci">{esc(shown)}</span>' if html_out else f" {shown}")


def effect_rows(stats: Mapping, html_out: bool, agreement: Mapping | None = None) -> list[list[str]]:
    min_rel, header = stats["settings"]["min_reliability"], effect_header(stats, agreement)
    tail = (1 - stats["settings"]["ci_level"]) / 2  # resamples beyond an interval's end
    out = []
    for e in stats["variables"]:
        name = e["variable"] if e["kind"] == "indicator" else f"{e['variable']} (dimension)"
        if html_out:
            name = f'<span title="{esc(GLOSSARY.get(e["variable"], ""))}">{esc(name)}</span>'
        sb = e["reliability"]["split_half"]["spearman_brown"]
        rel = format_number(sb, 2)
        if sb is not None and sb < min_rel:
            rel = f'<span class="flag" title="under {min_rel}">{rel} ⚠</span>' if html_out else f"{rel} ⚠"
        lc = e["length_controlled"]
        cells = {"variable": name, "ratio": _ratio_cell(e["ratio_corrected"], html_out, tail),
                 "length-controlled ratio": _ratio_cell(e["ratio_length_corrected"], html_out, tail), "split-half": rel}
        for by in ("model", "domain", "group"):
            if by in e:
                cells[f"ε² {by}"] = _eps_cell(e[by], "eps2", html_out)
                # the model's with their intervals (the headline's numbers); the domain's and group's are in stats.json
                cells[f"corrected {by}"] = format_number(e[by].get("eps2_corrected"), 2) + (
                    _interval_cell(e[by].get("eps2_corrected_ci"), html_out) if by == "model" else "")
                cells[f"length-controlled {by}"] = _eps_cell(lc[by], "eps2_corrected", html_out, interval=by == "model")
        for column, key in AGREEMENT_COLUMNS.items() if agreement else ():
            cells[column] = agreement_cell(agreement, key, e["variable"], stats["settings"]["min_agreement"], html_out)
        out.append([cells[h] for h in header])
    return out


def icc_rows(stats: Mapping) -> list[list[str]]:
    rows = []
    for e in stats["variables"]:
        icc = e["reliability"]["icc"]
        if icc["status"] == TESTED:
            rows.append([e["variable"], format_number(icc["icc"], 2), format_number(icc["icc_mean"], 2), str(icc["clusters"]),
                         format_number(icc["k0"], 2)])
    return rows


def no_icc_text(stats: Mapping) -> str:
    """Why the run has no ICC: how many (model, question) pairs hold 2 or more traces against the
    ICC_MIN_CLUSTERS it needs, and how many traces had no question text or id to pair them by (a
    trace without one is in no pair: "no model answered one question twice" was not known)."""
    pairs = max((e["reliability"]["icc"]["clusters"] for e in stats["variables"]), default=0)
    if pairs >= ICC_MIN_CLUSTERS:  # pairs enough, but every variable constant across them
        return f"No ICC: {pairs} (model, question) pairs with 2 or more traces, but no variable varies across them."
    text = ("No ICC: no model answered one question more than once" if not pairs else
            f"No ICC: {pairs} (model, question) pair{'s' if pairs != 1 else ''} with 2 or more traces, and it needs "
            f"{ICC_MIN_CLUSTERS}")
    missing = stats.get("n_without_question") or 0
    if missing:
        text += (f" among the traces whose question is known; {missing} of the run's {stats['n_traces']} have no "
                 "question text or id, so are in no pair")
    return text + "."


def too_few_text(stats: Mapping) -> str:
    parts = [f"{by}: {', '.join(display_label(g) for g in info['too_few'])}"
             for by, info in stats["groupings"].items() if info["too_few"]]
    if not parts:
        return ""
    return (f"Groups with fewer than {stats['settings']['min_group']} traces, left out of the tests: "
            + "; ".join(parts) + ".")


def method_note(stats: Mapping) -> str:
    c = stats["settings"]
    by_group = ", and by group over the traces that have one" if has_group(stats) else ""
    return (f"Kruskal-Wallis H per indicator and dimension, grouped by model and, separately, by domain{by_group}; "
            f"ε² = H / (n − 1). Chance: the ε² random labels give the same traces on average, (k − 1) / (n − 1) for "
            f"k groups (exact, ties or not); corrected = ε² − chance. Length-controlled (shown as ε² − chance, like the corrected columns): the test on the residuals of "
            f"a least-squares line on log tokens fitted over the whole run; not testable where one value holds more "
            f"than {c.get('length_control_max_tied', 0.5):.0%} of the traces (the residuals would order those by "
            f"length alone). Ratio = corrected ε²(model) / corrected "
            f"ε²(domain), none when both are under {c['ratio_floor']}, a side under it raised to it (≥, ≤: a bound). "
            f"* Holm p < {c['alpha']}, Holm over all raw tests and, separately, all length-controlled tests. "
            f"Split-half: {c['split_halves']} random halvings of every model's traces (seed {c['split_half_seed']}), "
            f"mean Pearson r of the model means across halves (0 for a split where one half's means are all equal), "
            f"Spearman-Brown 2r / (1 + r) (0 when r ≤ 0: the halves disagree); none with fewer than "
            f"{c.get('split_half_min_varying', 0)} traces away from the most common value; ⚠ under "
            f"{c['min_reliability']}. {effect_interval_note(stats)}Profile intervals: percentile bootstrap of the mean, "
            f"{c['bootstrap_resamples']} resamples, seed {c['bootstrap_seed']}.")


def effect_interval_note(stats: Mapping) -> str:
    """What the [low, high] after a corrected ε² or a ratio is ('' for a run whose stats.json has none)."""
    c = stats["settings"]
    if "effect_intervals" not in c:
        return ""
    return (f"[low, high] after a corrected ε² or a ratio: its {round(100 * c['ci_level'])}% percentile bootstrap "
            f"interval, {c['bootstrap_resamples']} resamples of the run's traces with replacement (seed "
            f"{c['bootstrap_seed']}), the same resamples for model and domain so that the ratio's interval is the "
            f"ratio's own; length-controlled: the residuals of the whole-run fit resampled (the line not fitted "
            f"again, so the fit's own uncertainty is left out); a resample's ratio follows the floor rule (a side "
            f"under {c['ratio_floor']} raised to it, both under: 1), and stats.json gives the share of resamples "
            f"floored; where the domain's side was floored in more than {50 * (1 - c['ci_level']):g}% "
            f"of them the interval's high end is marked ≥ (a lower bound: those ratios are the largest), where the "
            f"model's was, the low end ≤. A resample's corrected ε² runs on average up to one chance level above the estimate (the "
            f"resampling's own noise reads as effect), so the intervals lean that little high. Intervals of the "
            f"domain and group ε² are in stats.json. ")


NO_RADAR = ("No radar chart: the run has one model, and z-scored against its own traces its mean profile is 0 on "
            "every dimension by construction (the z-scores are relative to this run's own mean; each trace's profile "
            "in the table of traces still says how it differs from that mean). To place the model, profile it with "
            "other models, or pass --norms NORMS.json: the norms.json of a run over several models or of a reference "
            "corpus, whose means and spreads then give the z-scores.")
