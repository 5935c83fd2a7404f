"""Our node types against a second human scheme: Schoenfeld's episodes (Li et al., EMNLP 2025), seven
sentence labels given by trained annotators to 38 DeepSeek-R1 responses on SAT math
(`schoenfeld_episodes/` in the shared data). Not a training run: it profiles the responses with the
default pipeline (our own segmentation), gives each reasoning unit the label of the annotated sentence
it overlaps most (characters), and prints the confusion of our types with their labels, then how
often each of their labels falls on the type closest to it in spec section 2 (Explore -> EXP,
Verify -> CRT, Plan and Monitor -> MET, Analyze and Implement -> RSN, Read -> RPT: restating the
problem). The schemes differ in design, so this says what a type counts, not how right it is.

    python experiments/schoenfeld_types.py [--run DIR]   # DIR: an existing run of the responses file
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TYPES = ("FAC", "RSN", "EXP", "SYN", "CRT", "MET", "CON", "RPT")
CLOSEST = {"Explore": "EXP", "Verify": "CRT", "Plan": "MET", "Monitor": "MET", "Analyze": "RSN",
           "Implement": "RSN", "Read": "RPT"}
FIELD = "deepseek-reasoner (response)"


def labelled_spans(text: str, sentences: list[dict]) -> list[tuple[int, int, str]]:
    """Character spans of the annotated sentences (exact, in-order substrings of the response)."""
    spans, pos = [], 0
    for s in sentences:
        start = text.find(s["text"], pos)
        if start < 0:
            continue
        spans.append((start, start + len(s["text"]), s["gt-class-2"]))
        pos = start + len(s["text"])
    return spans


def confusion(graphs: Path, data: Path) -> collections.Counter:
    corpus = data / "schoenfeld_episodes"
    original = {r["Question ID"]: r for r in json.loads((corpus / "responses_original" / "SAT_deepseekR1_results.json").read_text())}
    labels = {}
    for path in sorted((corpus / "responses_labeled").glob("*.json")):
        d = json.loads(path.read_text())
        labels[d["Question ID"]] = d["data"]
    counts: collections.Counter = collections.Counter()
    for line in graphs.read_text(encoding="utf-8").splitlines():
        g = json.loads(line)
        if g["trace_id"] not in labels:
            continue
        spans = labelled_spans(original[g["trace_id"]][FIELD], labels[g["trace_id"]])
        for u in g["units"]:
            if u["section"] != "reasoning":
                continue
            overlap: collections.Counter = collections.Counter()
            for a, b, label in spans:
                if min(b, u["end"]) > max(a, u["start"]):
                    overlap[label] += min(b, u["end"]) - max(a, u["start"])
            if overlap:
                counts[(u["type"], overlap.most_common(1)[0][0])] += 1
    return counts


def main(argv: list[str] | None = None) -> None:
    from thinkprobe.shared_data import data_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", help="a finished run of the responses file (default: profile it into a temporary folder)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    data = data_dir() or REPO.parent / "shared" / "data"
    if args.run:
        graphs = Path(args.run) / "graphs.jsonl"
        counts = confusion(graphs, data)
    else:
        import thinkprobe

        run = thinkprobe.profile(data / "schoenfeld_episodes" / "responses_original" / "SAT_deepseekR1_results.json",
                                 device=args.device)
        counts = confusion(run.folder / "graphs.jsonl", data)
    labels = sorted({label for _, label in counts})
    theirs = {label: sum(counts[(t, label)] for t in TYPES) for label in labels}
    print(f"{'ours / theirs':>13} " + " ".join(f"{label:>9}" for label in labels) + "    total")
    for t in TYPES:
        print(f"{t:>13} " + " ".join(f"{counts[(t, label)]:>9}" for label in labels) + f" {sum(counts[(t, x)] for x in labels):>8}")
    print(f"{'total':>13} " + " ".join(f"{theirs[label]:>9}" for label in labels))
    for label in labels:
        print(f"{label} on {CLOSEST[label]}: {counts[(CLOSEST[label], label)] / theirs[label]:.2f}")


if __name__ == "__main__":
    main()
