"""The report of a run (spec section 1, step 10): the last stage, `stats -> report`.

`write_report` turns a run folder into report.html (self-contained: inline CSS and JS, images as
data URIs), its Markdown twin report.md, the figures as PNG files for a paper, and one page per
trace; `write_trace_view` draws a single trace. matplotlib is imported inside the functions that
draw, and used through `Figure` objects only (no pyplot state).
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import io
import json
import math
import multiprocessing
import os
import re
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from .indicators import DIMENSIONS, INDICATORS
from .cognitive_profile import group_profiles
from .records import BACKWARD_EDGES, EDGE_TYPES, NODE_TYPES, iter_graph_records
from .stats import TESTED, compute_stats, load_table
from .outputs import GRAPHS_FILE, INDICATORS_TABLE, REDUNDANCY_TABLE, read_table
from .tables import read_csv

__all__ = ["write_report", "write_trace_view", "graph_figure", "safe_trace_id", "MAX_TRACE_PAGES"]

MAX_TRACE_PAGES = 500  # per-trace pages written by write_report; `thinkprobe graph` draws any other
FIGURE_DPI = 130  # figures/*.png, for a paper
TRACE_DPI = 110  # `thinkprobe graph` PNGs
PAGE_DPI = 90  # graphs inside the report's trace pages (hundreds of them)
DIMS: tuple[str, ...] = tuple(DIMENSIONS)

NODE_NAMES = {"FAC": "fact", "RSN": "reasoning", "EXP": "exploration", "SYN": "synthesis", "CRT": "critique",
              "MET": "metacognition", "CON": "conclusion", "RPT": "repetition"}
NODE_COLORS = {"FAC": "#4e79a7", "RSN": "#59a14f", "EXP": "#f28e2b", "SYN": "#b07aa1", "CRT": "#e15759",
               "MET": "#17becf", "CON": "#b8860b", "RPT": "#9d9d9d"}
EDGE_COLORS = {"inference": "#1f4e9c", "elaboration": "#5fa8d3", "branch": "#f28e2b", "critique": "#d62728",
               "synthesis": "#8e44ad", "repetition": "#7f7f7f"}
# Critique polarity is drawn as the line style of a critique arc.
POLARITY_STYLES = {"negate": "-", "affirm": "--", "uncertain": ":"}
MODEL_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf")

# What every name in the report means: the glossary at its end and the hover text of each header
# and variable name. Definitions as in docs/indicators.md and docs/redundancy.md.
DIMENSION_GLOSSARY: dict[str, str] = {
    "Breadth": "how many distinct directions and ideas the trace opens (branching_factor, idea_count, "
               "semantic_spread, initial_diversity)",
    "Depth": "how long the chains of inference run (max_chain_depth, mean_branch_depth, specificity_gradient)",
    "Structure": "how much the trace explores, backtracks, reconnects and revises (exploration_ratio, "
                 "backtracking_rate, cross_branch_connectivity, convergence_index, recurrence_ratio, revision_depth)",
    "Metacognition": "how much the trace plans, checks and hedges (self_reflection_rate, critique_ratio, "
                     "hedging_density, perspective_taking)",
    "Efficiency": "how few tokens and repetitions per idea (tokens_per_idea and redundancy_ratio, both sign-flipped)",
}
INDICATOR_GLOSSARY: dict[str, str] = {
    "branching_factor": "branch edges per unit: |E_branch| / n",
    "idea_count": "number of branches (runs of units joined by inference/elaboration edges)",
    "semantic_spread": "clusters of content units (FAC, RSN, EXP, SYN, CON), average-linkage, cosine distance 0.45",
    "initial_diversity": "mean pairwise cosine distance of the first 3 exploration units",
    "max_chain_depth": "longest path (edges) in the inference + elaboration subgraph",
    "mean_branch_depth": "mean over branches of the longest inference + elaboration path inside the branch",
    "specificity_gradient": "slope of concreteness (numbers, symbols, units, names) against position in the trace",
    "exploration_ratio": "exploration units / (reasoning + fact units)",
    "backtracking_rate": "critique edges / all edges",
    "cross_branch_connectivity": "share of branch pairs joined by a synthesis edge",
    "convergence_index": "synthesis edges / all edges",
    "recurrence_ratio": "share of units on a directed cycle",
    "revision_depth": "mean distance (units) spanned by critique edges",
    "self_reflection_rate": "metacognition units / all units",
    "critique_ratio": "critique units / exploration units (at least 1)",
    "hedging_density": "share of units with a hedge marker",
    "perspective_taking": "share of units with a perspective-shift marker",
    "tokens_per_idea": "tokens / semantic_spread; lower is more efficient",
    "redundancy_ratio": "repetition units / all units; lower is more efficient",
}
REDUNDANCY_GLOSSARY: dict[str, str] = {
    "Acc": "share of graded traces whose final answer is correct (its own n: only traces with a gold answer or label)",
    "Tokens": "tokens of all units", "|V|": "Thought Units", "Iso": "isolated (off-topic) units",
    "|E|": "typed edges", "D": "density |E| / (|V| - 1)", "in_max": "largest in-degree",
    "out_max": "largest out-degree", "Self": "share of repetition edges", "Back": "share of critique edges",
    "L_eff": "units on the Shortest Effective Path to the answer", "R": "redundancy (|V| - L_eff) / |V|",
    "Unc": "1 when more than two units hold a candidate answer",
    "DR": "successive candidate answers correct → incorrect", "SV": "correct → correct",
    "EE": "incorrect → incorrect", "EB": "incorrect → correct",
}
STATS_GLOSSARY: dict[str, str] = {
    "ε²": "Kruskal-Wallis effect size H / (n − 1): the share of rank variance the grouping explains",
    "chance": "ε² that random group labels give on the same traces (mean over seeded permutations); "
              "it grows with the number of groups",
    "corrected": "ε² − chance ε²",
    "length-controlled": "the same test on what a straight-line fit on log tokens (whole run) leaves of the variable",
    "ratio": "corrected ε²(model) / corrected ε²(domain), none when both are under the floor",
    "split-half": "reliability of the model means: correlation of model means between random halves of each "
                  "model's traces, Spearman-Brown corrected",
    "ICC": "intraclass correlation of traces of one model on one question (needs repeated answers)",
    "AUROC": "how well a higher value flags a wrong answer (0.5 = no signal, below 0.5 = lower values flag it)",
}
GLOSSARY: dict[str, str] = {**DIMENSION_GLOSSARY, **INDICATOR_GLOSSARY, **REDUNDANCY_GLOSSARY, **STATS_GLOSSARY}


# --------------------------------------------------------------------------- reading a run


def _find_graph(run_dir: Path, trace_id: str) -> dict:
    # Only parse lines that can hold the id, however the writer escaped non-ASCII characters.
    needles = {json.dumps(trace_id), json.dumps(trace_id, ensure_ascii=False)}
    path = run_dir / GRAPHS_FILE
    if path.exists():
        with open(path, encoding="utf-8") as f:
            for line in f:
                if any(n in line for n in needles):
                    rec = json.loads(line)
                    if rec["trace_id"] == trace_id:
                        return rec
    raise ValueError(f"trace {trace_id!r} not found in {path}")


def safe_trace_id(trace_id: str) -> str:
    """A file name for a trace id: the id itself when it is a plain name, else a cleaned prefix + hash."""
    if re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}", trace_id):
        return trace_id
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", trace_id).strip("._")[:60]
    return f"{clean}-{hashlib.sha1(trace_id.encode('utf-8')).hexdigest()[:10]}"


def _label(value: str) -> str:
    return value if value else "(none)"


def _num(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if x != 0 and abs(x) < 1e-3:
        return f"{x:.{digits}g}"
    # `digits` decimals below 10, fewer as the number grows: 0.031, 1.185, 174.0, 5000
    decimals = max(0, digits - max(0, int(math.log10(abs(x))) if x else 0))
    return f"{x:.{decimals}f}"


# --------------------------------------------------------------------------- figures


@contextlib.contextmanager
def _style():
    """matplotlib's defaults whatever the user's matplotlibrc, and a fixed SVG id salt."""
    import matplotlib
    import matplotlib.style

    with matplotlib.style.context("default"), matplotlib.rc_context({"svg.hashsalt": "thinkprobe", "font.size": 10}):
        yield


def _png(fig, dpi: int) -> bytes:
    # "tight" grows the canvas to whatever the layout left outside it: nothing drawn is cut off
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None}, bbox_inches="tight", pad_inches=0.08)
    return buf.getvalue()


def clipped_texts(fig) -> list[str]:
    """The visible texts of `fig` that reach outside its canvas (what a saved image would cut off)."""
    from matplotlib.text import Text

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    out = []
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip():
            continue
        ext = text.get_window_extent(renderer)
        if ext.x0 < box.x0 - 1 or ext.y0 < box.y0 - 1 or ext.x1 > box.x1 + 1 or ext.y1 > box.y1 + 1:
            out.append(text.get_text())
    return out


def _svg(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def _model_colors(models: Sequence[str]) -> dict[str, str]:
    return {m: MODEL_PALETTE[i % len(MODEL_PALETTE)] for i, m in enumerate(models)}


def radar_figure(model_rows: Sequence[Mapping]):
    """Model profiles over the five dimensions (z-score units, 0 = corpus mean)."""
    from matplotlib.figure import Figure

    # Fixed margins in inches (constrained layout left the polar tick labels outside the canvas):
    # 1.1 in left of the polar axes for "Metacognition", the legend to its right sized to the names.
    longest = max((len(f"{r['model']} (n={r['n']})") for r in model_rows), default=10)
    width, height = 6.4 + 0.075 * longest, 5.4
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((1.1 / width, 0.5 / height, 4.0 / width, 4.0 / height), projection="polar")
    angles = np.linspace(0, 2 * np.pi, len(DIMS), endpoint=False)
    closed = np.append(angles, angles[0])
    values = [r[d] for r in model_rows for d in DIMS if math.isfinite(r[d])]
    top = max(1.0, math.ceil(max(values, default=1) * 2) / 2)
    low = min(-1.0, math.floor(min(values, default=-1) * 2) / 2)
    colors = _model_colors([r["model"] for r in model_rows])
    for r in model_rows:
        v = [r[d] for d in DIMS]
        ax.plot(closed, v + v[:1], color=colors[r["model"]], lw=2, label=f"{r['model']} (n={r['n']})")
        ax.fill(closed, v + v[:1], color=colors[r["model"]], alpha=0.08)
    ax.plot(np.linspace(0, 2 * np.pi, 100), np.zeros(100), color="black", lw=0.8, ls="--")
    ax.set_ylim(low, top)
    ax.set_xticks(angles, DIMS, fontsize=10)
    ax.tick_params(axis="x", pad=6)
    ax.set_rlabel_position(108)  # between Depth and Structure
    ax.tick_params(axis="y", labelsize=8)
    # figure-level title and legend (an axes legend outside the axes, or an axes title wider than
    # the polar plot, is what got clipped)
    fig.suptitle("Model profiles (mean signed z-score; dashed = corpus mean)", x=0.02, ha="left")
    fig.legend(loc="upper left", bbox_to_anchor=(6.0 / width, 4.6 / height), fontsize=9, frameon=False)
    return fig


def boxplot_figure(rows: Sequence[Mapping], models: Sequence[str], stats: Mapping):
    """One panel per indicator: its distribution per model; eps2 by model in the panel title."""
    from matplotlib.figure import Figure

    eps = {e["variable"]: e["model"] for e in stats["variables"]}
    alpha = stats["settings"]["alpha"]
    colors = _model_colors(models)
    ncols = 4
    nrows = math.ceil(len(INDICATORS) / ncols)
    longest = max(len(m) for m in models)
    # rotated model names under every panel: room for the longest one
    fig = Figure(figsize=(max(3.6, 0.45 * len(models) + 1.2) * ncols, (2.6 + 0.075 * min(longest, 40)) * nrows),
                 layout="constrained")
    axes = fig.subplots(nrows, ncols).ravel()
    for ax, name in zip(axes, INDICATORS):
        data = [[r[name] for r in rows if r["model"] == m and math.isfinite(r[name])] for m in models]
        parts = ax.boxplot(data, patch_artist=True, widths=0.6, flierprops={"markersize": 2.5, "alpha": 0.5},
                           medianprops={"color": "black"})
        for box, m in zip(parts["boxes"], models):
            box.set_facecolor(colors[m])
            box.set_alpha(0.75)
        ax.set_xticks(range(1, len(models) + 1), [m if len(m) <= 40 else m[:39] + "…" for m in models],
                      rotation=35, ha="right", rotation_mode="anchor", fontsize=9)
        ax.tick_params(axis="y", labelsize=8.5)
        test = eps[name]
        note = f"ε²={_num(test['eps2'], 2)}{' *' if test.get('significant') else ''}" if test["status"] == TESTED \
            else test["status"]
        ax.set_title(f"{name}\n{note}", fontsize=10)
    for ax in axes[len(INDICATORS):]:
        ax.axis("off")
    fig.suptitle(f"Indicators by model (ε² = Kruskal-Wallis effect size by model; * Holm p < {alpha})", fontsize=12)
    return fig


def heatmap_figure(cells: Sequence[Mapping], models: Sequence[str], domains: Sequence[str]):
    """Model x domain mean profile, one panel per dimension, one diverging colour scale."""
    from matplotlib.figure import Figure

    grid = np.full((len(DIMS), len(models), len(domains)), np.nan)
    counts = np.zeros((len(models), len(domains)), dtype=int)
    for c in cells:
        i, j = models.index(c["model"]), domains.index(c["domain"])
        counts[i, j] = c["n"]
        for k, d in enumerate(DIMS):
            grid[k, i, j] = c[d]
    vmax = max(0.5, float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0)
    width = max(10.0, len(DIMS) * (0.55 * len(domains) + 0.6) + 2.5)
    fig = Figure(figsize=(width, 1.2 + 0.45 * len(models) + 0.06 * max(len(d) for d in domains)),
                 layout="constrained")
    axes = fig.subplots(1, len(DIMS), sharey=True)
    annotate = len(models) * len(domains) <= 120
    for k, (ax, dim) in enumerate(zip(axes, DIMS)):
        image = ax.imshow(np.ma.masked_invalid(grid[k]), cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
        ax.set_facecolor("#dddddd")
        ax.set_title(dim)
        ax.set_xticks(range(len(domains)), [_label(d) for d in domains], rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(models)), models, fontsize=8)
        if annotate:
            for i in range(len(models)):
                for j in range(len(domains)):
                    if counts[i, j]:
                        v = grid[k, i, j]
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                                color="white" if abs(v) > 0.6 * vmax else "black")
    fig.colorbar(image, ax=list(axes), shrink=0.9, label="mean signed z-score")
    fig.suptitle("Model × domain profiles (grey: no traces)")
    return fig


def effects_figure(stats: Mapping):
    """eps2 by model next to eps2 by domain for every indicator and dimension: raw on the left;
    length-controlled and chance-corrected on the right."""
    from matplotlib.figure import Figure

    entries = stats["variables"]
    names = [e["variable"] for e in entries]
    y = np.arange(len(entries))
    fig = Figure(figsize=(11, 0.3 * len(entries) + 1.6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    panels = (("raw ε² = H / (n − 1)", lambda e, by: e[by]),
              ("length-controlled ε² − chance ε²", lambda e, by: e["length_controlled"][by]))
    for ax, (title, test_of) in zip(axes, panels):
        key = "eps2" if ax is axes[0] else "eps2_corrected"
        for offset, by, color in ((-0.2, "model", "#1f77b4"), (0.2, "domain", "#ff7f0e")):
            values = [test_of(e, by).get(key) or 0.0 for e in entries]
            ax.barh(y + offset, values, height=0.4, color=color, label=f"by {by}")
            for k, e in enumerate(entries):
                if test_of(e, by)["status"] != TESTED:
                    ax.text(0.01, k + offset, f"{by}: {test_of(e, by)['status']}", va="center", fontsize=7,
                            color="#555555")
        ax.axvline(0, color="black", lw=0.6)
        ax.set_xlim(min(-0.05, ax.get_xlim()[0]), 1)
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="x", labelsize=9)
    axes[0].set_yticks(y, names, fontsize=9)
    for tick, e in zip(axes[0].get_yticklabels(), entries):
        if e["kind"] == "dimension":
            tick.set_fontweight("bold")
    axes[0].invert_yaxis()
    axes[1].legend(loc="lower right", fontsize=9)
    fig.suptitle("Effect size: how much model and domain explain (Kruskal-Wallis)")
    return fig


def _tick_step(n: int, max_ticks: int) -> int:
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000):
        if n / step <= max_ticks:
            return step
    return 10000


def graph_figure(rec: Mapping):
    """Arc diagram of a Thought Graph: units along x in trace order, coloured by node type; forward
    edges (inference, elaboration, branch) as arcs below the line, backward edges (critique,
    synthesis, repetition) as arcs above it. Arc height grows with the square root of the span (each
    side scaled to its own longest arc), so short hops stay visible next to long-range ones; the
    figure widens with the trace (capped at 60 inches) and labels only a few index ticks, which
    keeps 300+ units legible.
    """
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    units, edges = rec["units"], rec["edges"]
    n = len(units)
    width = float(np.clip(2.0 + 0.075 * n, 8.0, 60.0))
    fig = Figure(figsize=(width, 4.8), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(f"{rec['trace_id']} · {rec.get('model', '')} · {_label(rec.get('domain', ''))} · "
                 f"{n} units, {len(edges)} edges", fontsize=10, loc="left")
    if n == 0:
        ax.text(0.5, 0.5, "no thought units", ha="center", va="center", transform=ax.transAxes)
        ax.axis("off")
        return fig

    # Alternate light bands per layer-1 segment; a dashed line where the answer section starts.
    runs, start = [], 0
    for i in range(1, n + 1):
        if i == n or units[i]["segment"] != units[start]["segment"]:
            runs.append((start, i - 1))
            start = i
    for k, (a, b) in enumerate(runs):
        if k % 2:
            ax.axvspan(a - 0.5, b + 0.5, color="#f0f0f0", zorder=0, lw=0)
    answer = next((u["id"] for u in units if u["section"] != "reasoning"), None)
    if answer is not None:
        ax.axvline(answer - 0.5, color="black", ls="--", lw=0.8, zorder=1)
        ax.text(answer - 0.3, 1.08, "answer →", fontsize=7, va="top")

    # Each side is scaled to its own longest arc, so long critiques above do not flatten the chain below.
    max_span = {side: max([abs(e["dst"] - e["src"]) for e in edges if (e["type"] in BACKWARD_EDGES) == side] + [1])
                for side in (True, False)}
    t = np.linspace(0.0, np.pi, 33)
    lw = 1.1 if n <= 100 else 0.7
    handles = []
    for edge_type in EDGE_TYPES:
        styles = [None] if edge_type != "critique" else list(POLARITY_STYLES)
        for polarity in styles:
            chosen = [e for e in edges if e["type"] == edge_type
                      and (polarity is None or (e.get("polarity") or "uncertain") == polarity)]
            if not chosen:
                continue
            segments = []
            for e in chosen:
                a, b = e["src"], e["dst"]
                r = abs(b - a) / 2
                backward = edge_type in BACKWARD_EDGES
                h = math.sqrt(abs(b - a) / max_span[backward]) * (1 if backward else -1)
                segments.append(np.column_stack([(a + b) / 2 + r * np.cos(t), h * np.sin(t)]))
            style = POLARITY_STYLES[polarity] if polarity else "-"
            ax.add_collection(LineCollection(segments, colors=EDGE_COLORS[edge_type], linewidths=lw,
                                             linestyles=style, alpha=0.75, zorder=2))
            label = f"{edge_type} ({polarity})" if polarity else edge_type
            handles.append(Line2D([], [], color=EDGE_COLORS[edge_type], ls=style, lw=1.5,
                                  label=f"{label} [{len(chosen)}]"))

    types = [u["type"] for u in units]
    size = float(np.clip(4000 / n, 5, 40))
    ax.scatter(range(n), np.zeros(n), c=[NODE_COLORS.get(t, "#000000") for t in types], s=size,
               zorder=3, edgecolors="white", linewidths=0.3)
    node_handles = [Line2D([], [], marker="o", ls="", color=NODE_COLORS[t], label=f"{t} {NODE_NAMES[t]}")
                    for t in NODE_TYPES if t in types]

    ax.set_xlim(-1, n)
    ax.set_ylim(-1.12, 1.12)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    step = _tick_step(n, max_ticks=int(width * 1.6))
    ax.set_xticks(range(0, n, step))
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("thought unit (index in trace order)")
    ax.text(0.0, 1.0, "↑ backward: critique, synthesis, repetition (later unit → earlier)", transform=ax.transAxes,
            fontsize=7, va="top", color="#444444")
    ax.text(0.0, 0.0, "↓ forward: inference, elaboration, branch (earlier → later)", transform=ax.transAxes,
            fontsize=7, va="bottom", color="#444444")
    legend = node_handles + handles
    # at the left edge, where a wide graph's view starts, not in the middle of a 60-inch canvas
    fig.legend(handles=legend, loc="outside lower left", ncol=min(len(legend), max(4, int(min(width, 16) / 1.5))),
               fontsize=7, frameon=False)
    return fig


# --------------------------------------------------------------------------- HTML pieces

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;
padding:1em 1.5em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}
th,td{border:1px solid #ddd;padding:.25em .4em;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td.l,th.l{text-align:left}table.meta td{white-space:normal}tr.dim td{font-weight:600;background:#fafafa}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" ▲"}table.sortable th[aria-sort=descending]::after{content:" ▼"}
img.fig{max-width:100%;height:auto;border:1px solid #eee}
.note{color:#666;font-size:.85em}.sig{color:#b00;font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
.graph{position:sticky;top:0;background:white;overflow:auto;max-height:48vh;border-bottom:2px solid #ccc;z-index:2}
.graph img{max-width:none;display:block}.graph{cursor:grab}
.zoom button{font:inherit;padding:0 .6em;margin-right:.2em}
.headline{background:#f6f8fb;border-left:4px solid #1f77b4;padding:.4em 1em;margin:.8em 0}
.flag{color:#b00}dl.glossary dt{font-weight:600;margin-top:.4em}dl.glossary dd{margin-left:1.5em}
table.traces td.l:first-child{white-space:normal;word-break:break-all;min-width:8em}
th{white-space:normal}[title]{text-decoration-style:dotted}th[title],span[title]{cursor:help}
pre.text{white-space:pre-wrap;font-family:inherit;font-size:.95em;line-height:1.7}
.u{border-radius:3px;padding:1px 0}.u sup{font-size:.65em;color:#555;margin-right:1px}
.u:target{outline:2px solid #000}.chip{display:inline-block;padding:0 .5em;margin:0 .3em .3em 0;border-radius:3px}
.gap{color:#999}
"""

SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.setAttribute("aria-sort", "none");
    th.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) { var s = row.cells[col].textContent.trim(); return s !== "" && !isNaN(Number(s)) ? Number(s) : s; }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var c = (typeof x === "number" && typeof y === "number") ? x - y
              : String(x).localeCompare(String(y), undefined, {numeric: true});
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""

# The graph of a trace page: "fit width" shows the whole trace (the overview), the zoom buttons
# scale the image and the container scrolls; dragging pans.
ZOOM_JS = """
(function () {
  var box = document.getElementById("graph"); if (!box) return;
  var img = box.querySelector("img"), scale = 0;
  function natural() { return img.naturalWidth || img.width; }
  function apply() { img.style.width = scale === 0 ? "100%" : Math.round(natural() * scale) + "px"; }
  document.querySelectorAll("[data-zoom]").forEach(function (b) {
    b.addEventListener("click", function () {
      var fit = box.clientWidth / Math.max(1, natural()), now = scale === 0 ? fit : scale, z = b.getAttribute("data-zoom");
      scale = z === "fit" ? 0 : z === "full" ? 1 : Math.max(fit, Math.min(4, now * (z === "in" ? 1.5 : 1 / 1.5)));
      if (z === "out" && scale <= fit) scale = 0;
      apply();
    });
  });
  var drag = null;
  box.addEventListener("mousedown", function (e) { drag = [e.clientX, e.clientY, box.scrollLeft, box.scrollTop]; e.preventDefault(); });
  window.addEventListener("mouseup", function () { drag = null; });
  window.addEventListener("mousemove", function (e) {
    if (drag) { box.scrollLeft = drag[2] - (e.clientX - drag[0]); box.scrollTop = drag[3] - (e.clientY - drag[1]); }
  });
  apply();
})();
"""

