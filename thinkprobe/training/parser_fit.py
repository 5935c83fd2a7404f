"""Fitting the parser: the network's losses (per-pair BCE and the parent-ranking loss), epochs with
the best held-out loss and weight averaging, and the decoding thresholds and type offsets fitted
on held-out silver.
"""
from __future__ import annotations

import json
import time

import numpy as np

from .parser_data import batches

__all__ = ["BestEpoch", "WeightMean", "listwise_loss", "batch_losses", "class_weights", "fit_epochs", "train_model", "predicted_docs", "scored_doc", "brief", "GRID", "fit_thresholds", "DECODE_FLAGS", "OFFSET_GRID", "unit_type_scores", "fit_type_offsets"]


class BestEpoch:
    """Early stopping's memory (also scripts/train_linker.py's): the weights of a model's best epoch
    so far, the one of the lowest `value` (the highest when not `lower`)."""

    def __init__(self, lower: bool = True):
        self.lower = lower
        self.value = float("inf") if lower else float("-inf")
        self.state = None
        self.epoch = 0

    def offer(self, value: float, model, epoch: int) -> None:
        if value < self.value if self.lower else value > self.value:
            self.value, self.epoch = value, epoch
            self.state = {k: w.clone() for k, w in model.state_dict().items()}

    def restore(self, model):
        """`model` with the best epoch's weights, in evaluation mode."""
        model.load_state_dict(self.state)
        model.eval()
        return model


class WeightMean:
    """The running mean of a model's weights over the epochs offered (stochastic weight averaging:
    `--average-last`), summed in float64."""

    def __init__(self):
        self.total: dict = {}
        self.count = 0

    def offer(self, model) -> None:
        for k, w in model.state_dict().items():
            self.total[k] = self.total.get(k, 0) + w.detach().double()
        self.count += 1

    def apply(self, model):
        """`model` with the mean weights, in evaluation mode."""
        own = model.state_dict()
        model.load_state_dict({k: (w / self.count).to(own[k].dtype) for k, w in self.total.items()})
        model.eval()
        return model


def _class_weights(y: np.ndarray, n: int, power: float) -> np.ndarray:
    counts = np.bincount(y[y >= 0], minlength=n).astype(np.float64)
    w = np.where(counts > 0, (counts.max() / np.maximum(counts, 1)) ** power, 0.0)
    return np.clip(w / w[counts > 0].min(), 1.0, 10.0).astype(np.float32)


def listwise_loss(logit, gj, arc):
    """Parent ranking: for each unit with a silver parent among its candidates, minus the mean
    log-softmax, over that unit's candidates, of its parents' arc logits. `logit`, `gj` (the
    candidates' child units, grouped: sorted by child) and `arc` (0/1) are flat per candidate pair;
    the groups are laid out as rows of a padded matrix so that torch's log_softmax does the work."""
    import torch

    if not len(logit):
        return logit.sum() * 0
    _, group, counts = torch.unique_consecutive(gj, return_inverse=True, return_counts=True)
    slot = torch.arange(len(gj)) - (torch.cumsum(counts, 0) - counts)[group]
    rows = torch.full((len(counts), int(counts.max())), float("-inf")).index_put((group, slot), logit)
    target = torch.zeros(rows.shape).index_put((group, slot), arc)
    has = target.sum(dim=1) > 0
    if not has.any():
        return logit.sum() * 0
    target = target[has] / target[has].sum(dim=1, keepdim=True)
    logp = torch.log_softmax(rows[has], dim=1).masked_fill(target == 0, 0.0)
    return -(target * logp).sum(dim=1).mean()


