#!/usr/bin/env python3
"""The validity ceiling (docs/findings.md, "Does graph fidelity limit the profile?"): on
ReasoningFlow v1 (five generators on AIME, ArgKP and GPQA questions), what the 19 indicators and
the 5D profile can tell apart when computed from Gemini's silver graphs (`--graph-source input`)
and from our graphs of the same traces (the default linker), side by side:

- model identification from the 19 indicators (nearest centroid on z-scores, stratified 5-fold
  cross-validation, seed 0), and domain identification the same way;
- chance-corrected epsilon-squared of each dimension by model and by domain, raw and
  length-controlled (from each run's stats.json);
- the agreement of each indicator between the two graphs of a trace (Spearman rho), which says
  which indicators are fragile to the linker.

On every silver trace both graphs exist for (the parser was trained on most of them: optimistic
for our graphs) and on those of the 133 it held out. Every run is a `thinkprobe profile`: the two
full runs, then the compared traces of each re-profiled from its graphs.jsonl lines with
`--graph-source input` (the same graphs, so both sides are tested on exactly the same traces).

    python scripts/validity_ceiling.py -o runs/ceiling [--cache-dir runs/cache]
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import thinkprobe  # noqa: E402
from thinkprobe.agreement import indicator_agreement, model_identification  # noqa: E402
from thinkprobe.cognitive_profile import DIMENSION_NAMES  # noqa: E402
from thinkprobe.evalgold import marked_docs  # noqa: E402
from thinkprobe.indicators import INDICATORS  # noqa: E402
from thinkprobe.link import DEFAULT_LINKER, LINKERS, MODELS_DIR  # noqa: E402
from thinkprobe.shared_data import data_dir  # noqa: E402

SOURCES = ("gemini", "parser")  # Gemini-3.1-pro's silver graphs; ours (the default linker)


def rows_of(run: Path) -> list[dict]:
    with open(run / "indicators.csv", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def held_out_ids() -> set[str]:
    return marked_docs(MODELS_DIR / LINKERS[DEFAULT_LINKER].model, "heldout")  # the held-out silver traces of the default


def profile(data, out: Path, args, **options) -> Path:
    if not (out / "run.json").exists():
        thinkprobe.profile(data, out, device=args.device, report=False, progress=args.progress,
                           cache_dir=args.cache_dir, **options)
    return out


def subset_run(full: Path, ids: set[str], out: Path, args) -> Path:
    """The traces `ids` of a finished run, profiled again from its own graphs (the same graphs)."""
    if not (out / "run.json").exists():
        out.mkdir(parents=True, exist_ok=True)
        lines = [line for line in (full / "graphs.jsonl").read_text(encoding="utf-8").splitlines()
                 if json.loads(line)["trace_id"] in ids]
        (out / "input.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        profile(str(out / "input.jsonl"), out / "run", args, graph_source="input")
    return out / "run"


def effects(run: Path) -> dict[str, dict]:
    stats = json.loads((run / "stats.json").read_text(encoding="utf-8"))
    out = {}
    for v in stats["variables"]:
        if v["variable"] in DIMENSION_NAMES:
            lc = v["length_controlled"]
            out[v["variable"]] = {"model": v["model"].get("eps2_corrected"), "domain": v["domain"].get("eps2_corrected"),
                                  "model_lc": lc["model"].get("eps2_corrected"), "domain_lc": lc["domain"].get("eps2_corrected"),
                                  "length_r2": lc["fit"].get("r2")}
    return out


def num(x, digits=3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def report(runs: dict[tuple[str, str], Path]) -> str:
    lines = []
    for subset in ("all", "heldout"):
        rows = {src: rows_of(runs[src, subset]) for src in SOURCES}
        n = len(rows["gemini"])
        lines += [f"## {subset}: {n} traces", "", "| | Gemini's silver graphs | our graphs (parser) |", "|---|---|---|"]
        ident = {src: (model_identification(rows[src], "model"), model_identification(rows[src], "domain"))
                 for src in SOURCES}
        for k, what in enumerate(("model", "domain")):
            cells = []
            for src in SOURCES:
                r = ident[src][k]
                cells.append(f"{r['accuracy']:.3f} ± {r['accuracy_sd']:.3f} (chance {r['chance']:.2f})"
                             if r["status"] == "tested" else r["reason"])
            lines.append(f"| {what} identification from the 19 indicators | {cells[0]} | {cells[1]} |")
        eff = {src: effects(runs[src, subset]) for src in SOURCES}
        lines += ["", "| dimension | Gemini: model / domain (corrected ε²) | length-controlled | ours: model / domain | "
                      "length-controlled |", "|---|---|---|---|---|"]
        for dim in DIMENSION_NAMES:
            g, o = eff["gemini"][dim], eff["parser"][dim]
            lines.append(f"| {dim} | {num(g['model'])} / {num(g['domain'])} | {num(g['model_lc'])} / {num(g['domain_lc'])} "
                         f"| {num(o['model'])} / {num(o['domain'])} | {num(o['model_lc'])} / {num(o['domain_lc'])} |")
        agree = indicator_agreement({r["trace_id"]: {i: float(r[i]) for i in INDICATORS} for r in rows["gemini"]},
                                    {r["trace_id"]: {i: float(r[i]) for i in INDICATORS} for r in rows["parser"]})
        lines += ["", f"Agreement of our graphs' values with Gemini's on the same traces (Spearman rho, median over "
                      f"indicators {num(agree['median_spearman_indicators'], 2)}):", "",
                  "| variable | rho [95%] | mean abs. diff / sd |", "|---|---|---|"]
        for v in sorted(agree["variables"], key=lambda v: -1 if v["spearman"] is None else v["spearman"]):
            lo, hi = v["ci"]
            lines.append(f"| {v['variable']} | {num(v['spearman'], 2)} [{num(lo, 2)}, {num(hi, 2)}] | "
                         f"{num(v['mean_abs_diff_sd'], 2)} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", default="runs/ceiling")
    ap.add_argument("--silver", default=None, help="the silver graphs (default: ReasoningFlow v1, gemini-3.1-pro)")
    ap.add_argument("--cache-dir", default=None, help="embedding and score cache [default: thinkprobe's]")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    silver = Path(args.silver) if args.silver else (data_dir() or Path("../shared/data")) / "reasoningflow" / "v1" / \
        "v1_llm_gemini-3.1-pro-preview.jsonl.gz"
    out = Path(args.out)
    full = {"gemini": profile(str(silver), out / "gemini_all", args, graph_source="input"),
            "parser": profile(str(silver), out / "parser_all", args)}
    # the traces both graphs exist for (a silver graph with an unknown label is listed in errors.jsonl)
    both = set.intersection(*({r["trace_id"] for r in rows_of(run)} for run in full.values()))
    subsets = {"all": both, "heldout": both & held_out_ids()}
    runs = {(src, name): subset_run(full[src], ids, out / f"{src}_{name}_common", args)
            for src in SOURCES for name, ids in subsets.items()}
    text = report(runs)
    (out / "ceiling.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