esc = html.escape


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _html_table(header: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1, cls: str = "",
                row_classes: Sequence[str] | None = None, titles: Mapping[str, str] | None = None) -> str:
    """Cells are HTML already; the first `left` columns are left-aligned; `titles` gives header
    cells their hover text (definitions)."""
    def cell(tag, i, v, title=""):
        attrs = (" class=l" if i < left else "") + (f' title="{esc(title)}"' if title else "")
        return f"<{tag}{attrs}>{v}</{tag}>"

    head = "".join(cell("th", i, esc(h), (titles or {}).get(h, "")) for i, h in enumerate(header))
    body = []
    for k, row in enumerate(rows):
        rc = f' class="{row_classes[k]}"' if row_classes and row_classes[k] else ""
        body.append(f"<tr{rc}>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>")
    table_cls = f' class="{cls}"' if cls else ""
    return (f'<div class="scroll"><table{table_cls}><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    def clean(v):
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(clean(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(clean(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _page(title: str, body: str, script: str = "") -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n"
            f"<script>{SORT_JS}{script}</script>\n</body></html>\n")


def _test_cell(test: Mapping, html_out: bool) -> tuple[str, str]:
    """(eps2, Holm p) as display strings; untested groupings show their status."""
    if test["status"] != TESTED:
        text = test["status"]
        return (f'<span title="{esc(test.get("reason", ""))}">{text}</span>' if html_out else text), ""
    p = _num(test["p_holm"])
    if test.get("significant"):
        p = f'<span class="sig">{p} *</span>' if html_out else f"**{p}** *"
    return _num(test["eps2"]), p


# --------------------------------------------------------------------------- per-trace view


def _unit_title(u: Mapping, incoming: list, outgoing: list) -> str:
    def fmt(es, key):
        return ", ".join(f"{e[key]} {e['type']}" + (f"/{e['polarity']}" if e.get("polarity") else "") for e in es)

    parts = [f"#{u['id']} {u['type']} ({NODE_NAMES.get(u['type'], '?')}), segment {u['segment']}"]
    if incoming:
        parts.append("in: " + fmt(incoming, "src"))
    if outgoing:
        parts.append("out: " + fmt(outgoing, "dst"))
    if u.get("cues"):
        parts.append("cues: " + ", ".join(u["cues"]))
    return "\n".join(parts)


def _trace_text_html(rec: Mapping) -> str:
    """The original text of each section with every unit as a coloured span at its offsets."""
    incoming: dict[int, list] = {}
    outgoing: dict[int, list] = {}
    for e in rec["edges"]:
        outgoing.setdefault(e["src"], []).append(e)
        incoming.setdefault(e["dst"], []).append(e)

    def span(u, text):
        color = NODE_COLORS.get(u["type"], "#000000")
        title = esc(_unit_title(u, incoming.get(u["id"], []), outgoing.get(u["id"], [])))
        return (f'<span class="u" id="u{u["id"]}" style="background:{color}33;border-bottom:2px solid {color}" '
                f'title="{title}"><sup>{u["id"]}</sup>{esc(text)}</span>')

    fields = rec.get("fields") or {}
    out = []
    for sec in rec.get("sections") or []:
        units = sorted((u for u in rec["units"] if u["section"] == sec["name"]), key=lambda u: u["start"])
        text = fields.get(sec["field"])
        out.append(f"<h3>{esc(sec['name'])} <span class=note>(field <code>{esc(sec['field'])}</code>)</span></h3>")
        parts, pos = [], sec["start"]
        for u in units:
            if text is None or u["start"] < pos or u["end"] > len(text):  # offsets unusable: show the unit text
                parts.append(span(u, u["text"]) + " ")
                continue
            if u["start"] > pos:
                parts.append(f'<span class="gap">{esc(text[pos:u["start"]])}</span>')
            parts.append(span(u, text[u["start"]:u["end"]]))
            pos = u["end"]
        if text is not None and pos < sec["end"]:
            parts.append(f'<span class="gap">{esc(text[pos:sec["end"]])}</span>')
        out.append(f'<pre class="text">{"".join(parts)}</pre>')
    if not rec.get("sections"):
        out.append('<pre class="text">' + " ".join(span(u, u["text"]) for u in rec["units"]) + "</pre>")
    return "\n".join(out)


def _trace_page(rec: Mapping, png: bytes, back_link: str | None) -> str:
    units = rec["units"]
    counts = {t: sum(u["type"] == t for u in units) for t in NODE_TYPES}
    legend = "".join(f'<span class="chip" style="background:{NODE_COLORS[t]}33;border-bottom:2px solid '
                     f'{NODE_COLORS[t]}">{t} {NODE_NAMES[t]} ({counts[t]})</span>' for t in NODE_TYPES)
    edge_counts = {t: sum(e["type"] == t for e in rec["edges"]) for t in EDGE_TYPES}
    edge_legend = "".join(f'<span class="chip" style="border-bottom:3px {"dashed" if t in BACKWARD_EDGES else "solid"} '
                          f'{EDGE_COLORS[t]}">{t} ({edge_counts[t]})</span>' for t in EDGE_TYPES)
    meta = [("model", rec.get("model", "")), ("domain", _label(rec.get("domain", ""))),
            ("units", str(len(units))), ("edges", str(len(rec["edges"])))]
    for key in ("question", "gold_answer", "correct"):
        if rec.get(key) is not None:
            meta.append((key, str(rec[key])))
    ind = rec.get("indicators") or {}
    ind_rows = [[esc(name), _num(ind.get(name))] for name in INDICATORS if name in ind]
    edge_rows = [[str(e["src"]), str(e["dst"]), esc(e["type"]), esc(e.get("polarity") or ""), _num(e.get("score"))]
                 for e in rec["edges"]]
    back = f'<p><a href="{esc(back_link)}">← report</a></p>' if back_link else ""
    body = f"""{back}<h1>Trace {esc(rec['trace_id'])}</h1>
{_html_table(["", ""], [[esc(k), esc(v)] for k, v in meta], left=2, cls="meta")}
<p>{legend}</p>
<p>{edge_legend}</p>
<div class="zoom" role="toolbar" aria-label="graph zoom"><button type="button" data-zoom="fit">fit width</button>
<button type="button" data-zoom="out">−</button><button type="button" data-zoom="in">+</button>
<button type="button" data-zoom="full">100%</button> <span class="note">overview first; zoom in, then drag or
scroll to pan ({len(units)} units)</span></div>
<div class="graph" id="graph"><img alt="Thought Graph of {esc(rec['trace_id'])}" src="{_data_uri(png)}"></div>
<p class="note">Hover a unit for its type, edges and cues; the small number is its index on the graph's x axis.
Grey text lies outside every unit.</p>
{_trace_text_html(rec)}
<h2>Indicators</h2>
{_html_table(["indicator", "value"], ind_rows)}
<details><summary>Edges ({len(edge_rows)})</summary>
{_html_table(["src", "dst", "type", "polarity", "score"], edge_rows, left=0, cls="sortable")}
</details>"""
    return _page(f"ThinkProbe · {rec['trace_id']}", body, ZOOM_JS)


def write_trace_view(run_dir: str | Path, trace_id: str, out: str | Path | None = None) -> Path:
    """The per-trace view of `trace_id`: <out>/<safe id>.html (text coloured by node type next to
    the graph) plus the graph as .png and .svg; `out` defaults to <run_dir>/traces. Returns the HTML path."""
    run_dir = Path(run_dir)
    out_dir = Path(out) if out is not None else run_dir / "traces"
    rec = _find_graph(run_dir, trace_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = safe_trace_id(trace_id)
    with _style():
        fig = graph_figure(rec)
        png = _png(fig, TRACE_DPI)
        (out_dir / f"{name}.png").write_bytes(png)
        (out_dir / f"{name}.svg").write_bytes(_svg(fig))
    in_run = out_dir.resolve() == (run_dir / "traces").resolve()
    path = out_dir / f"{name}.html"
    path.write_text(_trace_page(rec, png, "../report.html" if in_run else None), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the report


def _redundancy_table(path: Path) -> tuple[list[str], list[list[str]], str] | None:
    """redundancy.csv as (header, rows, caption): per-model means in the file's column order
    (CoTJudger's) when it has one row per trace, the file as it is otherwise. A column known for
    only some traces (Acc: graded traces only) gets its own n beside it."""
    if not path.exists():
        return None
    rows = read_csv(path)
    if not rows:
        return None
    columns = list(rows[0])
    keys = {"trace_id", "model", "domain"}
    metrics = [c for c in columns if c not in keys]

    def value(r, c):
        try:
            return float(r[c])
        except (TypeError, ValueError):
            return math.nan

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
                cells.append(_num(sum(vals) / len(vals)) if vals else "–")
                if c in partial:
                    cells.append(str(len(vals)))
            out.append(cells)
        note = (f" Columns known for only some traces carry their own n: {', '.join(partial)}." if partial else "")
        return header, out, "Mean per model over traces (columns in CoTJudger's order)." + note
    return columns, [[r[c] for c in columns] for r in rows[:500]], "As written in redundancy.csv."


def _write_trace_page(job: tuple[dict, Path]) -> None:
    rec, path = job
    with _style():
        png = _png(graph_figure(rec), PAGE_DPI)
    path.write_text(_trace_page(rec, png, "../report.html"), encoding="utf-8")


def _write_trace_pages(run_dir: Path, workers: int) -> dict[str, str]:
    """traces/<safe id>.html for the first MAX_TRACE_PAGES traces; {trace_id: relative link}.

    Drawing is most of the report's time (about 0.2 s per page, 0.5 s for 300 units), so on Linux the
    pages are drawn by forked workers: the children use neither torch nor OpenMP, so threads the
    caller holds do not matter to them, and unlike "spawn" no `__main__` guard is asked of scripts.
    """
    jobs, pages = [], {}
    for k, rec in enumerate(iter_graph_records(run_dir, missing_ok=True)):
        if k == MAX_TRACE_PAGES:
            break
        name = safe_trace_id(rec["trace_id"])
        jobs.append((rec, run_dir / "traces" / f"{name}.html"))
        pages[rec["trace_id"]] = f"traces/{name}.html"
    if workers > 1 and len(jobs) >= 16 and sys.platform.startswith("linux"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(min(workers, len(jobs) // 8), mp_context=context) as pool:
                list(pool.map(_write_trace_page, jobs, chunksize=4))
    else:
        for job in jobs:
            _write_trace_page(job)
    return pages


def _natural_key(text: str) -> list:
    """Sort key that orders the numbers inside ids as numbers: t2 before t10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part]


def _is_flat(by_model: Sequence[Mapping]) -> bool:
    return all(abs(r[d]) < 1e-9 for r in by_model for d in DIMS if math.isfinite(r[d]))


def write_report(run_dir: str | Path, workers: int | None = None) -> Path:
    """report.html, report.md, figures/*.png and traces/*.html in `run_dir`; returns report.html's path.
    `workers` processes draw the per-trace pages (default: up to 8, one per CPU). Trace pages left
    in traces/ by an earlier report or `thinkprobe graph` are removed: they may show other graphs."""
    run_dir = Path(run_dir)
    stats = compute_stats(run_dir)
    rows = load_table(run_dir)
    if not rows:  # every trace failed to load: say so rather than draw empty charts
        note = "No traces in this run: see errors.jsonl."
        (run_dir / "report.html").write_text(_page("ThinkProbe report", f"<h1>ThinkProbe report</h1><p>{note}</p>"),
                                             encoding="utf-8")
        (run_dir / "report.md").write_text(f"# ThinkProbe report\n\n{note}\n", encoding="utf-8")
        return run_dir / "report.html"
    rows = sorted(rows, key=lambda r: _natural_key(r["trace_id"]))
    models = sorted({r["model"] for r in rows})
    domains = sorted({r["domain"] for r in rows})
    by_model = group_profiles(rows, ("model",))
    cells = group_profiles(rows, ("model", "domain"))
    fig_dir = run_dir / "figures"
    fig_dir.mkdir(exist_ok=True)
    (run_dir / "traces").mkdir(exist_ok=True)

    # One model z-scored against its own traces sits at 0 on every dimension by construction: a
    # radar of that says nothing, so the report says why there is none.
    makers = {"radar": lambda: radar_figure(by_model), "boxplots": lambda: boxplot_figure(rows, models, stats),
              "heatmap": lambda: heatmap_figure(cells, models, domains), "effects": lambda: effects_figure(stats)}
    if len(models) < 2 and _is_flat(by_model):
        del makers["radar"]
        (fig_dir / "radar.png").unlink(missing_ok=True)
    figures: dict[str, bytes] = {}
    with _style():
        for name, make in makers.items():
            figures[name] = _png(make(), FIGURE_DPI)
            (fig_dir / f"{name}.png").write_bytes(figures[name])
    pages = _write_trace_pages(run_dir, workers if workers is not None else min(8, os.cpu_count() or 1))
    # pages of an earlier report (traces since re-profiled, renamed or gone) would read as this run's
    current = {Path(link).name for link in pages.values()}
    for old in (run_dir / "traces").glob("*.html"):
        if old.name not in current:
            old.unlink()

    redundancy = _redundancy_table(run_dir / REDUNDANCY_TABLE.name)
    html_doc = _report_html(run_dir, stats, rows, cells, figures, pages, redundancy)
    (run_dir / "report.html").write_text(html_doc, encoding="utf-8")
    (run_dir / "report.md").write_text(_report_md(run_dir, stats, rows, cells, figures, pages, redundancy),
                                       encoding="utf-8")
    return run_dir / "report.html"


# --------------------------------------------------------------------------- report text


def _dims(stats: Mapping) -> list[Mapping]:
    return [e for e in stats["variables"] if e["kind"] == "dimension"]


def _list(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def headline(stats: Mapping) -> list[str]:
    """Three to five sentences with numbers: which dimensions separate the models beyond length
    and chance, how much length explains, how reliable the model means are, where the domain
    matters, and (with graded answers) whether the indicators add to model and length."""
    cfg = stats["settings"]
    floor, min_rel = cfg["ratio_floor"], cfg["min_reliability"]
    groups = stats["groupings"]
    n_models, n_domains = len(groups["model"]["groups"]), len(groups["domain"]["groups"])
    dims = _dims(stats)
    opening = (f"{stats['n_traces']} traces from {n_models} model{'s' if n_models != 1 else ''} and "
               f"{n_domains} domain{'s' if n_domains != 1 else ''}")
    out = []

    def lc(e, by):
        return e["length_controlled"][by]

    if n_models < 2:
        out.append(f"{opening}: with one model there are no model differences to measure.")
    else:
        sep = sorted(((lc(e, "model")["eps2_corrected"], e["variable"]) for e in dims
                      if lc(e, "model")["status"] == TESTED and lc(e, "model").get("significant")
                      and lc(e, "model")["eps2_corrected"] >= floor), reverse=True)
        rest = [e["variable"] for e in dims if e["variable"] not in {v for _, v in sep}]
        if sep:
            out.append(f"{opening}: beyond trace length and chance the models differ in "
                       + _list([f"{v} (corrected ε² {_num(x, 2)})" for x, v in sep])
                       + (f"; {_list(rest)} {'shows' if len(rest) == 1 else 'show'} no model difference "
                          f"once length and chance are removed." if rest else "."))
        else:
            best = max(((lc(e, "model")["eps2_corrected"] or 0.0, e["variable"]) for e in dims), default=(0.0, "–"))
            out.append(f"{opening}: no dimension separates the models once length and chance are removed "
                       f"(largest corrected length-controlled ε² {_num(best[0], 2)}, {best[1]}).")
    fits = [(e["length_controlled"]["fit"]["r2"], e["variable"]) for e in dims
            if e["length_controlled"]["fit"]["r2"] is not None]
    if fits:
        top = max(fits)
        out.append(f"Log tokens alone explain {_num(min(fits)[0] * 100, 2)}–{_num(top[0] * 100, 2)}% of the "
                   f"variance of a dimension (most: {top[1]}).")
    rel = [(e["reliability"]["split_half"]["spearman_brown"], e["variable"]) for e in dims
           if e["reliability"]["split_half"]["spearman_brown"] is not None]
    if rel:
        weak = [f"{v} ({_num(x, 2)})" for x, v in rel if x < min_rel]
        strong = [v for x, v in rel if x >= min_rel]
        text = (f"Split-half reliability of the model means is {_num(min(rel)[0], 2)}–{_num(max(rel)[0], 2)}"
                f" across dimensions")
        text += (f"; model differences in {_list(weak)} are below {min_rel} and not supported by these data."
                 if weak else f", at least {min_rel} for all {len(strong)}.")
        out.append(text)
    elif n_models >= 2:
        usable = sum(1 for c in groups["model"]["groups"].values() if c >= 2)
        out.append(f"Only {usable} model{'s' if usable != 1 else ''} with 2 or more traces, and a split-half "
                   f"reliability of model means needs 3: treat model differences as unconfirmed.")
    if n_domains >= 2:
        dom = sorted(((lc(e, "domain")["eps2_corrected"], e["variable"]) for e in dims
                      if lc(e, "domain")["status"] == TESTED and (lc(e, "domain")["eps2_corrected"] or 0) >= floor),
                     reverse=True)
        if dom:
            out.append("The domain matters most for " + _list([f"{v} (corrected ε² {_num(x, 2)})" for x, v in dom[:2]])
                       + " after length control.")
        else:
            out.append(f"No dimension depends on the domain beyond length and chance (every corrected ε² by "
                       f"domain under {floor}).")
    cv = stats["outcome"]["cross_validated"]
    if cv["status"] == TESTED:
        gain = cv["gain"]
        verdict = "add to" if gain >= 0.02 else "add nothing to" if gain > -0.02 else "do worse than"
        out.append(f"On {cv['n']} graded traces ({cv['n_wrong']} wrong) the indicators {verdict} model + length "
                   f"in predicting a wrong answer (cross-validated AUROC {_num(cv['auroc_model_length_indicators'], 2)} "
                   f"with them, {_num(cv['auroc_model_length'], 2)} without).")
    return out[:5]


def _profile_ci_rows(stats: Mapping) -> list[list[str]]:
    out = []
    for mp in stats["model_profiles"]:
        cells = [mp["model"], str(mp["n"])]
        for d in DIMS:
            v = mp["dimensions"][d]
            ci = f" [{_num(v['ci_low'], 2)}, {_num(v['ci_high'], 2)}]" if v["ci_low"] is not None else ""
            cells.append(f"{_num(v['mean'], 2)}{ci}")
        out.append(cells)
    return out


EFFECT_HEADER = ["variable", "ε² model", "ε² domain", "corrected model", "corrected domain", "ratio",
                 "length-controlled model", "length-controlled domain", "length-controlled ratio", "split-half"]
EFFECT_TITLES = {
    "ε² model": "Kruskal-Wallis ε² = H / (n − 1) grouped by model, raw values; * Holm p < α",
    "ε² domain": "Kruskal-Wallis ε² grouped by domain, raw values; * Holm p < α",
    "corrected model": "ε²(model) minus the ε² random model labels give (permutations)",
    "corrected domain": "ε²(domain) minus the ε² random domain labels give (permutations)",
    "ratio": "corrected ε²(model) / corrected ε²(domain); – when both are under the floor; ≥ / ≤ when one side was "
             "raised to the floor",
    "length-controlled model": "corrected ε² by model of what a fit on log tokens leaves; * Holm p < α",
    "length-controlled domain": "corrected ε² by domain of what a fit on log tokens leaves; * Holm p < α",
    "length-controlled ratio": "the ratio of the two length-controlled corrected values",
    "split-half": "split-half reliability of the model means (Spearman-Brown); ⚠ under the minimum: model "
                  "differences not supported",
}


def _eps_cell(test: Mapping, key: str, html_out: bool) -> str:
    if test["status"] != TESTED:
        return f'<span title="{esc(test.get("reason", ""))}">{test["status"]}</span>' if html_out else test["status"]
    text = _num(test.get(key), 2)
    if test.get("significant"):
        p = f"Holm p = {_num(test['p_holm'])}"
        text = f'<span class="sig" title="{esc(p)}">{text} *</span>' if html_out else f"{text} *"
    return text


def _ratio_cell(ratio: Mapping) -> str:
    if ratio["value"] is None:
        return "–"
    return {"domain": "≥ ", "model": "≤ ", None: ""}[ratio["floored"]] + _num(ratio["value"], 2)


def _effect_rows(stats: Mapping, html_out: bool) -> list[list[str]]:
    min_rel = stats["settings"]["min_reliability"]
    out = []
    for e in stats["variables"]:
        name = e["variable"] if e["kind"] == "indicator" else f"{e['variable']} (dimension)"
        if html_out:
            name = f'<span title="{esc(GLOSSARY.get(e["variable"], ""))}">{esc(name)}</span>'
        sb = e["reliability"]["split_half"]["spearman_brown"]
        rel = _num(sb, 2)
        if sb is not None and sb < min_rel:
            rel = f'<span class="flag" title="under {min_rel}">{rel} ⚠</span>' if html_out else f"{rel} ⚠"
        lc = e["length_controlled"]
        out.append([name, _eps_cell(e["model"], "eps2", html_out), _eps_cell(e["domain"], "eps2", html_out),
                    _num(e["model"].get("eps2_corrected"), 2), _num(e["domain"].get("eps2_corrected"), 2),
                    _ratio_cell(e["ratio_corrected"]), _eps_cell(lc["model"], "eps2_corrected", html_out),
                    _eps_cell(lc["domain"], "eps2_corrected", html_out), _ratio_cell(e["ratio_length_corrected"]), rel])
    return out


def _icc_rows(stats: Mapping) -> list[list[str]]:
    rows = []
    for e in stats["variables"]:
        icc = e["reliability"]["icc"]
        if icc["status"] == TESTED:
            rows.append([e["variable"], _num(icc["icc"], 2), _num(icc["icc_mean"], 2), str(icc["clusters"]),
                         _num(icc["k0"], 2)])
    return rows


def _outcome_rows(stats: Mapping) -> list[list[str]]:
    return [[e["variable"], _num(e["outcome"]["auroc_wrong"], 2), _num(e["outcome"]["auroc_wrong_within_model"], 2)]
            for e in stats["variables"] if e["outcome"] is not None]


def _too_few_text(stats: Mapping) -> str:
    parts = [f"{by}: {', '.join(_label(g) for g in info['too_few'])}"
             for by, info in stats["groupings"].items() if info["too_few"]]
    if not parts:
        return ""
    return (f"Groups with fewer than {stats['settings']['min_group']} traces, left out of the tests: "
            + "; ".join(parts) + ".")


def _summary_text(run_dir: Path, stats: Mapping, pages: Mapping) -> list[str]:
    groups = stats["groupings"]
    lines = [f"{stats['n_traces']} traces from {len(groups['model']['groups'])} models and "
             f"{len(groups['domain']['groups'])} domains (run folder `{run_dir.name}`)."]
    if not pages:
        lines.append("No per-trace pages: graphs.jsonl is missing or empty.")
    elif stats["n_traces"] > len(pages):
        lines.append(f"Per-trace pages exist for the first {len(pages)} traces of graphs.jsonl "
                     f"(of {stats['n_traces']}); draw any other with `thinkprobe graph {run_dir.name} TRACE_ID`.")
    return lines


def method_note(stats: Mapping) -> str:
    c = stats["settings"]
    return (f"Kruskal-Wallis H per indicator and dimension, grouped by model and, separately, by domain; "
            f"ε² = H / (n − 1). Chance: the mean ε² over {c['permutations']} random relabellings of the same traces "
            f"(seed {c['permutation_seed']}); corrected = ε² − chance. Length-controlled: the test on the residuals of "
            f"a least-squares line on log tokens fitted over the whole run. Ratio = corrected ε²(model) / corrected "
            f"ε²(domain), none when both are under {c['ratio_floor']}, a side under it raised to it (≥, ≤: a bound). "
            f"* Holm p < {c['alpha']}, Holm over all raw tests and, separately, all length-controlled tests. "
            f"Split-half: {c['split_halves']} random halvings of every model's traces (seed {c['split_half_seed']}), "
            f"mean Pearson r of the model means across halves, Spearman-Brown 2r / (1 + r); ⚠ under "
            f"{c['min_reliability']}. Profile intervals: percentile bootstrap of the mean, "
            f"{c['bootstrap_resamples']} resamples, seed {c['bootstrap_seed']}.")


NO_RADAR = ("No radar chart: the run has one model, and z-scored against its own traces its mean profile is 0 on "
            "every dimension by construction. Profile it with other models, or pass --norms from a reference run.")


def _glossary_items() -> list[tuple[str, list[tuple[str, str]]]]:
    return [("Dimensions (5D cognitive profile: mean signed z-score of their indicators)", list(DIMENSION_GLOSSARY.items())),
            ("Indicators", list(INDICATOR_GLOSSARY.items())),
            ("Redundancy columns (CoTJudger's metrics)", list(REDUNDANCY_GLOSSARY.items())),
            ("Statistics", list(STATS_GLOSSARY.items()))]


def _outcome_text(stats: Mapping) -> str:
    o = stats["outcome"]
    cv = o["cross_validated"]
    text = (f"{o['graded']} graded traces ({o['wrong']} wrong; labels from {o['labels_from']}). AUROC of each "
            f"indicator for a wrong answer, pooled over all graded traces and within model (pairs of one model only). ")
    if cv["status"] == TESTED:
        text += (f"Cross-validated logistic regression ({cv['folds']} stratified folds, seed {cv['seed']}): model + "
                 f"log tokens AUROC {_num(cv['auroc_model_length'], 3)}; + the 19 indicators "
                 f"{_num(cv['auroc_model_length_indicators'], 3)} (gain {_num(cv['gain'], 2)}).")
    else:
        text += f"No cross-validated comparison: {cv.get('reason', '')}."
    return text


def _report_html(run_dir, stats, rows, cells, figures, pages, redundancy) -> str:
    def img(name, alt):
        return f'<img class="fig" alt="{esc(alt)}" src="{_data_uri(figures[name])}">'

    def titled(header):
        return {h: GLOSSARY.get(h, EFFECT_TITLES.get(h, "")) for h in header}

    summary = "".join(f"<p>{esc(line).replace('`', '')}</p>" for line in _summary_text(run_dir, stats, pages))
    head = "".join(f"<li>{esc(line)}</li>" for line in headline(stats))
    min_rel = stats["settings"]["min_reliability"]
    cell_rows = [[esc(c["model"]), esc(_label(c["domain"])), str(c["n"]), *(_num(c[d], 2) for d in DIMS)]
                 for c in cells]
    counts = _read_counts(run_dir)
    trace_rows = []
    for r in rows:
        link = pages.get(r["trace_id"])
        tid = f'<a href="{esc(link)}">{esc(r["trace_id"])}</a>' if link else esc(r["trace_id"])
        trace_rows.append([tid, esc(r["model"]), esc(_label(r["domain"])), *map(esc, counts[r["trace_id"]]),
                           *(_num(r[d], 2) for d in DIMS)])
    trace_header = ["trace", "model", "domain", "units", "edges", "tokens", *DIMS]

    radar = img("radar", "Radar chart of the model profiles over the five dimensions") if "radar" in figures \
        else f"<p class=note>{esc(NO_RADAR)}</p>"
    red = ""
    if redundancy:
        header, red_rows, caption = redundancy
        red = (f"<h2>Redundancy (CoTJudger's metrics)</h2><p class=note>{esc(caption)}</p>"
               + _html_table(header, [[esc(v) for v in row] for row in red_rows], cls="sortable",
                             titles=titled(header)))
    icc = _icc_rows(stats)
    icc_html = (_html_table(["variable", "ICC", "ICC of a question's mean", "(model, question) pairs", "traces per pair"],
                            [[esc(c) for c in r] for r in icc])
                if icc else "<p class=note>No ICC: no model answered one question more than once in this run.</p>")
    outcome = ""
    if stats["outcome"]["graded"]:
        o_rows = _outcome_rows(stats)
        outcome = (f"<h2>Outcome validity</h2><p class=note>{esc(_outcome_text(stats))}</p>"
                   + (_html_table(["variable", "AUROC (wrong), pooled", "AUROC (wrong), within model"],
                                  [[f'<span title="{esc(GLOSSARY.get(r[0], ""))}">{esc(r[0])}</span>', r[1], r[2]]
                                   for r in o_rows]) if o_rows else ""))
    glossary = "".join(f"<h3>{esc(title)}</h3><dl class=glossary>"
                       + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items) + "</dl>"
                       for title, items in _glossary_items())
    flagged = [e["variable"] for e in stats["variables"]
               if e["reliability"]["supports_model_differences"] is False]

    body = f"""<h1>ThinkProbe report</h1>
{summary}
<div class="headline"><strong>Headline</strong><ul>{head}</ul></div>
<h2>Model profiles</h2>
{radar}
{_html_table(["model", "n", *DIMS], [[esc(c) for c in r] for r in _profile_ci_rows(stats)], titles=titled(DIMS))}
<p class=note>Mean signed z-score per dimension with its 95% bootstrap interval; 0 is the corpus mean.</p>
<h2>Effect sizes: model versus domain, beyond length and chance</h2>
{_html_table(EFFECT_HEADER, _effect_rows(stats, html_out=True), left=1, titles=EFFECT_TITLES,
             row_classes=["dim" if e["kind"] == "dimension" else "" for e in stats["variables"]])}
<p class=note>{esc(method_note(stats))} {esc(_too_few_text(stats))}</p>
{f'<p class="flag">⚠ Split-half reliability of the model means under {min_rel}: model differences in {esc(", ".join(flagged))} are not supported by this run.</p>' if flagged else ""}
{img("effects", "Effect sizes by model and by domain, raw and length-controlled")}
<h2>Reliability of repeated answers</h2>
{icc_html}
{outcome}
<h2>Model × domain profiles</h2>
{img("heatmap", "Heat map of the model by domain profiles")}
<details><summary>Values</summary>{_html_table(["model", "domain", "n", *DIMS], cell_rows, left=2, titles=titled(DIMS))}</details>
<h2>Indicators by model</h2>
{img("boxplots", "Box plots of every indicator by model")}
{red}
<h2>Traces</h2>
<p class=note>Click a column header to sort (numbers inside ids sort as numbers).</p>
{_html_table(trace_header, trace_rows, left=3, cls="sortable traces", titles=titled(trace_header))}
<h2>Glossary</h2>
{glossary}"""
    return _page("ThinkProbe report", body)


def _read_counts(run_dir: Path) -> dict[str, tuple[str, str, str]]:
    return {r["trace_id"]: (r.get("units", ""), r.get("edges", ""), r.get("tokens", ""))
            for r in read_table(run_dir, INDICATORS_TABLE)}


def _report_md(run_dir, stats, rows, cells, figures, pages, redundancy) -> str:
    radar = "![Radar chart of the model profiles](figures/radar.png)" if "radar" in figures else NO_RADAR
    parts = ["# ThinkProbe report", "", *_summary_text(run_dir, stats, pages), "", "**Headline**", "",
             *(f"- {line}" for line in headline(stats)), "",
             "## Model profiles", "", radar, "",
             _md_table(["model", "n", *DIMS], _profile_ci_rows(stats)), "",
             "Mean signed z-score per dimension with its 95% bootstrap interval; 0 is the corpus mean.", "",
             "## Effect sizes: model versus domain, beyond length and chance", "",
             _md_table(EFFECT_HEADER, _effect_rows(stats, html_out=False)),
             "", method_note(stats) + (" " + _too_few_text(stats) if _too_few_text(stats) else ""), "",
             "![Effect sizes](figures/effects.png)", "", "## Reliability of repeated answers", ""]
    icc = _icc_rows(stats)
    parts += [_md_table(["variable", "ICC", "ICC of a question's mean", "(model, question) pairs", "traces per pair"],
                        icc) if icc else "No ICC: no model answered one question more than once in this run.", ""]
    if stats["outcome"]["graded"]:
        parts += ["## Outcome validity", "", _outcome_text(stats), ""]
        if _outcome_rows(stats):
            parts += [_md_table(["variable", "AUROC (wrong), pooled", "AUROC (wrong), within model"],
                                _outcome_rows(stats)), ""]
    parts += ["## Model × domain profiles", "", "![Heat map](figures/heatmap.png)", "",
              _md_table(["model", "domain", "n", *DIMS],
                        [[c["model"], _label(c["domain"]), c["n"], *(_num(c[d], 2) for d in DIMS)] for c in cells]), "",
              "## Indicators by model", "", "![Box plots](figures/boxplots.png)", ""]
    if redundancy:
        header, red_rows, caption = redundancy
        parts += ["## Redundancy (CoTJudger's metrics)", "", caption, "", _md_table(header, red_rows), ""]
    counts = _read_counts(run_dir)
    trace_rows = []
    for r in rows:
        link = pages.get(r["trace_id"])
        tid = f"[{r['trace_id']}]({link})" if link else r["trace_id"]
        trace_rows.append([tid, r["model"], _label(r["domain"]), *counts[r["trace_id"]],
                           *(_num(r[d], 2) for d in DIMS)])
    parts += ["## Traces", "", _md_table(["trace", "model", "domain", "units", "edges", "tokens", *DIMS], trace_rows),
              "", "## Glossary", ""]
    for title, items in _glossary_items():
        parts += [f"### {title}", "", *(f"- **{k}**: {v}" for k, v in items), ""]
    return "\n".join(parts)
