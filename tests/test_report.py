"""The HTML / Markdown report and the per-trace view on a small hand-built run folder; the last
tests open the pages in headless Chromium and skip when no Chromium is installed."""
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.report import MAX_TRACE_PAGES, safe_trace_id, write_report, write_trace_view

from run_folder import make_graph, write_run

TRACES = [("r1-math-0", "r1", "math", 12), ("r1-math-1", "r1", "math", 30), ("r1-logic-0", "r1", "logic", 8),
          ("qwq-math-0", "qwq", "math", 40), ("qwq-logic-0", "qwq", "logic", 25), ("qwq-logic-1", "qwq", "logic", 18),
          ("odd/id <1>", "solo", "math", 6)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("run")
    rows = []
    for k, (trace_id, model, domain, n) in enumerate(TRACES):
        row = {"trace_id": trace_id, "model": model, "domain": domain, "units": n + 1, "edges": n, "tokens": 9 * n}
        row.update({name: ((k + 1) * (j + 2)) % 7 / 7 for j, name in enumerate(INDICATORS)})
        row.update({dim: (k - 3) * 0.2 + j * 0.1 for j, dim in enumerate(DIMENSIONS)})
        rows.append(row)
    write_run(run, rows, [make_graph(*t) for t in TRACES])
    with open(run / "redundancy.csv", "w", encoding="utf-8") as f:
        f.write("trace_id,model,domain,Acc,Tokens,|V|,Iso,|E|,D,in_max,out_max,Self,Back,L_eff,R,Unc\n")
        for trace_id, model, domain, n in TRACES:
            f.write(f'"{trace_id}",{model},{domain},1,{9 * n},{n + 1},0,{n},1.0,2,3,0.1,0.2,{n // 2},0.5,0\n')
    write_report(run)
    return run


def test_the_contents_list_every_section_and_link_to_them(run_dir):
    """A first-time reader scrolled through 14 sections to find one: both documents open with a list of
    their sections, each linking to its heading (an id on each h2; in Markdown, the anchor a viewer gives
    the heading)."""
    from thinkprobe.report.document import section_slug

    page = (run_dir / "report.html").read_text(encoding="utf-8")
    headings = re.findall(r'<a id="([^"]+)"></a><h2>(.*?)</h2>', page)
    assert len(headings) >= 8 and len(headings) == page.count("<h2>")  # every section heading has its anchor
    links = re.findall(r'<li><a href="#([^"]+)">(.*?)</a></li>', page.split("<nav class=contents>")[1].split("</nav>")[0])
    assert links == [(slug, title) for slug, title in headings]
    assert page.index("<nav class=contents>") < page.index("<h2")
    assert section_slug(html.unescape("Model × domain profiles")) == "model--domain-profiles"
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", md, flags=re.M)
    listed = re.findall(r"^\d+\. \[(.+)\]\(#(.+)\)$", md.split("**Contents**")[1].split("\n## ")[0], flags=re.M)
    assert listed == [(t, section_slug(t)) for t in sections] and [t for t, _ in listed][:1] == ["Model profiles"]


def test_report_files(run_dir):
    for name in ("report.html", "report.md", "figures/radar.png", "figures/indicators.png", "figures/heatmap.png"):
        assert (run_dir / name).stat().st_size > 0, name
    for trace_id, *_ in TRACES:
        assert (run_dir / "traces" / f"{safe_trace_id(trace_id)}.html").exists()
    assert (run_dir / "figures" / "radar.png").read_bytes().startswith(b"\x89PNG")


def test_the_report_says_which_models_differ(run_dir):
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    section = md[md.index("## Which models differ"):md.index("## Reliability of repeated answers")]
    assert "| model a | model b | Breadth | Depth | Structure | Metacognition | Efficiency |" in section
    row = next(line for line in section.splitlines() if line.startswith("| qwq | r1 |"))
    cells = row.strip("|").split("|")[2:]
    assert len(cells) == 5 and all(re.fullmatch(r" (\d\.\d\d( \*)?|constant|not testable) \(.*\) ", c) for c in cells)
    assert "Not compared, with fewer than 2 traces: solo." in section
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "<h2>Which models differ</h2>" in page and "<dt>P(a &gt; b)</dt>" in page


def test_report_html_is_self_contained(run_dir):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert page.count('src="data:image/png;base64,') >= 4
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "<link" not in page and "@import" not in page and "<script src" not in page
    for section in ("Model profiles", "Effect sizes", "Model × domain", "Indicators by model", "Redundancy", "Traces"):
        assert section in page
    # Every trace is listed and links to its page; odd ids get a safe file name.
    assert 'href="traces/r1-math-0.html"' in page
    assert f'href="traces/{safe_trace_id("odd/id &lt;1&gt;")}.html"' not in page  # escaped id is not re-hashed
    assert f'href="traces/{safe_trace_id("odd/id <1>")}.html"' in page
    assert "odd/id &lt;1&gt;" in page and "odd/id <1>" not in page
    # The model with one trace is named, not silently dropped.
    assert "fewer than 2 traces" in page and "solo" in page


def test_report_markdown_twin(run_dir):
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "![Radar chart of the model profiles](figures/radar.png)" in md
    assert "](figures/indicators.png)" in md and "](figures/heatmap.png)" in md
    assert "| branching_factor |" in md and "## Redundancy" in md
    assert "[r1-math-0](traces/r1-math-0.html)" in md


def test_report_markdown_carries_no_html_from_the_data(tmp_path):
    """report.html escaped a model named as an HTML tag; report.md carried it raw for a Markdown viewer."""
    evil = "<img src=x onerror=alert(1)>"
    traces = [(f"t{k}", evil if k % 2 else "plain", "math", 6 + k) for k in range(6)]
    rows = [{"trace_id": t, "model": m, "domain": d, "units": n + 1, "edges": n, "tokens": 9 * n,
             **{name: (k * (j + 2)) % 7 / 7 for j, name in enumerate(INDICATORS)},
             **{dim: (k - 3) * 0.2 + j * 0.1 for j, dim in enumerate(DIMENSIONS)}} for k, (t, m, d, n) in enumerate(traces)]
    write_run(tmp_path, rows, [make_graph(*t) for t in traces])
    write_report(tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "&lt;img src=x onerror=alert(1)>" in md and "<img" not in md
    assert "<img src=x" not in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_trace_page_names_avoid_names_windows_reserves():
    names = [safe_trace_id(t) for t in ("con", "NUL", "aux.x", "r1-math-0", "DeepSeek-R1-0")]
    assert names[3:] == ["r1-math-0", "DeepSeek-R1-0"] and all(n.split("-")[0].lower() in ("con", "nul", "aux.x")
                                                               and len(n) > 10 for n in names[:3])


def test_redundancy_table_says_what_r_runs_to(tmp_path):
    from thinkprobe.report.document import redundancy_table

    path = tmp_path / "redundancy.csv"
    path.write_text("trace_id,model,domain,R,L_eff,sep_to\na,m,d,0.5,2,first_correct\nb,m,d,0.2,4,last_unit\n"
                    "c,m,d,0.1,5,last_unit\n", encoding="utf-8")
    header, rows, caption = redundancy_table(path)
    assert "sep_to" not in header and "run to the first correct answer in 1, the last unit in 2 of the traces" in caption
    assert "no final answer" not in caption
    # PRM800K's solution prefixes: 27 of 50 'incorrect' for want of an answer, which Acc's caption now says
    caption = redundancy_table(path, {"matcher_no_answer": 27})[2]
    assert "Acc counts 27 traces incorrect because no final answer was found in them" in caption


def test_the_opening_says_when_many_records_were_not_profiled(tmp_path):
    """gpt-5-mini's SimpleQA file: 431 of 800 records returned no reasoning summary and were skipped, and
    were answered more accurately (0.36 against 0.28) than the traces the report covers; no word beside
    the accuracy. A quarter or more of the records skipped is said in the opening lines."""
    from thinkprobe.report.coverage import skipped_line
    from thinkprobe.report.summary import summary_text

    def run(*models):
        return {"coverage": {"by_model": [{"model": m, "records": n, "traces": n - k, "skipped": k,
                                           "reasons": {"reasoning not returned": k}} for m, n, k in models]}}

    one = run(("gpt-5-mini", 800, 431))
    assert skipped_line(one) == ("431 of the 800 records read were not profiled (reasoning not returned 431; see the "
                                 "coverage section): every figure here, accuracy included, covers the traces that "
                                 "were, which need not be like the records left out.")
    assert skipped_line(run(("a", 100, 20), ("b", 100, 40))).startswith(
        "60 of the 200 records read were not profiled (reasoning not returned 60; b 40 of 100, a 20 of 100;")
    assert skipped_line(run(("a", 100, 24))) == "" and skipped_line({}) == ""
    stats = {"n_traces": 369, "groupings": {"model": {"groups": {"gpt-5-mini": 369}, "too_few": []},
                                            "domain": {"groups": {"simpleqa": 369}, "too_few": []}}}
    assert skipped_line(one) in summary_text(tmp_path, stats, {"t": "traces/t.html"}, one)


def test_trace_page_shows_each_unit_once_when_a_name_has_two_sections():
    """Reasoning tagged inside the answer is a second reasoning section: each shows its own units."""
    from thinkprobe.report.trace_pages import _trace_text_html

    text = "<think>Plan it.</think>Sent.<scratchpad>Why so.</scratchpad>"
    spans = {"Plan it.": "reasoning", "Sent.": "answer", "Why so.": "reasoning"}
    units = [{"id": k, "section": name, "start": text.index(t), "end": text.index(t) + len(t), "text": t, "type": "RSN",
              "segment": 0} for k, (t, name) in enumerate(spans.items())]
    sections = [{"name": u["section"], "field": "response", "start": u["start"], "end": u["end"]} for u in units]
    html = _trace_text_html({"units": units, "edges": [], "sections": sections, "fields": {"response": text}})
    assert [html.count(f'id="u{k}"') for k in range(3)] == [1, 1, 1]


def test_trace_page_says_why_its_trace_is_unusual(run_dir):
    """The report's unusual-traces table links to trace pages: each page says what anomalies.csv says."""
    import csv

    with open(run_dir / "anomalies.csv", newline="", encoding="utf-8") as f:
        row = next(csv.DictReader(f))  # this run's models are too small for anomaly scores: the page says why
    page = (run_dir / "traces" / f"{safe_trace_id(row['trace_id'])}.html").read_text(encoding="utf-8")
    assert row["anomaly"] == "" and f"Not scored as unusual ({row['anomaly_reason']})" in html.unescape(page)
    assert f"failure_risk {float(row['failure_risk']):.2f}" in page
    from thinkprobe.report.trace_pages import _unusual_html
    scored = _unusual_html({"anomaly": 4.2, "anomaly_rank": 1, "drivers": "idea_count +3.1", "failure_risk": 0.7})
    assert "anomaly 4.20, rank 1 (1 = the most unusual" in scored and "drivers (robust z): idea_count +3.1. failure_risk 0.70" in scored
    # beside the model's median anomaly and each driver's value beside the model's median: a new user read
    # "critique_ratio +24.7" as heavy self-critique where the trace had one exploration unit under 69 critiques
    row = {"anomaly": 25.0, "anomaly_rank": 1, "drivers": "critique_ratio +24.7; max_chain_depth +4.1", "failure_risk": 0.72,
           "model_traces": 45, "model_median_anomaly": 4.29, "model_medians": {"critique_ratio": 3.545, "max_chain_depth": 22}}
    page = html.unescape(_unusual_html(row, {"critique_ratio": 69.0, "max_chain_depth": 89.0}))
    assert "anomaly 25.0, rank 1 of 45 (1 = the most unusual; the model's median anomaly 4.29)" in page
    assert "critique_ratio +24.7 (69.00; the model's median 3.545); max_chain_depth +4.1 (89.00; the model's median 22.00)" in page


def test_trace_pages_of_ids_differing_only_in_case_are_two_files_anywhere(tmp_path):
    """'Case' and 'case' would share one page on macOS and Windows: the later one gets a hashed name,
    and the report links each trace to its own page."""
    traces = [(t, "m", "math", 6) for t in ("case", "Case", "other")]
    rows = [{"trace_id": t, "model": m, "domain": d, "units": n + 1, "edges": n, "tokens": 9 * n} for t, m, d, n in traces]
    write_run(tmp_path, rows, [make_graph(*t) for t in traces])
    write_report(tmp_path)
    names = sorted(p.name for p in (tmp_path / "traces").glob("*.html"))
    assert len(names) == 3 and len({n.casefold() for n in names}) == 3
    assert "case.html" in names and "other.html" in names
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    hashed = next(n for n in names if n not in ("case.html", "other.html"))
    assert f"[case](traces/case.html)" in md and f"[Case](traces/{hashed})" in md
    from thinkprobe.report import write_trace_view
    assert write_trace_view(tmp_path, "Case").name == hashed  # `thinkprobe graph` writes the page the report links


def test_a_page_of_the_users_in_traces_is_kept_and_the_tools_page_named_around_it(tmp_path):
    """A hand-written traces/case.html (or case.png) is the user's: neither the report nor `thinkprobe
    graph` writes over it; the trace's page takes a hashed name, which the report links."""
    traces = [(t, "m", "math", 6) for t in ("case", "other")]
    rows = [{"trace_id": t, "model": m, "domain": d, "units": n + 1, "edges": n, "tokens": 9 * n} for t, m, d, n in traces]
    write_run(tmp_path, rows, [make_graph(*t) for t in traces])
    (tmp_path / "traces").mkdir()
    mine = "<html><head><title>my notes on case</title></head></html>"
    (tmp_path / "traces" / "case.html").write_text(mine, encoding="utf-8")
    (tmp_path / "traces" / "other.png").write_bytes(b"my picture")
    for _ in range(2):  # a second report tells its own pages from the user's
        write_report(tmp_path)
        assert (tmp_path / "traces" / "case.html").read_text(encoding="utf-8") == mine
        md = (tmp_path / "report.md").read_text(encoding="utf-8")
        links = dict(re.findall(r"\[(case|other)\]\(traces/([^)]+)\)", md))
        assert links["case"] != "case.html" and (tmp_path / "traces" / links["case"]).exists()
        assert links["other"] != "other.html"  # its graph's image would take other.png
    page = write_trace_view(tmp_path, "case")
    assert page.name == links["case"] and (tmp_path / "traces" / "case.html").read_text(encoding="utf-8") == mine
    assert write_trace_view(tmp_path, "other").name == links["other"]
    assert (tmp_path / "traces" / "other.png").read_bytes() == b"my picture"


def test_report_says_when_its_traces_are_a_sample(run_dir, tmp_path):
    copy = tmp_path / "sampled"
    shutil.copytree(run_dir, copy)
    (copy / "run.json").write_text(json.dumps({"selection": {"limit": None, "sample": 7, "seed": 3}}), encoding="utf-8")
    write_report(copy)
    assert "random sample of 7 records of the inputs (--sample, seed 3)" in (copy / "report.md").read_text(encoding="utf-8")
    assert "random sample" not in (run_dir / "report.md").read_text(encoding="utf-8")
    # a sample larger than the inputs took every record: no such note
    (copy / "run.json").write_text(json.dumps({"selection": {"limit": None, "sample": 100, "seed": 3},
                                               "counts": {"traces": 7, "errors": 0}}), encoding="utf-8")
    write_report(copy)
    assert "random sample" not in (copy / "report.md").read_text(encoding="utf-8")


def test_report_is_reproducible(run_dir, tmp_path):
    copy = tmp_path / run_dir.name
    shutil.copytree(run_dir, copy)
    write_report(copy)
    for name in ("report.html", "report.md", "figures/radar.png", "figures/indicators.png", "figures/heatmap.png",
                 "traces/r1-math-1.html"):
        assert (copy / name).read_bytes() == (run_dir / name).read_bytes(), name


def test_trace_view(run_dir, tmp_path):
    path = write_trace_view(run_dir, "qwq-math-0", out=tmp_path)
    assert path == tmp_path / "qwq-math-0.html"
    page = path.read_text(encoding="utf-8")
    assert (tmp_path / "qwq-math-0.png").read_bytes().startswith(b"\x89PNG")
    svg = (tmp_path / "qwq-math-0.svg").read_text(encoding="utf-8")
    assert "<svg" in svg and "<dc:date>" not in svg
    assert 'src="data:image/png;base64,' in page
    # Units are coloured spans over the original text, escaped; their edges are in the tooltip.
    assert page.count('class="u"') == 41
    assert "x = 3 * 2 &lt; 6 &amp; &quot;quoted&quot;." in page
    assert "critique/negate" in page or "critique/affirm" in page
    assert "../report.html" not in page  # written outside the run folder: no link back
    again = write_trace_view(run_dir, "qwq-math-0", out=tmp_path / "again")
    assert again.with_suffix(".svg").read_bytes() == (tmp_path / "qwq-math-0.svg").read_bytes()
    assert again.with_suffix(".png").read_bytes() == (tmp_path / "qwq-math-0.png").read_bytes()


def test_trace_view_of_a_long_trace(tmp_path):
    run = write_run(tmp_path, [{"trace_id": "long", "model": "m", "domain": "d"}], [make_graph("long", "m", "d", 350)])
    path = write_trace_view(run, "long")
    assert path == run / "traces" / "long.html" and "../report.html" in path.read_text(encoding="utf-8")
    from PIL import Image

    width, height = Image.open(run / "traces" / "long.png").size
    assert width > 2500 and height < 700  # widened with the trace, not squeezed


def test_unknown_trace(run_dir):
    with pytest.raises(ValueError, match="not found"):
        write_trace_view(run_dir, "no-such-trace")


def test_page_limit_is_stated(tmp_path, monkeypatch):
    import thinkprobe.report.trace_pages as pages

    monkeypatch.setattr(pages, "MAX_TRACE_PAGES", 2)
    rows = [{"trace_id": t, "model": m, "domain": d} for t, m, d, _ in TRACES[:4]]
    run = write_run(tmp_path, rows, [make_graph(*t) for t in TRACES[:4]])
    write_report(run)
    assert len(list((run / "traces").glob("*.html"))) == 2
    assert "first 2 traces" in (run / "report.html").read_text(encoding="utf-8")
    assert MAX_TRACE_PAGES == 500


def test_rewritten_report_drops_pages_of_traces_no_longer_in_the_run(tmp_path):
    rows = [{"trace_id": t, "model": m, "domain": d} for t, m, d, _ in TRACES[:3]]
    run = write_run(tmp_path, rows, [make_graph(*t) for t in TRACES[:3]])
    write_report(run)
    stale = run / "traces" / "gone-trace.html"
    stale.write_text("<!DOCTYPE html><html><head><title>ThinkProbe · gone-trace</title></head></html>", encoding="utf-8")
    mine = run / "traces" / "my-notes.html"  # not a page the tool wrote: it stays
    mine.write_text("<p>my notes on these graphs</p>", encoding="utf-8")
    write_report(run)
    assert not stale.exists() and mine.exists()
    assert sorted(p.name for p in (run / "traces").glob("*.html")) == sorted(
        [*(f"{safe_trace_id(t)}.html" for t, *_ in TRACES[:3]), "my-notes.html"])


def test_workers_draw_the_same_pages(tmp_path):
    from thinkprobe.report.trace_pages import write_trace_pages

    traces = [(f"t{k}", "m", "d", 3) for k in range(16)]
    runs = [write_run(tmp_path / name, [], [make_graph(*t) for t in traces]) for name in ("serial", "parallel")]
    for run, workers in zip(runs, (1, 2)):
        (run / "traces").mkdir()
        assert len(write_trace_pages(run, workers)) == 16
    for page in sorted((runs[0] / "traces").iterdir()):
        assert (runs[1] / "traces" / page.name).read_bytes() == page.read_bytes(), page.name


def test_empty_run_says_so(tmp_path):
    run = write_run(tmp_path, [])
    assert "No traces" in write_report(run).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- headless Chromium


def _chromium() -> str | None:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


# Appended to a copy of the page: after load, record how many images decoded and whether the
# sortable tables were set up, where --dump-dom can read it.
PROBE = """<script>window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var broken = images.filter(function (im) { return !im.complete || im.naturalWidth === 0; }).length;
  var th = document.querySelector("table.sortable th"), order = "";
  if (th) { th.click(); var rows = th.closest("table").tBodies[0].rows;
            order = rows[0].cells[0].textContent + "<=" + rows[rows.length - 1].cells[0].textContent; }
  document.body.setAttribute("data-probe", "images=" + images.length + ";broken=" + broken +
    ";sortable=" + document.querySelectorAll("th[aria-sort]").length);
  document.body.setAttribute("data-order", order);
  // every figure inside the window; every table as wide as its box at most (no column cut off
  // behind a scroll bar); the page itself no wider than the window
  var vw = document.documentElement.clientWidth, bad = [];
  document.querySelectorAll("img.fig").forEach(function (im) {
    var r = im.getBoundingClientRect();
    if (r.left < 0 || r.right > vw + 0.5 || r.width < 50) bad.push(im.alt + ":" + Math.round(r.left) + "-" + Math.round(r.right));
  });
  document.querySelectorAll("div.scroll").forEach(function (box, k) {
    if (box.closest("details") === null && box.scrollWidth > box.clientWidth + 1) bad.push("table" + k + ":" + box.scrollWidth + ">" + box.clientWidth);
  });
  if (document.documentElement.scrollWidth > vw + 1) bad.push("page:" + document.documentElement.scrollWidth);
  document.body.setAttribute("data-bounds", "vw=" + vw + ";bad=" + bad.join("|"));
});</script></body>"""


def _render(browser: str, page: Path, profile: Path, width: int = 1400) -> tuple[str, list[str]]:
    """The DOM after load and the console lines Chromium logged for `page`, in a `width` px window."""
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", "--enable-logging=stderr", "--v=0",
           f"--window-size={width},900", "--hide-scrollbars",
           f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return done.stdout, console


def _probe(page: Path) -> Path:
    probed = page.with_name(f"probe-{page.name}")
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE), encoding="utf-8")
    return probed


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> str:
    found = _chromium()
    if found is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    # The console check must be able to fail: a page with an error has to show up in the log.
    broken = tmp_path_factory.mktemp("broken") / "broken.html"
    broken.write_text("<html><body><script>undefinedFunction();</script></body></html>", encoding="utf-8")
    _, console = _render(found, broken, broken.parent / "profile")
    assert any("undefinedFunction" in line for line in console), "Chromium did not log console errors"
    return found


