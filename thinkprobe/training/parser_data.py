"""The parser's training data: ReasoningFlow silver graphs (gemini-3.1-pro, ../shared/data), split,
encoded and tiled by our own pipeline once into a chunked cache (`prepare`), held-out documents
chosen by a hash of their id, and the examples and length-bounded batches training reads.
"""
from __future__ import annotations

import gzip
import json
import os
import pickle
import time
from pathlib import Path

import numpy as np

from ..config import Config
from ..shared_data import REPO, data_dir

__all__ = ["SILVER", "load_silver", "prepare", "encode_rows", "FP32_WORDS", "BF16_WORDS", "prepared_precision", "encoding_of", "load_prepared", "held_out", "examples", "batches"]


SILVER = (data_dir() or REPO.parent / "shared" / "data") / "reasoningflow" / "v1" / "v1_llm_gemini-3.1-pro-preview.jsonl.gz"


def load_silver(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def prepare(args) -> None:
    """Split, encode (fp32, as the pipeline on CPU; `--bf16`: bfloat16) and tile every silver trace; one
    pickle per chunk of traces in args.cache, skipped when present (an interrupted run resumes);
    the precision is recorded in args.cache/meta.json for the model card."""
    if args.shard is None and args.shards > 1:
        # one process per shard, each encoding every SHARDS-th chunk; they share nothing but the folder
        import subprocess
        import sys

        common = ["prepare", "--silver", str(args.silver), "--cache", str(args.cache), "--chunk", str(args.chunk),
                  "--threads", str(args.threads), "--shards", str(args.shards), "--long-chars", str(args.long_chars),
                  "--bf16" if args.bf16 else "--no-bf16"]
        code = "from thinkprobe.training.parser_cli import main; main()"
        procs = [subprocess.Popen([sys.executable, "-c", code, *common, "--shard", str(k)]) for k in range(args.shards)]
        if any(proc.wait() for proc in procs):
            raise SystemExit("a prepare shard failed (its output is above); run the same command again to resume")
        print("prepared", flush=True)
        return
    import torch

    from thinkprobe.encoder import Encoder

    torch.set_num_threads(args.threads)
    cfg = Config.load()
    docs = load_silver(Path(args.silver))
    # short traces first (most of the data early), ties by position: a fixed order
    order = sorted(range(len(docs)), key=lambda k: (len(docs[k]["raw_text"]["response"]) > args.long_chars, k))
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    enc = cfg["encoder"]
    precision = "bf16" if args.bf16 else "fp32"
    encoder = Encoder(enc["path"] or None, device="cpu", batch_size=enc["batch_size"], max_seq_length=enc["max_seq_length"],
                      precision=precision)
    chunks = [order[s:s + args.chunk] for s in range(0, len(order), args.chunk)]
    recorded = prepared_precision(cache)
    if recorded is not None and recorded != precision:
        raise SystemExit(f"{cache} holds traces encoded in another precision than {precision}: use another --cache")
    if recorded is None and any(cache.glob("chunk_*.pkl")):
        raise SystemExit(f"{cache} holds traces of an unrecorded precision (bf16 before it was recorded): use another --cache")
    (cache / "meta.json").write_text(json.dumps({"precision": precision}) + "\n", encoding="utf-8")
    total_chars = sum(len(docs[k]["raw_text"]["response"]) for k in order)
    done_chars, t0, enc_chars = 0, time.time(), 0
    for c, chunk in enumerate(chunks):
        if c % args.shards != (args.shard or 0):
            continue
        path = cache / f"chunk_{c:04d}.pkl"
        chars = sum(len(docs[k]["raw_text"]["response"]) for k in chunk)
        if path.exists():
            continue
        rows = encode_rows(docs, chunk, encoder, cfg)
        texts = [u for r in rows for u in r["units"]]
        with open(str(path) + ".tmp", "wb") as f:
            pickle.dump(rows, f)
        os.replace(str(path) + ".tmp", path)
        enc_chars += chars
        done_chars = sum(len(docs[k]["raw_text"]["response"]) for q, ch in enumerate(chunks)
                         if (cache / f"chunk_{q:04d}.pkl").exists() for k in ch)
        el = time.time() - t0
        eta = el / max(enc_chars, 1) * (total_chars - done_chars) / args.shards
        print(f"chunk {c + 1}/{len(chunks)}: {len(texts)} units; {done_chars / total_chars:.1%} of the text done, "
              f"{el:.0f} s elapsed, ETA {eta:.0f} s", flush=True)
    print("prepared", flush=True)


def encode_rows(docs: list[dict], chunk: list[int], encoder, cfg) -> list[dict]:
    """Documents `docs[k]` (k in chunk) split, encoded and tiled by the pipeline: per document its
    index, id, generator, units and unit embeddings (documents that give no graph are left out)."""
    from thinkprobe.graph import tile_and_type, units_of
    from thinkprobe.io import FieldMap, detect
    from thinkprobe.records import InputError, ThoughtGraph

    traces = [detect(docs[k], FieldMap(), "silver", k) for k in chunk]
    planned = [units_of(t, cfg) for t in traces]
    texts = [u.text for units, _ in planned for u in units]
    emb, tok = encoder.encode_and_count(texts)
    bounds = np.cumsum([0] + [len(units) for units, _ in planned])
    rows = []
    for k, t, p, a, b in zip(chunk, traces, planned, bounds, bounds[1:]):
        g = tile_and_type(t, p, emb[a:b], tok[a:b], cfg)
        if isinstance(g, InputError) or not isinstance(g, ThoughtGraph):
            continue
        rows.append({"doc_index": k, "doc_id": docs[k]["doc_id"], "generator": (docs[k].get("metadata") or {}).get("generator", ""),
                     "units": g.units, "emb": np.asarray(g.embeddings, np.float32)})
    return rows


FP32_WORDS = "fp32 on CPU, as the pipeline encodes on CPU"


# also the models trained before the precision was recorded: bf16 was prepare's default then
BF16_WORDS = "bf16 on CPU, training data only: the pipeline encodes in fp32 on CPU by default; cosine >= 0.9999 to fp32"


def prepared_precision(cache: str | Path) -> str | None:
    """The precision `prepare` recorded for a cache ("fp32" / "bf16"; None: not recorded)."""
    path = Path(cache) / "meta.json"
    return json.loads(path.read_text(encoding="utf-8"))["precision"] if path.exists() else None


def encoding_of(cache: str | Path) -> str | None:
    """How the prepared cache was encoded, in words for the model card (None: not recorded)."""
    precision = prepared_precision(cache)
    return None if precision is None else FP32_WORDS if precision == "fp32" else BF16_WORDS


def load_prepared(cache: str | Path) -> list[dict]:
    rows = []
    for path in sorted(Path(cache).glob("chunk_*.pkl")):
        with open(path, "rb") as f:
            rows += pickle.load(f)
    return sorted(rows, key=lambda r: r["doc_index"])


def held_out(doc_id: str, val_frac: float, val_start: float = 0.0) -> bool:
    """Whether a silver trace is held out: by a hash of its id, so the split does not depend on
    which traces are present. The held-out hashes are [val_start, val_start + val_frac) of the
    range (another val_start: another fold)."""
    import hashlib

    h = int(hashlib.sha1(doc_id.encode()).hexdigest()[:8], 16) % 1000
    return val_start * 1000 <= h < (val_start + val_frac) * 1000


def doc_question(doc: dict) -> str | None:
    """A ReasoningFlow document's question (what the pipeline reads from `raw_text.question`)."""
    return (doc.get("raw_text") or {}).get("question") or None


def question_dropped(doc_id: str, share: float) -> bool:
    """Whether a training trace is shown without its question (a share of them, by a hash of the id)."""
    import hashlib

    return int(hashlib.sha1(f"question:{doc_id}".encode()).hexdigest()[:8], 16) % 1000 < share * 1000


def examples(rows: list[dict], docs: list[dict], params, featurizer, log=print, retrieved=None, reranker=None,
             question=doc_question) -> list[dict]:
    """Per trace: the parser's features (trace_features) plus targets: arc (0/1 per candidate),
    label (PAIR_CLASSES index, 0 where no arc), types (TYPE_CLASSES index, -1 where no node), and
    every silver pair (pairs: (i, j), i < j). `retrieved`: per row, a learned retriever's output
    (`retriever.retrieve`), or None; `reranker`: the candidate reranker (`rerank.Reranker`), or None;
    `question(doc)`: the question the parser is shown (a featurizer with `question` reads it)."""
    from thinkprobe.evalgold import silver_labels
    from thinkprobe.link.parser import trace_features
    from thinkprobe.link.protocol import TYPE_CLASSES

    out = []
    cov = [0, 0, 0, 0, 0, 0]
    t0 = time.time()
    for n_row, r in enumerate(rows):
        units = r["units"]
        if len(units) < 2:
            continue
        doc = docs[r["doc_index"]]
        unit_types, labels = silver_labels(doc, units)
        f = trace_features(units, r["emb"], params, featurizer, None if retrieved is None else retrieved[n_row], reranker,
                           question(doc) if featurizer.question else None)
        lab = np.array([labels.get((int(a), int(b)), 0) for a, b in zip(f["i"], f["j"])], dtype=np.int64)
        cand = set(zip(f["i"].tolist(), f["j"].tolist()))
        for (a, b) in labels:
            cov[0] += 1
            cov[1] += (a, b) in cand
            cov[2] += b - a > 1
            cov[3] += b - a > 1 and (a, b) in cand
            cov[4] += b - a > 10
            cov[5] += b - a > 10 and (a, b) in cand
        out.append({**f, "doc_id": r["doc_id"], "doc_index": r["doc_index"], "generator": r["generator"], "units": units,
                    "emb": r["emb"], "label": lab, "pairs": np.array(sorted(labels), dtype=np.int64).reshape(-1, 2), "arc": (lab > 0).astype(np.float32),
                    "types": np.array([TYPE_CLASSES.index(t) if t else -1 for t in unit_types], dtype=np.int64)})
    log(f"{len(out)} traces featurised ({time.time() - t0:.0f} s); candidates cover {cov[1] / max(cov[0], 1):.1%} of "
        f"silver unit pairs, {cov[3] / max(cov[2], 1):.1%} of those more than one unit apart, {cov[5] / max(cov[4], 1):.1%} of "
        f"those more than 10 apart; {sum(len(x['i']) for x in out) / max(1, sum(len(x['units']) for x in out)):.1f} candidates per unit")
    return out


def batches(exs: list[dict], max_units: int, rng) -> list[list[int]]:
    """Traces grouped by length into padded batches of at most `max_units` units, in seeded order."""
    order = sorted(range(len(exs)), key=lambda k: (len(exs[k]["units"]), exs[k]["doc_id"]))
    groups: list[list[int]] = []
    for k in order:
        n = len(exs[k]["units"])
        if groups and (len(groups[-1]) + 1) * n <= max_units:
            groups[-1].append(k)
        else:
            groups.append([k])
    rng.shuffle(groups)
    return groups
