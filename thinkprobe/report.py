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
from .stats import ALPHA, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, MIN_GROUP, TESTED, compute_stats, load_table
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

    with matplotlib.style.context("default"), matplotlib.rc_context({"svg.hashsalt": "thinkprobe", "font.size": 9}):
        yield


def _png(fig, dpi: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})  # no version stamp: same bytes
    return buf.getvalue()


def _svg(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def _model_colors(models: Sequence[str]) -> dict[str, str]:
    return {m: MODEL_PALETTE[i % len(MODEL_PALETTE)] for i, m in enumerate(models)}


def radar_figure(model_rows: Sequence[Mapping]):
    """Model profiles over the five dimensions (z-score units, 0 = corpus mean)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 5), layout="constrained")
    ax = fig.add_subplot(projection="polar")
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
    ax.set_xticks(angles, DIMS)
    ax.set_rlabel_position(108)  # between Depth and Structure
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title("Model profiles (mean signed z-score; dashed = corpus mean)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.05, 1.0), fontsize=8, frameon=False)
    return fig


def boxplot_figure(rows: Sequence[Mapping], models: Sequence[str], stats: Mapping):
    """One panel per indicator: its distribution per model; eps2 by model in the panel title."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    eps = {e["variable"]: e["model"] for e in stats["variables"]}
    colors = _model_colors(models)
    ncols = 5
    nrows = math.ceil((len(INDICATORS) + 1) / ncols)
    fig = Figure(figsize=(3.2 * ncols, 2.6 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols).ravel()
    for ax, name in zip(axes, INDICATORS):
        data = [[r[name] for r in rows if r["model"] == m and math.isfinite(r[name])] for m in models]
        parts = ax.boxplot(data, patch_artist=True, widths=0.6, flierprops={"markersize": 2.5, "alpha": 0.5},
                           medianprops={"color": "black"})
        for box, m in zip(parts["boxes"], models):
            box.set_facecolor(colors[m])
            box.set_alpha(0.75)
        ax.set_xticks([])
        ax.tick_params(labelsize=7)
        test = eps[name]
        note = f"ε²={_num(test['eps2'], 2)}{' *' if test.get('significant') else ''}" if test["status"] == TESTED \
            else test["status"]
        ax.set_title(f"{name}\n{note}", fontsize=8.5)
    for ax in axes[len(INDICATORS):]:
        ax.axis("off")
    axes[-1].legend(handles=[Patch(color=colors[m], label=m) for m in models], loc="center", fontsize=8,
                    frameon=False, title="model")
    fig.suptitle(f"Indicators by model (ε² = Kruskal-Wallis effect size by model; * Holm p < {ALPHA})")
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
    """eps2 by model next to eps2 by domain for every indicator and dimension."""
    from matplotlib.figure import Figure

    entries = stats["variables"]
    names = [e["variable"] for e in entries]
    y = np.arange(len(entries))
    fig = Figure(figsize=(7, 0.28 * len(entries) + 1.2), layout="constrained")
    ax = fig.add_subplot()
    for offset, by, color in ((-0.2, "model", "#1f77b4"), (0.2, "domain", "#ff7f0e")):
        values = [e[by]["eps2"] if e[by]["eps2"] is not None else 0.0 for e in entries]
        ax.barh(y + offset, values, height=0.4, color=color, label=f"by {by}")
        for k, e in enumerate(entries):
            if e[by]["status"] != TESTED:
                ax.text(0.01, k + offset, f"{by}: {e[by]['status']}", va="center", fontsize=6, color="#555555")
    ax.set_yticks(y, names, fontsize=8)
    for tick, e in zip(ax.get_yticklabels(), entries):
        if e["kind"] == "dimension":
            tick.set_fontweight("bold")
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("ε² = H / (n − 1)  (Kruskal-Wallis)")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Effect size: how much model and domain explain")
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
    fig.legend(handles=legend, loc="outside lower center", ncol=min(len(legend), max(4, int(width / 1.5))),
               fontsize=7, frameon=False)
    return fig


# --------------------------------------------------------------------------- HTML pieces

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;
padding:1em 1.5em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td.l,th.l{text-align:left}table.meta td{white-space:normal}tr.dim td{font-weight:600;background:#fafafa}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" ▲"}table.sortable th[aria-sort=descending]::after{content:" ▼"}
img.fig{max-width:100%;height:auto;border:1px solid #eee}
.note{color:#666;font-size:.85em}.sig{color:#b00;font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
.graph{position:sticky;top:0;background:white;overflow:auto;max-height:48vh;border-bottom:2px solid #ccc;z-index:2}
.graph img{max-width:none}
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
        var c = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""

esc = html.escape


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _html_table(header: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1, cls: str = "",
                row_classes: Sequence[str] | None = None) -> str:
    """Cells are HTML already; the first `left` columns are left-aligned."""
    def cell(tag, i, v):
        return f"<{tag}{' class=l' if i < left else ''}>{v}</{tag}>"

    head = "".join(cell("th", i, esc(h)) for i, h in enumerate(header))
    body = []
    for k, row in enumerate(rows):
        rc = f' class="{row_classes[k]}"' if row_classes and row_classes[k] else ""
        body.append(f"<tr{rc}>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>")
    return (f'<div class="scroll"><table{f" class={cls}" if cls else ""}><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    def clean(v):
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(clean(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(clean(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n"
            f"<script>{SORT_JS}</script>\n</body></html>\n")


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
<div class="graph"><img alt="Thought Graph of {esc(rec['trace_id'])}" src="{_data_uri(png)}"></div>
<p class="note">Hover a unit for its type, edges and cues; the small number is its index on the graph's x axis.
Grey text lies outside every unit.</p>
{_trace_text_html(rec)}
<h2>Indicators</h2>
{_html_table(["indicator", "value"], ind_rows)}
<details><summary>Edges ({len(edge_rows)})</summary>
{_html_table(["src", "dst", "type", "polarity", "score"], edge_rows, left=0, cls="sortable")}
</details>"""
    return _page(f"ThinkProbe · {rec['trace_id']}", body)


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
    (CoTJudger's) when it has one row per trace, the file as it is otherwise."""
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
    if "model" in columns and "trace_id" in columns:
        header = ["model", "n", *numeric]
        out = []
        for model in sorted({r["model"] for r in rows}) + ["all"]:
            members = [r for r in rows if model == "all" or r["model"] == model]
            cells = [model, str(len(members))]
            for c in numeric:
                vals = [value(r, c) for r in members if math.isfinite(value(r, c))]
                cells.append(_num(sum(vals) / len(vals)) if vals else "–")
            out.append(cells)
        return header, out, "Mean per model over traces (columns in CoTJudger's order)."
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
    models = sorted({r["model"] for r in rows})
    domains = sorted({r["domain"] for r in rows})
    by_model = group_profiles(rows, ("model",))
    cells = group_profiles(rows, ("model", "domain"))
    fig_dir = run_dir / "figures"
    fig_dir.mkdir(exist_ok=True)
    (run_dir / "traces").mkdir(exist_ok=True)

    figures: dict[str, bytes] = {}
    with _style():
        for name, make in (("radar", lambda: radar_figure(by_model)),
                           ("boxplots", lambda: boxplot_figure(rows, models, stats)),
                           ("heatmap", lambda: heatmap_figure(cells, models, domains)),
                           ("effects", lambda: effects_figure(stats))):
            figures[name] = _png(make(), FIGURE_DPI)
            (fig_dir / f"{name}.png").write_bytes(figures[name])
    pages = _write_trace_pages(run_dir, workers if workers is not None else min(8, os.cpu_count() or 1))
    # pages of an earlier report (traces since re-profiled, renamed or gone) would read as this run's
    current = {Path(link).name for link in pages.values()}
    for old in (run_dir / "traces").glob("*.html"):
        if old.name not in current:
            old.unlink()

    redundancy = _redundancy_table(run_dir / REDUNDANCY_TABLE.name)
    html_doc = _report_html(run_dir, stats, rows, by_model, cells, figures, pages, redundancy)
    (run_dir / "report.html").write_text(html_doc, encoding="utf-8")
    (run_dir / "report.md").write_text(_report_md(run_dir, stats, rows, cells, pages, redundancy), encoding="utf-8")
    return run_dir / "report.html"


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


def _effect_rows(stats: Mapping, html_out: bool) -> list[list[str]]:
    out = []
    for e in stats["variables"]:
        em, pm = _test_cell(e["model"], html_out)
        ed, pd = _test_cell(e["domain"], html_out)
        ratio = _num(e["ratio"], 2) if e["ratio"] is not None else "–"
        name = e["variable"] if e["kind"] == "indicator" else f"{e['variable']} (dimension)"
        out.append([esc(name) if html_out else name, e["dimension"], em, pm, ed, pd, ratio])
    return out


def _too_few_text(stats: Mapping) -> str:
    parts = [f"{by}: {', '.join(_label(g) for g in info['too_few'])}"
             for by, info in stats["groupings"].items() if info["too_few"]]
    if not parts:
        return ""
    return f"Groups with fewer than {MIN_GROUP} traces, left out of the tests: " + "; ".join(parts) + "."


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


METHOD_NOTE = (f"Kruskal-Wallis H per indicator and dimension, grouped by model and, separately, by domain; "
               f"ε² = H / (n − 1); ratio = ε²(model) / ε²(domain). p-values are Holm-corrected over every test "
               f"run (both groupings, all variables); * marks Holm p < {ALPHA}. Profile intervals: percentile "
               f"bootstrap of the mean, {BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}.")

EFFECT_HEADER = ["variable", "dimension", "ε² model", "Holm p (model)", "ε² domain", "Holm p (domain)",
                 "ratio model/domain"]


def _report_html(run_dir, stats, rows, by_model, cells, figures, pages, redundancy) -> str:
    def img(name, alt):
        return f'<img class="fig" alt="{esc(alt)}" src="{_data_uri(figures[name])}">'

    summary = "".join(f"<p>{esc(line).replace('`', '')}</p>" for line in _summary_text(run_dir, stats, pages))
    too_few = _too_few_text(stats)
    effect_rows = _effect_rows(stats, html_out=True)
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

    red = ""
    if redundancy:
        header, red_rows, caption = redundancy
        red = (f"<h2>Redundancy (CoTJudger's metrics)</h2><p class=note>{esc(caption)}</p>"
               + _html_table(header, [[esc(v) for v in row] for row in red_rows], cls="sortable"))

    body = f"""<h1>ThinkProbe report</h1>
{summary}
<h2>Model profiles</h2>
{img("radar", "Radar chart of the model profiles over the five dimensions")}
{_html_table(["model", "n", *DIMS], [[esc(c) for c in r] for r in _profile_ci_rows(stats)])}
<p class=note>Mean signed z-score per dimension with its 95% bootstrap interval; 0 is the corpus mean.</p>
<h2>Effect sizes: model versus domain</h2>
{_html_table(EFFECT_HEADER, effect_rows, left=2, row_classes=["dim" if e["kind"] == "dimension" else ""
                                                              for e in stats["variables"]])}
<p class=note>{esc(METHOD_NOTE)} {esc(too_few)}</p>
{img("effects", "Effect sizes by model and by domain")}
<h2>Model × domain profiles</h2>
{img("heatmap", "Heat map of the model by domain profiles")}
<details><summary>Values</summary>{_html_table(["model", "domain", "n", *DIMS], cell_rows, left=2)}</details>
<h2>Indicators by model</h2>
{img("boxplots", "Box plots of every indicator by model")}
{red}
<h2>Traces</h2>
<p class=note>Click a column header to sort.</p>
{_html_table(trace_header, trace_rows, left=3, cls="sortable")}"""
    return _page("ThinkProbe report", body)


def _read_counts(run_dir: Path) -> dict[str, tuple[str, str, str]]:
    return {r["trace_id"]: (r.get("units", ""), r.get("edges", ""), r.get("tokens", ""))
            for r in read_table(run_dir, INDICATORS_TABLE)}


def _report_md(run_dir, stats, rows, cells, pages, redundancy) -> str:
    parts = ["# ThinkProbe report", "", *_summary_text(run_dir, stats, pages), "",
             "## Model profiles", "", "![Radar chart of the model profiles](figures/radar.png)", "",
             _md_table(["model", "n", *DIMS], _profile_ci_rows(stats)), "",
             "Mean signed z-score per dimension with its 95% bootstrap interval; 0 is the corpus mean.", "",
             "## Effect sizes: model versus domain", "", _md_table(EFFECT_HEADER, _effect_rows(stats, html_out=False)),
             "", METHOD_NOTE + (" " + _too_few_text(stats) if _too_few_text(stats) else ""), "",
             "![Effect sizes](figures/effects.png)", "",
             "## Model × domain profiles", "", "![Heat map](figures/heatmap.png)", "",
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
              ""]
    return "\n".join(parts)