@pytest.mark.parametrize("width", [1400, 1000])
def test_report_renders_in_chromium(run_dir, browser, tmp_path, width):
    dom, console = _render(browser, _probe(run_dir / "report.html"), tmp_path / "profile", width)
    assert console == []
    probe = re.search(r'data-probe="images=(\d+);broken=(\d+);sortable=(\d+)"', dom)
    assert probe, "the page's scripts did not run"
    images, broken, sortable = map(int, probe.groups())
    assert images >= 4 and broken == 0 and sortable > 0
    # CoTJudger's analyses render as sections with their figures (or the line saying why one is missing)
    assert "CoTJudger's analyses" in dom and "Where redundancy sits" in dom and "Accuracy against redundancy" in dom
    assert images >= 4 + 7 and ('class="best"' in dom and 'class="worst"' in dom)
    first, last = re.search(r'data-order="([^"]*)"', dom).group(1).split("&lt;=")
    assert first <= last
    bounds = re.search(r'data-bounds="vw=(\d+);bad=([^"]*)"', dom)
    assert bounds and abs(int(bounds.group(1)) - width) < 40, "the window width did not apply"
    assert bounds.group(2) == "", f"clipped at {width} px: {bounds.group(2)}"


def test_browser_bounds_check_can_fail(run_dir, browser, tmp_path):
    wide = tmp_path / "wide.html"
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    wide.write_text(page.replace("img.fig{max-width:100%", "img.fig{min-width:1300px;max-width:none"), encoding="utf-8")
    dom, _ = _render(browser, _probe(wide), tmp_path / "profile", 1000)
    assert re.search(r'data-bounds="vw=\d+;bad=[^"]+"', dom)


