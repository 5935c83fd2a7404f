"""The report's figures (matplotlib `Figure` objects, no pyplot state): radar of model profiles,
the model x indicator heat map, the model x domain heat map, effect sizes, and one trace's Thought Graph.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from ..indicators import DIMENSIONS
from ..records import BACKWARD_EDGES, EDGE_TYPES, NODE_TYPES
from ..stats import TESTED
from .style import (DIMS, EDGE_COLORS, NODE_COLORS, NODE_NAMES, POLARITY_STYLES, display_label, format_number,
                    model_colors)

__all__ = ["radar_figure", "indicator_figure", "heatmap_figure", "effects_figure", "graph_figure"]


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
    colors = model_colors([r["model"] for r in model_rows])
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


def _short(x: float) -> str:
    """A cell value in at most 4 characters or so: 108, 57, 10.5, 3.5, 0.38, 0.004."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}" if abs(x) >= 1 else f"{x:.2g}"


def indicator_figure(rows: Sequence[Mapping], models: Sequence[str], stats: Mapping):
    """All 19 indicators by model in one readable view: a model x indicator heat map of the median
    z-score (each indicator standardised over the run's traces), the raw median written in the cell,
    indicators grouped by dimension, eps2 by model (* Holm p < alpha) under each indicator's name."""
    from matplotlib.figure import Figure

    eps = {e["variable"]: e["model"] for e in stats["variables"]}
    order = [name for names in DIMENSIONS.values() for name in names]
    z = np.full((len(models), len(order)), np.nan)
    raw = np.full_like(z, np.nan)
    for j, name in enumerate(order):
        values = np.array([r[name] for r in rows], dtype=np.float64)
        ok = np.isfinite(values)
        mean, sd = (values[ok].mean(), values[ok].std()) if ok.any() else (0.0, 0.0)
        for i, m in enumerate(models):
            own = np.array([r[name] for r in rows if r["model"] == m and math.isfinite(r[name])], dtype=np.float64)
            if len(own):
                raw[i, j] = float(np.median(own))
                z[i, j] = (raw[i, j] - mean) / sd if sd > 0 else 0.0
    longest = max(len(m) for m in models)
    fig = Figure(figsize=(1.0 + 0.075 * min(longest, 40) + 0.52 * len(order), max(4.0, 2.9 + 0.36 * len(models))),
                 layout="constrained")
    ax = fig.add_subplot()
    limit = max(1.0, min(2.5, float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0))
    image = ax.imshow(np.ma.masked_invalid(z), cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    ax.set_facecolor("#dddddd")

    def label(name):  # no ε² where the test did not run (one model, a constant indicator)
        test = eps[name]
        if test["status"] != TESTED:
            return name
        return f"{name} (ε² {format_number(test['eps2'], 2)}{'*' if test.get('significant') else ''})"

    ax.set_xticks(range(len(order)), [label(n) for n in order], rotation=40, ha="right", rotation_mode="anchor",
                  fontsize=8)
    ax.set_yticks(range(len(models)), [m if len(m) <= 40 else m[:39] + "…" for m in models], fontsize=8)
    if len(models) * len(order) <= 600:
        for i in range(len(models)):
            for j in range(len(order)):
                if math.isfinite(raw[i, j]):
                    ax.text(j, i, _short(raw[i, j]), ha="center", va="center", fontsize=6.5,
                            color="white" if abs(z[i, j]) > 0.6 * limit else "black")
    # dimensions: a white rule between them and their names along the top
    edges = np.cumsum([len(names) for names in DIMENSIONS.values()])
    for edge in edges[:-1]:
        ax.axvline(edge - 0.5, color="white", lw=3)
    top = ax.secondary_xaxis("top")
    top.set_xticks([e - len(names) / 2 - 0.5 for e, names in zip(edges, DIMENSIONS.values())], list(DIMENSIONS),
                   fontsize=9, fontweight="bold")
    top.tick_params(length=0)
    fig.colorbar(image, ax=ax, shrink=0.9, pad=0.01, label="median z-score")
    alpha = stats["settings"]["alpha"]
    fig.suptitle(f"Indicators by model: median per model (in the cell), coloured by its z-score; ε² by model, "
                 f"* Holm p < {alpha}", fontsize=11)
    return fig


def heatmap_figure(cells: Sequence[Mapping], models: Sequence[str], domains: Sequence[str], by: str = "domain"):
    """Model x domain (or x group: `by`) mean profile, one panel per dimension, one diverging colour scale."""
    from matplotlib.figure import Figure

    grid = np.full((len(DIMS), len(models), len(domains)), np.nan)
    counts = np.zeros((len(models), len(domains)), dtype=int)
    for c in cells:
        i, j = models.index(c["model"]), domains.index(c[by])
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
        ax.set_xticks(range(len(domains)), [display_label(d) for d in domains], rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(models)), models, fontsize=8)
        if annotate:
            for i in range(len(models)):
                for j in range(len(domains)):
                    if counts[i, j]:
                        v = grid[k, i, j]
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                                color="white" if abs(v) > 0.6 * vmax else "black")
    fig.colorbar(image, ax=list(axes), shrink=0.9, label="mean signed z-score")
    fig.suptitle(f"Model × {by} profiles (grey: no traces)")
    return fig


