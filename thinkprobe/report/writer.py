"""`write_report`: a run folder into report.html, report.md, figures/*.png and traces/*.html.
"""
from __future__ import annotations

import functools
import math
import os
import re
from pathlib import Path
from typing import Mapping, Sequence

from ..cognitive_profile import group_profiles
from ..outputs import (DYNAMICS_TABLE, LEVEL_REDUNDANCY_TABLE, PARETO_TABLE, POSITIONS_TABLE, REDUNDANCY_TABLE,
                       ROLES_TABLE, TRANSITIONS_TABLE)
from ..stats import compute_stats, load_table
from ..tables import own_dir, write_own
from .coverage import run_json
from .document import redundancy_table, report_html, report_md, report_sections
from .cot_figures import (COT_FIGURES, difficulty_figure, dynamics_figure, lengths_figure, outcome_tokens_figure,
                          pareto_figure, positions_figure, roles_figure, transitions_figure)
from .figures import effects_figure, heatmap_figure, indicator_figure, radar_figure
from .markup import html_page, visible
from .style import DIMS, FIGURE_DPI, figure_style, png_bytes, run_models
from .trace_pages import is_trace_page, write_trace_pages

__all__ = ["write_report", "figure_makers", "FIGURE_NAMES", "load_analyses", "cot_tables"]


