"""`profile --engine ray`: the same run as the local engine (`thinkprobe.pipeline`), with the
per-trace stages spread over a Ray cluster as Ray Data `map_batches` stages.

The driver reads the inputs with the loader (in input order, ids made unique as in a local run),
cuts them into the same chunks as a local run and skips the chunks already committed under
OUT/parts/ (so `--resume` works across engines). The pending traces of a window of chunks become
a Ray Dataset that flows through

    split (CPU tasks) -> encode (actors holding the encoder; one GPU each when the cluster has GPUs)
    -> tile + cue types (CPU tasks) -> type head + linker (actors holding the trained models)
    -> indicators + graph record (CPU tasks)

and the driver commits each chunk's lines, in input order, as soon as all its traces are back,
in exactly the format the local engine writes. Then `runner.assemble` writes norms, profiles,
stats and redundancy tables as in a local run. Every stage calls the functions the local engine
calls (graph.units_of, tile_and_type, link_graphs, runner.finish_line), and those give each trace
the same result whatever batch it shares, so the outputs are byte-identical to a local run.

Ray is an optional dependency (`pip install thinkprobe[ray]`), imported only here.
"""
from __future__ import annotations

import itertools
import logging
import os
import pickle
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from .config import Config, IndicatorSettings, RaySettings
from .encoder import Encoder, make_encoder, resolve_precision
from .graph import link_graphs, over_unit_limit, tile_and_type, units_of
from .isolation import TraceLimits, failure_line, time_limit
from .link import bind_encoder
from .options import RunOptions
from .runner import (assemble, chunks, compile_routines, finish_line, manifest, part_path, prepare_parts, release_memory,
                     run_linker, run_traces, run_typer, total_records, warm_up)
from .progress import Progress, select, selected_total
from .records import InputError, Trace
from .redundancy import RedundancyParams
from .tables import write_atomic
from .timing import StageTimes

__all__ = ["run_profile_ray", "RayPlan", "plan_resources"]


# ----------------------------------------------------------------------------- rows
# A row of the dataset is one trace: `idx` (its position in the input stream) and `state`, a
# pickle of what the stages built so far (dict keys: trace, planned, emb, tok, graph; with
# --trace-timeout, spent: the seconds the trace has used), or of {"line": ...} once its output
# line (graph or error) is final.
#
# Failure isolation, as in the local engine (isolation.profile_chunk_isolated): a trace whose
# stage raises (any exception, MemoryError, or --trace-timeout) becomes its errors.jsonl line,
# built by isolation.failure_line, and the others go on. The per-trace stages run each trace on
# its own; the model stages (encode, link) call the model on the whole batch first and, if that
# raises, on each trace alone. The time limit is the trace's over all stages: each stage gives a
# trace alone the time it has left; a model stage's whole batch gets its traces' time left
# together (as a local chunk gets the limit times its traces), and its time is not charged.


def _rows(batch: dict) -> Iterator[tuple[int, dict]]:
    for idx, blob in zip(batch["idx"], batch["state"]):
        yield int(idx), pickle.loads(blob)


def _batch(rows: list[tuple[int, dict]]) -> dict:
    return {"idx": np.array([i for i, _ in rows], dtype=np.int64),
            "state": np.array([pickle.dumps(s, protocol=5) for _, s in rows] + [None], dtype=object)[:-1]}


def _error_line(err: InputError, trace_id: str | None) -> str:
    # An error leaves the stage it happened in as its finished output line (the next stages carry
    # states of traces only).
    return finish_line(err, trace_id, None, None)


def _left(s: dict, timeout: float) -> float:
    """Seconds the trace of state `s` has left under the time limit (0: no limit). One that has
    used it all still gets a moment, so that the limit, not a missing one, stops it."""
    return max(timeout - s.get("spent", 0.0), 1e-3) if timeout else 0.0


def _trace_of(s: dict) -> Trace:
    return s["trace"] if "trace" in s else s["graph"].trace