def batch_losses(model, exs: list[dict], group: list[int], lw, tw, args, train_mode: bool, extra=None):
    """(arc, label, type) losses of one padded batch of examples `group` and its number of pairs;
    `lw` / `tw`: label and type class weights; the parent-ranking loss joins the arc loss in training.
    `extra`: a tensor (B, T, k) of more unit inputs (the reader's vectors), appended to the embeddings."""
    import torch

    from thinkprobe.link.protocol import TYPE_CLASSES

    dim, unit_size = exs[group[0]]["emb"].shape[1], exs[group[0]]["uf"].shape[1]
    T = max(len(exs[k]["units"]) for k in group)
    e = np.zeros((len(group), T, dim), np.float32)
    u = np.zeros((len(group), T, unit_size), np.float32)
    ty = np.full((len(group), T), -1, np.int64)
    gi, gj, bk, pf, arc, lab = [], [], [], [], [], []
    for r, k in enumerate(group):
        x = exs[k]
        n = len(x["units"])
        e[r, :n], u[r, :n], ty[r, :n] = x["emb"], x["uf"], x["types"]
        gi.append(x["i"] + r * T)
        gj.append(x["j"] + r * T)
        bk.append(x["bucket"]); pf.append(x["pf"]); arc.append(x["arc"]); lab.append(x["label"])
    lens = torch.tensor([len(exs[k]["units"]) for k in group])
    et = torch.from_numpy(e) if extra is None else torch.cat([torch.from_numpy(e), extra], dim=-1)
    h = model.states(et, torch.from_numpy(u), lens)
    tl = model.type_logits(h).reshape(-1, len(TYPE_CLASSES))
    ty_t = torch.from_numpy(ty.reshape(-1))
    type_loss = torch.nn.functional.cross_entropy(tl, ty_t, weight=tw, ignore_index=-1)
    flat = h.reshape(-1, h.shape[-1])
    logits = model.pair_logits(flat, *(torch.from_numpy(np.concatenate(a)) for a in (gi, gj, bk, pf)))
    arc_t, lab_t = torch.from_numpy(np.concatenate(arc)), torch.from_numpy(np.concatenate(lab))
    arc_loss = torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], arc_t)
    if args.listwise and train_mode:
        # training only: the held-out loss that picks the epoch stays BCE + label + type
        scope = torch.from_numpy(np.concatenate(bk)) > args.listwise_min_bucket
        arc_loss = arc_loss + args.listwise * listwise_loss(logits[scope, 0], torch.from_numpy(np.concatenate(gj))[scope], arc_t[scope])
    pos = lab_t > 0
    label_loss = (torch.nn.functional.cross_entropy(logits[pos][:, 1:], lab_t[pos] - 1, weight=lw[1:])
                  if pos.any() else logits.sum() * 0)
    return arc_loss, label_loss, type_loss, len(arc_t)


def class_weights(train: list[dict], args):
    """Label and type class weights (torch) of training examples."""
    import torch

    from thinkprobe.link.protocol import PAIR_CLASSES, TYPE_CLASSES

    lw = torch.from_numpy(_class_weights(np.concatenate([e["label"] for e in train]), len(PAIR_CLASSES), args.class_power))
    lw[0] = 0.0
    tw = torch.from_numpy(_class_weights(np.concatenate([e["types"] for e in train]), len(TYPE_CLASSES), args.type_class_power))
    return lw, tw


def fit_epochs(model, train: list[dict], val: list[dict], args, log=print, lr: float | None = None, epochs: int | None = None,
               weights=None):
    """Train `model` on `train` for `epochs` (args.epochs), AdamW at `lr` (args.lr); the epoch of the
    lowest held-out loss on `val` is kept (with args.average_last, the mean of the last epochs'
    weights instead). Returns (model, epoch)."""
    import torch

    epochs = epochs or args.epochs
    opt = torch.optim.AdamW(model.parameters(), lr=lr or args.lr, weight_decay=args.wd)
    lw, tw = weights or class_weights(train, args)
    rng = np.random.default_rng(args.seed)

    def held_out_loss():
        model.eval()
        with torch.no_grad():
            v = np.zeros(3)
            vg = batches(val, args.max_units, np.random.default_rng(0))
            for group in vg:
                a, l, t, _ = batch_losses(model, val, group, lw, tw, args, False)
                v += [float(a), float(l), float(t)]
            v /= max(len(vg), 1)
        return v, v[0] + args.label_weight * v[1] + args.type_weight * v[2]

    best = BestEpoch()
    mean = WeightMean()
    t0 = time.time()
    if val:
        v, vloss = held_out_loss()
        best.offer(vloss, model, 0)
    for epoch in range(1, epochs + 1):
        model.train()
        groups = batches(train, args.max_units, rng)
        tot = np.zeros(3)
        for g, group in enumerate(groups):
            a, l, t, _ = batch_losses(model, train, group, lw, tw, args, True)
            loss = a + args.label_weight * l + args.type_weight * t
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            tot += [float(a.detach()), float(l.detach()), float(t.detach())]
        el = time.time() - t0
        if not val:
            log(f"epoch {epoch}/{epochs}: train arc/label/type {np.round(tot / len(groups), 4).tolist()}; {el:.0f} s")
            continue
        v, vloss = held_out_loss()
        log(f"epoch {epoch}/{epochs}: train arc/label/type {np.round(tot / len(groups), 4).tolist()}  held-out "
            f"{np.round(v, 4).tolist()} (sum {vloss:.4f}); {el:.0f} s, ETA {el / epoch * (epochs - epoch):.0f} s")
        best.offer(vloss, model, epoch)
        if epoch > epochs - args.average_last:
            mean.offer(model)
    if not val:
        model.eval()
        return model, epochs
    if args.average_last:
        # the mean of the last epochs' weights (stochastic weight averaging); no epoch is picked
        mean.apply(model)
        v, vloss = held_out_loss()
        log(f"mean of the weights of epochs {epochs - args.average_last + 1}-{epochs}: held-out "
            f"{np.round(v, 4).tolist()} (sum {vloss:.4f}; best single epoch {best.epoch}: {best.value:.4f})")
        return model, epochs
    best.restore(model)
    log(f"best epoch {best.epoch} (held-out loss {best.value:.4f})")
    return model, best.epoch


