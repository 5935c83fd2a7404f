"""The report's decision sections: the most unusual traces per model (anomalies.csv) with their
failure risk and, where the run has grades, the run's own AUROC of failure_risk; and "which model
for which domain" (thinkprobe.choice, the default selection in each domain). Each section is built
once as plain cells and rendered to HTML and to Markdown.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..anomalies import read_anomalies
from ..choice import select_by_domain
from ..config import StatsSettings
from ..records import iter_graph_records
from ..auroc import auroc, auroc_delong, factor_auroc
from ..stats import level, question_key, stats_settings
from ..indicators import INDICATORS
from ..outcome import cross_validated_auroc, model_length_features
from .agreement import poorly_agreeing, run_agreement
from .markup import esc, html_table, md_table
from .style import format_number
from .validity import FACTOR_AUROC_NOTE

__all__ = ["Section", "decision_sections", "sections_html", "sections_md"]

UNUSUAL_HEADER = ["trace", "model", "anomaly", "anomaly_rank", "drivers", "failure_risk"]
RISK_HEADER = ["graded traces", "n", "wrong", "share wrong", "mean failure_risk", "AUROC of failure_risk [95%]",
               "AUROC of length alone", "AUROC of model + length, cross-validated"]
CALIBRATION_GAP = 0.1  # mean failure_risk this far from the share wrong: the note says its probabilities do not hold
CHOICE_HEADER = ["domain", "models", "tier 1", "fit", "interval", "accuracy", "told apart from the rest"]
MIN_PER_CLASS = 5  # right and wrong graded traces an AUROC needs
MAX_LEVELS_SAID = 8  # the failure_risk table breaks its AUROC down by domain and by group up to this many levels


@dataclass
class Section:
    title: str
    note: str
    header: list[str]
    rows: list[list[str]]  # plain text cells; a trace cell is (trace_id, link or None)
    empty: str = ""
    after: tuple[str, list[str], list[list[str]]] | None = None  # a second table: its note, header and rows


CODE_MARK = "reasoning is a program; "  # before the drivers of a trace whose reasoning is code, not prose
IN_SAMPLE = " in-sample"  # after the failure_risk of a trace the failure-risk model was trained on


def _code_traces(run_dir: Path, listed: set[str], run: Mapping) -> set[str]:
    """Which `listed` traces' reasoning is a program, not prose (provenance reasoning_is_code; graphs.jsonl
    is read only when `run`, the run's run.json, counts such traces): their indicators describe code,
    which alone can make a trace unusual."""
    if not listed or not (run.get("counts") or {}).get("reasoning_is_code"):
        return set()
    return {rec["trace_id"] for rec in iter_graph_records(run_dir, missing_ok=True)
            if rec["trace_id"] in listed and (rec.get("provenance") or {}).get("reasoning_is_code")}


def _unusual(run_dir: Path, rows: Sequence[Mapping], pages: Mapping[str, str], settings: StatsSettings,
             run: Mapping) -> Section:
    per_model = settings.unusual_per_model
    anomalies = read_anomalies(run_dir)
    listed = []
    for model in sorted({a["model"] for a in anomalies}):
        ranked = sorted((a for a in anomalies if a["model"] == model and a["anomaly_rank"] is not None),
                        key=lambda a: a["anomaly_rank"])
        listed += ranked[:per_model]
    graded = _graded(rows, anomalies)
    code = _code_traces(run_dir, {a["trace_id"] for a in listed}, run)
    seen = {a["trace_id"] for a in anomalies if a["failure_risk_in_sample"]}  # traces the risk model was trained on
    agreement, floor = run_agreement(run), settings.min_agreement
    poor = {name for name in INDICATORS if agreement and poorly_agreeing(agreement, name, floor)}
    cells = [[(a["trace_id"], pages.get(a["trace_id"])), a["model"], format_number(a["anomaly"], 2),
              str(a["anomaly_rank"]), (CODE_MARK if a["trace_id"] in code else "") + _drivers(a["drivers"], poor),
              format_number(a["failure_risk"], 2) + (IN_SAMPLE if a["trace_id"] in seen else "")] for a in listed]
    reasons = sorted({a["anomaly_reason"] for a in anomalies if a["anomaly_reason"]})
    note = ((f"The {per_model} most unusual traces of each model: anomaly" if listed else "Anomaly")
            + " is the robust Mahalanobis distance of a "
            "trace's 19 indicators from its own model's traces; drivers are the indicators that push it out, with "
            "their signed robust z; failure_risk is the probability that the final answer is wrong (calibrated on "
            "its training corpora), from the reasoning's structure alone (never the answer, the gold answer or a "
            "grade); on other corpora its probabilities may be off (with grades, the table under this one compares "
            "them with the share of wrong answers). "
            "Every trace is in anomalies.csv.")
    if seen:
        marked = sum(a["trace_id"] in seen for a in listed)
        which = f"{marked} of those listed, marked \"{IN_SAMPLE.strip()}\"" if marked else "none of those listed"
        note += (f" {len(seen)} of the run's traces ({which}) {'is a trace' if len(seen) == 1 else 'are traces'} "
                 f"the failure-risk model was trained on (recognised by their opening words and signs): "
                 f"{'its' if len(seen) == 1 else 'their'} failure_risk is in-sample.")
    if code:
        note += (f" \"{CODE_MARK.rstrip('; ')}\" marks a trace whose reasoning is a Python program, not prose "
                 "(provenance reasoning_is_code): its units and indicators describe code, which alone can set it apart.")
    if any("⚠" in row[4] for row in cells):
        note += (f" ⚠ marks a driver whose values on the linker's graphs agree with annotated graphs under ρ {floor} "
                 "(the effect table's ρ columns): the trace may stand out in how the parser read it rather than in "
                 "how it reasons.")
    if reasons:
        note += " Not scored: " + "; ".join(reasons) + "."
    pooled = _pooled_groups(rows, listed)
    if pooled:  # a new user's MiP run: a model's six most unusual traces were all its missing-premise ones
        note += (f" A model's traces are scored together across the run's groups ({pooled}): a trace can stand out "
                 "for its group's difference from the model's other traces.")
    return Section("Unusual traces and failure risk", note, UNUSUAL_HEADER, cells,
                   empty="No model has enough traces for anomaly scores.",
                   after=_risk_auroc(rows, graded, seen & set(graded), settings))


def _drivers(drivers: str | None, poor: set[str]) -> str:
    """anomalies.csv's drivers ("idea_count +6.5; semantic_spread +3.8") with ⚠ after each in `poor`."""
    if not drivers:
        return "–"
    return "; ".join(d + (" ⚠" if d.split(" ")[0] in poor else "") for d in drivers.split("; "))


