"""The figures of CoTJudger's analyses (thinkprobe.redundancy.analyses), each drawn from the table
of the same name in the run folder, with labelled axes and n per group in the legend.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Mapping, Sequence

import numpy as np

from ..records import NODE_TYPES
from .style import MODEL_PALETTE, NODE_COLORS, NODE_NAMES, as_number, model_colors, model_places

__all__ = ["COT_FIGURES", "difficulty_figure", "positions_figure", "outcome_tokens_figure", "lengths_figure",
           "transitions_figure", "pareto_figure", "roles_figure", "dynamics_figure"]


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _style(models: Sequence[str]) -> dict[str, dict]:
    """Colour and, past the palette's length, a dashed or dotted line: every model stays distinct."""
    colors, places = model_colors(models), model_places(models)
    dashes = ("-", "--", ":", "-.")
    return {m: {"color": colors[m], "ls": dashes[(places[m] // len(MODEL_PALETTE)) % len(dashes)]} for m in models}


def _legend_outside(fig, ax) -> None:
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))


def _by_model(rows: Sequence[Mapping]) -> dict[str, list[Mapping]]:
    out: dict[str, list[Mapping]] = defaultdict(list)
    for r in rows:
        out[r["model"]].append(r)
    return dict(sorted(out.items()))


def difficulty_figure(level_rows: Sequence[Mapping]):
    """D and R by difficulty level, one line per model (CoTJudger Fig. 6)."""
    fig = _figure(12, 4.4)
    groups = _by_model(level_rows)
    style = _style(list(groups))
    for k, (metric, label) in enumerate((("D", "average degree D = |E| / (|V| - 1)"), ("R", "redundancy ratio R"))):
        ax = fig.add_subplot(1, 2, k + 1)
        for model, rows in groups.items():
            at = {int(r["level"]): as_number(r[metric]) for r in rows}
            n = sum(int(r["n"]) for r in rows)
            # every level on the axis, NaN where the model has no trace: the line breaks there instead of
            # joining level 2 to level 5 across levels nobody reached
            ax.plot(range(1, 6), [at.get(level, math.nan) for level in range(1, 6)], marker="o",
                    **style[model], label=f"{model} (n={n} at a level)")
        ax.set_xticks(range(1, 6))
        ax.set_xlabel("difficulty level (1 = every model right, 5 = none)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    _legend_outside(fig, fig.axes[-1])
    fig.suptitle("Redundancy by question difficulty, per model")
    return fig


# Fewer traces than this: a model's off-path units are drawn as points, not as a density (a
# density over 20 bins from a handful of units is a row of spikes that hides the other models).
MIN_DENSITY_TRACES = 5

MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def _horizontal(draw, *args, **kwargs):
    """A box or violin plot laid on its side, in any matplotlib since 3.7 (`orientation` replaced
    `vert` in 3.10)."""
    try:
        return draw(*args, orientation="horizontal", **kwargs)
    except TypeError:
        return draw(*args, vert=False, **kwargs)


def _model_rows(ax, labels: Sequence[str]) -> None:
    """Models down the y axis, first at the top: long names stay horizontal and never overlap."""
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)


def positions_figure(position_rows: Sequence[Mapping], traces: Mapping[str, int]):
    """Density of units outside the Shortest Effective Path over normalised position (Fig. 3); models
    with fewer than MIN_DENSITY_TRACES traces in a panel below, each off-path unit a point."""
    groups = _by_model(position_rows)
    style = _style(list(groups))
    dense = {m: rows for m, rows in groups.items() if traces.get(m, 0) >= MIN_DENSITY_TRACES}
    sparse = {m: rows for m, rows in groups.items() if m not in dense}
    legend_rows = math.ceil(len(dense) / 2)
    heights = ([3.6 + 0.22 * legend_rows] if dense else []) + ([0.7 + 0.3 * len(sparse)] if sparse else [])
    fig = _figure(11, sum(heights) + 0.8)
    axes = fig.subplots(len(heights), 1, sharex=True, height_ratios=heights, squeeze=False)[:, 0]
    if dense:
        ax = axes[0]
        for model, rows in dense.items():
            rows = sorted(rows, key=lambda r: int(r["bin"]))
            centres = [(as_number(r["start"]) + as_number(r["end"])) / 2 for r in rows]
            off = sum(int(r["off_sep"]) for r in rows)
            ax.plot(centres, [as_number(r["density"]) for r in rows], marker=".", **style[model],
                    label=f"{model} (n={traces.get(model, 0)} traces, {off} off-path units)")
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        ax.set_ylabel("density of off-path units")
        ax.set_title(f"Density per model with {MIN_DENSITY_TRACES}+ traces (dashed black: spread evenly)", fontsize=9)
        if sparse:  # under the plot, two columns: the panel keeps the width the points panel's names leave
            ax.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.04), ncol=2)
        else:
            _legend_outside(fig, ax)
        ax.grid(alpha=0.3)
    if sparse:
        ax = axes[-1]
        labels = []
        for k, (model, rows) in enumerate(sparse.items()):
            hit = [r for r in rows if int(r["off_sep"]) > 0]
            ax.scatter([(as_number(r["start"]) + as_number(r["end"])) / 2 for r in hit], [k] * len(hit),
                       s=[14 * int(r["off_sep"]) for r in hit], color=style[model]["color"], alpha=0.8, zorder=3)
            labels.append(f"{model} (n={traces.get(model, 0)}, {sum(int(r['off_sep']) for r in rows)} off-path units)")
        _model_rows(ax, labels)
        ax.set_title(f"Models with fewer than {MIN_DENSITY_TRACES} traces: their off-path units by position "
                     "(dot area: units in the bin)", fontsize=9)
        ax.grid(alpha=0.3, axis="x")
    axes[0].set_xlim(0, 1)
    axes[-1].set_xlabel("position in the trace (0 = first unit, 1 = last)")
    fig.suptitle("Where redundant units sit: units off the Shortest Effective Path")
    return fig


