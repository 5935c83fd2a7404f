"""Throughput benchmark (issue 6): in one process and one run, (a) the raw encoder on exactly the
units the pipeline embeds, (b) the full pipeline end to end, (c) a naive baseline that profiles
one trace at a time; then the cache's second run and peak memory at 1x and 10x corpus size, each
size in its own subprocess. Ratios come from the same run, never from timed tests.
"""
from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .config import Config
from .shared_data import real_corpus, resample
from .encoder import make_encoder
from .graph import units_of
from .io import iter_traces
from .engine import RunOptions, run_profile
from .outputs import OUTPUT_FILES
from .records import Section, Trace
from .timing import StageTimes

def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _hwm_mb() -> str:
    """Python source for a child's peak resident memory: VmHWM resets at exec, whereas Linux
    carries ru_maxrss over from the parent across fork + exec (which made every child read the
    parent's peak)."""
    return ("[int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')][0] / 1024")


def _profile_subprocess(inputs: Path, out: Path, cache: Path, device: str, encoder: str | None = None) -> dict:
    """A profile run in a fresh process: its wall time and peak resident memory."""
    code = (
        "import json, resource, sys, time\n"
        "from thinkprobe.engine import RunOptions, run_profile\n"
        "t = time.perf_counter()\n"
        f"r = run_profile(RunOptions(inputs=[{str(inputs)!r}], out_dir={str(out)!r}, cache_dir={str(cache)!r}, "
        f"device={device!r}, encoder={encoder!r}, progress=False))\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'traces': r['traces'], "
        f"'peak_rss_mb': {_hwm_mb()}}}))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_bench(n: int = 100, device: str = "auto", batch_size: int | None = None, scale: int = 10,
              workdir: str | None = None, encoder_path: str | None = None, workers: int = 1,
              naive_n: int | None = None) -> dict:
    """The benchmark (module docstring). `scale` 0 skips the memory check; `workers` is passed to
    the full pipeline and the cache runs (the naive baseline stays one process, one trace at a time,
    on the first `naive_n` traces when given: its speed-up is then a ratio of units per second).
    Each figure is also printed to standard error as soon as it is measured, so that a run cut
    short (a lent GPU's time limit) still leaves what it measured."""
    cfg = Config.load()
    lines, corpus = real_corpus(n)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="thinkprobe-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    corpus_path = tmp / "corpus.jsonl"
    corpus_path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    encoder = make_encoder(cfg, {"path": encoder_path, "device": device, "batch_size": batch_size})
    traces = [t for t in iter_traces(corpus_path) if isinstance(t, Trace)]
    planned = [units_of(t, cfg)[0] for t in traces]  # each trace's units, split once
    texts = [u.text for units in planned for u in units]
    encoder.encode_and_count(texts[:64])  # load the model and warm the kernels before any timing
    sync = _cuda_sync(encoder.device)

    t0 = time.perf_counter()
    encoder.encode_and_count(texts)
    sync()
    raw = time.perf_counter() - t0
    units = len(texts)
    _say(f"raw encoder: {units} units in {raw:.1f} s")

    def timed_run(name: str, inputs: Path = corpus_path, **kw) -> tuple[float, StageTimes, dict]:
        times = StageTimes()
        t = time.perf_counter()
        result = run_profile(RunOptions(inputs=[str(inputs)], out_dir=str(tmp / name), device=encoder.device,
                                        encoder=str(encoder.path), batch_size=encoder.batch_size,
                                        precision=encoder.precision, progress=False,
                                        cache="cache_dir" in kw, **kw), times=times)
        sync()
        seconds = time.perf_counter() - t
        _say(f"{name}: {seconds:.1f} s, stages (s) " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(times.items())))
        return seconds, times, result

    full, full_times, _ = timed_run("full", workers=workers)
    naive_traces = len(traces) if naive_n is None else min(naive_n, len(traces))
    naive_units = sum(len(units) for units in planned[:naive_traces])
    naive_path = corpus_path
    if naive_traces < len(traces):
        naive_path = tmp / "naive.jsonl"
        naive_path.write_text("\n".join(lines[:naive_traces]) + "\n", encoding="utf-8")
    naive, _, _ = timed_run("naive", inputs=naive_path, chunk_size=1)
    cache = tmp / "cache"
    first, _, _ = timed_run("cache1", cache_dir=str(cache), workers=workers)
    second, second_times, cached = timed_run("cache2", cache_dir=str(cache), workers=workers)
    identical = all((tmp / "cache1" / f).read_bytes() == (tmp / "cache2" / f).read_bytes() for f in OUTPUT_FILES)

    memory = memory_check(lines, scale, cache, encoder.device, tmp, str(encoder.path)) if scale else {}

    report = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(encoder.device),
        "corpus": corpus,
        "traces": len(traces),
        "units": units,
        "batch_size": encoder.batch_size,
        "precision": encoder.precision,
        "workers": workers,
        "raw_encoder": {"seconds": raw, "units_per_s": units / raw},
        "full_pipeline": {"seconds": full, "units_per_s": units / full, "traces_per_s": len(traces) / full,
                          "stages_s": dict(sorted(full_times.items()))},
        "naive_per_trace": {"traces": naive_traces, "units": naive_units, "seconds": naive,
                            "units_per_s": naive_units / naive, "traces_per_s": naive_traces / naive},
        "full_over_raw_encoder": raw / full,
        "speedup_over_naive": (units / full) / (naive_units / naive),
        "cache": {"first_s": first, "second_s": second, "speedup": first / second, "identical_outputs": identical,
                  "second_stages_s": dict(sorted(second_times.items())), "hits": cached["cache"]},
        "memory_peak_rss_mb": memory,
        "this_process_peak_rss_mb": _peak_rss_mb(),
        "gpu_peak_allocated_mb": _gpu_peak_mb(encoder.device),
    }
    if not workdir:
        shutil.rmtree(tmp, ignore_errors=True)
    return report


