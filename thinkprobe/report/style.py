"""What every figure and page shares: sizes, colours of node and edge types and of models, number
and label formatting, the figure style, and PNG / SVG output with a check that no text leaves the canvas.
"""
from __future__ import annotations

import contextlib
import contextvars
import io
import math
from typing import Iterator, Sequence

from ..indicators import DIMENSIONS

__all__ = ["MAX_TRACE_PAGES", "FIGURE_DPI", "TRACE_DPI", "PAGE_DPI", "DIMS", "NODE_NAMES", "NODE_COLORS", "EDGE_COLORS", "POLARITY_STYLES", "MODEL_PALETTE", "and_list", "display_label", "format_number", "format_beside", "figure_style", "png_bytes", "clipped_texts", "overlapping_texts", "svg_bytes", "model_colors", "model_places", "run_models"]


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


def display_label(value: str) -> str:
    return value if value else "(none)"


def and_list(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c': names in a sentence."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def as_number(value) -> float:
    """A table cell as a float; nan when it is empty or not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def format_number(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if abs(x) < 1e-12:  # floating-point noise (an effect minus its chance level, both equal): no "-1.4e-17"
        x = 0.0
    # 0.0044 printed "0.00" beside "0.00039": two significant digits (but 0.0998 at 2 digits is "0.10", not "0.1")
    if x != 0 and abs(round(x, digits)) < 10 ** (1 - digits):
        return f"{x:.{max(1, digits - 1)}g}"
    # `digits` decimals below 10, fewer as the number grows: 0.031, 1.185, 174.0, 5000
    decimals = max(0, digits - max(0, int(math.log10(abs(x))) if x else 0))
    text = f"{x:.{decimals}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # "-0.00" is 0


def format_beside(x: float | None, threshold: float, digits: int = 2) -> str:
    """format_number, with a digit more (up to two) where `digits` would round x onto the threshold
    it is compared with: reliability 0.6977 "under 0.7" reads 0.698, not 0.70.

    >>> format_beside(0.6977, 0.7), format_beside(0.4951, 0.5), format_beside(0.46, 0.7)
    ('0.698', '0.495', '0.46')
    """
    more = 0
    while x is not None and more < 2 and x != threshold and round(x, digits + more) == threshold:
        more += 1
    return format_number(x, digits + more)


@contextlib.contextmanager
def figure_style():
    """matplotlib's defaults whatever the user's matplotlibrc, a fixed SVG id salt, and no mathtext: a
    model named "cost $x^$" is a name, not a formula (it had stopped the report)."""
    import matplotlib
    import matplotlib.style

    with matplotlib.style.context("default"), matplotlib.rc_context({"svg.hashsalt": "thinkprobe", "font.size": 10,
                                                                     "text.parse_math": False}):
        yield


def png_bytes(fig, dpi: int, title: str | None = None) -> bytes:
    """The figure as PNG, every text in it made `visible` (a control character or a bidirectional
    override in a model name drawn as an escape)."""
    from matplotlib.category import StrCategoryFormatter
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    from .markup import visible

    def drawn(text: str) -> str:  # a carriage return has no glyph ("gpt\r" from CRLF data): an escape too
        return visible(text).replace("\r", "\\r")

    for text in fig.findobj(Text):
        shown = drawn(text.get_text())
        if shown != text.get_text():
            text.set_text(shown)
    for axis in (a for ax in fig.axes for a in (ax.xaxis, ax.yaxis)):
        named = axis.get_major_formatter()  # tick labels given as names are drawn from it, not from Text objects
        if isinstance(named, (FixedFormatter, FuncFormatter, StrCategoryFormatter)):
            axis.set_major_formatter(FuncFormatter(lambda x, pos, named=named: drawn(str(named(x, pos)))))
    # "tight" grows the canvas to whatever the layout left outside it: nothing drawn is cut off
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None, **({"Title": title} if title else {})},
                bbox_inches="tight", pad_inches=0.08)
    return buf.getvalue()


def _drawn_texts(fig) -> list:
    """The texts a draw of `fig` actually renders (tick labels outside the view limits exist as
    visible Text objects but are never drawn), each as (text, axis-aligned box, corner points of its
    possibly rotated box) in pixels."""
    from unittest import mock

    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    drawn, original = [], Text.draw

    def record(self, renderer):
        if self.get_visible() and self.get_text().strip() and self not in drawn:
            drawn.append(self)
        return original(self, renderer)

    with mock.patch.object(Text, "draw", record):
        canvas.draw()
    renderer = canvas.get_renderer()
    out = []
    for text in drawn:
        box = text.get_window_extent(renderer)
        angle = text.get_rotation()
        if angle % 180:  # the rotated rectangle: unrotated size, turned, centred where the text is
            text.set_rotation(0)
            flat = text.get_window_extent(renderer)
            text.set_rotation(angle)
            w, h, t = flat.width / 2, flat.height / 2, math.radians(angle)
            turn = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
            corners = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) @ turn.T + [(box.x0 + box.x1) / 2,
                                                                                  (box.y0 + box.y1) / 2]
        else:
            corners = np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
        out.append((text.get_text(), box, corners))
    return out


def _overlap(a, b, tolerance: float) -> bool:
    """Whether two convex quadrilaterals overlap by more than `tolerance` pixels along every axis
    that could separate them (separating axis theorem)."""
    import numpy as np

    for poly in (a, b):
        for k in range(4):
            edge = poly[(k + 1) % 4] - poly[k]
            axis = np.array([-edge[1], edge[0]]) / (np.hypot(*edge) or 1.0)
            pa, pb = a @ axis, b @ axis
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= tolerance:
                return False
    return True


def overlapping_texts(fig, tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of drawn texts of `fig` that overlap by more than `tolerance` pixels (tick labels running
    into each other, labels on points, a legend over a title); rotated labels by their turned boxes."""
    texts = _drawn_texts(fig)
    return [(a, b) for i, (a, _, pa) in enumerate(texts) for b, _, pb in texts[i + 1:] if _overlap(pa, pb, tolerance)]


def clipped_texts(fig) -> list[str]:
    """The drawn texts of `fig` that reach outside its canvas (what a saved image would cut off)."""
    box = fig.bbox
    return [text for text, ext, _ in _drawn_texts(fig)
            if ext.x0 < box.x0 - 1 or ext.y0 < box.y0 - 1 or ext.x1 > box.x1 + 1 or ext.y1 > box.y1 + 1]


def svg_bytes(fig, title: str | None = None) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, **({"Title": title} if title else {})})
    return buf.getvalue()


_RUN_MODELS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("run_models", default=())


@contextlib.contextmanager
def run_models(models: Sequence[str]) -> Iterator[None]:
    """Within it, a model's colour is set by its place among `models` (the run's), so that it keeps
    one colour in every figure of a report whichever models each figure shows (a figure of graded
    traces only, say)."""
    token = _RUN_MODELS.set(tuple(models))
    try:
        yield
    finally:
        _RUN_MODELS.reset(token)


def model_places(models: Sequence[str]) -> dict[str, int]:
    """Each model's place: among the run's models (`run_models`), the others after them in order."""
    place = {m: k for k, m in enumerate(dict.fromkeys([*_RUN_MODELS.get(), *models]))}
    return {m: place[m] for m in models}


def model_colors(models: Sequence[str]) -> dict[str, str]:
    """
    >>> with run_models(["a", "b", "c"]):
    ...     model_colors(["c", "x"]) == {"c": MODEL_PALETTE[2], "x": MODEL_PALETTE[3]}
    True
    """
    return {m: MODEL_PALETTE[k % len(MODEL_PALETTE)] for m, k in model_places(models).items()}
