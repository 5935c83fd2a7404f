"""`profile --graph-source input`: records that carry their own graph (ReasoningFlow documents, or
ThinkProbe's graphs.jsonl) are profiled on their own units and edges, with the label mapping
eval-gold uses; a bad graph is a named error in errors.jsonl and the run goes on."""
import json

import pytest
from click.testing import CliRunner

import thinkprobe
from thinkprobe.cli import main
from thinkprobe.reasoningflow import read_edges, response_nodes

from conftest import SAMPLES

QUIET = ["--device", "cpu", "--no-progress", "--no-report", "--no-cache"]
TEXT = "We need 2 + 3. That is 5. Wait, is that right? Yes, 2 + 3 = 5. So the answer is 5."


def rf_doc(doc_id, nodes=None, edges=None, text=TEXT):
    """A ReasoningFlow document over TEXT: one node per sentence, chained, the check critiquing."""
    if nodes is None:
        nodes, start = [], 0
        for k, sentence in enumerate(["We need 2 + 3.", "That is 5.", "Wait, is that right?", "Yes, 2 + 3 = 5.",
                                      "So the answer is 5."]):
            start = text.index(sentence, start)
            label = ("planning", "reasoning", "reflection", "reasoning", "conclusion")[k]
            nodes.append({"id": f"resp{k}", "start": start, "end": start + len(sentence), "label": label,
                          "source": "response", "text": sentence})
            start += len(sentence)
        nodes.insert(0, {"id": "ctx0", "start": 0, "end": 8, "label": "context", "source": "question"})
    if edges is None:
        edges = [{"id": f"e{k}", "source_node_id": f"resp{k}", "dest_node_id": f"resp{k + 1}", "label": "reason:infer"}
                 for k in range(4)]
        edges[1]["label"] = "reflect:uncertain"  # resp1 -> resp2: the check evaluates the sum
        edges.append({"id": "eq", "source_node_id": "ctx0", "dest_node_id": "resp0", "label": "reason:restate"})
    return {"doc_id": doc_id, "raw_text": {"question": "What is 2 + 3?", "response": text},
            "metadata": {"generator": "m1", "domain": "math"}, "nodes": nodes, "edges": edges}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_units_and_edges_are_the_records_own(tmp_path):
    src = write_jsonl(tmp_path / "rf.jsonl", [rf_doc("a"), rf_doc("b")])
    res = CliRunner().invoke(main, ["profile", str(src), "-o", str(tmp_path / "out"), "--graph-source", "input", *QUIET])
    assert res.exit_code == 0, res.output
    graphs = [json.loads(line) for line in (tmp_path / "out" / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]
    doc = rf_doc("a")
    assert [(u["start"], u["end"]) for u in graphs[0]["units"]] == [(n["start"], n["end"]) for n in response_nodes(doc)]
    assert [u["type"] for u in graphs[0]["units"]] == ["MET", "RSN", "CRT", "RSN", "CON"]
    # forward edges from the earlier unit; the critique from the checking unit back to what it checks
    assert {(e["src"], e["dst"], e["type"], e["polarity"]) for e in graphs[0]["edges"]} == {
        (0, 1, "inference", None), (2, 1, "critique", "uncertain"), (2, 3, "inference", None), (3, 4, "inference", None)}
    assert graphs[0]["provenance"]["graph_from"] == "nodes, edges (ReasoningFlow)"
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["graph_source"] == "input" and run["linker"] == "input"
    assert "linker_agreement" not in run  # the graphs are the annotators' own: no agreement to show


BROKEN = [  # (how the record is broken, the field its error names, what the reason says)
    (lambda d: d.update(nodes=[]), "nodes", "no nodes"),
    (lambda d: d.update(nodes=[d["nodes"][0]]), "nodes", "no response nodes"),
    (lambda d: d["edges"].append({"id": "x", "source_node_id": "resp1", "dest_node_id": "resp9", "label": "reason:infer"}),
     "edges[5]", "missing node 'resp9'"),
    (lambda d: d["nodes"][2].update(end=10_000), "nodes[2]", "outside the response text"),
    (lambda d: d["nodes"][3].update(label="musing"), "nodes[3].label", "unknown node label 'musing'"),
    (lambda d: d["edges"][0].update(label="reason:wander"), "edges[0].label", "unknown edge label 'reason:wander'"),
    (lambda d: d.pop("nodes"), "nodes", "carries no graph"),
]


def test_each_bad_graph_is_a_named_error_and_the_run_goes_on(tmp_path):
    """One run over good records and one broken record per case (a run costs an encoder load)."""
    records = [rf_doc("good")]
    for k, (broken, _, _) in enumerate(BROKEN):
        bad = rf_doc(f"bad{k}")
        broken(bad)
        records.append(bad)
    records.append(rf_doc("also-good"))
    src = write_jsonl(tmp_path / "rf.jsonl", records)
    res = CliRunner().invoke(main, ["profile", str(src), "-o", str(tmp_path / "out"), "--graph-source", "input", *QUIET])
    assert res.exit_code == 0, res.output
    errors = [json.loads(line) for line in (tmp_path / "out" / "errors.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(errors) == len(BROKEN)
    for k, ((_, field, reason), error) in enumerate(zip(BROKEN, errors)):
        assert error["field"] == field and reason in error["reason"], (k, error)
        assert error["file"] == str(src) and error["record"] == f"line {k + 2}"
    ids = [json.loads(line)["trace_id"] for line in (tmp_path / "out" / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert ids == ["good", "also-good"]


def test_our_own_graphs_profiled_again_give_the_same_indicators(tmp_path):
    """A run's graphs.jsonl as input: the same units, edges and types, so the same tables (the
    second run reads the first's embeddings from their cache folder: the same bytes, tested apart)."""
    first = thinkprobe.profile(str(SAMPLES), tmp_path / "a", linker="cue", types="cue", device="cpu", progress=False,
                               report=False, cache_dir=tmp_path / "cache")
    again = thinkprobe.profile(str(first.folder / "graphs.jsonl"), tmp_path / "b", graph_source="input", device="cpu",
                               progress=False, report=False, cache_dir=tmp_path / "cache")
    for name in ("indicators.csv", "profile.csv", "redundancy.csv"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes(), name
    assert [g["edges"] for g in again.graphs] == [g["edges"] for g in first.graphs]
    # the run's graphs.parquet reads as its graphs.jsonl (its map and JSON columns read back); without
    # --graph-source input a run's graphs are parsed again from their sections (the parquet's JSON
    # column had been taken for the reasoning; graphs.jsonl's records were skipped)
    runs = {"parquet": dict(graph_source="input"),
            "parse": dict(graph_source="parse", linker="cue", types="cue")}
    for name, options in runs.items():
        src = first.folder / ("graphs.parquet" if name == "parquet" else "graphs.jsonl")
        run = thinkprobe.profile(str(src), tmp_path / name, device="cpu", progress=False, report=False,
                                 cache_dir=tmp_path / "cache", **options)
        for table in ("indicators.csv", "profile.csv", "redundancy.csv"):
            assert (tmp_path / name / table).read_bytes() == (tmp_path / "a" / table).read_bytes(), (name, table)
        assert [g["provenance"]["answer_from"] for g in run.graphs] == [g["provenance"]["answer_from"] for g in first.graphs]
    assert all("parsed again" in g["provenance"]["text_from"] for g in run.graphs)
    # the run's constants replace a graph record's own, and --untagged skip leaves out its untagged traces
    from thinkprobe.io import FieldMap, iter_inputs
    from thinkprobe.records import InputError

    src = first.folder / "graphs.jsonl"
    for graph_source in (False, True):
        got = list(iter_inputs([str(src)], FieldMap(model="FORCED", domain="D"), graphs=graph_source))
        assert {(t.model, t.domain, t.provenance["model_from"]) for t in got} == {("FORCED", "D", "option")}
        # a named field as for any record (graphs.py had its own precedence, without the --*-field options)
        got = list(iter_inputs([str(src)], FieldMap(domain_field="trace_id"), graphs=graph_source))
        assert [(t.domain, t.provenance["domain_from"]) for t in got] == [(t.trace_id, "trace_id") for t in got]
    lines = src.read_text(encoding="utf-8").splitlines()
    plain = {**json.loads(lines[0]), "trace_id": "plain"}
    plain["provenance"] = {**plain["provenance"], "untagged": True}
    (tmp_path / "g.jsonl").write_text(json.dumps(plain) + "\n" + lines[1] + "\n", encoding="utf-8")
    got = list(iter_inputs([str(tmp_path / "g.jsonl")], FieldMap(untagged="skip")))
    assert isinstance(got[0], InputError) and "untagged" in got[0].reason and not isinstance(got[1], InputError)
    assert got[0].model == plain["model"]  # counted under its model, not "unknown"


def test_gold_graphs_of_the_dev_set(shared_data, tmp_path):
    """The 20 human-annotated traces: units are D's response nodes, edges D's mapped edges, and
    the Python API gives the same indicators as the command."""
    gold = shared_data / "reasoningflow" / "v0" / "v0_human_D"
    res = CliRunner().invoke(main, ["profile", str(gold), "-o", str(tmp_path / "cli"), "--graph-source", "input",
                                    "--device", "cpu", "--no-progress", "--no-report",
                                    "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    # QwQ-32B-Preview writes no tags: its annotated texts are untagged, and no 'non-reasoning model?' hint
    assert "20 traces are untagged text (no reasoning field or tags), profiled with the graphs they carry" in res.output
    assert "non-reasoning" not in res.output
    from thinkprobe.report.coverage import _lines  # the report's Records section says the same

    said = " ".join(_lines(json.loads((tmp_path / "cli" / "run.json").read_text(encoding="utf-8"))))
    assert "profiled with the graphs they carry" in said and "non-reasoning" not in said
    graphs = [json.loads(line) for line in (tmp_path / "cli" / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(graphs) == 20
    for g in graphs:
        doc = json.loads((gold / f"{g['trace_id']}.json").read_text(encoding="utf-8"))
        assert [(u["start"], u["end"]) for u in g["units"]] == [(n["start"], n["end"]) for n in response_nodes(doc)]
        mapped = {(max(a, b), min(a, b)) if t in ("critique", "synthesis", "repetition") else (a, b)
                  for a, b, t, _ in read_edges(doc)}
        assert {(e["src"], e["dst"]) for e in g["edges"]} == mapped
    run = thinkprobe.profile(str(gold), tmp_path / "api", graph_source="input", device="cpu", progress=False,
                             report=False, cache_dir=tmp_path / "cache")
    assert (tmp_path / "api" / "indicators.csv").read_bytes() == (tmp_path / "cli" / "indicators.csv").read_bytes()
    assert len(run.indicators) == 20