def test_a_table_wider_than_the_window_scrolls_in_its_own_box(run_dir, browser, tmp_path):
    # a table too wide for a 1000 px window (the redundancy table of a run with EB, DR, SV and EE and their
    # n columns is 1168 px): behind its own scroll bar, the page no wider than the window
    wide = tmp_path / "wide.html"
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert 'class="sortable dense"' in page  # the redundancy table
    wide.write_text(page.replace("</style>", "table.dense{min-width:1300px}</style>", 1), encoding="utf-8")
    dom, _ = _render(browser, _probe(wide), tmp_path / "profile", 1000)
    bad = re.search(r'data-bounds="vw=\d+;bad=([^"]*)"', dom).group(1).split("|")
    assert any(b.startswith("table") for b in bad), bad  # it scrolls in its box
    assert not [b for b in bad if b.startswith("page:")], bad


def test_trace_page_renders_in_chromium(run_dir, browser, tmp_path):
    dom, console = _render(browser, _probe(run_dir / "traces" / "qwq-logic-0.html"), tmp_path / "profile")
    assert console == []
    assert re.search(r'data-probe="images=1;broken=0;sortable=\d+"', dom)


# --------------------------------------------------------------------------- issue 13: a report that reads alone


def test_headline_glossary_and_hover_definitions(run_dir):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    head = re.search(r'<div class="headline">.*?<ul>(.*?)</ul>', page, re.S).group(1)
    sentences = re.findall(r"<li>(.*?)</li>", head)
    assert 3 <= len(sentences) <= 5
    assert all(re.search(r"\d", s) for s in sentences[:3])  # numbers, not adjectives
    assert "**Headline**" in md and sentences[0].split(":")[0] in md
    glossary = page[page.index("<h2>Glossary</h2>"):]
    for name in (*DIMENSIONS, *INDICATORS, "Acc", "Iso", "D", "L_eff", "R", "Unc", "DR", "SV", "EE", "EB"):
        assert f"<dt>{name}</dt>" in glossary, name
    # hover: indicator names in the effect table and the redundancy headers carry their definition
    assert re.search(r'<span title="[^"]+">branching_factor</span>', page)
    assert re.search(r'<th title="[^"]*Shortest Effective Path[^"]*">L_eff</th>', page)
    assert re.search(r'<th class=l title="[^"]+">Breadth</th>|<th title="[^"]+">Breadth</th>', page)
    assert "## Glossary" in md and "- **hedging_density**:" in md


