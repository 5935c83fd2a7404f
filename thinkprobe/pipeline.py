"""A profiling run: stream traces from the inputs (files, or records in memory) in chunks, build
Thought Graphs and indicators per chunk, commit each chunk atomically under OUT/parts/, then
assemble the output files and the corpus-level profile. A killed run restarted with resume=True
skips the committed chunks. The files a run writes are declared in thinkprobe.outputs.
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
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from .version import __version__
from .config import Config
from .encoder import Encoder, make_encoder, model_fingerprint
from .graph import build_graphs
from .indicators import CONTENT_TYPES, compute_indicators
from .isolation import TraceLimits, marker_path, profile_chunk_isolated
from .link import Linker, load_linker, unit_typer
from .load import FieldMap, Source, iter_inputs, source_path, unknown_fix
from .outputs import (ERRORS_FILE, GRAPHS_FILE, GRAPHS_PARQUET, INDICATORS_TABLE, MODEL_DOMAIN_PROFILES_TABLE,
                      MODEL_PROFILES_TABLE, NORMS_FILE, OUTPUT_FILES, PROFILE_TABLE, RUN_JSON, GraphsParquetWriter,
                      write_table)
from .cognitive_profile import Normalizer, group_profiles, profile_row
from .progress import Progress, ProgressTimes, count_inputs, select, selected_total
from .records import GraphRecord, InputError, ThoughtGraph, Trace, dump_graph_record, graph_record
from .provenance import file_digest, package_version
from .redundancy import RedundancyParams, annotate_record, table_row, write_redundancy_tables
from .tables import write_atomic
from .timing import StageTimes

__all__ = ["RunOptions", "run_profile", "run_traces", "assemble", "OUTPUT_FILES", "MEMORY_SOURCE"]

MEMORY_SOURCE = "<memory>"  # the source named in graph records and errors of records given in memory


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
    precision: str | None = None  # encoder dtype: auto | fp32 | bf16 | fp16; None = the config's
    records: Sequence[dict] | None = None  # records in memory, profiled before the input files
    limit: int | None = None  # profile only the first N records
    sample: int | None = None  # profile N records drawn at random (seeded), in input order
    seed: int = 0
    engine: str = "local"  # "local" (this process and its --workers) or "ray" (thinkprobe.ray_engine)
    ray_address: str | None = None  # with engine "ray": "auto" or an address; None starts a local Ray


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def _records_digest(records: Sequence[dict]) -> str:
    h = hashlib.sha256()
    for rec in records:
        h.update(json.dumps(rec, sort_keys=True, ensure_ascii=False, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def _manifest(opts: RunOptions, cfg: Config, encoder: Encoder, linker: Linker) -> dict:
    inputs = {str(p): file_digest(source_path(p)) for p in opts.inputs}
    if opts.records is not None:
        inputs = {MEMORY_SOURCE: _records_digest(opts.records), **inputs}
    return {
        "thinkprobe": __version__,
        "config_digest": cfg.digest,
        "inputs": inputs,
        "selection": {"limit": opts.limit, "sample": opts.sample, "seed": opts.seed if opts.sample is not None else None},
        "fields": asdict(opts.fields),
        "chunk_size": opts.chunk_size,
        "encoder": str(encoder.path),
        # a resumed run must not mix embeddings of other weights or of another device (fp16 on CUDA)
        "encoder_fingerprint": model_fingerprint(str(encoder.path), encoder.max_seq_length),
        "device": encoder.device,
        "precision": encoder.precision,
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
                   pool: Executor | None = None, typer=None, progress: Progress | None = None) -> str:
    good = [t for t in traces if isinstance(t, Trace)]
    built = iter(build_graphs(good, cfg, encoder, linker, times, pool, typer=typer))
    results = [next(built) if isinstance(item, Trace) else item for item in traces]
    ids = [getattr(item, "trace_id", None) for item in traces]
    mapper = partial(pool.map, chunksize=4) if pool is not None else map
    lines = []
    with times("indicators_serialise"):
        for line in mapper(_finish, results, ids, itertools.repeat(cfg["indicators"]),
                           itertools.repeat(RedundancyParams.from_config(cfg))):
            lines.append(line)
            if progress is not None:
                progress.traces(1)
    return "".join(lines)


def run_traces(opts: RunOptions) -> Iterator[Trace | InputError]:
    """Every trace of the run in input order, with ids unique across the run: the in-memory
    records (through the same detection as a file's, under the source "<memory>" and their
    index), then each input's; a bad record yields its InputError."""
    sources = ([Source(MEMORY_SOURCE, opts.fields, opts.records)] if opts.records is not None else []) + list(opts.inputs)
    return iter_inputs(sources, opts.fields)


def _count(opts: RunOptions) -> int:
    """Records in the run's inputs, before --limit / --sample."""
    return len(opts.records or ()) + count_inputs([source_path(p) for p in opts.inputs])


