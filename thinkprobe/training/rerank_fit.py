"""Training the parser's candidate reranker (thinkprobe.link.rerank): on examples whose candidates
hold each unit's `rerank_pool` most similar earlier units beyond the window, for every unit with a
silver parent in that pool, minus the log of the softmax mass of its parents among the pool; the
epoch of the lowest held-out loss is kept. With `per_trace`, the pool is every candidate beyond the
window (the most similar units and the look-backs), the softmax has a "none of them" option scored
from the unit's own features, and every unit with a pool counts (its target "none" when no silver
parent is there): probabilities comparable across units, so a trace's candidates can be chosen
together (`rerank.best_in_trace`).
"""
from __future__ import annotations

import time

import numpy as np

from thinkprobe.link.rerank import Reranker, rerank_features, scored_pairs

__all__ = ["pools", "pool_size", "train_reranker"]


def pools(exs: list[dict], size: int, positives_only: bool = True, per_trace: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pool pairs of each unit, padded to `size`: inputs (rows, size, F), a mask of real pairs and
    a mask of silver parents; only units with a parent in their pool when `positives_only`."""
    xs, ms, ys = [], [], []
    for x in exs:
        sel = scored_pairs(x["origin"], per_trace)
        i, j = x["i"][sel], x["j"][sel]
        if not len(i):
            continue
        f = rerank_features(x["pf"][sel], x["bucket"][sel], x["uf"], i, j)
        rows, start = np.unique(j, return_index=True)  # pairs are ordered by j
        count = np.diff(np.append(start, len(j)))
        slot = np.arange(len(j)) - np.repeat(start, count)
        row = np.repeat(np.arange(len(rows)), count)
        xx = np.zeros((len(rows), size, f.shape[1]), np.float32)
        mm = np.zeros((len(rows), size), bool)
        yy = np.zeros((len(rows), size), bool)
        xx[row, slot], mm[row, slot], yy[row, slot] = f, True, x["arc"][sel] > 0
        keep = yy.any(axis=1) if positives_only else np.ones(len(rows), bool)
        xs.append(xx[keep])
        ms.append(mm[keep])
        ys.append(yy[keep])
    return np.concatenate(xs), np.concatenate(ms), np.concatenate(ys)


def pool_size(exs: list[dict], per_trace: bool) -> int:
    """The most pairs one unit has in its pool."""
    return max((int(np.bincount(x["j"][sel]).max()) for x in exs if (sel := scored_pairs(x["origin"], per_trace)).any()), default=1)


def train_reranker(train: list[dict], val: list[dict], size: int, args, log=print, per_trace: bool = False,
                   unit_size: int = 0) -> Reranker:
    """The reranker trained on the pools of `train`, its epoch chosen by the held-out loss on `val`.
    `per_trace`: with the "none of them" option over the last `unit_size` inputs (the unit's features)."""
    import torch

    from .parser_fit import BestEpoch

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    if per_trace:
        size = max(pool_size(train, True), pool_size(val, True))
    xt, mt, yt = (torch.from_numpy(a) for a in pools(train, size, not per_trace, per_trace))
    xv, mv, yv = (torch.from_numpy(a) for a in pools(val, size, not per_trace, per_trace))
    mean = xt[mt].mean(0)
    scale = xt[mt].std(0) + 1e-4
    h = args.rerank_hidden
    net = torch.nn.Sequential(torch.nn.Linear(xt.shape[2], h), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                              torch.nn.Linear(h, h), torch.nn.ReLU(), torch.nn.Linear(h, 1))
    null = torch.nn.Linear(unit_size, 1) if per_trace else None
    opt = torch.optim.AdamW(list(net.parameters()) + (list(null.parameters()) if per_trace else []), lr=1e-3, weight_decay=1e-4)

    def loss_of(x, m, y):
        z = (x - mean) / scale
        s = net(z).squeeze(-1).masked_fill(~m, -1e9)
        if per_trace:  # "none of them" is the target of a unit without a silver parent in its pool
            none = null(z[:, 0, -unit_size:])
            s, y = torch.cat([s, none], 1), torch.cat([y, ~y.any(1, keepdim=True)], 1)
        return -(torch.logsumexp(s.masked_fill(~y, -1e9), 1) - torch.logsumexp(s, 1)).mean()

    log(f"reranker: {len(xt)} training units with " + ("a pool" if per_trace else "a silver parent in their pool") +
        f" of at most {size}, {len(xv)} held out")
    best = BestEpoch()
    both = torch.nn.ModuleList([net] + ([null] if per_trace else []))
    gen = torch.Generator().manual_seed(args.seed)
    t0 = time.time()
    for epoch in range(1, args.rerank_epochs + 1):
        both.train()
        perm = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for s in range(0, len(xt), 512):
            b = perm[s:s + 512]
            loss = loss_of(xt[b], mt[b], yt[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(b)
        both.eval()
        with torch.no_grad():
            held = float(loss_of(xv, mv, yv))
        el = time.time() - t0
        log(f"reranker epoch {epoch}/{args.rerank_epochs}: train {total / len(xt):.4f}  held-out {held:.4f}; "
            f"{el:.0f} s, ETA {el / epoch * (args.rerank_epochs - epoch):.0f} s")
        best.offer(held, both, epoch)
    best.restore(both)
    log(f"reranker: best epoch {best.epoch} (held-out loss {best.value:.4f})")
    linear = [m for m in net if isinstance(m, torch.nn.Linear)]
    weights = {"mean": mean.numpy(), "scale": scale.numpy()}
    for k, m in enumerate(linear):
        weights[f"w{k}"] = m.weight.detach().numpy()
        weights[f"b{k}"] = m.bias.detach().numpy()
    if per_trace:
        weights["null_w"], weights["null_b"] = null.weight.detach().numpy(), null.bias.detach().numpy()
    return Reranker(weights)
