"""The `Linker` contract (thinkprobe/link/protocol.py), checked for every backend the same way: edges
point only to existing units, types from the six, critique polarity set, forward edges i -> j with
i < j and backward edges j -> i, one edge per pair of units where probabilities are decoded
(link/decode.py), every unit but the first with an incoming forward edge (where probabilities are
decoded: or a backward edge of its own, and none needed with `force_parent: false`),
deterministic, empty and one-unit traces, and a 10,000-unit trace in bounded memory (one backend of
each kind). Units are sentences of the sample traces (real reasoning text, cue-typed by the config); embeddings are
seeded random vectors (a repeated sentence gets its earlier vector plus noise, so restatements
and far links occur). Model backends run offline: the shipped pair MLP, the parser with seeded
random weights, and cross-encoders on tiny random BERT classifiers written to a temporary folder.

Also: the blocked similarity (`Similarity` in strips of rows) answers exactly what the whole
matrix answers, and every backend links the same with strips as with the whole matrix."""
import json
import re
import tracemalloc

import numpy as np
import pytest

import toy_linker  # noqa: F401  (registers the toy backend)
from thinkprobe.link import LINKERS, LinkInput, load_linker
from thinkprobe.link.candidates import Similarity
from thinkprobe.link import candidates as link_candidates
from thinkprobe.nodetypes import cue_categories, provisional_type
from thinkprobe.records import BACKWARD_EDGES, EDGE_TYPES, FORWARD_EDGES, ThoughtUnit

from conftest import SAMPLES

DIM = 384  # the pair MLP reads MiniLM-sized embeddings
POLARITIES = ("affirm", "negate", "uncertain")  # spec: a critique edge carries one
# Every registered backend (tests/toy_linker.py registers one more, as a plugin would), plus variants
# of two of them: the parser with the shipped model's features, and a seven-way cross-encoder.
BACKENDS = [*LINKERS, "parser-lexical", "cross-encoder-7"]


def sample_sentences() -> list[str]:
    out = []
    for line in SAMPLES.read_text(encoding="utf-8").splitlines():
        text = re.sub(r"</?think>", " ", json.loads(line)["response"])
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.strip()) > 2]
    return out


def make_trace(sentences, n: int, cfg, seed: int) -> LinkInput:
    """n units cycling through `sentences` from a seeded offset; unit types and cues from the
    config's lexicon; blocks of 7 units; the last units in the answer section."""
    rng = np.random.default_rng(seed)
    start = int(rng.integers(len(sentences)))
    vectors: dict[str, np.ndarray] = {}
    units, emb = [], np.zeros((n, DIM), np.float32)
    for k in range(n):
        text = sentences[(start + k) % len(sentences)]
        cues = cue_categories(text, cfg)
        section = "answer" if k >= n - 2 and n > 3 else "reasoning"
        units.append(ThoughtUnit(k, section, 0, len(text), text, segment=k // 7,
                                 node_type=provisional_type(cues, cfg), cues=cues))
        base = vectors.setdefault(text, rng.standard_normal(DIM).astype(np.float32))
        emb[k] = base + 0.3 * rng.standard_normal(DIM).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return LinkInput(units, emb)


@pytest.fixture(scope="module")
def sentences():
    return sample_sentences()


@pytest.fixture(scope="module")
def batch(config, sentences):
    return [make_trace(sentences, n, config, seed) for seed, n in enumerate((40, 2, 90, 13, 150))]