def effects_figure(stats: Mapping):
    """eps2 by model next to eps2 by domain (and by group, in a run with groups) for every indicator
    and dimension, each minus the ε² random labels give (chance): the raw tests on the left, the
    length-controlled ones on the right. (The left panel showed ε² itself until 2026-12-06, where chance
    alone, (k − 1) / (n − 1), gave a factor of more levels the longer bar.)"""
    from matplotlib.figure import Figure

    entries = stats["variables"]
    names = [e["variable"] for e in entries]
    y = np.arange(len(entries))
    present = [(by, color) for by, color in (("model", "#1f77b4"), ("domain", "#ff7f0e"), ("group", "#2ca02c"))
               if by in stats["groupings"]]
    # a grouping no variable can be tested by (one domain) gets no bars and no legend entry, only a word
    untestable = {by: next((e[by].get("reason") for e in entries if e[by].get("reason")), "not testable")
                  for by, _ in present if all(e[by]["status"] not in (TESTED, "constant") for e in entries)}
    bars = [(by, color) for by, color in present if by not in untestable] or present[:1]
    height = 0.8 / len(bars)
    fig = Figure(figsize=(11, 0.15 * len(bars) * len(entries) + 1.6), layout="constrained")
    fig.get_layout_engine().set(wspace=0.06)  # the panels' end tick labels ("1.0", "−0.4") apart
    axes = fig.subplots(1, 2, sharey=True)
    panels = (("ε² − chance ε²", lambda e, by: e[by]),
              ("length-controlled ε² − chance ε²", lambda e, by: e["length_controlled"][by]))
    for ax, (title, test_of) in zip(axes, panels):
        key = "eps2_corrected"
        for k_bar, (by, color) in enumerate(bars):
            offset = (k_bar - (len(bars) - 1) / 2) * height
            values = [test_of(e, by).get(key) or 0.0 for e in entries]
            # the bootstrap interval as a line through the bar's end (none for a test not run, or a run
            # whose stats.json predates the intervals)
            cis = [test_of(e, by).get(f"{key}_ci") for e in entries]
            err = np.array([[max(0.0, v - c[0]), max(0.0, c[1] - v)] if c else [0.0, 0.0] for v, c in zip(values, cis)]).T
            with_ci = any(cis)
            ax.barh(y + offset, values, height=height, color=color, label=f"by {by}", xerr=err if with_ci else None,
                    error_kw={"elinewidth": 0.7, "capsize": 1.5, "ecolor": "#333333"})
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
    names = [by for by, _ in bars]
    told = f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]
    missing = "".join(f"\nby {by}: not testable ({reason})" for by, reason in untestable.items() if by not in names)
    intervals = any(e[by].get("eps2_corrected_ci") for e in entries for by, _ in bars)
    lines = f"; lines: {round(100 * stats['settings']['ci_level'])}% bootstrap intervals" if intervals else ""
    fig.suptitle(f"Effect size: how much {told} explain{'s' if len(names) == 1 else ''} (Kruskal-Wallis{lines}){missing}")
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
    ax.set_title(f"{rec['trace_id']} · {rec.get('model', '')} · {display_label(rec.get('domain', ''))} · "
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
