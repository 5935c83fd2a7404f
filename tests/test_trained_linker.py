"""The shipped trained linker and type head, and the cross-encoder backend on tiny random BERT
classifiers written to a temporary folder: both keep the graph invariants, offline."""
import json

import numpy as np
import pytest

from thinkprobe.graph import build_graphs
from thinkprobe.link import CueLinker, LinkInput
from thinkprobe.load import FieldMap, detect
from thinkprobe.records import BACKWARD_EDGES, FORWARD_EDGES, NODE_TYPES, ThoughtUnit
from thinkprobe.trained_linker import (
    DEFAULT_LINKER, MODELS_DIR, TYPE_CLASSES, CandidateParams, HeadTypedLinker, TrainedLinker, candidates,
    load_linker, load_type_head, unit_typer,
)

TRACES = [
    "Let me find the area of the circle first. The radius is 3, so the area is pi r^2 = 9 pi. "
    "Wait, is that right? Yes, 3 squared is 9, so the area is 9 pi. Alternatively, maybe I could use the diameter. "
    "The diameter is 6, and pi d^2 / 4 = 9 pi as well. So the answer is 9 pi.",
    "Hmm. The question asks for the capital of Australia. I recall that Sydney is the largest city. "
    "But the capital is Canberra, not Sydney. Let me double-check: Canberra was chosen as a compromise. "
    "Combining both facts, the answer is Canberra.",
]


def check_invariants(units, edges):
    n = len(units)
    incoming_forward = {e.dst for e in edges if e.edge_type in FORWARD_EDGES}
    assert incoming_forward == set(range(1, n))
    for e in edges:
        assert 0 <= e.src < n and 0 <= e.dst < n
        if e.edge_type in FORWARD_EDGES:
            assert e.src < e.dst
        else:
            assert e.edge_type in BACKWARD_EDGES and e.src > e.dst
        if e.edge_type == "critique":
            assert e.polarity in ("affirm", "negate", "uncertain")


def traces():
    return [detect({"id": f"t{k}", "response": text}, FieldMap(), "test", k) for k, text in enumerate(TRACES)]


@pytest.fixture(scope="module")
def shipped(config):
    return load_linker(None, config)


def test_shipped_model_is_small_and_described():
    folder = MODELS_DIR / DEFAULT_LINKER
    weights = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    assert 0 < weights < 5 * 1024 * 1024
    meta = json.loads((folder / "config.json").read_text())
    assert meta["type_classes"] == list(TYPE_CLASSES) and meta["decode"]["threshold_near"] > 0
    card = (folder / "README.md").read_text()
    assert "licence" in card.lower() and "v1_llm_gemini-3.1-pro-preview" in card


def test_load_linker_names(config, tmp_path):
    assert isinstance(load_linker("cue", config), CueLinker)
    assert isinstance(load_linker(None, config), TrainedLinker)
    assert isinstance(load_linker(str(MODELS_DIR / DEFAULT_LINKER), config), TrainedLinker)
    with pytest.raises(FileNotFoundError):
        load_linker(str(tmp_path / "nothing"), config)
    with pytest.raises(ValueError):
        load_linker("cross-encoder", config)


def test_trained_linker_keeps_invariants(config, encoder, shipped, no_network):
    graphs = build_graphs(traces(), config, encoder, shipped)
    for g in graphs:
        assert len(g.units) >= 4
        check_invariants(g.units, g.edges)
        out = {}
        for e in g.edges:
            out.setdefault(e.src, []).append(e.edge_type)
        for u in g.units:
            assert u.node_type in NODE_TYPES
            if u.node_type == "RPT":
                assert "repetition" in out.get(u.index, [])
            if u.node_type == "CRT":
                assert "critique" in out.get(u.index, [])
    # the same edges whatever else is in the batch
    alone = build_graphs(traces()[:1], config, encoder, shipped)[0]
    assert alone.edges == graphs[0].edges


def test_type_head_types_every_unit_and_the_linker_honours_them(config, encoder, shipped):
    head = load_type_head()
    typed = HeadTypedLinker(shipped, unit_typer(shipped, "head", head))
    for g in build_graphs(traces(), config, encoder, typed):
        types = head.predict(g.units, g.embeddings)
        assert len(types) == len(g.units) and set(types) <= set(TYPE_CLASSES)
        check_invariants(g.units, g.edges)
        final = typed.finalised(g)
        out = {}
        for e in g.edges:
            out.setdefault(e.src, []).append(e.edge_type)
        for u, t in zip(final, types):
            if t in ("CRT", "RPT") and u.index > 0:
                assert u.node_type == t  # the linker gave the unit the edge its type needs
            assert u.node_type in NODE_TYPES


