"""The trace-level parser backend (thinkprobe/link/parser/): blocked candidate search, features,
a tiny model learning a structural pattern, model folder round trip and determinism."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from thinkprobe.config import Config  # noqa: E402
from thinkprobe.link import LinkInput  # noqa: E402
from thinkprobe.link.candidates import CandidateParams  # noqa: E402
from thinkprobe.link.features import word_index  # noqa: E402
from thinkprobe.link.protocol import PAIR_CLASSES, TYPE_CLASSES  # noqa: E402
from thinkprobe.link.parser import (  # noqa: E402
    LEXICAL_PAIR_FEATURES, QUESTION_FEATURES, ParserFeaturizer, ParserLinker, build_parser_model, distance_bucket,
    earlier_topk, init_model_dir, last_mentions, lexical_pair_features, number_index, pair_class_probs, parser_candidates,
    question_overlap, trace_features,
)
from thinkprobe.records import ThoughtUnit  # noqa: E402


def _units(n: int, segment_every: int = 5) -> list[ThoughtUnit]:
    texts = ["Let me plan this.", "So x = 3.", "Wait, is that right?", "Therefore the answer is 3.", "Hmm, 2 + 2 = 4."]
    out, pos = [], 0
    for k in range(n):
        t = texts[k % len(texts)]
        cues = {0: ("MET",), 2: ("CRT",), 3: ("CON",)}.get(k % len(texts), ())
        out.append(ThoughtUnit(k, "reasoning", pos, pos + len(t), t, segment=k // segment_every, node_type="RSN", cues=cues))
        pos += len(t) + 1
    return out


def _emb(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    e = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return e / np.linalg.norm(e, axis=1, keepdims=True)


@pytest.mark.parametrize("n,k,skip,block,horizon", [(1, 3, 0, 512, 0), (7, 3, 0, 2, 0), (40, 5, 6, 7, 0), (40, 50, 2, 512, 0),
                                                    (40, 5, 6, 7, 12), (60, 3, 2, 1, 9), (60, 50, 0, 512, 30)])
def test_earlier_topk_matches_the_dense_search(n, k, skip, block, horizon):
    emb = _emb(n)
    emb[n // 2] = emb[0]  # an exact repeat far back
    idx, best = earlier_topk(emb, k, skip=skip, block_values=block * n, horizon=horizon)
    sim = emb @ emb.T
    for j in range(n):
        lo = max(0, j - horizon) if horizon else 0
        hi = j - skip
        want = lo + np.argsort(-sim[j, lo:max(hi, lo)], kind="stable")[:k] if hi > lo else np.zeros(0, int)
        got = idx[j][idx[j] >= 0]
        assert got.tolist() == want.tolist()
        assert best[j] == pytest.approx(sim[j, lo:j].max() if j else 0.0, abs=1e-6)


def test_candidates_cover_window_similar_and_lookback():
    units = _units(30)
    emb = _emb(30)
    emb[29] = emb[1]  # unit 29 restates unit 1
    p = CandidateParams(window=3, top_k=2, plan_lookback=1, conclusion_lookback=1, block_lookback=1)
    topk, _ = earlier_topk(emb, p.top_k, skip=p.window)
    i, j, origin = parser_candidates(units, topk, p)
    assert np.all(i < j) and np.all(np.diff(j) >= 0)
    pairs = set(zip(i.tolist(), j.tolist()))
    assert {(26, 29), (27, 29), (28, 29), (1, 29)} <= pairs  # window and the restated unit
    assert (25, 29) in pairs  # the last planning unit before the window (unit 25 is a MET unit)
    assert len(pairs) == len(i)  # one row per pair, origins merged


def _candidates_by_the_rules(units, topk, p, last, learned):
    """Each unit's candidates read off the rules one unit at a time (what `parser_candidates` computes with arrays)."""
    met = [k for k, u in enumerate(units) if "MET" in u.cues]
    con = [k for k, u in enumerate(units) if "CON" in u.cues]
    starts = [k for k in range(len(units)) if k == 0 or units[k].segment != units[k - 1].segment]
    out = []
    for j in range(len(units)):
        lo = max(0, j - p.window)
        origin = dict.fromkeys(range(lo, j), 1)
        similar = [int(i) for i in topk[j, :p.top_k]] + ([int(i) for i in learned[j, :p.learned_k]] if learned is not None else [])
        look = [k for k in met if k < lo][-p.plan_lookback:] if p.plan_lookback else []
        if p.conclusion_lookback and ("CON" in units[j].cues or "CRT" in units[j].cues):
            look += [k for k in con if k < lo][-p.conclusion_lookback:]
        look += [k for k in starts if k < lo][-p.block_lookback:] if p.block_lookback else []
        look += [i for i in last[j] if i < lo][:p.number_lookback] if last is not None else []
        for i in similar:
            if 0 <= i < lo:
                origin[i] = origin.get(i, 0) | 2
        for i in look:
            origin[i] = origin.get(i, 0) | 4
        out += [(i, j, origin[i]) for i in sorted(origin)]
    return out


