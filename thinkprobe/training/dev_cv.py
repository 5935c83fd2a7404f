"""Human conventions learned honestly (issue 27): a trained parser's decoding calibrated on the dev set
(ReasoningFlow v0, human annotator D) under document-level cross-validation, with the folds fixed
in configs/dev_folds.json before any calibration.

For each fold, what is fitted on the other folds' traces only: per-type offsets of the type head
(unit macro-F1 against D's node types) and edge thresholds by distance (1, 2-3, 4-10, > 10 units;
edge F1 + far-edge F1 as eval-gold scores them); the fold's traces are then scored with them. The
result is every fold's scores, their mean and spread, and the scores of the twenty predictions
pooled. `--write` fits once more on all twenty and stores that calibration in the model folder.
"""
from __future__ import annotations

import json
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..shared_data import REPO, data_dir

__all__ = ["FOLDS", "DISTANCE_LIMITS", "dev_rows", "dev_examples", "adapted_model", "adapted_outputs", "predicted", "fit_offsets", "fit_distance_thresholds",
           "calibrate", "cross_validate", "main_cv"]

FOLDS = REPO / "configs" / "dev_folds.json"
DISTANCE_LIMITS = (1, 3, 10, 10 ** 9)
THRESHOLD_GRID = tuple(np.round(np.arange(0.05, 0.91, 0.05), 2))


def dev_rows(gold: Path, cache: Path) -> tuple[list[dict], list[dict]]:
    """The gold documents and their traces split, encoded (fp32 on CPU, as eval-gold) and tiled by the
    pipeline, cached in `cache` (a pickle)."""
    from thinkprobe.config import Config
    from thinkprobe.encoder import Encoder
    from thinkprobe.evalgold import load_docs

    from .parser_data import encode_rows

    docs = load_docs(gold)
    if cache.exists():
        with open(cache, "rb") as f:
            return docs, pickle.load(f)
    cfg = Config.load()
    enc = cfg["encoder"]
    encoder = Encoder(enc["path"] or None, device="cpu", batch_size=enc["batch_size"], max_seq_length=enc["max_seq_length"],
                      precision="fp32")
    rows = encode_rows(docs, list(range(len(docs))), encoder, cfg)
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache, "wb") as f:
        pickle.dump(rows, f)
    return docs, rows


def dev_examples(model_dir: Path, docs: list[dict], rows: list[dict]) -> list[dict]:
    """The parser's features of the dev traces (as the linker computes them) with D's labels as
    targets (projected onto our units as silver labels are: `evalgold.silver_labels`)."""
    from thinkprobe.evalgold import silver_labels
    from thinkprobe.link.parser import ParserLinker
    from thinkprobe.link.protocol import TYPE_CLASSES

    from .parser_data import doc_question

    linker = ParserLinker(model_dir)
    items = [(r["units"], r["emb"], doc_question(docs[r["doc_index"]])) for r in rows]
    feats = linker.features(items)
    inputs = linker.parser_inputs(items)  # with a reader: [embedding, reader vector]
    out = []
    for (_, _, question), r, f, emb in zip(items, rows, feats, inputs):
        types, labels = silver_labels(docs[r["doc_index"]], r["units"])
        lab = np.array([labels.get((int(a), int(b)), 0) for a, b in zip(f["i"], f["j"])], dtype=np.int64)
        out.append({**f, "doc_id": r["doc_id"], "doc_index": r["doc_index"], "units": r["units"], "emb": emb,
                    "question": question,
                    "label": lab, "arc": (lab > 0).astype(np.float32),
                    "types": np.array([TYPE_CLASSES.index(t) if t else -1 for t in types], dtype=np.int64)})
    return out


