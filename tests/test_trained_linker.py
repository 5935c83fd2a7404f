"""The shipped trained linker and type head, and the cross-encoder backend on tiny random BERT
classifiers written to a temporary folder: both keep the graph invariants, offline."""
import json

import numpy as np
import pytest

from thinkprobe.graph import build_graphs
from thinkprobe.link import DEFAULT_LINKER, LINKERS, MODELS_DIR, LinkInput, load_linker, load_type_head, unit_typer
from thinkprobe.link.candidates import CandidateParams, candidate_arrays, candidates
from thinkprobe.link.cue import CueLinker
from thinkprobe.link.pairmlp import TrainedLinker
from thinkprobe.link.protocol import TYPE_CLASSES
from thinkprobe.link.pairmlp import pair_features
from thinkprobe.io import FieldMap, detect
from thinkprobe.records import NODE_TYPES, ThoughtUnit

from test_link_contract import check_contract
from test_link_contract import tiny_classifier as contract_classifier

PAIR_MLP, PARSER = LINKERS["pair-mlp"].model, LINKERS["parser"].model  # the shipped folders in models/
READER_PARSER = LINKERS["parser-reader"].model

TRACES = [
    "Let me find the area of the circle first. The radius is 3, so the area is pi r^2 = 9 pi. "
    "Wait, is that right? Yes, 3 squared is 9, so the area is 9 pi. Alternatively, maybe I could use the diameter. "
    "The diameter is 6, and pi d^2 / 4 = 9 pi as well. So the answer is 9 pi.",
    "Hmm. The question asks for the capital of Australia. I recall that Sydney is the largest city. "
    "But the capital is Canberra, not Sydney. Let me double-check: Canberra was chosen as a compromise. "
    "Combining both facts, the answer is Canberra.",
]


def check_invariants(units, edges, linker):
    """The Linker contract (tests/test_link_contract.py) on a built graph's units and edges."""
    check_contract(LinkInput(list(units), np.zeros((len(units), 1), np.float32)), edges, linker)


def traces():
    return [detect({"id": f"t{k}", "response": text}, FieldMap(), "test", k) for k, text in enumerate(TRACES)]


@pytest.fixture(scope="module")
def shipped(config):
    return load_linker("pair-mlp", config)


def test_shipped_model_is_small_and_described():
    folder = MODELS_DIR / PAIR_MLP
    weights = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    assert 0 < weights < 5 * 1024 * 1024
    meta = json.loads((folder / "config.json").read_text())
    assert meta["type_classes"] == list(TYPE_CLASSES) and meta["decode"]["threshold_near"] > 0
    card = (folder / "README.md").read_text()
    assert "licence" in card.lower() and "v1_llm_gemini-3.1-pro-preview" in card


def test_load_linker_names(config, tmp_path):
    assert isinstance(load_linker("cue", config), CueLinker)
    from thinkprobe.link.parser import ParserLinker

    assert load_linker(None, config).name == LINKERS[DEFAULT_LINKER].model == READER_PARSER  # the reader parser is the default
    assert "reader" in load_linker(None, config).meta and "reader" not in load_linker("parser", config).meta
    assert load_linker("parser", config).name == PARSER  # the BiLSTM parser stays a named backend
    assert isinstance(load_linker("parser", config), ParserLinker)
    assert isinstance(load_linker("pair-mlp", config), TrainedLinker)
    assert isinstance(load_linker(str(MODELS_DIR / PAIR_MLP), config), TrainedLinker)  # backend read from the folder
    assert isinstance(load_linker(str(MODELS_DIR / PARSER), config), ParserLinker)
    with pytest.raises(FileNotFoundError):
        load_linker(str(tmp_path / "nothing"), config)
    with pytest.raises(ValueError):
        load_linker("cross-encoder", config)


def test_trained_linker_keeps_invariants(config, encoder, shipped, no_network):
    graphs = build_graphs(traces(), config, encoder, shipped)
    for g in graphs:
        assert len(g.units) >= 4
        check_invariants(g.units, g.edges, shipped)
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


# Plain per-pair versions of the features, as first written: the vectorised ones must equal them.
def reference_unit_features(featurizer, units, sim):
    import re

    words = [set(re.findall(r"\w+", u.text.lower())) for u in units]
    n, c, s = len(units), len(featurizer.cue_names), len(featurizer.shape_names)
    out = np.zeros((n, featurizer.size), dtype=np.float32)
    for k, u in enumerate(units):
        best, jac = 0.0, 0.0
        if k:
            b = int(np.argmax(sim[k, :k]))
            best = float(sim[k, b])
            jac = len(words[k] & words[b]) / max(1, len(words[k] | words[b]))
        out[k, :c] = [name in u.cues for name in featurizer.cue_names]
        out[k, c:c + s] = [bool(p.search(u.text)) for p in featurizer.shapes]
        out[k, c + s:] = [
            k / max(1, n - 1), k == 0, k == n - 1, u.section == "answer",
            k == 0 or units[k - 1].segment != u.segment, np.log1p(len(u.text)) / 8.0, best, jac,
            float(sim[k, k - 1]) if k else 0.0, float(sim[k, k + 1]) if k + 1 < n else 0.0,
            sum(ch.isdigit() for ch in u.text) / max(1, len(u.text)),
            sum(ch in "=+-*/^<>" for ch in u.text) / max(1, len(u.text)),
        ]
    return out


