"""How close the redundancy suite's SEP is on our graphs to the same computed on people's graphs of the
same traces: R and L_eff (docs/redundancy.md) from both, with Spearman's rho and the mean difference
in gold standard deviations, and how many traces have L_eff 1 (a path that starts at its target).

    thinkprobe eval-gold GOLD [--heldout-of MODEL] --no-indicators --pred-out pred.jsonl
    python scripts/sep_agreement.py GOLD pred.jsonl

GOLD: ReasoningFlow documents (a folder of .json or a .jsonl[.gz]); both sides are profiled as
`thinkprobe profile --graph-source input` profiles them, so only the graphs differ.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def read_docs(path: Path) -> list[dict]:
    if path.is_dir():
        return [json.loads(f.read_text(encoding="utf-8")) for f in sorted(path.glob("*.json"))]
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def redundancy(docs: list[dict]) -> dict[str, dict]:
    """redundancy.csv's R and L_eff of each document, profiled from its own units and edges."""
    from thinkprobe.engine import RunOptions, run_profile

    with tempfile.TemporaryDirectory(prefix="sep-agreement-") as out:
        run_profile(RunOptions(records=docs, out_dir=out, graph_source="input", device="cpu", progress=False,
                               cache=False))
        with open(Path(out) / "graphs.jsonl", encoding="utf-8") as f:
            return {g["trace_id"]: g["redundancy"]["metrics"] for g in map(json.loads, f)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gold", type=Path)
    ap.add_argument("pred", type=Path, help="eval-gold --pred-out of the same documents")
    args = ap.parse_args()
    pred = {d["doc_id"]: d for d in read_docs(args.pred)}
    gold = [d for d in read_docs(args.gold) if d["doc_id"] in pred]
    ours, theirs = redundancy([pred[d["doc_id"]] for d in gold]), redundancy(gold)
    common = sorted(set(ours) & set(theirs))
    print(f"{len(common)} traces")
    for key in ("R", "L_eff"):
        a = np.array([theirs[t][key] for t in common], float)
        b = np.array([ours[t][key] for t in common], float)
        print(f"{key}: rho {spearmanr(a, b)[0]:.3f}; gold mean {a.mean():.3f}, ours {b.mean():.3f}, "
              f"|d|/sd {abs(a.mean() - b.mean()) / a.std():.2f}")
    print(f"L_eff 1: gold {sum(theirs[t]['L_eff'] == 1 for t in common)}, ours {sum(ours[t]['L_eff'] == 1 for t in common)}")


if __name__ == "__main__":
    main()
