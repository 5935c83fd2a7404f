"""A second-stage node typer over the parser's outputs (issue 40, item 2): does the unit's graph
context add to the type head? Not a training run of the parser: it scores the held-out silver traces
and the dev traces with a trained parser folder, then fits a multinomial logistic regression per unit
on the type head's log-probabilities, optionally those of its neighbours (two each side) and its pair
probabilities (the most probable of each class as the later and as the earlier unit of a candidate
pair, their sum, the most probable beyond the adjacent pair), plus position and length. It is
cross-fitted over the held-out silver traces (five folds by trace; the parser never trained on them)
and then fitted on all of them and scored on the dev traces (human D, never seen). Per-type offsets
for macro-F1 are fitted on the cross-fitted predictions (each type's count within a factor 1.5 of
silver, as the shipped offsets). Prints unit-level macro-F1 and per-type F1 beside the shipped type
head with its offsets.

    python experiments/type_stack.py                 # the shipped parser-reader
    python experiments/type_stack.py --boosting      # a gradient-boosted model in place of the regression
    python experiments/type_stack.py --first-words 3 # also the unit's first three words (one-hot, by position and as a bag)
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def outputs(model_dir: Path, cache: Path, lower: Path, silver: Path, dev: Path) -> tuple[list[dict], list[dict]]:
    """The parser's type and pair probabilities of the held-out silver traces and of the dev traces."""
    from thinkprobe.evalgold import marked_docs
    from thinkprobe.link.candidates import CandidateParams
    from thinkprobe.link.parser import load_parser_model, run_parser
    from thinkprobe.link.rerank import RERANK_FILE, Reranker
    from thinkprobe.training.dev_cv import dev_examples, dev_rows
    from thinkprobe.training.parser_data import examples, load_prepared, load_silver
    from thinkprobe.training.reader_data import LowerStates
    from thinkprobe.training.reader_fit import attach_reader, vectors_of_folder

    model, featurizer, meta = load_parser_model(model_dir)
    held = marked_docs(str(model_dir), "heldout")
    docs = load_silver(silver)
    rows = [r for r in load_prepared(cache / "silver") if r["doc_id"] in held]
    reranker = Reranker.load(model_dir / RERANK_FILE) if "rerank" in meta else None
    val = examples(rows, docs, CandidateParams.from_dict(meta["candidates"]), featurizer, reranker=reranker)
    if "reader" in meta:
        vectors_of_folder(model_dir, LowerStates(lower), val, cache)
        attach_reader(val)
    ddocs, drows = dev_rows(dev, cache / "dev_D.pkl")
    dex = dev_examples(model_dir, ddocs, drows)
    got = []
    for exs in (val, dex):
        res = run_parser(model, exs, [x["emb"] for x in exs])
        got.append([{"units": x["units"], "i": x["i"], "j": x["j"], "types": x["types"], "p_types": r["types"],
                     "probs": r["probs"]} for x, r in zip(exs, res)])
    return got[0], got[1]


def unit_features(x: dict, context: bool, pairs: bool) -> np.ndarray:
    lp = np.log(np.maximum(x["p_types"], 1e-6))
    n = len(lp)
    cols = [lp]
    if context:
        for shift in (-2, -1, 1, 2):
            idx = np.arange(n) + shift
            ok = (idx >= 0) & (idx < n)
            moved = np.zeros_like(lp)
            moved[ok] = lp[idx[ok]]
            cols += [moved, ok[:, None].astype(float)]
    if pairs:
        p, i, j = x["probs"], x["i"], x["j"]
        as_later, as_earlier, total, beyond = (np.zeros((n, p.shape[1])) for _ in range(4))
        np.maximum.at(as_later, j, p)
        np.maximum.at(as_earlier, i, p)
        np.add.at(total, j, p)
        far = j - i > 1
        np.maximum.at(beyond, j[far], p[far])
        cols += [as_later[:, 1:], as_earlier[:, 1:], np.log1p(total[:, 1:]), beyond[:, 1:]]
    length = np.array([len(u.text) for u in x["units"]], float)
    cols += [(np.arange(n) / max(n - 1, 1))[:, None], (np.arange(n) == 0)[:, None], (np.arange(n) == n - 1)[:, None],
             np.log1p(length)[:, None], np.full((n, 1), np.log(n))]
    return np.concatenate(cols, axis=1)


def first_words(x: dict, m: int) -> list[str]:
    """The first `m` words and punctuation marks of each unit, lower-cased, as tokens tagged by their
    position and untagged (a bag): "p0_wait b_wait p1_, b_, ..."."""
    out = []
    for u in x["units"]:
        words = re.findall(r"[a-z]+|[^\sa-z0-9]", u.text.lower())[:m]
        out.append(" ".join([f"p{k}_{w}" for k, w in enumerate(words)] + [f"b_{w}" for w in words]))
    return out


def macro_f1(gold: np.ndarray, pred: np.ndarray, k: int) -> tuple[float, list[float]]:
    keep = gold >= 0
    gold, pred = gold[keep], pred[keep]
    f1 = [2 * np.sum((gold == c) & (pred == c)) / max(1, np.sum(gold == c) + np.sum(pred == c)) for c in range(k)]
    return float(np.mean(f1)), [round(float(f), 2) for f in f1]


