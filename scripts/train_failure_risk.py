"""Train the failure-risk model (models/failure-risk/) from the labelled corpora in ../shared/data.

Two steps, one command: (a) a stratified sample of each corpus, answers cut off and labels kept
aside, profiled with the current pipeline into WORK/<corpus>/run; (b) risk features of every graph
record, a calibrated logistic regression fitted on all of them and evaluated leave-one-corpus-out
and leave-one-model-out (math corpora of thinking models) against length alone and length + model.
Rerun it whenever the pipeline's graphs change (linker, decoder, segmenter): it re-profiles.

    python scripts/train_failure_risk.py                      # re-profile everything, refit, write the model
    python scripts/train_failure_risk.py --reuse              # keep finished runs under --work, refit
    python scripts/train_failure_risk.py --no-write           # evaluate only
    python scripts/train_failure_risk.py --reuse --partial    # refit now on what is profiled so far
    python scripts/train_failure_risk.py --reuse --keys-only  # rewrite training_traces.json alone (risk.trace_key changed)

Writes models/failure-risk/model.json (weights, calibration, evaluation) and prints the evaluation;
WORK/evaluation.json keeps it too. About an hour on 2 CPU cores (profiling; the fit takes a minute).
"""
import argparse
import json
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from thinkprobe.training.risk_data import CORPORA  # noqa: E402
from thinkprobe.training.risk_fit import (PER_STRATUM, evaluate, fit, load_dataset, prepare, profile_corpora,  # noqa: E402
                                          write_model, write_training_keys)


def _line(name: str, scores: dict) -> str:
    def cell(s):
        if s["auroc"] is None:
            return f"{'–':>6} {'–':>6} {'–':>6}"
        return f"{s['auroc']:6.3f} {s['brier']:6.3f} {s['ece']:6.3f}"
    s = scores["failure_risk"]
    return (f"{name:<30} {s['n']:>5} {s['wrong']:>5}  {cell(s)} | {cell(scores['length'])} | "
            f"{cell(scores['length_model'])}")


def print_evaluation(ev: dict) -> None:
    head = (f"{'held out':<30} {'n':>5} {'wrong':>5}  {'AUROC':>6} {'Brier':>6} {'ECE':>6} | length alone"
            f"          | length + model")
    for title, key in (("leave one corpus out", "leave_one_corpus_out"),
                       ("leave one model out (math corpora of thinking models)", "leave_one_model_out_math")):
        print(f"\n{title}\n{head}")
        for name, scores in ev[key].items():
            print(_line(name, scores))
    print(_line("pooled over held-out models", ev["leave_one_model_out_math_pooled"]))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data", help="the shared data folder")
    ap.add_argument("--work", default="runs/failure-risk", help="prepared records, labels and run folders")
    ap.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated corpora to use")
    ap.add_argument("--reuse", action="store_true", help="keep finished runs under --work (no re-profiling)")
    ap.add_argument("--out", default="models/failure-risk", help="model folder to write")
    ap.add_argument("--no-write", action="store_true", help="evaluate only; leave the model folder alone")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed")
    ap.add_argument("--C", type=float, default=0.1, help="inverse L2 strength of the logistic regression")
    ap.add_argument("--workers", type=int, default=1, help="profiling worker processes")
    ap.add_argument("--partial", action="store_true",
                    help="with --reuse: a corpus whose run has not finished contributes its committed chunks")
    ap.add_argument("--keys-only", action="store_true",
                    help="with --reuse: rewrite the model folder's training_traces.json from the profiled traces "
                         "(after a change of risk.trace_key), nothing else")
    ap.add_argument("--per-stratum", default="", metavar="CORPUS=N,...",
                    help="traces per (model, domain, wrong) cell for the corpora named (default: "
                         + ", ".join(f"{c}={n}" for c, n in PER_STRATUM.items()) + ")")
    args = ap.parse_args(argv)
    work, corpora = Path(args.work), [c for c in args.corpora.split(",") if c]
    try:
        caps = {c: int(n) for c, n in (kv.split("=") for kv in args.per_stratum.split(",") if kv)}
    except ValueError:
        ap.error(f"--per-stratum: expected CORPUS=N,... and got {args.per_stratum!r}")
    if set(caps) - set(CORPORA):
        ap.error(f"--per-stratum: unknown corpora {sorted(set(caps) - set(CORPORA))}")
    if not (args.reuse and all((work / c / "labels.csv").exists() for c in corpora)):
        print("sampled traces:", prepare(work, Path(args.data), corpora, args.seed, caps), flush=True)
    if not args.partial:
        profile_corpora(work, corpora, reuse=args.reuse, workers=args.workers, progress=False)
    data = load_dataset(work, corpora, partial=args.partial)
    if args.keys_only:
        write_training_keys(Path(args.out), list(data["key"]))
        print(f"wrote {Path(args.out) / 'training_traces.json'}: {len(set(data['key']))} keys of {len(data['key'])} traces")
        return
    ev = evaluate(data, args.C)
    print_evaluation(ev)
    (work / "evaluation.json").write_text(json.dumps(ev, indent=1) + "\n", encoding="utf-8")
    if not args.no_write:
        card = {"trained": date.today().isoformat(), "corpora": corpora, "traces": int(len(data["wrong"])),
                "wrong": int(data["wrong"].sum()), "per_stratum": {c: caps.get(c, PER_STRATUM[c]) for c in corpora},
                "seed": args.seed, "evaluation": ev,
                "sampled": {c: sum(1 for _ in open(work / c / "labels.csv", encoding="utf-8")) - 1 for c in corpora},
                "used": {c: int((data["corpus"] == c).sum()) for c in corpora},
                "command": "python scripts/train_failure_risk.py" + ("" if set(corpora) == set(CORPORA) else
                                                                     f" --corpora {','.join(corpora)}")
                           + (f" --per-stratum {args.per_stratum}" if caps else "")}
        model = fit(data, args.C)
        if model.calibration[0] <= 0:
            raise SystemExit(f"the calibration slope is {model.calibration[0]:.3f}: the out-of-fold scores do not "
                             "rank wrong answers above right ones, so no model was written")
        write_model(model, Path(args.out), card, list(data["key"]))
        print(f"wrote {Path(args.out) / 'model.json'}")


if __name__ == "__main__":
    main()
