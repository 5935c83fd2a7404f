"""The parser's candidate reranker (thinkprobe.link.rerank): it chooses each unit's candidates beyond
the window from its pool of most similar units by its own scores, the same way at run time as in
training, and a model folder with one links and types through the usual contract."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from thinkprobe.config import Config
from thinkprobe.link.candidates import FROM_SIMILARITY, CandidateParams
from thinkprobe.link.parser import ParserFeaturizer, earlier_topk, trace_features
from thinkprobe.link.rerank import Reranker, best_in_trace, best_per_unit, rerank_features
from thinkprobe.records import ThoughtUnit


def _trace(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    texts = [f"Step {k}: so x = {rng.integers(0, 50)} and we check it again." for k in range(n)]
    units, pos = [], 0
    for k, t in enumerate(texts):
        units.append(ThoughtUnit(k, "reasoning", pos, pos + len(t), t, segment=k // 7))
        pos += len(t) + 1
    emb = rng.normal(size=(n, 384)).astype(np.float32)
    return units, emb / np.linalg.norm(emb, axis=1, keepdims=True)


def _linear(size: int, column: int, sign: float = 1.0) -> Reranker:
    """A reranker whose score is one input column (times sign)."""
    w = np.zeros((1, size))
    w[0, column] = sign
    return Reranker({"mean": np.zeros(size), "scale": np.ones(size), "w0": w, "b0": np.zeros(1)})


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_candidates_beyond_the_window_are_the_pools_best_by_the_rerankers_score(sign):
    """With a reranker that scores a pair by the position of its earlier unit (a unit feature of i),
    the candidates beyond the window are exactly the pool's `learned_k` latest (or earliest) units;
    window and look-back candidates are untouched."""
    cfg = Config.load()
    featurizer = ParserFeaturizer(list(cfg.lexicon), {"question": r"\?\s*$"}, lexical_pairs=True)
    units, emb = _trace(60)
    params = CandidateParams(window=4, top_k=0, rerank_pool=12, learned_k=3, number_lookback=2)
    position = featurizer.size - featurizer.numeric  # the first numeric unit feature: k / (n - 1)
    size = featurizer.pair_size + 9 + 2 * featurizer.size
    reranker = _linear(size, featurizer.pair_size + 9 + position, sign)
    got = trace_features(units, emb, params, featurizer, reranker=reranker)
    pool, _ = earlier_topk(emb, 12, skip=4)
    plain = trace_features(units, emb, replace(params, rerank_pool=0, learned_k=0), featurizer)
    for j in range(len(units)):
        mine = got["i"][(got["j"] == j) & ((got["origin"] & FROM_SIMILARITY) > 0)]
        members = sorted(int(i) for i in pool[j] if i >= 0)
        want = members[-3:] if sign > 0 else members[:3]
        assert sorted(mine.tolist()) == want, j
        others = set(got["i"][(got["j"] == j) & (got["origin"] != FROM_SIMILARITY)].tolist())
        assert others == set(plain["i"][plain["j"] == j].tolist()), j


def test_reranker_round_trip_and_blocks(tmp_path):
    rng = np.random.default_rng(1)
    w = {"mean": rng.normal(size=5), "scale": rng.uniform(0.5, 2, size=5), "w0": rng.normal(size=(4, 5)),
         "b0": rng.normal(size=4), "w1": rng.normal(size=(1, 4)), "b1": rng.normal(size=1)}
    a = Reranker(w)
    a.save(tmp_path / "r.safetensors")
    b = Reranker.load(tmp_path / "r.safetensors")
    x = rng.normal(size=(1000, 5)).astype(np.float32)
    assert np.array_equal(a(x, block=7), b(x))
    h = np.maximum(((x - w["mean"]) / w["scale"]) @ w["w0"].T + w["b0"], 0)
    assert np.allclose(a(x), (h @ w["w1"].T + w["b1"])[:, 0], atol=1e-4)  # weights stored in float32


def test_best_per_unit_against_a_direct_sort():
    rng = np.random.default_rng(2)
    j = np.sort(rng.integers(0, 30, size=400))
    i = rng.integers(0, 100, size=400)
    s = np.round(rng.normal(size=400), 1)  # ties
    got = best_per_unit(i, j, s, 30, 4)
    for q in range(30):
        pairs = sorted(zip(-s[j == q], i[j == q]))[:4]
        assert got[q].tolist() == [int(a) for _, a in pairs] + [-1] * (4 - len(pairs))


def _number_traces(featurizer, params, count=40):
    """Traces where an odd unit past the sixth reuses the number an earlier even unit wrote (its
    silver parent) and the other units have no parent: the parent is similar, never the most."""
    exs = []
    for seed in range(count):
        rng = np.random.default_rng(100 + seed)
        n = 40
        texts = [f"Value {100 + k} here." for k in range(n)]
        parent, free = {}, []
        for j in range(n):
            if j % 2 == 0:
                free.append(j)
            elif j > 6 and [a for a in free if a < j - 2]:
                a = int(rng.choice([a for a in free if a < j - 2]))
                free.remove(a)
                parent[j] = a
                texts[j] = f"Using {100 + a} now."
        units, pos = [], 0
        for k, t in enumerate(texts):
            units.append(ThoughtUnit(k, "reasoning", pos, pos + len(t), t, segment=0))
            pos += len(t) + 1
        base = rng.normal(size=(1, 384))
        emb = (base + 0.5 * rng.normal(size=(n, 384))).astype(np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        f = trace_features(units, emb, params, featurizer)
        f["arc"] = np.array([float(parent.get(b) == a) for a, b in zip(f["i"], f["j"])], np.float32)
        f["parents"] = parent
        exs.append(f)
    return exs


def test_the_reranker_learns_which_similar_unit_a_unit_builds_on():
    """Trained on traces where a unit's parent is the pool member that wrote its number, the
    reranker ranks that parent first for most held-out units, where cosine ranks it first rarely."""
    import argparse

    from thinkprobe.training.rerank_fit import train_reranker

    cfg = Config.load()
    featurizer = ParserFeaturizer(list(cfg.lexicon), {"question": r"\?\s*$"}, lexical_pairs=True)
    exs = _number_traces(featurizer, CandidateParams(window=2, top_k=8, number_lookback=0))
    args = argparse.Namespace(seed=0, rerank_hidden=16, rerank_epochs=200)
    reranker = train_reranker(exs[:30], exs[30:], 8, args, log=lambda m: None)
    first = cos_first = total = 0
    for f in exs[30:]:
        sel = (f["origin"] & FROM_SIMILARITY) > 0
        i, j = f["i"][sel], f["j"][sel]
        top = best_per_unit(i, j, reranker(rerank_features(f["pf"][sel], f["bucket"][sel], f["uf"], i, j)), len(f["uf"]), 1)
        cos = best_per_unit(i, j, f["pf"][sel][:, 0], len(f["uf"]), 1)
        for q in np.unique(j):
            p = i[(j == q) & (f["arc"][sel] > 0)]
            if len(p):
                total += 1
                first += top[q, 0] == p[0]
                cos_first += cos[q, 0] == p[0]
    assert total > 50
    assert first / total > 0.8 > 0.4 > cos_first / total


def test_a_reranker_trained_per_trace_spends_the_budget_on_units_with_a_parent():
    """Trained with the "none of them" option on the same traces, where half the units have no
    parent: with a budget of one pair per unit whose parent is in its pool, most kept pairs are silver
    parents (cosine, whichever units it picked, finds few)."""
    import argparse

    from thinkprobe.training.rerank_fit import train_reranker

    cfg = Config.load()
    featurizer = ParserFeaturizer(list(cfg.lexicon), {"question": r"\?\s*$"}, lexical_pairs=True)
    exs = _number_traces(featurizer, CandidateParams(window=2, top_k=8, number_lookback=0))
    args = argparse.Namespace(seed=0, rerank_hidden=16, rerank_epochs=200)
    reranker = train_reranker(exs[:30], exs[30:], 0, args, log=lambda m: None, per_trace=True, unit_size=featurizer.size)
    assert reranker.per_trace
    hits = cos_hits = total = 0
    for f in exs[30:]:
        sel = (f["origin"] & 1) == 0
        i, j, pf = f["i"][sel], f["j"][sel], f["pf"][sel]
        budget = int(f["arc"][sel].sum())  # the units whose parent is in their pool
        keep = best_in_trace(i, j, reranker.pair_scores(pf, f["bucket"][sel], f["uf"], i, j), reranker.null_scores(f["uf"]), budget)
        cos_keep = best_in_trace(i, j, pf[:, 0].astype(np.float64), np.full(len(f["uf"]), -np.inf), budget)
        hits += int(f["arc"][sel][keep].sum())
        cos_hits += int(f["arc"][sel][cos_keep].sum())
        total += budget
    assert total > 50
    assert hits / total > 0.7 > 0.3 > cos_hits / total


def test_pair_scores_equal_the_scores_of_the_full_inputs():
    rng = np.random.default_rng(3)
    n, m, p, u, h = 40, 500, 19, 39, 16
    size = p + 9 + 2 * u
    r = Reranker({"mean": rng.normal(size=size), "scale": rng.uniform(0.5, 2, size=size), "w0": rng.normal(size=(h, size)),
                  "b0": rng.normal(size=h), "w1": rng.normal(size=(h, h)), "b1": rng.normal(size=h),
                  "w2": rng.normal(size=(1, h)), "b2": rng.normal(size=1)})
    pf, uf = rng.normal(size=(m, p)).astype(np.float32), rng.normal(size=(n, u)).astype(np.float32)
    i, j, bucket = rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(0, 9, m)
    want = r(rerank_features(pf, bucket, uf, i, j))
    assert np.allclose(r.pair_scores(pf, bucket, uf, i, j, block=33), want, rtol=1e-9, atol=1e-9)


def test_coverage_counts_unit_pairs_links_and_node_pairs():
    """Node 0 holds units 0-1, node 1 units 2-11, node k >= 2 unit k + 10. Links: 0 -> 2 (units 11-12
    apart, nodes 2), 2 -> 15 (13 apart either way), 1 -> 13 (units 12-21 apart, nodes 12) and a near
    one; candidates (1, 12) and (5, 23) reach the first and the third."""
    from thinkprobe.training.retriever_fit import coverage

    n = 30
    text = "".join(f"u{k:02d}. " for k in range(n))
    units = [ThoughtUnit(k, "reasoning", 5 * k, 5 * k + 5, text[5 * k:5 * k + 5], segment=0) for k in range(n)]
    spans = [(0, 2), (2, 12)] + [(k + 10, k + 11) for k in range(2, 20)]
    nodes = [{"id": f"n{k}", "label": "reasoning", "source": "response", "start": 5 * a, "end": 5 * b, "text": text[5 * a:5 * b]}
             for k, (a, b) in enumerate(spans)]
    edges = [{"id": f"e{k}", "source_node_id": f"n{a}", "dest_node_id": f"n{b}", "label": "reason:infer"}
             for k, (a, b) in enumerate([(0, 2), (2, 15), (1, 13), (3, 5)])]
    doc = {"doc_id": "d", "raw_text": {"question": "", "response": text}, "nodes": nodes, "edges": edges}
    x = {"doc_index": 0, "units": units, "i": np.array([1, 5]), "j": np.array([12, 23])}
    got = coverage([x], [doc])
    assert got["units_covered"] == pytest.approx(2 / 13)
    assert got["links_covered"] == pytest.approx(2 / 3)
    assert got["covered"] == pytest.approx(1 / 2) and got["far_links"] == 2
    assert got["candidates_per_unit"] == pytest.approx(2 / n)


def test_best_in_trace_keeps_the_pairs_most_probable_as_parents():
    """Against a direct computation: each pair's probability under a softmax over its unit's pool
    and the unit's "none of them" score; the `budget` most probable kept, ties to the earlier (j, i)."""
    rng = np.random.default_rng(4)
    j = np.sort(rng.integers(3, 40, size=300))
    i = rng.integers(0, 3, size=300) + j - 3  # any earlier units; repeats do not matter here
    s = np.round(rng.normal(size=300), 1)
    null = np.round(rng.normal(size=40), 1)
    for budget in (0, 1, 57, 300, 400):
        got = best_in_trace(i, j, s, null, budget)
        logp = np.array([s[k] - np.log(np.exp(s[j == j[k]]).sum() + np.exp(null[j[k]])) for k in range(300)])
        order = sorted(range(300), key=lambda k: (-round(logp[k], 9), j[k], i[k]))[:budget]
        assert got.sum() == min(budget, 300)
        assert set(np.flatnonzero(got).tolist()) == set(order)