def tiny_classifier(folder, id2label, seed=0, words=None, hidden=16, layers=1, positions=64):
    """A tiny random BERT sequence classifier with a word-level vocabulary (default: of the sample
    text); test_trained_linker uses it too, with its own words and sizes."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    if words is None:
        words = sorted({w for s in sample_sentences() for w in re.findall(r"[a-z]+", s.lower())})[:2000]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(str(folder))
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(words) + 5, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                     intermediate_size=2 * hidden, max_position_embeddings=positions, num_labels=len(id2label),
                     id2label=id2label, label2id={v: k for k, v in id2label.items()})
    BertForSequenceClassification(cfg).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def linkers(config, tmp_path_factory):
    """Each backend made once for the module, whichever test asks for it first."""
    made = {}

    def get(name):
        if name not in made:
            made[name] = make_linker(name, config, tmp_path_factory)
        return made[name]

    return get


@pytest.fixture(scope="module", params=BACKENDS)
def linker(request, linkers):
    return linkers(request.param)


# The 10,000-unit trace for one backend of each kind: parser-reader has every part of parser and
# parser-lexical (lexical pair features, and a reader and reranker besides), cross-encoder-7 the
# cross-encoder's code with more labels; the other three took 80 s of `make test` and tested nothing more.
# The default linker's run is part of `make test`; the other kinds' (2.5 minutes on the
# 2-core machine) are scale checks, run by `make scale`.
LONG_TRACE_BACKENDS = [b if b == "parser-reader" else pytest.param(b, marks=pytest.mark.scale)
                       for b in BACKENDS if b not in ("parser", "parser-lexical", "cross-encoder")]


@pytest.fixture(scope="module", params=LONG_TRACE_BACKENDS)
def long_trace_linker(request, linkers):
    return linkers(request.param)


def make_linker(name, config, tmp_path_factory):
    if name.startswith("parser"):  # seeded random weights: the contract holds whatever the training;
        # parser-lexical: with the shipped model's features, candidates and decoding
        from thinkprobe.link.parser import init_model_dir

        # parser-reader: with a reader too (the encoder's top layers, here untrained, read each unit's tokens)
        # and a candidate reranker, as the shipped model
        folder = init_model_dir(tmp_path_factory.mktemp("parser") / "p", config, seed=0,
                                lexical_pairs=name != "parser", reader=name == "parser-reader", rerank=name == "parser-reader")
        return load_linker(str(folder), config)
    if not name.startswith("cross-encoder"):
        return load_linker(name, config)  # what the registry loads for a run
    from thinkprobe.link.crossencoder import SEVEN_WAY_LABELS, CrossEncoderLinker

    labels = {0: "NEUTRAL", 1: "CONTRADICTION", 2: "ENTAILMENT"} if name == "cross-encoder" else dict(enumerate(SEVEN_WAY_LABELS))
    folder = tiny_classifier(tmp_path_factory.mktemp(name), labels)
    # short pairs and big batches: the 10,000-unit trace has about 100,000 candidate pairs
    return CrossEncoderLinker(folder, config, max_length=24, batch_size=512)


def check_contract(item: LinkInput, edges, linker=None) -> None:
    n = len(item.units)
    incoming = set()
    for e in edges:
        assert 0 <= e.src < n and 0 <= e.dst < n, e
        assert e.edge_type in EDGE_TYPES, e
        if e.edge_type in FORWARD_EDGES:
            assert e.src < e.dst, e
            incoming.add(e.dst)
        else:
            assert e.edge_type in BACKWARD_EDGES and e.src > e.dst, e
        if e.edge_type == "critique":
            assert e.polarity in POLARITIES, e
        else:
            assert not e.polarity, e
    decode = getattr(linker, "decode", None)
    if decode is None:
        assert incoming == set(range(1, n)), "every unit but the first has an incoming forward edge"
    elif decode.get("force_parent", True):  # else a unit may open a new line
        # a forced parent takes a window pair that carries no edge yet: a unit whose window pairs all
        # carry its own backward edges keeps those instead
        linked = incoming | {e.src for e in edges if e.src > e.dst}
        assert linked == set(range(1, n)), "every unit but the first has a forward parent or a backward edge"
    assert len(set(edges)) == len(edges), "no edge twice"
    if decode is not None:  # probabilities decoded (link/decode.py, or the cross-encoder's zero-shot NLI decoding)
        pairs = [(min(e.src, e.dst), max(e.src, e.dst)) for e in edges]
        assert len(set(pairs)) == len(pairs), "one edge per pair of units: decoding makes no 2-cycle"


def test_contract_on_sample_traces(linker, batch, no_network):
    edges = linker.link(batch)
    assert len(edges) == len(batch)
    for item, es in zip(batch, edges):
        check_contract(item, es, linker)
        cands = linker.candidates(item)
        assert len(cands) == len(item.units)
        assert all(((c >= 0) & (c < j)).all() for j, c in enumerate(cands))
    assert any(e.edge_type in BACKWARD_EDGES for es in edges for e in es)
    assert isinstance(linker.cache_stats, dict)
    assert isinstance(linker.structural_types, bool) and linker.name


def test_deterministic_and_independent_of_the_batch(linker, batch):
    first = linker.link(batch)
    assert linker.link(batch) == first
    assert linker.link(batch[::-1]) == first[::-1]
    assert [linker.link([item])[0] for item in batch[:2]] == first[:2]
    assert linker.link(batch, mapper=map) == first


def test_empty_and_one_unit_traces(linker, config, sentences):
    assert linker.link([]) == []
    empty = LinkInput([], np.zeros((0, DIM), np.float32))
    one = make_trace(sentences, 1, config, seed=3)
    assert linker.link([empty, one]) == [[], []]
    assert linker.candidates(empty) == [] and [c.tolist() for c in linker.candidates(one)] == [[]]


def test_blocked_similarity_links_as_the_whole_matrix(linker, batch, monkeypatch):
    whole = linker.link(batch)
    monkeypatch.setattr(link_candidates, "SIM_BLOCK", 64 * 7)  # strips of a few rows for these traces
    assert Similarity(batch[2].embeddings).dense is None
    assert linker.link(batch) == whole


def seeded_probabilities(num_labels: int, pairs) -> np.ndarray:
    """Probabilities for text pairs as a cross-encoder's model gives them (rows summing to 1, in
    float32), drawn from a generator seeded by the number of pairs."""
    rng = np.random.default_rng(len(pairs))
    return rng.dirichlet(np.full(num_labels, 0.3), size=len(pairs)).astype(np.float32)


def test_ten_thousand_units_in_bounded_memory(long_trace_linker, config, sentences, monkeypatch):
    linker = long_trace_linker
    item = make_trace(sentences, 10_000, config, seed=7)
    if hasattr(linker, "pair_probabilities"):
        # A cross-encoder's model on the trace's 100,000 candidate pairs took a minute, in the
        # tokenizer mostly, and its tensors are not what tracemalloc sees (torch allocates them):
        # seeded probabilities of the model's shape stand in for it; the candidates, the pairs' texts
        # and the decoding are the linker's own. The tiny model itself links the contract's batch.
        monkeypatch.setattr(linker, "pair_probabilities", lambda pairs: seeded_probabilities(linker.num_labels, pairs))
    tracemalloc.start()
    try:
        edges = linker.link([item])[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    check_contract(item, edges, linker)
    # A whole-trace similarity matrix alone would be 400 MB (float32); NumPy's allocations are traced.
    assert peak < 250 * 2**20, f"peak {peak / 2**20:.0f} MB"


# ----------------------------------------------------------------------------- the blocked similarity


def exact_embeddings(n, d, seed):
    """Embeddings whose dot products are exact in float32 (small integers / 4), with many ties:
    any summation order gives the same value, so strips and the whole matrix must agree bit for bit
    and ties test the tie-breaking."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-2, 3, size=(n, d)) / 4).astype(np.float32)