def test_effect_table_has_length_controlled_corrected_and_reliability(run_dir):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    for header in ("corrected model", "length-controlled model", "length-controlled ratio", "split-half"):
        assert f">{header}</th>" in page
    assert "random labels give the same traces on average, (k − 1) / (n − 1)" in page and "log tokens" in page
    # the corrected model eps2 with its bootstrap interval, and the method note saying what it is
    assert re.search(r'<td>-?[\d.]+<span class="ci">\[-?[\d.]+, -?[\d.]+\]</span></td>', page)
    assert "percentile bootstrap interval, 1000 resamples of the run" in page


def test_effect_sizes_and_the_headline_carry_their_bootstrap_intervals(tmp_path):
    import numpy as np

    from thinkprobe.report.glossary import STATS_GLOSSARY
    from thinkprobe.report.style import format_number
    from thinkprobe.report.text import effect_header, effect_rows, headline, interval_text, method_note
    from thinkprobe.stats import compute_stats

    rng = np.random.default_rng(3)
    rows = [{"trace_id": f"{m}-{k}", "model": m, "domain": ("x", "y")[k % 2], "tokens": int(rng.integers(50, 500)),
             "Depth": float(j + 0.5 * rng.normal()), "idea_count": float(j + 0.5 * rng.normal())}
            for j, m in enumerate(("a", "b", "c")) for k in range(20)]
    stats = compute_stats(write_run(tmp_path, rows))
    depth = next(e for e in stats["variables"] if e["variable"] == "Depth")
    lc = depth["length_controlled"]["model"]
    low, high = lc["eps2_corrected_ci"]
    assert (f"Depth (length-controlled ε² {format_number(lc['eps2_corrected'], 2)} [{format_number(low, 2)}, "
            f"{format_number(high, 2)}])") in headline(stats)[0]
    # a model whose reasoning is mostly a summary of hidden thinking is named there (a new user read tts_knowledge's
    # summary models' low Breadth as theirs); not one with a few summaries, nor a run of summaries alone
    assert "The reasoning of b is a summary" in headline(stats, run={"summarised_by_model": {"b": 10, "c": 3}})[0]
    assert "summary" not in headline(stats, run={"summarised_by_model": {"c": 3}})[0]
    assert "summary" not in headline(stats, run={"summarised_by_model": {"a": 20, "b": 20, "c": 20}})[0]
    # likewise a model many of whose traces are cut off before their reasoning ends (Venhoff et al.'s R1 distills,
    # 7 of 10 cut by a token cap, ranked apart with no word)
    assert "Many traces of c (7 of 20) are cut off" in headline(stats, run={"truncated_by_model": {"c": 7, "a": 1}})[0]
    assert "cut off" not in headline(stats, run={"truncated_by_model": {"c": 5}})[0]
    # and models whose answer sections hold many of their units where others' hold few (a new user: Claude 3.7
    # Sonnet's lead in Depth was half its worked answers, 38% of its units, beside 1% of Qwen3-8B's)
    answers = {"a": {"answer": 38, "units": 100}, "b": {"answer": 1, "units": 100}, "c": {"answer": 13, "units": 100}}
    said = headline(stats, run={"answer_units_by_model": answers})[0]
    assert "The answer sections of a (38% of its units) are part of their Thought Graphs and profiles, beside 1%-13% " \
           "of the units of b and c" in said
    alike = {m: {"answer": 30, "units": 100} for m in "abc"}
    assert "answer sections" not in headline(stats, run={"answer_units_by_model": alike})[0]
    cells = dict(zip(effect_header(stats), effect_rows(stats, html_out=False)[stats["variables"].index(depth)]))
    assert cells["corrected model"] == (format_number(depth["model"]["eps2_corrected"], 2)
                                        + interval_text(depth["model"]["eps2_corrected_ci"]))
    assert re.fullmatch(r"[\d.]+ \[[\d.]+, [\d.]+\] \*", cells["length-controlled model"])
    for column, key in (("ratio", "ratio_corrected"), ("length-controlled ratio", "ratio_length_corrected")):
        found = re.fullmatch(r"(≥ |≤ )?[\d.]+ \[(≤)?[\d.]+, (≥)?[\d.]+\]", cells[column])
        assert found, cells[column]
        # an end is marked where more resamples than its tail (2.5%) floored that side: it is then a bound
        floored = depth[key]["ci_floored"]
        assert (found.group(2) is not None, found.group(3) is not None) == (floored["model"] > 0.025,
                                                                          floored["domain"] > 0.025), floored
    assert "[" not in cells["corrected domain"]  # the domain's intervals are in stats.json only
    note = method_note(stats)
    assert "95% percentile bootstrap interval, 1000 resamples of the run's traces with replacement (seed 0)" in note
    assert "residuals of the whole-run fit resampled" in note and "both under: 1" in note
    assert "bootstrap interval" in STATS_GLOSSARY
    # a stats.json written before the intervals reads as before: no brackets, no interval note
    old = json.loads(json.dumps(stats).replace('"eps2_corrected_ci"', '"gone"').replace('"ci"', '"gone2"'))
    del old["settings"]["effect_intervals"]
    assert "[" not in headline(old)[0] and "percentile bootstrap interval" not in method_note(old)
    assert "[" not in dict(zip(effect_header(old), effect_rows(old, html_out=False)[0]))["ratio"]
    # the effects figure draws each interval through its bar, and none for the old stats.json
    from thinkprobe.report.figures import effects_figure

    def error_bars(stats_json):
        fig = effects_figure(stats_json)
        return [c.errorbar for ax in fig.axes for c in ax.containers if hasattr(c, "errorbar")], fig.get_suptitle()
    bars, title = error_bars(stats)
    assert bars and all(b is not None for b in bars) and "95% bootstrap intervals" in title
    bars, title = error_bars(old)
    assert bars and all(b is None for b in bars) and "bootstrap" not in title


