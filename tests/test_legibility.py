"""Report legibility with many models (issue 41, item 7), on a hand-built run of 10 models with
long names like real ones and 1 to 6 traces each (no encoder): no text of any figure overlaps
another or leaves the canvas, no text is too small to read at page width, models with few traces
are points in the position plot, per-trace pages show the verdict, the 5D profile and the flags,
`thinkprobe graph` takes the record's own id, and a single-model run says why its z-scores are 0."""
import re

import pytest
from click.testing import CliRunner
from matplotlib.figure import Figure

from thinkprobe.cli import SINGLE_MODEL_NOTE, format_summary, main
from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.report import write_report, write_trace_view
from thinkprobe.report.cot_figures import MIN_DENSITY_TRACES, positions_figure
from thinkprobe.report.glossary import GLOSSARY
from thinkprobe.report.style import FIGURE_DPI, clipped_texts, figure_style, overlapping_texts
from thinkprobe.report.writer import cot_tables, figure_makers, load_analyses
from thinkprobe.stats import compute_stats, load_table

from run_folder import make_graph, write_run
from test_report import _probe, _render, browser  # noqa: F401  (the Chromium fixture)

MODELS = {"DeepSeek-R1-Distill-Qwen-14B": 6, "DeepSeek-R1-Distill-Qwen-7B": 5, "DeepSeek-R1-Distill-Llama-8B": 4,
          "DeepSeek-R1-Distill-Qwen-32B": 1, "QwQ-32B-Preview": 3, "Qwen3-8B": 3, "Qwen3-14B": 2,
          "gpt-oss-20b": 3, "s1.1-32B": 2, "LIMO-32B-Instruct": 4}
PAGE_PX = 1152  # the report's column: max-width 1200px less its padding
MIN_TEXT_PX = 7.5  # smallest text a figure may show once scaled to that column


def _ten_models(run_dir):
    rows, graphs, k = [], [], 0
    for model, n in MODELS.items():
        for j in range(n):
            trace_id, domain = f"{model}-{j}", ("math", "logic")[j % 2]
            row = {"trace_id": trace_id, "model": model, "domain": domain, "units": 8 + k % 9, "edges": 7 + k % 9,
                   "tokens": 60 + 13 * (k % 11)}
            row.update({name: ((k + 1) * (i + 2)) % 9 / 9 for i, name in enumerate(INDICATORS)})
            row.update({dim: ((k * (i + 3)) % 7 - 3) / 3 for i, dim in enumerate(DIMENSIONS)})
            rows.append(row)
            g = make_graph(trace_id, model, domain, 7 + (k * 5) % 23)
            g["provenance"] = {"source_id": f"q{j}", "correct_from": "correct"}
            if k % 3 == 0:  # some wrong answers, for the outcome and transition figures
                g["correct"], g["gold_answer"] = False, "41"
            graphs.append(g)
            k += 1
    graphs[0]["provenance"].update(untagged=True, truncated=True, source_id="only-one")
    return write_run(run_dir, rows, graphs)


@pytest.fixture(scope="module")
def ten_run(tmp_path_factory):
    run = _ten_models(tmp_path_factory.mktemp("ten"))
    write_report(run)
    return run


@pytest.fixture(scope="module")
def ten_figures(ten_run):
    stats, rows = compute_stats(ten_run), load_table(ten_run)
    with figure_style():
        figs = {name: make() for name, make in figure_makers(ten_run, stats, rows, load_analyses(ten_run)).items()}
    return {name: fig for name, fig in figs.items() if fig is not None}


def test_every_figure_is_drawn(ten_figures):
    assert set(ten_figures) >= {"radar", "indicators", "heatmap", "effects", "positions", "outcome_tokens",
                                "lengths", "transitions", "pareto", "roles", "dynamics"}


def test_no_text_overlaps_another_or_leaves_the_canvas(ten_figures):
    with figure_style():
        for name, fig in ten_figures.items():
            assert overlapping_texts(fig) == [], name
            assert clipped_texts(fig) == [], name