def adapted_model(model_dir: Path, exs: list[dict], train: list[int], epochs: int, lr: float):
    """The parser of `model_dir` fine-tuned on the examples `train` (D's labels) for `epochs` at `lr`
    (seeded, one thread, the losses and weights it was trained with)."""
    import argparse

    import torch

    from thinkprobe.link.parser import load_parser_model

    from .parser_fit import fit_epochs

    model, _, meta = load_parser_model(model_dir)
    t = meta.get("training", {})
    args = argparse.Namespace(wd=t.get("weight_decay", 1e-4), max_units=t.get("max_units", 256), seed=0,
                              label_weight=t.get("label_weight", 0.5), type_weight=t.get("type_weight", 0.5),
                              listwise=t.get("listwise", 0.0), listwise_min_bucket=t.get("listwise_min_bucket", -1),
                              average_last=0, class_power=t.get("class_power", 0.25),
                              type_class_power=t.get("type_class_power", 0.5), epochs=epochs, lr=lr)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    members = model if isinstance(model, list) else [model]
    if epochs:
        for m in members:
            fit_epochs(m, [exs[k] for k in train], [], args, lambda msg: None)
    return model


def adapted_outputs(model_dir: Path, exs: list[dict], train: list[int], epochs: int, lr: float) -> list[dict]:
    """`adapted_model` run on every example: per trace i, j, origin, probs, types (what the linker scores;
    `epochs` 0: the model as it is). A folder with a restatement gate has RPT decided by it, with
    each example's question, as `ParserLinker.score` decides it."""
    from thinkprobe.link.models import read_model_dir
    from thinkprobe.link.parser import gated_trace_types, run_parser

    model = adapted_model(model_dir, exs, train, epochs, lr)
    res = run_parser(model, exs, [x["emb"] for x in exs])
    gate = read_model_dir(str(model_dir)).get("rpt_gate")
    if gate is not None:
        for x, r in zip(exs, res):
            r["types"] = gated_trace_types(r["types"], x["units"], x.get("question"), gate)
    return [{"i": x["i"], "j": x["j"], "origin": x["origin"], "probs": r["probs"], "types": r["types"]} for x, r in zip(exs, res)]


def predicted(docs: list[dict], rows: list[dict], outs: list[dict], decode: dict, keep: list[int]) -> list[dict]:
    """Predicted ReasoningFlow documents of rows `keep` under `decode`."""
    from thinkprobe.link.decode import decode_edges
    from thinkprobe.link.parser import predict_types

    from .parser_fit import scored_doc

    out = []
    for k in keep:
        r, o = rows[k], outs[k]
        units = [replace(u, node_type=t) for u, t in zip(r["units"], predict_types(o["types"], decode.get("type_offsets")))]
        edges = decode_edges(units, o["probs"], o["i"].astype(np.int64), o["j"].astype(np.int64), o["origin"].astype(np.int64), decode)
        out.append(scored_doc(docs[r["doc_index"]], units, edges))
    return out


def fit_offsets(val: list[dict], probs: list[np.ndarray], start, rounds: int = 2, max_rate_ratio: float = 1.5) -> list[float]:
    """Type offsets maximising the unit macro-F1 on `val` ({"types": gold type index per unit}) by
    coordinate ascent from `start`, each type's predicted count kept within `max_rate_ratio` of gold."""
    from .parser_fit import OFFSET_GRID, unit_type_scores

    bound = np.log(max_rate_ratio) if max_rate_ratio > 1 else np.inf

    def objective(offsets):
        f1, rate = unit_type_scores(val, probs, offsets)
        return f1 - float(np.sum(np.maximum(np.abs(rate) - bound, 0.0)))

    offsets = list(start) if start is not None else [0.0] * probs[0].shape[1]
    best = objective(offsets)
    for _ in range(rounds):
        for c in range(len(offsets)):
            for v in OFFSET_GRID:
                trial = list(offsets)
                trial[c] = float(v)
                value = objective(trial)
                if value > best + 1e-9:
                    best, offsets = value, trial
    return offsets


def _objective(s: dict) -> float:
    return s["edges"]["f1"] + s["far_edges"]["f1"]


def fit_distance_thresholds(docs, rows, outs, decode: dict, keep: list[int], rounds: int = 2) -> list[list[float]]:
    """Thresholds by distance (DISTANCE_LIMITS) maximising edge F1 + far-edge F1 on rows `keep`."""
    from thinkprobe.evalgold import score

    gold = [docs[rows[k]["doc_index"]] for k in keep]
    table = [[lim, decode["threshold_near"] if lim == 1 else decode["threshold_far"]] for lim in DISTANCE_LIMITS]

    def value(t):
        return _objective(score(gold, predicted(docs, rows, outs, {**decode, "thresholds_by_distance": t}, keep)))

    best = value(table)
    for _ in range(rounds):
        for c in range(len(table)):
            for v in THRESHOLD_GRID:
                trial = [list(row) for row in table]
                trial[c][1] = float(v)
                got = value(trial)
                if got > best + 1e-9:
                    best, table = got, trial
    return table