def test_acc_has_its_own_n(tmp_path):
    rows = [{"trace_id": t, "model": m, "domain": d} for t, m, d, _ in TRACES[:6]]
    graphs = [make_graph(*t) for t in TRACES[:6]]
    for g in graphs[2:]:  # two graded traces: the others have no gold answer
        g["gold_answer"] = g["correct"] = None
    run = write_run(tmp_path, rows, graphs)
    page = write_report(run).read_text(encoding="utf-8")  # redundancy.csv made from graphs.jsonl
    red = page[page.index("<h2>Redundancy"):page.index("<h2>Traces")]
    assert ">n (Acc)</th>" in red
    r1 = re.search(r"<tr><td class=l>r1</td><td>3</td><td>([^<]*)</td><td>(\d+)</td>", red)
    assert r1 and r1.group(2) == "2"  # Acc of r1 is over its 2 graded traces, not its 3


def test_trace_ids_sort_as_numbers(tmp_path):
    traces = [(f"t{k}", "m" if k % 2 else "n", "d", 3) for k in (10, 2, 1, 33, 4)]
    run = write_run(tmp_path, [{"trace_id": t, "model": m, "domain": d} for t, m, d, _ in traces],
                    [make_graph(*t) for t in traces])
    page = write_report(run).read_text(encoding="utf-8")
    table = page[page.index("<h2>Traces"):]
    assert re.findall(r'href="traces/(t\d+)\.html"', table) == ["t1", "t2", "t4", "t10", "t33"]


