"""The restatement gate scored on held-out silver without scoring it on what it was fitted on: the
gate is fitted on the shipped parser's held-out silver traces, so eval-gold on those traces would be
in-sample. Here each of the five folds of `rpt_gate.cross_fitted_gates` (trace k in fold k % 5) is
profiled by a copy of the model folder whose gate was fitted on the other four (its traces.txt marks
only the fold held out), and the five folds' predicted graphs are scored together by eval-gold as the
shipped folder's held-out traces. Prints eval-gold's table (edge, type and indicator agreement).

    python experiments/rpt_gate_cv.py [--work runs/rpt-gate-cv]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
MODEL = REPO / "models" / "parser-minilm-reader"
THINKPROBE = [sys.executable, "-c", "from thinkprobe.cli import main; main()"]


def main() -> None:
    from thinkprobe.training.parser_data import SILVER
    from thinkprobe.training.rpt_gate import FOLDS, cross_fitted_gates, held_out_outputs, write_rpt_gate

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "runs" / "rpt-gate-cv")
    ap.add_argument("--cache", type=Path, default=REPO.parent / "cache")
    args = ap.parse_args()
    outs = held_out_outputs(MODEL, Path(SILVER), args.cache / "silver", args.cache / "lower", args.cache)
    gates = cross_fitted_gates(outs)
    args.work.mkdir(parents=True, exist_ok=True)
    docs = [line.partition("\t")[0] for line in (MODEL / "traces.txt").read_text(encoding="utf-8").splitlines()]
    preds = []
    for f, gate in enumerate(gates):
        folder = args.work / f"fold{f}"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(MODEL, folder)
        write_rpt_gate(folder, gate)
        ids = {o["doc_id"] for k, o in enumerate(outs) if k % FOLDS == f}
        (folder / "traces.txt").write_text("".join(f"{d}\t{'heldout' if d in ids else 'train'}\n" for d in docs), encoding="utf-8")
        pred = args.work / f"pred{f}.jsonl"
        subprocess.run(THINKPROBE + ["eval-gold", str(SILVER), "--linker", str(folder), "--heldout-of",
                        str(folder), "--device", "cpu", "--no-indicators", "--json", str(args.work / f"fold{f}.json"),
                        "--pred-out", str(pred)], check=True, stdout=subprocess.DEVNULL)
        preds.append(pred.read_text(encoding="utf-8"))
    (args.work / "pred.jsonl").write_text("".join(preds), encoding="utf-8")
    subprocess.run(THINKPROBE + ["eval-gold", str(SILVER), "--pred", str(args.work / "pred.jsonl"),
                    "--heldout-of", str(MODEL), "--device", "cpu", "--json", str(args.work / "silver_cv.json")], check=True)


if __name__ == "__main__":
    main()
