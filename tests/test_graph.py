"""graph.build_graphs: what the linker is given (units aligned with their embeddings, the run's
mapper, every trace of the batch at once), how edges are attached (sorted; structural node types
settled from each unit's outgoing edges), section boundaries and empty traces."""
from dataclasses import replace

import numpy as np
import pytest

from thinkprobe.graph import build_graphs
from thinkprobe.io import FieldMap, detect
from thinkprobe.records import Edge, InputError, Section, ThoughtGraph

TEXTS = [
    "<think>The radius is 3. So the area is 9 pi. Wait, that's wrong: the radius is 4. So the area is 16 pi.</think>"
    "The answer is 16 pi.",
    "Paris is in France. The Seine runs through Paris. Paris is in France.",
]


def traces(texts=TEXTS):
    return [detect({"id": f"t{k}", "response": t}, FieldMap(), "test.jsonl", k) for k, t in enumerate(texts)]


class Recorder:
    """A linker that chains the units and lets each unit with a critique cue critique unit 0;
    it records what it was given."""

    name = "recorder"
    structural_types = False
    cache_stats: dict = {}

    def __init__(self):
        self.calls = []

    def link(self, batch, mapper=map):
        self.calls.append((batch, mapper))
        out = []
        for item in batch:
            edges = [Edge(k - 1, k, "inference", score=0.5) for k in range(1, len(item.units))]
            edges += [Edge(u.index, 0, "critique", "negate", 0.9) for u in item.units if "CRT" in u.cues and u.index]
            out.append(edges[::-1])  # unsorted on purpose
        return out

    def candidates(self, item):
        return [np.arange(j) for j in range(len(item.units))]


def test_linker_gets_the_whole_batch_with_aligned_embeddings(config, encoder):
    rec = Recorder()
    graphs = build_graphs(traces(), config, encoder, rec)
    assert len(rec.calls) == 1
    batch, mapper = rec.calls[0]
    assert mapper is map  # no pool: the builtin map
    assert [len(item.units) for item in batch] == [len(g.units) for g in graphs]
    for item, g in zip(batch, graphs):
        assert item.embeddings.shape[0] == len(item.units) == len(g.units)
        assert [u.text for u in item.units] == [u.text for u in g.units]
        again = encoder.encode_and_count([u.text for u in item.units])[0]
        assert np.allclose(item.embeddings, again, atol=1e-5)


def test_edges_sorted_and_structural_types_settled(config, encoder):
    graphs = build_graphs(traces(), config, encoder, Recorder())
    g = graphs[0]
    assert g.edges == sorted(g.edges, key=lambda e: (e.src, e.dst, e.edge_type))
    wait = next(u for u in g.units if u.text.startswith("Wait"))
    assert wait.node_type == "CRT"  # its outgoing critique edge makes it CRT
    assert g.units[0].node_type != "CRT"
    # sections: the reasoning then the answer, indices continuous, a block starts at the answer
    sections = [u.section for u in g.units]
    assert sections[0] == "reasoning" and sections[-1] == "answer"
    assert [u.index for u in g.units] == list(range(len(g.units)))
    first_answer = sections.index("answer")
    assert g.units[first_answer].segment != g.units[first_answer - 1].segment


def test_a_cue_critique_without_an_edge_falls_back(config, encoder):
    class NoCritique(Recorder):
        def link(self, batch, mapper=map):
            return [[e for e in es if e.edge_type != "critique"] for es in super().link(batch, mapper)]

    g = build_graphs(traces(), config, encoder, NoCritique())[0]
    assert "CRT" not in [u.node_type for u in g.units]


def test_empty_trace_is_an_input_error_and_the_rest_go_on(config, encoder):
    rec = Recorder()
    ts = traces([TEXTS[0], TEXTS[1], TEXTS[1]])
    blank = Section("reasoning", "response", "   ", 0, 3)  # loading keeps it; splitting finds no unit
    ts[1] = replace(ts[1], sections=(blank,), record=1)
    out = build_graphs(ts, config, encoder, rec)
    assert isinstance(out[0], ThoughtGraph) and isinstance(out[2], ThoughtGraph)
    assert isinstance(out[1], InputError)
    assert out[1].record == 1 and out[1].source == "test.jsonl"
    assert len(rec.calls[0][0]) == 2  # the linker never sees the empty trace


def test_a_pool_map_reaches_the_linker(config, encoder):
    from concurrent.futures import ThreadPoolExecutor

    rec = Recorder()
    with ThreadPoolExecutor(2) as pool:
        pooled = build_graphs(traces(), config, encoder, rec, pool=pool)
    assert rec.calls[0][1] is not map
    plain = build_graphs(traces(), config, encoder, Recorder())
    assert [g.edges for g in pooled] == [g.edges for g in plain]
    assert [[u.node_type for u in g.units] for g in pooled] == [[u.node_type for u in g.units] for g in plain]


@pytest.mark.parametrize("name", ["cue", None])
def test_real_linkers_through_build_graphs(config, encoder, name):
    from thinkprobe.link import load_linker, unit_typer

    linker = load_linker(name, config)
    graphs = build_graphs(traces(), config, encoder, linker, typer=unit_typer(linker, "head"))
    forced = (getattr(linker, "decode", None) or {}).get("force_parent", True)
    assert forced == (name == "cue")  # the shipped parser decodes without a forced parent (issue 40)
    for g in graphs:
        incoming = {e.dst for e in g.edges if e.edge_type in ("inference", "elaboration", "branch")}
        if forced:
            assert incoming == set(range(1, len(g.units)))
        else:  # a unit without a probable parent opens a new line of thought; edges still point forward
            assert incoming <= set(range(1, len(g.units)))
            assert all(e.src < e.dst for e in g.edges if e.edge_type in ("inference", "elaboration", "branch"))