def _natural_key(text: str) -> list:
    """Sort key that orders the numbers inside ids as numbers: t2 before t10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part]


_HASHED = re.compile(r"(?:[^:/]*[:/])*[0-9a-f]{8,}(?:#\d+)?")  # an id that is (ends in) a hex hash


def sorted_by_id(rows: Sequence[Mapping]) -> list:
    """Rows in the order of their trace ids: numbers inside ids as numbers (t2 before t10), but hash
    ids (Schoenfeld's 9d159400, 33e29881) in plain order, where their digits are no numbers."""
    if rows and all(_HASHED.fullmatch(r["trace_id"]) for r in rows) and any(
            re.search(r"[a-f]", re.split(r"[:/]", r["trace_id"])[-1]) for r in rows):  # not plain long numbers
        return sorted(rows, key=lambda r: r["trace_id"])
    return sorted(rows, key=lambda r: _natural_key(r["trace_id"]))


def _is_flat(by_model: Sequence[Mapping]) -> bool:
    """Every model mean 0 on every dimension, up to the 6 significant digits profile.csv keeps."""
    return all(abs(r[d]) < 1e-4 for r in by_model for d in DIMS if math.isfinite(r[d]))


class _Steps:
    """The report's steps on a progress bar (stderr), named as they start; silent when disabled."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled:
            import sys

            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc="report", unit="step", file=sys.stderr, dynamic_ncols=True,
                            bar_format="{desc} |{bar}| {n_fmt}/{total_fmt} steps [{elapsed}]")
        self.started = False

    def __call__(self, name: str) -> None:
        if self.bar is not None:
            if self.started:
                self.bar.update(1)
            self.started = True
            self.bar.set_description_str(f"report: {name}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.update(self.bar.total - self.bar.n)
            self.bar.close()


def load_analyses(run_dir: Path) -> dict | None:
    """analyses.json; for a run made before CoTJudger's analyses existed they are computed from its
    graphs.jsonl first (no re-profiling). None for a folder without graph records."""
    import json

    from ..outputs import ANALYSES_JSON
    from ..records import GRAPHS_FILE
    from ..redundancy import write_redundancy

    path = run_dir / ANALYSES_JSON
    if not path.exists():
        if not (run_dir / GRAPHS_FILE).exists():
            return None
        write_redundancy(run_dir)  # the run's own redundancy settings
    return json.loads(path.read_text(encoding="utf-8"))


def cot_tables(run_dir: Path) -> dict[str, list[dict]]:
    from ..outputs import ANALYSIS_TABLES, REDUNDANCY_TABLE, read_table

    rows = {t.name: read_table(run_dir, t) for t in ANALYSIS_TABLES if (run_dir / t.name).exists()}
    rows[REDUNDANCY_TABLE.name] = read_table(run_dir, REDUNDANCY_TABLE)
    traces: dict[str, int] = {}
    for r in rows[REDUNDANCY_TABLE.name]:
        traces[r["model"]] = traces.get(r["model"], 0) + 1
    rows["traces"] = traces  # type: ignore[assignment]
    return rows


# figure -> (the table it is drawn from, its drawing function, whether it also takes traces per model)
_COT_SOURCES = {
    "difficulty": (LEVEL_REDUNDANCY_TABLE.name, difficulty_figure, False),
    "positions": (POSITIONS_TABLE.name, positions_figure, True),
    "outcome_tokens": (REDUNDANCY_TABLE.name, outcome_tokens_figure, False),
    "lengths": (REDUNDANCY_TABLE.name, lengths_figure, False),
    "transitions": (TRANSITIONS_TABLE.name, transitions_figure, False),
    "pareto": (PARETO_TABLE.name, pareto_figure, False),
    "roles": (ROLES_TABLE.name, roles_figure, False),
    "dynamics": (DYNAMICS_TABLE.name, dynamics_figure, True),
}


def _cot_figure(name: str, rows: Mapping):
    table, draw, with_traces = _COT_SOURCES[name]
    data = rows.get(table)
    if not data:
        return None
    return draw(data, rows["traces"]) if with_traces else draw(data)


# every figure a report may hold, in drawing order (figures/<name>.png)
FIGURE_NAMES: tuple[str, ...] = ("radar", "indicators", "heatmap", "group_heatmap", "effects", *COT_FIGURES)


def figure_makers(run_dir: Path, stats: Mapping, rows: Sequence[Mapping], analyses: dict | None) -> dict:
    """{name: function drawing the figure (a Figure, or None when its table has no rows)} for the
    figures this run gets: no radar for one model scored against itself (flat at 0 by construction:
    the report says why), no group heat map without groups, none for an analysis that is missing."""
    models = sorted({r["model"] for r in rows})
    domains = sorted({r["domain"] for r in rows})
    by_model = group_profiles(rows, ("model",))
    grouped = [r for r in rows if r.get("group") is not None]
    makers = {"radar": lambda: radar_figure(by_model), "indicators": lambda: indicator_figure(rows, models, stats),
              "heatmap": lambda: heatmap_figure(group_profiles(rows, ("model", "domain")), models, domains),
              "effects": lambda: effects_figure(stats)}
    if grouped:
        makers["group_heatmap"] = lambda: heatmap_figure(
            group_profiles(grouped, ("model", "group")), sorted({r["model"] for r in grouped}),
            sorted({r["group"] for r in grouped}), by="group")
    if len(models) < 2 and _is_flat(by_model):
        del makers["radar"]
    if analyses is not None:
        cot_rows = cot_tables(run_dir)
        for name in COT_FIGURES:
            if name not in analyses["missing"]:
                makers[name] = functools.partial(_cot_figure, name, cot_rows)
    return {name: functools.partial(_in_run_colours, make, models) for name, make in makers.items()}


def _in_run_colours(make, models: Sequence[str]):
    """A figure drawn with each model in its colour of the run (`run_models`): the same in every figure,
    whichever of the run's models it shows."""
    with run_models(models):
        return make()


def write_report(run_dir: str | Path, workers: int | None = None, progress: bool = False) -> Path:
    """report.html, report.md, figures/*.png and traces/*.html in `run_dir`; returns report.html's path.
    `workers` processes draw the per-trace pages (default: up to 8, one per CPU). Trace pages left
    in traces/ by an earlier report or `thinkprobe graph` are removed: they may show other graphs.
    `progress` shows the steps on stderr."""
    step = _Steps(4 + len(FIGURE_NAMES), progress)
    try:
        return _write_report(Path(run_dir), workers, step)
    finally:
        step.close()


def _write_report(run_dir: Path, workers: int | None, step: _Steps) -> Path:
    step("statistics")
    stats = compute_stats(run_dir)
    rows = load_table(run_dir)
    if not rows:  # every trace failed to load: say so rather than draw empty charts
        note = "No traces in this run: see errors.jsonl."
        write_own(run_dir / "report.html", html_page("ThinkProbe report", f"<h1>ThinkProbe report</h1><p>{note}</p>"))
        write_own(run_dir / "report.md", f"# ThinkProbe report\n\n{note}\n")
        return run_dir / "report.html"
    rows = sorted_by_id(rows)
    cells = group_profiles(rows, ("model", "domain"))
    # the third grouping factor, over the traces that have a group (none: no section, no figure)
    group_cells = group_profiles([r for r in rows if r.get("group") is not None], ("model", "group"))
    fig_dir = own_dir(run_dir / "figures")
    own_dir(run_dir / "traces")
    step("CoTJudger's analyses")
    analyses = load_analyses(run_dir)
    figures: dict[str, bytes] = {}
    makers = figure_makers(run_dir, stats, rows, analyses)
    with figure_style():
        for name in FIGURE_NAMES:
            target = fig_dir / f"{name}.png"
            fig = makers[name]() if name in makers else None
            if fig is None:  # not drawn in this run: no file of an earlier report left to read as this run's
                target.unlink(missing_ok=True)
                continue
            step(f"figure: {name}")
            figures[name] = png_bytes(fig, FIGURE_DPI)
            write_own(target, figures[name])
    step("per-trace pages")
    pages = write_trace_pages(run_dir, workers if workers is not None else min(8, os.cpu_count() or 1))
    # pages of an earlier report (traces since re-profiled, renamed or gone) would read as this run's
    current = {Path(link).name for link in pages.values()}
    for old in (run_dir / "traces").glob("*.html"):
        if old.name not in current and (old.is_symlink() or is_trace_page(old)):  # a page of the user's stays
            old.unlink()

    step("report.html and report.md")
    run = run_json(run_dir)  # read once, for every section that says something of it
    redundancy = redundancy_table(run_dir / REDUNDANCY_TABLE.name, run.get("grades"))
    decisions = report_sections(run_dir, stats, rows, pages, run)
    html_doc = report_html(run_dir, stats, rows, cells, figures, pages, redundancy, run, decisions, analyses, group_cells)
    write_own(run_dir / "report.html", html_doc)
    write_own(run_dir / "report.md", visible(report_md(run_dir, stats, rows, cells, figures, pages, redundancy, run,
                                                      decisions, analyses, group_cells)))
    return run_dir / "report.html"
