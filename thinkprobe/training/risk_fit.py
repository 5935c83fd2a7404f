"""Training and evaluation of the failure-risk model (thinkprobe.risk), in two steps:

1. `prepare` + `profile_corpora`: a stratified sample of each labelled corpus (training.risk_data)
   written as records with only id, model, domain, question and reasoning (answer cut off, no
   label), profiled by `thinkprobe.profile` into WORK/<corpus>/run; the labels go to
   WORK/<corpus>/labels.csv, joined back by record position.
2. `fit` + `evaluate`: risk_features of every graph record; a logistic regression on standardised
   features clipped to +-CLIP standard deviations, with Platt calibration (scikit-learn),
   evaluated leave-one-corpus-out and leave-one-model-out against length alone and length +
   model (one-hot).

The command line is scripts/train_failure_risk.py.
"""
from __future__ import annotations

import csv
import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..records import GraphRecord, iter_graph_records, load_graph_record
from ..risk import KEY_WHAT, RISK_FEATURES, TRAINING_KEYS_FILE, FailureRisk, risk_features, trace_key
from .risk_data import CORPORA, MATH_CORPORA, read_corpus, sample_examples

__all__ = ["PER_STRATUM", "prepare", "profile_corpora", "load_dataset", "fit", "evaluate", "ece", "write_model",
           "model_card"]

# Traces per (model, domain, wrong) cell of each corpus: long thinking traces sparingly (profiling
# runs at a few hundred units per second on a CPU), short CoT corpora have many small cells.
PER_STRATUM: dict[str, int] = {"mip_overthinking": 20, "tts_knowledge": 12, "think_bench": 20, "reasoningflow": 12,
                               "thought_anchors": 100, "processbench": 4, "big_bench_mistake": 30, "mr_ben": 10}
LABEL_COLUMNS = ("record", "id", "corpus", "model", "domain", "wrong")
# Standardised features are clipped to +-CLIP: a rare feature (a cycle: 17 of 1,876 traces) has a
# tiny standard deviation, and unclipped one such trace in a held-out fold got a logit of 168, which
# turned the out-of-fold Platt slope negative (MiP-Overthinking left out: AUROC 0.27, 0.73 clipped).
CLIP = 4.0


