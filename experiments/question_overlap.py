"""Does a unit's overlap with the question type it better (issue 40, item 2)? Three quarters of the
restatement units people mark restate the question (an edge from a question node), yet the parser
never sees the question. Not a training run: over decode_variants.py's cache of the shipped parser's
outputs (held-out silver and dev), a multinomial logistic regression per unit on the type head's
log-probabilities, with or without question features (the parser's `question_overlap`: the share of
the unit's words that the question holds, the same weighted by inverse unit frequency within the
trace, the share of its numbers, a flag; and the largest cosine of its embedding with one of the
question's sentences), cross-fitted over the held-out silver traces (five folds by trace), then
fitted on all of them and scored on dev. Offsets for macro-F1 fitted as `type_stack.py` fits them.
Prints unit macro-F1 and per-type F1.

    python experiments/decode_variants.py --variant '{}'    # once: the cache (runs/decode-variants)
    python experiments/question_overlap.py [--no-embedding]
"""
from __future__ import annotations

import argparse
import pickle
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def question_features(units, emb, question: str, q_emb: np.ndarray | None) -> np.ndarray:
    """The parser's `question_overlap` columns, then the largest cosine of the unit's embedding with
    one of the question's sentences (0 without `q_emb`)."""
    from thinkprobe.link.parser import question_overlap

    best = (emb @ q_emb.T).max(axis=1) if q_emb is not None and len(q_emb) else np.zeros(len(units))
    return np.hstack([question_overlap(units, question), best[:, None]])


def main() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score

    from thinkprobe.config import Config
    from thinkprobe.encoder import make_encoder
    from thinkprobe.evalgold import silver_labels
    from thinkprobe.link.protocol import TYPE_CLASSES
    from thinkprobe.training.dev_cv import fit_offsets

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="runs/decode-variants")
    ap.add_argument("--no-embedding", action="store_true", help="the lexical question features only")
    ap.add_argument("--profile", action="store_true",
                    help="also decode each typer's types with the shipped decoding and print the profile agreement")
    ap.add_argument("--rpt-only", action="store_true",
                    help="for --profile: the type head's types (the shipped offsets) but for RPT, which the stacked typer decides")
    ap.add_argument("--exp-offset", type=float, default=0.0,
                    help="added to EXP's fitted offset for --profile (the shipped head's: 0.5, chosen by the profile)")
    args = ap.parse_args()
    with open(Path(args.work) / "scored.pkl", "rb") as f:
        sets = pickle.load(f)
    encoder = make_encoder(Config.load(), {"device": "cpu", "precision": "fp32"})
    data = {}
    for name, d in sets.items():
        X, Q, Y, G = [], [], [], []
        for k, (r, o) in enumerate(zip(d["rows"], d["outs"])):
            doc = d["docs"][r["doc_index"]]
            question = (doc.get("raw_text") or {}).get("question") or ""
            types, _ = silver_labels(doc, r["units"])
            sents = [s for s in re.split(r"(?<=[.?!])\s+|\n+", question) if s.strip()]
            q_emb = None if args.no_embedding or not sents else np.asarray(encoder.encode_and_count(sents)[0], dtype=np.float32)
            X.append(np.log(np.maximum(o["types"], 1e-6)))
            Q.append(question_features(r["units"], np.asarray(r["emb"], np.float32), question, q_emb))
            Y.append(np.array([TYPE_CLASSES.index(t) if t else -1 for t in types]))
            G.append(np.full(len(types), k))
        data[name] = tuple(np.concatenate(a) for a in (X, Q, Y, G))

    def fit_predict(Xtr, ytr, Xte):
        m = LogisticRegression(max_iter=2000, C=1.0)
        m.fit(Xtr, ytr)
        proba = np.zeros((len(Xte), len(TYPE_CLASSES)))
        proba[:, m.classes_] = m.predict_proba(Xte)
        return proba

    def scores(y, proba, offsets):
        pred = (np.log(np.maximum(proba, 1e-9)) + np.asarray(offsets)).argmax(axis=1)
        ok = y >= 0
        per = f1_score(y[ok], pred[ok], labels=range(len(TYPE_CLASSES)), average=None, zero_division=0)
        return per.mean(), dict(zip(TYPE_CLASSES, np.round(per, 2)))

    X, Q, y, g = data["silver_held"]
    Xd, Qd, yd, _ = data["dev"]
    print("RPT mean question features silver (RPT / other):", Q[y == TYPE_CLASSES.index("RPT")].mean(0).round(3),
          Q[(y >= 0) & (y != TYPE_CLASSES.index("RPT"))].mean(0).round(3))
    for label, use_q in (("own probabilities", False), ("+ question features", True)):
        F, Fd = (np.hstack([X, Q]), np.hstack([Xd, Qd])) if use_q else (X, Xd)
        ok = y >= 0
        cross = np.zeros((len(F), len(TYPE_CLASSES)))
        fold = g % 5
        for f in range(5):
            tr, te = ok & (fold != f), fold == f
            cross[te] = fit_predict(F[tr], y[tr], F[te])
        offsets = fit_offsets([{"types": y}], [cross], np.zeros(len(TYPE_CLASSES)))
        print(f"{label}: offsets {offsets}")
        dev = fit_predict(F[ok], y[ok], Fd)
        s, per = scores(y, cross, offsets)
        sd, perd = scores(yd, dev, offsets)
        print(f"{label}: silver {s:.3f} {per}\n    dev {sd:.3f} {perd}", flush=True)
        if args.profile:
            bumped = np.array(offsets, dtype=float) + args.exp_offset * (np.arange(len(TYPE_CLASSES)) == TYPE_CLASSES.index("EXP"))
            profile_with({"silver_held": cross, "dev": dev}, bumped, sets, Path(args.work), args.rpt_only)


