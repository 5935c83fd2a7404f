"""Fitting the restatement gate of a parser folder (`thinkprobe.link.parser.gate`): a multinomial
logistic regression per unit over the type head's log-probabilities and the unit's overlap with the
question, fitted on the parser's held-out silver traces (the network never trained on them), with
per-type offsets for macro-F1 fitted on its cross-fitted predictions (five folds by trace). The gate
decides RPT only. `python scripts/train_parser.py rpt-gate --model DIR` writes it into the folder's
config.json ("rpt_gate") with the cross-fitted scores.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["held_out_outputs", "cross_fitted_gates", "fit_rpt_gate", "write_rpt_gate", "main_rpt_gate"]

FOLDS = 5


def held_out_outputs(model_dir: Path, silver: Path, cache: Path, lower: Path, reader_cache: Path) -> list[dict]:
    """Per held-out silver trace of `model_dir`: its units, the network's type probabilities, the
    question's overlap columns and the silver type of each unit (TYPE_CLASSES index, -1: none)."""
    from thinkprobe.evalgold import marked_docs
    from thinkprobe.link.candidates import CandidateParams
    from thinkprobe.link.parser import load_parser_model, question_overlap, run_parser
    from thinkprobe.link.rerank import RERANK_FILE, Reranker

    from .parser_data import doc_question, examples, load_prepared, load_silver

    model, featurizer, meta = load_parser_model(model_dir)
    held = marked_docs(str(model_dir), "heldout")
    docs = load_silver(silver)
    rows = [r for r in load_prepared(cache) if r["doc_id"] in held]
    reranker = Reranker.load(model_dir / RERANK_FILE) if "rerank" in meta else None
    exs = examples(rows, docs, CandidateParams.from_dict(meta["candidates"]), featurizer, reranker=reranker)
    if "reader" in meta:
        from .reader_data import LowerStates
        from .reader_fit import attach_reader, vectors_of_folder

        vectors_of_folder(model_dir, LowerStates(lower), exs, reader_cache)
        attach_reader(exs)
    res = run_parser(model, exs, [x["emb"] for x in exs])
    return [{"doc_id": x["doc_id"], "types": r["types"], "gold": x["types"],
             "question": question_overlap(x["units"], doc_question(docs[x["doc_index"]]))} for x, r in zip(exs, res)]


def _regression_data(outs: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from thinkprobe.link.parser.gate import gate_inputs
    from thinkprobe.link.protocol import TYPE_CLASSES

    x = np.concatenate([gate_inputs(o["types"], o["question"]) for o in outs])
    y = np.concatenate([o["gold"] for o in outs])
    fold = np.concatenate([np.full(len(o["gold"]), k % FOLDS) for k, o in enumerate(outs)])
    if set(np.unique(y[y >= 0]).tolist()) != set(range(len(TYPE_CLASSES))):
        raise ValueError("the held-out silver units do not hold every type")
    return x, y, fold


def _regression(x: np.ndarray, y: np.ndarray) -> dict:
    from sklearn.linear_model import LogisticRegression

    m = LogisticRegression(max_iter=2000, C=1.0).fit(x, y)
    return {"weights": m.coef_.tolist(), "bias": m.intercept_.tolist()}


def cross_fitted_gates(outs: list[dict]) -> list[dict]:
    """The gate of each of five folds by trace (trace k of `outs` in fold k % 5), each regression
    fitted on the other folds; the offsets, common to all, fitted for unit macro-F1 on the
    cross-fitted predictions (each type's count within 1.5x of silver)."""
    return _cross_fitted(*_regression_data(outs))


def _cross_fitted(x: np.ndarray, y: np.ndarray, fold: np.ndarray) -> list[dict]:
    from scipy.special import softmax

    from thinkprobe.link.protocol import TYPE_CLASSES

    from .dev_cv import fit_offsets

    known = y >= 0
    folds = [_regression(x[known & (fold != f)], y[known & (fold != f)]) for f in range(FOLDS)]
    cross = np.zeros((len(y), len(TYPE_CLASSES)))
    for f, m in enumerate(folds):
        cross[fold == f] = softmax(x[fold == f] @ np.asarray(m["weights"]).T + np.asarray(m["bias"]), axis=1)
    offsets = [float(v) for v in fit_offsets([{"types": y}], [cross], np.zeros(len(TYPE_CLASSES)))]
    return [{**m, "offsets": offsets} for m in folds]


def fit_rpt_gate(outs: list[dict], type_offsets, log=print) -> dict:
    """The gate ({"weights", "bias", "offsets", "cv"}) fitted on `outs` (`held_out_outputs`): the
    offsets those of `cross_fitted_gates`, the weights from every trace. "cv": unit type macro-F1
    and RPT F1 of the head alone (with the model's `type_offsets`) and with RPT from the gate of
    the trace's fold."""
    from sklearn.metrics import f1_score

    from thinkprobe.link.parser import predict_types
    from thinkprobe.link.parser.gate import RPT, gated_types
    from thinkprobe.link.protocol import TYPE_CLASSES

    x, y, fold = _regression_data(outs)
    known = y >= 0
    folds = _cross_fitted(x, y, fold)
    gate = {**_regression(x[known], y[known]), "offsets": folds[0]["offsets"]}
    gated = [gated_types(o["types"], o["question"], folds[k % FOLDS]) for k, o in enumerate(outs)]

    def scores(probs) -> tuple[float, float]:
        pred = np.concatenate([[TYPE_CLASSES.index(t) for t in predict_types(p, type_offsets)] for p in probs])
        f1 = f1_score(y[known], pred[known], labels=range(len(TYPE_CLASSES)), average=None, zero_division=0)
        return round(float(np.mean(f1)), 4), round(float(f1[RPT]), 4)

    (head_f1, head_rpt), (gate_f1, gate_rpt) = scores([o["types"] for o in outs]), scores(gated)
    gate["cv"] = {"folds": FOLDS, "traces": len(outs), "units": int(known.sum()), "head_type_macro_f1": head_f1,
                  "head_rpt_f1": head_rpt, "gated_type_macro_f1": gate_f1, "gated_rpt_f1": gate_rpt}
    log(f"restatement gate on {len(outs)} held-out silver traces ({int(known.sum())} units), cross-fitted over {FOLDS} "
        f"folds: unit type macro-F1 {head_f1} -> {gate_f1}, RPT F1 {head_rpt} -> {gate_rpt}; offsets {gate['offsets']}")
    return gate


def write_rpt_gate(model_dir: Path, gate: dict) -> Path:
    """Write `gate` into the parser folder's config.json ("rpt_gate", replacing one there) and forget
    the folder's cached metadata; returns the file."""
    from thinkprobe.link.models import read_model_dir

    path = Path(model_dir) / "config.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**meta, "rpt_gate": gate}, indent=2) + "\n", encoding="utf-8")
    read_model_dir.cache_clear()
    return path


def main_rpt_gate(args) -> None:
    """`train_parser.py rpt-gate`: fit the gate of `args.model` and write it into its config.json."""
    from thinkprobe.link.models import read_model_dir

    model_dir = Path(args.model)
    outs = held_out_outputs(model_dir, Path(args.silver), Path(args.cache), Path(args.lower), Path(args.reader_cache))
    offsets = read_model_dir(str(model_dir))["decode"].get("type_offsets")
    path = write_rpt_gate(model_dir, fit_rpt_gate(outs, offsets, log=lambda msg: print(msg, flush=True)))
    print(f"wrote the restatement gate into {path}", flush=True)