def _gold_types(docs, rows) -> list[dict]:
    from thinkprobe.evalgold import silver_labels
    from thinkprobe.link.protocol import TYPE_CLASSES

    out = []
    for r in rows:
        types, _ = silver_labels(docs[r["doc_index"]], r["units"])
        out.append({"types": np.array([TYPE_CLASSES.index(t) if t else -1 for t in types], dtype=np.int64)})
    return out


def calibrate(docs, rows, outs, decode: dict, keep: list[int], gold_types: list[dict]) -> dict:
    """The model's decoding with type offsets and distance thresholds fitted on rows `keep`."""
    offsets = fit_offsets([gold_types[k] for k in keep], [outs[k]["types"] for k in keep], decode.get("type_offsets"))
    decode = {**decode, "type_offsets": offsets}
    return {**decode, "thresholds_by_distance": fit_distance_thresholds(docs, rows, outs, decode, keep)}


def _brief(s: dict) -> dict:
    return {"edge_f1": s["edges"]["f1"], "far_edge_f1": s["far_edges"]["f1"], "type_macro_f1": s["types"]["macro_f1"],
            "labelled_edge_f1": s["edges_labelled"]["f1"], "recall_2_3": s["by_distance"]["2-3"]["recall"],
            "precision_2_3": s["by_distance"]["2-3"]["precision"], "recall_gt10": s["by_distance"][">10"]["recall"],
            "precision_gt10": s["by_distance"][">10"]["precision"]}


def cross_validate(docs, rows, outs, decode: dict, folds: list[list[str]], log=print, adapt=None,
                   calibrated: bool = True) -> dict:
    """Per fold: adapted (`adapt(train rows) -> outputs`, when given) and calibrated on the other
    folds, scored on its own traces; means, spreads and the pooled scores."""
    from thinkprobe.evalgold import score

    index = {r["doc_id"]: k for k, r in enumerate(rows)}
    gold_types = _gold_types(docs, rows)
    per_fold, pooled_pred, pooled_gold, raw = [], [], [], []
    base = outs
    for f, fold in enumerate(folds):
        test = [index[d] for d in fold if d in index]
        train = [index[d] for g, other in enumerate(folds) if g != f for d in other if d in index]
        outs = adapt(train) if adapt is not None else base
        fitted = calibrate(docs, rows, outs, decode, train, gold_types) if calibrated else dict(decode)
        pred = predicted(docs, rows, outs, fitted, test)
        gold = [docs[rows[k]["doc_index"]] for k in test]
        s = _brief(score(gold, pred))
        r = _brief(score(gold, predicted(docs, rows, base, decode, test)))
        log(f"fold {f}: {json.dumps({k: round(v, 4) for k, v in s.items()})} (unadapted {r['edge_f1']:.4f} / {r['far_edge_f1']:.4f} / {r['type_macro_f1']:.4f})")
        per_fold.append({"fold": f, "docs": fold, "calibration": {k: fitted.get(k) for k in ("type_offsets", "thresholds_by_distance")}, **s})
        raw.append(r)
        pooled_pred += pred
        pooled_gold += gold
    keys = list(_brief(score(pooled_gold[:1], pooled_pred[:1])))
    mean = {k: float(np.mean([p[k] for p in per_fold])) for k in keys}
    sd = {k: float(np.std([p[k] for p in per_fold], ddof=1)) for k in keys}
    pooled = score(pooled_gold, pooled_pred)
    return {"folds": per_fold, "mean": mean, "sd": sd, "pooled": _brief(pooled), "pooled_types": pooled["types"],
            "unadapted_mean": {k: float(np.mean([p[k] for p in raw])) for k in keys}, "predictions": pooled_pred}


