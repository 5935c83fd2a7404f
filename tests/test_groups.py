"""The third grouping factor (issue 41, item 6): a design factor beside model and domain, named by
--group-field, --group or (?P<group>...) / {group} in --path-pattern. Detection on small records;
statistics, tables and the report on a hand-built run folder (no encoder); and the whole pipeline
on real tts_knowledge files whose thinking budget is in the file name."""
import csv
import io
import json
import re

import pytest

import thinkprobe
from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.io import FieldMap, parse_source
from thinkprobe.io.peek import format_peek, peek
from thinkprobe.io.traces import iter_traces
from thinkprobe.options import ProfileOptions, field_option_names
from thinkprobe.report import write_report
from thinkprobe.stats import compute_stats, stats_csv

from run_folder import make_graph, write_run
from test_report import _probe, _render, browser  # noqa: F401  (the Chromium fixture)


# --------------------------------------------------------------------------- where a group comes from


def test_group_is_declared_once_as_a_field_option():
    assert {"group_field", "group"} <= set(field_option_names())
    opts = ProfileOptions(group_field="condition", path_pattern="{model}_{domain}_{group}.jsonl")
    assert opts.field_map.group_field == "condition"
    assert "group_field" in thinkprobe.profile.__doc__ and "group" in thinkprobe.profile.__doc__


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_group_from_a_field_a_constant_and_the_path(tmp_path):
    records = [{"id": "a", "response": "<think>Plan.</think>4", "condition": "missing-premise"},
               {"id": "b", "response": "<think>Plan.</think>4", "condition": "normal"},
               {"id": "c", "response": "<think>Plan.</think>4"}]
    path = _write(tmp_path / "R1_gsm8k_exd2.jsonl", records)
    by_field = list(iter_traces(path, FieldMap(group_field="condition")))
    assert [t.group for t in by_field] == ["missing-premise", "normal", None]  # no made-up group for c
    assert by_field[0].provenance["group_from"] == "condition" and "group_from" not in by_field[2].provenance
    assert all(t.group is None for t in iter_traces(path))  # never guessed from the records
    assert {t.group for t in iter_traces(path, FieldMap(group="budget-0"))} == {"budget-0"}
    templated = list(iter_traces(path, FieldMap(path_pattern="{model}_{domain}_{group}.jsonl")))
    assert {(t.model, t.domain, t.group) for t in templated} == {("R1", "gsm8k", "exd2")}
    assert templated[0].provenance["group_from"] == "path"
    regex = list(iter_traces(path, FieldMap(path_pattern=r"_(?P<group>exd\d)\.jsonl$")))
    assert {t.group for t in regex} == {"exd2"}
    assert {t.group for t in iter_traces(parse_source(f"{path}::group=normal").path,
                                         parse_source(f"{path}::group=normal").fields)} == {"normal"}
    # peek shows the group and where it came from, in a column of its own only when there is one
    rows = peek(path, n=3, fields=FieldMap(group_field="condition"))
    assert [r["group"] for r in rows] == ["missing-premise", "normal", None]
    table = format_peek(rows)
    assert table.splitlines()[0].split()[:5] == ["record", "trace_id", "model", "domain", "group"]
    assert "missing-premise <- condition" in table
    assert "group" not in format_peek(peek(path, n=3)).splitlines()[0]


def test_a_path_pattern_with_an_unknown_group_name_is_refused():
    with pytest.raises(ValueError, match="group"):
        FieldMap(path_pattern="{model}_{budget}.jsonl")


# --------------------------------------------------------------------------- statistics, tables, report


