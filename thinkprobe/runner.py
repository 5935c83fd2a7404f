"""What both engines share (thinkprobe.pipeline runs locally, thinkprobe.ray_engine on a Ray
cluster): the run's config and traces, the chunks and their commit folder (OUT/parts/, guarded by a
manifest for --resume), the output line of one trace, and the assembly of the committed chunks into
the output files and the corpus-level profile. The files a run writes are declared in
thinkprobe.outputs.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import itertools
import json
import os
import platform
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from .version import __version__
from .accounting import KEPT_LONG, NO_THINK, SCAN_PREFIX, Accounting, UntaggedAnswers, answer_scan
from .config import Config, IndicatorSettings
from .encoder import Encoder, model_fingerprint
from .indicators import CONTENT_TYPES, compute_indicators
from .link import Linker, Typer, bind_encoder, load_linker, read_agreement, unit_typer
from .io import InputLimits, Source, count_records, iter_inputs, parse_source, source_path, unknown_fix
from .options import RunOptions
from .outputs import (ERRORS_FILE, GRAPHS_FILE, GRAPHS_PARQUET, INDICATORS_TABLE, MODEL_DOMAIN_PROFILES_TABLE,
                      MODEL_GROUP_PROFILES_TABLE, MODEL_PROFILES_TABLE, NORMS_FILE, PROFILE_TABLE, RUN_JSON,
                      GraphsParquetWriter, write_table)
from .cognitive_profile import Normalizer, group_profiles, profile_row
from .progress import Progress
from .records import (GraphRecord, InputError, Section, ThoughtGraph, Trace, answer_cut, dump_graph_record, graph_record,
                      group_of, source_id)
from .provenance import file_digest, package_version
from .redundancy import (RedundancyParams, annotate_record, code_not_run, not_run_line, table_row,
                         write_redundancy_tables)
from .redundancy.analyses import Analyses
from .tables import fresh_tmp, write_atomic

__all__ = ["MEMORY_SOURCE", "chunks", "run_config", "run_traces", "run_linker", "run_typer", "total_records", "manifest", "prepare_parts",
           "part_path", "finish_line", "release_memory", "assemble", "warm_up"]

MEMORY_SOURCE = "<memory>"  # the source named in graph records and errors of records given in memory


def chunks(items: Iterable, size: int) -> Iterator[list]:
    """`items` in lists of `size` (the last one shorter)."""
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def records_digest(records: Sequence[dict]) -> str:
    h = hashlib.sha256()
    for rec in records:
        h.update(json.dumps(rec, sort_keys=True, ensure_ascii=False, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def manifest(opts: RunOptions, cfg: Config, encoder: Encoder, linker: Linker) -> dict:
    """What a resumed run must share with the run that committed the chunks (OUT/parts/manifest.json)."""
    inputs = {str(p): file_digest(source_path(p)) for p in opts.inputs}
    if opts.records is not None:
        inputs = {MEMORY_SOURCE: records_digest(opts.records), **inputs}
    return {
        "thinkprobe": __version__,
        "config_digest": cfg.digest,
        "inputs": inputs,
        "selection": {"limit": opts.limit, "sample": opts.sample, "seed": opts.seed if opts.sample is not None else None},
        "fields": asdict(opts.field_map),
        "chunk_size": opts.chunk_size,
        "encoder": str(encoder.path),
        # a resumed run must not mix embeddings of other weights or of another device (fp16 on CUDA)
        "encoder_fingerprint": model_fingerprint(str(encoder.path), encoder.max_seq_length),
        "device": encoder.device,
        "precision": encoder.precision,
        "linker": linker.name,
        "types": opts.types,
        "graph_source": opts.graph_source,
    }


@functools.lru_cache(maxsize=1)
def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, musl): nothing to trim
        return None


def release_memory() -> None:
    """Hand the heap a finished chunk freed back to the OS (glibc's malloc_trim). Without it the
    allocator keeps fragments of earlier chunks, and resident memory creeps up over a long run."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def part_path(parts: Path, k: int) -> Path:
    """The file chunk k of a run is committed to."""
    return parts / f"{k:06d}.jsonl"


def prepare_parts(out: Path, manifest: dict, resume: bool) -> Path:
    parts = out / "parts"
    mpath = parts / "manifest.json"
    if parts.is_symlink():  # not followed: nothing is deleted or written where it points (nor resumed there)
        parts.unlink()
    if resume and mpath.exists():
        try:
            old = json.loads(mpath.read_text(encoding="utf-8"))
            if not isinstance(old, dict):
                raise ValueError("not a JSON object")
        except (ValueError, OSError) as exc:  # was a JSONDecodeError traceback
            raise SystemExit(f"cannot resume {out}: {mpath} is damaged ({exc}). Start afresh without --resume.") from None
        changed = [k for k in manifest if old.get(k) != manifest[k]]
        if changed:
            detail = "; ".join(f"{k}: {old.get(k)!r} -> {manifest[k]!r}" for k in changed)
            raise SystemExit(f"cannot resume {out}: the run changed ({detail}). Start afresh without --resume.")
        return parts
    if parts.exists():  # the chunks of an earlier run go; a file of the user's there stays
        for f in parts.iterdir():
            if f.is_file() and PART_FILE.fullmatch(f.name):
                f.unlink()
    parts.mkdir(parents=True, exist_ok=True)
    write_atomic(mpath, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return parts


# What the tool writes in OUT/parts/: committed chunks, their in-progress markers, the manifest (and the
# .tmp files of writes in progress).
PART_FILE = re.compile(r"(?:\d{6}\.(?:jsonl|running)|manifest\.json)(?:\.tmp)?")


def finish_line(result: ThoughtGraph | InputError, trace_id: str | None, indicators: IndicatorSettings | None,
                redundancy: RedundancyParams | None) -> str:
    """One output line: the graph with its indicators, or the error. A graph's line opens with what
    the join's scan for answers without thinking reads (accounting.answer_scan) and its failure_risk
    (for anomalies.csv), and ends with the graph, whose JSON text the join copies to graphs.jsonl."""
    if isinstance(result, InputError):
        item = {"error": result.as_dict() | {"trace_id": trace_id}}
    else:
        from .risk import failure_risk, shipped_model

        ind = compute_indicators(result.arrays(), cluster_distance=indicators.cluster_distance,
                                 cluster_exact_max=indicators.cluster_exact_max)
        g = annotate_record(graph_record(result, ind), redundancy)
        model = shipped_model()  # none installed: no failure_risk key; a trace too short for it: null
        item = {"scan": answer_scan(g), **({"failure_risk": failure_risk(g, model)} if model is not None else {}),
                "graph": g}
    return json.dumps(item, ensure_ascii=False) + "\n"


GRAPH_KEY = ', "graph": '  # the first one on a line that opens with accounting.SCAN_PREFIX is the graph's key


def _graph_text(line: str) -> str | None:
    """The graphs.jsonl line of a part line's graph, its JSON text as finish_line wrote it (what
    dump_graph_record would write again), or None for a line of an older layout."""
    if not line.startswith(SCAN_PREFIX) or not line.endswith("}\n"):
        return None
    return line[line.index(GRAPH_KEY) + len(GRAPH_KEY):-2] + "\n"


def run_traces(opts: RunOptions, cfg: Config | None = None) -> Iterator[Trace | InputError]:
    """Every trace of the run in input order, with ids unique across the run: the in-memory
    records (through the same detection as a file's, under the source "<memory>" and their
    index), then each input's; a bad record, or one over the size limits of `cfg` (the run's
    config, run_config), yields its InputError."""
    sources = ([Source(MEMORY_SOURCE, opts.field_map, opts.records)] if opts.records is not None else []) + list(opts.inputs)
    return iter_inputs(sources, opts.field_map, graphs=opts.graph_source == "input",
                       limits=InputLimits.from_config(cfg or run_config(opts)))


class RecordGraphs:
    """The linker of a `--graph-source input` run: every trace brings its own edges and types
    (`Trace.given`, set by thinkprobe.io.graphs), so nothing is linked or typed by a model."""

    name = "input"
    kind = "the graphs the records carry (--graph-source input)"
    structural_types = False
    cache_stats: dict[str, int] = {}

    def link(self, batch, mapper=map):
        raise RuntimeError("--graph-source input: a trace without its own graph reached the linker")

    def candidates(self, item):
        return [np.zeros(0, np.int64) for _ in item.units]


def run_linker(opts: RunOptions, cfg: Config, device: str, cache_dir: str | None) -> Linker:
    """The linker a run uses (both engines): the one --linker names, or none for --graph-source input."""
    if opts.graph_source == "input":
        return RecordGraphs()
    return load_linker(opts.linker, cfg, model_dir=opts.linker_model, device=device, cache_dir=cache_dir)


def warm_up(encoder: Encoder | None = None, linker: Linker | None = None, segmenter: bool = False,
            compile_for: Config | None = None, typer: Typer | None = None) -> None:
    """Load now what a run loads on first use (spaCy's sentence splitter, the encoder's weights, the
    linker's and the typer's models) and, with `compile_for` (the run's config), compile the numba routines
    (`compile_routines`), so that neither is charged to the time limit of the first traces of a
    process. Both engines call it only under a --trace-timeout: without one, a run whose embeddings
    and scores all come from its caches loads no model. The linker is bound to the encoder first, as
    graph.build_graphs binds it, so that a reader loads onto the run's encoder (device, precision)."""
    if segmenter:
        from .segment import load_sentencizer

        load_sentencizer()
    if encoder is not None:
        bind_encoder(linker, encoder)
        encoder.model  # noqa: B018 - the property loads the weights
    for model in (linker, typer):
        warm = getattr(model, "warm", None)
        if warm is not None:
            warm()
    if compile_for is not None:
        compile_routines(compile_for, linker)


def warm_process(cfg: Config) -> None:
    """A worker process's warm-up (the local engine's --workers pool, under a time limit): spaCy
    and the compiled routines, before any chunk's time limit starts."""
    warm_up(segmenter=True, compile_for=cfg)


# A short synthetic trace: enough units for TextTiling's depth scores (twice min_block_units and more).
_WARM_TEXT = " ".join(f"Step {k}: we add {k} and {k + 1}, which gives {2 * k + 1}." for k in range(16))
_compiled: set[str] = set()


def compile_routines(cfg: Config, linker: Linker | None = None) -> None:
    """Run the compiled (numba) routines once, on a synthetic trace with random embeddings, in this
    process: TextTiling, the candidates, the parser's pair features, the indicators. Their first
    compilation in a fresh installation takes seconds (cached on disk afterwards), which a tight
    --trace-timeout would otherwise charge to the first traces. No model runs and no cache is read
    or written; once per process and linker."""
    key = type(linker).__name__ if linker is not None else ""
    if key in _compiled:
        return
    from .graph import tile_and_type, units_of
    from .link.candidates import candidate_pairs

    trace = Trace("warm-up", "", "", (Section("reasoning", "response", _WARM_TEXT, 0, len(_WARM_TEXT)),))
    planned = units_of(trace, cfg)
    emb = np.random.default_rng(0).standard_normal((len(planned[0]), getattr(linker, "embedding_dim", 384)))
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).astype(np.float32)
    graph = tile_and_type(trace, planned, emb, np.full(len(emb), 12, np.int32), cfg)
    candidate_pairs(emb, cfg.link.window, cfg.link.top_k)
    features = getattr(linker, "features", None)
    if features is not None:
        features([(graph.units, emb)])
    compute_indicators(graph.arrays(), cluster_distance=cfg.indicators.cluster_distance,
                       cluster_exact_max=cfg.indicators.cluster_exact_max)
    _compiled.add(key)


def run_typer(opts: RunOptions, linker: Linker, cache_dir: str | None) -> Typer | None:
    """How the run's units get their provisional types (--types); none for --graph-source input."""
    return None if opts.graph_source == "input" else unit_typer(linker, opts.types, cache_dir=cache_dir)


def total_records(opts: RunOptions, cfg: Config | None = None) -> int:
    """Records in the run's inputs, before --limit / --sample."""
    limits = InputLimits.from_config(cfg or run_config(opts))
    sources = [parse_source(p, opts.field_map) for p in opts.inputs]
    return len(opts.records or ()) + sum(
        count_records(s.path, limits, keep=s.fields.matches_path if s.fields.path_pattern else None) for s in sources)


def field_warnings(opts: RunOptions) -> list:
    """Named fields (--*-field) that none of the first records of an input has (thinkprobe.io.check)."""
    from .io.check import check_fields

    return check_fields(list(opts.inputs), opts.field_map, records=opts.records, out_dir=opts.out_dir)


def run_config(opts: RunOptions, cfg: Config | None = None) -> Config:
    """The run's config: `cfg` (else opts.config over the defaults) with the per-trace limits
    given as options on top (checked: a bad limits.oversize or redundancy.unanswered is a ConfigError),
    whether code answers are run (the option alone decides) and, given --unanswered, how a trace with no
    final answer is graded."""
    cfg = cfg or Config.load(opts.config)
    limit_options = {"max_units": opts.max_units, "max_repeat": opts.max_repeat, "trace_timeout_s": opts.trace_timeout,
                     "max_record_mb": opts.max_record_mb, "max_file_mb": opts.max_file_mb,
                     "max_inflate_ratio": opts.max_inflate_ratio, "max_trace_chars": opts.max_trace_chars,
                     "oversize": opts.oversize}
    limit_overrides = {k: v for k, v in limit_options.items() if v is not None}
    code = {"redundancy": {"allow_code_execution": bool(opts.allow_code_execution),
                           **({"unanswered": opts.unanswered} if opts.unanswered is not None else {})}}
    cfg = cfg.with_overrides({"limits": limit_overrides, **code} if limit_overrides else code)
    InputLimits.from_config(cfg)
    RedundancyParams.from_config(cfg)  # a bad redundancy.unanswered: a ConfigError
    return cfg


# ----------------------------------------------------------------------------- assembling the outputs


@dataclass
class Joined:
    """What joining the committed chunks gathers besides graphs.jsonl / graphs.parquet."""

    rows: list[dict] = field(default_factory=list)  # indicators.csv rows
    analyses: Analyses = field(default_factory=Analyses)  # redundancy.csv rows and CoTJudger's analyses
    errors: int = 0  # skipped records, written to errors.jsonl as they are joined (never all held)
    duplicates: list[dict] = field(default_factory=list)
    unknown: dict[str, int] = field(default_factory=lambda: {"model": 0, "domain": 0})
    unknown_sources: set[str] = field(default_factory=set)  # the files of the traces without a model
    untagged_by_model: dict[str, int] = field(default_factory=dict)  # traces per model whose reasoning is untagged
    untagged_long_by_model: dict[str, int] = field(default_factory=dict)  # of those, kept for their length (KEPT_LONG)
    truncated_by_model: dict[str, int] = field(default_factory=dict)  # traces per model cut off before their reasoning ended
    answer_cut_by_model: dict[str, int] = field(default_factory=dict)  # traces per model whose answer an API cut at its limit
    summarised_by_model: dict[str, int] = field(default_factory=dict)  # traces per model whose reasoning is a summary
    # traces per model with words before their reasoning's opening tag, in no section (provenance before_reasoning)
    before_reasoning_by_model: dict[str, int] = field(default_factory=dict)
    answer_units_by_model: dict[str, dict[str, int]] = field(default_factory=dict)  # {"answer": units there, "units": all}
    code_not_run: int = 0  # traces whose final answer is code left ungraded: code execution was off
    reasoning_is_code: int = 0  # traces whose reasoning is a program, not prose (provenance reasoning_is_code)
    accounting: Accounting = field(default_factory=Accounting)  # coverage per file and model, grades
    groups: dict[str, int] = field(default_factory=dict)  # traces per group (the third design factor)
    group_from: dict[str, int] = field(default_factory=dict)  # traces per place the group was read from
    # traces whose semantic_spread was clustered on samples (over indicators.cluster_exact_max content units)
    semantic_spread_sampled: list[str] = field(default_factory=list)
    # failure_risk per trace as the chunks computed it; None when a chunk had none (no model installed,
    # or chunks written before 2026-12-06): anomalies then computes it from graphs.jsonl
    risks: dict[str, float] | None = field(default_factory=dict)
    # per trace: whether the failure-risk model was trained on it (risk.trace_key in its training keys)
    in_sample: dict[str, bool] = field(default_factory=dict)

    @property
    def untagged(self) -> int:
        """Traces whose reasoning is untagged whole text (provenance "untagged"), all models."""
        return sum(self.untagged_by_model.values())


def indicator_row(g: GraphRecord) -> dict:
    """The indicators.csv row of a graph record."""
    return {"trace_id": g["trace_id"], "model": g["model"], "domain": g["domain"], "group": group_of(g),
            "source_id": source_id(g),
            "units": len(g["units"]),
            "edges": len(g["edges"]), "tokens": sum(u["tokens"] for u in g["units"]), **g["indicators"]}


def join_parts(out: Path, redundancy: RedundancyParams, cluster_exact_max: int, untagged: str = "profile") -> Joined:
    """Join the committed chunks, in order, into graphs.jsonl and graphs.parquet, and the skipped
    records into errors.jsonl.tmp (put in place by write_outputs); collect the indicator and
    redundancy rows, the coverage counts and the duplicate ids on the way. Errors are streamed to
    the file, not held: a run of millions of bad records stays small in memory. A model's answers
    without thinking are skipped, or renamed under ``untagged="separate"`` (thinkprobe.accounting)."""
    from .risk import trace_key, training_keys

    joined = Joined()
    trained = training_keys()
    parquet = GraphsParquetWriter(out / GRAPHS_PARQUET)
    part_files = sorted((out / "parts").glob("[0-9]*.jsonl"))
    answers = UntaggedAnswers.scan(part_files)
    with open(fresh_tmp(out / GRAPHS_FILE), "x", encoding="utf-8", newline="") as graphs, \
            open(fresh_tmp(out / ERRORS_FILE), "x", encoding="utf-8", newline="") as errors:
        for part in part_files:
            with open(part, encoding="utf-8") as f:
                for line in f:
                    item = json.loads(line)
                    g: GraphRecord | None = item.get("graph")
                    as_written = g
                    if g is not None and (kept := answers.apply(g, untagged)) is not g:
                        if kept is None:
                            item = {"error": answers.error(g)}
                        else:  # kept for its length: the chunk read its closing unit as the final answer
                            g = annotate_record(kept, redundancy) if kept["provenance"].get("kept_long") else kept
                    if "error" in item:
                        errors.write(json.dumps(item["error"], ensure_ascii=False) + "\n")
                        joined.errors += 1
                        joined.accounting.skipped(item["error"])
                        continue
                    if joined.risks is not None and "failure_risk" not in item:
                        joined.risks = None
                    elif joined.risks is not None:
                        joined.risks[g["trace_id"]] = item["failure_risk"]
                    if trained:
                        joined.in_sample[g["trace_id"]] = trace_key(g) in trained
                    if "duplicate_of" in g["provenance"]:
                        joined.duplicates.append({"trace_id": g["trace_id"], "duplicate_of": g["provenance"]["duplicate_of"],
                                                  "file": g["source"], "record": g["record"]})
                    for key in joined.unknown:
                        joined.unknown[key] += g[key] == "unknown"
                    if g["model"] == "unknown":
                        joined.unknown_sources.add(g["source"])
                    if g["provenance"].get("untagged"):
                        joined.untagged_by_model[g["model"]] = joined.untagged_by_model.get(g["model"], 0) + 1
                        if g["provenance"].get("kept_long"):  # marked so by answers.apply above
                            joined.untagged_long_by_model[g["model"]] = joined.untagged_long_by_model.get(g["model"], 0) + 1
                    if g["provenance"].get("truncated") and not g["provenance"].get("kept_long"):  # counted apart
                        joined.truncated_by_model[g["model"]] = joined.truncated_by_model.get(g["model"], 0) + 1
                    elif answer_cut(g["provenance"]):
                        joined.answer_cut_by_model[g["model"]] = joined.answer_cut_by_model.get(g["model"], 0) + 1
                    tally = joined.answer_units_by_model.setdefault(g["model"], {"answer": 0, "units": 0})
                    tally["answer"] += sum(u.get("section") == "answer" for u in g["units"])
                    tally["units"] += len(g["units"])
                    if g["provenance"].get("summarised"):
                        joined.summarised_by_model[g["model"]] = joined.summarised_by_model.get(g["model"], 0) + 1
                    if g["provenance"].get("before_reasoning"):
                        joined.before_reasoning_by_model[g["model"]] = joined.before_reasoning_by_model.get(g["model"], 0) + 1
                    joined.code_not_run += code_not_run(g)
                    joined.reasoning_is_code += bool(g["provenance"].get("reasoning_is_code"))
                    if (group := group_of(g)) is not None:
                        joined.groups[group] = joined.groups.get(group, 0) + 1
                        origin = str(g["provenance"].get("group_from") or "graph record")
                        joined.group_from[origin] = joined.group_from.get(origin, 0) + 1
                    if sum(u["type"] in CONTENT_TYPES for u in g["units"]) > cluster_exact_max:
                        joined.semantic_spread_sampled.append(g["trace_id"])
                    joined.accounting.trace(g)
                    graphs.write((g is as_written and _graph_text(line)) or dump_graph_record(g))
                    parquet.write(g)
                    joined.analyses.add(g, table_row(g, redundancy))
                    joined.rows.append(indicator_row(g))
    parquet.close()
    os.replace(out / (GRAPHS_FILE + ".tmp"), out / GRAPHS_FILE)
    return joined


def duplicates_of_undrawn(joined: Joined) -> int:
    """Renamed repeats whose original id is no trace of this run: ids are claimed over every record of
    the inputs (so a trace keeps its id whatever --sample or --limit draws), and the record that kept
    the id may not have been drawn."""
    ids = {row["trace_id"] for row in joined.rows}
    return sum(d["duplicate_of"] not in ids for d in joined.duplicates)


def files_not_drawn(opts: RunOptions, joined: Joined) -> list[str]:
    """The inputs' data files from which --sample (or --limit) took no record: a sample can miss the one
    file that holds the traces (Schoenfeld et al.'s folder), and the coverage lists only files read."""
    from .io.formats import source_files

    read = {row["file"] for row in joined.accounting.coverage()["by_file"]}
    out = []
    for spec in opts.inputs:
        src = parse_source(spec, opts.field_map)
        out += [str(f) for f in source_files(Path(src.path), src.fields.matches_path)
                if str(f) not in read and f.stat().st_size > 0]  # an empty file had nothing to draw
    return out


def fit_norms(rows: Sequence[dict], norms_path: str | None) -> Normalizer:
    """The z-score reference: a saved norms.json, else this run's own indicators."""
    return Normalizer.load(norms_path) if norms_path else Normalizer().fit(rows)


def profile_rows(rows: Sequence[dict], norms: Normalizer) -> list[dict]:
    """profile.csv rows: the 5D profile of every trace."""
    return [{"trace_id": r["trace_id"], "model": r["model"], "domain": r["domain"], "group": r.get("group"),
             "source_id": r.get("source_id"),
             **profile_row(norms.z(r))}
            for r in rows]


# Joined's counts per model that run.json and the run's summary both carry, under these names
BY_MODEL_COUNTS = ("truncated_by_model", "answer_cut_by_model", "summarised_by_model", "before_reasoning_by_model",
                   "answer_units_by_model")


def _by_model_counts(joined: Joined) -> dict[str, dict]:
    """BY_MODEL_COUNTS of `joined`, each sorted by model."""
    return {key: dict(sorted(getattr(joined, key).items())) for key in BY_MODEL_COUNTS}


def run_info(opts: RunOptions, cfg: Config, encoder: Encoder, linker: Linker, joined: Joined) -> dict:
    """run.json: what produced the outputs, and the counts."""
    inputs = ([MEMORY_SOURCE] if opts.records is not None else []) + [str(p) for p in opts.inputs]
    return {
        "thinkprobe": __version__,
        "inputs": inputs,
        **({"selection": {"limit": opts.limit, "sample": opts.sample, "seed": opts.seed}}
           if opts.limit is not None or opts.sample is not None else {}),
        "norms": str(opts.norms) if opts.norms else "fit on this run",
        # which norms they were, wherever the path pointed later
        **({"norms_sha256": hashlib.sha256(Path(opts.norms).read_bytes()).hexdigest()} if opts.norms else {}),
        "config": cfg.data,
        "config_digest": cfg.digest,
        "encoder": {"path": str(encoder.path), "name": encoder.name, "max_seq_length": encoder.max_seq_length,
                    "precision": encoder.precision},
        "tokenizer": encoder.tokenizer_name,
        "graph_source": opts.graph_source,
        "linker": linker.name,
        **({"linker_agreement": linker_agreement(opts, linker)} if opts.graph_source != "input" else {}),
        "device": encoder.device,
        "versions": {"python": platform.python_version(),
                     **{key: package_version(dist) or "not installed" for key, dist in (
                         ("torch", "torch"), ("numba", "numba"), ("sentence_transformers", "sentence-transformers"),
                         ("transformers", "transformers"))}},
        "counts": {"traces": len(joined.rows), "errors": joined.errors, "duplicate_ids": len(joined.duplicates),
                   "unknown_model": joined.unknown["model"], "unknown_domain": joined.unknown["domain"],
                   "untagged": joined.untagged, "code_not_run": joined.code_not_run,
                   "reasoning_is_code": joined.reasoning_is_code,
                   "truncated": sum(joined.truncated_by_model.values()),
                   "answer_cut": sum(joined.answer_cut_by_model.values())},
        **_by_model_counts(joined),
        "untagged": {"policy": opts.untagged, "profiled": joined.untagged,
                     "by_model": dict(sorted(joined.untagged_by_model.items())),
                     "kept_long_by_model": dict(sorted(joined.untagged_long_by_model.items())),
                     "answers_without_thinking": sum(m["reasons"].get("answer without thinking", 0)
                                                     for m in joined.accounting.coverage()["by_model"]),
                     "what": "traces whose reasoning is a whole text with no reasoning field and no reasoning tags "
                             "(provenance untagged: true); --untagged skip leaves them out. Such a text of a model "
                             "whose other records carry reasoning, shorter than its median reasoning, is its answer "
                             f"without thinking: skipped, or with --untagged separate profiled as <model>{NO_THINK}; kept_long_by_model: "
                             f"those {KEPT_LONG}"},
        "code_execution": {"allowed": bool(opts.allow_code_execution), "not_run": joined.code_not_run,
                           **({"how": not_run_line(joined.code_not_run)} if joined.code_not_run else {})},
        "coverage": joined.accounting.coverage(),
        **({"files_not_drawn": files_not_drawn(opts, joined)} if opts.sample is not None or opts.limit is not None else {}),
        "coverage_warnings": joined.accounting.warnings(),
        "short_trace_warnings": joined.accounting.short_warnings(),
        "loop_warnings": joined.accounting.loop_warnings(),
        "grades": joined.accounting.grade_summary(),
        "group": group_info(joined),
        "field_warnings": [w.as_dict() for w in field_warnings(opts)],
        "duplicate_ids": joined.duplicates,
        "semantic_spread_sampled": joined.semantic_spread_sampled,
        "unknown_fix": {key: unknown_fix(key, sorted(joined.unknown_sources) if key == "model" else ())
                        for key, count in joined.unknown.items() if count},
    }


def linker_agreement(opts: RunOptions, linker: Linker) -> dict:
    """run.json's account of how well the profile of the linker's graphs agrees with people's graphs of
    the same traces: its model folder's agreement.json (scripts/linker_agreement.py), measured once for
    those weights, not on this run; `measured` false, with why, where there is none for this run."""
    folder = getattr(linker, "model_dir", None)
    data = read_agreement(folder) if folder is not None else None
    if data is None:
        return {"linker": linker.name, "measured": False,
                "why": "no agreement.json measured on these weights in the linker's model folder "
                       "(scripts/linker_agreement.py writes one)"}
    if opts.types != data["types"]:
        return {"linker": linker.name, "measured": False,
                "why": f"measured with {data['types']} types; this run typed its units by {opts.types}"}
    return {"linker": linker.name, "measured": True, **data}


def _sync_replace(tmp: Path, path: Path) -> None:
    """Put a finished temporary file in place, as write_atomic does (its bytes on disk first)."""
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def group_info(joined: Joined) -> dict:
    """run.json's account of the third grouping factor: traces per group, where the groups were read
    from, and how many traces have none (they take no part in the group statistics)."""
    with_group = sum(joined.groups.values())
    return {"groups": dict(sorted(joined.groups.items())), "from": dict(sorted(joined.group_from.items())),
            "traces_with_group": with_group, "traces_without_group": len(joined.rows) - with_group,
            "what": "a design factor beside model and domain (--group-field, --group, (?P<group>...) in "
                    "--path-pattern); tested, tabled and reported as the domain is, over the traces that have one"}


def model_group_profiles(prof: Sequence[dict]) -> list[dict]:
    """model_group_profiles.csv rows: the mean profile per model and group, over traces with a group."""
    return group_profiles([r for r in prof if r.get("group") is not None], ("model", "group"))


def write_outputs(out: Path, joined: Joined, prof: list[dict], by_model: list[dict], by_model_domain: list[dict],
                  norms: Normalizer, run: dict) -> None:
    """The per-trace and per-model tables (with their Parquet twins), errors, norms and run.json."""
    write_table(out, INDICATORS_TABLE, joined.rows)
    write_table(out, PROFILE_TABLE, prof)
    write_table(out, MODEL_PROFILES_TABLE, by_model)
    write_table(out, MODEL_DOMAIN_PROFILES_TABLE, by_model_domain)
    write_table(out, MODEL_GROUP_PROFILES_TABLE, model_group_profiles(prof))
    _sync_replace(out / (ERRORS_FILE + ".tmp"), out / ERRORS_FILE)  # written by join_parts
    write_atomic(out / NORMS_FILE, json.dumps(norms.to_json(), indent=2) + "\n")
    write_atomic(out / RUN_JSON, json.dumps(run, indent=2, ensure_ascii=False) + "\n")


def assemble(out: Path, cfg: Config, encoder: Encoder, linker: Linker, opts: RunOptions, resumed: int = 0,
             progress: Progress | None = None) -> dict:
    """Join the committed chunks into the output files, compute the corpus profile and the statistics."""
    from .anomalies import write_anomalies
    from .stats import write_stats

    stage = progress.stage if progress is not None else (lambda name: None)
    stage("assemble: joining chunks")
    joined = join_parts(out, RedundancyParams.from_config(cfg), cfg.indicators.cluster_exact_max, opts.untagged)
    stage("assemble: redundancy tables")
    write_redundancy_tables(out, joined.analyses)
    stage("assemble: norms and profiles")
    norms = fit_norms(joined.rows, opts.norms)
    prof = profile_rows(joined.rows, norms)
    by_model = group_profiles(prof, ("model",))
    by_model_domain = group_profiles(prof, ("model", "domain"))
    stage("assemble: writing tables")
    info = run_info(opts, cfg, encoder, linker, joined)
    write_outputs(out, joined, prof, by_model, by_model_domain, norms, info)
    stage("assemble: unusual traces and failure risk")
    write_anomalies(out, cfg.stats, joined.risks, joined.in_sample)
    stage("stats")
    write_stats(out, cfg.stats)
    return {"out_dir": str(out), "traces": len(joined.rows), "errors": joined.errors, "resumed": resumed,
            "duplicates": len(joined.duplicates), "duplicates_of_undrawn": duplicates_of_undrawn(joined),
            "unknown": joined.unknown, "unknown_fix": info["unknown_fix"],
            "untagged": joined.untagged, "untagged_by_model": dict(sorted(joined.untagged_by_model.items())),
            "untagged_long_by_model": dict(sorted(joined.untagged_long_by_model.items())),
            **_by_model_counts(joined),
            "code_not_run": joined.code_not_run, "reasoning_is_code": joined.reasoning_is_code,
            "coverage": info["coverage"], "coverage_warnings": info["coverage_warnings"],
            "short_trace_warnings": info["short_trace_warnings"], "loop_warnings": info["loop_warnings"],
            "grades": info["grades"],
            "files_not_drawn": info.get("files_not_drawn", []),
            "model_profiles": by_model, "model_domain_profiles": by_model_domain,
            "norms": str(opts.norms) if opts.norms else None, "graph_source": opts.graph_source}