def test_one_model_has_no_radar_and_says_why(tmp_path):
    traces = [(f"only-{k}", "solo", "math" if k % 2 else "logic", 5 + k) for k in range(4)]
    run = write_run(tmp_path, [{"trace_id": t, "model": m, "domain": d} for t, m, d, _ in traces],
                    [make_graph(*t) for t in traces])
    page = write_report(run).read_text(encoding="utf-8")
    assert "No radar chart: the run has one model" in page
    assert not (run / "figures" / "radar.png").exists()
    assert "with one model there are no model differences" in page


def test_figures_keep_every_text_inside_the_canvas(run_dir):
    from matplotlib.figure import Figure

    from thinkprobe.cognitive_profile import group_profiles
    from thinkprobe.stats import compute_stats, load_table

    stats, rows = compute_stats(run_dir), load_table(run_dir)
    models = sorted({r["model"] for r in rows}) + ["a-model-with-a-long-name-32B-Instruct"]
    rows = rows + [{**rows[0], "trace_id": "extra", "model": models[-1]}]
    by_model = group_profiles(rows, ("model",))
    from thinkprobe.report import figures
    from thinkprobe.report.style import clipped_texts, figure_style

    with figure_style():
        figs = {"radar": figures.radar_figure(by_model), "indicators": figures.indicator_figure(rows, models, stats),
                "effects": figures.effects_figure(stats),
                "heatmap": figures.heatmap_figure(group_profiles(rows, ("model", "domain")), models, ["logic", "math"]),
                "graph": figures.graph_figure(make_graph("g", "m", "d", 400))}
        for name, fig in figs.items():
            assert clipped_texts(fig) == [], name
        # every model named down the indicators heat map, every indicator along it
        heat = figs["indicators"].axes[0]
        assert [t.get_text() for t in heat.get_yticklabels()] == models
        assert [t.get_text().split(" (")[0] for t in heat.get_xticklabels()] == [
            n for names in DIMENSIONS.values() for n in names]
        # the check can fail: a title pushed off the canvas is found
        bad = Figure(figsize=(3, 2))
        bad.text(-0.2, 0.5, "odel profiles")
        assert clipped_texts(bad) == ["odel profiles"]