def _corpus(groups):
    """24 traces: 3 models x 2 domains x 4; `groups(k)` gives trace k's group (None: none). The
    group shifts revision_depth and the Depth dimension far more than anything else does."""
    rows, graphs = [], []
    for k in range(24):
        model, domain, group = ("m1", "m2", "m3")[k % 3], ("math", "logic")[(k // 3) % 2], groups(k)
        row = {"trace_id": f"t{k}", "model": model, "domain": domain, "units": 10 + k, "edges": 9 + k,
               "tokens": 40 + 7 * ((k * 5) % 11), **({"group": group} if group else {})}
        row.update({name: ((k * (j + 3)) % 13) / 13 for j, name in enumerate(INDICATORS)})
        row.update({dim: ((k * (j + 2)) % 7 - 3) / 3 for j, dim in enumerate(DIMENSIONS)})
        if group == "high":
            row["revision_depth"] += 5.0
            row["Depth"] += 4.0
        rows.append(row)
        graphs.append(make_graph(f"t{k}", model, domain, 6 + k % 5, group=group))
    return rows, graphs


@pytest.fixture(scope="module")
def grouped_run(tmp_path_factory):
    rows, graphs = _corpus(lambda k: "high" if k % 2 else "low")
    run = write_run(tmp_path_factory.mktemp("grouped"), rows, graphs)
    write_report(run)
    return run


def _entry(stats, name):
    return next(e for e in stats["variables"] if e["variable"] == name)


def test_kruskal_wallis_by_group(grouped_run):
    stats = compute_stats(grouped_run)
    assert stats["groupings"]["group"]["groups"] == {"high": 12, "low": 12}
    depth = _entry(stats, "revision_depth")
    assert depth["group"]["status"] == "ok" and depth["group"]["k"] == 2 and depth["group"]["n"] == 24
    assert depth["group"]["eps2"] > 0.5 and depth["group"]["significant"]
    assert depth["group"]["eps2_corrected"] < depth["group"]["eps2"]  # chance-corrected
    assert depth["length_controlled"]["group"]["status"] == "ok"
    assert depth["length_controlled"]["group"]["eps2_corrected"] > 0.3  # not explained by length
    # the group is tested as the domain is, in the same Holm families
    tested = {by: sum(e[by]["status"] == "ok" for e in stats["variables"]) for by in ("model", "domain", "group")}
    assert tested["group"] >= len(INDICATORS) and stats["settings"]["family_size"] == sum(tested.values())
    unaffected = _entry(stats, "branching_factor")["group"]
    assert unaffected["status"] == "ok" and unaffected["eps2"] < depth["group"]["eps2"]
    rows = list(csv.DictReader(io.StringIO(stats_csv(stats))))
    assert float(next(r for r in rows if r["variable"] == "revision_depth")["eps2_group"]) > 0.5


def test_traces_without_a_group_take_no_part(tmp_path):
    rows, graphs = _corpus(lambda k: None if k < 6 else ("high" if k % 2 else "low"))
    stats = compute_stats(write_run(tmp_path / "some", rows, graphs))
    assert stats["groupings"]["group"]["groups"] == {"high": 9, "low": 9}
    assert _entry(stats, "revision_depth")["group"]["n"] == 18
    rows, graphs = _corpus(lambda k: None)
    run = write_run(tmp_path / "none", rows, graphs)
    stats = compute_stats(run)
    assert "group" not in stats["groupings"] and "group" not in _entry(stats, "Depth")
    assert stats["settings"]["family_size"] == sum(e[by]["status"] == "ok" for e in stats["variables"]
                                                   for by in ("model", "domain"))
    table = list(csv.DictReader(io.StringIO(stats_csv(stats))))
    assert "eps2_group" in table[0] and {r["eps2_group"] for r in table} == {""}  # one schema, empty cells
    page = write_report(run).read_text(encoding="utf-8")
    assert "Model × group profiles" not in page and ">ε² group</th>" not in page
    assert not (run / "figures" / "group_heatmap.png").exists() and "A third grouping factor, the group" not in page


def test_report_has_the_group(grouped_run):
    page = (grouped_run / "report.html").read_text(encoding="utf-8")
    md = (grouped_run / "report.md").read_text(encoding="utf-8")
    assert "<h2>Model × group profiles</h2>" in page and "## Model × group profiles" in md
    assert (grouped_run / "figures" / "group_heatmap.png").read_bytes().startswith(b"\x89PNG")
    for header in ("ε² group", "corrected group", "length-controlled group"):
        assert f">{header}</th>" in page
    assert "A third grouping factor, the group, has 2 values (high: 12, low: 12 traces)" in page
    assert re.search(r"The group matters most for Depth \(length-controlled ε² [\d.]+ \[-?[\d.]+, [\d.]+\]\)", page)  # with its interval
    traces = page[page.index("<h2>Traces"):]
    assert "<th>group</th>" in traces or re.search(r"<th[^>]*>group</th>", traces)
    assert "<td>high</td>" in traces or "<td class=l>high</td>" in traces
    assert "| group |" in md


def test_grouped_report_fits_a_narrow_window_in_chromium(grouped_run, browser, tmp_path):  # noqa: F811
    # the effect table has three more columns with a group: still no column behind a scroll bar at 1000 px
    dom, console = _render(browser, _probe(grouped_run / "report.html"), tmp_path / "profile", 1000)
    assert console == []
    bounds = re.search(r'data-bounds="vw=(\d+);bad=([^"]*)"', dom)
    assert bounds and bounds.group(2) == "", bounds.group(2)


# --------------------------------------------------------------------------- real files: tts_knowledge budgets


@pytest.fixture(scope="module")
def budget_run(shared_data, tmp_path_factory):
    folder = shared_data / "tts_knowledge" / "outputs" / "qwen3-8b"
    files = [folder / f"Qwen3-8B_simpleqa_{b}.jsonl.gz" for b in ("exd0", "exd2", "exd4")]
    missing = [f.name for f in files if not f.exists()]
    if missing:
        pytest.skip(f"tts_knowledge files not found: {missing}")
    out = tmp_path_factory.mktemp("budgets") / "out"
    run = thinkprobe.profile([str(f) for f in files], out, path_pattern="{model}_{domain}_{group}.jsonl.gz",
                             sample=9, device="cpu", progress=False, cache=False)
    return run


def test_budget_from_the_file_name_is_a_group(budget_run):
    run = budget_run.folder
    profile = list(csv.DictReader(open(run / "profile.csv", encoding="utf-8")))
    assert profile and {r["model"] for r in profile} == {"Qwen3-8B"} and {r["domain"] for r in profile} == {"simpleqa"}
    groups = {r["group"] for r in profile}
    assert groups <= {"exd0", "exd2", "exd4"} and len(groups) >= 2
    by_group = list(csv.DictReader(open(run / "model_group_profiles.csv", encoding="utf-8")))
    assert {r["group"] for r in by_group} == groups and sum(int(r["n"]) for r in by_group) == len(profile)
    info = json.loads((run / "run.json").read_text(encoding="utf-8"))["group"]
    assert info["from"] == {"path": len(profile)} and info["traces_without_group"] == 0
    stats = json.loads((run / "stats.json").read_text(encoding="utf-8"))
    assert set(stats["groupings"]["group"]["groups"]) == groups
    # one model, one domain: those are not testable, the budget is
    depth = _entry(stats, "Depth")
    assert depth["model"]["status"] == "not testable" and depth["domain"]["status"] == "not testable"
    assert depth["group"]["status"] in ("ok", "not testable") and depth["group"]["n"] >= 2
    assert budget_run.model_group_profiles["group"].tolist() == sorted(groups)
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "<h2>Model × group profiles</h2>" in page and ">ε² group</th>" in page


# --------------------------------------------------------------------------- real files: MiP-Overthinking conditions


def test_mip_condition_from_the_folder_layout_is_a_group(shared_data):
    """MiP-Overthinking keeps its design factor in the folder: response/<dataset>/<normal|MiP>/<model>/;
    the README's template names it the group, beside the model and the domain (issue 41, "groups people have")."""
    root = shared_data / "mip_overthinking" / "response" / "math"
    files = [root / condition / "s1.1" / "response.json.gz" for condition in ("normal", "MiP")]
    if not all(f.exists() for f in files):
        pytest.skip(f"MiP-Overthinking s1.1 MATH responses not found under {root}")
    fields = FieldMap(path_pattern="{domain}/{group}/{model}/response.json.gz")
    seen = {}
    for f in files:
        traces = list(iter_traces(f, fields))
        assert traces and all(not isinstance(t, Exception) for t in traces)
        seen[f.parent.parent.name] = {(t.model, t.domain, t.group, t.provenance["group_from"]) for t in traces}
    assert seen == {"normal": {("s1.1", "math", "normal", "path")}, "MiP": {("s1.1", "math", "MiP", "path")}}