def types_of(logp: np.ndarray, sizes: list[int], offsets) -> np.ndarray:
    """The provisional types (TYPE_CLASSES indices) the pipeline's `predict_types` gives per trace."""
    from thinkprobe.link.parser import predict_types
    from thinkprobe.link.protocol import TYPE_CLASSES

    bounds = np.cumsum([0] + sizes)
    return np.array([TYPE_CLASSES.index(t) for a, b in zip(bounds, bounds[1:])
                     for t in predict_types(np.exp(logp[a:b]), offsets)], dtype=np.int64)


def fit_offsets(logp: np.ndarray, traces: list[dict]) -> list[float]:
    """The shipped offsets' fit (`dev_cv.fit_offsets`: coordinate ascent from 0, each type's count
    within a factor 1.5 of gold) on these log-probabilities."""
    from thinkprobe.training.dev_cv import fit_offsets as fit

    bounds = np.cumsum([0] + [len(x["types"]) for x in traces])
    return fit(traces, [np.exp(logp[a:b]) for a, b in zip(bounds, bounds[1:])], None)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=str(REPO / "models" / "parser-minilm-reader"))
    p.add_argument("--cache", default=str(REPO.parent / "cache"), help="the prepared silver traces, reader vectors, dev_D.pkl")
    p.add_argument("--lower", default=None, help="the `lower` cache (default: CACHE/lower)")
    p.add_argument("--silver", default=str(REPO.parent / "shared" / "data" / "reasoningflow" / "v1" / "v1_llm_gemini-3.1-pro-preview.jsonl.gz"))
    p.add_argument("--dev", default=str(REPO.parent / "shared" / "data" / "reasoningflow" / "v0" / "v0_human_D"))
    p.add_argument("--boosting", action="store_true", help="HistGradientBoostingClassifier in place of the regression")
    p.add_argument("--first-words", type=int, default=0, metavar="M",
                   help="also the unit's first M words (binary, seen in 5 or more training units; with the neighbours)")
    args = p.parse_args(argv)
    if args.boosting and args.first_words:
        p.error("--first-words reads sparse word columns: use it with the regression, not --boosting")

    from scipy import sparse
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    from thinkprobe.link.protocol import TYPE_CLASSES

    k = len(TYPE_CLASSES)
    cache = Path(args.cache)
    silver, dev = outputs(Path(args.model), cache, Path(args.lower) if args.lower else cache / "lower", Path(args.silver), Path(args.dev))
    shipped = json.loads((Path(args.model) / "config.json").read_text(encoding="utf-8"))["decode"].get("type_offsets") or [0.0] * k
    sizes = {name: [len(x["types"]) for x in xs] for name, xs in (("silver", silver), ("dev", dev))}
    gold = {name: np.concatenate([x["types"] for x in xs]) for name, xs in (("silver", silver), ("dev", dev))}
    for name, xs in (("silver", silver), ("dev", dev)):
        head = np.log(np.maximum(np.concatenate([x["p_types"] for x in xs]), 1e-12))
        f1, per = macro_f1(gold[name], types_of(head, sizes[name], shipped), k)
        print(f"type head, shipped offsets, {name}: macro-F1 {f1:.3f} {dict(zip(TYPE_CLASSES, per))}")

    def make():
        if args.boosting:
            return HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, random_state=0)
        return LogisticRegression(C=1.0, max_iter=3000)

    variants = [("own probabilities", False, False), ("+ neighbours", True, False), ("+ neighbours + pairs", True, True)]
    if args.first_words:
        variants = [(f"+ neighbours + first {args.first_words} words", True, False)]
    words_s = [w for x in silver for w in first_words(x, args.first_words)]
    words_d = [w for x in dev for w in first_words(x, args.first_words)]

    def design(dense: np.ndarray, rows: np.ndarray, words: list[str], vocabulary):
        if vocabulary is None:
            return dense[rows]
        return sparse.hstack([sparse.csr_matrix(dense[rows]), vocabulary.transform([words[r] for r in rows])]).tocsr()

    def vocabulary(rows: np.ndarray):
        if not args.first_words:
            return None
        return CountVectorizer(binary=True, min_df=5, token_pattern=r"\S+").fit([words_s[r] for r in rows])

    for label, context, pairs in variants:
        x_s = np.concatenate([unit_features(x, context, pairs) for x in silver])
        x_d = np.concatenate([unit_features(x, context, pairs) for x in dev])
        groups = np.concatenate([np.full(len(x["types"]), n) for n, x in enumerate(silver)])
        y, known = gold["silver"], gold["silver"] >= 0
        crossed = np.zeros((len(y), k))
        for train, test in GroupKFold(5).split(x_s, y, groups):
            train = train[known[train]]
            v = vocabulary(train)
            fitted = make().fit(design(x_s, train, words_s, v), y[train])
            crossed[test] = np.log(np.maximum(fitted.predict_proba(design(x_s, test, words_s, v)), 1e-9))
        rows = np.flatnonzero(known)
        v = vocabulary(rows)
        fitted = make().fit(design(x_s, rows, words_s, v), y[rows])
        on_dev = np.log(np.maximum(fitted.predict_proba(design(x_d, np.arange(len(x_d)), words_d, v)), 1e-9))
        off = fit_offsets(crossed, silver)
        s, s_per = macro_f1(y, types_of(crossed, sizes["silver"], off), k)
        d, d_per = macro_f1(gold["dev"], types_of(on_dev, sizes["dev"], off), k)
        print(f"stacked ({label}): held-out silver, cross-fitted {s:.3f} {dict(zip(TYPE_CLASSES, s_per))}; "
              f"dev {d:.3f} {dict(zip(TYPE_CLASSES, d_per))}; offsets {off}", flush=True)


if __name__ == "__main__":
    main()
