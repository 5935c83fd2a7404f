"""Every row of docs/accuracy.md in one run: the trivial baseline, the rule-based CueLinker, the
old default (pair MLP + type head, models/linker-minilm-mlp), the trace-level parser
(models/parser-minilm-bilstm), the Gemini annotations and the second human annotator, all scored
against the human gold (v0_human_D) by `thinkprobe.evalgold.score`; then, for the parser against
the old default and against the trivial chain, paired bootstrap intervals over documents, recall
and precision by gold distance, per-type F1 and confusion, and a check that exported edge labels
map back to the edge types they came from.

    python scripts/eval_baselines.py                      # prints the markdown tables
    python scripts/eval_baselines.py --json scores.json --cache-dir /tmp/dev-cache
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from thinkprobe.shared_data import data_dir  # noqa: E402
from thinkprobe.config import Config  # noqa: E402
from thinkprobe.evalgold import (  # noqa: E402
    BOOTSTRAP_METRICS, COLUMNS, baseline_docs, paired_bootstrap, profile_docs, score, table_row,
)
from thinkprobe.reasoningflow import (  # noqa: E402
    DISTANCE_BINS, GOLD_TYPES, load_docs, map_edge_label, written_by_thinkprobe,
)

V0 = (data_dir() or REPO.parent / "shared" / "data") / "reasoningflow" / "v0"
OLD_MODEL = REPO / "models" / "linker-minilm-mlp"
PARSER_MODEL = REPO / "models" / "parser-minilm-bilstm"


def label_round_trip(docs: list[dict]) -> Counter:
    """(our edge type, the type its exported ReasoningFlow label maps back to) over the edges of
    `docs` as written by thinkprobe.export (label + thinkprobe_type), read as evalgold reads a
    document without our fields; critique as critique:<polarity>."""
    def name(kind, polarity):
        return f"{kind}:{polarity or 'uncertain'}" if kind == "critique" else kind

    out: Counter = Counter()
    for d in docs:
        labels = {n["id"]: n.get("label") for n in d["nodes"]}
        for e in d["edges"]:
            back = map_edge_label(e["label"], labels.get(e["dest_node_id"]), written_by_thinkprobe(d))
            out[(name(e.get("thinkprobe_type"), e.get("polarity")), name(*back) if back else None)] += 1
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gold", default=str(V0 / "v0_human_D"))
    ap.add_argument("--cache-dir", default=None, help="embedding cache folder for the gold texts")
    ap.add_argument("--old", default=str(OLD_MODEL), help="the old default (pair MLP + type head) folder")
    ap.add_argument("--parser", default=str(PARSER_MODEL), help="the parser model folder")
    ap.add_argument("--json", default=None, help="write every score here")
    ap.add_argument("--only", default=None, help="comma-separated row keys to compute")
    ap.add_argument("--samples", type=int, default=2000, help="bootstrap resamples")
    args = ap.parse_args(argv)

    from thinkprobe.encoder import make_encoder
    from thinkprobe.link import unit_typer
    from thinkprobe.link.cue import CueLinker
    from thinkprobe.link.pairmlp import TrainedLinker, TypeHead
    from thinkprobe.link.parser import ParserLinker

    cfg = Config.load()
    gold = load_docs(args.gold)
    encoder = make_encoder(cfg, {"device": "cpu", "cache_dir": args.cache_dir})
    old = TrainedLinker(args.old, cfg)
    def parser_docs():
        p = ParserLinker(args.parser, cfg)
        return profile_docs(args.gold, cfg, encoder, p, typer=p.typer)
    rows = {
        "baseline": ("trivial baseline (sentences, chained)", lambda: baseline_docs(gold)),
        "cue": ("rule-based CueLinker, cue types", lambda: profile_docs(args.gold, cfg, encoder, CueLinker(cfg))),
        "pairmlp": ("old default: pair MLP + type head",
                    lambda: profile_docs(args.gold, cfg, encoder, old, typer=unit_typer(old, "head", TypeHead(args.old)))),
        "parser": ("trace-level parser (new default)", parser_docs),
        "gemini-3": ("Gemini-3-pro annotations", lambda: load_docs(V0 / "v0_llm_gemini-3-pro-preview")),
        "gemini-3.1": ("Gemini-3.1-pro annotations (15 docs)", lambda: load_docs(V0 / "v0_llm_gemini-3.1-pro-preview")),
        "human-A": ("second human annotator A (10 docs)", lambda: load_docs(V0 / "v0_human_A")),
    }
    only = set(args.only.split(",")) if args.only else set(rows)
    results, preds = {}, {}
    print("| system | docs | " + " | ".join(name for name, _ in COLUMNS) + " | recall > 10 apart |")
    print("|---|---|" + "---|" * (len(COLUMNS) + 1))
    for key, (title, make) in rows.items():
        if key not in only:
            continue
        preds[key] = make()
        s = score(gold, preds[key])
        results[key] = s
        print(f"| {title} | {s['docs']} | " + " | ".join(table_row(s)) + f" | {s['by_distance']['>10']['recall']:.3f} |",
              flush=True)

    systems = [k for k in ("baseline", "cue", "pairmlp", "parser") if k in results]
    print("\nRecall / precision by gold-node distance (pairs matched after projection):\n")
    print("| system | " + " | ".join(f"{name} R / P (gold n)" for name, _, _ in DISTANCE_BINS) + " |")
    print("|---|" + "---|" * len(DISTANCE_BINS))
    for key in systems:
        b = results[key]["by_distance"]
        print(f"| {rows[key][0]} | " + " | ".join(f"{b[n]['recall']:.3f} / {b[n]['precision']:.3f} ({b[n]['gold']})"
                                                for n, _, _ in DISTANCE_BINS) + " |")

    print("\nPer-type F1 (gold nodes):\n")
    print("| system | " + " | ".join(GOLD_TYPES) + " |")
    print("|---|" + "---|" * len(GOLD_TYPES))
    for key in systems:
        per = results[key]["types"]["per_class"]
        print(f"| {rows[key][0]} | " + " | ".join(f"{per[t]['f1']:.2f}" if t in per else "-" for t in GOLD_TYPES) + " |")
    for key in ("pairmlp", "parser"):
        if key in results:
            conf = results[key]["types"]["confusion"]
            print(f"\nConfusion, {rows[key][0]} (rows: gold type, columns: predicted):\n")
            print("| gold \\ pred | " + " | ".join(GOLD_TYPES) + " |")
            print("|---|" + "---|" * len(GOLD_TYPES))
            for g in GOLD_TYPES:
                print(f"| {g} | " + " | ".join(str(conf.get(g, {}).get(p, 0)) for p in GOLD_TYPES) + " |")

    boot = {}
    for other in ("pairmlp", "baseline"):
        if "parser" in results and other in results:
            boot[other] = paired_bootstrap(results["parser"], results[other], samples=args.samples)
            print(f"\nParser minus {rows[other][0]}: paired bootstrap over documents ({args.samples} resamples, 95%):\n")
            print("| score | parser | other | difference | 95% interval | share of resamples with no gain |")
            print("|---|---|---|---|---|---|")
            for name in BOOTSTRAP_METRICS:
                r = boot[other][name]
                print(f"| {name} | {r['a']:.3f} | {r['b']:.3f} | {r['diff']:+.3f} | [{r['low']:+.3f}, {r['high']:+.3f}] | "
                      f"{r['p_not_better']:.3f} |")

    for key in ("pairmlp", "parser"):
        if key in preds:
            trip = label_round_trip(preds[key])
            wrong = {f"{a} -> {b}": n for (a, b), n in sorted(trip.items(), key=str) if b != a}
            print(f"\nExported edge labels of {rows[key][0]}: {sum(trip.values())} edges; mapping back differs for "
                  f"{sum(wrong.values())}: {json.dumps(wrong)}")
            results[key]["label_round_trip"] = {f"{a} -> {b}": n for (a, b), n in sorted(trip.items(), key=str)}
    if args.json:
        Path(args.json).write_text(json.dumps({"scores": results, "bootstrap": boot}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
