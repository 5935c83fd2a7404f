"""report.html and report.md assembled from the figures, tables and text (the redundancy table as
CoTJudger prints it).
"""
from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import Mapping, Sequence

from ..outputs import INDICATORS_TABLE, read_table
from ..tables import read_csv
from .agreement import agreement_note, run_agreement
from .coverage import coverage_html, coverage_md
from .decisions import decision_sections, sections_html, sections_md
from .pairs import pairs_section
from .glossary import GLOSSARY, definition, glossary_items
from .markup import data_uri, esc, html_page, html_table, md_table
from .style import DIMS, as_number, display_label, format_number
from .summary import summary_text
from .text import (EFFECT_TITLES, NO_RADAR, effect_header, z_text, effect_rows, has_group, headline, icc_rows, method_note, no_icc_text,
                   profile_ci_rows, profile_note, too_few_text, traces_word)
from .validity import outcome_rows, outcome_text

__all__ = ["redundancy_table", "report_sections", "report_html", "report_md"]


# Which way is better in each redundancy column (our reading of CoTJudger's Table 1): accuracy and
# recoveries from a wrong answer (EB) up; length, structure, redundancy and every other transition down.
BETTER: dict[str, str] = {"Acc": "higher", "EB": "higher", **{c: "lower" for c in (
    "Tokens", "|V|", "Iso", "|E|", "D", "in_max", "out_max", "Self", "Back", "L_eff", "R", "Unc", "DR", "SV", "EE")}}


