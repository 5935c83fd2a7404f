"""The report of a run (spec section 1, step 10): the last stage, `stats -> report`.

`write_report` turns a run folder into report.html (self-contained: inline CSS and JS, images as
data URIs), its Markdown twin report.md, the figures as PNG files for a paper, and one page per
trace; `write_trace_view` draws a single trace. matplotlib is imported inside the functions that
draw, and used through `Figure` objects only (no pyplot state).

- `style`: sizes, colours, formatting, PNG/SVG output; `glossary`: what every name means;
- `figures`: the figures; `markup`: HTML and Markdown pieces;
- `trace_pages`: per-trace pages; `text`: headline and tables; `document`: report.html / report.md;
- `writer`: `write_report`.
"""
from __future__ import annotations

from .figures import graph_figure
from .style import MAX_TRACE_PAGES
from .trace_pages import safe_trace_id, write_trace_view
from .writer import write_report

__all__ = ["write_report", "write_trace_view", "graph_figure", "safe_trace_id", "MAX_TRACE_PAGES"]
