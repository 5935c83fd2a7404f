"""Profile agreement of decoding variants of the shipped parser, and of expected indicators over
sampled graphs (docs/notes/accuracy-designs-tried.md, "Decoding at a plateau").

The shipped parser-reader scores the held-out silver traces (its traces.txt) and the dev traces
(human D) once; each variant then re-decodes those probabilities (`--variant JSON`: keys of the
model's `decode` mapping to override, thinkprobe/link/decode.py `DECODE_KEYS`) and its graphs are
profiled as eval-gold profiles them. `--samples K` instead averages the indicators of K graphs per
trace decoded from perturbed probabilities (Gumbel noise of scale --tau-types on the type
log-probabilities, --tau-edges on the pair-class log-probabilities; seed 0). Printed per set: edge /
far-edge / type F1, median and mean indicator rho (silver: also the median of each half split by
sha1(doc_id) mod 2), the five dimensions' rho and the worst mean |ours - gold| / sd(gold).
`--model DIR`: another parser folder over the same encoder and units, its outputs cached beside.

    python experiments/decode_variants.py --variant '{}' --variant '{"threshold_near": 0.35}'
    python experiments/decode_variants.py --samples 8 --tau-types 0.5 --tau-edges 0.5
    python experiments/decode_variants.py --model runs/QE --variant '{}'
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from thinkprobe.agreement import indicator_agreement, profile_graphs  # noqa: E402
from thinkprobe.cognitive_profile import DIMENSION_NAMES  # noqa: E402
from thinkprobe.evalgold import held_out_docs, load_docs, score  # noqa: E402
from thinkprobe.indicators import INDICATORS  # noqa: E402
from thinkprobe.shared_data import data_dir  # noqa: E402
from thinkprobe.training.dev_cv import adapted_outputs, dev_examples, predicted  # noqa: E402

MODEL = REPO / "models" / "parser-minilm-reader"


def scored_sets(cache: Path, model: Path = MODEL) -> dict[str, dict]:
    """{"silver_held", "dev"}: gold documents, encoded rows (cached in `cache`) and the outputs of the
    shipped parser, or of `model` (another parser folder over the same encoder), cached beside under
    the folder's name and a digest of its config.json (so a changed gate or decoding recomputes them)."""
    sets = _encoded_sets(cache)
    digest = hashlib.sha1((model / "config.json").read_bytes()).hexdigest()[:10]
    path = cache.with_name(f"outs-{model.resolve().name}-{digest}.pkl")
    if path.exists():
        with open(path, "rb") as f:
            outs = pickle.load(f)
    else:
        outs = {n: adapted_outputs(model, dev_examples(model, d["docs"], d["rows"]), [], 0, 0.0) for n, d in sets.items()}
        with open(path, "wb") as f:
            pickle.dump(outs, f)
    return {n: {**d, "outs": outs[n]} for n, d in sets.items()}


def _encoded_sets(cache: Path) -> dict[str, dict]:
    """{"silver_held", "dev"}: gold documents and their encoded rows (the shipped folder's held-out
    silver traces; every dev trace), cached in `cache`."""
    if cache.exists():
        with open(cache, "rb") as f:
            return {n: {"docs": d["docs"], "rows": d["rows"]} for n, d in pickle.load(f).items()}
    from thinkprobe.config import Config
    from thinkprobe.encoder import make_encoder
    from thinkprobe.training.parser_data import encode_rows

    cfg = Config.load()
    encoder = make_encoder(cfg, {"device": "cpu", "precision": "fp32"})
    root = data_dir() or REPO.parent / "shared" / "data"
    out = {}
    for name, gold, held in (("silver_held", root / "reasoningflow/v1/v1_llm_gemini-3.1-pro-preview.jsonl.gz", True),
                             ("dev", root / "reasoningflow/v0/v0_human_D", False)):
        docs = load_docs(gold)
        docs = held_out_docs(docs, MODEL) if held else docs
        out[name] = {"docs": docs, "rows": encode_rows(docs, list(range(len(docs))), encoder, cfg)}
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache, "wb") as f:
        pickle.dump(out, f)
    return out