def _alone(s: dict, step: Callable[[dict], dict], timeout: float) -> dict:
    """`step(s)` for one trace, under the time it has left: the new state, or the trace's error
    line if the step raised."""
    trace = _trace_of(s)
    spent, start = s.get("spent", 0.0), time.monotonic()
    try:
        with time_limit(_left(s, timeout), named=timeout):
            s = step(s)
    except Exception as exc:  # noqa: BLE001 - the reason goes to errors.jsonl, the run goes on
        return {"line": failure_line(trace, exc)}
    if timeout and "line" not in s:
        s["spent"] = spent + time.monotonic() - start
    return s


def _each(batch: dict, step: Callable[[dict], dict], timeout: float) -> list[tuple[int, dict]]:
    """The rows of `batch`, each pending one through `step` alone."""
    return [(idx, s if "line" in s else _alone(s, step, timeout)) for idx, s in _rows(batch)]


def _whole_then_each(batch: dict, step: Callable[[list[dict]], None], timeout: float,
                     preflight: Callable[[], object] | None = None) -> dict:
    """`step(states)` (which fills the states in place) on the pending rows of `batch` at once;
    if it raises, `preflight()` (which raises a failure of the run rather than of a trace, such
    as an encoder whose weights do not load) and then `step` on each row alone (a batch with one
    pending row: that row's failure is its error line)."""
    rows = list(_rows(batch))
    todo = [s for _, s in rows if "line" not in s]
    if not todo:
        return batch
    try:
        with time_limit(sum(_left(s, timeout) for s in todo), named=timeout):
            step(todo)
        return _batch(rows)
    except Exception as exc:  # noqa: BLE001 - any failure of one trace: find it by running them one by one
        if preflight is not None:
            preflight()
        if len(todo) == 1:  # it ran alone already, under its own time left: running it again would repeat that
            [s] = todo
            return _batch([(idx, {"line": failure_line(_trace_of(s), exc)} if r is s else r) for idx, r in rows])

    def one(s: dict) -> dict:
        step([s])
        return s

    return _batch(_each(batch, one, timeout))  # states afresh from the batch: the failed call may have filled some


def split_stage(batch: dict, cfg: Config) -> dict:
    """CPU: unit spans of each trace (graph.units_of); a trace over --max-units or --max-repeat becomes its error
    line here and is not encoded (as in graph.build_graphs)."""
    def split(s: dict) -> dict:
        planned = units_of(s["trace"], cfg)
        err = over_unit_limit(s["trace"], planned[0], cfg)
        return {"line": _error_line(err, s["trace"].trace_id)} if err is not None else s | {"planned": planned}

    if _timeout(cfg):  # spaCy loads outside the first trace's time limit (once per process)
        warm_up(segmenter=True)
    return _batch(_each(batch, split, _timeout(cfg)))


class EncodeStage:
    """Actor holding the encoder: embeddings and token counts of every unit of the batch in one
    call (grouped by length across traces, as in a local chunk)."""

    def __init__(self, cfg: Config, overrides: dict):
        self.cfg, self.overrides = cfg, overrides
        self.local = threading.local()  # the caches' SQLite connections belong to the thread that opened them

    def __call__(self, batch: dict) -> dict:
        if not hasattr(self.local, "encoder"):  # the weights themselves are loaded once per process
            self.local.encoder = make_encoder(self.cfg, self.overrides)
            if _timeout(self.cfg):  # and then before any trace's time limit starts
                warm_up(self.local.encoder)
        encoder = self.local.encoder

        def encode(states: list[dict]) -> None:
            emb, tok = encoder.encode_and_count([u.text for s in states for u in s["planned"][0]])
            bounds = np.cumsum([0] + [len(s["planned"][0]) for s in states])
            for s, a, b in zip(states, bounds, bounds[1:]):
                s["emb"], s["tok"] = emb[a:b], tok[a:b]

        return _whole_then_each(batch, encode, _timeout(self.cfg), preflight=lambda: encoder.model)


