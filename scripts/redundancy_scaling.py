"""Time of the redundancy annotation against trace length (issue 16): long graph records are made
by concatenating the real graphs of a finished run (units and edges shifted, one inference edge
joining each piece to the next) up to each size, then annotated with `redundancy_row`; with
--reference the SEP and Iso of the old quadratic code (tests/redundancy_reference.py) are timed on
the same records beside the package's.

    python scripts/redundancy_scaling.py RUN_DIR --sizes 1000 4000 16000 40000 [--reference]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from thinkprobe.redundancy import isolated_units, redundancy_row, shortest_effective_path  # noqa: E402
from thinkprobe.records import iter_graph_records  # noqa: E402


def long_record(graphs: list[dict], n_units: int) -> dict:
    units, edges, k = [], [], 0
    while len(units) < n_units:
        g = graphs[k % len(graphs)]
        k += 1
        offset = len(units)
        units += [{**u, "id": u["id"] + offset} for u in g["units"]]
        edges += [{**e, "src": e["src"] + offset, "dst": e["dst"] + offset} for e in g["edges"]]
        if offset:
            edges.append({"src": offset - 1, "dst": offset, "type": "inference", "polarity": None})
    edges = [e for e in edges if e["src"] < n_units and e["dst"] < n_units]
    first = graphs[0]
    return {**{key: first.get(key) for key in ("trace_id", "model", "domain", "question", "gold_answer", "correct")},
            "units": units[:n_units], "edges": edges}


def timed(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000, 40000])
    ap.add_argument("--reference", action="store_true", help="also time the old quadratic SEP and Iso")
    args = ap.parse_args()
    graphs = list(iter_graph_records(args.run_dir))
    sep_iso = lambda rec: (shortest_effective_path(len(rec["units"]), rec["edges"], len(rec["units"]) - 1),  # noqa: E731
                           isolated_units(rec["units"], rec["edges"], rec["question"]))
    if args.reference:
        sys.path.insert(0, str(REPO / "tests"))
        import redundancy_reference as ref

        old = lambda rec: (ref.shortest_effective_path(len(rec["units"]), rec["edges"], len(rec["units"]) - 1),  # noqa: E731
                           ref.isolated_units(rec["units"], rec["edges"], rec["question"]))
    print("| units | edges | redundancy_row s | SEP + Iso s |" + (" old SEP + Iso s |" if args.reference else ""))
    print("|---|---|---|---|" + ("---|" if args.reference else ""))
    rows = []
    for n in args.sizes:
        rec = long_record(graphs, n)
        row = [n, len(rec["edges"]), timed(redundancy_row, rec), timed(sep_iso, rec)]
        if args.reference:
            row.append(timed(old, rec))
        rows.append(row)
        print("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row) + " |", flush=True)
    if len(rows) > 1:
        (n0, *_, t0), (n1, *_, t1) = [(r[0], r[2]) for r in (rows[0], rows[-1])]
        print(f"growth exponent of redundancy_row (first to last size): {math.log(t1 / t0) / math.log(n1 / n0):.2f}")


if __name__ == "__main__":
    main()