def test_long_trace_page_has_zoom_and_a_visible_legend(tmp_path):
    run = write_run(tmp_path, [{"trace_id": "long", "model": "m", "domain": "d"}],
                    [make_graph("long", "m", "d", 1052)])
    page = write_trace_view(run, "long").read_text(encoding="utf-8")
    assert 'data-zoom="fit"' in page and 'data-zoom="in"' in page and 'id="graph"' in page
    assert "inference (" in page and "critique (" in page  # edge legend in the page, not only in the image


def test_report_has_the_unusual_traces_and_model_choice_sections(run_dir):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    for title in ("Unusual traces and failure risk", "Which model for which domain"):
        assert f"<h2>{title}</h2>" in page and f"## {title}" in md
    glossary = page[page.index("<h2>Glossary</h2>"):]
    for name in ("anomaly", "drivers", "failure_risk", "fit", "tier"):
        assert f"<dt>{name}</dt>" in glossary, name


def test_trace_tables_order_hash_ids_plainly_and_numbered_ids_as_numbers():
    """Schoenfeld's hex ids were ordered by their leading digits (9d159400 before 33e29881 before
    0700a2d5); numbered ids keep t2 before t10."""
    from thinkprobe.report.writer import sorted_by_id

    def ids(*names):
        return [r["trace_id"] for r in sorted_by_id([{"trace_id": n} for n in names])]

    assert ids("9d159400", "33e29881", "0700a2d5", "113b938e") == ["0700a2d5", "113b938e", "33e29881", "9d159400"]
    assert ids("t10", "t2", "t1") == ["t1", "t2", "t10"]
    assert ids("f:10", "f:2", "f:100") == ["f:2", "f:10", "f:100"]
    assert ids("100000000", "99999999") == ["99999999", "100000000"]  # long numbers are no hashes


