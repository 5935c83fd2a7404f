#!/usr/bin/env python3
"""The indicator-agreement table of docs/accuracy.md from `thinkprobe eval-gold` JSON files: one
row per indicator and dimension, one column per system (Spearman rho between the value from that
system's graph and from the gold graph, across documents), the median over indicators last.

    python scripts/agreement_table.py baseline=runs/dev_baseline.json parser=runs/dev_parser.json ...
"""
from __future__ import annotations

import argparse
import json


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("systems", nargs="+", help="NAME=eval_gold.json, in column order")
    ap.add_argument("--intervals", action="store_true", help="add the 95%% bootstrap interval to each rho")
    args = ap.parse_args(argv)
    columns = []
    for spec in args.systems:
        name, _, path = spec.partition("=")
        with open(path, encoding="utf-8") as f:
            columns.append((name, json.load(f)["indicator_agreement"]))

    def cell(v) -> str:
        if v["spearman"] is None:
            return "–"
        lo, hi = v["ci"]
        return f"{v['spearman']:.2f}" + (f" [{lo:.2f}, {hi:.2f}]" if args.intervals and lo is not None else "")

    print("| variable | " + " | ".join(name for name, _ in columns) + " |")
    print("|---|" + "---|" * len(columns))
    variables = [v["variable"] for v in columns[0][1]["variables"]]
    for k, var in enumerate(variables):
        bold = k >= len(variables) - 5  # the five dimensions
        label = f"**{var}**" if bold else var
        print(f"| {label} | " + " | ".join(cell(a["variables"][k]) for _, a in columns) + " |")
    medians = [a["median_spearman_indicators"] for _, a in columns]
    print("| median over indicators | " + " | ".join("–" if m is None else f"**{m:.2f}**" for m in medians) + " |")
    print("| documents | " + " | ".join(str(a["docs"]) for _, a in columns) + " |")


if __name__ == "__main__":
    main()