def memory_check(lines: list[str], scale: int, cache: Path, device: str, tmp: Path, encoder: str | None = None) -> dict:
    """Peak memory of a fresh profile process at 1x, `scale`x and 2 * `scale`x corpus size. The
    cache (filled by the caller, or here on the 1x run) spares re-encoding the resampled traces, so
    the larger runs measure what streaming keeps flat: everything but the encoder's work. The 1x
    corpus is one full chunk and a partial one; the larger ones mix traces into more chunks, so
    the two larger sizes are the cleaner test of flatness."""
    memory = {}
    for factor in (1, scale, 2 * scale):
        path = tmp / f"corpus_x{factor}.jsonl"
        path.write_text("\n".join(resample(lines, factor)) + "\n", encoding="utf-8")
        memory[f"x{factor}"] = _profile_subprocess(path, tmp / f"mem_x{factor}", cache, device, encoder)
    return memory


def _cuda_sync(device: str):
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


def _say(line: str) -> None:
    print(f"bench: {line}", file=sys.stderr, flush=True)


def _gpu_peak_mb(device: str) -> float | None:
    """The most GPU memory torch held for tensors in this process (the main process's models; the
    worker processes run the CPU stages only); None on a CPU."""
    if not device.startswith("cuda"):
        return None
    import torch

    return torch.cuda.max_memory_allocated() / 2**20


def _machine(device: str) -> str:
    desc = f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"
    if device.startswith("cuda"):
        import torch

        desc += f", {torch.cuda.get_device_name(0)}"
    import torch

    return desc + f", torch {torch.__version__} ({torch.get_num_threads()} threads), device {device}"


