"""Experiment (issue 27), not part of the product: does a learned token-level pair scorer help the parser?

A small cross-attention network reads the reader's token states of both units of a candidate pair
(the reader given by --reader-from, its fine-tuned top layers run on the cached lower-layer states;
[CLS] / [SEP] dropped, at most 48 tokens per unit): each token of j attends over i's tokens and each
token of i over j's (2 heads of 32, shared weights), an MLP reads every token with what it attended
to, masked mean and max pooling give the pair a vector, and a softmax over the parser's 9 pair
classes ("none" and the 8 edge classes) is its output. It is trained on the training traces'
candidate pairs only, cross-fitted: two networks, each trained on half of the training traces
(halves by sha1 of the trace id) and predicting the other half, so that the parser never trains on
a score fitted to its own labels; held-out traces get the mean of both. The 9 log-probabilities
(clipped at -10, divided by 5) are appended to the parser's pair features, then everything else is
`scripts/train_parser.py train`.

    python experiments/token_cross.py train <train_parser.py train flags>        # with the scores
    python experiments/token_cross.py train --no-cross <the same flags>          # the same run without

The reader's token states are cached in --reader-cache (xtok_<reader digest>.npy, about 2 GB).
Options of the pair network (environment): XATTN_EPOCHS (default 3), XATTN_LR (1e-3),
XATTN_NEGATIVES (the share of non-silver candidate pairs drawn each epoch, default 0.25; the
output bias starts at the log class prior of that mix).
"""
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import thinkprobe.training.parser_cli as parser_cli  # noqa: E402

MAX_TOKENS = 48
N_CLASSES = 9
NEGATIVES = float(os.environ.get("XATTN_NEGATIVES", "0.25"))


def token_cache(folder, lower, doc_ids: list[str], cache_dir, log=print):
    """The reader's token states of every unit of `doc_ids` ([CLS]/[SEP] dropped, at most MAX_TOKENS):
    a flat float16 array (tokens x hidden) and {doc_id: unit offsets into it}, cached on disk."""
    from thinkprobe.training.reader_fit import load_trained_reader, reader_digest, unit_token_states

    base = Path(cache_dir) / f"xtok_{reader_digest(folder)}"
    npy, idx = base.with_suffix(".npy"), base.with_suffix(".json")
    if npy.exists() and idx.exists():
        offsets = json.loads(idx.read_text(encoding="utf-8"))
        if all(d in offsets for d in doc_ids):
            return np.load(npy, mmap_mode="r"), offsets
    layers = load_trained_reader(folder)
    chunks, offsets, at, t0 = [], {}, 0, time.time()
    for c, d in enumerate(doc_ids):
        out = [t[:MAX_TOKENS].numpy().astype(np.float16) for t in unit_token_states(layers, lower.units(d))]
        offs = [at]
        for t in out:
            chunks.append(t)
            at += len(t)
            offs.append(at)
        offsets[d] = offs
        if c % 100 == 0:
            el = time.time() - t0
            log(f"token states: {c}/{len(doc_ids)} traces, {el:.0f} s, ETA {el / (c + 1) * (len(doc_ids) - c - 1):.0f} s")
    flat = np.concatenate(chunks)
    npy.parent.mkdir(parents=True, exist_ok=True)
    np.save(npy, flat)
    idx.write_text(json.dumps(offsets), encoding="utf-8")
    return np.load(npy, mmap_mode="r"), offsets