def tile_stage(batch: dict, cfg: Config) -> dict:
    """CPU: TextTiling blocks, cue types and unit features (graph.tile_and_type)."""
    def tile(s: dict) -> dict:
        g = tile_and_type(s["trace"], s["planned"], s["emb"], s["tok"], cfg)
        return {"line": _error_line(g, s["trace"].trace_id)} if isinstance(g, InputError) else {"graph": g}

    if _timeout(cfg):  # numba's routines compile outside the first trace's time limit (once per process)
        compile_routines(cfg)
    return _batch(_each(batch, tile, _timeout(cfg)))


class LinkStage:
    """Actor holding the linker's and the type head's models: types and edges of the batch's
    graphs (graph.link_graphs, as the local engine calls it). A linker that reads the encoder's
    lower layers (the parser's reader) is bound to an encoder built with the run's encoder options
    (`overrides`, as EncodeStage's: path, precision...), as graph.build_graphs binds it locally."""

    def __init__(self, opts: RunOptions, cfg: Config, device: str, overrides: dict | None = None):
        self.opts, self.cfg, self.device, self.overrides = opts, cfg, device, overrides
        self.local = threading.local()  # as EncodeStage: score caches are per thread

    def __call__(self, batch: dict) -> dict:
        local, opts = self.local, self.opts
        if not hasattr(local, "linker"):
            local.linker = run_linker(opts, self.cfg, self.device, opts.cache_folder)
            if self.overrides is not None and hasattr(local.linker, "bind_encoder"):  # lazy: no weights load here
                bind_encoder(local.linker, make_encoder(self.cfg, {**self.overrides, "cache_dir": None}))  # no embedding cache
            local.typer = run_typer(opts, local.linker, opts.cache_folder)
            if _timeout(self.cfg):  # its models load and its routines compile before any trace's time limit starts
                warm_up(linker=local.linker, compile_for=self.cfg, typer=local.typer)
        return _whole_then_each(batch, lambda states: link_graphs([s["graph"] for s in states], local.linker, local.typer),
                                _timeout(self.cfg))


def finish_stage(batch: dict, indicator_cfg: IndicatorSettings, redundancy: RedundancyParams, timeout: float = 0.0,
                 cfg: Config | None = None) -> dict:
    """CPU: indicators and the graph record: the output line a local run writes for the trace."""
    def finish(s: dict) -> dict:
        return {"line": finish_line(s["graph"], s["graph"].trace.trace_id, indicator_cfg, redundancy)}

    if timeout and cfg is not None:  # as tile_stage: compiled before the first time limit
        compile_routines(cfg)
    rows = _each(batch, finish, timeout)
    return {"idx": np.array([i for i, _ in rows], dtype=np.int64),
            "line": np.array([s["line"] for _, s in rows] + [None], dtype=object)[:-1]}


def _timeout(cfg: Config) -> float:
    return TraceLimits.from_config(cfg).trace_timeout_s


# ----------------------------------------------------------------------------- resources


@dataclass(frozen=True)
class RayPlan:
    """How many model actors, and what each stage holds of the cluster."""

    device: str
    actors: int
    encoder: dict[str, float]  # ray_remote_args of an encoder actor
    linker: dict[str, float]
    task: dict[str, float]


