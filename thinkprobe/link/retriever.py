"""Learned candidate retrieval for the parser (issue 27): the coarse stage of a coarse-to-fine
linker. A small network reads the trace's units in order (their MiniLM embeddings and the parser's
unit features, through a BiLSTM) and gives every unit a query and a key vector; the score of an
earlier unit i for unit j is their scaled dot product plus a learned bias per distance bucket.
Trained with a softmax over all the earlier units beyond the parser's window (the marginal
likelihood of j's silver parents there), its top K per unit replace the most cosine-similar
earlier units among the parser's candidates: "builds on" is not "is similar to".

Scoring is done in strips of rows (never an n x n matrix) and within a horizon of units before
j, so memory and time stay linear in the trace length.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .candidates import DISTANCE_BUCKETS, distance_bucket

__all__ = ["build_retriever", "learned_topk", "retrieval_margin", "load_retriever", "retrieve", "RETRIEVER_FILE"]

RETRIEVER_FILE = "retriever.safetensors"


def build_retriever(dim: int, unit_size: int, proj: int = 128, hidden: int = 96, rank: int = 64, dropout: float = 0.2):
    """The retriever network: (emb, unit features) of a padded batch of traces -> queries and keys
    (B, T, rank) and the per-bucket distance bias (`bias`)."""
    import torch
    from torch import nn

    class RetrieverNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Sequential(nn.Linear(dim + unit_size, proj), nn.ReLU(), nn.Dropout(dropout))
            self.ctx = nn.LSTM(proj, hidden, bidirectional=True, batch_first=True)
            self.drop = nn.Dropout(dropout)
            self.q = nn.Linear(2 * hidden + proj, rank)
            self.k = nn.Linear(2 * hidden + proj, rank)
            self.bias = nn.Embedding(len(DISTANCE_BUCKETS) + 1, 1)
            self.scale = rank ** -0.5

        def forward(self, emb, uf, lengths):
            x = self.inp(torch.cat([emb, uf], dim=-1))
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, _ = self.ctx(packed)
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
            h = torch.cat([self.drop(out), x], dim=-1)
            return self.q(h) * self.scale, self.k(h)

    return RetrieverNet()


def learned_topk(q: np.ndarray, k: np.ndarray, bias: np.ndarray, top: int, skip: int, horizon: int = 0,
                 block_values: int = 1 << 20) -> tuple[np.ndarray, np.ndarray]:
    """For each unit j, the `top` earlier units i <= j-1-skip (within `horizon` units of j when > 0)
    of the highest score q[j].k[i] + bias[bucket(j - i)], best first, ties to the earlier unit
    (-1 where fewer exist), and j's best score (-inf where none). In strips of rows.

    >>> q = np.array([[0.], [0.], [0.], [1.]], np.float32); k = np.array([[2.], [0.], [1.], [0.]], np.float32)
    >>> learned_topk(q, k, np.zeros(9, np.float32), 2, skip=0)[0].tolist()
    [[-1, -1], [0, -1], [0, 1], [0, 2]]
    """
    n = len(q)
    idx = np.full((n, max(top, 0)), -1, dtype=np.int64)
    best = np.full(n, -np.inf, dtype=np.float32)
    width = min(n, horizon + 512) if horizon > 0 else n
    block = max(1, min(512, block_values // max(width, 1)))
    bias = np.asarray(bias, np.float32).reshape(-1)
    for s in range(skip + 1, n, block):
        e = min(n, s + block)
        c0 = max(0, s - horizon) if horizon > 0 else 0
        rows = np.arange(s, e)
        cols = np.arange(c0, e)
        d = rows[:, None] - cols[None, :]
        sim = q[s:e] @ k[c0:e].T + bias[distance_bucket(np.maximum(d, 1))]
        sim[d <= skip] = -np.inf
        if horizon > 0:
            sim[d > horizon] = -np.inf
        best[s:e] = sim.max(axis=1)
        if not top:
            continue
        # best first, ties to the earlier unit: a stable sort of -score
        order = np.argsort(-sim, axis=1, kind="stable")[:, :top]
        vals = np.take_along_axis(sim, order, axis=1)
        order = order + c0
        order[~np.isfinite(vals)] = -1
        idx[s:e, : order.shape[1]] = order
    return idx, best


def retrieval_margin(q: np.ndarray, k: np.ndarray, bias: np.ndarray, best: np.ndarray, i: np.ndarray,
                     j: np.ndarray) -> np.ndarray:
    """Per candidate pair (i < j): its retrieval score minus j's best score beyond the window,
    scaled and clipped to [-1, 1] (0: as good as j's best retrieved unit)."""
    if not len(i):
        return np.zeros(0, np.float32)
    s = np.einsum("ij,ij->i", q[j], k[i]) + np.asarray(bias, np.float32).reshape(-1)[distance_bucket(j - i)]
    b = np.where(np.isfinite(best[j]), best[j], s)
    return np.clip((s - b) / 8.0, -1.0, 1.0).astype(np.float32)


def load_retriever(model_dir: str | Path, meta: dict):
    """The retriever network of a parser folder (config.json "retriever": its architecture)."""
    from safetensors.torch import load_file

    a = meta["retriever"]
    net = build_retriever(a["dim"], a["unit_size"], a["proj"], a["hidden"], a["rank"], 0.0)
    net.load_state_dict(load_file(str(Path(model_dir) / RETRIEVER_FILE)))
    return net.eval()


def retrieve(net, emb: np.ndarray, uf: np.ndarray, device: str = "cpu") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries, keys (n, rank) and the distance bias of one trace (each trace alone: its scores never
    depend on the batch)."""
    import torch

    n = len(emb)
    with torch.inference_mode():
        if not n:
            z = np.zeros((0, net.q.out_features), np.float32)
            return z, z, net.bias.weight.detach().cpu().numpy().reshape(-1)
        e = torch.from_numpy(np.asarray(emb, np.float32)[None]).to(device)
        u = torch.from_numpy(np.asarray(uf, np.float32)[None]).to(device)
        q, k = net(e, u, torch.tensor([n]))
        return (q[0].cpu().numpy(), k[0].cpu().numpy(), net.bias.weight.detach().cpu().numpy().reshape(-1))
