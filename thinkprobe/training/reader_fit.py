"""Training the reader (thinkprobe.reader) with the parser (issue 27).

Phase 1 fine-tunes the encoder's top layers jointly with a parser on the silver traces, from the
cached lower-layer token states (reader_data), so the vector they pool per unit keeps what linking
and typing need. Phase 2 freezes the reader, computes its vectors once, and trains the shipped
parser on the frozen embedding and the reader's vector (fast epochs; epoch chosen on held-out
silver as for the plain parser).
"""
from __future__ import annotations

import time

import numpy as np

from .parser_data import batches

__all__ = ["reader_vectors", "train_reader", "attach_reader", "load_trained_reader", "vectors_of_folder", "length_batches", "unit_token_states", "reader_digest"]


def length_batches(states: list[np.ndarray], max_tokens: int = 8192):
    """Index arrays of `states` (token-state arrays) in length-sorted sub-batches of at most
    `max_tokens` padded tokens (a longer single unit is a batch of its own)."""
    order = np.argsort([len(x) for x in states], kind="stable")
    s = 0
    while s < len(order):
        e = s + 1
        while e < len(order) and (e - s + 1) * len(states[order[e]]) <= max_tokens:
            e += 1
        yield order[s:e]
        s = e


def unit_token_states(layers, states: list[np.ndarray]) -> list:
    """Each unit's token states (tokens x hidden, float32 tensors) through the reader's layers,
    [CLS] and [SEP] dropped (a unit of two tokens or fewer keeps them), in `length_batches`; in the
    units' order. Read only by experiments/token_maxsim.py and experiments/token_cross.py (not part
    of the product)."""
    import torch

    from thinkprobe.reader import pad_states, upper_token_states

    out = [None] * len(states)
    for idx in length_batches(states):
        h, m = pad_states([np.asarray(states[k], np.float32) for k in idx])
        with torch.inference_mode():
            h = upper_token_states(layers, h, m)
        for r, k in enumerate(idx):
            n = len(states[k])
            out[k] = h[r, 1:n - 1] if n > 2 else h[r, :n]
    return out


def _unit_vectors(layers, states: list[np.ndarray], max_tokens: int = 8192):
    """Normalised pooled vectors of units (token-state arrays) through the reader's layers, in
    `length_batches`; in the units' order."""
    import torch

    from thinkprobe.reader import pad_states, upper_states

    parts = []
    for idx in length_batches(states, max_tokens):
        h, m = pad_states([np.asarray(states[k], np.float32) for k in idx])
        parts.append((idx, torch.nn.functional.normalize(upper_states(layers, h, m), dim=1)))
    vec = torch.cat([p for _, p in parts])
    where = torch.from_numpy(np.concatenate([i for i, _ in parts]))
    inv = torch.empty_like(where)
    inv[where] = torch.arange(len(where))
    return vec[inv]


def reader_vectors(layers, lower, exs: list[dict]) -> None:
    """Store each example's reader vectors (units x hidden, float32) under "reader" (no gradient)."""
    import torch

    layers.eval()
    with torch.inference_mode():
        for x in exs:
            x["reader"] = _unit_vectors(layers, lower.units(x["doc_id"])).numpy()


def _extra(layers, lower, exs, group):
    """The reader's vectors of a padded batch of examples (B, T, hidden), with gradient."""
    import torch

    T = max(len(exs[k]["units"]) for k in group)
    states, rows, cols = [], [], []
    for r, k in enumerate(group):
        u = lower.units(exs[k]["doc_id"])
        states += u
        rows += [r] * len(u)
        cols += list(range(len(u)))
    vec = _unit_vectors(layers, states)
    out = torch.zeros(len(group), T, vec.shape[1])
    return out.index_put((torch.tensor(rows), torch.tensor(cols)), vec)


