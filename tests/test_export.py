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


def test_unknown_format_and_missing_run(run_dir, tmp_path_factory):
    with pytest.raises(ValueError, match="unknown export format"):
        export(run_dir, "csv")
    with pytest.raises(FileNotFoundError, match="thinkprobe profile"):
        export(tmp_path_factory.mktemp("empty"), "json")
