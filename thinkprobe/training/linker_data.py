"""The pair MLP's training data (`scripts/train_linker.py`): silver documents, their units and
embeddings, candidate-pair and unit-type datasets.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import pickle
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import Config
from ..evalgold import silver_labels
from ..graph import build_graphs
from ..io import FieldMap, detect
from ..link.candidates import CandidateParams, Similarity, candidate_arrays
from ..link.pairmlp import UnitFeaturizer, build_pair_model, neighbours, pair_features
from ..link.protocol import PAIR_CLASSES, TYPE_CLASSES
from ..records import InputError, ThoughtUnit
from .parser_fit import BestEpoch

__all__ = ["select_docs", "CachedEncoder", "Example", "split", "prepare", "PairData", "pair_dataset", "torch_setup", "pair_class_weights", "train_pair_model", "pair_probs", "unit_space_scores", "fit_thresholds", "TypeData", "type_dataset", "DECODE_FLAGS"]


def select_docs(path: Path, n: int, max_chars: int, seed: int, generators: str | None = None) -> list[dict]:
    """Silver documents at most `max_chars` long (and by one of `generators`, comma-separated,
    when given), shuffled with `seed`; the first `n` (all when n <= 0)."""
    wanted = set(generators.split(",")) if generators else None
    docs = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if len(doc["raw_text"]["response"]) <= max_chars and (
                    wanted is None or doc["metadata"].get("generator") in wanted):
                docs.append(doc)
    random.Random(seed).shuffle(docs)
    return docs[:n] if n > 0 else docs


class CachedEncoder:
    """The run's encoder behind a text -> (embedding, tokens) pickle, so re-training encodes nothing."""

    def __init__(self, encoder, path: str | None):
        self.encoder, self.path = encoder, path
        self.cache = pickle.load(open(path, "rb")) if path and os.path.exists(path) else {}

    def encode_and_count(self, texts):
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        todo = sorted({t for t, k in zip(texts, keys) if k not in self.cache})
        if todo:
            emb, tok = self.encoder.encode_and_count(todo)
            for t, v, c in zip(todo, emb, tok):
                self.cache[hashlib.sha1(t.encode()).hexdigest()] = (v, int(c))
            if self.path:
                with open(self.path + ".tmp", "wb") as f:
                    pickle.dump(self.cache, f)
                os.replace(self.path + ".tmp", self.path)
        rows = [self.cache[k] for k in keys]
        dim = len(rows[0][0]) if rows else 384
        return (np.array([r[0] for r in rows], dtype=np.float32).reshape(len(texts), dim),
                np.array([r[1] for r in rows], dtype=np.int32))


class _NoLinks:
    name = "none"

    def link(self, batch):
        return [[] for _ in batch]


@dataclass
class Example:
    doc_id: str
    generator: str
    units: list[ThoughtUnit]
    emb: np.ndarray
    unit_types: list[str | None]  # silver type of the node each unit overlaps most
    pair_labels: dict[tuple[int, int], int]  # (i, j), i < j -> PAIR_CLASSES index