def test_control_characters_and_bidi_overrides_from_the_data_are_shown_not_obeyed(tmp_path):
    """A red-team probe: model names and ids carrying an ESC sequence, a NUL or U+202E (which shows
    "evil\u202egnp.exe" as "evilexe.png") reached report.html, report.md, the trace pages and the figure
    labels as they were, and a model named with two dollar signs stopped the report (matplotlib read it
    as a formula)."""
    import warnings

    names = ["gpt\x1b[31mRED", "evil\u202egnp.exe", "cost $x^$ two", "nul\x00model"]
    traces = [(f"t{k}\u2066", names[k % 4], "xy"[k % 2], 4 + k % 3) for k in range(16)]
    rows = [{"trace_id": t, "model": m, "domain": d, "units": n + 1, "edges": n, "tokens": 9 * n,
             **{name: ((k + 1) * (j + 2)) % 7 / 7 for j, name in enumerate(INDICATORS)},
             **{dim: (k % 4) * 0.3 + j * 0.1 for j, dim in enumerate(DIMENSIONS)}}
            for k, (t, m, d, n) in enumerate(traces)]
    write_run(tmp_path, rows, [make_graph(*t) for t in traces])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a control character drawn in a figure: "Glyph 27 missing from font"
        write_report(tmp_path)
    pages = [tmp_path / "report.html", tmp_path / "report.md", *sorted((tmp_path / "traces").glob("*.html"))]
    assert len(pages) == 2 + len(traces)
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]", text), page.name
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    for shown in ("gpt\\x1b[31mRED", "evil\\u202egnp.exe", "cost $x^$ two", "nul\\x00model"):
        assert shown in md, shown
    assert "t0\\u2066" in (tmp_path / "report.html").read_text(encoding="utf-8")

    # a carriage return (a model "gpt\r" from CRLF data) has no glyph either: drawn as an escape
    from matplotlib.figure import Figure

    from thinkprobe.report.style import figure_style, png_bytes

    with figure_style(), warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = Figure(figsize=(3, 2))
        ax = fig.add_subplot()
        ax.set_yticks([0, 1], ["gpt\r", "ok"])
        fig.legend(handles=ax.plot([0, 1], label="gpt\r"))
        png_bytes(fig, 50)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["gpt\\r", "ok"]


def test_a_number_leading_its_cell_sorts_as_that_number():
    from thinkprobe.report.markup import SORT_KEY_JS

    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to run the report's sort key with")
    cells = ["0.03 *", "0.004 *", "≥ 9.94 [3.32, 17.1]", "−0.5", "12%", "1e-3", "r1-math-10", "12-a"]
    out = subprocess.run([node, "-e", SORT_KEY_JS + f"console.log(JSON.stringify({json.dumps(cells)}.map(sortKey)))"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [0.03, 0.004, 9.94, -0.5, 12, 0.001, "r1-math-10", "12-a"]


def test_the_headline_gives_the_reliability_after_length_control_too(tmp_path):
    """The headline leads with length-controlled differences; its reliability sentence gave the raw split-half
    alone (0.95-0.98 on tts_knowledge, where Breadth's after length control is 0.75). A dimension whose model
    differences are all length has a high raw and a low length-controlled reliability, named."""
    import numpy as np

    from thinkprobe.report.text import headline
    from thinkprobe.stats import compute_stats

    rng = np.random.default_rng(2)
    rows = []
    for j, m in enumerate("abcd"):
        for k in range(20):
            tokens = int(100 * 2 ** j * rng.uniform(0.8, 1.25))
            rows.append({"trace_id": f"{m}-{k}", "model": m, "domain": "xy"[k % 2], "tokens": tokens,
                         "Depth": float(np.log(tokens) + 0.05 * rng.normal())})
    stats = compute_stats(write_run(tmp_path, rows))
    depth = next(e for e in stats["variables"] if e["variable"] == "Depth")["reliability"]
    raw, lc = depth["split_half"]["spearman_brown"], depth["split_half_length_controlled"]["spearman_brown"]
    assert raw > 0.9 and lc < 0.7
    sentence = next(h for h in headline(stats) if h.startswith("Split-half reliability"))
    from thinkprobe.report.style import format_number

    shown = format_number(lc, 2)
    assert f"({shown}–{shown} after length control, under 0.7: Depth's {shown})" in sentence, sentence