def main_cv(args) -> None:
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    model_dir = Path(args.model)
    gold = Path(args.gold) if args.gold else (data_dir() or REPO.parent / "shared" / "data") / "reasoningflow" / "v0" / "v0_human_D"
    docs, rows = dev_rows(gold, Path(args.dev_cache))
    folds = json.loads(FOLDS.read_text(encoding="utf-8"))["folds"]
    meta = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    decode = {k: v for k, v in meta["decode"].items() if k not in ("thresholds_by_distance", "calibrated_on")}
    decode = {**decode, **meta.get("silver_decode", {})}
    exs = dev_examples(model_dir, docs, rows)  # the linker's features and inputs, computed once
    outs = adapted_outputs(model_dir, exs, [], 0, 0.0)  # the model as it is
    adapt = None
    if args.adapt_epochs:
        def adapt(train):
            return adapted_outputs(model_dir, exs, train, args.adapt_epochs, args.adapt_lr)
    result = cross_validate(docs, rows, outs, decode, folds, log, adapt, args.calibrate)
    log("CV mean " + json.dumps({k: round(v, 4) for k, v in result["mean"].items()}))
    log("CV sd   " + json.dumps({k: round(v, 4) for k, v in result["sd"].items()}))
    log("pooled  " + json.dumps({k: round(v, 4) for k, v in result["pooled"].items()}))
    log("unadapted, uncalibrated mean " + json.dumps({k: round(v, 4) for k, v in result["unadapted_mean"].items()}))
    predictions = result.pop("predictions")
    if args.indicators:
        # indicator agreement of the cross-validated graphs (each trace's from the model adapted without it)
        from thinkprobe.agreement import indicator_agreement, profile_graphs

        gold_rows, gold_errors = profile_graphs([docs[r["doc_index"]] for r in rows], device="cpu")
        pred_rows, pred_errors = profile_graphs(predictions, device="cpu")
        result["indicator_agreement"] = {**indicator_agreement(gold_rows, pred_rows),
                                         "skipped": {"gold": gold_errors, "pred": pred_errors}}
        log("indicator agreement of the cross-validated graphs: median rho over indicators " + json.dumps(result["indicator_agreement"]["median_spearman_indicators"]))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.write:
        # what ships: the recipe CV chose, applied once more to all twenty traces
        everything = list(range(len(rows)))
        record = {"recipe": {"adapt_epochs": args.adapt_epochs, "adapt_lr": args.adapt_lr, "calibrate": args.calibrate},
                  "gold": "reasoningflow/v0/v0_human_D", "folds": "configs/dev_folds.json", "mean": result["mean"],
                  "sd": result["sd"], "pooled": result["pooled"], "unadapted_mean": result["unadapted_mean"],
                  "per_fold": [{k: v for k, v in p.items() if k != "calibration"} for p in result["folds"]]}
        if args.adapt_epochs:
            from safetensors.torch import save_file

            model = adapted_model(model_dir, exs, everything, args.adapt_epochs, args.adapt_lr)
            members = model if isinstance(model, list) else [model]
            prefixes = [f"{k}." for k in range(len(members))] if "members" in meta else [""]
            meta.setdefault("silver_heldout_before_adaptation", meta.get("training", {}).get("heldout_silver"))
            save_file({p + k: v.contiguous() for p, m in zip(prefixes, members) for k, v in m.state_dict().items()},
                      str(model_dir / "parser.safetensors"))
        if args.calibrate:
            final = calibrate(docs, rows, adapted_outputs(model_dir, exs, [], 0, 0.0), decode, everything, _gold_types(docs, rows))
            meta["silver_decode"] = {k: decode[k] for k in ("threshold_near", "threshold_far", "type_offsets") if k in decode}
            meta["decode"] = final
        meta["adaptation"] = record
        listed = model_dir / "traces.txt"  # eval-gold flags these documents as seen by the model
        kept = [line for line in listed.read_text(encoding="utf-8").splitlines() if not line.endswith("\tadapted")]
        adapted = [f"{docs[r['doc_index']]['doc_id']}\tadapted" for r in rows]
        listed.write_text("".join(line + "\n" for line in kept + adapted), encoding="utf-8")
        (model_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        from .model_card import model_card

        (model_dir / "README.md").write_text(model_card(meta, model_dir), encoding="utf-8")
        log(f"wrote the model adapted to all {len(rows)} dev traces into {model_dir}")
