"""Fit a trained linker's decoding thresholds on its held-out silver traces, scored the way
`thinkprobe eval-gold` scores: the pipeline runs on the held-out traces' texts and its graphs are
projected onto the silver nodes (thinkprobe.evalgold.score). The pair (window threshold, beyond
threshold) that maximises edge F1 + far-edge F1 there is written into the model's config.json.

    python scripts/fit_thresholds.py [--model models/linker-minilm-mlp] [--dry-run]

Why this space and not the unit space `train_linker.py` fits in: there, every unit pair counts,
so one silver node split into several of our units turns one silver edge into several, and the
denser operating point wins; eval-gold counts node pairs. The held-out traces are the ones
`train_linker.py` held out (its seed and val_frac over the model's traces.txt), so nothing the
models were trained on is scored. The human dev set (v0_human_D) is never read here.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from thinkprobe.shared_data import data_dir  # noqa: E402
from thinkprobe.config import Config  # noqa: E402
from thinkprobe.encoder import make_encoder  # noqa: E402
from thinkprobe.evalgold import profile_docs, score  # noqa: E402
from thinkprobe.link import DEFAULT_LINKER, LINKERS, MODELS_DIR, unit_typer  # noqa: E402
from thinkprobe.link.pairmlp import TrainedLinker  # noqa: E402
from thinkprobe.training.linker import model_card  # noqa: E402
from thinkprobe.training.linker_data import split  # noqa: E402

SILVER_DIR = (data_dir() or REPO.parent / "shared" / "data") / "reasoningflow" / "v1"
GRID = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
DEV_SECTION = "\n## Scores on the human dev set"


def heldout_ids(model_dir: Path) -> set[str]:
    """The traces `train_linker.py` held out: the same seeded shuffle over the same list."""
    meta = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))["training"]
    ids = (model_dir / "traces.txt").read_text(encoding="utf-8").split()
    held, _ = split(len(ids), meta["seed"], meta["val_frac"])
    return {ids[k] for k in held}


def brief(s: dict) -> dict:
    return {"edge_f1": round(s["edges"]["f1"], 4), "labelled_edge_f1": round(s["edges_labelled"]["f1"], 4),
            "far_edge_f1": round(s["far_edges"]["f1"], 4), "pred_pairs": s["edges"]["pred"], "gold_pairs": s["edges"]["gold"]}


def fit(model_dir: Path, cache_dir: str, log=print) -> tuple[dict, list[dict]]:
    meta = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    held = heldout_ids(model_dir)
    silver = SILVER_DIR / meta["training"]["data"]
    with gzip.open(silver, "rt", encoding="utf-8") as f:
        docs = [d for d in map(json.loads, f) if d["doc_id"] in held]
    log(f"{len(docs)} held-out silver traces of {silver.name}")
    cfg = Config.load()
    encoder = make_encoder(cfg, {"device": "cpu", "cache_dir": cache_dir})
    linker = TrainedLinker(model_dir, cfg, cache_dir=cache_dir)
    typer = unit_typer(linker, cache_dir=cache_dir)
    base = dict(linker.decode)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "heldout.jsonl"
        path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
        for near in GRID:
            for far in (t for t in GRID if t >= near):
                linker.decode = {**base, "threshold_near": near, "threshold_far": far}
                row = {"threshold_near": near, "threshold_far": far,
                       **brief(score(docs, profile_docs(path, cfg, encoder, linker, typer=typer)))}
                log(json.dumps(row))
                rows.append(row)
    best = max(rows, key=lambda r: (round(r["edge_f1"] + r["far_edge_f1"], 6), -r["threshold_near"], -r["threshold_far"]))
    return best, rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(MODELS_DIR / LINKERS[DEFAULT_LINKER].model), help="trained linker folder")
    ap.add_argument("--cache-dir", default=None, help="embedding / score cache (default: a temporary folder)")
    ap.add_argument("--dry-run", action="store_true", help="print the fit, leave config.json as it is")
    args = ap.parse_args(argv)
    model_dir = Path(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        best, rows = fit(model_dir, args.cache_dir or tmp)
    print(f"best: {json.dumps(best)}")
    if args.dry_run:
        return
    cfg_path = model_dir / "config.json"
    meta = json.loads(cfg_path.read_text(encoding="utf-8"))
    earlier = meta["training"].get("threshold_fit", {}).get("unit_space_thresholds") or {
        k: meta["decode"][k] for k in ("threshold_near", "threshold_far")}
    meta["decode"].update(threshold_near=best["threshold_near"], threshold_far=best["threshold_far"])
    meta["training"]["threshold_fit"] = {
        "space": "eval-gold (node pairs after projection onto the silver nodes), held-out silver traces",
        "objective": "edge F1 + far-edge F1", "grid": list(GRID), "best": best,
        "unit_space_thresholds": earlier,  # what train_linker.py chose; its held-out scores are at these
    }
    cfg_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    card = model_dir / "README.md"
    old = card.read_text(encoding="utf-8") if card.exists() else ""
    # dev-set scores are added to the card by hand (docs/accuracy.md); keep them
    kept = old[old.index(DEV_SECTION):] if DEV_SECTION in old else ""
    card.write_text(model_card(meta, model_dir) + kept, encoding="utf-8")
    print(f"wrote the thresholds into {cfg_path} and the model card")


if __name__ == "__main__":
    main()
