"""The parser's learned candidate retriever (thinkprobe/link/retriever.py, training in
thinkprobe/training/retriever_fit.py): its blocked top-k search answers what a dense search
answers, its loss is the softmax mass of the parents beyond the window, and a few gradient steps
make a tiny retriever find a far parent cosine similarity cannot see."""
from __future__ import annotations

import argparse

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from thinkprobe.link.parser import distance_bucket  # noqa: E402
from thinkprobe.link.retriever import learned_topk, retrieval_margin, retrieve  # noqa: E402
from thinkprobe.training.retriever_fit import far_targets, retriever_loss, train_retriever  # noqa: E402


@pytest.mark.parametrize("n,k,skip,block,horizon", [(1, 3, 0, 512, 0), (9, 3, 0, 2, 0), (50, 5, 6, 7, 0), (50, 60, 2, 512, 0),
                                                    (50, 5, 6, 7, 12), (70, 4, 3, 1, 20)])
def test_learned_topk_matches_the_dense_search(n, k, skip, block, horizon):
    rng = np.random.default_rng(n + k)
    q, key = rng.normal(size=(n, 8)).astype(np.float32), rng.normal(size=(n, 8)).astype(np.float32)
    key[n // 3] = key[0]  # a tie: the earlier unit first
    bias = rng.normal(size=9).astype(np.float32)
    idx, best = learned_topk(q, key, bias, k, skip, horizon, block_values=block * n)
    for j in range(n):
        cols = np.arange(j)
        d = j - cols
        ok = (d > skip) & ((d <= horizon) if horizon else True)
        s = q[j] @ key[cols[ok]].T + bias[distance_bucket(d[ok])] if ok.any() else np.zeros(0)
        want = cols[ok][np.argsort(-s, kind="stable")[:k]]
        assert idx[j][idx[j] >= 0].tolist() == want.tolist()
        if ok.any():
            assert best[j] == pytest.approx(s.max(), abs=1e-5)
            m = retrieval_margin(q, key, bias, best, want[:1], np.array([j]))
            assert m[0] == pytest.approx(0.0, abs=1e-6)  # the best retrieved unit has margin 0


def test_loss_is_minus_the_log_of_the_parents_softmax_mass():
    q, k = torch.randn(6, 4), torch.randn(6, 4)
    bias = torch.zeros(9, 1)
    pairs = np.array([[0, 4], [1, 4], [3, 4], [0, 5]])  # (3, 4) is inside the window of 1
    rows, targets = far_targets(pairs, skip=1, horizon=0)
    assert rows.tolist() == [4, 5] and sorted(map(tuple, targets.tolist())) == [(0, 0), (0, 1), (1, 0)]
    got = retriever_loss(q, k, bias, rows, targets, skip=1, horizon=0)
    s4 = torch.log_softmax(q[4] @ k[:3].T, dim=0)  # unit 4: candidates 0..2, parents 0 and 1
    s5 = torch.log_softmax(q[5] @ k[:4].T, dim=0)  # unit 5: candidates 0..3, parent 0
    want = -(torch.logsumexp(s4[[0, 1]], dim=0) + s5[0]) / 2
    assert float(got) == pytest.approx(float(want), rel=1e-5)


def test_a_tiny_retriever_learns_a_far_parent_cosine_cannot_see():
    """Every unit 12 after a marked unit links to it; embeddings are random (cosine sees nothing),
    the mark is a unit feature. After training the marked unit is the top retrieved one."""

    def example(seed):
        n = 40
        emb = np.random.default_rng(seed).normal(size=(n, 16)).astype(np.float32)
        uf = np.zeros((n, 2), np.float32)
        marked = [3, 17]
        uf[marked, 0] = 1.0
        return {"units": [None] * n, "emb": emb, "uf": uf, "pairs": np.array([[m, m + 12] for m in marked]), "doc_id": str(seed)}

    train = [example(s) for s in range(12)]
    val = [example(100)]
    args = argparse.Namespace(seed=0, retriever_proj=16, retriever_hidden=8, retriever_rank=8, dropout=0.0, lr=1e-2, wd=0.0,
                              window=2, horizon=0, retriever_epochs=25, max_units=80)
    net, _ = train_retriever(train, val, 16, 2, args, log=lambda m: None)
    x = val[0]
    idx, _ = learned_topk(*retrieve(net, x["emb"], x["uf"]), 1, skip=2)
    assert idx[15, 0] == 3 and idx[29, 0] == 17