def run_config(opts: RunOptions, cfg: Config | None = None) -> Config:
    """The run's config: `cfg` (else opts.config_path over the defaults) with the per-trace limits
    given as options on top."""
    cfg = cfg or Config.load(opts.config_path)
    limit_options = {"max_units": opts.max_units, "trace_timeout_s": opts.trace_timeout}
    limit_overrides = {k: v for k, v in limit_options.items() if v is not None}
    return cfg.with_overrides({"limits": limit_overrides} if limit_overrides else {})


def run_profile(opts: RunOptions, cfg: Config | None = None, linker: Linker | None = None,
                times: StageTimes | None = None) -> dict:
    """Profile every trace of the inputs into opts.out_dir; returns the run summary.
    `times`, when given, collects seconds per pipeline stage (for the benchmark)."""
    if opts.engine != "local":
        raise ValueError(f"pipeline.run_profile is the local engine; for engine {opts.engine!r} call "
                         "thinkprobe.engine.run_profile")
    cfg = run_config(opts, cfg)
    times = times if times is not None else StageTimes()
    encoder = make_encoder(cfg, {"path": opts.encoder_path, "device": opts.device, "batch_size": opts.batch_size,
                                 "precision": opts.precision, "cache_dir": opts.cache_dir})
    linker = linker or load_linker(opts.linker, cfg, model_dir=opts.linker_model, device=encoder.device,
                                   cache_dir=opts.cache_dir)
    typer = unit_typer(linker, opts.types, cache_dir=opts.cache_dir)
    out = Path(opts.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = _manifest(opts, cfg, encoder, linker)
    parts = _prepare_parts(out, manifest, opts.resume)

    # Records counted cheaply (lines, Parquet metadata), only for the bar; a record giving several
    # traces (one per generation) makes the bar run past its total rather than cost a detection pass.
    total = _count(opts) if opts.progress else None
    progress = Progress(selected_total(total, opts.limit, opts.sample), enabled=opts.progress)
    encoder.on_encoded = progress.units
    try:
        resumed = _profile_chunks(opts, cfg, encoder, linker, typer, parts, ProgressTimes(times, progress), progress,
                                  select(run_traces(opts), opts.limit, opts.sample, opts.seed))
        with times("assemble"):
            result = assemble(out, cfg, encoder, linker, opts, resumed, progress)
    finally:
        encoder.on_encoded = None
        progress.close()
    if opts.cache_dir:
        result["cache"] = {"embeddings": encoder.cache_stats, "pair_scores": getattr(linker, "cache_stats", {}),
                           "type_scores": typer.cache_stats if typer is not None else {}}
    return result


def _profile_chunks(opts: RunOptions, cfg: Config, encoder: Encoder, linker: Linker, typer, parts: Path,
                    times, progress: Progress, traces: Iterable[Trace | InputError]) -> int:
    """Build and commit every chunk not committed yet; returns how many traces came from committed chunks."""
    resumed = 0
    limits = TraceLimits.from_config(cfg)
    chunks = _chunks(traces, opts.chunk_size)
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
                progress.traces(len(chunk))
            else:
                text = profile_chunk_isolated(
                    chunk, lambda items: _process_chunk(items, cfg, encoder, linker, times, pool, typer, progress),
                    lambda items: _process_chunk(items, cfg, encoder, linker, times, None, typer), part, limits,
                    preflight=lambda: encoder.model)
                with times("write"):
                    write_atomic(part, text)
                del text
                _release_memory()
            marker_path(part).unlink(missing_ok=True)  # committed: what was running is done
    return resumed


# ----------------------------------------------------------------------------- assembling the outputs


@dataclass
class Joined:
    """What joining the committed chunks gathers besides graphs.jsonl / graphs.parquet."""

    rows: list[dict] = field(default_factory=list)  # indicators.csv rows
    redundancy_rows: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    duplicates: list[dict] = field(default_factory=list)
    unknown: dict[str, int] = field(default_factory=lambda: {"model": 0, "domain": 0})
    # traces whose semantic_spread was clustered on samples (over indicators.cluster_exact_max content units)
    semantic_spread_sampled: list[str] = field(default_factory=list)


def indicator_row(g: GraphRecord) -> dict:
    """The indicators.csv row of a graph record."""
    return {"trace_id": g["trace_id"], "model": g["model"], "domain": g["domain"], "units": len(g["units"]),
            "edges": len(g["edges"]), "tokens": sum(u["tokens"] for u in g["units"]), **g["indicators"]}


def join_parts(out: Path, redundancy: RedundancyParams, cluster_exact_max: int) -> Joined:
    """Join the committed chunks, in order, into graphs.jsonl and graphs.parquet; collect the
    indicator and redundancy rows, the skipped records and the duplicate ids on the way."""
    joined = Joined()
    parquet = GraphsParquetWriter(out / GRAPHS_PARQUET)
    with open(out / (GRAPHS_FILE + ".tmp"), "w", encoding="utf-8", newline="") as graphs:
        for part in sorted((out / "parts").glob("[0-9]*.jsonl")):
            with open(part, encoding="utf-8") as f:
                for line in f:
                    item = json.loads(line)
                    if "error" in item:
                        joined.errors.append(item["error"])
                        continue
                    g: GraphRecord = item["graph"]
                    if "duplicate_of" in g["provenance"]:
                        joined.duplicates.append({"trace_id": g["trace_id"], "duplicate_of": g["provenance"]["duplicate_of"],
                                                  "file": g["source"], "record": g["record"]})
                    for key in joined.unknown:
                        joined.unknown[key] += g[key] == "unknown"
                    if sum(u["type"] in CONTENT_TYPES for u in g["units"]) > cluster_exact_max:
                        joined.semantic_spread_sampled.append(g["trace_id"])
                    graphs.write(dump_graph_record(g))
                    parquet.write(g)
                    joined.redundancy_rows.append(table_row(g, redundancy))
                    joined.rows.append(indicator_row(g))
    parquet.close()
    os.replace(out / (GRAPHS_FILE + ".tmp"), out / GRAPHS_FILE)
    return joined


def fit_norms(rows: Sequence[dict], norms_path: str | None) -> Normalizer:
    """The z-score reference: a saved norms.json, else this run's own indicators."""
    return Normalizer.load(norms_path) if norms_path else Normalizer().fit(rows)


def profile_rows(rows: Sequence[dict], norms: Normalizer) -> list[dict]:
    """profile.csv rows: the 5D profile of every trace."""
    return [{"trace_id": r["trace_id"], "model": r["model"], "domain": r["domain"], **profile_row(norms.z(r))}
            for r in rows]


def run_info(opts: RunOptions, cfg: Config, encoder: Encoder, linker: Linker, joined: Joined) -> dict:
    """run.json: what produced the outputs, and the counts."""
    inputs = ([MEMORY_SOURCE] if opts.records is not None else []) + [str(p) for p in opts.inputs]
    return {
        "thinkprobe": __version__,
        "inputs": inputs,
        **({"selection": {"limit": opts.limit, "sample": opts.sample, "seed": opts.seed}}
           if opts.limit is not None or opts.sample is not None else {}),
        "norms": str(opts.norms) if opts.norms else "fit on this run",
        "config": cfg.data,
        "config_digest": cfg.digest,
        "encoder": {"path": str(encoder.path), "name": encoder.name, "max_seq_length": encoder.max_seq_length,
                    "precision": encoder.precision},
        "tokenizer": encoder.tokenizer_name,
        "linker": linker.name,
        "device": encoder.device,
        "versions": {"python": platform.python_version(),
                     **{key: package_version(dist) or "not installed" for key, dist in (
                         ("torch", "torch"), ("numba", "numba"), ("sentence_transformers", "sentence-transformers"),
                         ("transformers", "transformers"))}},
        "counts": {"traces": len(joined.rows), "errors": len(joined.errors), "duplicate_ids": len(joined.duplicates),
                   "unknown_model": joined.unknown["model"], "unknown_domain": joined.unknown["domain"]},
        "duplicate_ids": joined.duplicates,
        "semantic_spread_sampled": joined.semantic_spread_sampled,
        "unknown_fix": {key: unknown_fix(key) for key, count in joined.unknown.items() if count},
    }


def write_outputs(out: Path, joined: Joined, prof: list[dict], by_model: list[dict], by_model_domain: list[dict],
                  norms: Normalizer, run: dict) -> None:
    """The per-trace and per-model tables (with their Parquet twins), errors, norms and run.json."""
    write_table(out, INDICATORS_TABLE, joined.rows)
    write_table(out, PROFILE_TABLE, prof)
    write_table(out, MODEL_PROFILES_TABLE, by_model)
    write_table(out, MODEL_DOMAIN_PROFILES_TABLE, by_model_domain)
    write_atomic(out / ERRORS_FILE, "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in joined.errors))
    write_atomic(out / NORMS_FILE, json.dumps(norms.to_json(), indent=2) + "\n")
    write_atomic(out / RUN_JSON, json.dumps(run, indent=2, ensure_ascii=False) + "\n")


def assemble(out: Path, cfg: Config, encoder: Encoder, linker: Linker, opts: RunOptions, resumed: int = 0,
             progress: Progress | None = None) -> dict:
    """Join the committed chunks into the output files, compute the corpus profile and the statistics."""
    from .stats import write_stats

    stage = progress.stage if progress is not None else (lambda name: None)
    stage("assemble: joining chunks")
    joined = join_parts(out, RedundancyParams.from_config(cfg), cfg["indicators"]["cluster_exact_max"])
    stage("assemble: redundancy tables")
    write_redundancy_tables(out, joined.redundancy_rows)
    stage("assemble: norms and profiles")
    norms = fit_norms(joined.rows, opts.norms)
    prof = profile_rows(joined.rows, norms)
    by_model = group_profiles(prof, ("model",))
    by_model_domain = group_profiles(prof, ("model", "domain"))
    stage("assemble: writing tables")
    write_outputs(out, joined, prof, by_model, by_model_domain, norms, run_info(opts, cfg, encoder, linker, joined))
    stage("stats")
    write_stats(out)
    return {"out_dir": str(out), "traces": len(joined.rows), "errors": len(joined.errors), "resumed": resumed,
            "duplicates": len(joined.duplicates), "unknown": joined.unknown,
            "model_profiles": by_model, "model_domain_profiles": by_model_domain}

