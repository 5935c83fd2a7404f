"""Train ThinkProbe's trace-level parser (thinkprobe/link/parser/) on ReasoningFlow silver graphs.

Stage 1, `prepare`: every silver trace is split, encoded and tiled by our own pipeline once; its
units and embeddings are cached in chunk files under --cache (resumable: finished chunks are kept).
Training data are the silver gemini-3.1-pro graphs of ../shared/data/reasoningflow/v1, ALL of
them, long traces included. The human dev set (v0_human_D) is never read here.

    python scripts/train_parser.py prepare --shards 2       # once: ../cache/silver (CPU: ~11 min on 2 cores)
    python scripts/train_parser.py train [options] --out DIR  # one network (the shipped ensemble's
    python scripts/train_parser.py ensemble A B --out DIR     # members and options: its model card)
    python scripts/train_parser.py compare                  # vs the old default on silver neither trained on
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from thinkprobe.training.parser_cli import main  # noqa: E402  (the code lives in the package; this is its command line)

if __name__ == "__main__":
    main()
