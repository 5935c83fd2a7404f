"""How far one spurious critique edge moves recurrence_ratio (docs/indicators.md, "Fragile indicators").

People's graphs (by default the held-out silver traces of the shipped parser) are profiled as drawn
(`profile --graph-source input`, the path eval-gold uses), then again with one critique edge added
per trace: a node chosen at random (seed 0) critiquing the node SPAN places before it. Printed per
span: the share of traces whose recurrence_ratio moved by more than 0.4 standard deviations of the
unperturbed values, and the median and mean move in those standard deviations.

    python experiments/recurrence_fragility.py [--gold FILE] [--spans 1 3 12]
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from thinkprobe.agreement import profile_graphs  # noqa: E402
from thinkprobe.evalgold import held_out_docs  # noqa: E402
from thinkprobe.reasoningflow import load_docs, response_nodes  # noqa: E402
from thinkprobe.training.parser_data import SILVER  # noqa: E402


def with_critique(doc: dict, span: int, rng: np.random.Generator) -> dict | None:
    """The document with one reflect:negative edge from a node SPAN places back to a random node (its
    critique of that earlier node); None if the trace has too few response nodes."""
    nodes = response_nodes(doc)
    if len(nodes) < span + 2:
        return None
    b = int(rng.integers(span, len(nodes)))
    out = copy.deepcopy(doc)
    out["edges"] = [*out.get("edges", ()), {"id": "spurious", "source_node_id": nodes[b - span]["id"],
                                           "dest_node_id": nodes[b]["id"], "label": "reflect:negative"}]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gold", default=str(SILVER), help="ReasoningFlow graphs (default: the v1 silver file)")
    ap.add_argument("--heldout-of", default=str(REPO / "models" / "parser-minilm-reader"),
                    help="keep the documents this model folder held out ('' for all)")
    ap.add_argument("--spans", type=int, nargs="+", default=[1, 3, 12])
    args = ap.parse_args(argv)
    docs = load_docs(args.gold)
    if args.heldout_of:
        docs = held_out_docs(docs, args.heldout_of)
    base, _ = profile_graphs(docs)
    values = np.array([base[d]["recurrence_ratio"] for d in sorted(base)])
    sd = values.std(ddof=1)
    print(f"{len(values)} graphs: recurrence_ratio mean {values.mean():.4f}, sd {sd:.4f}")
    for span in args.spans:
        rng = np.random.default_rng(0)
        moved = [d for d in (with_critique(doc, span, rng) for doc in docs) if d is not None]
        after, _ = profile_graphs(moved)
        move = np.array([abs(after[k]["recurrence_ratio"] - base[k]["recurrence_ratio"]) / sd for k in sorted(after) if k in base])
        print(f"one critique edge {span} back: moved > 0.4 sd in {np.mean(move > 0.4):.0%} of {len(move)} traces; "
              f"median {np.median(move):.2f} sd, mean {move.mean():.2f} sd")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
