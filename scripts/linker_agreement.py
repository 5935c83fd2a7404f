#!/usr/bin/env python3
"""Measure how well the profile of a linker's graphs agrees with people's graphs of the same traces, and
write it into the linker's model folder (agreement.json), from where every run with that linker carries it
into run.json and its report shows it beside the effect sizes.

Two sets, each scored as `thinkprobe eval-gold` scores (Spearman rho across traces between the value from
our graph and from the annotated one, with its 95% bootstrap interval, and the mean |ours - gold| /
sd(gold)): the dev traces of ReasoningFlow's human annotator D (v0_human_D; no shipped linker was
trained or adapted on them), and the silver traces (Gemini-3.1-pro's graphs, ReasoningFlow v1) the
model folder held out (its traces.txt). About 8 minutes on 2 cores for the default linker.

    python scripts/linker_agreement.py [--model models/parser-minilm-reader]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from thinkprobe.evalgold import evaluate  # noqa: E402
from thinkprobe.link.models import AGREEMENT_FILE, model_digest  # noqa: E402
from thinkprobe.shared_data import data_dir  # noqa: E402

# (key, gold under the data folder, held out by the model only, what the gold graphs are)
SETS = (("people", "reasoningflow/v0/v0_human_D", False,
         "a person's graphs (ReasoningFlow v0, human annotator D) of {docs} traces the linker never saw"),
        ("silver", "reasoningflow/v1/v1_llm_gemini-3.1-pro-preview.jsonl.gz", True,
         "Gemini-3.1-pro's graphs (ReasoningFlow v1) of the {docs} traces the linker held out in training"))


def _rounded(x):
    return None if x is None else round(float(x), 4)


def _shown(model: Path) -> str:
    """The folder as the command names it: relative to the repository where it lies inside."""
    try:
        return model.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return model.name


def agreement(model: Path, data: Path, device: str) -> dict:
    """agreement.json's content for `model` (a parser folder)."""
    out = {"what": "Spearman rho across traces between each indicator (and dimension) computed on this linker's "
                   "graphs and on annotated graphs of the same traces, with its 95% percentile bootstrap interval "
                   "and the mean |ours - gold| / sd(gold) (thinkprobe eval-gold, head types, default config)",
           "command": f"python scripts/linker_agreement.py --model {_shown(model)}",
           "model_digest": model_digest(model), "types": "head", "sets": {}}
    for key, gold, held, label in SETS:
        result = evaluate(data / gold, linker=str(model), device=device, heldout_of=model if held else None)
        if result["seen_by_linker"]:
            raise SystemExit(f"{model} was trained or adapted on {len(result['seen_by_linker'])} of the {key} "
                             f"traces: their agreement is no test")
        ag = result["indicator_agreement"]
        out["sets"][key] = {
            "label": label.format(docs=ag["docs"]), "gold": gold, "docs": ag["docs"],
            "median_spearman_indicators": _rounded(ag["median_spearman_indicators"]),
            "variables": {v["variable"]: {"kind": v["kind"], "spearman": _rounded(v["spearman"]),
                                          "ci": [_rounded(x) for x in v["ci"]],
                                          "mean_abs_diff_sd": _rounded(v["mean_abs_diff_sd"])}
                          for v in ag["variables"]}}
        print(f"{key}: {ag['docs']} traces, median indicator rho {ag['median_spearman_indicators']:.3f}", flush=True)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=REPO / "models" / "parser-minilm-reader")
    ap.add_argument("--data", type=Path, default=None, help="the shared data folder (default: THINKPROBE_DATA)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    data = args.data or data_dir()
    if data is None:
        raise SystemExit("no data folder: pass --data or set THINKPROBE_DATA (the annotated traces are there)")
    result = agreement(args.model, Path(data), args.device)
    (args.model / AGREEMENT_FILE).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.model / AGREEMENT_FILE}")


if __name__ == "__main__":
    main()
