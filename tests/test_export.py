"""Export of a run's graphs (ReasoningFlow JSONL, GraphML, node-link JSON) on hand-built graph
records: offsets into the joined response, edge direction and labels, and every format read back."""
import json

import networkx as nx
import pytest

from thinkprobe.export import export, to_networkx, to_reasoningflow
from thinkprobe.records import dump_graph_record

REASONING = "Let x be 3. So 2x = 6. Wait, is that right? Yes, 2 * 3 = 6."
ANSWER = "The answer is 6."


def _unit(k, section, text, field_text, kind):
    start = field_text.index(text)
    return {"id": k, "section": section, "start": start, "end": start + len(text), "text": text, "type": kind,
            "segment": 0, "cues": [], "tokens": len(text.split())}


def separate_fields_record(trace_id="t/1 ü") -> dict:
    """Reasoning and answer in two fields, as reasoning_content / content records give them."""
    units = [_unit(0, "reasoning", "Let x be 3.", REASONING, "FAC"), _unit(1, "reasoning", "So 2x = 6.", REASONING, "RSN"),
             _unit(2, "reasoning", "Wait, is that right?", REASONING, "CRT"),
             _unit(3, "reasoning", "Yes, 2 * 3 = 6.", REASONING, "CON"), _unit(4, "answer", ANSWER, ANSWER, "CON")]
    edges = [{"src": 0, "dst": 1, "type": "inference", "polarity": None, "score": 0.9},
             {"src": 1, "dst": 2, "type": "elaboration", "polarity": None, "score": 0.5},
             {"src": 2, "dst": 1, "type": "critique", "polarity": "affirm", "score": 0.7},
             {"src": 3, "dst": 1, "type": "critique", "polarity": None, "score": 0.6},
             {"src": 2, "dst": 3, "type": "inference", "polarity": None, "score": 0.8},
             {"src": 3, "dst": 4, "type": "inference", "polarity": None, "score": 1.0}]
    return {"trace_id": trace_id, "model": "m", "domain": "math", "source": "in.jsonl", "record": 0,
            "question": "What is 2x?", "gold_answer": "6", "correct": True, "provenance": {"reasoning_from": "reasoning_content"},
            "sections": [{"name": "reasoning", "field": "reasoning_content", "start": 0, "end": len(REASONING)},
                         {"name": "answer", "field": "content", "start": 0, "end": len(ANSWER)}],
            "fields": {"reasoning_content": REASONING, "content": ANSWER},
            "units": units, "edges": edges, "indicators": {"branching_factor": 0.0}}


def inline_record() -> dict:
    """Both sections inside one response field (inline tags): offsets are kept as they are."""
    response = f"<think>{REASONING}</think>{ANSWER}"
    rec = separate_fields_record("inline")
    rec["sections"] = [{"name": "reasoning", "field": "response", "start": 7, "end": 7 + len(REASONING)},
                       {"name": "answer", "field": "response", "start": response.index(ANSWER), "end": len(response)}]
    rec["fields"] = {"response": response}
    for u in rec["units"]:
        u["start"] = response.index(u["text"])
        u["end"] = u["start"] + len(u["text"])
    return rec


@pytest.mark.parametrize("make", [separate_fields_record, inline_record])
def test_reasoningflow_nodes_point_into_the_response(make):
    rec = make()
    doc = to_reasoningflow(rec)
    response = doc["raw_text"]["response"]
    assert [n["text"] for n in doc["nodes"]] == [u["text"] for u in rec["units"]]
    for node in doc["nodes"]:
        assert response[node["start"]:node["end"]] == node["text"]
    if make is separate_fields_record:  # joined as the model was shown the trace
        assert response.startswith("<think>\n") and "\n</think>\n\n" in response and response.endswith(ANSWER)
    else:
        assert response == rec["fields"]["response"]
    assert doc["metadata"]["correct_answer"] == "6" and doc["metadata"]["correctness"] is True
    assert doc["raw_text"]["question"] == "What is 2x?"


def test_reasoningflow_edges_run_from_premise_to_user_with_labels():
    doc = to_reasoningflow(separate_fields_record())
    by_type = [(e["source_node_id"], e["dest_node_id"], e["label"]) for e in doc["edges"]]
    assert by_type[0] == ("resp0", "resp1", "reason:infer")
    assert by_type[1] == ("resp1", "resp2", "reason:elaborate-fact")
    assert by_type[2] == ("resp1", "resp2", "reflect:positive")  # backward critique 2 -> 1, written 1 -> 2
    assert by_type[3] == ("resp1", "resp3", "reflect:uncertain")  # no polarity: uncertain
    labels = {n["thinkprobe_type"]: n["label"] for n in doc["nodes"]}
    assert labels["CRT"] == "reflection" and labels["FAC"] == "fact" and labels["CON"] == "conclusion"


