"""Memory and time of the parser (typing + linking) on one synthetic trace of N units with random
embeddings (docs/notes/accuracy-history.md, "Any length"), one torch thread; a parser with a reader
also runs the encoder on the units' texts (four distinct sentences here):

    python scripts/parser_memory.py 40000
"""
import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from thinkprobe.config import Config  # noqa: E402
from thinkprobe.link import LinkInput  # noqa: E402
from thinkprobe.link.parser import ParserLinker  # noqa: E402
from thinkprobe.records import ThoughtUnit  # noqa: E402

TEXTS = ["So x = 3 and then we check it.", "Wait, is that right?", "Let me plan the next step.", "Therefore the answer is 4."]


def main(n: int, model: str) -> None:
    import torch

    torch.set_num_threads(1)  # one thread: on a shared machine more threads spin
    parser = ParserLinker(REPO / "models" / model, Config.load())
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(n, 384)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    units = [ThoughtUnit(k, "reasoning", 0, 1, TEXTS[k % 4], segment=k // 7, node_type="RSN",
                         cues=("CRT",) if k % 4 == 1 else ()) for k in range(n)]
    parser.link([LinkInput(units[:50], emb[:50])])  # load the model first
    tracemalloc.start()
    t = time.time()
    typed = parser.typer.batch([(units, emb)])
    edges = parser.link([LinkInput(typed[0], emb)])[0]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"{n} units (random embeddings): typed + linked in {time.time() - t:.1f} s, {len(edges)} edges, peak traced "
          f"(NumPy + Python) {peak / 2**20:.0f} MB, process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("units", type=int, nargs="?", default=40000, help="units in the synthetic trace")
    ap.add_argument("--model", default="parser-minilm-reader", help="a parser folder in models/")
    args = ap.parse_args()
    main(args.units, args.model)
