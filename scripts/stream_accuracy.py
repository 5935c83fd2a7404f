"""How far a stream's snapshot indicators lie from profiling the same text at once (issue 42):
real ReasoningFlow v1 traces are fed to `thinkprobe.stream` in 200-character pieces; at half the
text and at its end a snapshot of every settled unit (`snapshot()`) is compared with
`thinkprobe.profile` of the text up to the last settled unit (the same units; run through the
stream's own encoder and parser, which give the one-shot values on CPU). Per indicator: the mean
absolute difference, the same in standard deviations of the one-shot values over the traces, and
the share of snapshots equal to the one-shot value (within a relative 1e-6: float sums in another
order); and how often close() equals the one-shot
profile of the whole text (it must: always).

    python scripts/stream_accuracy.py -n 30 [--json FILE]
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from thinkprobe.api import profile_run  # noqa: E402
from thinkprobe.indicators import INDICATORS  # noqa: E402
from thinkprobe.live import Stream  # noqa: E402
from thinkprobe.options import RunOptions  # noqa: E402
from thinkprobe.shared_data import data_dir  # noqa: E402

OPTIONS = {"device": "cpu", "progress": False, "report": False, "cache": False}


def traces(n: int, seed: int, max_chars: int) -> list[dict]:
    root = data_dir()
    if root is None:
        sys.exit("needs the real traces: ../shared/data (or $THINKPROBE_DATA)")
    with gzip.open(root / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz", "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    random.Random(seed).shuffle(records)
    out = []
    for rec in records:
        text = rec["raw_text"].get("response") or ""
        if "</think>" in text and len(text) <= max_chars:
            out.append({"id": rec["doc_id"], "model": rec["metadata"]["generator"], "response": text})
        if len(out) == n:
            break
    return out


def one_shot(s: Stream, text: str) -> dict[str, float]:
    """Indicators of `text` profiled at once, with the stream's encoder and parser (exact on CPU)."""
    out = tempfile.mkdtemp(prefix="thinkprobe-accuracy-")
    opts = RunOptions(records=[{**s.record, s.text_field: text}], out_dir=out, **s.options)
    run = profile_run(opts, True, encoder=s.encoder, linker=s.linker)
    return {k: float(run.indicators[k].iloc[0]) for k in INDICATORS}


def _sd_cell(value: float | None) -> str:
    """A difference in standard deviations; '-' where the one-shot values do not vary but the
    snapshots differ from them (no scale to express it in)."""
    return f"{'-':>11}" if value is None else f"{value:>11.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=30, help="traces")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-chars", type=int, default=40000, help="skip longer traces (time)")
    ap.add_argument("--piece", type=int, default=200)
    ap.add_argument("--json", default=None, help="write the table here")
    args = ap.parse_args()
    pairs: dict[str, list[tuple[dict, dict]]] = {"half": [], "end": []}
    exact, units = 0, []
    picked = traces(args.n, args.seed, args.max_chars)
    for k, rec in enumerate(picked):
        s = Stream(record={"id": rec["id"], "model": rec["model"]}, **OPTIONS)
        text = rec["response"]
        for at, name in ((len(text) // 2, "half"), (len(text), "end")):
            fed = len(s.text)
            for i in range(fed, at, args.piece):
                s.feed(text[i:min(i + args.piece, at)])
            snap = s.snapshot()
            if snap.indicators is None:
                continue
            prefix = text[:s.units[-1].end]
            pairs[name].append((snap.indicators, one_shot(s, prefix)))
        run = s.close()
        whole = one_shot(s, text)
        exact += all(float(run.indicators[i].iloc[0]) == whole[i] for i in INDICATORS)
        units.append(int(run.indicators["units"].iloc[0]))
        print(f"{k + 1}/{len(picked)} {rec['id']}: {units[-1]} units", file=sys.stderr, flush=True)
    table = {}
    for name, got in pairs.items():
        rows = {}
        for ind in INDICATORS:
            snap = np.array([a[ind] for a, _ in got])
            once = np.array([b[ind] for _, b in got])
            diff = np.abs(snap - once)
            sd = once.std()
            rows[ind] = {"mean_abs_diff": float(diff.mean()), "in_sd": (float(diff.mean() / sd) if sd > 0 else 0.0 if not diff.any() else None),
                         "equal_share": float(np.isclose(snap, once, rtol=1e-6, atol=1e-9).mean())}
        table[name] = {"snapshots": len(got), "indicators": rows}
    report = {"traces": len(picked), "units_median": float(np.median(units)), "close_equal_to_one_shot": exact,
              "piece_chars": args.piece, "table": table}
    print(f"{len(picked)} traces (median {report['units_median']:.0f} units); close() equal to the one-shot profile: "
          f"{exact} of {len(picked)}")
    print(f"{'indicator':<26} " + " ".join(f"{n + ' |diff|':>12} {n + ' in sd':>11} {n + ' equal':>11}" for n in table))
    for ind in INDICATORS:
        print(f"{ind:<26} " + " ".join(f"{t['indicators'][ind]['mean_abs_diff']:>12.3g} {_sd_cell(t['indicators'][ind]['in_sd'])} "
                                        f"{t['indicators'][ind]['equal_share']:>11.2f}" for t in table.values()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