@pytest.mark.parametrize("n", [0, 1, 2, 9, 45])
@pytest.mark.parametrize("p", [CandidateParams(window=3, top_k=2, plan_lookback=1, conclusion_lookback=2, block_lookback=2, number_lookback=2),
                               CandidateParams(window=0, top_k=4, plan_lookback=0, conclusion_lookback=0, block_lookback=0, learned_k=3),
                               CandidateParams(window=6, top_k=0, plan_lookback=3, conclusion_lookback=4, block_lookback=3, number_lookback=3,
                                               learned_k=5)])
def test_candidates_equal_the_rules_read_unit_by_unit(n, p):
    units = _units(n, segment_every=4)
    emb = _emb(max(n, 1))[:n]
    topk, _ = earlier_topk(emb, max(p.top_k, 1), skip=p.window)
    last = last_mentions(number_index(units))
    learned = np.random.default_rng(n).integers(-1, max(n, 1), size=(n, 6))  # any units, -1 for none
    i, j, origin = parser_candidates(units, topk, p, last, learned)
    assert [a.dtype for a in (i, j, origin)] == [np.int64] * 3
    assert list(zip(i.tolist(), j.tolist(), origin.tolist())) == _candidates_by_the_rules(units, topk, p, last, learned)


def test_features_have_declared_shapes_and_buckets():
    cfg = Config.load()
    units, emb = _units(12), _emb(12)
    feat = ParserFeaturizer(list(cfg.lexicon), {"question": r"\?\s*$"})
    f = trace_features(units, emb, CandidateParams(window=2, top_k=2), feat)
    assert f["uf"].shape == (12, feat.size)
    assert f["pf"].shape == (len(f["i"]), 16)
    assert np.array_equal(f["bucket"], distance_bucket(f["j"] - f["i"]))
    assert f["uf"][2, feat.cue_names.index("CRT")] == 1.0
    assert f["uf"][2, len(feat.cue_names)] == 1.0  # "Wait, is that right?" ends with a question mark