def plan_resources(resources: dict[str, float], device: str, rcfg: RaySettings) -> RayPlan:
    """The actors and resources of a run on a cluster with `resources` (ray.cluster_resources()).

    >>> p = plan_resources({"CPU": 2.0}, "auto", Config.load().ray)
    >>> p.device, p.actors, p.encoder, p.task
    ('cpu', 1, {'num_cpus': 1.0}, {'num_cpus': 0.5})
    >>> p = plan_resources({"CPU": 64.0, "GPU": 4.0}, "auto", Config.load().ray)
    >>> p.device, p.actors, p.encoder, p.linker
    ('cuda', 4, {'num_cpus': 1.0, 'num_gpus': 0.75}, {'num_cpus': 0.5, 'num_gpus': 0.25})
    """
    gpus = int(resources.get("GPU", 0))
    if device == "auto":
        device = "cuda" if gpus else "cpu"
    on_gpu = device.startswith("cuda")
    if on_gpu and not gpus:
        raise SystemExit(f"--device {device} asked for, but the Ray cluster has no GPU")
    if on_gpu:
        device = "cuda"  # Ray gives each actor its GPU; cuda:N would name a GPU the actor cannot see
    actors = rcfg.model_actors or (gpus if on_gpu else max(1, int(resources.get("CPU", 1)) // 4))
    encoder = {"num_cpus": rcfg.encoder_cpus}
    linker = {"num_cpus": rcfg.linker_cpus}
    if on_gpu:
        encoder["num_gpus"], linker["num_gpus"] = rcfg.encoder_gpus, rcfg.linker_gpus
    return RayPlan(device, actors, encoder, linker, {"num_cpus": rcfg.task_cpus})


# ----------------------------------------------------------------------------- the run


def _connect(address: str | None):
    """An existing cluster (`auto` or ADDR), else a local instance on this machine's CPUs; a
    session the caller already started (ray.init in a script or test) is used as it is.
    Returns whether this call started Ray (and so shuts it down)."""
    import ray

    if ray.is_initialized():
        return False
    env = {k: os.environ[k] for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM",
                                      "NUMBA_CACHE_DIR", "PYTHONPATH") if k in os.environ}
    if address:
        ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False, logging_level="ERROR")
    else:
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    return True


def _windows(chunks: Iterator[tuple[int, list]], size: int) -> Iterator[list[tuple[int, list]]]:
    """Pending chunks grouped so that a window holds about `size` traces."""
    window, n = [], 0
    for k, chunk in chunks:
        window.append((k, chunk))
        n += len(chunk)
        if n >= size:
            yield window
            window, n = [], 0
    if window:
        yield window


def _driver_encoder(cfg: Config, opts: RunOptions, device: str) -> tuple[Encoder, dict]:
    """The encoder that names the run (manifest, run.json) on the driver, which loads no model and
    may have no GPU when the workers do; and the options every encoder actor is built with: the
    precision is resolved once here, so all actors run the same dtype."""
    precision = resolve_precision(opts.precision or cfg.encoder.precision, device)
    overrides = {"path": opts.encoder, "device": device, "batch_size": opts.batch_size, "precision": precision,
                 "cache_dir": opts.cache_folder}
    encoder = make_encoder(cfg, overrides | {"device": "cpu", "precision": "fp32", "cache_dir": None})
    encoder.device, encoder.precision = device, precision
    return encoder, overrides | {"path": str(encoder.path)}


