"""Train ThinkProbe's trace-level parser (thinkprobe/link/parser.py) on ReasoningFlow silver graphs.

Stage 1, `prepare`: every silver trace is split, encoded and tiled by our own pipeline once; its
units and embeddings are cached in chunk files under --cache (resumable: finished chunks are kept).
Training data are the silver gemini-3.1-pro graphs of ../shared/data/reasoningflow/v1, ALL of
them, long traces included. The human dev set (v0_human_D) is never read here.

    python scripts/train_parser.py prepare --shards 2       # once: ../cache/silver (CPU: ~11 min on 2 cores)
    python scripts/train_parser.py train [options] --out DIR  # one network (the shipped ensemble's
    python scripts/train_parser.py ensemble A B --out DIR     # members and options: its model card)
    python scripts/train_parser.py compare                  # vs the old default on silver neither trained on
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from thinkprobe.bench import data_dir  # noqa: E402
from thinkprobe.config import Config  # noqa: E402
from thinkprobe.link.base import SHAPE_PATTERNS as LINKER_SHAPE_PATTERNS  # noqa: E402

SILVER = (data_dir() or REPO.parent / "shared" / "data") / "reasoningflow" / "v1" / "v1_llm_gemini-3.1-pro-preview.jsonl.gz"


def load_silver(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def prepare(args) -> None:
    """Split, encode (fp32, as the pipeline on CPU; `--bf16`: bfloat16) and tile every silver trace; one
    pickle per chunk of traces in args.cache, skipped when present (an interrupted run resumes);
    the precision is recorded in args.cache/meta.json for the model card."""
    import torch

    from thinkprobe.encoder import Encoder
    from thinkprobe.graph import tile_and_type, units_of
    from thinkprobe.load import FieldMap, detect
    from thinkprobe.records import InputError, ThoughtGraph

    torch.set_num_threads(args.threads)
    cfg = Config.load()
    docs = load_silver(Path(args.silver))
    # short traces first (most of the data early), ties by position: a fixed order
    order = sorted(range(len(docs)), key=lambda k: (len(docs[k]["raw_text"]["response"]) > args.long_chars, k))
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    enc = cfg["encoder"]
    precision = "bf16" if args.bf16 else "fp32"
    encoder = Encoder(enc["path"] or None, device="cpu", batch_size=enc["batch_size"], max_seq_length=enc["max_seq_length"],
                      precision=precision)
    chunks = [order[s:s + args.chunk] for s in range(0, len(order), args.chunk)]
    recorded = prepared_precision(cache)
    if recorded is not None and recorded != precision:
        raise SystemExit(f"{cache} holds traces encoded in another precision than {precision}: use another --cache")
    if recorded is None and any(cache.glob("chunk_*.pkl")):
        raise SystemExit(f"{cache} holds traces of an unrecorded precision (bf16 before it was recorded): use another --cache")
    (cache / "meta.json").write_text(json.dumps({"precision": precision}) + "\n", encoding="utf-8")
    total_chars = sum(len(docs[k]["raw_text"]["response"]) for k in order)
    done_chars, t0, enc_chars = 0, time.time(), 0
    for c, chunk in enumerate(chunks):
        if c % args.shards != args.shard:
            continue
        path = cache / f"chunk_{c:04d}.pkl"
        chars = sum(len(docs[k]["raw_text"]["response"]) for k in chunk)
        if path.exists():
            continue
        traces = [detect(docs[k], FieldMap(), "silver", k) for k in chunk]
        planned = [units_of(t, cfg) for t in traces]
        texts = [u.text for units, _ in planned for u in units]
        emb, tok = encoder.encode_and_count(texts)
        bounds = np.cumsum([0] + [len(units) for units, _ in planned])
        rows = []
        for k, t, p, a, b in zip(chunk, traces, planned, bounds, bounds[1:]):
            g = tile_and_type(t, p, emb[a:b], tok[a:b], cfg)
            if isinstance(g, InputError) or not isinstance(g, ThoughtGraph):
                continue
            rows.append({"doc_index": k, "doc_id": docs[k]["doc_id"], "generator": docs[k]["metadata"].get("generator", ""),
                         "units": g.units, "emb": np.asarray(g.embeddings, np.float32)})
        with open(str(path) + ".tmp", "wb") as f:
            pickle.dump(rows, f)
        os.replace(str(path) + ".tmp", path)
        enc_chars += chars
        done_chars = sum(len(docs[k]["raw_text"]["response"]) for q, ch in enumerate(chunks)
                         if (cache / f"chunk_{q:04d}.pkl").exists() for k in ch)
        el = time.time() - t0
        eta = el / max(enc_chars, 1) * (total_chars - done_chars) / args.shards
        print(f"chunk {c + 1}/{len(chunks)}: {len(texts)} units; {done_chars / total_chars:.1%} of the text done, "
              f"{el:.0f} s elapsed, ETA {eta:.0f} s", flush=True)
    print("prepared", flush=True)


FP32_WORDS = "fp32 on CPU, as the pipeline encodes on CPU"
# also the models trained before the precision was recorded: bf16 was prepare's default then
BF16_WORDS = "bf16 on CPU, training data only: the pipeline encodes in fp32 on CPU by default; cosine >= 0.9999 to fp32"


def prepared_precision(cache: str | Path) -> str | None:
    """The precision `prepare` recorded for a cache ("fp32" / "bf16"; None: not recorded)."""
    path = Path(cache) / "meta.json"
    return json.loads(path.read_text(encoding="utf-8"))["precision"] if path.exists() else None


def encoding_of(cache: str | Path) -> str | None:
    """How the prepared cache was encoded, in words for the model card (None: not recorded)."""
    precision = prepared_precision(cache)
    return None if precision is None else FP32_WORDS if precision == "fp32" else BF16_WORDS


def load_prepared(cache: str | Path) -> list[dict]:
    rows = []
    for path in sorted(Path(cache).glob("chunk_*.pkl")):
        with open(path, "rb") as f:
            rows += pickle.load(f)
    return sorted(rows, key=lambda r: r["doc_index"])



# ----------------------------------------------------------------------------- held-out split


def held_out(doc_id: str, val_frac: float, val_start: float = 0.0) -> bool:
    """Whether a silver trace is held out: by a hash of its id, so the split does not depend on
    which traces are present. The held-out hashes are [val_start, val_start + val_frac) of the
    range (another val_start: another fold)."""
    import hashlib

    h = int(hashlib.sha1(doc_id.encode()).hexdigest()[:8], 16) % 1000
    return val_start * 1000 <= h < (val_start + val_frac) * 1000


# ----------------------------------------------------------------------------- data


def examples(rows: list[dict], docs: list[dict], params, featurizer, log=print) -> list[dict]:
    """Per trace: the parser's features (trace_features) plus targets: arc (0/1 per candidate),
    label (PAIR_CLASSES index, 0 where no arc), types (TYPE_CLASSES index, -1 where no node)."""
    from thinkprobe.evalgold import silver_labels
    from thinkprobe.link import TYPE_CLASSES
    from thinkprobe.link.parser import trace_features

    out = []
    cov = [0, 0, 0, 0]
    t0 = time.time()
    for r in rows:
        units = r["units"]
        if len(units) < 2:
            continue
        doc = docs[r["doc_index"]]
        unit_types, labels = silver_labels(doc, units)
        f = trace_features(units, r["emb"], params, featurizer)
        lab = np.array([labels.get((int(a), int(b)), 0) for a, b in zip(f["i"], f["j"])], dtype=np.int64)
        cand = set(zip(f["i"].tolist(), f["j"].tolist()))
        for (a, b) in labels:
            cov[0] += 1
            cov[1] += (a, b) in cand
            cov[2] += b - a > 1
            cov[3] += b - a > 1 and (a, b) in cand
        out.append({**f, "doc_id": r["doc_id"], "doc_index": r["doc_index"], "generator": r["generator"], "units": units,
                    "emb": r["emb"], "label": lab, "arc": (lab > 0).astype(np.float32),
                    "types": np.array([TYPE_CLASSES.index(t) if t else -1 for t in unit_types], dtype=np.int64)})
    log(f"{len(out)} traces featurised ({time.time() - t0:.0f} s); candidates cover {cov[1] / max(cov[0], 1):.1%} of "
        f"silver unit pairs, {cov[3] / max(cov[2], 1):.1%} of those more than one unit apart")
    return out


def batches(exs: list[dict], max_units: int, rng) -> list[list[int]]:
    """Traces grouped by length into padded batches of at most `max_units` units, in seeded order."""
    order = sorted(range(len(exs)), key=lambda k: (len(exs[k]["units"]), exs[k]["doc_id"]))
    groups: list[list[int]] = []
    for k in order:
        n = len(exs[k]["units"])
        if groups and (len(groups[-1]) + 1) * n <= max_units:
            groups[-1].append(k)
        else:
            groups.append([k])
    rng.shuffle(groups)
    return groups


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


def train_model(train: list[dict], val: list[dict], dim: int, unit_size: int, args, log=print):
    import torch

    from thinkprobe.link import PAIR_CLASSES, TYPE_CLASSES
    from thinkprobe.link.parser import build_parser_model

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    model = build_parser_model(dim, unit_size, args.proj, args.hidden, args.layers, args.arc_hidden, args.context,
                               not args.no_pair_feats, args.dropout, train[0]["pf"].shape[1])
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.wd)
    lw = torch.from_numpy(_class_weights(np.concatenate([e["label"] for e in train]), len(PAIR_CLASSES), args.class_power))
    lw[0] = 0.0
    tw = torch.from_numpy(_class_weights(np.concatenate([e["types"] for e in train]), len(TYPE_CLASSES), args.type_class_power))
    rng = np.random.default_rng(args.seed)

    def losses(exs, group, train_mode):
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
        h = model.states(torch.from_numpy(e), torch.from_numpy(u), lens)
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

    def held_out_loss():
        model.eval()
        with torch.no_grad():
            v = np.zeros(3)
            vg = batches(val, args.max_units, np.random.default_rng(0))
            for group in vg:
                a, l, t, _ = losses(val, group, False)
                v += [float(a), float(l), float(t)]
            v /= max(len(vg), 1)
        return v, v[0] + args.label_weight * v[1] + args.type_weight * v[2]

    best = BestEpoch()
    mean = WeightMean()
    t0 = time.time()
    for epoch in range(1, args.epochs + 1):
        model.train()
        groups = batches(train, args.max_units, rng)
        tot = np.zeros(3)
        for g, group in enumerate(groups):
            a, l, t, _ = losses(train, group, True)
            loss = a + args.label_weight * l + args.type_weight * t
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            tot += [float(a.detach()), float(l.detach()), float(t.detach())]
        v, vloss = held_out_loss()
        el = time.time() - t0
        log(f"epoch {epoch}/{args.epochs}: train arc/label/type {np.round(tot / len(groups), 4).tolist()}  held-out "
            f"{np.round(v, 4).tolist()} (sum {vloss:.4f}); {el:.0f} s, ETA {el / epoch * (args.epochs - epoch):.0f} s")
        best.offer(vloss, model, epoch)
        if epoch > args.epochs - args.average_last:
            mean.offer(model)
    if args.average_last:
        # the mean of the last epochs' weights (stochastic weight averaging); no epoch is picked
        mean.apply(model)
        v, vloss = held_out_loss()
        log(f"mean of the weights of epochs {args.epochs - args.average_last + 1}-{args.epochs}: held-out "
            f"{np.round(v, 4).tolist()} (sum {vloss:.4f}; best single epoch {best.epoch}: {best.value:.4f})")
        return model, args.epochs
    best.restore(model)
    log(f"best epoch {best.epoch} (held-out loss {best.value:.4f})")
    return model, best.epoch


# ----------------------------------------------------------------------------- held-out scoring


def predicted_docs(model, exs: list[dict], docs: list[dict], decode: dict, probs_cache: dict | None = None) -> list[dict]:
    """ReasoningFlow documents of the parser's graphs of `exs` (typed, linked, structural types
    settled as the pipeline does), for thinkprobe.evalgold.score."""
    from dataclasses import replace

    from thinkprobe.link.base import decode_edges
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
    as the pipeline does), beside the silver document `gold` of the same text, for evalgold.score."""
    from thinkprobe.nodetypes import finalise_type

    outgoing: dict[int, list] = {}
    for e in edges:
        outgoing.setdefault(e.src, []).append(e)
    nodes = [{"id": f"resp{u.index}", "source": "response", "start": u.start, "end": u.end,
              "thinkprobe_type": finalise_type(u.node_type, outgoing.get(u.index, ()))} for u in units]
    es = [{"id": f"e{k}", "source_node_id": f"resp{e.src}", "dest_node_id": f"resp{e.dst}", "label": e.edge_type,
           "thinkprobe_type": e.edge_type, "polarity": e.polarity or None} for k, e in enumerate(edges)]
    return {"doc_id": gold["doc_id"], "raw_text": gold["raw_text"], "nodes": nodes, "edges": es}


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