def best_worst(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[dict[int, str]]:
    """Per row, the columns holding the best ("best") and worst ("worst") model value of a column
    with a direction in BETTER (the "all" row and empty cells take no part; ties all marked)."""
    marks: list[dict[int, str]] = [{} for _ in rows]
    for i, name in enumerate(header):
        if name not in BETTER:
            continue
        values = {k: as_number(row[i]) for k, row in enumerate(rows) if row[0] != "all"}
        values = {k: v for k, v in values.items() if math.isfinite(v)}
        if len(set(values.values())) < 2:
            continue
        top, bottom = (max, min) if BETTER[name] == "higher" else (min, max)
        best, worst = top(values.values()), bottom(values.values())
        for k, v in values.items():
            if v == best:
                marks[k][i] = "best"
            elif v == worst:
                marks[k][i] = "worst"
    return marks


SEP_ENDS = {"first_correct": "the first correct answer", "final_answer": "the final answer",
            "conclusion": "the last conclusion", "last_unit": "the last unit"}


def redundancy_table(path: Path, grades: Mapping | None = None) -> tuple[list[str], list[list[str]], str] | None:
    """redundancy.csv as (header, rows, caption): per-model means in the file's column order
    (CoTJudger's) when it has one row per trace, the file as it is otherwise. A column known for
    only some traces (Acc: graded traces only) gets its own n beside it; `grades` (run.json's): the
    caption says how many traces Acc counts incorrect for want of a final answer."""
    if not path.exists():
        return None
    rows = read_csv(path)
    if not rows:
        return None
    columns = list(rows[0])
    keys = {"trace_id", "model", "domain", "group", "source_id", "level", "sep_to"}
    metrics = [c for c in columns if c not in keys]

    def value(r, c):
        return as_number(r[c])

    numeric = [c for c in metrics if any(math.isfinite(value(r, c)) for r in rows)]
    partial = [c for c in numeric if not all(math.isfinite(value(r, c)) for r in rows)]
    if "model" in columns and "trace_id" in columns:
        header = ["model", "n"]
        for c in numeric:
            header += [c, f"n ({c})"] if c in partial else [c]
        out = []
        for model in sorted({r["model"] for r in rows}) + ["all"]:
            members = [r for r in rows if model == "all" or r["model"] == model]
            cells = [model, str(len(members))]
            for c in numeric:
                vals = [value(r, c) for r in members if math.isfinite(value(r, c))]
                cells.append(format_number(sum(vals) / len(vals)) if vals else "–")
                if c in partial:
                    cells.append(str(len(vals)))
            out.append(cells)
        note = (f" Columns known for only some traces carry their own n: {', '.join(partial)}." if partial else "")
        if n := (grades or {}).get("matcher_no_answer"):  # PRM800K's solution prefixes: Acc measured how many were cut
            note += (f" Acc counts {traces_word(n)} incorrect because no final answer was found in "
                     f"{'it' if n == 1 else 'them'} (unfinished or cut off? --unanswered ungraded leaves such traces "
                     "ungraded).")
        ends = {k: sum(r.get("sep_to") == k for r in rows) for k in SEP_ENDS}
        if any(ends.values()):  # what R means differs by trace: say how often each end was used
            note += (" L_eff and R run to " + ", ".join(f"{SEP_ENDS[k]} in {n}" for k, n in ends.items() if n)
                     + " of the traces (sep_to in redundancy.csv).")
        return header, out, ("Mean per model over traces (columns in CoTJudger's order); per column the best "
                             "model value is marked ▲ and the worst ▼ (higher is better for Acc and EB, lower for "
                             "the others): which mean is highest or lowest, not that it differs beyond chance. DR, SV, "
                             "EE and EB count transitions between candidate answers by their verdicts, so they follow "
                             "accuracy: a model rarely right has few correct -> correct transitions (SV), and so "
                             "the 'best' SV." + note)
    return columns, [[r[c] for c in columns] for r in rows[:500]], "As written in redundancy.csv."


def cot_sections(analyses: dict | None, figures: dict, image) -> list[str]:
    """CoTJudger's analyses, one block per figure (title, definition, the figure via `image(name,
    alt)`, its table), or one line saying why it is missing; shared by the HTML and Markdown."""
    from .cot_figures import COT_FIGURES

    if analyses is None:
        return []
    out = []
    for name, (title, definition) in COT_FIGURES.items():
        if name in figures:
            out.append((title, definition, image(name, title)))
        else:
            reason = analyses.get("missing", {}).get(name, "no data for it in this run")
            out.append((title, f"Not drawn: {reason}.", None))
    return out


def _levels_line(analyses: dict | None) -> str:
    if not analyses:
        return ""
    lv = analyses["levels"]
    counts = ", ".join(f"level {k}: {v}" for k, v in lv["questions_per_level"].items())
    return (f"{lv['questions_with_level']} of {lv['questions_graded']} graded questions have a difficulty level "
            f"({counts}). {lv['rule']}")


INDICATORS_NOTE = ("Each cell: the model's median of the indicator over its traces; its colour: that median as a "
                   "z-score over all traces of the run (blue below the run's mean, red above; the indicators are raw, "
                   "so for tokens_per_idea and redundancy_ratio, which Efficiency counts negatively, red is less "
                   "efficient). Under each name: "
                   "ε² by model (Kruskal-Wallis), * Holm p < α. Per-trace values: indicators.csv.")


ICC_NOTE = ("ICC(1) reads a model's answers to one question as independent samples of it; where a corpus picked them "
            "(one right and one wrong answer per problem, as Thought Anchors does), they are no such samples.")

OUTCOME_HEADER = ["variable", "AUROC (wrong), pooled [95%]", "AUROC (wrong), within model [95%]"]


GROUP_NOTE = ("Mean profile per model and group (the third grouping factor: --group-field, --group or "
              "(?P<group>...) in --path-pattern), over the traces that have a group; grey: no traces.")


def _trace_columns(rows) -> tuple[list[str], bool]:
    """The traces table's header, with a group column when some trace has a group."""
    grouped = any(r.get("group") is not None for r in rows)
    return ["trace", "model", "domain", *(["group"] if grouped else []), "units", "edges", "tokens", *DIMS], grouped


def _effects_title(stats) -> str:
    return "Effect sizes: model versus domain" + (" and group" if has_group(stats) else "") + ", beyond length and chance"


def report_sections(run_dir, stats, rows, pages, run) -> list:
    """The report's table sections, built once for report.html and report.md (the unusual traces scan
    graphs.jsonl; the model choice bootstraps): which models differ, then the decision sections."""
    return [pairs_section(stats), *decision_sections(run_dir, rows, pages, run)]


def report_html(run_dir, stats, rows, cells, figures, pages, redundancy, run, decisions, analyses=None,
                group_cells=()) -> str:
    """report.html's page. `run`: the run's run.json (coverage.run_json); `decisions`: the pairs, unusual-traces
    and model-choice sections (`report_sections`), built once for both documents."""
    def img(name, alt):
        return f'<img class="fig" alt="{esc(alt)}" src="{data_uri(figures[name])}">'

    def titled(header):
        return {h: definition(h) or EFFECT_TITLES.get(h, "") for h in header}

    summary = "".join(f"<p>{esc(line).replace('`', '')}</p>" for line in summary_text(run_dir, stats, pages, run))
    agreement = run_agreement(run)
    head = "".join(f"<li>{esc(line)}</li>" for line in headline(stats, agreement, run))
    cell_rows = [[esc(c["model"]), esc(display_label(c["domain"])), str(c["n"]), *(z_text(c[d]) for d in DIMS)]
                 for c in cells]
    counts = _read_counts(run_dir)
    trace_header, grouped = _trace_columns(rows)
    trace_rows = []
    for r in rows:
        link = pages.get(r["trace_id"])
        tid = f'<a href="{esc(link)}">{esc(r["trace_id"])}</a>' if link else esc(r["trace_id"])
        trace_rows.append([tid, esc(r["model"]), esc(display_label(r["domain"])),
                           *([esc(r["group"] or "–")] if grouped else []), *map(esc, counts[r["trace_id"]]),
                           *(format_number(r[d], 2) for d in DIMS)])
    group_section = ""
    if group_cells:
        group_rows = [[esc(c["model"]), esc(c["group"]), str(c["n"]), *(z_text(c[d]) for d in DIMS)]
                      for c in group_cells]
        group_section = (f"<h2>Model × group profiles</h2><p class=note>{esc(GROUP_NOTE)}</p>"
                         + img("group_heatmap", "Heat map of the model by group profiles")
                         + "<details><summary>Values</summary>"
                         + html_table(["model", "group", "n", *DIMS], group_rows, left=2,
                                      titles=titled(["n", *DIMS]))
                         + "</details>")

    radar = img("radar", "Radar chart of the model profiles over the five dimensions") if "radar" in figures \
        else f"<p class=note>{esc(NO_RADAR)}</p>"
    red = ""
    if redundancy:
        header, red_rows, caption = redundancy
        marks = best_worst(header, red_rows)
        sign = {"best": "▲", "worst": "▼"}
        cells_html = [[f'<span class="{m[i]}">{esc(v)}<sup>{sign[m[i]]}</sup></span>' if i in m else esc(v)
                       for i, v in enumerate(row)] for row, m in zip(red_rows, marks)]
        red = (f"<h2>Redundancy (CoTJudger's metrics)</h2><p class=note>{esc(caption)}</p>"
               + html_table(header, cells_html, cls="sortable dense", titles=titled(header)))
    cot = ""
    if analyses is not None:
        blocks = cot_sections(analyses, figures, img)
        cot = (f"<h2>CoTJudger's analyses</h2><p class=note>{esc(_levels_line(analyses))}</p>"
               + "".join(f"<h3>{esc(title)}</h3><p class=note>{esc(text)}</p>{figure or ''}"
                         for title, text, figure in blocks))
    icc = icc_rows(stats)
    icc_header = ["variable", "ICC", "ICC of a question's mean", "(model, question) pairs", "traces per pair"]
    icc_html = (html_table(icc_header, [[esc(c) for c in r] for r in icc], titles=titled(icc_header))
                + f"<p class=note>{esc(ICC_NOTE)}</p>"
                if icc else f"<p class=note>{esc(no_icc_text(stats))}</p>")
    outcome = ""
    if stats["outcome"]["graded"]:
        o_rows = outcome_rows(stats)
        outcome = (f"<h2>Outcome validity</h2><p class=note>{esc(outcome_text(stats))}</p>"
                   + (html_table(OUTCOME_HEADER,
                                  [[f'<span title="{esc(GLOSSARY.get(r[0], ""))}">{esc(r[0])}</span>', r[1], r[2]]
                                   for r in o_rows], titles=titled(OUTCOME_HEADER)) if o_rows else ""))
    glossary = "".join(f"<h3>{esc(title)}</h3><dl class=glossary>"
                       + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items) + "</dl>"
                       for title, items in glossary_items())

    body = f"""<h1>ThinkProbe report</h1>
{summary}
<div class="headline"><strong>Headline</strong><ul>{head}</ul></div>
<h2>Model profiles</h2>
{radar}
{html_table(["model", "n", *DIMS], [[esc(c) for c in r] for r in profile_ci_rows(stats)], titles=titled(["n", *DIMS]))}
<p class=note>{esc(profile_note(stats, run, rows))}</p>
<h2>{esc(_effects_title(stats))}</h2>
{html_table(effect_header(stats, agreement), effect_rows(stats, html_out=True, agreement=agreement), left=1, titles=EFFECT_TITLES,
             cls="dense wrap" if has_group(stats) else "",
             row_classes=["dim" if e["kind"] == "dimension" else "" for e in stats["variables"]])}
<p class=note>{esc(method_note(stats))} {esc(too_few_text(stats))} {esc(agreement_note(stats, run))}</p>
{f'<p class="flag">⚠ {esc(unreliable_text(stats))}</p>' if unreliable_text(stats) else ""}
{img("effects", "Effect sizes by model and by domain, raw and length-controlled")}
{sections_html(decisions[:1], GLOSSARY)}
<h2>Reliability of repeated answers</h2>
{icc_html}
{outcome}
{sections_html(decisions[1:], GLOSSARY)}
<h2>Model × domain profiles</h2>
{img("heatmap", "Heat map of the model by domain profiles")}
<details><summary>Values</summary>{html_table(["model", "domain", "n", *DIMS], cell_rows, left=2, titles=titled(["n", *DIMS]))}</details>
{group_section}
<h2>Indicators by model</h2>
<p class=note>{esc(INDICATORS_NOTE)}</p>
{img("indicators", "Heat map of the median of every indicator by model")}
{red}
{cot}
{coverage_html(run)}
<h2>Traces</h2>
<p class=note>Click a column header to sort (numbers inside ids sort as numbers).</p>
{html_table(trace_header, trace_rows, left=4 if grouped else 3, cls="sortable traces", titles=titled(trace_header))}
<h2>Glossary</h2>
{glossary}"""
    return html_page("ThinkProbe report", with_contents_html(body))