def build_net(hidden_in: int, d: int = 64, heads: int = 2):
    import torch
    from torch import nn

    class CrossPair(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = nn.Linear(hidden_in, d), nn.Linear(hidden_in, d), nn.Linear(hidden_in, d)
            self.own = nn.Linear(d, d)
            self.mix = nn.Linear(2 * d, d, bias=False)
            self.out = nn.Sequential(nn.Linear(4 * d, d), nn.ReLU(), nn.Dropout(0.1), nn.Linear(d, N_CLASSES))

        def units(self, U):
            return self.q(U), self.k(U), self.v(U)

        def direction(self, P, M, a, b):
            """Tokens of units a attend over tokens of units b: pooled (pairs, 2d)."""
            q, k, v = P
            B, L, _ = q[a].shape
            qa = q[a].view(B, L, heads, d // heads).transpose(1, 2)
            kb = k[b].view(B, -1, heads, d // heads).transpose(1, 2)
            vb = v[b].view(B, -1, heads, d // heads).transpose(1, 2)
            s = qa @ kb.transpose(2, 3) / (d // heads) ** 0.5
            s = s.masked_fill(M[b][:, None, None, :] == 0, -1e4)
            c = (torch.softmax(s, dim=-1) @ vb).transpose(1, 2).reshape(B, L, d)
            va = v[a]
            h = torch.relu(self.own(va) + self.mix(torch.cat([c, va * c], dim=-1)))
            m = M[a][:, :, None]
            mean = (h * m).sum(1) / m.sum(1).clamp(min=1)
            mx = h.masked_fill(m == 0, -1e4).max(1).values
            return torch.cat([mean, mx], dim=-1)

        def forward(self, P, M, i, j):
            return self.out(torch.cat([self.direction(P, M, j, i), self.direction(P, M, i, j)], dim=-1))

    return CrossPair()


def trace_tensors(flat, offs):
    import torch

    n = len(offs) - 1
    L = max(1, max(b - a for a, b in zip(offs, offs[1:])))
    U = np.zeros((n, L, flat.shape[1]), np.float32)
    M = np.zeros((n, L), np.float32)
    for u, (a, b) in enumerate(zip(offs, offs[1:])):
        U[u, : b - a] = flat[a:b]
        M[u, : b - a] = 1.0
    return torch.from_numpy(U), torch.from_numpy(M)


def fit(net, exs, flat, offsets, epochs, lr, log, tag, seed=0, watch=(), chunk=3000):
    """Train on every silver pair of `exs` and a fresh NEGATIVES share of their other candidate
    pairs each epoch; `watch`: traces whose loss is logged after each epoch (not used to choose)."""
    import torch

    ys = np.concatenate([x["label"] for x in exs])
    prior = np.bincount(ys, minlength=N_CLASSES).astype(np.float64)
    prior[0] *= NEGATIVES
    with torch.no_grad():
        net.out[-1].bias.copy_(torch.from_numpy(np.log(prior / prior.sum() + 1e-6)).float())
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=0.01)
    rng = np.random.default_rng(seed)
    for ep in range(epochs):
        net.train()
        t0, tot, seen = time.time(), 0.0, 0
        for c, t in enumerate(rng.permutation(len(exs))):
            x = exs[t]
            U, M = trace_tensors(flat, offsets[x["doc_id"]])
            keep = (np.asarray(x["label"]) > 0) | (rng.random(len(x["label"])) < NEGATIVES)
            y = torch.from_numpy(np.asarray(x["label"], np.int64)[keep])
            i = torch.from_numpy(np.asarray(x["i"], np.int64)[keep])
            j = torch.from_numpy(np.asarray(x["j"], np.int64)[keep])
            for s in range(0, len(i), chunk):
                P = net.units(U)
                loss = torch.nn.functional.cross_entropy(net(P, M, i[s:s + chunk], j[s:s + chunk]), y[s:s + chunk])
                opt.zero_grad()
                loss.backward()
                opt.step()
                tot += float(loss.detach()) * len(i[s:s + chunk])
                seen += len(i[s:s + chunk])
            if c % 100 == 0:
                el = time.time() - t0
                log(f"{tag} epoch {ep + 1}/{epochs}: {c}/{len(exs)} traces, loss {tot / max(seen, 1):.4f}, {el:.0f} s, "
                    f"ETA {el / (c + 1) * (len(exs) - c - 1):.0f} s")
        w = f", watched traces (all pairs) {loss_of(predict(net, watch, flat, offsets), watch):.4f}" if watch else ""
        log(f"{tag} epoch {ep + 1}/{epochs}: train loss {tot / max(seen, 1):.4f} ({time.time() - t0:.0f} s){w}")
    return net


def predict(net, exs, flat, offsets, chunk=6000):
    import torch

    net.eval()
    out = []
    shift = torch.zeros(N_CLASSES)
    shift[0] = -np.log(NEGATIVES)  # undo the training mix's share of "none"
    with torch.inference_mode():
        for x in exs:
            U, M = trace_tensors(flat, offsets[x["doc_id"]])
            P = net.units(U)
            i, j = torch.from_numpy(np.asarray(x["i"], np.int64)), torch.from_numpy(np.asarray(x["j"], np.int64))
            out.append(np.concatenate([torch.softmax(net(P, M, i[s:s + chunk], j[s:s + chunk]) + shift, -1).numpy()
                                       for s in range(0, max(len(i), 1), chunk)]) if len(i) else np.zeros((0, N_CLASSES), np.float32))
    return out


def loss_of(probs, exs) -> float:
    y = np.concatenate([np.asarray(x["label"], np.int64) for x in exs])
    p = np.concatenate(probs)
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-9, 1))))