def test_a_tiny_parser_learns_to_link_two_back():
    """Synthetic traces where every unit's parent is the unit two before it: after a few hundred
    steps the arc probability of distance-2 pairs is high and that of distance-1 pairs low."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dim, n = 16, 20
    model = build_parser_model(dim, 4, proj=16, hidden=16, arc_hidden=16, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    i, j = zip(*[(a, b) for b in range(1, n) for a in range(max(0, b - 4), b)])
    i, j = np.array(i), np.array(j)
    arc = torch.tensor((j - i == 2).astype(np.float32))
    bucket = torch.from_numpy(distance_bucket(j - i))
    pf = torch.zeros(len(i), 16)
    for _ in range(150):
        e = torch.from_numpy(rng.normal(size=(1, n, dim)).astype(np.float32))
        h = model.states(e, torch.zeros(1, n, 4), torch.tensor([n]))
        logits = model.pair_logits(h.reshape(n, -1), torch.from_numpy(i), torch.from_numpy(j), bucket, pf)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], arc)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        e = torch.from_numpy(rng.normal(size=(1, n, dim)).astype(np.float32))
        h = model.states(e, torch.zeros(1, n, 4), torch.tensor([n]))
        p = pair_class_probs(model.pair_logits(h.reshape(n, -1), torch.from_numpy(i), torch.from_numpy(j), bucket, pf))
    edge = 1 - p[:, 0].numpy()
    assert edge[j - i == 2].min() > 0.8
    assert edge[j - i != 2].max() < 0.2
    assert np.allclose(p.sum(dim=1).numpy(), 1.0, atol=1e-5)


def test_model_folder_round_trip_and_determinism(tmp_path):
    cfg = Config.load()
    folder = init_model_dir(tmp_path / "parser-test", cfg, seed=3)
    batch = [LinkInput(_units(n), _emb(n, seed=n)) for n in (0, 1, 2, 9, 33)]
    a, b = ParserLinker(folder, cfg), ParserLinker(folder, cfg)
    typed = a.typer.batch([(x.units, x.embeddings) for x in batch])
    batch = [LinkInput(t, x.embeddings) for t, x in zip(typed, batch)]
    ea, eb = a.link(batch), b.link(list(batch))
    assert ea == eb
    assert ea[0] == [] and ea[1] == []
    assert a.decode["force_parent"] is False  # decoded as the shipped model decodes (issue 40)
    for item, edges, units in zip(batch, ea, typed):
        n = len(item.units)
        assert all(u.node_type in TYPE_CLASSES for u in units)
        assert not units or units[0].node_type not in ("CRT", "RPT")
        assert all(0 <= e.src < n and 0 <= e.dst < n and e.src != e.dst for e in edges)
        forward = {e.dst for e in edges if e.edge_type in ("inference", "elaboration", "branch") and e.src < e.dst}
        if a.decode.get("force_parent", True):
            assert forward >= set(range(1, n))  # every unit but the first has a forward parent
        assert all(e.polarity in ("affirm", "negate", "uncertain") for e in edges if e.edge_type == "critique")
    cands = a.candidates(batch[3])
    assert len(cands) == 9 and all(np.all(c < k) for k, c in enumerate(cands))
    assert set(PAIR_CLASSES[1:]) >= {e.edge_type if e.edge_type != "critique" else f"critique:{e.polarity}" for es in ea for e in es}


def _texts(texts: list[str]) -> list[ThoughtUnit]:
    out, pos = [], 0
    for k, t in enumerate(texts):
        out.append(ThoughtUnit(k, "reasoning", pos, pos + len(t), t, segment=0))
        pos += len(t) + 1
    return out


def test_lexical_pair_features_match_a_direct_computation():
    """idf-weighted word cosine, shared numbers (but 0, 1, 2) and last number mention, against a
    plain Python computation on a trace where each of them matters."""
    import math
    import re

    texts = ["The radius is 12 cm and the angle is 30 degrees.", "Hmm, let me think.", "So the area is 144 pi.",
             "The radius 12 gives a diameter of 24.", "Then 24 and 144 again, with 1 and 2.", "Wait, the angle was 30.",
             "So the radius is 12 cm.", "Nothing shared here!"]
    units = _texts(texts)
    n = len(units)
    i, j = zip(*[(a, b) for b in range(n) for a in range(b)])
    i, j = np.array(i), np.array(j)
    numbers = number_index(units)
    last = last_mentions(numbers)
    got = lexical_pair_features(n, i, j, word_index(units), numbers, last)
    words = [set(re.findall(r"\w+", t.lower())) for t in texts]
    nums = [set(re.findall(r"\d+(?:\.\d+)?", t)) - {"0", "1", "2"} for t in texts]
    df = {w: sum(w in s for s in words) for s in words for w in s}
    idf = {w: math.log(n / c) for w, c in df.items()}
    for k, (a, b) in enumerate(zip(i, j)):
        norm = math.sqrt(sum(idf[w] ** 2 for w in words[a])) * math.sqrt(sum(idf[w] ** 2 for w in words[b]))
        want = sum(idf[w] ** 2 for w in words[a] & words[b]) / norm if norm else 0.0
        assert got[k, 0] == pytest.approx(want, abs=1e-5)
        assert got[k, 1] == float(bool(nums[a] & nums[b]))
        lasts = {max(q for q in range(b) if x in nums[q]) for x in nums[b] if any(x in nums[q] for q in range(b))}
        assert got[k, 2] == float(a in lasts)
    assert last[5] == [0] and last[6] == [3] and last[4] == [3, 2]  # 30 in unit 0; 12 last in unit 3; 24 in 3, 144 in 2
    assert got[(i == 0) & (j == 7)].tolist() == [[0.0, 0.0, 0.0]]


def test_number_lookback_adds_the_last_mention_beyond_the_window():
    texts = ["Let x = 37."] + [f"Step {k} says nothing new." for k in range(3, 12)] + ["Now use 37 again."]
    units = _texts(texts)
    emb = _emb(len(units))
    p = CandidateParams(window=3, top_k=0, plan_lookback=0, conclusion_lookback=0, block_lookback=0, number_lookback=2)
    topk, _ = earlier_topk(emb, 0, skip=p.window)
    last = last_mentions(number_index(units))
    i, j, _ = parser_candidates(units, topk, p, last)
    n = len(units) - 1
    assert set(i[j == n].tolist()) == {0, n - 3, n - 2, n - 1}
    i0, j0, _ = parser_candidates(units, topk, CandidateParams(window=3, top_k=0, plan_lookback=0, conclusion_lookback=0,
                                                                block_lookback=0), last)
    assert 0 not in i0[j0 == n].tolist()


def test_lexical_features_widen_the_pair_features():
    cfg = Config.load()
    units, emb = _units(12), _emb(12)
    feat = ParserFeaturizer(list(cfg.lexicon), {"question": r"\?\s*$"}, lexical_pairs=True)
    f = trace_features(units, emb, CandidateParams(window=2, top_k=2), feat)
    assert f["pf"].shape == (len(f["i"]), feat.pair_size) and feat.pair_size == 16 + LEXICAL_PAIR_FEATURES
    plain = trace_features(units, emb, CandidateParams(window=2, top_k=2), ParserFeaturizer(list(cfg.lexicon), {"question": r"\?\s*$"}))
    assert np.array_equal(f["pf"][:, :16], plain["pf"])


def test_labels_follow_types_keeps_critique_and_repetition_to_units_typed_so():
    """With `labels_follow_types`, a pair whose most probable label is critique (repetition) keeps
    its edge but takes another label unless the later unit is typed CRT (RPT)."""
    from dataclasses import replace

    from thinkprobe.link.decode import decode_edges

    units = [replace(u, node_type=t) for u, t in zip(_units(4), ["RSN", "RSN", "CRT", "RSN"])]
    i, j = np.array([0, 1, 0, 2]), np.array([1, 2, 3, 3])
    origin = np.ones(4, dtype=np.int64)
    probs = np.zeros((4, len(PAIR_CLASSES)), np.float32)
    crit, inf, rep = PAIR_CLASSES.index("critique:negate"), PAIR_CLASSES.index("inference"), PAIR_CLASSES.index("repetition")
    probs[:, 0] = 0.1
    probs[:, crit] = 0.6
    probs[:, inf] = 0.3
    probs[3, [crit, rep, inf]] = 0.0, 0.6, 0.3
    decode = {"threshold_near": 0.5, "threshold_far": 0.5, "force_structural": False}
    before = decode_edges(units, probs, i, j, origin, decode)
    after = decode_edges(units, probs, i, j, origin, {**decode, "labels_follow_types": True})
    kinds = lambda edges: sorted((min(e.src, e.dst), max(e.src, e.dst), e.edge_type) for e in edges)  # noqa: E731
    backward = lambda edges: [k for k in kinds(edges) if k[2] in ("critique", "repetition")]  # noqa: E731
    assert backward(before) == [(0, 1, "critique"), (0, 3, "critique"), (1, 2, "critique"), (2, 3, "repetition")]
    assert backward(after) == [(1, 2, "critique")]  # only unit 2 is typed CRT, and no unit RPT
    assert {(0, 1, "inference"), (0, 3, "inference"), (2, 3, "inference")} <= set(kinds(after))


def _pair_probs(rows: dict[tuple[int, int], dict[str, float]], n: int):
    """Candidate pairs (every i < j, all from the window) and their class probabilities: `rows`
    gives the non-'none' classes of some pairs; every other pair is 'none' at 0.95."""
    pairs = [(a, b) for b in range(n) for a in range(b)]
    probs = np.zeros((len(pairs), len(PAIR_CLASSES)), np.float32)
    probs[:, 0] = 0.95
    probs[:, PAIR_CLASSES.index("inference")] = 0.05
    for k, pair in enumerate(pairs):
        if pair in rows:
            probs[k] = 0.0
            for name, p in rows[pair].items():
                probs[k, PAIR_CLASSES.index(name)] = p
            probs[k, 0] = 1.0 - sum(rows[pair].values())
    i, j = (np.array(x) for x in zip(*pairs))
    return probs, i, j, np.ones(len(pairs), dtype=np.int64)


def test_a_unit_without_a_probable_parent_keeps_none_unless_forced():
    """`force_parent: false` (the shipped decoding, issue 40): a unit whose every candidate parent is
    improbable opens a new line of thought instead of being chained to its most probable neighbour."""
    from thinkprobe.link.decode import decode_edges

    units = _units(3)
    probs, i, j, origin = _pair_probs({(0, 1): {"inference": 0.8}}, 3)
    decode = {"threshold_near": 0.5, "threshold_far": 0.5, "force_structural": False}
    free = decode_edges(units, probs, i, j, origin, {**decode, "force_parent": False})
    forced = decode_edges(units, probs, i, j, origin, decode)
    assert [(e.src, e.dst) for e in free] == [(0, 1)]
    assert not [e for e in free if e.dst == 2]  # unit 2: no parent, a new idea
    assert [e.dst for e in forced] == [1, 2]  # the old rule gives it one anyway


def test_a_vetoed_pair_is_dropped_or_converted_as_decode_says():
    """A pair whose most probable label (critique) its later unit's type (RSN) forbids: `vetoed: drop`
    draws no edge; the default converts it to its most probable allowed label."""
    from thinkprobe.link.decode import decode_edges

    units = _units(3)
    probs, i, j, origin = _pair_probs({(0, 1): {"inference": 0.8}, (1, 2): {"critique:negate": 0.6, "inference": 0.2}}, 3)
    decode = {"threshold_near": 0.5, "threshold_far": 0.5, "labels_follow_types": True, "force_parent": False}
    dropped = decode_edges(units, probs, i, j, origin, {**decode, "vetoed": "drop"})
    converted = decode_edges(units, probs, i, j, origin, decode)
    assert [(e.src, e.dst, e.edge_type) for e in dropped] == [(0, 1, "inference")]
    assert [(e.src, e.dst, e.edge_type) for e in converted] == [(0, 1, "inference"), (1, 2, "inference")]


@pytest.mark.parametrize("seed", range(20))
def test_decoding_never_puts_two_edges_on_one_pair(seed):
    """Random probabilities and types, forced parents and forced structural edges on: every pair of
    units carries at most one edge, so decoding never closes a 2-cycle (a forced parent beside a
    critique or repetition of the same pair was 34% of our backward pairs before)."""
    from dataclasses import replace

    from thinkprobe.link.decode import decode_edges

    rng = np.random.default_rng(seed)
    n = 12
    units = [replace(u, node_type=str(rng.choice(["RSN", "CRT", "RPT", "MET"]))) for u in _units(n)]
    probs, i, j, origin = _pair_probs({}, n)
    probs = rng.dirichlet(np.full(len(PAIR_CLASSES), 0.5), size=len(i)).astype(np.float32)
    for decode in ({"threshold_near": 0.3, "threshold_far": 0.3},
                   {"threshold_near": 0.3, "threshold_far": 0.3, "labels_follow_types": True, "plans_elaborate": True},
                   {"threshold_near": 0.3, "threshold_far": 0.3, "labels_follow_types": True, "threshold_critique": 0.1}):
        edges = decode_edges(units, probs, i, j, origin, decode)
        pairs = [(min(e.src, e.dst), max(e.src, e.dst)) for e in edges]
        assert len(pairs) == len(set(pairs)), edges
        # force_parent on: a unit gets a forward parent unless each of its pairs already carries an edge
        assert all(any(e.dst == b and e.src < b for e in edges) or sum(p[1] == b for p in pairs) == b for b in range(1, n))


def test_a_critique_unit_critiques_every_pair_whose_critique_probability_reaches_the_threshold():
    """`threshold_critique`: a unit typed CRT critiques, beside its one most probable target, every
    earlier unit whose critique probability (the polarities together) reaches it, near or far, on
    pairs that carry no edge yet; a unit of another type gets no such edge, and no pair gets two."""
    from dataclasses import replace

    from thinkprobe.link.decode import decode_edges

    units = [replace(u, node_type=t) for u, t in zip(_units(9), ["RSN"] * 8 + ["CRT"])]
    rows = {(7, 8): {"critique:negate": 0.7},                                  # the most probable target
            (1, 8): {"critique:negate": 0.05, "critique:uncertain": 0.07},     # far, 0.12 together
            (3, 8): {"critique:affirm": 0.05},                                 # below 0.1
            (6, 8): {"inference": 0.5, "critique:negate": 0.2},               # already an inference edge
            (2, 5): {"critique:negate": 0.4}}                                  # unit 5 is not CRT
    probs, i, j, origin = _pair_probs(rows, 9)
    decode = {"threshold_near": 0.45, "threshold_far": 0.45, "force_parent": False, "labels_follow_types": True,
              "force_structural": True}
    plain = {(e.src, e.dst, e.edge_type, e.polarity) for e in decode_edges(units, probs, i, j, origin, decode)}
    more = {(e.src, e.dst, e.edge_type, e.polarity) for e in decode_edges(units, probs, i, j, origin,
                                                                           {**decode, "threshold_critique": 0.1})}
    assert (8, 7, "critique", "negate") in plain and not {e for e in plain if e[0] == 8 and e[1] < 7}
    assert more - plain == {(8, 1, "critique", "uncertain")}
    assert (6, 8, "inference", "") in more and not {e for e in more if e[:2] in {(8, 6), (8, 3), (5, 2)}}
    assert not {e for e in more if e[0] == 5 and e[2] == "critique"}


def test_synthesis_needs_two_blocks_and_structural_units_lose_weak_parents():
    """`synthesis_min_blocks: 2`: a synthesis over units of one block reads as inference; one over two
    blocks stays. `structural_parent_max`: a unit with its own critique edge keeps a forward parent
    only at that probability or above."""
    from dataclasses import replace

    from thinkprobe.link.decode import decode_edges

    units = [replace(u, node_type=t) for u, t in zip(_units(8, segment_every=3), ["RSN"] * 4 + ["CRT", "RSN", "RSN", "RSN"])]
    rows = {(0, 3): {"synthesis": 0.7}, (1, 3): {"synthesis": 0.7},      # unit 3: units of block 0 only
            (2, 6): {"synthesis": 0.7}, (4, 6): {"synthesis": 0.7},      # unit 6: blocks 0 and 1
            (3, 4): {"critique:negate": 0.9}, (2, 4): {"inference": 0.6}, (1, 4): {"inference": 0.85}}
    probs, i, j, origin = _pair_probs(rows, 8)
    decode = {"threshold_near": 0.5, "threshold_far": 0.5, "force_parent": False, "labels_follow_types": True}
    plain = {(e.src, e.dst, e.edge_type) for e in decode_edges(units, probs, i, j, origin, decode)}
    shaped = {(e.src, e.dst, e.edge_type) for e in decode_edges(
        units, probs, i, j, origin, {**decode, "synthesis_min_blocks": 2, "structural_parent_max": 0.8})}
    assert {(3, 0, "synthesis"), (3, 1, "synthesis"), (6, 2, "synthesis"), (2, 4, "inference")} <= plain
    assert {(0, 3, "inference"), (1, 3, "inference"), (6, 2, "synthesis"), (6, 4, "synthesis")} <= shaped
    assert not {e for e in shaped if e[1] == 3 and e[2] == "synthesis"} and (3, 0, "synthesis") not in shaped
    assert (4, 3, "critique") in shaped and (1, 4, "inference") in shaped and (2, 4, "inference") not in shaped


def test_a_plan_that_announces_a_check_critiques_what_it_checks_and_keeps_its_parent():
    """`critique_types: [CRT, MET]` (the shipped decoding since 2026-12-07): a planning unit's critique
    pair stays a critique ("Let me check the sum again" -> the sum), the unit stays MET, and it keeps
    its forward parent, closing the cycle people draw (on human D's traces 9 of 20 hold one; our
    recurrence_ratio was 0 on every trace). With the former rules the pair became a forward edge."""
    from dataclasses import replace

    from thinkprobe.link.decode import decode_edges
    from thinkprobe.nodetypes import finalise_type

    units = [replace(u, node_type=t) for u, t in zip(_units(4), ["RSN", "RSN", "MET", "CRT"])]
    rows = {(0, 1): {"inference": 0.8}, (1, 2): {"elaboration": 0.5},      # 1 -> 2: the plan's parent (0.5 < 0.8)
            (0, 2): {"critique:uncertain": 0.6},                           # the plan checks unit 0
            (2, 3): {"inference": 0.5}, (1, 3): {"critique:negate": 0.7}}  # a verdict: its parent goes
    probs, i, j, origin = _pair_probs(rows, 4)
    decode = {"threshold_near": 0.45, "threshold_far": 0.45, "force_parent": False, "labels_follow_types": True,
              "structural_parent_max": 0.8}
    old = {(e.src, e.dst, e.edge_type) for e in decode_edges(units, probs, i, j, origin, {**decode, "plans_elaborate": True})}
    new = decode_edges(units, probs, i, j, origin, {**decode, "critique_types": ["CRT", "MET"]})
    kinds = {(e.src, e.dst, e.edge_type) for e in new}
    assert {e for e in old if e[:2] == (0, 2)} and not {e for e in old if e[2] == "critique" and e[0] == 2}
    assert {(2, 0, "critique"), (1, 2, "elaboration"), (3, 1, "critique")} <= kinds
    assert (2, 3, "inference") not in kinds  # a CRT unit's weak parent still goes
    assert finalise_type("MET", [e for e in new if e.src == 2]) == "MET"
    cycle = {(0, 1), (1, 2), (2, 0)}  # 0 -> 1 -> 2 -> 0
    assert cycle <= {(e.src, e.dst) for e in new}


def test_question_overlap_marks_a_restatement_of_the_question():
    question = "A train leaves at 9:40 and travels 120 km at 80 km/h. When does it arrive?"
    units = _texts(["Okay, so a train leaves at 9:40 and travels 120 km at 80 km/h.", "Time is distance over speed.",
                    "So 120 / 80 = 1.5 hours.", "Wait, when does it arrive?"])
    q = question_overlap(units, question)
    assert q.shape == (4, QUESTION_FEATURES) and np.all(q[:, 3] == 1.0)
    assert q[0, 0] > 0.8 and q[0, 2] == 1.0  # the restatement: its words and numbers are the question's
    assert q[1, 0] < 0.3 and q[2, 2] == pytest.approx(2 / 3)  # 120 and 80 are the question's, 1.5 is not
    assert q[3, 1] > q[1, 1]
    assert not question_overlap(units, None).any() and not question_overlap(units, "  ").any()
    assert question_overlap([], question).shape == (0, QUESTION_FEATURES)


def test_a_parser_that_reads_the_question_scores_by_it_and_caches_each_apart(tmp_path):
    cfg = Config.load()
    units, emb = _units(12), _emb(12)
    question = "Let me know: is x = 3 right?"
    reads = init_model_dir(tmp_path / "reads", cfg, seed=3, lexical_pairs=True, rerank=True, question=True)
    plain = init_model_dir(tmp_path / "plain", cfg, seed=3, lexical_pairs=True, rerank=True)
    a = ParserLinker(reads, cfg, cache_dir=tmp_path / "cache")
    with_q, without = a.score([(units, emb, question)])[0], a.score([(units, emb)])[0]
    assert np.array_equal(with_q["i"], without["i"]) and np.array_equal(with_q["j"], without["j"])  # same candidates
    assert not np.allclose(with_q["types"], without["types"])  # the question columns reach the type head
    again = ParserLinker(reads, cfg, cache_dir=tmp_path / "cache")  # from the cache: each under its own key
    assert np.array_equal(again.score([(units, emb, question)])[0]["types"], with_q["types"])
    assert np.array_equal(again.score([(units, emb, None)])[0]["types"], without["types"])
    assert again.cache_stats["hits"] == 2 and again.cache_stats["misses"] == 0
    edges = a.link([LinkInput(units, emb, question)])[0]
    assert edges == ParserLinker(reads, cfg).link([LinkInput(units, emb, question)])[0]
    b = ParserLinker(plain, cfg)  # a model that does not read it: the question changes nothing
    assert np.array_equal(b.score([(units, emb, question)])[0]["types"], b.score([(units, emb)])[0]["types"])
    assert b.link([LinkInput(units, emb, question)]) == b.link([LinkInput(units, emb)])


def _with_gate(folder, gate: dict):
    from thinkprobe.training.rpt_gate import write_rpt_gate

    write_rpt_gate(folder, gate)
    return folder


def test_the_restatement_gate_types_rpt_with_the_question_and_leaves_the_rest_to_the_head(tmp_path):
    cfg = Config.load()
    question = "A train leaves at 9:40 and travels 120 km at 80 km/h. When does it arrive?"
    units = _texts(["Let me think.", "A train leaves at 9:40 and travels 120 km at 80 km/h.", "Time is distance over speed.",
                    "So 120 / 80 = 1.5 hours.", "It leaves at 9:40 and travels 120 km at 80 km/h, when does it arrive?"])
    emb = _emb(len(units))
    w = np.zeros((7, 11))
    w[TYPE_CLASSES.index("RPT"), 7] = 12.0  # the share of the unit's words that the question writes
    gate = {"weights": w.tolist(), "bias": [0.0] * 7, "offsets": [0.0] * 6 + [-6.0]}
    plain = init_model_dir(tmp_path / "plain", cfg, seed=3, lexical_pairs=True)
    gated = _with_gate(init_model_dir(tmp_path / "gated", cfg, seed=3, lexical_pairs=True), gate)
    head = [u.node_type for u in ParserLinker(plain, cfg).typer.batch([(units, emb, question)])[0]]
    a = ParserLinker(gated, cfg, cache_dir=tmp_path / "cache")
    typed = [u.node_type for u in a.typer.batch([(units, emb, question)])[0]]
    assert [k for k, t in enumerate(typed) if t == "RPT"] == [1, 4]  # the restatements; the first unit never
    assert all(t == h for t, h in zip(typed, head) if t != "RPT" and h != "RPT")  # the head's other decisions stand
    assert [u.node_type for u in a.typer.batch([(units, emb)])[0]] == head  # no question: the head's types
    assert [u.node_type for u in a.typer.batch([(units, emb, "")])[0]] == head
    again = ParserLinker(gated, cfg, cache_dir=tmp_path / "cache")  # the cache keeps the two apart
    assert [u.node_type for u in again.typer.batch([(units, emb, question)])[0]] == typed
    assert again.cache_stats == {"hits": 1, "misses": 0}


def test_the_restatement_gate_is_fitted_on_held_out_outputs_and_gains_where_the_question_tells():
    from thinkprobe.training.rpt_gate import fit_rpt_gate

    rng = np.random.default_rng(0)
    outs = []
    for k in range(40):
        n = 30
        gold = rng.integers(0, 6, size=n)
        restates = rng.random(n) < 0.2
        gold[restates] = TYPE_CLASSES.index("RPT")
        head = np.full((n, 7), 0.02)
        head[np.arange(n), gold] = 0.5  # the head knows every type but RPT, which it cannot tell from RSN
        head[restates, TYPE_CLASSES.index("RPT")] = 0.02
        head[restates, TYPE_CLASSES.index("RSN")] = 0.5
        question = np.zeros((n, 4), np.float32)
        question[:, 3] = 1.0
        question[:, 0] = np.where(restates, rng.uniform(0.6, 1.0, n), rng.uniform(0.0, 0.4, n))
        outs.append({"types": head / head.sum(axis=1, keepdims=True), "question": question, "gold": gold})
    gate = fit_rpt_gate(outs, None, log=lambda msg: None)
    assert np.shape(gate["weights"]) == (7, 11) and len(gate["bias"]) == 7 and len(gate["offsets"]) == 7
    cv = gate["cv"]
    assert cv["head_rpt_f1"] == 0.0 and cv["gated_rpt_f1"] > 0.9
    assert cv["gated_type_macro_f1"] > cv["head_type_macro_f1"] + 0.1