def section_slug(title: str) -> str:
    """The anchor of a section: its title in lower case, without signs but letters, digits, '-' and spaces,
    spaces as '-' (as GitHub and most Markdown viewers name a heading: "Model × domain profiles" ->
    "model--domain-profiles")."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def with_contents_html(body: str) -> str:
    """`body` with an anchor before every section heading (h2) and, after the headline, the list of the
    sections linking to them."""
    titles, slugs = [], []

    def anchored(match: re.Match) -> str:
        slug = section_slug(html.unescape(match.group(1)))
        slug = slug if slug not in slugs else f"{slug}-{len(slugs)}"  # two sections of one title: two anchors
        titles.append(match.group(1))
        slugs.append(slug)
        return f'<a id="{slug}"></a>{match.group(0)}'

    body = re.sub(r"<h2>(.*?)</h2>", anchored, body)
    contents = ("<nav class=contents><strong>Contents</strong><ol>"
                + "".join(f'<li><a href="#{s}">{t}</a></li>' for t, s in zip(titles, slugs)) + "</ol></nav>")
    head_end = body.find("</div>", body.find('<div class="headline">'))
    at = head_end + len("</div>") if head_end >= 0 else body.find("\n", body.find("<h1>")) + 1
    return body[:at] + "\n" + contents + body[at:]


def with_contents_md(parts: list[str]) -> list[str]:
    """`parts` (report_md's lines) with the list of its "## " sections, linked by their anchors, before the first."""
    titles = [p[3:] for p in parts if p.startswith("## ")]
    first = next(k for k, p in enumerate(parts) if p.startswith("## "))
    return parts[:first] + ["**Contents**", "", *(f"{k}. [{t}](#{section_slug(t)})" for k, t in enumerate(titles, 1)),
                            ""] + parts[first:]


def _read_counts(run_dir: Path) -> dict[str, tuple[str, str, str]]:
    return {r["trace_id"]: (r.get("units", ""), r.get("edges", ""), r.get("tokens", ""))
            for r in read_table(run_dir, INDICATORS_TABLE)}


def unreliable_text(stats: Mapping) -> str:
    """The caveat under the effect-size table (HTML and Markdown alike): the variables whose model means
    are less reliable than stats.min_reliability; empty when none."""
    flagged = [e["variable"] for e in stats["variables"] if e["reliability"]["supports_model_differences"] is False]
    if not flagged:
        return ""
    return (f"Split-half reliability of the model means under {stats['settings']['min_reliability']}: model "
            f"differences in {', '.join(flagged)} are not supported by this run.")


def report_md(run_dir, stats, rows, cells, figures, pages, redundancy, run, decisions, analyses=None,
              group_cells=()) -> str:
    """report.md's text (`report_html`'s arguments)."""
    radar = "![Radar chart of the model profiles](figures/radar.png)" if "radar" in figures else NO_RADAR
    agreement = run_agreement(run)
    notes = " ".join(t for t in (method_note(stats), too_few_text(stats), agreement_note(stats, run)) if t)
    parts = ["# ThinkProbe report", "", *summary_text(run_dir, stats, pages, run), "", "**Headline**", "",
             *(f"- {line}" for line in headline(stats, agreement, run)), "",
             "## Model profiles", "", radar, "",
             md_table(["model", "n", *DIMS], profile_ci_rows(stats)), "",
             profile_note(stats, run, rows), "",
             f"## {_effects_title(stats)}", "",
             md_table(effect_header(stats, agreement), effect_rows(stats, html_out=False, agreement=agreement)),
             "", notes, "",
             *([f"⚠ {unreliable_text(stats)}", ""] if unreliable_text(stats) else []),
             "![Effect sizes](figures/effects.png)", "", *sections_md(decisions[:1]),
             "## Reliability of repeated answers", ""]
    icc = icc_rows(stats)
    parts += [md_table(["variable", "ICC", "ICC of a question's mean", "(model, question) pairs", "traces per pair"],
                        icc) + "\n\n" + ICC_NOTE if icc else no_icc_text(stats), ""]
    if stats["outcome"]["graded"]:
        parts += ["## Outcome validity", "", outcome_text(stats), ""]
        if outcome_rows(stats):
            parts += [md_table(OUTCOME_HEADER,
                                outcome_rows(stats)), ""]
    parts += sections_md(decisions[1:])
    parts += ["## Model × domain profiles", "", "![Heat map](figures/heatmap.png)", "",
              md_table(["model", "domain", "n", *DIMS],
                        [[c["model"], display_label(c["domain"]), c["n"], *(z_text(c[d]) for d in DIMS)] for c in cells]), ""]
    if group_cells:
        parts += ["## Model × group profiles", "", GROUP_NOTE, "", "![Heat map by group](figures/group_heatmap.png)", "",
                  md_table(["model", "group", "n", *DIMS],
                           [[c["model"], c["group"], c["n"], *(z_text(c[d]) for d in DIMS)] for c in group_cells]),
                  ""]
    parts += ["## Indicators by model", "", INDICATORS_NOTE, "", "![Indicators by model](figures/indicators.png)", ""]
    if redundancy:
        header, red_rows, caption = redundancy
        marks = best_worst(header, red_rows)
        shown = [[f"**{v}** ▲" if m.get(i) == "best" else f"{v} ▼" if m.get(i) == "worst" else v
                  for i, v in enumerate(row)] for row, m in zip(red_rows, marks)]
        parts += ["## Redundancy (CoTJudger's metrics)", "", caption, "", md_table(header, shown), ""]
    if analyses is not None:
        parts += ["## CoTJudger's analyses", "", _levels_line(analyses), ""]
        for title, text, figure in cot_sections(analyses, figures, lambda name, alt: f"![{alt}](figures/{name}.png)"):
            parts += [f"### {title}", "", text, ""] + ([figure, ""] if figure else [])
    parts += coverage_md(run)
    counts = _read_counts(run_dir)
    trace_header, grouped = _trace_columns(rows)
    trace_rows = []
    for r in rows:
        link = pages.get(r["trace_id"])
        tid = f"[{r['trace_id']}]({link})" if link else r["trace_id"]
        trace_rows.append([tid, r["model"], display_label(r["domain"]), *([r["group"] or "–"] if grouped else []),
                           *counts[r["trace_id"]], *(format_number(r[d], 2) for d in DIMS)])
    parts += ["## Traces", "", md_table(trace_header, trace_rows),
              "", "## Glossary", ""]
    for title, items in glossary_items():
        parts += [f"### {title}", "", *(f"- **{k}**: {v}" for k, v in items), ""]
    # what opens an HTML tag, from the data (a model named "<img src=x onerror=...>") or the glossary's
    # "(?P<group>...)", is text: a Markdown viewer would run it or hide it
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", "\n".join(with_contents_md(parts)))