def test_networkx_keeps_direction_types_and_attributes():
    rec = separate_fields_record()
    g = to_networkx(rec)
    assert isinstance(g, nx.MultiDiGraph) and g.graph["trace_id"] == rec["trace_id"]
    assert g.number_of_nodes() == 5 and g.number_of_edges() == 6
    assert g.nodes[2]["type"] == "CRT" and g.nodes[4]["section"] == "answer"
    critiques = [(u, v, d["polarity"]) for u, v, d in g.edges(data=True) if d["type"] == "critique"]
    assert sorted(critiques) == [(2, 1, "affirm"), (3, 1, "")]
    assert not nx.is_directed_acyclic_graph(g)  # backward edges close cycles


@pytest.fixture
def run_dir(tmp_path):
    with open(tmp_path / "graphs.jsonl", "w", encoding="utf-8") as f:
        for rec in (separate_fields_record(), inline_record()):
            f.write(dump_graph_record(rec))
    return tmp_path


def test_an_export_never_writes_over_the_run_it_reads(run_dir):
    """A review: `export RUN -o RUN/graphs.jsonl` emptied the graphs it was reading and exited 0, and a
    target that is a symlink was written through. The run's own files are refused; a target file is
    written whole and moved into place, replacing a link rather than following it."""
    from click.testing import CliRunner

    from thinkprobe.cli import main

    before = (run_dir / "graphs.jsonl").read_bytes()
    for target in (run_dir / "graphs.jsonl", run_dir / "run.json"):
        with pytest.raises(ValueError, match="one of its own files"):
            export(run_dir, "reasoningflow", target)
        res = CliRunner().invoke(main, ["export", str(run_dir), "-o", str(target)])
        assert res.exit_code == 1 and "one of its own files" in res.output and "Traceback" not in res.output
    assert (run_dir / "graphs.jsonl").read_bytes() == before and not (run_dir / "run.json").exists()
    victim = run_dir.parent / f"{run_dir.name}-victim.txt"
    victim.write_text("the user's file")
    (run_dir / "link.jsonl").symlink_to(victim)
    export(run_dir, "json", run_dir / "link.jsonl")
    assert victim.read_text() == "the user's file" and not (run_dir / "link.jsonl").is_symlink()
    assert len((run_dir / "link.jsonl").read_text().splitlines()) == 2
    res = CliRunner().invoke(main, ["export", str(run_dir), "--format", "graphml", "-o", str(victim)])
    assert res.exit_code == 1 and "Traceback" not in res.output and victim.read_text() == "the user's file"
    # inside the run's own folders too (a chunk overwritten broke --resume), and the run folder itself
    (run_dir / "parts").mkdir()
    for target in (run_dir / "parts" / "000000.jsonl", run_dir / "traces" / "t.html", run_dir):
        with pytest.raises(ValueError, match="the run folder or one of its own files"):
            export(run_dir, "json", target)
    # a file of the user's named like a temporary is left alone; a folder as target leaves nothing behind
    elsewhere = victim.parent / f"{run_dir.name}-out"
    elsewhere.mkdir()
    (elsewhere / "out.jsonl.tmp").write_text("my notes")
    written = export(run_dir, "reasoningflow", elsewhere / "out.jsonl")
    assert (elsewhere / "out.jsonl.tmp").read_text() == "my notes" and oct(written.stat().st_mode & 0o777) != "0o600"
    with pytest.raises(ValueError, match="a folder; name the file"):
        export(run_dir, "json", elsewhere)
    with pytest.raises(ValueError, match="no such folder"):  # not the name of a temporary file
        export(run_dir, "json", elsewhere / "missing" / "x.jsonl")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["out.jsonl", "out.jsonl.tmp"]


def test_every_format_reads_back(run_dir):
    rf = export(run_dir, "reasoningflow")
    docs = [json.loads(line) for line in rf.read_text(encoding="utf-8").splitlines()]
    assert rf == run_dir / "reasoningflow.jsonl" and [d["doc_id"] for d in docs] == ["t/1 ü", "inline"]

    node_link = export(run_dir, "json", run_dir / "nl.jsonl")
    graphs = [nx.node_link_graph(json.loads(line), edges="edges") for line in node_link.read_text().splitlines()]
    assert [(g.number_of_nodes(), g.number_of_edges()) for g in graphs] == [(5, 6), (5, 6)]

    folder = export(run_dir, "graphml")
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == ["000000_t_1_ü.graphml", "000001_inline.graphml"]  # "/" and " " replaced, in order
    back = nx.read_graphml(files[0])
    assert back.number_of_edges() == 6 and back.nodes["2"]["type"] == "CRT"