def split(n: int, seed: int, val_frac: float) -> tuple[list[int], list[int]]:
    """Indices of the held-out and of the training traces: a seeded shuffle, the first `val_frac`
    held out (scripts/fit_thresholds.py finds the same held-out traces through this)."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    n_val = max(1, int(round(val_frac * n)))
    return sorted(order[:n_val]), sorted(order[n_val:])


def prepare(docs: list[dict], cfg: Config, encoder, batch: int = 16, log=print) -> list[Example]:
    out = []
    t0 = time.time()
    for start in range(0, len(docs), batch):
        chunk = docs[start:start + batch]
        traces = [detect(d, FieldMap(), "silver", k) for k, d in enumerate(chunk)]
        for doc, g in zip(chunk, build_graphs(traces, cfg, encoder, _NoLinks())):
            if isinstance(g, InputError) or len(g.units) < 2:
                continue
            unit_types, labels = silver_labels(doc, g.units)
            out.append(Example(doc["doc_id"], doc["metadata"].get("generator", ""), g.units,
                               np.asarray(g.embeddings, np.float32), unit_types, labels))
        log(f"prepared {min(start + batch, len(docs))}/{len(docs)} traces ({time.time() - t0:.0f} s)")
    return out


@dataclass
class PairData:
    emb: np.ndarray  # all units' embeddings, stacked
    unit_feats: np.ndarray
    gi: np.ndarray  # global unit index of i
    gj: np.ndarray
    pf: np.ndarray
    y: np.ndarray
    doc: np.ndarray  # example index of the pair
    origin: np.ndarray
    missed: dict  # positives that no candidate covers: counts


def pair_dataset(examples: list[Example], params: CandidateParams, featurizer: UnitFeaturizer) -> PairData:
    embs, ufs, gis, gjs, pfs, ys, docs, origins = [], [], [], [], [], [], [], []
    offset = 0
    missed = {"pos": 0, "covered": 0, "far_pos": 0, "far_covered": 0}
    for d, ex in enumerate(examples):
        sim = Similarity(ex.emb)  # strips of rows: no n x n matrix for a long trace
        i, j, origin = candidate_arrays(ex.units, sim, params)
        y = np.array([ex.pair_labels.get((int(a), int(b)), 0) for a, b in zip(i, j)], dtype=np.int64)
        cand_set = set(zip(i.tolist(), j.tolist()))
        for (a, b) in ex.pair_labels:
            far = b - a > 1
            hit = (a, b) in cand_set
            missed["pos"] += 1
            missed["covered"] += hit
            missed["far_pos"] += far
            missed["far_covered"] += far and hit
        embs.append(ex.emb)
        ufs.append(featurizer(ex.units, sim))
        pfs.append(pair_features(ex.units, sim, i, j, origin))
        gis.append(i + offset)
        gjs.append(j + offset)
        ys.append(y)
        docs.append(np.full(len(i), d))
        origins.append(origin)
        offset += len(ex.units)
    return PairData(np.concatenate(embs), np.concatenate(ufs), np.concatenate(gis), np.concatenate(gjs),
                    np.concatenate(pfs), np.concatenate(ys), np.concatenate(docs), np.concatenate(origins), missed)


def torch_setup(seed: int):
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)  # one thread: bit-identical weights run after run
    torch.use_deterministic_algorithms(True)
    return torch


def pair_class_weights(y: np.ndarray, n_classes: int, power: float, floor_none: bool = False) -> np.ndarray:
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    w = np.where(counts > 0, (counts.max() / np.maximum(counts, 1)) ** power, 0.0)
    w = np.clip(w / w[counts > 0].min(), 1.0, 10.0)
    if floor_none:
        w[0] = 1.0
    return w.astype(np.float32)


def train_pair_model(train: PairData, val: PairData, dim: int, unit_size: int, args, log=print, seed: int | None = None):
    seed = args.seed if seed is None else seed
    torch = torch_setup(seed)
    model = build_pair_model(dim, unit_size, args.proj, args.hidden, dropout=args.dropout)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.wd)
    weights = torch.from_numpy(pair_class_weights(train.y, len(PAIR_CLASSES), args.class_power, floor_none=True))
    loss_fn = torch.nn.CrossEntropyLoss(weight=weights)

    def tensors(d: PairData):
        return (torch.from_numpy(d.emb), torch.from_numpy(d.unit_feats), torch.from_numpy(d.gi),
                torch.from_numpy(d.gj), torch.from_numpy(d.pf), torch.from_numpy(d.y))

    def forward(t, idx):
        emb, uf, gi, gj, pf, _ = t
        a, b = gi[idx], gj[idx]
        return model(emb[a], emb[b], uf[a], uf[b], pf[idx])

    tr, va = tensors(train), tensors(val)
    gen = torch.Generator().manual_seed(seed)
    best = BestEpoch()
    for epoch in range(1, args.epochs + 1):
        model.train()
        perm = torch.randperm(len(train.y), generator=gen)
        total = 0.0
        for s in range(0, len(perm), args.batch):
            idx = perm[s:s + args.batch]
            loss = loss_fn(forward(tr, idx), tr[5][idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        model.eval()
        with torch.no_grad():
            idx = torch.arange(len(val.y))
            vloss = float(loss_fn(forward(va, idx), va[5]))
        log(f"pair epoch {epoch}: train loss {total / len(perm):.4f}  val loss {vloss:.4f}")
        best.offer(vloss, model, epoch)
    best.restore(model)
    log(f"pair model: best epoch {best.epoch} (val loss {best.value:.4f})")
    return model, best.epoch


def pair_probs(models, d: PairData) -> np.ndarray:
    """Class probabilities of the pairs of `d`, averaged over the ensemble's members."""
    import torch

    with torch.no_grad():
        emb, uf = torch.from_numpy(d.emb), torch.from_numpy(d.unit_feats)
        gi, gj = torch.from_numpy(d.gi), torch.from_numpy(d.gj)
        pf = torch.from_numpy(d.pf)
        return np.mean([torch.softmax(m(emb[gi], emb[gj], uf[gi], uf[gj], pf), dim=1).numpy() for m in models], axis=0)