def train_model(train: list[dict], val: list[dict], dim: int, unit_size: int, args, log=print):
    import torch

    from thinkprobe.link.parser import build_parser_model

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    model = build_parser_model(dim, unit_size, args.proj, args.hidden, args.layers, args.arc_hidden, args.context,
                               not args.no_pair_feats, args.dropout, train[0]["pf"].shape[1])
    return fit_epochs(model, train, val, args, log)


def predicted_docs(model, exs: list[dict], docs: list[dict], decode: dict, probs_cache: dict | None = None) -> list[dict]:
    """ReasoningFlow documents of the parser's graphs of `exs` (typed, linked, structural types
    settled as the pipeline does), for thinkprobe.evalgold.score."""
    from dataclasses import replace

    from thinkprobe.link.decode import decode_edges
    from thinkprobe.link.parser import predict_types, run_parser

    if probs_cache is None or not probs_cache:
        res = run_parser(model, exs, [x["emb"] for x in exs])
        if probs_cache is not None:
            probs_cache.update(enumerate(res))
    else:
        res = [probs_cache[k] for k in range(len(exs))]
    out = []
    for x, r in zip(exs, res):
        types = predict_types(r["types"], decode.get("type_offsets"))
        units = [replace(u, node_type=t) for u, t in zip(x["units"], types)]
        edges = decode_edges(units, r["probs"], x["i"], x["j"], x["origin"], decode)
        out.append(scored_doc(docs[x["doc_index"]], units, edges))
    return out


def scored_doc(gold: dict, units, edges) -> dict:
    """The ReasoningFlow document of one predicted graph (structural types settled from its edges
    as the pipeline does), beside the silver document `gold` of the same text, for evalgold.score.
    It keeps the gold document's metadata, so that profiling it (indicator agreement) reads the
    same generator: without it every document was one unknown model, whose short untagged answers
    were then set apart as answers without thinking and left out of the agreement."""
    from thinkprobe.nodetypes import finalise_type

    outgoing: dict[int, list] = {}
    for e in edges:
        outgoing.setdefault(e.src, []).append(e)
    nodes = [{"id": f"resp{u.index}", "source": "response", "start": u.start, "end": u.end,
              "thinkprobe_type": finalise_type(u.node_type, outgoing.get(u.index, ()))} for u in units]
    es = [{"id": f"e{k}", "source_node_id": f"resp{e.src}", "dest_node_id": f"resp{e.dst}", "label": e.edge_type,
           "thinkprobe_type": e.edge_type, "polarity": e.polarity or None} for k, e in enumerate(edges)]
    return {"doc_id": gold["doc_id"], "raw_text": gold["raw_text"], **({"metadata": gold["metadata"]} if "metadata" in gold else {}),
            "nodes": nodes, "edges": es}


def brief(s: dict) -> dict:
    return {"edge_f1": round(s["edges"]["f1"], 4), "edge_p": round(s["edges"]["precision"], 4),
            "edge_r": round(s["edges"]["recall"], 4), "labelled_edge_f1": round(s["edges_labelled"]["f1"], 4),
            "far_edge_f1": round(s["far_edges"]["f1"], 4), "type_macro_f1": round(s["types"]["macro_f1"], 4)}


GRID = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)


