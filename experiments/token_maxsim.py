"""Experiment (issue 27), not part of the product: do token-level pair features help the parser?

For every candidate pair (i, j) of the silver examples, three MaxSim features from the token
states of the reader given by --reader-from (its fine-tuned top layers run on the cached lower-layer
states; tokens L2-normalised, [CLS] / [SEP] dropped): the mean over j's tokens of their best cosine
with one of i's tokens, weighted by the token's inverse unit frequency within the trace
(log((n + 1) / (df + 0.5)), negative weights clipped to 0); the same from i to j; and the
unweighted mean of j's tokens' best cosine. They are appended to the parser's pair features before
training; everything else is `scripts/train_parser.py train`. The features of all 960 traces take
about 15-25 minutes on one core once and are kept in --reader-cache (maxsim_<reader digest>.pkl).
The pipeline computes no such features, so a folder this script writes with --out is for `RESULT`
lines only, not for `--linker`.

    python experiments/token_maxsim.py train <train_parser.py train flags>         # with the features
    python experiments/token_maxsim.py train --no-maxsim <the same flags>          # the same run without

Result (docs/notes/accuracy-designs-tried.md, "Token-level pair features"): no gain on held-out silver.
"""
import pickle
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import thinkprobe.training.parser_cli as parser_cli  # noqa: E402


def token_states(layers, states: list) -> list:
    """Each unit's reader token states (tokens x hidden), normalised, [CLS] and [SEP] dropped."""
    import torch

    from thinkprobe.training.reader_fit import unit_token_states

    return [torch.nn.functional.normalize(t, dim=1) for t in unit_token_states(layers, states)]


def maxsim_features(x: dict, lower, layers, tokenizer) -> np.ndarray:
    """(pairs x 3) MaxSim features of one example's candidate pairs (x["i"], x["j"])."""
    import torch

    T = token_states(layers, lower.units(x["doc_id"]))
    ids = tokenizer([u.text for u in x["units"]], truncation=True, max_length=256, verbose=False)["input_ids"]
    ids = [a[1:-1] if len(a) > 2 else a for a in ids]
    n = len(ids)
    df: dict = {}
    for a in ids:
        for t in set(a):
            df[t] = df.get(t, 0) + 1
    idf = [torch.tensor([np.log((n + 1) / (df[t] + 0.5)) for t in a], dtype=torch.float32).clamp(min=0) for a in ids]
    F = np.zeros((len(x["i"]), 3), np.float32)
    for r, (i, j) in enumerate(zip(np.asarray(x["i"]), np.asarray(x["j"]))):
        if len(T[i]) == 0 or len(T[j]) == 0:
            continue
        S = T[j] @ T[i].T
        best_j, best_i = S.max(dim=1).values, S.max(dim=0).values
        F[r, 0] = float((best_j * idf[j]).sum() / idf[j].sum().clamp(min=1e-6))
        F[r, 1] = float((best_i * idf[i]).sum() / idf[i].sum().clamp(min=1e-6))
        F[r, 2] = float(best_j.mean())
    return F


_train_model = parser_cli.train_model


def train_model_with_maxsim(tr, val, dim, unit_size, args, log=print):
    import torch

    from thinkprobe.encoder import Encoder
    from thinkprobe.training.reader_data import LowerStates
    from thinkprobe.training.reader_fit import load_trained_reader, reader_digest

    if not args.reader_from:
        sys.exit("token_maxsim.py: give --reader-from (the reader whose token states are compared)")
    torch.set_num_threads(1)
    exs = tr + val
    path = Path(args.reader_cache) / f"maxsim_{reader_digest(args.reader_from)}.pkl"
    got = pickle.loads(path.read_bytes()) if path.exists() else {}
    key = {x["doc_id"]: np.asarray(x["j"], np.int64) * 1_000_000 + np.asarray(x["i"], np.int64) for x in exs}
    need = [x for x in exs if x["doc_id"] not in got or not np.array_equal(got[x["doc_id"]][0], key[x["doc_id"]])]
    if need:
        lower = LowerStates(Path(args.lower))
        layers = load_trained_reader(args.reader_from)
        tokenizer = Encoder(device="cpu", precision="fp32").model.tokenizer
        t0 = time.time()
        for c, x in enumerate(need):
            got[x["doc_id"]] = (key[x["doc_id"]], maxsim_features(x, lower, layers, tokenizer))
            if c % 50 == 0:
                el = time.time() - t0
                log(f"maxsim features: {c}/{len(need)} traces, {el:.0f} s, ETA {el / (c + 1) * (len(need) - c - 1):.0f} s")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(got))
    for x in exs:
        x["pf"] = np.concatenate([x["pf"], got[x["doc_id"]][1]], axis=1).astype(np.float32)
    log(f"maxsim features appended: {exs[0]['pf'].shape[1]} pair features")
    return _train_model(tr, val, dim, unit_size, args, log)


if __name__ == "__main__":
    parser_cli.main_with(sys.argv[1:], "--no-maxsim", mock.patch.object(parser_cli, "train_model", train_model_with_maxsim))
