"""HTML and Markdown pieces: the inline CSS and JS (sortable tables, graph zoom), tables, pages.
"""
from __future__ import annotations

import base64
import html
from typing import Iterable, Mapping, Sequence

from ..progress import escape_hidden

__all__ = ["CSS", "SORT_JS", "ZOOM_JS", "esc", "visible", "data_uri", "html_table", "md_table", "html_page"]


def visible(text: str) -> str:
    r"""Text from the data as a page or figure shows it: control characters (an ESC sequence, a NUL)
    and bidirectional overrides (U+202E shows "evil\u202egnp.exe" as "evilexe.png") written as
    escapes; tabs and line breaks kept, a carriage return too (white space in HTML, where CRLF data's
    would otherwise show an escape on every line of a trace page): `terminal_safe` but for that.

    >>> visible("a\x1b[31mb\u202ec\x00\r\n")
    'a\\x1b[31mb\\u202ec\\x00\r\n'
    """
    return escape_hidden(text, keep="\t\n\r")


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
.note{color:#666;font-size:.85em}.sig{color:#b00;font-weight:600}.ci{display:block;font-size:.85em;color:#555;white-space:normal}
table.wrap td{white-space:normal}
.verdict.correct{color:#2b7a3d;font-weight:600}.verdict.incorrect{color:#b00;font-weight:600}.verdict.ungraded{color:#666}
.scroll{overflow-x:auto;max-width:100%}
.graph{position:sticky;top:0;background:white;overflow:auto;max-height:48vh;border-bottom:2px solid #ccc;z-index:2}
.graph img{max-width:none;display:block}.graph{cursor:grab}
.zoom button{font:inherit;padding:0 .6em;margin-right:.2em}
.headline{background:#f6f8fb;border-left:4px solid #1f77b4;padding:.4em 1em;margin:.8em 0}
nav.contents{font-size:.9em;margin:.6em 0}nav.contents ol{columns:2;margin:.3em 0}
.flag{color:#b00}.best{color:#2b7a3d;font-weight:600}.worst{color:#b00}.best sup,.worst sup{font-size:.7em}
table.dense{font-size:.72em}table.dense th,table.dense td{padding:.2em .22em}dl.glossary dt{font-weight:600;margin-top:.4em}dl.glossary dd{margin-left:1.5em}
table.traces td.l:first-child{white-space:normal;word-break:break-all;min-width:8em}
th{white-space:normal}[title]{text-decoration-style:dotted}th[title],span[title]{cursor:help}
pre.text{white-space:pre-wrap;font-family:inherit;font-size:.95em;line-height:1.7}
.u{border-radius:3px;padding:1px 0}.u sup{font-size:.65em;color:#555;margin-right:1px}
.u:target{outline:2px solid #000}.chip{display:inline-block;padding:0 .5em;margin:0 .3em .3em 0;border-radius:3px}
.gap{color:#999}
"""


# A cell's sort key: a number alone or leading its cell ("0.004 *", "≥ 9.94 [3.32, 17.1]") sorts as that
# number; any other text as text, numbers inside it as numbers ("r1-math-2" before "r1-math-10").
SORT_KEY_JS = r"""
function sortKey(s) {
  var m = s.replace(/^[≥≤]\s*/, "").replace(/^\u2212/, "-").match(/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?(?=\s|%|$)/i);
  return m ? Number(m[0]) : s;
}
"""

SORT_JS = SORT_KEY_JS + """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.setAttribute("aria-sort", "none");
    th.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) { return sortKey(row.cells[col].textContent.trim()); }
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


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def html_table(header: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1, cls: str = "",
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


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    def clean(v):
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(clean(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(clean(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def html_page(title: str, body: str, script: str = "") -> str:
    """A whole page; what the data put in it made `visible`."""
    body = visible(body)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(visible(title))}</title><style>{CSS}</style></head>\n<body>\n{body}\n"
            f"<script>{SORT_JS}{script}</script>\n</body></html>\n")