def prepare(work: Path, data_root: Path, corpora: Sequence[str] = tuple(CORPORA), seed: int = 0,
            per_stratum: Mapping[str, int] | None = None) -> dict[str, int]:
    """WORK/<corpus>/records.jsonl (what the profiler reads) and labels.csv (what it never sees);
    `per_stratum` overrides PER_STRATUM for the corpora it names."""
    caps = {**PER_STRATUM, **(per_stratum or {})}
    counts = {}
    for name in corpora:
        examples = sample_examples(read_corpus(name, data_root), caps[name], seed)
        folder = work / name
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "records.jsonl", "w", encoding="utf-8") as f:
            for e in examples:
                f.write(json.dumps({"id": e.id, "model": e.model, "domain": e.domain, "question": e.question,
                                    "reasoning": e.reasoning}, ensure_ascii=False) + "\n")
        with open(folder / "labels.csv", "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(LABEL_COLUMNS)
            for k, e in enumerate(examples):
                w.writerow([k, e.id, e.corpus, e.model, e.domain, int(e.wrong)])
        counts[name] = len(examples)
    return counts


def profile_corpora(work: Path, corpora: Sequence[str], reuse: bool = False, **options) -> None:
    """Profile WORK/<corpus>/records.jsonl into WORK/<corpus>/run (afresh unless `reuse` and the run
    finished; an interrupted one resumes)."""
    from ..api import profile

    for name in corpora:
        run = work / name / "run"
        if reuse and (run / "graphs.jsonl").exists() and (run / "run.json").exists():
            print(f"{name}: reusing {run}", flush=True)
            continue
        start = time.time()
        print(f"{name}: profiling {work / name / 'records.jsonl'}", flush=True)
        profile(str(work / name / "records.jsonl"), run, report=False, resume=True, **options)
        print(f"{name}: {time.time() - start:.0f} s", flush=True)


def _committed_graphs(run: Path) -> Iterator[GraphRecord]:
    """The graph records of the committed chunks of a run that has not finished (run/parts/)."""
    for part in sorted((run / "parts").glob("[0-9]*.jsonl")):
        with open(part, encoding="utf-8") as f:
            for k, line in enumerate(f, start=1):
                if line.strip():
                    yield load_graph_record(json.dumps(json.loads(line)["graph"]), str(part), k)


def load_dataset(work: Path, corpora: Sequence[str], partial: bool = False) -> dict[str, np.ndarray]:
    """Features and labels of every profiled trace: X (RISK_FEATURES), wrong, corpus, model,
    domain, tokens (reasoning tokens, for the length baselines). `partial`: a corpus whose run has
    not finished contributes the traces of its committed chunks."""
    cols: dict[str, list] = {"X": [], "wrong": [], "corpus": [], "model": [], "domain": [], "tokens": [], "id": [],
                             "key": []}
    for name in corpora:
        with open(work / name / "labels.csv", encoding="utf-8", newline="") as f:
            labels = {int(r["record"]): r for r in csv.DictReader(f)}
        run = work / name / "run"
        finished = (run / "graphs.jsonl").exists()
        for rec in (iter_graph_records(run) if finished or not partial else _committed_graphs(run)):
            lab = labels[int(rec["record"])]
            feats = risk_features(rec)
            cols["X"].append([feats[k] for k in RISK_FEATURES])
            cols["wrong"].append(lab["wrong"] == "1")
            for key in ("corpus", "model", "domain", "id"):
                cols[key].append(lab[key])
            cols["tokens"].append(math.expm1(feats["log_tokens"]))
            cols["key"].append(trace_key(rec))
    return {k: np.asarray(v, dtype=np.float64 if k in ("X", "tokens") else bool if k == "wrong" else object)
            for k, v in cols.items()}


# ----------------------------------------------------------------------------- fitting


def _clip(z: np.ndarray) -> np.ndarray:
    return np.clip(z, -CLIP, CLIP)


def _logistic(c: float = 0.1):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    return make_pipeline(StandardScaler(), FunctionTransformer(_clip), LogisticRegression(C=c, max_iter=5000))


def _balanced_weights(y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each group (corpus) weighs the same in total, so the large short-CoT corpora do not drown
    the thinking-model ones."""
    w = np.ones(len(y))
    for g in np.unique(groups):
        sel = groups == g
        w[sel] = len(y) / (len(np.unique(groups)) * sel.sum())
    return w


def _fit_raw(X: np.ndarray, y: np.ndarray, groups: np.ndarray, c: float):
    clf = _logistic(c)
    clf.fit(X, y, logisticregression__sample_weight=_balanced_weights(y, groups))
    return clf


def _platt(logits: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1e6, max_iter=1000).fit(logits.reshape(-1, 1), y, sample_weight=weights)
    return float(lr.coef_[0, 0]), float(lr.intercept_[0])


def _grouped_oof(X, y, groups, c, folds=5, seed=0) -> np.ndarray:
    """Out-of-fold logits (stratified folds) for the Platt step."""
    from sklearn.model_selection import StratifiedKFold

    out = np.zeros(len(y))
    strata = np.array([f"{g}|{int(v)}" for g, v in zip(groups, y)])
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, strata):
        clf = _fit_raw(X[train], y[train], groups[train], c)
        out[test] = clf.decision_function(X[test])
    return out


def fit(data: Mapping[str, np.ndarray], c: float = 0.1) -> FailureRisk:
    """The model on all of `data`: weights from a fit on everything, calibration (Platt) on
    out-of-fold logits so it is not fitted to its own training predictions."""
    X, y, groups = data["X"], data["wrong"], data["corpus"]
    clf = _fit_raw(X, y, groups, c)
    a, b = _platt(_grouped_oof(X, y, groups, c), y, _balanced_weights(y, groups))
    scaler, lr = clf.named_steps["standardscaler"], clf.named_steps["logisticregression"]
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    fewest = int(round(math.expm1(X[:, RISK_FEATURES.index("log_units")].min())))  # log_units is log(1 + units)
    return FailureRisk(RISK_FEATURES, scaler.mean_.copy(), scale, lr.coef_[0].copy(), float(lr.intercept_[0]),
                       (a, b), {"C": c}, CLIP, fewest)


def _predict(model: FailureRisk, X: np.ndarray) -> np.ndarray:
    a, c = model.calibration
    return 1.0 / (1.0 + np.exp(-(a * model.logit(X) + c)))


# ----------------------------------------------------------------------------- evaluation


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error: over equal-width probability bins, the trace-weighted mean of
    |mean predicted - observed share wrong|."""
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        sel = idx == b
        if sel.any():
            total += sel.sum() * abs(p[sel].mean() - y[sel].mean())
    return float(total / len(p))


def _scores(p: np.ndarray, y: np.ndarray) -> dict:
    from sklearn.metrics import brier_score_loss, roc_auc_score

    if y.all() or not y.any():
        return {"n": int(len(y)), "wrong": int(y.sum()), "auroc": None, "brier": None, "ece": None}
    return {"n": int(len(y)), "wrong": int(y.sum()), "auroc": float(roc_auc_score(y, p)),
            "brier": float(brier_score_loss(y, p)), "ece": ece(p, y)}


def _baseline(train: dict, test: dict, with_model: bool) -> np.ndarray:
    """Length alone (log reasoning tokens, and its square) or length + model one-hot, a calibrated
    logistic regression fitted on the training traces; an unseen model's one-hot is all zeros."""
    def design(d):
        lt = np.log1p(d["tokens"])
        cols = [lt, lt ** 2]
        if with_model:
            cols += [(d["model"] == m).astype(float) for m in models]
        return np.column_stack(cols)

    models = sorted(set(train["model"]))
    clf = _fit_raw(design(train), train["wrong"], train["corpus"], 1.0)
    return clf.predict_proba(design(test))[:, 1]


def _subset(data: Mapping[str, np.ndarray], sel: np.ndarray) -> dict:
    return {k: v[sel] for k, v in data.items()}


def _held_out(data, test_sel, c) -> dict:
    train, test = _subset(data, ~test_sel), _subset(data, test_sel)
    model = fit(train, c)
    y = test["wrong"]
    return {"failure_risk": _scores(_predict(model, test["X"]), y),
            "length": _scores(_baseline(train, test, False), y),
            "length_model": _scores(_baseline(train, test, True), y)}


def evaluate(data: Mapping[str, np.ndarray], c: float = 0.1) -> dict:
    """Leave-one-corpus-out (each corpus scored by a model fitted on the others), and
    leave-one-model-out on the thinking-model math corpora (each model's math traces scored by a
    model fitted on everything else except that model's traces anywhere), pooled over the
    held-out predictions as well as per fold."""
    out: dict = {"leave_one_corpus_out": {}, "leave_one_model_out_math": {}}
    for corpus in sorted(set(data["corpus"])):
        out["leave_one_corpus_out"][corpus] = _held_out(data, data["corpus"] == corpus, c)
    math_sel = np.isin(data["corpus"], MATH_CORPORA)
    pooled: dict[str, list] = {"failure_risk": [], "length": [], "length_model": [], "y": []}
    for model_name in sorted(set(data["model"][math_sel])):
        test_sel = math_sel & (data["model"] == model_name)
        train = _subset(data, data["model"] != model_name)
        test = _subset(data, test_sel)
        fitted = fit(train, c)
        preds = {"failure_risk": _predict(fitted, test["X"]), "length": _baseline(train, test, False),
                 "length_model": _baseline(train, test, True)}
        out["leave_one_model_out_math"][model_name] = {k: _scores(v, test["wrong"]) for k, v in preds.items()}
        for k, v in preds.items():
            pooled[k].append(v)
        pooled["y"].append(test["wrong"])
    y = np.concatenate(pooled["y"])
    out["leave_one_model_out_math_pooled"] = {k: _scores(np.concatenate(pooled[k]), y)
                                              for k in ("failure_risk", "length", "length_model")}
    return out


def write_training_keys(folder: Path, keys: Sequence[str | None]) -> None:
    """training_traces.json: the `trace_key`s of the training traces (rewritten alone, from the
    profiled traces under --work, when the key changes: scripts/train_failure_risk.py --keys-only)."""
    (folder / TRAINING_KEYS_FILE).write_text(json.dumps({"key": KEY_WHAT, "keys": sorted({k for k in keys if k})},
                                                        indent=0) + "\n", encoding="utf-8")


def write_model(model: FailureRisk, folder: Path, card: Mapping, keys: Sequence[str | None] = ()) -> None:
    """model.json (the weights and calibration with what the card says: data, evaluation), its
    README.md model card and training_traces.json (the training traces' `trace_key`s, so a run can
    tell which of its traces the model has seen)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_training_keys(folder, keys)
    data = dataclasses.replace(model, card={**model.card, **card}).to_json()
    (folder / "model.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (folder / "README.md").write_text(model_card(data), encoding="utf-8")


def _cells(s: Mapping) -> str:
    if s["auroc"] is None:
        return "– | – | –"
    return f"{s['auroc']:.3f} | {s['brier']:.3f} | {s['ece']:.3f}"


def _eval_table(entries: Mapping[str, Mapping]) -> list[str]:
    lines = ["| held out | n | wrong | failure_risk AUROC | Brier | ECE | length alone AUROC | Brier | ECE "
             "| length + model AUROC | Brier | ECE |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, e in entries.items():
        fr = e["failure_risk"]
        lines.append(f"| {name} | {fr['n']} | {fr['wrong']} | {_cells(fr)} | {_cells(e['length'])} | "
                     f"{_cells(e['length_model'])} |")
    return lines


def _counts_line(data: Mapping) -> list[str]:
    if "used" not in data:
        return []
    cells = ", ".join(f"{c} {data['used'][c]}" + (f" of {data['sampled'][c]}" if data['used'][c] != data['sampled'][c]
                                                   else "") for c in data["corpora"])
    short = [c for c in data["corpora"] if data["used"][c] != data["sampled"][c]]
    note = (f" ({', '.join(short)}: only the traces profiled when the model was fitted, `--partial`)"
            if short else "")
    return ["", f"Traces per corpus: {cells}{note}."]


def _target_line(ev: Mapping) -> list[str]:
    s = ev["leave_one_model_out_math_pooled"]["failure_risk"]
    if s["auroc"] is None:
        return []
    verdict = "meets" if s["auroc"] >= 0.80 else "falls short of"
    return [f"On math traces of a model it never saw (leave one model out, pooled), failure_risk has AUROC "
            f"{s['auroc']:.3f}: it {verdict} the target of 0.80 (issue 42).", ""]


def model_card(data: Mapping) -> str:
    """README.md of the model folder, from model.json."""
    ev = data["evaluation"]
    weights = sorted(zip(data["features"], data["coef"]), key=lambda fw: -abs(fw[1]))
    lines = [
        "# failure-risk: P(wrong final answer) from the structure of the reasoning",
        "",
        "A logistic regression (scikit-learn, L2, C = "
        f"{data['C']}) on {len(data['features'])} standardised features of a trace's reasoning (clipped to "
        f"+-{data.get('clip')} sd), followed by "
        "Platt calibration fitted on out-of-fold predictions (`thinkprobe/risk.py`; weights in model.json, "
        "no pickle). The features come from the graph record's reasoning units and the edges between them "
        "only: unit types, cues, token counts, edge types and directions, cycles, chain depth, how the trace "
        "ends (its last fifth) and the candidate answers the reasoning puts forward (how many, how many "
        "distinct, how often they change, where the last one settles), found with no gold answer. The "
        "answer section, the question, the gold answer and any grade are never read (the parser, which "
        "reads the whole trace, types and links the reasoning, so a trace profiled with its answer can score "
        "a little differently). training_traces.json names the training traces by their opening words and signs "
        "(`risk.trace_key`), so a report can say which of its traces the model has seen."
        + (f" A reasoning of fewer than {data['min_units']} units (the fewest of a training trace) gets no "
           "failure_risk: its features lie outside anything the model saw." if data.get("min_units") else ""),
        "",
        "## Data",
        "",
        f"Trained {data['trained']} on {data['traces']} traces ({data['wrong']} with a wrong final answer) from "
        f"../shared/data: {', '.join(data['corpora'])}; at most `per_stratum` traces per (model, domain, "
        f"wrong) cell of each corpus ({json.dumps(data['per_stratum'])}), seed {data['seed']}. Each trace was "
        "profiled with its answer section cut off and without its label; labels come from the records "
        "(thinkprobe/training/risk_data.py says, per corpus, which field and what counts as wrong). Each "
        "corpus weighs the same in the fit.",
        *_counts_line(data),
        "",
        "## Evaluation",
        "",
        *_target_line(ev),
        "Leave one corpus out (each corpus scored by a model fitted on the others); baselines: a calibrated "
        "logistic regression on log reasoning tokens (and its square), alone and with a one-hot of the model "
        "(an unseen model's is all zeros). ECE: 10 equal-width bins.",
        "",
        *_eval_table(ev["leave_one_corpus_out"]),
        "",
        "Leave one model out on the math corpora of thinking models (each model's math traces scored by a "
        "model fitted without any of that model's traces), per model and pooled over the held-out predictions:",
        "",
        *_eval_table({**ev["leave_one_model_out_math"], "pooled": ev["leave_one_model_out_math_pooled"]}),
        "",
        "## Largest weights (per standard deviation of the feature; + raises the risk)",
        "",
        ", ".join(f"{f} {w:+.2f}" for f, w in weights[:12]),
        "",
        *(["## Note", "", data["note"], ""] if data.get("note") else []),
        "## Retrain",
        "",
        "After any change to the graphs (segmenter, linker, decoder), re-profile and refit in one command:",
        "",
        f"    {data['command']}",
        "",
    ]
    return "\n".join(lines)