def train_model_with_cross(tr, val, dim, unit_size, args, log=print):
    import torch

    from thinkprobe.training.reader_data import LowerStates

    if not args.reader_from:
        sys.exit("token_cross.py: give --reader-from (the reader whose token states are read)")
    torch.set_num_threads(int(os.environ.get("XATTN_THREADS", "2")))
    torch.manual_seed(args.seed)
    epochs, lr = int(os.environ.get("XATTN_EPOCHS", "3")), float(os.environ.get("XATTN_LR", "1e-3"))
    exs = tr + val
    flat, offsets = token_cache(args.reader_from, LowerStates(Path(args.lower)), [x["doc_id"] for x in exs],
                                args.reader_cache, log)
    half = [int(hashlib.sha1(x["doc_id"].encode()).hexdigest(), 16) % 2 for x in tr]
    A = [x for x, h in zip(tr, half) if h == 0]
    B = [x for x, h in zip(tr, half) if h == 1]
    log(f"cross-fitted pair networks: halves of {len(A)} and {len(B)} training traces, {epochs} epochs, lr {lr}")
    netA = fit(build_net(flat.shape[1]), A, flat, offsets, epochs, lr, log, "net A", args.seed, watch=val)
    netB = fit(build_net(flat.shape[1]), B, flat, offsets, epochs, lr, log, "net B", args.seed)
    pB, pA = predict(netA, B, flat, offsets), predict(netB, A, flat, offsets)
    pv = [(a + b) / 2 for a, b in zip(predict(netA, val, flat, offsets), predict(netB, val, flat, offsets))]
    log(f"pair network loss (9 classes): out-of-fold A {loss_of(pA, A):.4f}, B {loss_of(pB, B):.4f}, "
        f"held-out {loss_of(pv, val):.4f}; predicting 'none' everywhere at the training rate: "
        f"{loss_of([np.tile(np.bincount(np.concatenate([x['label'] for x in tr]), minlength=N_CLASSES) / sum(len(x['label']) for x in tr), (len(x['label']), 1)) for x in val], val):.4f}")
    for group, probs in ((A, pA), (B, pB), (val, pv)):
        for x, p in zip(group, probs):
            x["pf"] = np.concatenate([x["pf"], np.clip(np.log(np.clip(p, 1e-12, 1)), -10, 0) / 5], axis=1).astype(np.float32)
    log(f"pair network scores appended: {tr[0]['pf'].shape[1]} pair features")
    return _train_model(tr, val, dim, unit_size, args, log)


_train_model = parser_cli.train_model

if __name__ == "__main__":
    parser_cli.main_with(sys.argv[1:], "--no-cross", mock.patch.object(parser_cli, "train_model", train_model_with_cross))
