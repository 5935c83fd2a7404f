"""Experiment (issue 27), not part of the product: what would a perfect pair scorer reach?

Runs `scripts/train_parser.py train` with the network replaced by an oracle that knows the silver
labels: each candidate pair gets probability 1 for its silver class ("none" where silver has no
link), each unit its silver node's type (RSN for units under no silver node). Type offsets and
thresholds are then fitted and the held-out silver traces decoded and scored exactly as for a
trained parser, so the RESULT line is the ceiling that the candidates, the segmentation into units
and the decoding leave to any scorer (the candidate flags decide which pairs it can see).

    python experiments/candidate_ceiling.py train <train_parser.py train candidate flags> --epochs 1
"""
import sys
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import thinkprobe.link.parser as parser_mod  # noqa: E402
import thinkprobe.link.parser.linker as parser_linker  # noqa: E402
import thinkprobe.training.parser_cli as parser_cli  # noqa: E402
from thinkprobe.link.protocol import PAIR_CLASSES, TYPE_CLASSES  # noqa: E402


def oracle_scores(model, exs, embs, **_):
    """run_parser's output for silver examples, from their silver labels and types."""
    out = []
    for x in exs:
        probs = np.zeros((len(x["i"]), len(PAIR_CLASSES)), np.float32)
        probs[np.arange(len(x["i"])), x["label"]] = 1.0
        kinds = np.where(x["types"] >= 0, x["types"], TYPE_CLASSES.index("RSN"))
        types = np.zeros((len(kinds), len(TYPE_CLASSES)), np.float32)
        types[np.arange(len(kinds)), kinds] = 1.0
        out.append({"types": types, "probs": probs})
    return out


def no_training(tr, val, dim, unit_size, args, log=print):
    log("oracle: no network trained; pairs and types scored from the silver labels")
    return None, 0


if __name__ == "__main__":
    # the training code looks run_parser up in thinkprobe.link.parser, the parser's linker in its own module
    with mock.patch.object(parser_cli, "train_model", no_training), mock.patch.object(parser_mod, "run_parser", oracle_scores), \
            mock.patch.object(parser_linker, "run_parser", oracle_scores):
        parser_cli.main(sys.argv[1:])
