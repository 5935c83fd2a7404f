"""A profiling run: stream traces from the inputs in chunks, build Thought Graphs and indicators
per chunk, commit each chunk atomically under OUT/parts/, then assemble the output files and the
corpus-level profile. A killed run restarted with resume=True skips the committed chunks.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import itertools
import json
import os
import platform
import shutil
import sys
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from . import __version__
from .config import Config
from .encoder import Encoder, model_fingerprint
from .graph import build_graphs
from .indicators import CONTENT_TYPES, INDICATORS, compute_indicators
from .isolation import TraceLimits, marker_path, profile_chunk_isolated
from .link import Linker
from .trained_linker import load_linker, unit_typer
from .load import FieldMap, iter_traces
from .profile import DIMENSION_NAMES, Normalizer, group_profiles, profile_row
from .records import InputError, ThoughtGraph, Trace
from .redundancy import RedundancyParams, annotate_record, table_row, write_redundancy_tables
from .tables import csv_text, fmt_float, write_atomic
from .timing import StageTimes

__all__ = ["RunOptions", "run_profile", "graph_record", "OUTPUT_FILES"]

OUTPUT_FILES = ("graphs.jsonl", "indicators.csv", "profile.csv", "model_profiles.csv", "model_domain_profiles.csv",
                "errors.jsonl", "norms.json",
                "run.json", "stats.json", "stats.csv", "redundancy.csv", "model_redundancy.csv")


@dataclass
class RunOptions:
    inputs: Sequence[str]
    out_dir: str
    fields: FieldMap = field(default_factory=FieldMap)
    config_path: str | None = None
    encoder_path: str | None = None
    device: str = "auto"
    batch_size: int | None = None
    chunk_size: int = 64
    norms: str | None = None
    resume: bool = False
    progress: bool = True
    cache_dir: str | None = None  # cache of embeddings and model scores; None = no cache
    workers: int = 1  # processes for the per-trace CPU stages; outputs are the same for any number
    linker: str | None = None  # None = the trained default in models/; "cue"; "cross-encoder"; a folder
    linker_model: str | None = None  # the Hugging Face folder for --linker cross-encoder
    types: str = "head"  # provisional node types: trained type head or cue lexicon
    max_units: int | None = None  # per-trace limits over the config's `limits` (None: the config's)
    trace_timeout: float | None = None


def graph_record(g: ThoughtGraph, indicators: dict[str, float]) -> dict:
    t = g.trace
    fields_text = {}
    for s in t.sections:
        fields_text.setdefault(s.field, s.text)
    return {
        "trace_id": t.trace_id, "model": t.model, "domain": t.domain,
        "source": t.source, "record": t.record,
        "question": t.question, "gold_answer": t.gold_answer, "correct": t.correct,
        **({"tests": t.code_tests} if t.code_tests is not None else {}),
        "provenance": dict(t.provenance),
        "sections": [{"name": s.name, "field": s.field, "start": s.start, "end": s.end} for s in t.sections],
        "fields": fields_text,
        "units": [{"id": u.index, "section": u.section, "start": u.start, "end": u.end, "text": u.text,
                   "type": u.node_type, "segment": u.segment, "cues": list(u.cues),
                   "tokens": int(g.tokens[u.index])} for u in g.units],
        "edges": [{"src": e.src, "dst": e.dst, "type": e.edge_type, "polarity": e.polarity or None,
                   "score": e.score} for e in g.edges],
        "indicators": {k: float(fmt_float(v)) for k, v in indicators.items()},
    }


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for p in files:
        h.update(str(p.relative_to(path) if path.is_dir() else p.name).encode())
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def _manifest(opts: RunOptions, cfg: Config, encoder: Encoder, linker: Linker) -> dict:
    return {
        "thinkprobe": __version__,
        "config_digest": cfg.digest,
        "inputs": {str(p): _file_digest(Path(p)) for p in opts.inputs},
        "fields": asdict(opts.fields),
        "chunk_size": opts.chunk_size,
        "encoder": str(encoder.path),
        # a resumed run must not mix embeddings of other weights or of another device (fp16 on CUDA)
        "encoder_fingerprint": model_fingerprint(str(encoder.path), encoder.max_seq_length),
        "device": encoder.device,
        "linker": linker.name,
        "types": opts.types,
    }


@functools.lru_cache(maxsize=1)
def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, musl): nothing to trim
        return None


def _release_memory() -> None:
    """Hand the heap a finished chunk freed back to the OS (glibc's malloc_trim). Without it the
    allocator keeps fragments of earlier chunks, and resident memory creeps up over a long run."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def _prepare_parts(out: Path, manifest: dict, resume: bool) -> Path:
    parts = out / "parts"
    mpath = parts / "manifest.json"
    if resume and mpath.exists():
        old = json.loads(mpath.read_text(encoding="utf-8"))
        changed = [k for k in manifest if old.get(k) != manifest[k]]
        if changed:
            detail = "; ".join(f"{k}: {old.get(k)!r} -> {manifest[k]!r}" for k in changed)
            raise SystemExit(f"cannot resume {out}: the run changed ({detail}). Start afresh without --resume.")
        return parts
    if parts.exists():
        shutil.rmtree(parts)
    parts.mkdir(parents=True)
    write_atomic(mpath, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return parts


def _finish(result: ThoughtGraph | InputError, trace_id: str | None, indicator_cfg: dict,
            redundancy: RedundancyParams) -> str:
    """One output line: the graph with its indicators, or the error."""
    if isinstance(result, InputError):
        item = {"error": result.as_dict() | {"trace_id": trace_id}}
    else:
        ind = compute_indicators(result.arrays(), cluster_distance=indicator_cfg["cluster_distance"],
                                 cluster_exact_max=indicator_cfg["cluster_exact_max"])
        item = {"graph": annotate_record(graph_record(result, ind), redundancy)}
    return json.dumps(item, ensure_ascii=False) + "\n"


def _process_chunk(traces: list, cfg: Config, encoder: Encoder, linker: Linker, times: StageTimes,
                   pool: Executor | None = None, typer=None) -> str:
    good = [t for t in traces if isinstance(t, Trace)]
    built = iter(build_graphs(good, cfg, encoder, linker, times, pool, typer=typer))
    results = [next(built) if isinstance(item, Trace) else item for item in traces]
    ids = [getattr(item, "trace_id", None) for item in traces]
    mapper = partial(pool.map, chunksize=4) if pool is not None else map
    with times("indicators_serialise"):
        return "".join(mapper(_finish, results, ids, itertools.repeat(cfg["indicators"]),
                              itertools.repeat(RedundancyParams.from_config(cfg))))


def run_profile(opts: RunOptions, cfg: Config | None = None, linker: Linker | None = None,
                times: StageTimes | None = None) -> dict:
    """Profile every trace of the inputs into opts.out_dir; returns the run summary.
    `times`, when given, collects seconds per pipeline stage (for the benchmark)."""
    from tqdm import tqdm

    times = times if times is not None else StageTimes()
    cfg = cfg or Config.load(opts.config_path)
    limit_options = {"max_units": opts.max_units, "trace_timeout_s": opts.trace_timeout}
    limit_overrides = {k: v for k, v in limit_options.items() if v is not None}
    cfg = cfg.with_overrides({"limits": limit_overrides} if limit_overrides else {})
    limits = TraceLimits.from_config(cfg)
    enc_cfg = cfg["encoder"]
    encoder = Encoder(opts.encoder_path or enc_cfg["path"] or None, device=opts.device,
                      batch_size=opts.batch_size or enc_cfg["batch_size"], max_seq_length=enc_cfg["max_seq_length"],
                      cache_dir=opts.cache_dir)
    linker = linker or load_linker(opts.linker, cfg, model_dir=opts.linker_model, device=encoder.device,
                                   cache_dir=opts.cache_dir)
    typer = unit_typer(linker, opts.types, cache_dir=opts.cache_dir)
    out = Path(opts.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = _manifest(opts, cfg, encoder, linker)
    parts = _prepare_parts(out, manifest, opts.resume)

    def stream():
        for path in opts.inputs:
            yield from iter_traces(path, opts.fields)

    bar = tqdm(desc="profiling", unit="trace", disable=not opts.progress, file=sys.stderr)
    resumed = 0
    chunks = _chunks(stream(), opts.chunk_size)
    # forkserver, not fork: the parent may hold torch's thread pools, which do not survive a fork.
    pool = ProcessPoolExecutor(opts.workers, mp_context=get_context("forkserver")) if opts.workers > 1 else None
    with pool or contextlib.nullcontext():
        for k in itertools.count():
            with times("load"):
                chunk = next(chunks, None)
            if chunk is None:
                break
            part = parts / f"{k:06d}.jsonl"
            if part.exists():
                resumed += len(chunk)
            else:
                text = profile_chunk_isolated(
                    chunk, lambda items: _process_chunk(items, cfg, encoder, linker, times, pool, typer),
                    lambda items: _process_chunk(items, cfg, encoder, linker, times, None, typer), part, limits)
                with times("write"):
                    write_atomic(part, text)
                del text
                _release_memory()
            marker_path(part).unlink(missing_ok=True)  # committed: what was running is done
            bar.update(len(chunk))
    bar.close()
    with times("assemble"):
        result = assemble(out, cfg, encoder, linker, opts, resumed)
    if opts.cache_dir:
        result["cache"] = {"embeddings": encoder.cache_stats, "pair_scores": getattr(linker, "cache_stats", {}),
                           "type_scores": typer.cache_stats if typer is not None else {}}
    return result


def assemble(out: Path, cfg: Config, encoder: Encoder, linker: Linker, opts: RunOptions, resumed: int = 0) -> dict:
    """Join the committed chunks into the output files and compute the corpus profile."""
    parts = sorted((out / "parts").glob("[0-9]*.jsonl"))
    rows, errors, duplicates, redundancy_rows = [], [], [], []
    redundancy = RedundancyParams.from_config(cfg)
    unknown = {"model": 0, "domain": 0}
    sampled = []  # traces whose semantic_spread was clustered on samples (indicators._sampled_clusters)
    with open(out / "graphs.jsonl.tmp", "w", encoding="utf-8", newline="") as graphs:
        for part in parts:
            with open(part, encoding="utf-8") as f:
                for line in f:
                    item = json.loads(line)
                    if "error" in item:
                        errors.append(item["error"])
                        continue
                    g = item["graph"]
                    if "duplicate_of" in g["provenance"]:
                        duplicates.append({"trace_id": g["trace_id"], "duplicate_of": g["provenance"]["duplicate_of"],
                                           "file": g["source"], "record": g["record"]})
                    for key in unknown:
                        unknown[key] += g[key] == "unknown"
                    if sum(u["type"] in CONTENT_TYPES for u in g["units"]) > cfg["indicators"]["cluster_exact_max"]:
                        sampled.append(g["trace_id"])
                    graphs.write(json.dumps(g, ensure_ascii=False) + "\n")
                    redundancy_rows.append(table_row(g, redundancy))
                    rows.append({"trace_id": g["trace_id"], "model": g["model"], "domain": g["domain"],
                                 "units": len(g["units"]), "edges": len(g["edges"]),
                                 "tokens": sum(u["tokens"] for u in g["units"]), **g["indicators"]})
    os.replace(out / "graphs.jsonl.tmp", out / "graphs.jsonl")
    write_redundancy_tables(out, redundancy_rows)

    norms = Normalizer.load(opts.norms) if opts.norms else Normalizer().fit(rows)
    prof = []
    for r in rows:
        p = profile_row(norms.z(r))
        prof.append({"trace_id": r["trace_id"], "model": r["model"], "domain": r["domain"], **p})
    by_model = group_profiles(prof, ("model",))
    by_model_domain = group_profiles(prof, ("model", "domain"))

    head = ["trace_id", "model", "domain"]
    write_atomic(out / "indicators.csv", csv_text(rows, [*head, "units", "edges", "tokens", *INDICATORS]))
    write_atomic(out / "profile.csv", csv_text(prof, [*head, *DIMENSION_NAMES]))
    write_atomic(out / "model_profiles.csv", csv_text(by_model, ["model", "n", *DIMENSION_NAMES]))
    write_atomic(out / "model_domain_profiles.csv", csv_text(by_model_domain, ["model", "domain", "n", *DIMENSION_NAMES]))
    write_atomic(out / "errors.jsonl", "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in errors))
    write_atomic(out / "norms.json", json.dumps(norms.to_json(), indent=2) + "\n")

    run = {
        "thinkprobe": __version__,
        "inputs": [str(p) for p in opts.inputs],
        "norms": str(opts.norms) if opts.norms else "fit on this run",
        "config": cfg.data,
        "config_digest": cfg.digest,
        "encoder": {"path": str(encoder.path), "name": encoder.name, "max_seq_length": encoder.max_seq_length},
        "tokenizer": encoder.tokenizer_name,
        "linker": linker.name,
        "device": encoder.device,
        "versions": {"python": platform.python_version(), "torch": _version("torch"), "numba": _version("numba"),
                     "sentence_transformers": _version("sentence-transformers"), "transformers": _version("transformers")},
        "counts": {"traces": len(rows), "errors": len(errors), "duplicate_ids": len(duplicates),
                   "unknown_model": unknown["model"], "unknown_domain": unknown["domain"]},
        "duplicate_ids": duplicates,
        "semantic_spread_sampled": sampled,
    }
    write_atomic(out / "run.json", json.dumps(run, indent=2, ensure_ascii=False) + "\n")
    from .stats import write_stats

    write_stats(out)
    return {"out_dir": str(out), "traces": len(rows), "errors": len(errors), "resumed": resumed,
            "duplicates": len(duplicates), "unknown": unknown,
            "model_profiles": by_model, "model_domain_profiles": by_model_domain}


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"