def reference_rank_best_jaccard(units, sim, i, j):
    import re

    words = [set(re.findall(r"\w+", u.text.lower())) for u in units]
    rank = [int((sim[b, :b] > sim[b, a]).sum()) for a, b in zip(i, j)]
    best = [sim[b, :b].max() for b in j]
    jac = [len(words[a] & words[b]) / max(1, len(words[a] | words[b])) for a, b in zip(i, j)]
    return np.array(rank), np.array(best, dtype=np.float32), np.array(jac)


@pytest.fixture(scope="module")
def sample_items(config, encoder):
    from conftest import SAMPLES
    from thinkprobe.io import iter_traces

    graphs = build_graphs(list(iter_traces(SAMPLES))[:6], config, encoder, load_linker("cue", config))
    return [(g.units, g.embeddings) for g in graphs]


def test_features_equal_the_plain_reference(shipped, sample_items):
    for units, emb in sample_items:
        sim = emb @ emb.T
        i, j, origin = candidate_arrays(units, emb, shipped.params)
        assert np.array_equal(shipped.featurizer(units, emb), reference_unit_features(shipped.featurizer, units, sim))
        pf = pair_features(units, emb, i, j, origin)
        rank, best, jac = reference_rank_best_jaccard(units, sim, i, j)
        assert np.array_equal(pf[:, 1], (1.0 / (1.0 + rank)).astype(np.float32))
        assert np.array_equal(pf[:, 2], sim[i, j] - best)
        assert np.array_equal(pf[:, 11], jac.astype(np.float32))
        assert len(i) > 5 * len(units)  # window, similarity and look-back candidates


def test_split_scoring_computes_the_models_forward(shipped, sample_items):
    import torch

    units, emb = sample_items[0]
    i, j, origin = (torch.from_numpy(a) for a in candidate_arrays(units, emb, shipped.params))
    uf = torch.from_numpy(shipped.featurizer(units, emb))
    pf = torch.from_numpy(pair_features(units, emb, i.numpy(), j.numpy(), origin.numpy()))
    e = torch.from_numpy(emb)
    with torch.inference_mode():
        for model in shipped.models:
            whole = model(e[i], e[j], uf[i], uf[j], pf)
            split = model.pair_logits(model.unit_terms(e, uf), i, j, pf)
            assert torch.allclose(whole, split, atol=1e-5)


def test_pair_scores_cache_per_trace(config, sample_items, tmp_path):
    plain = load_linker("pair-mlp", config)
    cached = load_linker("pair-mlp", config, cache_dir=tmp_path)
    batch = [LinkInput(u, e) for u, e in sample_items]
    want = plain.score_pairs(batch)
    for _ in range(2):
        got = cached.score_pairs(batch)
        for a, b in zip(want, got):
            assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert cached.cache_stats == {"hits": len(batch), "misses": len(batch)}
    # other embeddings are another trace to the cache
    units, emb = sample_items[0]
    cached.score_pairs([LinkInput(units, emb[::-1].copy())])
    assert cached.cache_stats["misses"] == len(batch) + 1
    # the edges of a batch do not depend on which traces were cached
    assert cached.link(batch[::2] + [batch[1]]) == plain.link(batch[::2] + [batch[1]])


def test_type_head_types_every_unit_and_the_linker_honours_them(config, encoder, shipped):
    head = load_type_head()
    for g in build_graphs(traces(), config, encoder, shipped, typer=unit_typer(shipped, "head", head)):
        types = head.predict(g.units, g.embeddings)
        assert len(types) == len(g.units) and set(types) <= set(TYPE_CLASSES)
        check_invariants(g.units, g.edges, shipped)
        final = g.units  # provisional types settled by the edges
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
    return contract_classifier(folder, id2label, seed, words=WORDS, hidden=32, layers=2, positions=128)


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
        check_invariants(item.units, edges, linker)

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
    from thinkprobe.link.crossencoder import SEVEN_WAY_LABELS

    folder = tiny_classifier(tmp_path / "seven", dict(enumerate(SEVEN_WAY_LABELS)), seed=1)
    linker = load_linker("cross-encoder", config, model_dir=str(folder))
    assert linker.nli is None
    for g in build_graphs(traces(), config, encoder, linker):
        check_invariants(g.units, g.edges, linker)