def format_bench(r: dict) -> str:
    lines = [
        f"corpus: {r['corpus']}  ({r['traces']} traces, {r['units']} units; {r['machine']})",
        f"raw encoder      {r['raw_encoder']['units_per_s']:9.1f} units/s  ({r['raw_encoder']['seconds']:.1f} s)",
        f"full pipeline    {r['full_pipeline']['units_per_s']:9.1f} units/s  {r['full_pipeline']['traces_per_s']:7.2f} traces/s"
        f"  ({r['full_pipeline']['seconds']:.1f} s) = {100 * r['full_over_raw_encoder']:.0f}% of the raw encoder",
        f"naive per-trace  {r['naive_per_trace']['units_per_s']:9.1f} units/s  {r['naive_per_trace']['traces_per_s']:7.2f} traces/s"
        f"  ({r['naive_per_trace']['seconds']:.1f} s for {r['naive_per_trace'].get('traces', r['traces'])} traces);"
        f" full pipeline is {r['speedup_over_naive']:.2f}x faster",
        "stages (s): " + ", ".join(f"{k} {v:.2f}" for k, v in r["full_pipeline"]["stages_s"].items()),
        f"cache: first run {r['cache']['first_s']:.1f} s, second {r['cache']['second_s']:.1f} s = "
        f"{r['cache']['speedup']:.1f}x, identical outputs: {r['cache']['identical_outputs']}",
        "peak memory (fresh process each): " + (", ".join(
            f"{k} {v['traces']} traces {v['peak_rss_mb']:.0f} MB" for k, v in r["memory_peak_rss_mb"].items()) or "not measured"),
        f"this process: peak RSS {r['this_process_peak_rss_mb']:.0f} MB"
        + ("" if r.get("gpu_peak_allocated_mb") is None else f", peak GPU memory allocated {r['gpu_peak_allocated_mb']:.0f} MB"),
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- long-trace mode (issue 16)

LONG_SIZES = (1000, 4000, 16000, 40000)


def long_trace_texts(sizes: tuple[int, ...], cfg: Config) -> tuple[dict[int, str], str]:
    """One reasoning text per size with about that many Thought Units, made by joining the
    reasoning sections of real traces (all of ReasoningFlow v1 in a seeded order, or the bundled
    samples over and over) with blank lines. Each text is a prefix of the next larger one, so
    the sizes differ only in length. Returns the texts and a description of the source."""
    lines, corpus = real_corpus(10**9)
    pieces: list[str] = []  # reasoning texts, in order
    ends: list[list[int]] = []  # the end offset of each of their units
    total = 0
    path = Path(tempfile.mkdtemp(prefix="thinkprobe-long-")) / "source.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    traces = (t for t in iter_traces(path) if isinstance(t, Trace) and t.reasoning is not None)
    while total < max(sizes):
        trace = next(traces, None)
        if trace is None:  # the bundled samples are few: go round again
            traces = (t for t in iter_traces(path) if isinstance(t, Trace) and t.reasoning is not None)
            continue
        section = trace.reasoning
        text = section.text[section.start:section.end]
        units = units_of(Trace(trace.trace_id, "", "", (Section("reasoning", "r", text, 0, len(text)),)), cfg)[0]
        pieces.append(text)
        ends.append([u.end for u in units])
        total += len(units)
    shutil.rmtree(path.parent, ignore_errors=True)
    texts = {}
    for size in sizes:
        need, parts = size, []
        for text, unit_ends in zip(pieces, ends):
            if need <= len(unit_ends):
                parts.append(text[:unit_ends[need - 1]])
                break
            parts.append(text)
            need -= len(unit_ends)
        texts[size] = "\n\n".join(parts)
    return texts, f"reasoning sections of {corpus}, joined with blank lines"


def _profile_one_trace(path: Path, out: Path, cache: Path | None, device: str, linker: str | None,
                       types: str, timeout: float) -> dict:
    """Profile one file in a fresh process: seconds, peak resident MB, units, stage seconds; or how it failed."""
    code = (
        "import json, time\n"
        "from thinkprobe.engine import RunOptions, run_profile\n"
        "from thinkprobe.timing import StageTimes\n"
        "times = StageTimes()\n"
        "t = time.perf_counter()\n"
        f"r = run_profile(RunOptions(inputs=[{str(path)!r}], out_dir={str(out)!r}, device={device!r}, progress=False, "
        f"cache={cache is not None!r}, cache_dir={str(cache) if cache else None!r}, linker={linker!r}, types={types!r}, max_units=0), times=times)\n"
        "units = sum(len(json.loads(l)['units']) for l in open(r['out_dir'] + '/graphs.jsonl'))\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'traces': r['traces'], 'errors': r['errors'], "
        f"'units': units, 'stages_s': dict(sorted(times.items())), 'peak_rss_mb': {_hwm_mb()}}}))\n"
    )
    try:
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout or None)
    except subprocess.TimeoutExpired:
        return {"failed": f"still running after {timeout:g} s"}
    if res.returncode != 0:
        return {"failed": f"exit status {res.returncode}", "stderr_tail": res.stderr[-800:]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def growth_exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y on log x: the growth exponent (1 = linear, 2 = quadratic)."""
    import numpy as np

    if len(xs) < 2:
        return None
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def run_long_bench(sizes: tuple[int, ...] = LONG_SIZES, device: str = "auto", linker: str | None = None,
                   types: str = "head", workdir: str | None = None, cache: bool = True, timeout: float = 0) -> dict:
    """Single traces of `sizes` units made from real reasoning text, each profiled in a fresh
    process, smallest first. With `cache` the sizes share an embedding cache: each text extends the
    previous one, so every unit is encoded once and the larger runs time mostly what is not the
    encoder (the stages whose growth this measures; the encoder is linear by construction)."""
    cfg = Config.load()
    tmp = Path(workdir or tempfile.mkdtemp(prefix="thinkprobe-long-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    texts, source = long_trace_texts(tuple(sorted(sizes)), cfg)
    rows = []
    for size, text in texts.items():
        path = tmp / f"long_{size}.jsonl"
        path.write_text(json.dumps({"id": f"long-{size}", "model": "concatenated", "domain": "long",
                                    "reasoning_content": text}, ensure_ascii=False) + "\n", encoding="utf-8")
        result = _profile_one_trace(path, tmp / f"out_{size}", tmp / "cache" if cache else None, device, linker,
                                    types, timeout)
        rows.append({"target_units": size, "chars": len(text), **result})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)  # progress: one line per size
    done = [r for r in rows if "seconds" in r]
    non_encoder = [r["seconds"] - r["stages_s"].get("encode", 0.0) for r in done]
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(device if device != "auto" else "cpu"),
        "source": source,
        "linker": linker or "default (trained)",
        "types": types,
        "shared_embedding_cache": cache,
        "sizes": rows,
        "growth_exponent": {
            "seconds": growth_exponent([r["units"] for r in done], [r["seconds"] for r in done]),
            "non_encoder_seconds": growth_exponent([r["units"] for r in done], non_encoder),
            "peak_rss_mb": growth_exponent([r["units"] for r in done], [r["peak_rss_mb"] for r in done]),
        },
    }
    if not workdir:
        shutil.rmtree(tmp, ignore_errors=True)
    return report


def format_long_bench(r: dict) -> str:
    lines = [f"long traces from {r['source']}; linker {r['linker']}, types {r['types']}; {r['machine']}",
             f"{'units':>7} {'chars':>10} {'seconds':>9} {'non-encoder s':>14} {'peak MB':>8}"]
    for row in r["sizes"]:
        if "seconds" in row:
            lines.append(f"{row['units']:>7} {row['chars']:>10} {row['seconds']:>9.1f} "
                         f"{row['seconds'] - row['stages_s'].get('encode', 0.0):>14.1f} {row['peak_rss_mb']:>8.0f}")
        else:
            lines.append(f"{row['target_units']:>7} {row['chars']:>10} failed: {row['failed']}")
    g = r["growth_exponent"]
    lines.append("growth exponent (log-log slope over the sizes that finished): " + ", ".join(
        f"{k} {v:.2f}" for k, v in g.items() if v is not None))
    return "\n".join(lines)


# --------------------------------------------------------------------------- streaming (issue 42)


def run_stream_bench(units: int = 5000, piece: int = 200, every: int = 20, device: str = "cpu",
                     linker: str | None = None, config: str | None = None, rounds: int = 1) -> dict:
    """One trace of `units` Thought Units (`long_trace_texts`) profiled in one process: at once,
    before and after, and fed to `thinkprobe.stream` in `piece`-character pieces with a snapshot
    every `every` new units, then closed; `rounds` streams, each between two one-shot runs. No
    embedding cache, no report; models, spaCy and the numba kernels warmed first. Wall and CPU
    seconds of each run; the ratio of the stream's median to the one-shot's; whether close() gave
    the one-shot indicators. The one-shot runs call the engine
    under `thinkprobe.profile` (run_profile), for its stage times. `config`: a YAML over the defaults
    (other stream settings), for both."""
    from .api import load_run, profile
    from .indicators import INDICATORS
    from .live import stream

    cfg = Config.load()
    text = long_trace_texts((units,), cfg)[0][units]
    record = {"id": f"stream-{units}", "model": "concatenated", "domain": "long"}
    options = {"cache": False, "report": False, "progress": False, "device": device, "linker": linker, "max_units": 0,
               "config": config}
    profile([{**record, "reasoning_content": text[:4000]}], **options)  # warm: models, spaCy, numba

    def timed(work):
        t, c = time.perf_counter(), time.process_time()
        result = work()
        return result, {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c}

    stages = StageTimes()

    def one_shot():  # the engine under thinkprobe.profile, for its stage times (no report: the same)
        out = tempfile.mkdtemp(prefix="thinkprobe-stream-bench-")
        run_profile(RunOptions(records=[{**record, "reasoning_content": text}], out_dir=out, **options), times=stages)
        return out

    def streamed():
        s = stream(record=record, text_field="reasoning_content", every=every, **options)
        snapshots = sum(s.feed(text[i:i + piece]) is not None for i in range(0, len(text), piece))
        return s, snapshots, s.close()

    once, fed = [], []  # one-shot, stream, one-shot, stream, ..., one-shot: load drifts hit both alike
    folder, timing = timed(one_shot)
    once.append(timing)
    reference = load_run(folder).indicators
    equal = True
    for _ in range(rounds):
        (s, snapshots, run), timing = timed(streamed)
        fed.append(timing)
        equal &= run.indicators[list(INDICATORS)].equals(reference[list(INDICATORS)])
        shutil.rmtree(folder, ignore_errors=True)
        folder, timing = timed(one_shot)
        once.append(timing)
    shutil.rmtree(folder, ignore_errors=True)
    median = {k: {"one_shot": statistics.median(t[k] for t in once), "stream": statistics.median(t[k] for t in fed)}
              for k in ("wall_s", "cpu_s")}
    return {
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(device),
        "trace": {"units": int(reference["units"].iloc[0]), "chars": len(text), "source": "long_trace_texts"},
        "piece_chars": piece, "every": every, "feeds": -(-len(text) // piece), "snapshots": snapshots,
        "one_shot": {"runs": once, "stages_s": {k: v / len(once) for k, v in sorted(stages.items())}},
        "stream": {"runs": fed, "stages_s": {k: v for k, v in sorted(s.times.items())}, "units_encoded": len(s.encoder)},
        "median": median,
        "ratio": {k: v["stream"] / v["one_shot"] for k, v in median.items()},
        "indicators_equal": bool(equal),
        "load_average": os.getloadavg(),
    }


def format_stream_bench(r: dict) -> str:
    m = r["median"]
    return "\n".join([
        f"one trace of {r['trace']['units']} units ({r['trace']['chars']} characters); {r['machine']}",
        f"one-shot profile ({len(r['one_shot']['runs'])} runs): median wall {m['wall_s']['one_shot']:.1f} s, "
        f"CPU {m['cpu_s']['one_shot']:.1f} s",
        f"stream ({len(r['stream']['runs'])} runs between them; {r['feeds']} pieces of {r['piece_chars']} characters, "
        f"{r['snapshots']} snapshots, every {r['every']} units, then close()): median wall {m['wall_s']['stream']:.1f} s, "
        f"CPU {m['cpu_s']['stream']:.1f} s",
        f"stream / one-shot: wall {r['ratio']['wall_s']:.2f}x, CPU {r['ratio']['cpu_s']:.2f}x; "
        f"close() indicators equal to the one-shot's: {r['indicators_equal']}",
        "one-shot stages (s, mean): " + ", ".join(f"{k} {v:.1f}" for k, v in r["one_shot"]["stages_s"].items()),
        "stream stages (s, last run): " + ", ".join(f"{k} {v:.1f}" for k, v in r["stream"]["stages_s"].items()),
        "each run (wall s): one-shot " + ", ".join(f"{t['wall_s']:.1f}" for t in r["one_shot"]["runs"])
        + "; stream " + ", ".join(f"{t['wall_s']:.1f}" for t in r["stream"]["runs"]),
        f"load average at the end: {', '.join(f'{x:.1f}' for x in r['load_average'])}",
    ])