def _both_kinds(graded: Sequence[tuple[float, bool]]) -> bool:
    """Whether (score, wrong) pairs hold MIN_PER_CLASS wrong and MIN_PER_CLASS right traces: enough for an AUROC."""
    n_wrong = sum(w for _, w in graded)
    return min(n_wrong, len(graded) - n_wrong) >= MIN_PER_CLASS


def _risk_interval(graded: Sequence[tuple[float, bool]], questions: Sequence | None = None
                   ) -> tuple[float, float, float] | None:
    """The AUROC of failure_risk for a wrong answer with its 95% interval (DeLong's; `questions`: each
    trace's question, None if unknown, its cluster); None with too few of one kind."""
    if not _both_kinds(graded):
        return None
    return auroc_delong([p for p, _ in graded], [w for _, w in graded], clusters=questions)


def _auroc_cell(found: tuple[float, float, float] | None) -> str:
    """'0.673 [0.58, 0.76]' (`_risk_interval`), or why there is none."""
    if found is None:
        return f"too few of one kind ({MIN_PER_CLASS} right and {MIN_PER_CLASS} wrong needed)"
    value, low, high = found
    return f"{value:.3f} [{low:.2f}, {high:.2f}]"


def _pooled_groups(rows: Sequence[Mapping], listed: Sequence[Mapping]) -> str:
    """How the traces listed fall into the run's groups ("MiP 9, normal 3"), where some model's traces lie in
    two or more groups; '' otherwise."""
    group_of = {r["trace_id"]: r.get("group") for r in rows}
    by_model: dict[str, set] = {}
    for r in rows:
        if r.get("group") not in (None, ""):
            by_model.setdefault(r["model"], set()).add(r["group"])
    if not any(len(g) > 1 for g in by_model.values()):
        return ""
    counts: dict[str, int] = {}
    for a in listed:
        g = group_of.get(a["trace_id"])
        counts[str(g)] = counts.get(str(g), 0) + 1
    return "of those listed: " + ", ".join(f"{g} {n}" for g, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _graded(rows: Sequence[Mapping], anomalies: Sequence[Mapping]) -> dict[str, tuple[float, bool]]:
    """trace_id -> (failure_risk, wrong) of the traces that have both a grade and a failure_risk."""
    correct = {r["trace_id"]: r["correct"] for r in rows if r.get("correct") is not None}
    return {a["trace_id"]: (a["failure_risk"], not correct[a["trace_id"]]) for a in anomalies
            if a["trace_id"] in correct and a["failure_risk"] is not None and math.isfinite(a["failure_risk"])}


def _model_length_auroc(rows: Sequence[Mapping], wrong: Sequence[bool], settings: StatsSettings) -> float | None:
    """The cross-validated AUROC of model + log tokens for a wrong answer over `rows` (those with tokens), as
    the outcome-validity section computes it; None with fewer than MIN_PER_CLASS or stats.cv_folds of a kind."""
    kept = [(r, w) for r, w in zip(rows, wrong) if (r.get("tokens") or 0) > 0]
    n_wrong = sum(w for _, w in kept)
    if min(n_wrong, len(kept) - n_wrong) < max(MIN_PER_CLASS, settings.cv_folds):
        return None
    return cross_validated_auroc(model_length_features([r for r, _ in kept]),
                                 np.array([w for _, w in kept], dtype=bool), settings)


def _risk_auroc(rows: Sequence[Mapping], graded: Mapping[str, tuple[float, bool]], seen: set[str],
                settings: StatsSettings) -> tuple[str, list[str], list[list[str]]] | None:
    """The run's own AUROC of failure_risk where it has grades (`_graded`), as a table (note, header, rows):
    over every graded trace, over those the model was not trained on (`seen`: anomalies.csv's
    failure_risk_in_sample), and
    within each domain and group; each beside the same traces ranked by their length alone and by a
    cross-validated model + length regression."""
    if not graded:
        return None
    by_id = {r["trace_id"]: r for r in rows}

    found: dict[str, tuple] = {}  # label -> (failure_risk's interval, the model + length AUROC), for the verdict

    def row(label: str, part: Mapping[str, tuple[float, bool]]) -> list[str]:
        if not part:  # a level whose graded traces are all in-sample, where the rows are out of sample
            return [label, "0", "0", "–", "–", "no trace here", "–", "–"]
        by_length = [(by_id[t]["tokens"], wrong) for t, (_, wrong) in part.items()
                     if by_id[t].get("tokens") is not None]
        length = (f"{auroc([n for n, _ in by_length], [w for _, w in by_length]):.3f}" if _both_kinds(by_length)
                  else "–")
        wrong = sum(w for _, w in part.values())
        interval = _risk_interval(list(part.values()), [question_key(by_id[t]) for t in part])
        baseline = _model_length_auroc([by_id[t] for t in part], [w for _, w in part.values()], settings)
        found[label] = interval, baseline
        return [label, str(len(part)), str(wrong), f"{wrong / len(part):.2f}",
                f"{sum(p for p, _ in part.values()) / len(part):.2f}", _auroc_cell(interval), length,
                "–" if baseline is None else f"{baseline:.3f}"]

    table = [row("all", graded)]
    note = ("How well failure_risk tells this run's wrong answers from its right ones: the AUROC (95% interval, "
            "DeLong's) beside that of the traces' length alone (their tokens, longer = riskier; under 0.5, "
            "shorter traces are the more often wrong) and that of a baseline that learns from these grades, a "
            "logistic regression on the model and log tokens cross-validated on the row's traces as in the "
            "outcome-validity section (it learns the direction of length and each model's share wrong, which "
            "failure_risk never sees; the baselines carry no interval: the width of failure_risk's gives the scale "
            "of the noise), and whether its probabilities hold here: its mean beside the share of wrong answers.")
    share, mean = float(table[0][3]), float(table[0][4])
    if abs(share - mean) > CALIBRATION_GAP:
        note += (f" Here they do not ({mean:.2f} predicted against {share:.2f} wrong): on this run read failure_risk as a "
                 f"ranking of the traces, not as a probability.")
    if seen and len(seen) == len(graded):
        note += (f" All {len(seen)} graded traces are traces the failure-risk model was trained on (recognised by their "
                 "opening words and signs): the figures are in-sample and say nothing of traces it has not seen.")
    unseen = {t: v for t, v in graded.items() if t not in seen}
    if seen and unseen:
        table.append(row("not trained on", unseen))
        note += (f" {len(seen)} of the {len(graded)} graded traces {'is one' if len(seen) == 1 else 'are ones'} the "
                 "failure-risk model was trained on (recognised by their opening words and signs), so the first row is "
                 + ("mostly in-sample (read it as no test of the model)" if 2 * len(seen) > len(graded) else
                    "partly in-sample")
                 + "; the second leaves them out, though they may come from a corpus the failure-risk model was trained on "
                 "(in-distribution): its card gives what it reaches on each corpus left out of training. Its training "
                 "sample drew up to a fixed number of right and of wrong traces per model and domain, so which traces "
                 "it saw depends on their grades: the rarer outcome of a model or condition may be all in-sample.")
    within = unseen if seen and unseen else graded  # the verdict's traces: out of sample where some are
    levels_of = {}
    for by in ("domain", "group"):
        level_of = {r["trace_id"]: r.get(by) for r in rows}
        levels = sorted({str(level_of[t]) for t in graded if level_of.get(t) is not None})
        if 1 < len(levels) <= MAX_LEVELS_SAID:  # a design factor can carry the whole ranking (MiP against normal)
            levels_of[by] = {v: {t for t in graded if str(level_of.get(t)) == v} for v in levels}
    design = _design_note(rows, within, settings, table[-1][0], set(levels_of))
    # no verdict where a design factor alone tells the verdict's traces apart: the rows within its levels speak
    note += design or _verdict(table[-1][0], *found[table[-1][0]])
    # within the levels, out of sample, unless a level's traces not trained on hold too few of one kind where all its
    # graded traces hold enough: then every graded trace (a MiP-Overthinking run: the few right answers of the MiP
    # condition were all in-sample)
    if within is unseen and any(not _both_kinds([unseen[t] for t in ids if t in unseen])
                                and _both_kinds([graded[t] for t in ids])
                                for levels in levels_of.values() for ids in levels.values()):
        within = graded
    split = []
    for by, why in (("domain", "a domain can hold most of the wrong answers"),
                    ("group", "a condition can separate right from wrong answers by itself")):
        if by in levels_of:
            table += [row(f"{by} {v}", {t: within[t] for t in ids if t in within}) for v, ids in levels_of[by].items()]
            split.append(f"within each {by} ({why})")
    if split:
        over = (", over the traces the failure-risk model was not trained on" if within is unseen else
                ", over every graded trace (partly in-sample: the traces not trained on hold too few of one kind in "
                "some level)" if seen and unseen else "")
        note += " Then the same " + " and ".join(split) + over + "."
    return note, RISK_HEADER, table


def _design_note(rows: Sequence[Mapping], part: Mapping[str, tuple[float, bool]], settings: StatsSettings,
                 label: str = "all", listed: set[str] = frozenset()) -> str:
    """Where the domain or group alone tells the traces of the table's row `label` wrong from right
    (`factor_auroc`: at least FACTOR_AUROC_NOTE, beyond shuffled grades), that failure_risk may rank them
    through it; `listed`: the factors the table breaks down by level. On a MiP-Overthinking run the traces
    it was not trained on were all wrong in one condition and right in the other: failure_risk's 0.98
    there said which condition a trace came from."""
    by_id = {r["trace_id"]: r for r in rows}
    ids = sorted(part)
    wrong = np.array([part[t][1] for t in ids], dtype=bool)
    said, factors = [], []
    for by in ("group", "domain"):
        found = factor_auroc([by_id[t] for t in ids], wrong, by, settings.factor_seed, settings.factor_shuffles)
        if found and found["auroc"] >= FACTOR_AUROC_NOTE and found["p"] < 0.05:
            said.append(f"the {by} alone tells them apart at AUROC {found['auroc']:.2f} ({found['chance']:.2f} with the "
                        f"grades shuffled)")
            factors.append(by)
    if not said:
        return ""
    shown = [by for by in factors if by in listed]
    hidden = [by for by in factors if by not in listed]
    return (f" On the traces of the row '{label}' {' and '.join(said)}, each trace scored by the share wrong of its "
            f"{' or '.join(factors)}: failure_risk may rank them by what differs between those rather than by how a "
            "reasoning fails, so no verdict is drawn there"
            + (f"; read the rows within each {' and each '.join(shown)} below, where they have both kinds" if shown else "")
            + (f"; the {' and the '.join(hidden)} {'has' if len(hidden) == 1 else 'have'} more than {MAX_LEVELS_SAID} "
               "values, too many to list" if hidden else "") + ".")


def _verdict(label: str, interval: tuple[float, float, float] | None, baseline: float | None) -> str:
    """One sentence on a row of the failure-risk table (`label`): whether the model + length baseline lies
    above, below or within failure_risk's interval as the table prints them ('' where either is missing)."""
    if interval is None or baseline is None:
        return ""
    cell, baseline = _auroc_cell(interval), round(baseline, 3)
    low, high = round(interval[1], 2), round(interval[2], 2)
    over = " over the traces the failure-risk model was not trained on" if label == "not trained on" else ""
    if baseline > high:
        return (f" Verdict{over}: the model + length baseline ({baseline:.3f}) lies above failure_risk's interval "
                f"({cell}): here the models' shares of wrong answers and the traces' lengths tell wrong from right "
                f"better than the reasoning's structure does.")
    if baseline < low and baseline <= 0.5:  # a baseline at or under chance: beating it says little
        if low > 0.5:
            return (f" Verdict{over}: failure_risk ({cell}) ranks the wrong answers better than chance; the model + "
                    f"length baseline does not here ({baseline:.3f}), so beating it says little more.")
        return (f" Verdict{over}: neither failure_risk ({cell}) nor the model + length baseline ({baseline:.3f}) ranks "
                f"the wrong answers better than chance here.")
    if baseline < low:
        return (f" Verdict{over}: failure_risk ({cell}) ranks the wrong answers better than the model + length "
                f"baseline ({baseline:.3f}), which learns from these very grades.")
    if low <= 0.5 and baseline <= 0.5:  # MR-BEN: 0.350 [0.20, 0.54] and 0.27 had read "cannot be told apart"
        return (f" Verdict{over}: neither failure_risk ({cell}) nor the model + length baseline ({baseline:.3f}) ranks "
                f"the wrong answers better than chance here.")
    return (f" Verdict{over}: failure_risk ({cell}) and the model + length baseline ({baseline:.3f}) cannot be told "
            f"apart: the baseline lies within failure_risk's interval.")


def _choice(run_dir: Path, rows: Sequence[Mapping], settings: StatsSettings) -> Section:
    cells, warnings, pooled = [], [], []
    fewest = max(settings.min_group, settings.select_min_traces)
    selections = select_by_domain(run_dir, settings=settings, rows=rows)
    for sel in selections:
        best = [r for r in sel.rows if r["tier"] == 1]
        if not best:  # every model under stats.select_min_traces
            cells.append([sel.domain, str(len(sel.rows)), "–", "–", "–", "–",
                          f"no: every model has fewer than {fewest} traces"])
            continue
        top = best[0]
        if "accuracy" in sel.notes:
            warnings.append(f"{sel.domain}: {sel.notes['accuracy']}")
        accs = [f"{r['model']} {r['accuracy']:.2f} (n {r['graded']})" for r in best if r["accuracy"] is not None]
        interval = (f"[{format_number(top['ci_low'], 2)}, {format_number(top['ci_high'], 2)}]"
                    if top["ci_low"] is not None else "–")
        if "groups" in sel.notes:  # this domain's own groups, with the hint that follows
            pooled.append(f"in {sel.domain} {sel.notes['groups']}")
        placed = sum(r["tier"] is not None for r in sel.rows)  # models with enough traces for a tier
        apart = ("no" if len(best) > 1 else "yes" if placed == len(sel.rows) else
                 "– (no other model has a tier)" if placed == 1 else f"yes, among the {placed} with a tier")
        cells.append([sel.domain, str(len(sel.rows)), ", ".join(r["model"] for r in best),
                      format_number(top["fit"], 2), interval, "; ".join(accs) or "–", apart])
    listed = {sel.domain for sel in selections}
    alone = sorted({d for r in rows if (d := level(r, "domain")) is not None} - listed)  # one model: no choice
    percent = round(100 * settings.ci_level)
    note = ("Per domain, the models ranked by fit with every dimension wanted up (the default of `thinkprobe select "
            "RUN --domain D`; other wishes: --want 'Depth+,Efficiency+' or --like PROFILE.json). The fit says how a "
            "model's reasoning looks on those dimensions, not how often it is right, and is not length-controlled "
            "(longer traces open more ideas). A model with fewer than "
            f"{fewest} traces of the domain gets no tier (`thinkprobe select` still ranks it). "
            "Tier 1 is the best-fitting model with a tier and, in order of fit, every model after it until the first "
            f"one the run tells apart from it (the {percent}% bootstrap interval of the difference in fit excludes 0; "
            "each pair on its own); fit and "
            "interval are that model's; accuracy is over each model's graded traces of the domain (n: how many)."
            + (" Where a lower tier answers more accurately: " + "; ".join(warnings) + "." if warnings else "")
            + (f" Not listed, with one model only: {', '.join(alone[:8])}{' ...' if len(alone) > 8 else ''}."
               if alone and selections else "")
            + (" " + "; ".join(pooled)[0].upper() + "; ".join(pooled)[1:] + "." if pooled else ""))
    return Section("Which model for which domain", note if cells else "", CHOICE_HEADER, cells,
                   empty="No domain has two or more models.")


def decision_sections(run_dir: str | Path, rows: Sequence[Mapping], pages: Mapping[str, str],
                      run: Mapping) -> list[Section]:
    """The unusual traces and the model for each domain; `run`: the run's run.json (coverage.run_json),
    its stats settings read once for both."""
    run_dir = Path(run_dir)
    settings = stats_settings(run_dir)
    return [_unusual(run_dir, rows, pages, settings, run), _choice(run_dir, rows, settings)]


def _html_cell(v) -> str:
    if isinstance(v, tuple):
        tid, link = v
        return f'<a href="{esc(link)}">{esc(tid)}</a>' if link else esc(tid)
    return esc(v)


def _md_cell(v) -> str:
    if isinstance(v, tuple):
        tid, link = v
        return f"[{tid}]({link})" if link else tid
    return v


def sections_html(sections: Sequence[Section], titles: Mapping[str, str]) -> str:
    out = []
    for s in sections:
        table = (html_table(s.header, [[_html_cell(v) for v in row] for row in s.rows], left=2, cls="sortable wrap",
                            titles=titles) if s.rows else f"<p class=note>{esc(s.empty)}</p>")
        out.append(f"<h2>{esc(s.title)}</h2>" + (f"<p class=note>{esc(s.note)}</p>" if s.note else "") + table)
        if s.after:
            note, header, rows = s.after
            out.append(f"<p class=note>{esc(note)}</p>" + html_table(header, [[esc(v) for v in row] for row in rows],
                                                                      titles=titles))
    return "\n".join(out)


def sections_md(sections: Sequence[Section]) -> list[str]:
    parts: list[str] = []
    for s in sections:
        parts += [f"## {s.title}", "", *([s.note, ""] if s.note else []),
                  md_table(s.header, [[_md_cell(v) for v in row] for row in s.rows]) if s.rows else s.empty, ""]
        if s.after:
            note, header, rows = s.after
            parts += [note, "", md_table(header, rows), ""]
    return parts