def test_cross_encoder_scores_are_cached_per_trace(config, tmp_path, no_network):
    from thinkprobe.link.crossencoder import SEVEN_WAY_LABELS

    folder = tiny_classifier(tmp_path / "seven", dict(enumerate(SEVEN_WAY_LABELS)), seed=2)
    one = LinkInput([ThoughtUnit(0, "reasoning", 0, 4, "Yes.", segment=0)], np.ones((1, 16), np.float32) / 4)
    batch = link_inputs() + [one]
    plain = load_linker("cross-encoder", config, model_dir=str(folder))
    cached = load_linker("cross-encoder", config, model_dir=str(folder), cache_dir=str(tmp_path / "cache"))
    want = plain.link(batch)
    assert cached.link(batch) == want
    calls = []
    cached.pair_probabilities = lambda pairs: calls.append(pairs) or plain.pair_probabilities(pairs)
    assert cached.link(batch[::-1]) == want[::-1] and not calls  # every trace from the cache
    assert cached.cache_stats == {"hits": len(batch), "misses": len(batch)}
    # another device or truncation is another model to the cache
    other = load_linker("cross-encoder", config, model_dir=str(folder), cache_dir=str(tmp_path / "cache"))
    assert other.cache.prefix == cached.cache.prefix
    longer = type(other)(folder, config, max_length=64, cache_dir=str(tmp_path / "cache"))
    assert longer.cache.prefix != cached.cache.prefix


def test_cross_encoder_rejects_other_labels(config, tmp_path):
    folder = tiny_classifier(tmp_path / "sentiment", {0: "NEGATIVE", 1: "POSITIVE"})
    with pytest.raises(ValueError, match="neither NLI"):
        load_linker("cross-encoder", config, model_dir=str(folder))


def test_threshold_fit_reads_only_the_held_out_silver_split(shared_data):
    import importlib.util
    import random

    spec = importlib.util.spec_from_file_location("fit_thresholds", MODELS_DIR.parent / "scripts" / "fit_thresholds.py")
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    folder = MODELS_DIR / PAIR_MLP
    meta = json.loads((folder / "config.json").read_text())
    ids = (folder / "traces.txt").read_text().split()
    held = fit.heldout_ids(folder)
    assert len(held) == meta["training"]["heldout_traces"]
    # the training script's split: its first val_frac of a seeded shuffle
    order = list(range(len(ids)))
    random.Random(meta["training"]["seed"]).shuffle(order)
    trained_on = {ids[k] for k in order[len(held):]}
    assert len(trained_on) == meta["training"]["train_traces"] and not held & trained_on
    assert not any("QwQ-32B-Preview" in d for d in held)  # the dev set's generator is not in silver
    best = meta["training"]["threshold_fit"]["best"]
    assert (meta["decode"]["threshold_near"], meta["decode"]["threshold_far"]) == (best["threshold_near"], best["threshold_far"])


def test_configs_and_models_are_found_beside_the_package_or_in_the_installed_share_folder():
    import sys
    from pathlib import Path

    from thinkprobe.config import DEFAULT_CONFIG, resource_dir

    assert MODELS_DIR == resource_dir("models") and (MODELS_DIR / PAIR_MLP / "config.json").is_file()
    assert DEFAULT_CONFIG.is_file()
    # what a wheel install reads: setup.cfg's data_files put them under <prefix>/share/thinkprobe
    assert resource_dir("no-such-folder") == Path(sys.prefix) / "share" / "thinkprobe" / "no-such-folder"
    setup = (MODELS_DIR.parent / "setup.cfg").read_text()
    assert "share/thinkprobe/configs = configs/default.yaml" in setup
    for folder in MODELS_DIR.iterdir():  # every shipped model (pair MLP, parser) goes into a wheel
        if (folder / "config.json").is_file():
            assert f"share/thinkprobe/models/{folder.name} = " in setup


def test_batched_typing_and_linking_through_a_process_pool_equal_the_plain_calls(config, sample_items, tmp_path):
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial
    from multiprocessing import get_context

    linker = load_linker("pair-mlp", config)
    typer = unit_typer(linker, "head", cache_dir=tmp_path)
    items = list(sample_items)
    with ProcessPoolExecutor(2, mp_context=get_context("forkserver")) as pool:
        mapper = partial(pool.map, chunksize=2)
        typed = typer.batch(items, mapper)
        assert typed == [typer(u, e) for u, e in items]
        inputs = [LinkInput(u, e) for u, e in zip(typed, (e for _, e in items))]
        assert linker.link(inputs, mapper=mapper) == linker.link(inputs)