def fit_thresholds(model, val: list[dict], docs: list[dict], decode_flags: dict, log=print, grid=GRID) -> tuple[dict, dict]:
    """(window, beyond) thresholds maximising edge F1 + far-edge F1 on held-out silver, scored as
    eval-gold scores (node pairs after projection onto the silver nodes)."""
    from thinkprobe.evalgold import score

    gold = [docs[x["doc_index"]] for x in val]
    cache: dict = {}
    best = None
    for near in grid:
        for far in (t for t in grid if t >= near):
            decode = {"threshold_near": near, "threshold_far": far, **decode_flags}
            s = brief(score(gold, predicted_docs(model, val, docs, decode, cache)))
            key = (round(s["edge_f1"] + s["far_edge_f1"], 6), -near, -far)
            if best is None or key > best[0]:
                best = (key, decode, s)
    log(f"thresholds {best[1]} -> held-out silver (eval-gold space) {json.dumps(best[2])}")
    return best[1], best[2]


# The decoding rules chosen by the profile they give on held-out graphs (issue 40, docs/accuracy.md):
# no forced forward parent, synthesis across two blocks, structural units without a weak parent,
# critiques wherever their probability reaches 0.1, plans that critique what they check (2026-12-07).
DECODE_FLAGS = {"plans_elaborate": False, "critique_types": ["CRT", "MET"], "force_structural": True,
                "force_in_window": True, "labels_follow_types": True,
                "vetoed": "convert", "force_parent": False, "synthesis_min_blocks": 2, "structural_parent_max": 0.8,
                "threshold_critique": 0.1}


OFFSET_GRID = tuple(np.round(np.arange(-1.5, 1.51, 0.25), 2))


def unit_type_scores(val: list[dict], probs: list[np.ndarray], offsets) -> tuple[float, np.ndarray]:
    """Macro-F1 of the provisional types of held-out silver units (those under a silver node), and
    per type the log of its predicted count over its silver count (0 for a type silver never uses)."""
    from thinkprobe.link.parser import predict_types
    from thinkprobe.link.protocol import TYPE_CLASSES

    gold = np.concatenate([x["types"] for x in val])
    pred = np.concatenate([[TYPE_CLASSES.index(t) for t in predict_types(p, offsets)] for p in probs])
    pred = pred[gold >= 0]
    gold = gold[gold >= 0]
    f1 = [2 * np.sum((gold == c) & (pred == c)) / max(1, np.sum(gold == c) + np.sum(pred == c)) for c in range(len(TYPE_CLASSES))]
    g, p = np.bincount(gold, minlength=len(TYPE_CLASSES)), np.bincount(pred, minlength=len(TYPE_CLASSES))
    rate = np.where(g > 0, np.log(np.maximum(p, 0.5) / np.maximum(g, 1)), 0.0)
    return float(np.mean(f1)), rate


def fit_type_offsets(model, val: list[dict], log=print, rounds: int = 3, max_rate_ratio: float = 0.0) -> list[float]:
    """Offsets added to the type log-probabilities (one per type) that maximise the macro-F1 of
    the held-out silver units' provisional types: coordinate ascent over OFFSET_GRID, types in
    order, `rounds` passes (training with class weights leaves the head's priors off for macro-F1).
    A change is kept only when it gains; ties keep the earlier offsets, so the result is determined.

    `max_rate_ratio` r > 1 keeps every type's predicted count within a factor r of its silver count
    (the indicators are type rates: a typer that halves a rare type's count flattens the indicator
    built on it, whatever its F1): the objective is macro-F1 minus the excess of |log(predicted /
    silver)| over log r, summed over types, so that an offset set inside the band always wins."""
    from thinkprobe.link.parser import run_parser

    probs = [r["types"] for r in run_parser(model, val, [x["emb"] for x in val])]
    bound = np.log(max_rate_ratio) if max_rate_ratio > 1 else np.inf

    def objective(offsets):
        f1, rate = unit_type_scores(val, probs, offsets)
        return f1 - float(np.sum(np.maximum(np.abs(rate) - bound, 0.0))), f1, rate

    offsets = [0.0] * probs[0].shape[1]
    best, start, _ = objective(offsets)
    for _ in range(rounds):
        for c in range(len(offsets)):
            for v in OFFSET_GRID:
                trial = list(offsets)
                trial[c] = float(v)
                value = objective(trial)[0]
                if value > best + 1e-9:
                    best, offsets = value, trial
    _, f1, rate = objective(offsets)
    log(f"type offsets {offsets}: held-out silver unit type macro-F1 {start:.4f} -> {f1:.4f}; predicted / silver count per type "
        f"{np.round(np.exp(rate), 2).tolist()}")
    return offsets