def test_graphml_reads_back_when_the_text_holds_control_characters(tmp_path):
    """An ANSI colour code or a NUL in a unit (or the trace id) wrote GraphML no parser reads."""
    rec = separate_fields_record("a\x00b")
    rec["units"][1]["text"] = "So \x1b[31m2x\x1b[0m = 6.\x01"
    (tmp_path / "graphs.jsonl").write_text(dump_graph_record(rec), encoding="utf-8")
    (file,) = export(tmp_path, "graphml").iterdir()
    back = nx.read_graphml(file)
    assert back.nodes["1"]["text"] == "So \ufffd[31m2x\ufffd[0m = 6.\ufffd" and back.graph["trace_id"] == "a\ufffdb"


def test_unknown_format_and_missing_run(run_dir, tmp_path_factory):
    with pytest.raises(ValueError, match="unknown export format"):
        export(run_dir, "csv")
    with pytest.raises(FileNotFoundError, match="thinkprobe profile"):
        export(tmp_path_factory.mktemp("empty"), "json")


# ----------------------------------------------------------------------------- label round trip

# What ReasoningFlow's own files hold (the data's README): a reader without our fields has these.
RF_NODE_KEYS = {"id", "label", "text", "source", "start", "end", "annotation"}
RF_EDGE_KEYS = {"id", "source_node_id", "dest_node_id", "label"}
BACKWARD = {"critique", "synthesis", "repetition"}

# One unit per line: (text, type). Branches open units typed EXP, RSN and MET: spec section 7's
# reading of plan:proceed gives branch only into an assumption node.
STEPS = [("We know x = 2.", "FAC"), ("So y = 2x = 4.", "RSN"), ("Suppose instead y were 5.", "EXP"),
         ("Alternatively, solve for y directly.", "RSN"), ("Let me plan a check.", "MET"),
         ("Here x = 2 means x is even.", "FAC"), ("Is y = 4 right?", "CRT"), ("Yes, 2 * 2 = 4.", "CRT"),
         ("No, y = 5 fails.", "CRT"), ("Putting both together, y = 4.", "SYN"), ("So y = 4.", "RPT"),
         ("The answer is 4.", "CON")]
# (src, dst, type, polarity) in our direction: forward i -> j, backward (critique, synthesis,
# repetition) from the later unit to the earlier one.
EVERY_EDGE = [(0, 1, "inference", None), (1, 11, "inference", None), (0, 5, "elaboration", None),
              (1, 2, "branch", None), (1, 3, "branch", None), (0, 4, "branch", None),
              (6, 1, "critique", "uncertain"), (7, 1, "critique", "affirm"), (8, 2, "critique", "negate"),
              (9, 1, "synthesis", None), (9, 3, "synthesis", None), (10, 1, "repetition", None)]


def every_edge_record(trace_id="every-edge") -> dict:
    text = "\n".join(t for t, _ in STEPS)
    rec = separate_fields_record(trace_id)
    rec["sections"] = [{"name": "reasoning", "field": "reasoning_content", "start": 0, "end": len(text)}]
    rec["fields"] = {"reasoning_content": text}
    rec["units"] = [_unit(k, "reasoning", t, text, kind) for k, (t, kind) in enumerate(STEPS)]
    rec["edges"] = [{"src": s, "dst": d, "type": kind, "polarity": pol, "score": 0.5} for s, d, kind, pol in EVERY_EDGE]
    return rec


def reasoningflow_only(doc: dict) -> dict:
    """`doc` with every node and edge field ReasoningFlow does not define removed (thinkprobe_type,
    polarity, section): what a reader with the ReasoningFlow labels alone sees."""
    return {**doc, "nodes": [{k: v for k, v in n.items() if k in RF_NODE_KEYS} for n in doc["nodes"]],
            "edges": [{k: v for k, v in e.items() if k in RF_EDGE_KEYS} for e in doc["edges"]]}


def undirected(edges):
    """(earlier, later, type, polarity) per edge: ReasoningFlow edges all run earlier -> later."""
    return sorted((min(a, b), max(a, b), kind, pol or "") for a, b, kind, pol in edges)


