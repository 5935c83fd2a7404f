"""The parser's cost against the raw encoder's, in one process on the same units: the first N
prepared silver traces (scripts/train_parser.py prepare), typed and linked in chunks of 16 traces,
and (up to 3,000 of) their unit texts encoded by the pipeline's encoder (its default precision)
(docs/notes/accuracy-history.md, "Throughput"):

    python scripts/parser_speed.py [--traces 100]
"""
import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from thinkprobe.config import Config  # noqa: E402
from thinkprobe.encoder import Encoder  # noqa: E402
from thinkprobe.link import LinkInput  # noqa: E402
from thinkprobe.link.parser import ParserLinker  # noqa: E402
from thinkprobe.training.parser_data import load_prepared  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=100)
    ap.add_argument("--cache", default=str(REPO.parent / "cache" / "silver"))
    ap.add_argument("--model", default=str(REPO / "models" / "parser-minilm-bilstm"))
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    rows = load_prepared(args.cache)[: args.traces]
    n = sum(len(r["units"]) for r in rows)
    parser = ParserLinker(args.model, Config.load())
    items = [(r["units"], r["emb"]) for r in rows]
    parser.typer.batch(items[:2])
    t = time.time()
    for s in range(0, len(items), 16):
        chunk = items[s:s + 16]
        typed = parser.typer.batch(chunk)
        parser.link([LinkInput(u, e) for u, (_, e) in zip(typed, chunk)])
    tp = time.time() - t
    enc = Encoder(device="cpu")
    enc.encode_and_count(["warm up"] * 8)
    texts = [u.text for r in rows for u in r["units"]][:3000]
    t = time.time()
    enc.encode_and_count(texts)
    te = (time.time() - t) * n / len(texts)
    print(f"{len(rows)} traces, {n} units: parser (type + link) {tp:.1f} s = {n / tp:.0f} units/s; raw encoder "
          f"{n / te:.0f} units/s (timed on {len(texts)} units); parser time / encoder time {tp / te:.1%}")


if __name__ == "__main__":
    main()