def test_no_text_is_raw_mathtext(ten_figures):
    """A new user's lengths.png and outcome_tokens.png labelled their log axes "$\\mathdefault{10^{2}}$": the
    report's style turns mathtext off (a model's name is never a formula), and the log scale's labels use it."""
    from matplotlib.text import Text

    from thinkprobe.report.cot_figures import _token_axis

    def raw(fig) -> list[str]:
        fig.canvas.draw()
        return [t for t in (x.get_text() for x in fig.findobj(Text) if x.get_visible())
                if "\\mathdefault" in t or re.fullmatch(r"\$.*\$", t)]

    with figure_style():
        for name, fig in ten_figures.items():
            assert not raw(fig), name
        fig = Figure()
        ax = fig.subplots()
        ax.plot([50, 5000], [0, 1])  # three decades of tokens: the ten models' traces span less than one
        _token_axis(ax, "tokens")
        assert not raw(fig) and [t.get_text() for t in ax.get_xticklabels()] == ["10", "100", "1,000", "10,000"]


def test_every_text_is_readable_at_page_width(ten_figures):
    from matplotlib.text import Text

    for name, fig in ten_figures.items():
        width_px = fig.get_size_inches()[0] * FIGURE_DPI
        smallest = min(t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip())
        assert smallest * FIGURE_DPI / 72 * min(1.0, PAGE_PX / width_px) >= MIN_TEXT_PX, name


def test_the_checks_can_fail():
    with figure_style():
        crowded = Figure(figsize=(6, 3))
        ax = crowded.add_subplot()
        ax.set_xticks(range(len(MODELS)), list(MODELS))  # ten long names side by side, as the old figures had them
        assert overlapping_texts(crowded)
        turned = Figure(figsize=(12, 4), layout="constrained")
        ax = turned.add_subplot()
        ax.set_xticks(range(len(INDICATORS)), INDICATORS, rotation=40, ha="right", rotation_mode="anchor")
        assert overlapping_texts(turned) == []  # rotated labels by their turned boxes: side by side, not overlapping
        ax.set_xticks(range(len(INDICATORS)), INDICATORS, rotation=0)
        assert overlapping_texts(turned)
    grid = Figure(figsize=(4 * (0.45 * len(MODELS) + 1.2), 5 * 3))  # the 19-panel box-plot grid of 10 models
    assert 8.5 * FIGURE_DPI / 72 * PAGE_PX / (grid.get_size_inches()[0] * FIGURE_DPI) < MIN_TEXT_PX


def test_models_with_few_traces_are_points_in_the_position_plot(ten_run):
    rows = cot_tables(ten_run)
    with figure_style():
        fig = positions_figure(rows["positions.csv"], rows["traces"])
    dense_ax, sparse_ax = fig.axes[:2]
    lines = {line.get_label().split(" (")[0] for line in dense_ax.get_lines() if not line.get_label().startswith("_")}
    assert lines == {m for m, n in MODELS.items() if n >= MIN_DENSITY_TRACES}
    named = [t.get_text().split(" (")[0] for t in sparse_ax.get_yticklabels()]
    assert named == sorted(m for m, n in MODELS.items() if n < MIN_DENSITY_TRACES)
    assert sparse_ax.collections and not sparse_ax.get_lines()  # points, no density lines