def test_a_reranker_choosing_per_trace_gives_far_candidates_to_the_units_that_need_them():
    """With a "none of them" score high for the first half of the trace and low for the second, the
    candidates beyond the window all go to the second half's units, as many as the rules would give
    the whole trace (the learned_k most similar units and the look-backs); the window is untouched."""
    cfg = Config.load()
    featurizer = ParserFeaturizer(list(cfg.lexicon), {"question": r"\?\s*$"}, lexical_pairs=True)
    units, emb = _trace(60)
    params = CandidateParams(window=4, top_k=0, rerank_pool=12, learned_k=3, number_lookback=2)
    size = featurizer.pair_size + 9 + 2 * featurizer.size
    position = featurizer.size - featurizer.numeric  # the first numeric unit feature: k / (n - 1)
    null_w = np.zeros((1, featurizer.size))
    null_w[0, position] = -40.0
    reranker = Reranker({"mean": np.zeros(size), "scale": np.ones(size), "w0": np.zeros((1, size)), "b0": np.zeros(1),
                         "null_w": null_w, "null_b": np.array([20.0])})
    assert reranker.per_trace
    got = trace_features(units, emb, params, featurizer, reranker=reranker)
    rules = trace_features(units, emb, replace(params, top_k=3, rerank_pool=0, learned_k=0), featurizer)
    window = (got["j"] - got["i"]) <= 4
    beyond = ~window
    assert beyond.sum() == ((rules["j"] - rules["i"]) > 4).sum()
    assert got["j"][beyond].min() >= 30 and got["j"][beyond].max() == 59
    assert (got["origin"][window] & 1).all() and window.sum() == ((rules["j"] - rules["i"]) <= 4).sum()
    # the reranker's log-probability of each pair is the parser's last pair feature (scaled; 0 in the window)
    assert got["pf"].shape[1] == rules["pf"].shape[1] + 1
    assert (got["pf"][window, -1] == 0).all() and (got["pf"][beyond, -1] <= 0).all() and (got["pf"][beyond, -1] >= -1).all()
    pool = trace_features(units, emb, replace(params, top_k=12, rerank_pool=0, learned_k=0), featurizer)
    pool_pairs = set(zip(pool["i"].tolist(), pool["j"].tolist()))
    assert set(zip(got["i"].tolist(), got["j"].tolist())) <= pool_pairs
