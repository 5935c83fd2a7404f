"""Training the parser's learned candidate retriever (thinkprobe.link.retriever): for every unit with
a silver parent beyond the window, minus the log of the softmax mass of its parents among all the
earlier units beyond the window (within the horizon); the epoch of the lowest held-out loss is kept.
`coverage` measures what the candidates reach, as eval-gold counts links.
"""
from __future__ import annotations

import time

import numpy as np

from .parser_data import batches

__all__ = ["far_targets", "retriever_loss", "train_retriever", "retrieved_of", "coverage"]


def far_targets(pairs: np.ndarray, skip: int, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, parents) of silver pairs (i, j) with skip < j - i (<= horizon when > 0): the units j
    to train on (sorted, unique) and the flat (row index, i) targets."""
    if not len(pairs):
        return np.zeros(0, np.int64), np.zeros((0, 2), np.int64)
    d = pairs[:, 1] - pairs[:, 0]
    keep = d > skip
    if horizon > 0:
        keep &= d <= horizon
    p = pairs[keep]
    rows, inv = np.unique(p[:, 1], return_inverse=True)
    return rows, np.stack([inv, p[:, 0]], axis=1)


def retriever_loss(q, k, bias, rows: np.ndarray, targets: np.ndarray, skip: int, horizon: int):
    """Mean over `rows` of -log(softmax mass of the row's targets) among the units beyond the window."""
    import torch

    from thinkprobe.link.parser import distance_bucket

    n = k.shape[0]
    d = rows[:, None] - np.arange(n)[None, :]
    valid = d > skip
    if horizon > 0:
        valid &= d <= horizon
    s = q[torch.from_numpy(rows)] @ k.T + bias[torch.from_numpy(distance_bucket(np.maximum(d, 1)))].squeeze(-1)
    s = s.masked_fill(torch.from_numpy(~valid), float("-inf"))
    t = torch.zeros(s.shape, dtype=torch.bool)
    t[torch.from_numpy(targets[:, 0]), torch.from_numpy(targets[:, 1])] = True
    num = torch.logsumexp(s.masked_fill(~t, float("-inf")), dim=1)
    return -(num - torch.logsumexp(s, dim=1)).mean()


def train_retriever(train: list[dict], val: list[dict], dim: int, unit_size: int, args, log=print):
    """The retriever trained on `train` (examples with emb, uf and silver `pairs`), its epoch chosen by
    the held-out loss on `val`."""
    import torch

    from thinkprobe.link.retriever import build_retriever

    from .parser_fit import BestEpoch

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    net = build_retriever(dim, unit_size, args.retriever_proj, args.retriever_hidden, args.retriever_rank, args.dropout)
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=args.wd)
    rng = np.random.default_rng(args.seed)
    skip, horizon = args.window, args.horizon
    for x in train + val:
        x["far_rows"], x["far_targets"] = far_targets(x["pairs"], skip, horizon)

    def batch_loss(exs, group):
        T = max(len(exs[k]["units"]) for k in group)
        e = np.zeros((len(group), T, dim), np.float32)
        u = np.zeros((len(group), T, unit_size), np.float32)
        for r, k in enumerate(group):
            n = len(exs[k]["units"])
            e[r, :n], u[r, :n] = exs[k]["emb"], exs[k]["uf"]
        q, kk = net(torch.from_numpy(e), torch.from_numpy(u), torch.tensor([len(exs[k]["units"]) for k in group]))
        total, rows = 0.0, 0
        for r, k in enumerate(group):
            x = exs[k]
            if not len(x["far_rows"]):
                continue
            n = len(x["units"])
            total = total + retriever_loss(q[r, :n], kk[r, :n], net.bias.weight, x["far_rows"], x["far_targets"], skip,
                                           horizon) * len(x["far_rows"])
            rows += len(x["far_rows"])
        return total, rows

    best = BestEpoch()
    t0 = time.time()
    for epoch in range(1, args.retriever_epochs + 1):
        net.train()
        tot, cnt = 0.0, 0
        for group in batches(train, args.max_units, rng):
            loss, rows = batch_loss(train, group)
            if not rows:
                continue
            opt.zero_grad()
            (loss / rows).backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
            opt.step()
            tot, cnt = tot + float(loss.detach()), cnt + rows
        net.eval()
        with torch.no_grad():
            vt, vc = 0.0, 0
            for group in batches(val, args.max_units, np.random.default_rng(0)):
                loss, rows = batch_loss(val, group)
                vt, vc = vt + float(loss), vc + rows
        el = time.time() - t0
        log(f"retriever epoch {epoch}/{args.retriever_epochs}: train {tot / max(cnt, 1):.4f}  held-out {vt / max(vc, 1):.4f}; "
            f"{el:.0f} s, ETA {el / epoch * (args.retriever_epochs - epoch):.0f} s")
        best.offer(vt / max(vc, 1), net, epoch)
    best.restore(net)
    log(f"retriever: best epoch {best.epoch} (held-out loss {best.value:.4f})")
    return net, best.epoch


def retrieved_of(net, exs: list[dict]) -> list[tuple]:
    """(queries, keys, bias) of each example, each trace alone (as the linker computes them)."""
    from thinkprobe.link.retriever import retrieve

    return [retrieve(net, x["emb"], x["uf"]) for x in exs]


def coverage(exs: list[dict], docs: list[dict], min_distance: int = 10) -> dict:
    """What the candidates can reach, counted three ways, each unit projected onto the silver node
    it overlaps most: of the silver unit pairs more than `min_distance` units apart, the share that
    are candidates (`units_covered`: a link between nodes of several units counts once per unit
    pair); of the silver links whose units are all more than `min_distance` apart, the share
    joined by at least one candidate pair (`links_covered`); of the links between nodes more than
    `min_distance` nodes apart (nodes in text order, as eval-gold's far edges), the share joined by
    at least one candidate pair (`covered`); and the mean number of candidates per unit."""
    from thinkprobe.evalgold import projection
    from thinkprobe.reasoningflow import edge_types, response_nodes

    count = dict.fromkeys(("units", "units_found", "links", "links_found", "nodes", "nodes_found"), 0)
    for x in exs:
        doc = docs[x["doc_index"]]
        proj = projection(response_nodes(doc), [{"start": u.start, "end": u.end} for u in x["units"]])
        units_of: dict[int, list[int]] = {}
        for u, g in enumerate(proj):
            if g is not None:
                units_of.setdefault(g, []).append(u)
        cand = set(zip(x["i"].tolist(), x["j"].tolist()))
        for a, b, _, _ in edge_types(doc):
            pairs = {(min(u, v), max(u, v)) for u in units_of.get(a, ()) for v in units_of.get(b, ()) if u != v}
            found = bool(pairs & cand)
            far = [p for p in pairs if p[1] - p[0] > min_distance]
            count["units"] += len(far)
            count["units_found"] += len(cand.intersection(far))
            if pairs and len(far) == len(pairs):
                count["links"] += 1
                count["links_found"] += found
            if abs(b - a) > min_distance:
                count["nodes"] += 1
                count["nodes_found"] += found
    units = sum(len(x["units"]) for x in exs)
    return {"far_links": count["nodes"], "covered": count["nodes_found"] / max(count["nodes"], 1),
            "links_covered": count["links_found"] / max(count["links"], 1),
            "units_covered": count["units_found"] / max(count["units"], 1),
            "candidates_per_unit": sum(len(x["i"]) for x in exs) / max(units, 1)}