def test_a_model_has_one_colour_in_every_figure(ten_run, tmp_path):
    """Each figure coloured the models by their place in its own list: in a run mixing graded and
    ungraded corpora, the Pareto plot (graded models only) shifted every colour after a model it left
    out, against the radar's. Now by their place among the run's models (figure_makers)."""
    import csv
    import shutil

    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D

    from thinkprobe.report.style import MODEL_PALETTE

    run, order = tmp_path / "run", sorted(MODELS)
    shutil.copytree(ten_run, run)
    with open(run / "pareto.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(run / "pareto.csv", "w", encoding="utf-8", newline="") as f:  # the first model without grades
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(r for r in rows if r["model"] != order[0])
    with figure_style():
        figures = {name: make() for name, make in figure_makers(run, compute_stats(run), load_table(run),
                                                                 load_analyses(run)).items()}
    seen = {}
    for name, fig in figures.items():
        for ax in fig.axes if fig is not None else ():
            for handle, label in zip(*ax.get_legend_handles_labels()):
                if (model := label.removeprefix("★ ").split(" (")[0]) in MODELS:
                    colour = handle.get_color() if isinstance(handle, Line2D) else handle.get_facecolor()[0]
                    seen.setdefault(model, {})[name] = to_hex(colour)
    assert "pareto" not in seen[order[0]] and all("pareto" in seen[m] and "radar" in seen[m] for m in order[1:])
    for model, colours in seen.items():
        assert set(colours.values()) == {MODEL_PALETTE[order.index(model) % len(MODEL_PALETTE)]}, (model, colours)


def test_indicators_are_one_heat_map_not_nineteen_panels(ten_run, ten_figures):
    fig = ten_figures["indicators"]
    assert len([ax for ax in fig.axes if ax.images]) == 1
    page = (ten_run / "report.html").read_text(encoding="utf-8")
    assert 'alt="Heat map of the median of every indicator by model"' in page and "boxplots" not in page


def test_a_grouping_nothing_can_be_tested_by_draws_no_bars_and_says_why(tmp_path):
    """One domain: the effect figure has no 'by domain' bars or legend entry (every one would read 'not
    testable'), and its title says why. The difficulty lines break at a level no trace reached."""
    import math

    from thinkprobe.report.cot_figures import difficulty_figure
    from thinkprobe.report.figures import effects_figure

    rows = [{"trace_id": f"{m}-{k}", "model": m, "domain": "math", "idea_count": k + (3 if m == "b" else 0)}
            for m in ("a", "b", "c") for k in range(4)]
    with figure_style():
        fig = effects_figure(compute_stats(write_run(tmp_path, rows)))
        labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        assert labels == ["by model"] and "by domain: not testable" in fig._suptitle.get_text()
        levels = [{"model": "a", "level": 2, "n": 3, "D": 1.5, "R": 0.2}, {"model": "a", "level": 5, "n": 2, "D": 2.0, "R": 0.4}]
        line = difficulty_figure(levels).axes[0].get_lines()[0]
        assert list(line.get_xdata()) == [1, 2, 3, 4, 5]
        assert [math.isnan(v) for v in line.get_ydata()] == [True, False, True, True, False]


def test_the_profile_caption_names_what_zero_is(tmp_path):
    import json

    from thinkprobe.report.coverage import run_json
    from thinkprobe.report.text import profile_note

    rows = [{"trace_id": f"{m}-{k}", "model": m, "domain": "math", "idea_count": k} for m in "ab" for k in range(3)]
    stats = compute_stats(write_run(tmp_path / "run", rows))
    (tmp_path / "run" / "run.json").write_text(json.dumps({"norms": "fit on this run"}))
    assert profile_note(stats, run_json(tmp_path / "run")).split(" Means follow")[0].endswith("; 0 is this run's mean.")
    (tmp_path / "run" / "run.json").write_text(json.dumps({"norms": "ref/norms.json"}))
    assert profile_note(stats, run_json(tmp_path / "run")).split(" Means follow")[0].endswith("; 0 is the mean of the norms in ref/norms.json.")
    assert "95% bootstrap interval" in profile_note(stats)


def test_the_profile_caption_names_the_indicators_one_value_holds(tmp_path):
    """perspective_taking is 0 in every trace of many runs (tts_knowledge, BIG-Bench Mistake): its z is
    0 and Metacognition, the mean of four z-scores, was 3/4 of what its other three give, unsaid;
    BIG-Bench Mistake's Structure was 0 in every trace."""
    import json

    from thinkprobe.report.coverage import run_json
    from thinkprobe.report.text import profile_note

    varied = ("self_reflection_rate", "critique_ratio", "hedging_density", *DIMENSIONS["Breadth"])
    rows = [{"trace_id": f"{m}-{k}", "model": m, "domain": "math", **{n: k + j for j, n in enumerate(varied)}}
            for m in "ab" for k in range(3)]
    run = write_run(tmp_path / "run", rows)
    (run / "run.json").write_text(json.dumps({"norms": "fit on this run"}))
    note = profile_note(compute_stats(run), run_json(run), load_table(run))
    assert ("perspective_taking (one value in every trace, z 0) still counts in Metacognition's mean, which is 3/4 "
            "of what its other indicators alone give") in note
    assert "Depth is 0 in every trace: each of its indicators (" in note and "Breadth" not in note
    (run / "run.json").write_text(json.dumps({"norms": "ref/norms.json"}))  # z against other norms: not 0
    assert "one value" not in profile_note(compute_stats(run), run_json(run), load_table(run))


def test_trace_page_shows_verdict_profile_and_flags(ten_run):
    flagged = (ten_run / "traces" / "DeepSeek-R1-Distill-Qwen-14B-0.html").read_text(encoding="utf-8")
    assert '<span class="verdict incorrect">incorrect: from the record&#x27;s grade, field correct' in flagged
    assert "untagged: no reasoning field" in flagged and "truncated: the reasoning section was cut off" in flagged
    profile = flagged[flagged.index("<h2>5D profile</h2>"):flagged.index("<h2>5D profile</h2>") + 1500]
    for dim in DIMENSIONS:
        assert re.search(rf"<th[^>]*>{dim}</th>", profile)
    assert "against this run" in profile
    plain = (ten_run / "traces" / "DeepSeek-R1-Distill-Qwen-14B-1.html").read_text(encoding="utf-8")
    assert '<span class="verdict correct">correct: ' in plain and "<td class=l>none</td>" in plain
    # the final answer the verdict judged, read where the page is (a misread answer had been seen nowhere)
    from thinkprobe.report.trace_pages import _final_answer

    assert "<td class=l>final answer</td><td class=l>none found</td>" in plain.replace("\n", "")
    cut = {"redundancy": {"final_answer": {"unit": 50, "value": "Prof. Dr. Tuncer Karpuzoğlu", "kind": "phrase"}}}
    assert _final_answer(cut) == "Prof. Dr. Tuncer Karpuzoğlu (phrase, unit 50)"


def test_graph_takes_the_record_id(ten_run, tmp_path):
    result = CliRunner().invoke(main, ["graph", str(ten_run), "only-one", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("DeepSeek-R1-Distill-Qwen-14B-0.html")
    # a record id several traces share: refused, naming them
    with pytest.raises(ValueError, match=r"record id of \d+ traces"):
        write_trace_view(ten_run, "q1", out=tmp_path)
    result = CliRunner().invoke(main, ["graph", str(ten_run), "no-such-id"])
    assert result.exit_code != 0 and "not found" in result.output
    # the Python API finds what the command finds (it had refused a record's own id)
    import shutil

    from thinkprobe import Run

    shutil.copytree(ten_run, tmp_path / "run")
    (tmp_path / "run" / "run.json").write_text("{}", encoding="utf-8")  # the hand-built run has none
    run = Run(tmp_path / "run")
    assert run.graph("only-one")["trace_id"] == "DeepSeek-R1-Distill-Qwen-14B-0"
    assert run.graph("DeepSeek-R1-Distill-Qwen-14B-0") == run.graph("only-one")
    for refused, said in (("q1", "record id of"), ("no-such-id", "not found")):
        with pytest.raises(KeyError, match=said):
            run.graph(refused)


def test_every_table_header_is_defined(ten_run):
    page = (ten_run / "report.html").read_text(encoding="utf-8")
    labels = {"model", "domain", "group", "trace", "variable", "indicator", "value", "type", "src", "dst", ""}
    for attrs, text in re.findall(r"<th((?:\s[^>]*)?)>(.*?)</th>", page):
        if text not in labels:
            assert re.search(r'title="[^"]+"', attrs), f"header {text!r} has no definition"
    glossary = page[page.index("<h2>Glossary</h2>"):]
    for term in ("units", "edges", "tokens", "verdict", "flags", "median z-score", "95% interval"):
        assert f"<dt>{term}</dt>" in glossary and term in GLOSSARY


def test_a_single_model_run_says_why_its_z_scores_are_zero(tmp_path):
    traces = [(f"solo-{k}", "DeepSeek-R1-Distill-Qwen-14B", "math", 5 + k) for k in range(4)]
    rows = [{"trace_id": t, "model": m, "domain": d, **{dim: 1e-7 * (k - 1.5) for dim in DIMENSIONS}}
            for k, (t, m, d, _) in enumerate(traces)]  # profile.csv's rounding noise around 0
    run = write_run(tmp_path, rows, [make_graph(*t) for t in traces])
    page = write_report(run).read_text(encoding="utf-8")
    assert "0 on every dimension by construction" in page and "--norms NORMS.json" in page
    profiles = page[page.index("<h2>Model profiles</h2>"):page.index("<h2>Effect sizes")]
    assert not (run / "figures" / "radar.png").exists() and "e-0" not in profiles and ">0.00 [" in profiles
    summary = {"traces": 4, "out_dir": "out", "resumed": 0, "errors": 0, "model_profiles": [
        {"model": "DeepSeek-R1-Distill-Qwen-14B", "n": 4, **{dim: -2e-7 for dim in DIMENSIONS}}]}
    text = format_summary(summary)
    assert SINGLE_MODEL_NOTE in text and "-0.000" not in text
    assert SINGLE_MODEL_NOTE not in format_summary({**summary, "norms": "reference/norms.json"})


def test_ten_model_report_renders_in_chromium(ten_run, browser, tmp_path):  # noqa: F811
    dom, console = _render(browser, _probe(ten_run / "report.html"), tmp_path / "profile", 1200)
    assert console == []
    probe = re.search(r'data-probe="images=(\d+);broken=(\d+)', dom)
    assert probe and int(probe.group(2)) == 0 and int(probe.group(1)) >= 11
    bounds = re.search(r'data-bounds="vw=(\d+);bad=([^"]*)"', dom)
    assert bounds and bounds.group(2) == "", bounds.group(2)
    dom, console = _render(browser, _probe(ten_run / "traces" / "DeepSeek-R1-Distill-Qwen-14B-0.html"),
                           tmp_path / "profile", 1200)
    assert console == [] and "verdict incorrect" in dom


def test_both_effect_panels_are_beyond_chance_and_small_numbers_keep_their_size(tmp_path):
    """A review: the left panel drew ε² itself under a section 'beyond length and chance', where chance
    alone ((k − 1) / (n − 1)) gives a factor of more levels the longer bar; and 0.0044 printed '0.00'
    beside '0.00039'."""
    from thinkprobe.report.figures import effects_figure
    from thinkprobe.report.style import format_number

    rng = __import__("numpy").random.default_rng(0)
    rows = [{"trace_id": f"{m}-{k}", "model": m, "domain": "xy"[k % 2], "tokens": 50 + k,
             "idea_count": float(rng.normal())} for m in "abcd" for k in range(10)]
    stats = compute_stats(write_run(tmp_path, rows))
    entry = next(e for e in stats["variables"] if e["variable"] == "idea_count")
    with figure_style():
        fig = effects_figure(stats)
    left = fig.axes[0]
    assert left.get_title() == "ε² − chance ε²"
    widths = [p.get_width() for p in left.patches]
    assert entry["model"]["eps2_corrected"] in [__import__("pytest").approx(w) for w in widths]
    assert entry["model"]["eps2"] not in widths
    assert [format_number(x) for x in (0.0044, 0.00039, 0.031, 1.185)] == ["0.0044", "0.00039", "0.031", "1.185"]
    # a value that rounds up to the first shown decimal keeps the column's decimals: "-0.10" beside "-0.21", not "-0.1"
    assert [format_number(x, 2) for x in (-0.0998, 0.0044, 0.21)] == ["-0.10", "0.004", "0.21"]