def unit_space_scores(examples: list[Example], d: PairData, probs: np.ndarray, decode: dict,
                      unit_types: list[list[str]] | None = None) -> dict:
    """Edge F1, labelled F1 and far-edge F1 (pairs more than one unit apart) of the decoded edges
    against the silver pairs, in unit space. `unit_types`: provisional types per example (the type
    head's), else every unit RSN."""
    from thinkprobe.link.decode import decode_edges

    c = dict.fromkeys(("tp", "pred", "gold", "ltp", "ftp", "fpred", "fgold"), 0)
    starts = np.concatenate([[0], np.cumsum([len(e.units) for e in examples])])
    for k, ex in enumerate(examples):
        sel = np.flatnonzero(d.doc == k)
        types = unit_types[k] if unit_types is not None else ["RSN"] * len(ex.units)
        units = [ThoughtUnit(u.index, u.section, u.start, u.end, u.text, u.segment, t, u.cues) for u, t in zip(ex.units, types)]
        edges = decode_edges(units, probs[sel], d.gi[sel] - starts[k], d.gj[sel] - starts[k], d.origin[sel], decode)
        pred: dict[tuple[int, int], set[str]] = {}
        for e in edges:
            pred.setdefault((min(e.src, e.dst), max(e.src, e.dst)), set()).add("inference" if e.edge_type == "synthesis" else e.edge_type)
        gold = {}
        for pair, cls in ex.pair_labels.items():
            name = PAIR_CLASSES[cls].split(":")[0]
            gold[pair] = "inference" if name == "synthesis" else name
        far_pred, far_gold = {p for p in pred if p[1] - p[0] > 1}, {p for p in gold if p[1] - p[0] > 1}
        c["tp"] += len(set(pred) & set(gold))
        c["pred"] += len(pred)
        c["gold"] += len(gold)
        c["ltp"] += sum(1 for pair, kinds in pred.items() if gold.get(pair) in kinds)
        c["ftp"] += len(far_pred & far_gold)
        c["fpred"] += len(far_pred)
        c["fgold"] += len(far_gold)
    p, r = c["tp"] / max(c["pred"], 1), c["tp"] / max(c["gold"], 1)
    return {"precision": p, "recall": r, "f1": 2 * c["tp"] / max(c["pred"] + c["gold"], 1),
            "labelled_f1": 2 * c["ltp"] / max(c["pred"] + c["gold"], 1),
            "far_f1": 2 * c["ftp"] / max(c["fpred"] + c["fgold"], 1)}


def fit_thresholds(examples, d: PairData, probs: np.ndarray, decode_flags: dict, unit_types=None, log=print) -> dict:
    """Window and far thresholds maximising edge F1 + far-edge F1 on held-out silver traces (far
    edges are what the window cannot give; the sum keeps them from being traded away)."""
    grid = [round(float(x), 2) for x in np.arange(0.3, 0.76, 0.05)]
    best = (-1.0, None, None)
    for near in grid:
        for far in grid:
            if far < near:
                continue
            decode = {"threshold_near": near, "threshold_far": far, **decode_flags}
            scores = unit_space_scores(examples, d, probs, decode, unit_types)
            if scores["f1"] + scores["far_f1"] > best[0]:
                best = (scores["f1"] + scores["far_f1"], decode, scores)
    log(f"thresholds {best[1]} -> held-out silver edge F1 {best[2]['f1']:.3f}, far-edge F1 {best[2]['far_f1']:.3f}")
    return best[1]


@dataclass
class TypeData:
    x: tuple  # (emb, prev, next, unit feats)
    y: np.ndarray


def type_dataset(examples: list[Example], featurizer: UnitFeaturizer) -> TypeData:
    cols = [[], [], [], []]
    ys = []
    for ex in examples:
        keep = np.array([t is not None for t in ex.unit_types])
        sim = Similarity(ex.emb)
        prev, nxt = neighbours(ex.emb)
        for c, arr in zip(cols, (ex.emb, prev, nxt, featurizer(ex.units, sim))):
            c.append(arr[keep])
        ys.append(np.array([TYPE_CLASSES.index(t) for t in ex.unit_types if t is not None], dtype=np.int64))
    return TypeData(tuple(np.concatenate(c).astype(np.float32) for c in cols), np.concatenate(ys))


# Decoding choices made on held-out silver traces (docs/accuracy.md): planning units announce a
# check rather than make it (their critique pairs become elaborations); units the type head calls
# CRT or RPT get their most probable critique / repetition edge within their window.
DECODE_FLAGS = {"plans_elaborate": True, "force_structural": True, "force_in_window": True}
