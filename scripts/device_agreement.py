#!/usr/bin/env python3
"""How far two runs of the same traces on two devices agree (e.g. CPU fp32 here against the CUDA
run of `scripts/gpu_bench.sh run`): Thought Units (boundaries and text), segments, node types, edges
(every unit pair that carries an edge in either run: the same edge type in both, or not), and the 19
indicators (largest difference and the traces that differ). Reads each run's graphs.jsonl.

    python scripts/device_agreement.py runs/agree_cpu runs/agree_cuda [--json FILE]
"""
import argparse
import json
import math
from pathlib import Path

from thinkprobe.indicators import INDICATORS
from thinkprobe.outputs import GRAPHS_FILE


def _graphs(run: Path) -> dict[str, dict]:
    with (run / GRAPHS_FILE).open(encoding="utf-8") as f:
        return {g["trace_id"]: g for g in map(json.loads, f)}


def _edges(g: dict) -> dict[tuple[int, int], str]:
    """Each unit pair's edge type(s), polarity included (a pair may carry two edges)."""
    out: dict[tuple[int, int], list[str]] = {}
    for e in g["edges"]:
        out.setdefault((e["src"], e["dst"]), []).append(f"{e['type']}/{e['polarity'] or ''}")
    return {k: "+".join(sorted(v)) for k, v in out.items()}


def compare(a: dict[str, dict], b: dict[str, dict]) -> dict:
    if a.keys() != b.keys():
        raise SystemExit(f"the runs hold different traces: {sorted(a.keys() ^ b.keys())[:5]} ...")
    ids = sorted(a)
    # node and edge agreement only where the units are the same
    same_units = [i for i in ids if [(u["start"], u["end"], u["text"]) for u in a[i]["units"]]
                  == [(u["start"], u["end"], u["text"]) for u in b[i]["units"]]]
    nodes = same_type = same_segment = pairs = same_pairs = identical = 0
    for i in same_units:
        ua, ub = a[i]["units"], b[i]["units"]
        types = sum(x["type"] == y["type"] for x, y in zip(ua, ub))
        nodes += len(ua)
        same_type += types
        same_segment += sum(x["segment"] == y["segment"] for x, y in zip(ua, ub))
        ea, eb = _edges(a[i]), _edges(b[i])
        keys = ea.keys() | eb.keys()
        pairs += len(keys)
        same_pairs += sum(ea.get(k) == eb.get(k) for k in keys)
        identical += ea == eb and types == len(ua)
    indicators = {}
    for name in INDICATORS:
        diffs = []
        for i in ids:
            x, y = a[i]["indicators"].get(name), b[i]["indicators"].get(name)
            both_nan = x is not None and y is not None and math.isnan(x) and math.isnan(y)
            diffs.append(0.0 if both_nan or x == y else abs(x - y) if None not in (x, y) else math.inf)
        indicators[name] = {"max_abs_diff": max(diffs), "traces_differing": sum(d > 0 for d in diffs)}
    return {
        "traces": len(ids),
        "traces_same_units": len(same_units),
        "units_compared": nodes,
        "node_type_agreement": same_type / nodes if nodes else None,
        "segment_agreement": same_segment / nodes if nodes else None,
        "edge_pairs": pairs,
        "edge_pair_agreement": same_pairs / pairs if pairs else None,
        "traces_identical_graphs": identical,
        "indicators": indicators,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="first run folder (e.g. CPU fp32)")
    ap.add_argument("b", type=Path, help="second run folder, same traces (e.g. CUDA)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    res = compare(_graphs(args.a), _graphs(args.b))
    print(f"{res['traces']} traces; identical Thought Units in {res['traces_same_units']}; "
          f"identical graphs (edges and types) in {res['traces_identical_graphs']}")
    print(f"over {res['units_compared']} units: node types agree {res['node_type_agreement']:.4f}, "
          f"segments {res['segment_agreement']:.4f}")
    print(f"edges: {res['edge_pairs']} unit pairs carry an edge in either run; the same edge in both: "
          f"{res['edge_pair_agreement']:.4f}")
    print("| indicator | largest |a - b| | traces differing |\n|---|---|---|")
    for name, d in res["indicators"].items():
        print(f"| {name} | {d['max_abs_diff']:.6g} | {d['traces_differing']} |")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