def _token_axis(ax, title: str) -> None:
    """The axis both token figures share: tokens per trace on a log scale, along x."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log")
    # plain numbers: the log scale's default labels are mathtext ("$\\mathdefault{10^{2}}$"), which the report's
    # style turns off (a model's name is never a formula), so they had printed as raw LaTeX
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("tokens per trace (log scale)")
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="x")


def outcome_tokens_figure(redundancy_rows: Sequence[Mapping]):
    """Tokens of correct against incorrect traces per model (Fig. 8), one row per model."""
    groups = {m: rows for m, rows in _by_model(redundancy_rows).items()
              if any(as_number(r.get("Acc")) in (0.0, 1.0) for r in rows)}
    fig = _figure(10, 1.3 + 0.5 * len(groups))
    ax = fig.add_subplot(1, 1, 1)
    labels = []
    for k, (model, rows) in enumerate(groups.items()):
        right = [as_number(r["Tokens"]) for r in rows if as_number(r.get("Acc")) == 1.0]
        wrong = [as_number(r["Tokens"]) for r in rows if as_number(r.get("Acc")) == 0.0]
        for offset, values, color in ((-0.18, right, "#4c956c"), (0.18, wrong, "#d1495b")):
            if values:
                parts = _horizontal(ax.boxplot, [values], positions=[k + offset], widths=0.3, patch_artist=True,
                                    showfliers=False, medianprops={"color": "black"})
                for patch in parts["boxes"]:
                    patch.set_facecolor(color)
                    patch.set_alpha(0.55)
                ax.scatter(values, [k + offset] * len(values), s=8, color=color, zorder=3)
        labels.append(f"{model} (correct {len(right)}, wrong {len(wrong)})")
    _model_rows(ax, labels)
    _token_axis(ax, "Tokens of correct (green, upper) and incorrect (red, lower) answers; dots: traces")
    return fig


def lengths_figure(redundancy_rows: Sequence[Mapping]):
    """Token-length distribution per model (Fig. 4), one row per model, every trace a dot."""
    groups = _by_model(redundancy_rows)
    colors = model_colors(list(groups))
    fig = _figure(10, 1.3 + 0.42 * len(groups))
    ax = fig.add_subplot(1, 1, 1)
    data = [[max(as_number(r["Tokens"]), 1.0) for r in rows] for rows in groups.values()]
    parts = _horizontal(ax.violinplot, data, positions=range(len(groups)), showmedians=True, widths=0.8)
    for body, model in zip(parts["bodies"], groups):
        body.set_color(colors[model])
    for k, (model, values) in enumerate(zip(groups, data)):
        ax.scatter(values, [k] * len(values), s=8, color="black", alpha=0.6, zorder=3)
    _model_rows(ax, [f"{m} (n={len(v)})" for m, v in zip(groups, data)])
    _token_axis(ax, "Token-length distribution per model (bar: median; dots: traces)")
    return fig


def transitions_figure(transition_rows: Sequence[Mapping]):
    """DR / SV / EE / EB per model as grouped bars (Fig. 7), one row per model."""
    rows = sorted(transition_rows, key=lambda r: r["model"])
    fig = _figure(10, 1.5 + 0.42 * len(rows))
    ax = fig.add_subplot(1, 1, 1)
    kinds = (("DR", "correct → incorrect", "#d1495b"), ("SV", "correct → correct", "#4c956c"),
             ("EE", "incorrect → incorrect", "#edae49"), ("EB", "incorrect → correct", "#00798c"))
    y = np.arange(len(rows))
    for k, (col, label, color) in enumerate(kinds):
        ax.barh(y + (k - 1.5) * 0.2, [as_number(r[col]) for r in rows], height=0.2, color=color,
                label=f"{col}: {label}")
    _model_rows(ax, [f"{r['model']} (n={r['n']})" for r in rows])
    ax.set_xlabel("transitions per trace (mean)")
    ax.set_title("Answer transitions between successive candidate answers")
    _legend_outside(fig, ax)
    ax.grid(alpha=0.3, axis="x")
    return fig


def pareto_figure(pareto_rows: Sequence[Mapping]):
    """Accuracy against the redundancy ratio R (Section 5.2): each model a coloured marker named in
    the legend (no labels in the plot to collide), the Pareto frontier joined and starred."""
    rows = sorted(pareto_rows, key=lambda r: r["model"])
    colors = model_colors([r["model"] for r in rows])
    fig = _figure(10, max(4.6, 1.2 + 0.22 * len(rows)))
    ax = fig.add_subplot(1, 1, 1)
    for i, r in enumerate(rows):
        front = str(r["frontier"]) == "1"
        ax.scatter(as_number(r["R"]), as_number(r["Acc"]), s=110 if front else 60, color=colors[r["model"]],
                   marker=MARKERS[i % len(MARKERS)], edgecolors="black" if front else "white", linewidths=1.2,
                   zorder=3, label=f"{'★ ' if front else ''}{r['model']} (n={r['n']})")
    frontier = sorted((r for r in rows if str(r["frontier"]) == "1"), key=lambda r: as_number(r["R"]))
    ax.plot([as_number(r["R"]) for r in frontier], [as_number(r["Acc"]) for r in frontier], color="#d1495b", lw=1.2,
            zorder=2, label="Pareto frontier (★: no model at least as accurate and as lean, better on one)")
    ax.margins(x=0.1, y=0.1)
    ax.set_xlabel("redundancy ratio R (mean over the graded traces; lower is leaner)")
    ax.set_ylabel("accuracy (share of graded traces correct)")
    ax.set_title("Accuracy against redundancy")
    _legend_outside(fig, ax)
    ax.grid(alpha=0.3)
    return fig


def _stacked(ax, groups: Mapping[str, Mapping[str, float]], labels: Sequence[str]):
    bottom = np.zeros(len(groups))
    for t in NODE_TYPES:
        values = np.array([groups[g].get(t, 0.0) for g in groups])
        ax.barh(range(len(groups)), values, left=bottom, color=NODE_COLORS[t], label=f"{t} {NODE_NAMES[t]}")
        bottom += values
    ax.set_yticks(range(len(groups)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)


def roles_figure(role_rows: Sequence[Mapping]):
    """Node-type shares per domain and per model (Fig. 5, with our node types)."""
    fig = _figure(10, 4.6)
    for k, by in enumerate(("domain", "model")):
        ax = fig.add_subplot(1, 2, k + 1)
        groups: dict[str, dict[str, float]] = defaultdict(dict)
        traces: dict[str, str] = {}
        for r in role_rows:
            if r["by"] == by:
                name = r["name"] if "name" in r else r["group"]  # roles.csv of a run made before 2026-12-06
                groups[name][r["type"]] = as_number(r["share"]) if r["share"] not in ("", None) else 0.0
                traces[name] = r["traces"]
        groups = dict(sorted(groups.items()))
        _stacked(ax, groups, [f"{g} (n={traces[g]})" for g in groups])
        ax.set_xlabel("share of Thought Units")
        ax.set_title(f"Node types per {by}")
    fig.axes[-1].legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def dynamics_figure(dynamic_rows: Sequence[Mapping], traces: Mapping[str, int]):
    """Node-type shares over normalised position, one panel per model (ThinkARM's view)."""
    groups = _by_model(dynamic_rows)
    ncols = min(3, len(groups))
    nrows = math.ceil(len(groups) / ncols)
    fig = _figure(4 * ncols + 1.5, 3.0 * nrows + 0.4)
    for k, (model, rows) in enumerate(groups.items()):
        ax = fig.add_subplot(nrows, ncols, k + 1)
        bins = sorted({int(r["bin"]) for r in rows})
        centres = {int(r["bin"]): (as_number(r["start"]) + as_number(r["end"])) / 2 for r in rows}
        share = {(int(r["bin"]), r["type"]): as_number(r["share"]) if r["share"] not in ("", None) else 0.0 for r in rows}
        ax.stackplot([centres[b] for b in bins], [[share.get((b, t), 0.0) for b in bins] for t in NODE_TYPES],
                     colors=[NODE_COLORS[t] for t in NODE_TYPES], labels=[f"{t} {NODE_NAMES[t]}" for t in NODE_TYPES])
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(f"{model} (n={traces.get(model, 0)})", fontsize=9)
        ax.set_xlabel("position in the trace")
        ax.set_ylabel("share of units")
    fig.axes[-1].legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle("Node types over the course of a trace")
    return fig


# name -> (title, definition) in report order
COT_FIGURES: dict[str, tuple[str, str]] = {
    "difficulty": ("Redundancy by difficulty level",
                   "D and R by model over the questions' difficulty levels (redundancy_by_level.csv)."),
    "positions": ("Where redundancy sits",
                  "Density of the units outside the Shortest Effective Path over normalised position, per model "
                  "(positions.csv: 20 bins; density 1 = spread evenly)."),
    "outcome_tokens": ("Tokens of correct and incorrect answers",
                       "Tokens per trace for graded traces, split by the final answer's verdict (outcome_tokens.csv)."),
    "lengths": ("Token lengths", "Distribution of tokens per trace, per model (lengths.csv)."),
    "transitions": ("Answer transitions",
                    "DR, SV, EE and EB per trace, mean per model, over traces whose candidate answers have "
                    "verdicts (transitions.csv)."),
    "pareto": ("Accuracy against redundancy",
               "Accuracy and mean R per model; the Pareto frontier joins the models no other model matches or beats "
               "on both and beats on one (pareto.csv)."),
    "roles": ("Node types per domain and per model", "Share of each node type among all units (roles.csv)."),
    "dynamics": ("Node types over the course of a trace",
                 "Share of each node type in 10 bins of normalised position, per model (dynamics.csv)."),
}
