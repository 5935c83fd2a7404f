#!/usr/bin/env python3
"""Profile a multi-model sample of real traces: N ReasoningFlow v1 traces drawn with a fixed seed
over its five generators (DeepSeek-R1, QwQ-32B, gpt-oss-120b and the non-reasoning DeepSeek-V3 and
Qwen2.5-32B-Instruct) and its three task families (AIME 2024, GPQA-diamond, ArgKP). The sample is
the one `thinkprobe bench -n N` uses. Writes the sample and the whole run (graphs, indicators,
profile, stats, redundancy, report) under OUT; extra arguments go to `thinkprobe profile`.

    .venv/bin/python scripts/real_multimodel.py -n 100 -o runs/v1_100
"""
import argparse
import subprocess
import sys
from pathlib import Path

from thinkprobe.bench import real_corpus

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=100, help="traces in the sample")
    ap.add_argument("-o", "--out", default="runs/v1_100")
    args, extra = ap.parse_known_args()
    lines, corpus = real_corpus(args.n)
    if "bundled samples" in corpus:
        sys.exit("../shared/data not found: set THINKPROBE_DATA to the folder holding reasoningflow/")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sample = out / "sample.jsonl"
    sample.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cmd = [str(REPO / ".venv" / "bin" / "thinkprobe"), "profile", str(sample), "-o", str(out / "run"), *extra]
    print(corpus, "\n" + " ".join(cmd), flush=True)
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