def test_export_labels_alone_give_every_edge_type_and_polarity_back(run_dir):
    from thinkprobe.reasoningflow import load_docs, node_types, read_edges
    from thinkprobe.export import RF_EDGE_LABELS

    rec = every_edge_record()
    assert {(kind, pol or "") for _, _, kind, pol in EVERY_EDGE} == set(RF_EDGE_LABELS)  # every type and polarity
    assert len(set(RF_EDGE_LABELS.values())) == len(RF_EDGE_LABELS)  # one label each
    with open(run_dir / "graphs.jsonl", "w", encoding="utf-8") as f:
        f.write(dump_graph_record(rec))
    exported = export(run_dir, "reasoningflow")
    stripped = run_dir / "labels_only.jsonl"
    stripped.write_text("".join(json.dumps(reasoningflow_only(json.loads(line))) + "\n"
                                for line in exported.read_text(encoding="utf-8").splitlines()), encoding="utf-8")
    assert "thinkprobe_type" not in stripped.read_text() and "polarity" not in stripped.read_text()
    [doc] = load_docs(stripped)

    assert undirected(read_edges(doc)) == undirected(EVERY_EDGE)
    assert node_types(doc) == [{"SYN": "RSN"}.get(t, t) for _, t in STEPS]  # ReasoningFlow has no synthesis node


def test_spec_reading_of_the_export_loses_only_what_the_docstring_says():
    """A reader applying spec section 7 (as to labels people chose) to the labels alone: branches
    into units not typed EXP read as elaboration and synthesis as inference; nothing else moves.
    Gold and silver files are read that way, so their scores do not change."""
    from thinkprobe.reasoningflow import read_edges, written_by_thinkprobe

    doc = reasoningflow_only(to_reasoningflow(every_edge_record()))
    assert written_by_thinkprobe(doc)
    doc["metadata"] = {**doc["metadata"], "annotator": "Human D"}
    assert not written_by_thinkprobe(doc)
    expected = []
    for s, d, kind, pol in EVERY_EDGE:
        if kind == "branch" and STEPS[d][1] != "EXP":
            kind = "elaboration"
        expected.append((s, d, {"synthesis": "inference"}.get(kind, kind), pol))
    assert undirected(read_edges(doc)) == undirected(expected)


@pytest.mark.realdata
def test_human_graphs_round_trip_through_the_export(shared_data):
    """Each human graph of the dev set (v0_human_D) turned into a graph record (units = its
    response nodes, our types and edges as eval-gold maps them), exported and stripped to the
    ReasoningFlow fields: read back, it has the same edges and types, and scores 1 against it."""
    import yaml

    from thinkprobe.evalgold import score
    from thinkprobe.reasoningflow import load_docs, node_types, read_edges, response_nodes
    from thinkprobe.export import RF_EDGE_LABELS

    schema = shared_data / "reasoningflow" / "schema"
    edge_labels = {e["name"] for e in yaml.safe_load((schema / "edge_labels.yaml").read_text())["edges"]}
    assert set(RF_EDGE_LABELS.values()) <= edge_labels
    node_labels = {n["name"] for n in yaml.safe_load((schema / "node_labels.yaml").read_text())["nodes"]}
    golds = load_docs(shared_data / "reasoningflow" / "v0" / "v0_human_D")
    assert len(golds) == 20
    preds = []
    for gold in golds:
        text, types, edges = gold["raw_text"]["response"], node_types(gold), read_edges(gold)
        rec = every_edge_record(gold["doc_id"])
        rec["sections"] = [{"name": "reasoning", "field": "response", "start": 0, "end": len(text)}]
        rec["fields"] = {"response": text}
        rec["units"] = [{"id": k, "section": "reasoning", "start": n["start"], "end": n["end"], "text": n["text"],
                         "type": types[k], "segment": 0, "cues": [], "tokens": 1}
                        for k, n in enumerate(response_nodes(gold))]
        rec["edges"] = [{"src": max(a, b) if kind in BACKWARD else min(a, b),
                         "dst": min(a, b) if kind in BACKWARD else max(a, b),
                         "type": kind, "polarity": pol or None, "score": 1.0} for a, b, kind, pol in edges]
        doc = reasoningflow_only(to_reasoningflow(rec))
        assert {n["label"] for n in doc["nodes"]} <= node_labels
        assert undirected(read_edges(doc)) == undirected(edges)
        preds.append(doc)
    s = score(golds, preds)
    assert s["docs"] == 20 and s["edges"]["gold"] > 1000
    assert s["edges_labelled"]["f1"] == 1.0 and s["critique_polarity_accuracy"] == 1.0
    assert s["types"]["accuracy"] == 1.0