DECODE_FLAGS = {"plans_elaborate": True, "force_structural": True, "force_in_window": True, "labels_follow_types": True}
OFFSET_GRID = tuple(np.round(np.arange(-1.5, 1.51, 0.25), 2))


def unit_type_scores(val: list[dict], probs: list[np.ndarray], offsets) -> tuple[float, np.ndarray]:
    """Macro-F1 of the provisional types of held-out silver units (those under a silver node), and
    per type the log of its predicted count over its silver count (0 for a type silver never uses)."""
    from thinkprobe.link import TYPE_CLASSES
    from thinkprobe.link.parser import predict_types

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


def train(args) -> None:

    from thinkprobe.link import CandidateParams
    from thinkprobe.link.parser import ParserFeaturizer

    log = lambda msg: print(msg, flush=True)  # noqa: E731
    cfg = Config.load()
    docs = load_silver(Path(args.silver))
    rows = load_prepared(args.cache)
    if args.max_traces:
        rows = rows[: args.max_traces]
    log(f"{len(rows)} prepared silver traces of {len(docs)} ({sum(len(r['units']) for r in rows)} units)")
    params = CandidateParams(window=args.window, top_k=args.top_k, plan_lookback=args.plan_lookback,
                             conclusion_lookback=args.conclusion_lookback, block_lookback=args.block_lookback,
                             number_lookback=args.number_lookback, horizon=args.horizon)
    featurizer = ParserFeaturizer(list(cfg.lexicon), SHAPE_PATTERNS, args.lexical_pairs)
    exs = examples(rows, docs, params, featurizer, log)
    val = [x for x in exs if held_out(x["doc_id"], args.val_frac, args.val_start)]
    tr = [x for x in exs if not held_out(x["doc_id"], args.val_frac, args.val_start)]
    log(f"{len(tr)} training traces ({sum(len(x['units']) for x in tr)} units, {sum(len(x['i']) for x in tr)} pairs), "
        f"{len(val)} held out ({sum(len(x['units']) for x in val)} units)")
    dim = tr[0]["emb"].shape[1]
    model, epoch = train_model(tr, val, dim, featurizer.size, args, log)
    flags = {**DECODE_FLAGS, "type_offsets": fit_type_offsets(model, val, log, max_rate_ratio=args.type_rate_ratio)}
    decode, held = fit_thresholds(model, val, docs, flags, log, GRID[::2] if args.coarse else GRID)
    row = {"variant": args.variant or "", "context": args.context, "pair_feats": not args.no_pair_feats,
           **{k: getattr(args, k) for k in ("window", "top_k", "epochs", "hidden", "proj", "arc_hidden")},
           "best_epoch": epoch, **{k: decode[k] for k in ("threshold_near", "threshold_far")}, **held}
    log("RESULT " + json.dumps(row))
    if args.results:
        with open(args.results, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
    if args.out:
        save(Path(args.out), args, cfg, params, featurizer, decode, model, dim, {
            "train_traces": len(tr), "heldout_traces": len(val), "train_units": int(sum(len(x["units"]) for x in tr)),
            "train_pairs": int(sum(len(x["i"]) for x in tr)), "best_epoch": epoch, "heldout_silver": held,
            "generators": dict(sorted({g: sum(1 for x in exs if x["generator"] == g) for g in {x["generator"] for x in exs}}.items())),
        }, [x["doc_id"] for x in exs], [x["doc_id"] for x in val])
        log(f"saved {args.out}")


def compare(args) -> None:
    """The parser and the old default (pair MLP + type head) on the silver traces that neither saw
    in training (held out by both splits), scored as eval-gold scores, from the cached units."""

    from thinkprobe.evalgold import score
    from thinkprobe.link import LinkInput, TrainedLinker, TypeHead, unit_typer
    from thinkprobe.link.parser import ParserLinker

    cfg = Config.load()
    docs = load_silver(Path(args.silver))
    old_dir = Path(args.old)
    old_meta = json.loads((old_dir / "config.json").read_text(encoding="utf-8"))["training"]
    old_ids = (old_dir / "traces.txt").read_text(encoding="utf-8").split()
    import random

    order = list(range(len(old_ids)))
    random.Random(old_meta["seed"]).shuffle(order)
    old_held = {old_ids[k] for k in order[: max(1, int(round(old_meta["val_frac"] * len(old_ids))))]}
    new_ids = dict(line.split("\t") for line in (Path(args.parser) / "traces.txt").read_text(encoding="utf-8").splitlines())
    rows = [r for r in load_prepared(args.cache) if new_ids.get(r["doc_id"]) == "heldout" and len(r["units"]) > 1]
    both = [r for r in rows if r["doc_id"] in old_held]
    print(f"{len(rows)} traces held out by the parser, {len(both)} of them also by the old default", flush=True)
    old = TrainedLinker(old_dir, cfg)
    typer_old = unit_typer(old, "head", TypeHead(old_dir))
    parser = ParserLinker(args.parser, cfg)
    systems = {"old default (pair MLP + type head)": (old, typer_old), "parser": (parser, parser.typer)}

    def as_docs(linker, typer, subset):
        items = [(r["units"], r["emb"]) for r in subset]
        typed = typer.batch(items)
        linked = linker.link([LinkInput(u, r["emb"]) for u, r in zip(typed, subset)])
        return [scored_doc(docs[r["doc_index"]], units, edges) for r, units, edges in zip(subset, typed, linked)]

    for subset_name, subset in (("held out by both", both), ("held out by the parser", rows)):
        gold = [docs[r["doc_index"]] for r in subset]
        for name, (linker, typer) in systems.items():
            s = score(gold, as_docs(linker, typer, subset))
            print(f"{subset_name} ({len(subset)} traces), {name}: {json.dumps({**brief(s), 'far10_recall': round(s['by_distance']['>10']['recall'], 4)})}",
                  flush=True)


def ensemble(args) -> None:
    """An ensemble of trained parser folders (same candidates and features): weights stacked with
    prefixes, thresholds refitted on their common held-out silver traces, scores written."""
    import torch
    from safetensors.torch import load_file, save_file

    from thinkprobe.link import CandidateParams
    from thinkprobe.link.parser import load_parser_model

    log = lambda msg: print(msg, flush=True)  # noqa: E731
    torch.set_num_threads(1)
    metas = [json.loads((Path(m) / "config.json").read_text(encoding="utf-8")) for m in args.members]
    if any(m["candidates"] != metas[0]["candidates"] or m["shape_patterns"] != metas[0]["shape_patterns"] for m in metas):
        raise SystemExit("ensemble members must share candidates and features")
    held = [{line.split("\t")[0] for line in (Path(m) / "traces.txt").read_text(encoding="utf-8").splitlines()
             if line.endswith("heldout")} for m in args.members]
    common = set.intersection(*held)
    models = [load_parser_model(m)[0] for m in args.members]
    _, featurizer, meta = load_parser_model(args.members[0])
    docs = load_silver(Path(args.silver))
    rows = [r for r in load_prepared(args.cache) if r["doc_id"] in common]
    val = examples(rows, docs, CandidateParams.from_dict(meta["candidates"]), featurizer, log)
    flags = {**DECODE_FLAGS, "type_offsets": fit_type_offsets(models, val, log, max_rate_ratio=args.type_rate_ratio)}
    decode, held_scores = fit_thresholds(models, val, docs, flags, log)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state = {}
    for k, m in enumerate(args.members):
        state.update({f"{k}.{name}": v for name, v in load_file(str(Path(m) / "parser.safetensors")).items()})
    save_file(state, str(out / "parser.safetensors"))
    new = dict(metas[0])
    new.update(name=out.name, members=[m["model"] for m in metas], decode=decode)
    new["training"] = {**metas[0]["training"], "encoding": metas[0]["training"].get("encoding") or encoding_of(args.cache),
                       "heldout_silver": held_scores, "type_rate_ratio": args.type_rate_ratio,
                       "members": [{"folder": Path(m).name, "epochs": mm["training"]["epochs"], "best_epoch": mm["training"]["best_epoch"],
                                    "average_last": mm["training"].get("average_last", 0),
                                    "heldout_silver": mm["training"]["heldout_silver"]} for m, mm in zip(args.members, metas)]}
    (out / "config.json").write_text(json.dumps(new, indent=2) + "\n", encoding="utf-8")
    (out / "traces.txt").write_text((Path(args.members[0]) / "traces.txt").read_text(encoding="utf-8"), encoding="utf-8")
    (out / "README.md").write_text(model_card(new, out), encoding="utf-8")
    log("RESULT " + json.dumps({"variant": "ensemble " + " + ".join(Path(m).name for m in args.members),
                                **{k: decode[k] for k in ("threshold_near", "threshold_far")}, **held_scores}))


def save(out: Path, args, cfg, params, featurizer, decode, model, dim, stats, doc_ids, held_ids) -> None:
    from thinkprobe.link.parser import read_model_dir, write_model_dir

    arch = {"dim": dim, "proj": args.proj, "hidden": args.hidden, "layers": args.layers, "arc_hidden": args.arc_hidden,
            "context": args.context, "pair_feats": not args.no_pair_feats, "pair_size": featurizer.pair_size}
    training = {"data": Path(args.silver).name, "encoding": encoding_of(args.cache), "seed": args.seed, "val_frac": args.val_frac, "val_start": args.val_start, "epochs": args.epochs,
                "lr": args.lr, "weight_decay": args.wd, "dropout": args.dropout, "max_units": args.max_units,
                "class_power": args.class_power, "type_class_power": args.type_class_power,
                "label_weight": args.label_weight, "type_weight": args.type_weight, "listwise": args.listwise,
                "listwise_min_bucket": args.listwise_min_bucket, "average_last": args.average_last, "type_rate_ratio": args.type_rate_ratio, **stats}
    write_model_dir(out, model, featurizer, arch, params, decode, {"config_digest": cfg.digest, "training": training})
    (out / "traces.txt").write_text("".join(f"{d}\t{'heldout' if d in set(held_ids) else 'train'}\n" for d in doc_ids),
                                    encoding="utf-8")
    (out / "README.md").write_text(model_card(read_model_dir(str(out)), out), encoding="utf-8")


def epochs_used(t: dict) -> str:
    """Which epochs' weights a network has, from its training record."""
    if t.get("average_last"):
        return f"weights averaged over epochs {t['epochs'] - t['average_last'] + 1}-{t['epochs']} of {t['epochs']}"
    return f"best epoch {t['best_epoch']} of {t['epochs']}"


def model_card(meta: dict, out: Path) -> str:
    """The model card: what the model is, its data and splits, its held-out silver scores, how to
    retrain it, and the licence caveat of its training data. Dev-set scores: docs/accuracy.md."""
    from thinkprobe.evalgold import EDGE_LABEL_MAP, NODE_LABEL_MAP

    t, m, h = meta["training"], meta["model"], meta["training"]["heldout_silver"]
    size = sum(p.stat().st_size for p in out.glob("*.safetensors"))
    gens = ", ".join(f"{g} {n}" for g, n in t["generators"].items())
    edge_rows = "\n".join(f"| {label} | {kind}{' (' + pol + ')' if pol else ''} |" for label, (kind, pol) in EDGE_LABEL_MAP.items())
    node_rows = "\n".join(f"| {label} | {kind} |" for label, kind in NODE_LABEL_MAP.items())
    d = meta["decode"]
    ens = ""
    if meta.get("members"):
        ens = ("\n\n**An ensemble** of " + str(len(meta["members"])) + " such networks trained alike (" + "; ".join(
            f"{x['folder']}: {a['layers']}-layer BiLSTM {a['hidden']}, {epochs_used(x)}, held-out silver "
            f"edge F1 {x['heldout_silver']['edge_f1']:.3f} / far {x['heldout_silver']['far_edge_f1']:.3f}"
            for x, a in zip(t["members"], meta["members"])) + "); their probabilities are averaged and the thresholds "
            "were refitted for the average (`python scripts/train_parser.py ensemble A B --out DIR`). The description "
            "below is of the first member.")
    flags = " --lexical-pairs" if meta.get("lexical_pairs") else ""
    if meta["candidates"].get("number_lookback"):
        flags += f" --number-lookback {meta['candidates']['number_lookback']}"
    if t.get("listwise"):
        flags += f" --listwise {t['listwise']:g}"
    listwise = (f" + {t['listwise']:g} x parent ranking (for each unit with a silver parent among its candidates, minus the mean "
                "log-softmax of its parents' arc logits over its candidates: `listwise_loss`, `--listwise`)") if t.get("listwise") else ""
    rate = f" --type-rate-ratio {t['type_rate_ratio']:g}" if t.get("type_rate_ratio") else ""

    def own_flags(x, a):
        return "".join(f" --{name} {value:g}" for name, value, default in (
            ("layers", a["layers"], 1), ("hidden", a["hidden"], 96), ("epochs", x["epochs"], 10),
            ("average-last", x.get("average_last", 0), 0)) if value != default)

    folders = [f"/tmp/{chr(65 + k)}" for k in range(len(meta.get("members") or ()))]
    prepare = "prepare" if t.get("encoding") == FP32_WORDS else "prepare --bf16"
    retrain = (f"    python scripts/train_parser.py {prepare} && python scripts/train_parser.py train{flags}{own_flags(t, m)}{rate} --out models/{meta['name']}"
               if not meta.get("members") else
               f"    python scripts/train_parser.py {prepare}\n" + "".join(
                   f"    python scripts/train_parser.py train{flags}{own_flags(x, a)} --out {f}\n"
                   for f, x, a in zip(folders, t["members"], meta["members"])) +
               f"    python scripts/train_parser.py ensemble {' '.join(folders)}{rate} --out models/{meta['name']}")
    return f"""# {meta['name']}: ThinkProbe's trace-level parser (linker and typer)

{"Small torch networks" if meta.get("members") else "One small torch network"} ({size / 1e6:.2f} MB of safetensors weights) over the frozen all-MiniLM-L6-v2
unit embeddings of the pipeline (nothing else is loaded; no network), `thinkprobe/link/parser.py`:

- unit inputs: the embedding and {len(meta['cue_names'])} lexicon cue flags (from `configs/`), {len(meta['shape_patterns'])}
  text-shape flags (patterns in `config.json`) and 10 numeric features (position, length, section, block
  start, similarity to the neighbours and to the most similar earlier unit), projected to {m['proj']};
- contextualizer: {"a " + str(m['layers']) + "-layer BiLSTM with " + str(m['hidden']) + " units per direction over the whole trace (cost linear in its length)" if m['context'] == 'bilstm' else 'none (ablation)'};
- arc scorer per candidate pair (i < j): head and dependent projections of the two states ({m['arc_hidden']}),
  their product, a distance-bucket embedding{" and 16 pair features (cosine, its rank among j's candidates, its gap to j's best earlier similarity, distance, blocks, sections, word overlap, candidate origin, plan / block-start relations)" if m['pair_feats'] else ''}{" and 3 lexical ones (word overlap weighted by inverse unit frequency within the trace, a shared number, i last wrote one of j's numbers)" if meta.get('lexical_pairs') else ''};
  outputs one arc logit (a sigmoid per arc: several parents allowed) and 8 edge-label logits (the
  6 edge types, critique split by polarity);
- node-type head on the states: FAC RSN EXP CRT MET CON RPT (provisional; SYN and the final CRT /
  RPT follow from the edges, `nodetypes.finalise_type`).{ens}

Trained jointly: arc BCE{listwise} + {t['label_weight']} x label CE (positives only, class weights) + {t['type_weight']} x type CE.

Candidates per unit j: {json.dumps(meta['candidates'])}: the window of preceding units, the top-k
most similar earlier units beyond the window{" among the " + str(meta['candidates']['horizon']) + " before j (the horizon: time linear in the length)" if meta['candidates'].get('horizon') else ''} (found block by block, never an n x n matrix), earlier
planning units, earlier conclusion units for concluding or critiquing units, recent block starts{", the units that last wrote one of j's numbers (number_lookback)" if meta['candidates'].get('number_lookback') else ''}.
Types: the type head's most probable type after adding per-type offsets to its log-probabilities
({d.get('type_offsets')}; fitted on the held-out silver units for macro-F1, `fit_type_offsets`{"; every type's predicted count kept within a factor " + format(t['type_rate_ratio'], 'g') + " of its silver count, since the indicators are type rates" if t.get('type_rate_ratio') else ""}).
Decoding (`link.base.decode_edges`): an edge where the arc probability is at least {d['threshold_near']:.2f}
(window) / {d['threshold_far']:.2f} (beyond), labelled by the most probable label{" (critique and repetition labels only for units typed CRT / RPT: labels follow types)" if d.get('labels_follow_types') else ''}; a planning unit's
critique pairs become elaborations; every unit but the first gets a forward parent in its window; a
unit typed CRT or RPT gets its most probable critique / repetition target in its window.

## Data and splits

`{t['data']}` (ReasoningFlow v1 silver graphs annotated by Gemini-3.1-pro), all traces, long ones
included ({t['train_traces'] + t['heldout_traces']} with two or more units; generators: {gens}). Each trace was split, encoded
({t.get('encoding') or BF16_WORDS}) and
tiled by our own pipeline; silver nodes were projected onto our units (most overlap) and labels
mapped as below. Held out: the traces whose sha1(doc_id) falls in the {"lowest " + format(t['val_frac'], '.0%') if not t.get('val_start') else format(t['val_start'], '.0%') + " to " + format(t['val_start'] + t['val_frac'], '.0%')}
({t['heldout_traces']} traces); {"the weights (" + epochs_used(t) + ")" if t.get("average_last") else "the epoch (" + str(t['best_epoch']) + " of " + str(t['epochs']) + ", lowest held-out loss)"}, the type offsets and the thresholds (grid
0.1-0.7, maximising edge F1 + far-edge F1 scored as eval-gold scores) were chosen on them.
`traces.txt` lists every trace with its split. {t['train_units']:,} training units, {t['train_pairs']:,} candidate pairs.
The human-annotated v0 traces (v0_human_D, the dev set) were not used for training, epochs,
thresholds or architecture.

Retrain (after the one-off data preparation):

{retrain}

(seeded; one torch thread and deterministic algorithms: a second run of member A's command with
`--epochs 14` repeated its first 10 epochs' losses and its held-out scores exactly, on the same
machine. On 2 shared CPU cores: {"about 11 minutes of fp32 encoding once with `prepare --shards 2`" if prepare == "prepare" else "about 25 minutes of bf16 encoding once on CPUs with bf16 instructions (about 10 times slower on CPUs without them, where fp32 takes 11 minutes but changes the last bits of the training data)"},
then about 4 minutes per 10 epochs of training (22 s an epoch on one free core) and 1-3 of fitting.)

## Scores

Held-out silver traces, scored as eval-gold scores (node pairs after projection onto the silver
nodes): edge F1 {h['edge_f1']:.3f} (P {h['edge_p']:.3f}, R {h['edge_r']:.3f}), labelled edge F1 {h['labelled_edge_f1']:.3f},
far-edge F1 {h['far_edge_f1']:.3f}, node type macro-F1 {h['type_macro_f1']:.3f}.
Dev set (human annotator D) and the comparison with the old default: docs/accuracy.md.

## Label mapping (spec section 7; `thinkprobe/evalgold.py`)

| ReasoningFlow node | ours |
|---|---|
{node_rows}
| reflection | CRT when an incoming reflect:* / validate:attack edge shows it evaluates an earlier node, else MET |

| ReasoningFlow edge | ours |
|---|---|
{edge_rows}

Synthesis has no ReasoningFlow label: a unit with inference edges from units of two or more other
topical blocks gets synthesis edges instead when it is a conclusion or has a synthesis cue, or
when the sources span three or more blocks. Edges from question (context) nodes are dropped.

## Licence caveat

The weights are derived from ReasoningFlow data (GitHub jinulee-v/reasoningflow), whose
repository states no licence, with silver labels produced by Gemini-3.1-pro (Google's terms for
model outputs may apply). Research use only; do not redistribute outside the project. The encoder
it builds on, all-MiniLM-L6-v2, is Apache-2.0.
"""


# Text-shape flags for the model: stored in the model's config.json (the lexicon stays in configs/):
# the pair MLP's, and two more.
SHAPE_PATTERNS = {
    **LINKER_SHAPE_PATTERNS,
    "alternative": r"\b(?:alternatively|another (?:way|approach)|instead|or maybe|what if)\b",
    "again": r"\b(?:again|as (?:before|above|computed|found|noted)|earlier|previously|recall that|we (?:had|found|got))\b",
}


RATE_HELP = "type offsets keep each type's predicted count within this factor of its held-out silver count (0: no bound)"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="segment + encode the silver traces once (cache)")
    p.add_argument("--silver", default=str(SILVER))
    p.add_argument("--cache", default=str(REPO.parent / "cache" / "silver"))
    p.add_argument("--chunk", type=int, default=8)
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: on a shared machine, more spin)")
    p.add_argument("--shards", type=int, default=1, help="run SHARDS processes, each with its own --shard")
    p.add_argument("--shard", type=int, default=0)
    p.add_argument("--long-chars", type=int, default=20000)
    p.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=False,
                   help="encode in bfloat16 (faster only on CPUs with bf16 instructions: about 10x slower on one without)")
    t = sub.add_parser("train", help="train, pick the epoch and thresholds on held-out silver, save")
    t.add_argument("--silver", default=str(SILVER))
    t.add_argument("--cache", default=str(REPO.parent / "cache" / "silver"))
    t.add_argument("--out", default=None, help="model folder to write (e.g. models/parser-minilm-bilstm)")
    t.add_argument("--results", default=None, help="append the held-out result row (JSON) to this file")
    t.add_argument("--variant", default=None, help="a name for the result row")
    t.add_argument("--max-traces", type=int, default=0)
    t.add_argument("--coarse", action="store_true", help="threshold grid in steps of 0.1 (design comparisons)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--val-frac", type=float, default=0.15)
    t.add_argument("--val-start", type=float, default=0.0, help="held-out hashes from here (another fold: e.g. 0.15)")
    t.add_argument("--context", default="bilstm", choices=("bilstm", "none"))
    t.add_argument("--no-pair-feats", action="store_true")
    t.add_argument("--lexical-pairs", action="store_true",
                   help="the arc scorer also reads idf-weighted word overlap, shared numbers and last number mention")
    t.add_argument("--proj", type=int, default=128)
    t.add_argument("--hidden", type=int, default=96)
    t.add_argument("--layers", type=int, default=1)
    t.add_argument("--arc-hidden", type=int, default=64)
    t.add_argument("--dropout", type=float, default=0.2)
    t.add_argument("--epochs", type=int, default=10)
    t.add_argument("--average-last", type=int, default=0,
                   help="the model is the mean of the weights of the last N epochs (0: the epoch of the lowest held-out loss)")
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--wd", type=float, default=1e-4)
    t.add_argument("--max-units", type=int, default=256, help="padded units per training batch")
    t.add_argument("--class-power", type=float, default=0.25)
    t.add_argument("--type-class-power", type=float, default=0.5)
    t.add_argument("--listwise", type=float, default=0.0, help="weight of a per-unit parent-ranking loss (0: none)")
    t.add_argument("--listwise-min-bucket", type=int, default=-1, help="that loss over the candidates in distance buckets above this (-1: all; 0: 2+ units away)")
    t.add_argument("--type-rate-ratio", type=float, default=0.0, help=RATE_HELP)
    t.add_argument("--label-weight", type=float, default=0.5)
    t.add_argument("--type-weight", type=float, default=0.5)
    for name, default in (("window", 6), ("top_k", 10), ("plan_lookback", 3), ("conclusion_lookback", 4), ("block_lookback", 3),
                          ("number_lookback", 0), ("horizon", 2048)):
        t.add_argument(f"--{name.replace('_', '-')}", type=int, default=default, help=f"candidates: {name}")
    c = sub.add_parser("compare", help="parser vs the old default on silver traces neither trained on")
    c.add_argument("--silver", default=str(SILVER))
    c.add_argument("--cache", default=str(REPO.parent / "cache" / "silver"))
    c.add_argument("--parser", default=str(REPO / "models" / "parser-minilm-bilstm"))
    c.add_argument("--old", default=str(REPO / "models" / "linker-minilm-mlp"))
    en = sub.add_parser("ensemble", help="stack trained parser folders into one ensemble, thresholds refitted")
    en.add_argument("members", nargs="+")
    en.add_argument("--out", required=True)
    en.add_argument("--type-rate-ratio", type=float, default=0.0, help=RATE_HELP)
    en.add_argument("--silver", default=str(SILVER))
    en.add_argument("--cache", default=str(REPO.parent / "cache" / "silver"))
    return ap.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.cmd == "prepare":
        prepare(args)
    elif args.cmd == "train":
        train(args)
    elif args.cmd == "ensemble":
        ensemble(args)
    elif args.cmd == "compare":
        compare(args)


if __name__ == "__main__":
    main()