def profile_with(probs: dict[str, np.ndarray], offsets, sets: dict, work: Path, rpt_only: bool = False) -> None:
    """decode_variants.py's profile agreement with these unit type probabilities in place of the
    type head's (the offsets folded in, the shipped decoding otherwise); `rpt_only`: the head's
    types with the shipped offsets, but a unit is RPT exactly where these probabilities say so."""
    import json

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from decode_variants import MODEL, graphs, summary

    from thinkprobe.agreement import profile_graphs
    from thinkprobe.evalgold import score
    from thinkprobe.link.protocol import TYPE_CLASSES

    shipped = json.loads((MODEL / "config.json").read_text(encoding="utf-8"))["decode"]
    decode = {**shipped, "type_offsets": None}
    cache = str(work / "embeddings")
    rpt = TYPE_CLASSES.index("RPT")
    for name, d in sets.items():
        p = np.exp(np.log(np.maximum(probs[name], 1e-9)) + np.asarray(offsets))
        p /= p.sum(axis=1, keepdims=True)
        if rpt_only:
            stacked = p.argmax(axis=1) == rpt
            head = np.exp(np.log(np.maximum(np.concatenate([o["types"] for o in d["outs"]]), 1e-9)) + np.asarray(shipped["type_offsets"]))
            head /= head.sum(axis=1, keepdims=True)
            head[:, rpt] = np.where(stacked, 2.0, 0.0)
            p = head
        bounds = np.cumsum([0] + [len(r["units"]) for r in d["rows"]])
        outs = [{**o, "types": p[a:b]} for o, a, b in zip(d["outs"], bounds, bounds[1:])]
        pred = graphs(d, decode, outs)
        f1 = score([d["docs"][r["doc_index"]] for r in d["rows"]], pred)
        gold = profile_graphs(d["docs"], device="cpu", cache_dir=cache)[0]
        rows = profile_graphs(pred, device="cpu", cache_dir=cache)[0]
        print(f"    profile {name}: edge / far / type F1 {f1['edges']['f1']:.3f} / {f1['far_edges']['f1']:.3f} / "
              f"{f1['types']['macro_f1']:.3f}; {summary(gold, rows, name == 'silver_held')}", flush=True)


if __name__ == "__main__":
    main()