def train_reader(train: list[dict], val: list[dict], lower, args, log=print):
    """Phase 1: the reader's layers (from the encoder's pretrained ones) and a parser trained jointly
    for args.reader_epochs; returns the reader's layers (evaluation mode)."""
    import torch

    from thinkprobe.encoder import Encoder
    from thinkprobe.link.parser import build_parser_model
    from thinkprobe.reader import build_reader

    from .parser_fit import batch_losses, class_weights

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    layers = build_reader(Encoder(device="cpu", precision="fp32").model, lower.frozen)
    dim = train[0]["emb"].shape[1]
    model = build_parser_model(dim + dim, train[0]["uf"].shape[1], args.proj, args.hidden, args.layers, args.arc_hidden,
                               args.context, not args.no_pair_feats, args.dropout, train[0]["pf"].shape[1])
    opt = torch.optim.AdamW([{"params": model.parameters(), "lr": args.lr},
                             {"params": layers.parameters(), "lr": args.reader_lr}], weight_decay=args.wd)
    lw, tw = class_weights(train, args)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    for epoch in range(1, args.reader_epochs + 1):
        model.train()
        layers.train()
        groups = batches(train, args.max_units, rng)
        tot = np.zeros(3)
        for g, group in enumerate(groups):
            a, l, t, _ = batch_losses(model, train, group, lw, tw, args, True, _extra(layers, lower, train, group))
            loss = a + args.label_weight * l + args.type_weight * t
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(model.parameters()) + list(layers.parameters()), 5.0)
            opt.step()
            tot += [float(a.detach()), float(l.detach()), float(t.detach())]
            if g % 50 == 0:
                el = time.time() - t0
                done = (epoch - 1) * len(groups) + g + 1
                log(f"reader epoch {epoch}, batch {g + 1}/{len(groups)}: {np.round(tot / (g + 1), 4).tolist()}; {el:.0f} s, "
                    f"ETA {el / done * (args.reader_epochs * len(groups) - done):.0f} s")
        model.eval()
        layers.eval()
        with torch.no_grad():
            v = np.zeros(3)
            vg = batches(val, args.max_units, np.random.default_rng(0))
            for group in vg:
                a, l, t, _ = batch_losses(model, val, group, lw, tw, args, False, _extra(layers, lower, val, group))
                v += [float(a), float(l), float(t)]
            v /= max(len(vg), 1)
        log(f"reader epoch {epoch}/{args.reader_epochs}: train {np.round(tot / len(groups), 4).tolist()} held-out "
            f"{np.round(v, 4).tolist()} (sum {v[0] + args.label_weight * v[1] + args.type_weight * v[2]:.4f}); {time.time() - t0:.0f} s")
    layers.eval()
    return layers


def attach_reader(exs: list[dict]) -> None:
    """Phase 2's inputs: each example's embeddings become [frozen embedding, reader vector]."""
    for x in exs:
        x["emb"] = np.concatenate([x["emb"], x.pop("reader")], axis=1).astype(np.float32)


def load_trained_reader(folder):
    """The reader layers saved in a model folder (reader.safetensors), in float32, evaluation mode."""
    import json
    from pathlib import Path

    from thinkprobe.encoder import Encoder
    from thinkprobe.reader import READER_FILE, Reader

    meta = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    return Reader.load(Path(folder) / READER_FILE, meta["reader"]["frozen"], Encoder(device="cpu", precision="fp32").model).layers


def reader_digest(folder) -> str:
    """The first 16 hex digits of the sha256 of a model folder's reader weights: the key of caches
    computed from that reader."""
    import hashlib
    from pathlib import Path

    from thinkprobe.reader import READER_FILE

    return hashlib.sha256((Path(folder) / READER_FILE).read_bytes()).hexdigest()[:16]


def vectors_of_folder(folder, lower, exs: list[dict], cache=None, log=print) -> None:
    """`reader_vectors` of the reader saved in `folder`, kept in the pickle `cache` (keyed by the
    folder's reader weights' digest) so that further members and ensembles reuse them."""
    import pickle
    from pathlib import Path

    path = Path(cache) / f"reader_{reader_digest(folder)}.pkl" if cache else None
    if path is not None and path.exists():
        with open(path, "rb") as f:
            got = pickle.load(f)
        if all(x["doc_id"] in got for x in exs):
            for x in exs:
                x["reader"] = got[x["doc_id"]]
            log(f"reader vectors from {path}")
            return
    reader_vectors(load_trained_reader(folder), lower, exs)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            pickle.dump({x["doc_id"]: x["reader"] for x in exs}, f)