@pytest.mark.parametrize("n,block", [(1, 4), (2, 1), (37, 37 * 5), (300, 300 * 7), (300, 1)])
def test_similarity_strips_equal_the_whole_matrix(n, block):
    emb = exact_embeddings(n, 6, seed=n + block)
    dense = emb @ emb.T
    blocked = Similarity(emb, block=block)
    assert blocked.dense is None or n * n <= block
    got = np.full((n, n), np.nan, np.float32)
    for r0, r1, strip in blocked.strips():
        assert strip.size <= max(block, n)
        got[r0:r1, :r1] = strip
    assert np.array_equal(np.tril(got), np.tril(dense))
    for k, lag in [(1, 0), (3, 0), (5, 3), (2, 1)]:
        idx, val = blocked.top_earlier(k, lag)
        for q in range(n):
            ref = np.argsort(-dense[q, : max(0, q - lag)], kind="stable")[:k]
            assert idx[q, : len(ref)].tolist() == ref.tolist() and (idx[q, len(ref):] == -1).all()
            assert np.array_equal(val[q, : len(ref)], dense[q, ref])
    j = np.repeat(np.arange(1, n), 2)
    i = np.array([a for q in range(1, n) for a in (0, q - 1)], dtype=np.int64)
    order = np.random.default_rng(0).permutation(len(i))  # pairs in any order
    rank, best = blocked.rank_and_best(i[order], j[order])
    assert rank.tolist() == [int((dense[b, :b] > dense[b, a]).sum()) for a, b in zip(i[order], j[order])]
    assert best.tolist() == [float(dense[b, :b].max()) for b in j[order]]
    assert np.array_equal(blocked.pairs(i, j), dense[i, j])
    assert np.array_equal(blocked.adjacent()[1:], dense[np.arange(1, n), np.arange(n - 1)])
    if n > 1:
        assert np.array_equal(blocked.row(n - 1), dense[n - 1, : n - 1])
        assert np.array_equal(blocked.at(n - 1, np.array([0])), dense[n - 1, [0]])


def test_short_traces_keep_the_whole_matrix():
    emb = exact_embeddings(50, 8, seed=1)
    assert np.array_equal(Similarity(emb).dense, emb @ emb.T)


def test_parser_scores_and_types_are_cached_per_trace(config, batch, tmp_path):
    from thinkprobe.link.parser import ParserLinker, init_model_dir

    folder = init_model_dir(tmp_path / "p", config, seed=1)
    plain = ParserLinker(folder, config)
    want_edges = plain.link(batch)
    want_types = [[u.node_type for u in units] for units in plain.typer.batch([(b.units, b.embeddings) for b in batch])]
    first = ParserLinker(folder, config, cache_dir=tmp_path / "cache")
    assert first.link(batch) == want_edges and first.cache_stats == {"hits": 0, "misses": len(batch)}
    again = ParserLinker(folder, config, cache_dir=tmp_path / "cache")  # a new run: everything from disk
    typed = again.typer.batch([(b.units, b.embeddings) for b in batch[::-1]])
    assert [[u.node_type for u in units] for units in typed] == want_types[::-1]
    assert again.link(batch) == want_edges
    assert again.cache_stats["misses"] == 0 and again.cache_stats["hits"] == len(batch)
