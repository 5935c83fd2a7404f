"""The local engine: stream a run's traces in chunks, build Thought Graphs and indicators per
chunk (the per-trace CPU stages on `workers` processes), commit each chunk atomically under
OUT/parts/, then assemble the outputs (thinkprobe.runner). A killed run restarted with resume=True
skips the committed chunks. thinkprobe.engine.run_profile is the entry point.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import signal
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Iterable

from .config import Config
from .encoder import Encoder, make_encoder
from .graph import build_graphs
from .isolation import TraceLimits, marker_path, profile_chunk_isolated
from .link import Linker
from .options import RunOptions
from .progress import Progress, ProgressTimes, select, selected_total
from .records import InputError, Trace
from .redundancy import RedundancyParams
from .runner import (assemble, chunks, finish_line, manifest, part_path, prepare_parts, release_memory, run_linker,
                     run_traces, run_typer, total_records, warm_process, warm_up)
from .tables import write_atomic
from .timing import StageTimes

__all__ = ["run_local", "run_encoder", "exit_when_gone"]


def exit_when_gone(pid: int, interval: float = 1.0) -> None:
    """End this process once process `pid` is gone (checked every `interval` seconds)."""
    while True:
        time.sleep(interval)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:  # at once, as the main process went: no cleanup to wait on
            os.kill(os.getpid(), signal.SIGKILL)
        except PermissionError:  # alive, someone else's
            pass


def _start_worker(main_pid: int, cfg: Config | None) -> None:
    """A --workers process's start. It ends itself when the run's main process is gone: a SIGKILL or the
    OOM killer leaves no time to stop the pool, and its workers (children of the forkserver, not of the
    main process) had lived on holding their memory. Under a time limit it warms up (`cfg`) too."""
    threading.Thread(target=exit_when_gone, args=(main_pid,), daemon=True, name="thinkprobe-main-watch").start()
    if cfg is not None:
        warm_process(cfg)


def _process_chunk(traces: list, cfg: Config, encoder: Encoder, linker: Linker, times: StageTimes,
                   pool: Executor | None = None, typer=None, progress: Progress | None = None) -> str:
    good = [t for t in traces if isinstance(t, Trace)]
    built = iter(build_graphs(good, cfg, encoder, linker, times, pool, typer=typer))
    results = [next(built) if isinstance(item, Trace) else item for item in traces]
    ids = [getattr(item, "trace_id", None) for item in traces]
    mapper = partial(pool.map, chunksize=4) if pool is not None else map
    lines = []
    with times("indicators_serialise"):
        for line in mapper(finish_line, results, ids, itertools.repeat(cfg.indicators),
                           itertools.repeat(RedundancyParams.from_config(cfg))):
            lines.append(line)
            if progress is not None:
                progress.traces(1)
    return "".join(lines)


def run_local(opts: RunOptions, cfg: Config, linker: Linker | None, times: StageTimes,
              encoder: Encoder | None = None) -> dict:
    """Profile every trace of the inputs into opts.out_dir on this machine; returns the run summary.
    `cfg` is the run's config (runner.run_config); `times` collects seconds per pipeline stage;
    `encoder`, when given, replaces the one `run_encoder` makes."""
    cache = opts.cache_folder
    encoder = encoder if encoder is not None else run_encoder(opts, cfg)
    linker = linker or run_linker(opts, cfg, encoder.device, cache)
    typer = run_typer(opts, linker, cache)
    out = Path(opts.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    parts = prepare_parts(out, manifest(opts, cfg, encoder, linker), opts.resume)

    # Records counted cheaply (lines, Parquet metadata), only for the bar; a record giving several
    # traces (one per generation) makes the bar run past its total rather than cost a detection pass.
    total = total_records(opts, cfg) if opts.show_progress else None
    progress = Progress(selected_total(total, opts.limit, opts.sample), enabled=opts.show_progress)
    encoder.on_encoded, encoder.on_encoding = progress.units, progress.expect_units
    try:
        resumed = _profile_chunks(opts, cfg, encoder, linker, typer, parts, ProgressTimes(times, progress), progress,
                                  select(run_traces(opts, cfg), opts.limit, opts.sample, opts.seed))
        with times("assemble"):
            result = assemble(out, cfg, encoder, linker, opts, resumed, progress)
    finally:
        encoder.on_encoded = encoder.on_encoding = None
        progress.close()
    if cache:
        result["cache"] = {"embeddings": encoder.cache_stats, "pair_scores": getattr(linker, "cache_stats", {}),
                           "type_scores": typer.cache_stats if typer is not None else {}}
    return result


def run_encoder(opts: RunOptions, cfg: Config) -> Encoder:
    """The encoder a local run uses: the config's, with the run's options on top."""
    return make_encoder(cfg, {"path": opts.encoder, "device": opts.device, "batch_size": opts.batch_size,
                              "precision": opts.precision, "cache_dir": opts.cache_folder})


def _profile_chunks(opts: RunOptions, cfg: Config, encoder: Encoder, linker: Linker, typer, parts: Path,
                    times, progress: Progress, traces: Iterable[Trace | InputError]) -> int:
    """Build and commit every chunk not committed yet; returns how many traces came from committed chunks."""
    resumed = 0
    limits = TraceLimits.from_config(cfg)
    if limits.trace_timeout_s:  # models load before the first chunk's time limit starts, not inside it
        warm_up(encoder, linker, segmenter=True, compile_for=cfg, typer=typer)
    pending = chunks(traces, opts.chunk_size)
    # forkserver, not fork: the parent may hold torch's thread pools, which do not survive a fork.
    # Under a time limit the workers start, load spaCy and compile before the first chunk's limit.
    warm = bool(limits.trace_timeout_s)
    pool = ProcessPoolExecutor(opts.workers, mp_context=get_context("forkserver"), initializer=_start_worker,
                               initargs=(os.getpid(), cfg if warm else None)) if opts.workers > 1 else None
    with pool or contextlib.nullcontext():
        if pool is not None and warm:
            list(pool.map(abs, range(opts.workers)))  # a task each: every worker process is started
        for k in itertools.count():
            with times("load"):
                chunk = next(pending, None)
            if chunk is None:
                break
            part = part_path(parts, k)
            if part.exists():
                resumed += sum(isinstance(item, Trace) for item in chunk)  # traces, not the skipped records
                progress.traces(len(chunk))
            else:
                progress.begin_chunk(len(chunk))
                text = profile_chunk_isolated(
                    chunk, lambda items: _process_chunk(items, cfg, encoder, linker, times, pool, typer, progress),
                    lambda items: _process_chunk(items, cfg, encoder, linker, times, None, typer), part, limits,
                    preflight=lambda: encoder.model)
                with times("write"):
                    write_atomic(part, text)
                del text
                release_memory()
            marker_path(part).unlink(missing_ok=True)  # committed: what was running is done
    return resumed


