"""Every row of docs/accuracy.md in one run: the trivial baseline, the rule-based CueLinker, the
trained linker with cue types and with the type head, the Gemini annotations and the second human
annotator, all scored against the human gold (v0_human_D) by `thinkprobe.evalgold.score`.
The same numbers come, row by row, from the `thinkprobe eval-gold` commands in docs/accuracy.md;
this script only shares one encoding of the gold texts between the pipeline rows.

    python scripts/eval_baselines.py                      # prints the markdown table
    python scripts/eval_baselines.py --json scores.json --cache /tmp/dev-emb.pkl
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from thinkprobe.bench import data_dir  # noqa: E402
from thinkprobe.config import Config  # noqa: E402
from thinkprobe.evalgold import COLUMNS, baseline_docs, load_docs, profile_docs, score, table_row  # noqa: E402

V0 = (data_dir() or REPO.parent / "shared" / "data") / "reasoningflow" / "v0"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gold", default=str(V0 / "v0_human_D"))
    ap.add_argument("--cache", default=None, help="embedding cache folder (thinkprobe's, as --cache-dir of profile)")
    ap.add_argument("--linker", default=None, help="trained linker folder or name (default: the shipped one)")
    ap.add_argument("--json", default=None, help="write every score here")
    ap.add_argument("--only", default=None, help="comma-separated row keys to compute")
    args = ap.parse_args(argv)

    from thinkprobe.encoder import make_encoder
    from thinkprobe.trained_linker import load_linker, load_type_head, unit_typer

    cfg = Config.load()
    gold = load_docs(args.gold)
    encoder = make_encoder(cfg, {"device": "cpu", "cache_dir": args.cache})
    trained = load_linker(args.linker, cfg)
    head = load_type_head(args.linker)
    rows = {
        "baseline": ("trivial baseline (sentences, chained)", lambda: baseline_docs(gold)),
        "cue": ("rule-based CueLinker, cue types", lambda: profile_docs(args.gold, cfg, encoder, load_linker("cue", cfg))),
        "trained-cue": ("trained linker, cue types", lambda: profile_docs(args.gold, cfg, encoder, trained)),
        "trained": ("trained linker + type head (default)",
                    lambda: profile_docs(args.gold, cfg, encoder, trained, typer=unit_typer(trained, "head", head))),
        "gemini-3": ("Gemini-3-pro annotations", lambda: load_docs(V0 / "v0_llm_gemini-3-pro-preview")),
        "gemini-3.1": ("Gemini-3.1-pro annotations (15 docs)", lambda: load_docs(V0 / "v0_llm_gemini-3.1-pro-preview")),
        "human-A": ("second human annotator A (10 docs)", lambda: load_docs(V0 / "v0_human_A")),
    }
    only = set(args.only.split(",")) if args.only else set(rows)
    results = {}
    print("| system | docs | " + " | ".join(name for name, _ in COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for key, (title, make) in rows.items():
        if key not in only:
            continue
        s = score(gold, make())
        results[key] = s
        print(f"| {title} | {s['docs']} | " + " | ".join(table_row(s)) + " |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