def run_profile_ray(opts: RunOptions, cfg: Config, times: StageTimes) -> dict:
    """`engine.run_profile` on Ray: same outputs, same resume, same errors.jsonl (see the module doc).
    `cfg` is the run's config (runner.run_config)."""
    import ray

    rcfg = cfg.ray
    started = _connect(opts.ray_address)
    progress = None
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False  # one display, ours, counts committed traces
        ctx.execution_options.preserve_order = False  # the driver puts lines back in input order
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # no per-execution plan on stderr
        plan = plan_resources(ray.cluster_resources(), opts.device, rcfg)
        encoder, encoder_overrides = _driver_encoder(cfg, opts, plan.device)
        linker = run_linker(opts, cfg, "cpu", None)  # names the run
        out = Path(opts.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        parts = prepare_parts(out, manifest(opts, cfg, encoder, linker), opts.resume)
        total = total_records(opts, cfg) if opts.show_progress or opts.sample is not None else None
        progress = Progress(selected_total(total, opts.limit, opts.sample), enabled=opts.show_progress)
        traces = select(run_traces(opts, cfg), opts.limit, opts.sample, opts.seed)
        resumed = 0

        def pending():
            nonlocal resumed
            for k, chunk in enumerate(chunks(traces, opts.chunk_size)):
                if part_path(parts, k).exists():
                    resumed += sum(isinstance(item, Trace) for item in chunk)  # traces, not the skipped records
                    progress.traces(len(chunk))
                else:
                    yield k, chunk

        windows = _windows(pending(), rcfg.window_traces)
        while True:
            with times("load"):
                window = next(windows, None)
            if window is None:
                break
            progress.stage(f"ray: {sum(len(c) for _, c in window)} traces on {plan.actors} encoder actors ({plan.device})")
            with times("ray"):
                _run_window(window, parts, cfg, opts, plan, encoder_overrides, progress)
    except BaseException:
        if progress is not None:
            progress.close()
        raise
    finally:
        if started:
            ray.shutdown()
    try:
        with times("assemble"):
            result = assemble(out, cfg, encoder, linker, opts, resumed, progress)
    finally:
        progress.close()
    result["engine"] = "ray"
    return result


def _run_window(window: list[tuple[int, list]], parts: Path, cfg: Config, opts: RunOptions, plan: RayPlan,
                encoder_overrides: dict, progress: Progress) -> None:
    """One Ray Data execution over the traces of `window`; commits each chunk when it is complete."""
    import ray

    indicator_cfg = cfg.indicators
    redundancy = RedundancyParams.from_config(cfg)
    rcfg = cfg.ray
    lines: dict[int, dict[int, str]] = {}  # chunk -> idx -> line
    owner: dict[int, int] = {}  # idx -> chunk
    size: dict[int, int] = {}
    items: list[dict[str, Any]] = []
    idx = itertools.count()
    for k, chunk in window:
        lines[k], size[k] = {}, len(chunk)
        for item in chunk:
            i = next(idx)
            owner[i] = k
            if isinstance(item, Trace):
                items.append({"idx": i, "state": pickle.dumps({"trace": item}, protocol=5)})
            else:  # a record the loader rejected: its error line, as a local run writes it
                lines[k][i] = _error_line(item, item.trace_id)

    def commit(k: int) -> None:
        text = "".join(lines[k][i] for i in sorted(lines[k]))
        write_atomic(part_path(parts, k), text)
        progress.traces(size[k])
        del lines[k]

    for k in [k for k in lines if len(lines[k]) == size[k]]:
        commit(k)
    if items:
        n_blocks = max(1, min(len(items) // rcfg.batch_traces, 4 * max(1, int(ray.cluster_resources().get("CPU", 1)))))
        ds = ray.data.from_items(items, override_num_blocks=n_blocks)
        # a worker process that dies is retried crash_retries times, then the run stops (Ray Data: without end)
        retries = rcfg.crash_retries
        actor_retries = dict(max_restarts=retries, max_task_retries=retries)
        task = dict(batch_size=rcfg.batch_traces, batch_format="numpy", max_retries=retries, **plan.task)
        ds = ds.map_batches(split_stage, fn_kwargs={"cfg": cfg}, **task)
        ds = ds.map_batches(EncodeStage, fn_constructor_kwargs={"cfg": cfg, "overrides": encoder_overrides},
                            batch_size=rcfg.encode_batch_traces, batch_format="numpy",
                            compute=ray.data.ActorPoolStrategy(size=plan.actors), **plan.encoder, **actor_retries)
        ds = ds.map_batches(tile_stage, fn_kwargs={"cfg": cfg}, **task)
        ds = ds.map_batches(LinkStage, fn_constructor_kwargs={"opts": opts, "cfg": cfg, "device": plan.device,
                                                              "overrides": encoder_overrides},
                            batch_size=rcfg.encode_batch_traces, batch_format="numpy",
                            compute=ray.data.ActorPoolStrategy(size=plan.actors), **plan.linker, **actor_retries)
        ds = ds.map_batches(finish_stage, fn_kwargs={"indicator_cfg": indicator_cfg, "redundancy": redundancy,
                                                     "timeout": _timeout(cfg), "cfg": cfg}, **task)
        for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
            done = set()
            for i, line in zip(batch["idx"], batch["line"]):
                k = owner[int(i)]
                lines[k][int(i)] = line
                if len(lines[k]) == size[k]:
                    done.add(k)
            for k in sorted(done):
                commit(k)
    if lines:  # every trace of the window came back, or Ray raised
        raise RuntimeError(f"ray engine: chunks {sorted(lines)} incomplete")
    release_memory()
