"""Per-trace pages: a trace's text coloured by node type beside its Thought Graph (`thinkprobe graph`),
and the pages the report links to, drawn by worker processes.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import re
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from itertools import islice
from pathlib import Path
from typing import Mapping

from ..indicators import INDICATORS
from ..outputs import ANOMALIES_TABLE, GRAPHS_FILE, INDICATORS_TABLE, PROFILE_TABLE, read_table
from ..records import BACKWARD_EDGES, EDGE_TYPES, NODE_TYPES, find_graph_record, iter_graph_records, source_id
from ..tables import own_dir, write_own
from .coverage import run_json
from .figures import graph_figure
from .glossary import definition
from .markup import ZOOM_JS, data_uri, esc, html_page, html_table
from .style import (DIMS, EDGE_COLORS, MAX_TRACE_PAGES, NODE_COLORS, NODE_NAMES, PAGE_DPI, TRACE_DPI, as_number,
                    display_label,
                    figure_style, format_number, png_bytes, svg_bytes)

__all__ = ["safe_trace_id", "write_trace_view", "write_trace_pages", "run_norms"]


def safe_trace_id(trace_id: str) -> str:
    """A file name for a trace id: the id itself when it is a plain name (not one Windows reserves,
    "con", "nul" ...), else a cleaned prefix + hash."""
    if re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}", trace_id) and trace_id.split(".")[0].lower() not in _RESERVED:
        return trace_id
    return _hashed(re.sub(r"[^A-Za-z0-9._-]+", "_", trace_id).strip("._"), trace_id)


def _hashed(name: str, trace_id: str) -> str:
    """`name` (cut to 60 characters) with a hash of the trace id: a file name no other id gets."""
    return f"{name[:60]}-{hashlib.sha1(trace_id.encode('utf-8')).hexdigest()[:10]}"


def page_names(trace_ids, folder: Path | None = None) -> dict[str, str]:
    """{trace_id: page file name without .html} for a run's ids in order: `safe_trace_id`, and a hashed
    name for an id whose name differs from an earlier one's only in case ("Case" after "case": one
    file on macOS and Windows) or that a file of the user's in `folder` holds (a page of their own, kept
    there: see `users_names`). The report and `thinkprobe graph` name pages alike."""
    names, taken = {}, users_names(folder) if folder is not None else set()
    for trace_id in trace_ids:
        name = safe_trace_id(trace_id)
        if name.casefold() in taken:
            name = _hashed(name, trace_id)
        taken.add(name.casefold())
        names[trace_id] = name
    return names


def users_names(folder: Path) -> set[str]:
    """The names (casefolded, without suffix) that files of the user's hold in `folder`: an .html, .png
    or .svg that is not one the tool wrote (`is_trace_page`) nor a symlink (which the tool replaces).
    A page would overwrite them."""
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return set()
    return {p.stem.casefold() for p in entries if p.suffix in (".html", ".png", ".svg") and not p.is_symlink()
            and p.is_file() and not is_trace_page(p)}


_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{k}" for k in range(1, 10)), *(f"lpt{k}" for k in range(1, 10))})


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
    same: dict[str, list] = {}
    for sec in rec.get("sections") or []:
        same.setdefault(sec["name"], []).append(sec)
    for sec in rec.get("sections") or []:
        # a name may have several sections (reasoning tagged inside the answer): each shows its own units
        units = sorted((u for u in rec["units"] if u["section"] == sec["name"]
                        and (len(same[sec["name"]]) == 1 or sec["start"] <= u["start"] < sec["end"])),
                       key=lambda u: u["start"])
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


def verdict(rec: Mapping) -> tuple[str, str]:
    """(correct / incorrect / ungraded, why): the record's own grade first, then the final answer
    checked against the gold answer (the redundancy suite), else ungraded."""
    origin = (rec.get("provenance") or {}).get("correct_from")
    if rec.get("correct") is not None:
        return ("correct" if rec["correct"] else "incorrect"), f"from the record's grade, field {origin or 'correct'}"
    if origin:
        return "ungraded", f"the record's grade, field {origin}, marks it not graded"
    final = (rec.get("redundancy") or {}).get("final_correct")
    if final is not None:
        return ("correct" if final else "incorrect"), "from the final answer checked against the gold answer"
    return "ungraded", "no grade in the record and no gold answer to check the final answer against"


# provenance flags shown on a trace's page, with what each means
FLAGS = {
    "untagged": "no reasoning field and no reasoning tags: the whole text was profiled as reasoning",
    "truncated": "the reasoning section was cut off (no closing tag, or the API stopped it at its token limit)",
    "open_tag_missing": "a closing reasoning tag without its opening tag",
    "duplicate_of": "its id repeated an earlier trace's id (another file's: often the same question asked of "
                    "another model) and was made unique; the record's own id is its source_id",
    "renamed_from": "its file's ids met another file's, so its id carries the file's prefix",
    "repaired_unicode": "a lone surrogate (an emoji cut in two) in these fields was replaced by U+FFFD",
    "summarised": "the reasoning is a summary the model gave of its thinking (thought_summary), not the raw chain",
    "before_reasoning": "the model wrote words before the tag that opens its reasoning, profiled as neither "
                        "reasoning nor answer",
}


def trace_flags(rec: Mapping) -> list[tuple[str, str]]:
    """The flags of a trace: (flag, what it means), from its provenance."""
    prov = rec.get("provenance") or {}
    return [(name, what + (f" ({prov[name]})" if name in ("duplicate_of", "renamed_from", "before_reasoning") else
                           f" ({', '.join(prov[name])})" if name == "repaired_unicode" else ""))
            for name, what in FLAGS.items() if prov.get(name)]


def _profile_html(profile: Mapping[str, float] | None, norms: str) -> str:
    if not profile:
        return "<p class=note>No 5D profile for this trace (profile.csv has no row for it).</p>"
    cells = [format_number(profile.get(d), 2) for d in DIMS]
    return (html_table(list(DIMS), [cells], titles={d: definition(d) for d in DIMS})
            + f"<p class=note>Signed z-score per dimension: the mean of its indicators' z-scores against {esc(norms)} "
              f"(0 = the reference mean; positive = more of the dimension).</p>")


def _final_answer(rec: Mapping) -> str:
    """The final answer the redundancy suite read, as the verdict judges it (a misread shows here)."""
    final = (rec.get("redundancy") or {}).get("final_answer")  # as `verdict` reads final_correct
    if not final:
        return "none found"
    value = str(final.get("value"))
    shown = value if len(value) <= 200 else value[:197] + "..."  # a final code block: its opening
    return f"{shown} ({final.get('kind')}, unit {final.get('unit')})"


def _unusual_html(row: Mapping | None, indicators: Mapping[str, float] | None = None) -> str:
    """What anomalies.csv says of the trace: how unusual it is among its model's traces (beside the model's
    median anomaly: the distance has no fixed scale), why (each driver's value beside the model's median: a
    ratio's z of +24.7 was one exploration unit under 69 critiques), and its failure risk, in-sample where the
    failure-risk model was trained on the trace (nothing without a row; `_unusual_rows` adds the model's)."""
    if not row:
        return ""
    if row.get("anomaly") is None:
        where = f"Not scored as unusual ({esc(row.get('anomaly_reason') or 'no score')})"
    else:
        medians, values = row.get("model_medians") or {}, indicators or {}
        drivers = [(d, d.split(" ")[0]) for d in (row.get("drivers") or "").split("; ") if d]
        said = "; ".join(d + (f" ({format_number(values[name], 3)}; the model's median {format_number(medians[name], 3)})"
                              if name in values and name in medians else "") for d, name in drivers)
        n = row.get("model_traces")
        where = (f"Among its model's traces: anomaly {format_number(row['anomaly'], 2)}, rank {row['anomaly_rank']}"
                 + (f" of {n}" if n else "") + " (1 = the most unusual; the model's median anomaly "
                 f"{format_number(row.get('model_median_anomaly'), 2)}); drivers (robust z): "
                 f"{esc(said or 'none reaches the threshold')}")
    risk = ("" if row.get("failure_risk") is None else
            f" failure_risk {format_number(row['failure_risk'], 2)}: the probability that the final answer is "
            "wrong, from the reasoning's structure alone, as calibrated on the failure-risk model's training corpora"
            + (" (in-sample: this trace is one the failure-risk model was trained on)." if row.get("failure_risk_in_sample")
               else "."))
    return f"<p class=note>{where}.{risk} Definitions: the report's glossary; every trace: anomalies.csv.</p>"


def _trace_page(rec: Mapping, png: bytes, back_link: str | None, profile: Mapping[str, float] | None = None,
                norms: str = "this run's traces", unusual: Mapping | None = None) -> str:
    units = rec["units"]
    counts = {t: sum(u["type"] == t for u in units) for t in NODE_TYPES}
    legend = "".join(f'<span class="chip" style="background:{NODE_COLORS[t]}33;border-bottom:2px solid '
                     f'{NODE_COLORS[t]}">{t} {NODE_NAMES[t]} ({counts[t]})</span>' for t in NODE_TYPES)
    edge_counts = {t: sum(e["type"] == t for e in rec["edges"]) for t in EDGE_TYPES}
    edge_legend = "".join(f'<span class="chip" style="border-bottom:3px {"dashed" if t in BACKWARD_EDGES else "solid"} '
                          f'{EDGE_COLORS[t]}">{t} ({edge_counts[t]})</span>' for t in EDGE_TYPES)
    judged, why = verdict(rec)
    flags = trace_flags(rec)
    meta = [("model", rec.get("model", "")), ("domain", display_label(rec.get("domain", ""))),
            *([("group", str(rec["group"]))] if rec.get("group") is not None else []),
            *([("record id", source_id(rec))] if source_id(rec) is not None else []),
            ("final answer", _final_answer(rec)),
            ("verdict", f"{judged}: {why}"),
            ("flags", "; ".join(f"{name}: {what}" for name, what in flags) if flags else "none"),
            ("units", str(len(units))), ("edges", str(len(rec["edges"])))]
    for key in ("question", "gold_answer"):
        if rec.get(key) is not None:
            meta.append((key, str(rec[key])))
    ind = rec.get("indicators") or {}
    ind_rows = [[f'<span title="{esc(definition(name))}">{esc(name)}</span>', format_number(ind.get(name))]
                for name in INDICATORS if name in ind]
    edge_rows = [[str(e["src"]), str(e["dst"]), esc(e["type"]), esc(e.get("polarity") or ""), format_number(e.get("score"))]
                 for e in rec["edges"]]
    back = f'<p><a href="{esc(back_link)}">← report</a></p>' if back_link else ""
    body = f"""{back}<h1>Trace {esc(rec['trace_id'])}</h1>
{html_table(["", ""], [[esc(k), f'<span class="verdict {judged}">{esc(v)}</span>' if k == "verdict" else esc(v)]
                      for k, v in meta], left=2, cls="meta")}
<h2>5D profile</h2>
{_profile_html(profile, norms)}
{_unusual_html(unusual, ind)}
<p>{legend}</p>
<p>{edge_legend}</p>
<div class="zoom" role="toolbar" aria-label="graph zoom"><button type="button" data-zoom="fit">fit width</button>
<button type="button" data-zoom="out">−</button><button type="button" data-zoom="in">+</button>
<button type="button" data-zoom="full">100%</button> <span class="note">overview first; zoom in, then drag or
scroll to pan ({len(units)} units)</span></div>
<div class="graph" id="graph"><img alt="Thought Graph of {esc(rec['trace_id'])}" src="{data_uri(png)}"></div>
<p class="note">Hover a unit for its type, edges and cues; the small number is its index on the graph's x axis.
Grey text lies outside every unit.</p>
{_trace_text_html(rec)}
<h2>Indicators</h2>
{html_table(["indicator", "value"], ind_rows, titles={"value": "the indicator's raw value for this trace"})}
<details><summary>Edges ({len(edge_rows)})</summary>
{html_table(["src", "dst", "type", "polarity", "score"], edge_rows, left=0, cls="sortable",
             titles={h: definition(h) for h in ("polarity", "score")})}
</details>"""
    return html_page(f"{PAGE_TITLE}{rec['trace_id']}", body, ZOOM_JS)


def _profiles(run_dir: Path) -> dict[str, dict[str, float]]:
    """{trace_id: its 5D profile} from profile.csv ({} without one)."""
    if not (run_dir / PROFILE_TABLE.name).exists():
        return {}
    return {r["trace_id"]: {d: as_number(r.get(d)) for d in DIMS} for r in read_table(run_dir, PROFILE_TABLE)}


def run_norms(run: Mapping) -> str | None:
    """The norms file a run's z-scores are taken against (the norms of `run`, its run.json, as --norms
    gave them); None when they are the run's own."""
    norms = run.get("norms")
    return None if not norms or norms == "fit on this run" else str(norms)


def _norms(run_dir: Path) -> str:
    """What the run's z-scores are taken against, in words."""
    norms = run_norms(run_json(run_dir))
    return "this run's traces" if norms is None else f"the reference norms {Path(norms).name} (--norms)"


def write_trace_view(run_dir: str | Path, trace_id: str, out: str | Path | None = None) -> Path:
    """The per-trace view of `trace_id` (a trace id, or the record's own id when one trace has it):
    <out>/<safe id>.html (text coloured by node type next to the graph) plus the graph as .png and
    .svg; `out` defaults to <run_dir>/traces. Returns the HTML path."""
    run_dir = Path(run_dir)
    out_dir = Path(out) if out is not None else run_dir / "traces"
    rec = find_graph_record(run_dir / GRAPHS_FILE, trace_id)
    if out is None:
        own_dir(out_dir)  # the run's own folder: a symlink there is not followed
    out_dir.mkdir(parents=True, exist_ok=True)
    ids = (r["trace_id"] for r in islice(iter_graph_records(run_dir, missing_ok=True), MAX_TRACE_PAGES))
    name = (page_names(ids, out_dir).get(rec["trace_id"])  # the name the report links
            or page_names([rec["trace_id"]], out_dir)[rec["trace_id"]])  # a trace past the report's pages
    with figure_style():
        fig = graph_figure(rec)
        title = PAGE_TITLE + rec["trace_id"]  # as the page's: a rerun tells the tool's images by it
        png = png_bytes(fig, TRACE_DPI, title)
        write_own(out_dir / f"{name}.png", png)
        write_own(out_dir / f"{name}.svg", svg_bytes(fig, title))
    in_run = out_dir.resolve() == (run_dir / "traces").resolve()
    path = out_dir / f"{name}.html"
    unusual = _unusual_rows(run_dir) if (run_dir / ANOMALIES_TABLE.name).exists() else {}  # `graph` writes no table
    write_own(path, _trace_page(rec, png, "../report.html" if in_run else None, _profiles(run_dir).get(rec["trace_id"]),
                                _norms(run_dir), unusual.get(rec["trace_id"])))
    return path


def _unusual_rows(run_dir: Path) -> dict[str, dict]:
    """{trace_id: its anomalies.csv row} (the table is written first for a run made before it existed), with its
    model's: model_traces (scored), model_median_anomaly and model_medians (of each indicator, indicators.csv)."""
    from statistics import median

    from ..anomalies import read_anomalies

    rows = read_anomalies(run_dir)
    scored: dict[str, list[float]] = {}
    for r in rows:
        if r.get("anomaly") is not None:
            scored.setdefault(r["model"], []).append(float(r["anomaly"]))
    values: dict[str, dict[str, list[float]]] = {}
    for r in read_table(run_dir, INDICATORS_TABLE):
        for name in INDICATORS:
            if (v := as_number(r.get(name))) == v:  # not nan: an empty cell
                values.setdefault(r["model"], {}).setdefault(name, []).append(v)
    medians = {m: {name: median(v) for name, v in by.items()} for m, by in values.items()}
    return {r["trace_id"]: {**r, "model_traces": len(scored.get(r["model"], ())),
                            "model_median_anomaly": median(scored[r["model"]]) if scored.get(r["model"]) else None,
                            "model_medians": medians.get(r["model"], {})} for r in rows}


PAGE_TITLE = "ThinkProbe · "  # every trace page's <title> opens with it: how a rerun tells the tool's pages


def is_trace_page(path: Path) -> bool:
    """Whether `path` is a trace page, or a trace view's PNG or SVG (`thinkprobe graph`), the tool wrote
    (its title near the top: <title> of the HTML and SVG, the PNG's Title text chunk), not a file of
    the user's."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1024)
    except OSError:
        return False
    return (f"<title>{PAGE_TITLE}".encode("utf-8") in head or b"tEXtTitle\0" + PAGE_TITLE.encode("latin-1") in head
            or b"iTXtTitle\0\0\0\0\0" + PAGE_TITLE.encode("utf-8") in head)


def _write_trace_page(job: tuple[dict, Path, dict | None, str, dict | None]) -> None:
    rec, path, profile, norms, unusual = job
    with figure_style():
        png = png_bytes(graph_figure(rec), PAGE_DPI)
    write_own(path, _trace_page(rec, png, "../report.html", profile, norms, unusual))


def write_trace_pages(run_dir: Path, workers: int) -> dict[str, str]:
    """traces/<safe id>.html for the first MAX_TRACE_PAGES traces; {trace_id: relative link}. An id
    whose name differs from an earlier one's only in case gets a hashed name.

    Drawing is most of the report's time (about 0.2 s per page, 0.5 s for 300 units), so on Linux the
    pages are drawn by forked workers: the children use neither torch nor OpenMP, so threads the
    caller holds do not matter to them, and unlike "spawn" no `__main__` guard is asked of scripts.
    """
    jobs, pages = [], {}
    profiles, norms = _profiles(run_dir), _norms(run_dir)
    unusual = _unusual_rows(run_dir) if (run_dir / INDICATORS_TABLE.name).exists() else {}
    records = list(islice(iter_graph_records(run_dir, missing_ok=True), MAX_TRACE_PAGES))
    names = page_names((rec["trace_id"] for rec in records), run_dir / "traces")
    for rec in records:
        name = names[rec["trace_id"]]
        jobs.append((rec, run_dir / "traces" / f"{name}.html", profiles.get(rec["trace_id"]), norms,
                     unusual.get(rec["trace_id"])))
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
