#!/usr/bin/env python3
"""Compare two finished runs of the same traces (e.g. the same sample profiled with two linkers):
how far the per-trace indicators and dimensions agree, and how the model-versus-domain effect
sizes of stats.json move. Used for the linker comparison in docs/findings.md.

    python scripts/compare_runs.py runs/tts_320_pairmlp/run runs/tts_320/run
"""
import argparse
import json
import statistics
from pathlib import Path

from thinkprobe.agreement import model_identification
from thinkprobe.cognitive_profile import DIMENSION_NAMES
from thinkprobe.indicators import INDICATORS
from thinkprobe.outputs import INDICATORS_TABLE, PROFILE_TABLE, STATS_JSON, read_table


def _by_trace(run: Path, table) -> dict[str, dict[str, str]]:
    return {row["trace_id"]: row for row in read_table(run, table)}


def _ratio(r: dict) -> str:
    if r["value"] is None:
        return "–"
    return {"domain": "≥", "model": "≤", None: ""}[r["floored"]] + f"{r['value']:.1f}"


def _eps(e: dict) -> str:
    """Corrected ε² of model / domain; "–" where stats.json has none (a constant variable, a
    grouping that could not be tested)."""
    return " / ".join("–" if e[g].get("eps2_corrected") is None else f"{e[g]['eps2_corrected']:.3f}"
                      for g in ("model", "domain"))


def _effects(run: Path) -> dict[str, dict]:
    stats = json.loads((run / STATS_JSON).read_text(encoding="utf-8"))
    return {e["variable"]: e for e in stats["variables"]}


def main() -> int:
    from scipy.stats import spearmanr

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="first run folder (e.g. the old linker)")
    ap.add_argument("b", type=Path, help="second run folder, same traces")
    args = ap.parse_args()
    ind_a, ind_b = _by_trace(args.a, INDICATORS_TABLE), _by_trace(args.b, INDICATORS_TABLE)
    if ind_a.keys() != ind_b.keys():
        raise SystemExit(f"{args.a} and {args.b} do not hold the same traces")
    ids = sorted(ind_a)
    same_units = all(ind_a[i]["units"] == ind_b[i]["units"] and ind_a[i]["tokens"] == ind_b[i]["tokens"] for i in ids)
    print(f"{len(ids)} traces; Thought Units and tokens identical in both runs: {same_units}")
    print("mean edges per trace: a %.1f, b %.1f" % (statistics.mean(int(ind_a[i]["edges"]) for i in ids),
                                                    statistics.mean(int(ind_b[i]["edges"]) for i in ids)))
    prof_a, prof_b = _by_trace(args.a, PROFILE_TABLE), _by_trace(args.b, PROFILE_TABLE)
    eff_a, eff_b = _effects(args.a), _effects(args.b)
    print("\n| variable | per-trace Spearman rho a vs b | traces with the same value (indicators) | "
          "corrected ε² model / domain, a | corrected ε² model / domain, b | corrected ratio a → b |")
    print("|" + "---|" * 6)
    for name, rows_a, rows_b in [*((v, ind_a, ind_b) for v in INDICATORS),
                                 *((d, prof_a, prof_b) for d in DIMENSION_NAMES)]:
        xa = [float(rows_a[i][name]) for i in ids]
        xb = [float(rows_b[i][name]) for i in ids]
        rho = spearmanr(xa, xb)[0] if len(set(xa)) > 1 and len(set(xb)) > 1 else None
        # dimensions are z-scores against each run's own norms: equal values are not expected
        same = f"{sum(x == y for x, y in zip(xa, xb))}/{len(ids)}" if name in INDICATORS else "–"
        ea, eb = eff_a[name], eff_b[name]
        shown = name if name in INDICATORS else f"**{name}**"
        print(f"| {shown} | {'–' if rho is None else f'{rho:.2f}'} | {same} | {_eps(ea)} | {_eps(eb)} | "
              f"{_ratio(ea['ratio_corrected'])} → {_ratio(eb['ratio_corrected'])} |")
    # what the 19 indicators tell apart in each run (nearest centroid, stratified 5-fold CV, seed 0),
    # and how stable a model's profile is over its traces (ICC of stats.json where it has clusters)
    for label, rows in (("a", ind_a), ("b", ind_b)):
        cells = []
        for key in ("model", "domain"):
            ident = model_identification([rows[i] for i in ids], key)
            cells.append(f"{key} identification {ident['accuracy']:.2f} ± {ident['accuracy_sd']:.2f} (chance {ident['chance']:.2f})"
                         if ident.get("status") != "not testable" else f"{key} identification: {ident['reason']}")
        print(f"\nrun {label}: " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