def graphs(d: dict, decode: dict, outs: list[dict]) -> list[dict]:
    """Predicted documents of every trace under `decode` (with the gold metadata: parser_fit.scored_doc)."""
    return predicted(d["docs"], d["rows"], outs, decode, list(range(len(d["rows"]))))


def perturbed(o: dict, rng: np.random.Generator, tau_types: float, tau_edges: float) -> dict:
    def noisy(p, tau):
        x = np.log(np.maximum(p, 1e-12)) + tau * rng.gumbel(size=p.shape)
        x = np.exp(x - x.max(1, keepdims=True))
        return x / x.sum(1, keepdims=True)
    return {**o, "types": noisy(o["types"], tau_types), "probs": noisy(o["probs"], tau_edges)}


def summary(gold_rows: dict, rows: dict, halves: bool) -> str:
    ag = indicator_agreement(gold_rows, rows, resamples=20)
    v = {x["variable"]: x for x in ag["variables"]}
    rhos = [x["spearman"] for x in ag["variables"] if x["kind"] == "indicator" and x["spearman"] is not None]
    worst = max((x["mean_abs_diff_sd"] or 0.0, x["variable"]) for x in ag["variables"])
    text = f"median rho {ag['median_spearman_indicators']:.3f} mean {np.mean(rhos):.3f}"
    if halves:
        parts = []
        for h in (0, 1):
            ids = [i for i in gold_rows if int(hashlib.sha1(i.encode()).hexdigest(), 16) % 2 == h]
            parts.append(indicator_agreement({i: gold_rows[i] for i in ids}, {i: rows[i] for i in ids if i in rows},
                                             resamples=20)["median_spearman_indicators"])
        text += f" (halves {parts[0]:.3f}, {parts[1]:.3f})"
    dims = " / ".join(f"{v[d]['spearman']:.2f}" for d in DIMENSION_NAMES)
    return f"{text}; B / D / S / M / E {dims}; worst |d|/sd {worst[0]:.2f} {worst[1]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", action="append", default=[], help="JSON object of decode keys to override (repeatable)")
    ap.add_argument("--samples", type=int, default=0, help="expected indicators over K perturbed graphs per trace")
    ap.add_argument("--tau-types", type=float, default=0.5)
    ap.add_argument("--tau-edges", type=float, default=0.5)
    ap.add_argument("--work", default="runs/decode-variants", help="cache folder (scored traces, embeddings)")
    ap.add_argument("--model", type=Path, default=MODEL, help="a parser folder (default: the shipped one)")
    args = ap.parse_args()
    work = Path(args.work)
    sets = scored_sets(work / "scored.pkl", args.model)
    base = json.loads((args.model / "config.json").read_text(encoding="utf-8"))["decode"]
    cache = str(work / "embeddings")
    gold = {n: profile_graphs(d["docs"], device="cpu", cache_dir=cache)[0] for n, d in sets.items()}
    for variant in args.variant or (["{}"] if not args.samples else []):
        decode = {**base, **json.loads(variant)}
        for n, d in sets.items():
            pred = graphs(d, decode, d["outs"])
            s = score([d["docs"][r["doc_index"]] for r in d["rows"]], pred)
            rows = profile_graphs(pred, device="cpu", cache_dir=cache)[0]
            print(f"{variant} {n}: edge / far / type F1 {s['edges']['f1']:.3f} / {s['far_edges']['f1']:.3f} / "
                  f"{s['types']['macro_f1']:.3f}; {summary(gold[n], rows, n == 'silver_held')}", flush=True)
    if args.samples:
        for n, d in sets.items():
            rng = np.random.default_rng(0)
            drawn: dict[str, list[dict]] = {}
            for _ in range(args.samples):
                outs = [perturbed(o, rng, args.tau_types, args.tau_edges) for o in d["outs"]]
                for i, row in profile_graphs(graphs(d, base, outs), device="cpu", cache_dir=cache)[0].items():
                    drawn.setdefault(i, []).append(row)
            rows = {i: {k: float(np.mean([r[k] for r in rs])) for k in INDICATORS} for i, rs in drawn.items()}
            print(f"samples {args.samples}, tau {args.tau_types} / {args.tau_edges} {n}: "
                  f"{summary(gold[n], rows, n == 'silver_held')}", flush=True)


if __name__ == "__main__":
    main()