def test_typing_choice(config, shipped):
    assert unit_typer(shipped, "cue") is None
    cue_typer = unit_typer(load_linker("cue", config), "head")
    units = [ThoughtUnit(k, "reasoning", 0, 1, t, segment=0) for k, t in enumerate(
        ["The radius is 3.", "The radius is 3.", "Wait, that is wrong.", "So the answer is 9 pi."])]
    emb = np.eye(4, 384, dtype=np.float32)
    # with the CueLinker no unit may be typed CRT or RPT by the head (nothing gives them their edge)
    assert not {u.node_type for u in cue_typer(units, emb)} & {"CRT", "RPT"}
    with pytest.raises(ValueError):
        unit_typer(shipped, "magic")


def test_candidates_reach_back_through_cues():
    units = [ThoughtUnit(k, "reasoning", 0, 1, "x", segment=k // 4, cues=cues)
             for k, cues in enumerate([("MET",), (), ("CON",), (), (), (), (), (), ("CON",)])]
    sim = np.eye(len(units))
    cands = candidates(units, sim, CandidateParams(window=2, top_k=0, plan_lookback=1, conclusion_lookback=1,
                                                   block_lookback=1))
    assert cands[8][0].tolist() == [0, 2, 4, 6, 7]  # plan 0, conclusion 2, block start 4, window 6-7


# ----------------------------------------------------------------------------- cross-encoder

WORDS = ["the", "area", "is", "9", "pi", "wait", "right", "yes", "so", "answer", "radius", "3", "capital", "canberra"]


def tiny_classifier(folder, id2label, seed=0):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    tok.save_pretrained(str(folder))
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(WORDS) + 5, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128, num_labels=len(id2label),
                     id2label=id2label, label2id={v: k for k, v in id2label.items()})
    BertForSequenceClassification(cfg).save_pretrained(str(folder))
    return folder


def link_inputs(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for text in TRACES:
        sentences = [s.strip() + "." for s in text.split(".") if s.strip()]
        units = [ThoughtUnit(k, "reasoning", 0, len(s), s, segment=k // 3,
                             node_type="CRT" if s.lower().startswith(("wait", "let me double")) else "RSN",
                             cues=("CRT",) if s.lower().startswith(("wait", "let me double")) else ())
                 for k, s in enumerate(sentences)]
        emb = rng.normal(size=(len(units), 16)).astype(np.float32)
        out.append(LinkInput(units, emb / np.linalg.norm(emb, axis=1, keepdims=True)))
    return out


def test_cross_encoder_nli_reads_label_columns_from_config(config, tmp_path, no_network):
    folder = tiny_classifier(tmp_path / "nli", {0: "NEUTRAL", 1: "CONTRADICTION", 2: "ENTAILMENT"})
    linker = load_linker("cross-encoder", config, model_dir=str(folder))
    assert linker.nli == {"neutral": 0, "contradiction": 1, "entailment": 2}
    batch = link_inputs()
    for item, edges in zip(batch, linker.link(batch)):
        check_invariants(item.units, edges)

    # pair order is (earlier unit, later unit); contradiction read from its own column
    seen = []

    def fake(pairs):
        seen.extend(pairs)
        p = np.tile(np.array([[0.8, 0.1, 0.1]], np.float32), (len(pairs), 1))
        for k, (a, b) in enumerate(pairs):
            if a.startswith("The radius") and b.startswith("Wait"):
                p[k] = [0.02, 0.96, 0.02]
        return p

    linker.pair_probabilities = fake
    edges = linker.link(batch[:1])[0]
    units = batch[0].units
    assert all(units.index(next(u for u in units if u.text == a)) < units.index(next(u for u in units if u.text == b))
               for a, b in seen)
    wait = next(u.index for u in units if u.text.startswith("Wait"))
    radius = next(u.index for u in units if u.text.startswith("The radius"))
    assert any(e.edge_type == "critique" and e.src == wait and e.dst == radius and e.polarity == "negate" for e in edges)


def test_cross_encoder_seven_way_and_through_the_pipeline(config, encoder, tmp_path, no_network):
    from thinkprobe.crossencoder_linker import SEVEN_WAY_LABELS

    folder = tiny_classifier(tmp_path / "seven", dict(enumerate(SEVEN_WAY_LABELS)), seed=1)
    linker = load_linker("cross-encoder", config, model_dir=str(folder))
    assert linker.nli is None
    for g in build_graphs(traces(), config, encoder, linker):
        check_invariants(g.units, g.edges)


def test_cross_encoder_rejects_other_labels(config, tmp_path):
    folder = tiny_classifier(tmp_path / "sentiment", {0: "NEGATIVE", 1: "POSITIVE"})
    with pytest.raises(ValueError, match="neither NLI"):
        load_linker("cross-encoder", config, model_dir=str(folder))
