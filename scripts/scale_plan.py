"""Capacity plan for `profile --engine ray` (docs/scale.md): measured per-stage costs, then the
hours 1,000,000 traces take on N GPUs and which stage limits.

    python scripts/scale_plan.py measure -n 100 --json docs/scale-cpu.json
        profiles N real traces (ReasoningFlow v1, seeded sample; the bundled samples without
        ../shared/data) with the local engine, timing each stage in CPU seconds of this process
        (so the figures hold on a busy machine too), then with the Ray engine on a local Ray,
        timing the driver's own CPU (reading, handing traces to Ray, committing chunks). Both runs
        start with an empty cache. Checks that the two engines wrote the same bytes.
    python scripts/scale_plan.py table [--bench docs/bench-cpu.json] [--measured docs/scale-cpu.json]
                                       [--gpu-units-per-s R] [--cpus-per-gpu 16]
        the capacity table from scripts/bench.py's per-stage figures (and the driver's cost from
        `measure`, when given). Without R (the encoder's units per second on
        one GPU, `raw_encoder.units_per_s` of scripts/gpu_bench.sh's bench-gpu.json), the table
        uses a stated assumption and says so. With --assemble, the assembling cost per trace is
        that file's slope instead of the bench run's assemble seconds over its traces (which hold
        the stage's fixed cost: imports, the statistics' resampling).
    python scripts/scale_plan.py assemble RUN_DIR [--copies 1,5] [--json docs/scale-assemble.json]
        the assembling stage alone (runner.assemble: joining the chunks, the tables, norms,
        anomalies, statistics) on RUN_DIR's committed chunks copied K times into a scratch run, in
        CPU seconds of this process per step, for each K; the cost per trace is the slope between
        the smallest and the largest K. RUN_DIR: a finished run of this version (its chunks carry
        each trace's failure_risk).
"""
from __future__ import annotations

import argparse
import csv
import json
import resource
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from thinkprobe.shared_data import real_corpus
from thinkprobe.engine import run_profile
from thinkprobe.engine import RunOptions
from thinkprobe.timing import StageTimes

# sbert.net's table of pretrained models lists all-MiniLM-L6-v2 at 14,200 sentences/s on a V100
# (fp32): a public figure, not a measurement of ours, and not on an H200.
ASSUMED_GPU_UNITS_PER_S = 14200.0
CPU_STAGES = ("split", "tile_type", "link", "indicators_serialise")
COMPARED = ("indicators.csv", "profile.csv", "stats.json", "graphs.jsonl")


class CpuTimes(StageTimes):
    """StageTimes in CPU seconds of this process (all its threads) instead of wall seconds."""

    @contextmanager
    def __call__(self, stage: str):
        start = time.process_time()
        try:
            yield
        finally:
            self[stage] += time.process_time() - start


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(n: int, workdir: Path) -> dict:
    import ray

    lines, corpus = real_corpus(n)
    path = workdir / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def run(name: str, times: StageTimes, **kw) -> tuple[dict, float, float]:
        cpu, wall = _cpu_self(), time.perf_counter()
        result = run_profile(RunOptions(inputs=[str(path)], out_dir=str(workdir / name), device="cpu", progress=False,
                                        cache_dir=str(workdir / f"cache-{name}"), **kw), times=times)
        return result, _cpu_self() - cpu, time.perf_counter() - wall

    local_times = CpuTimes()
    local, local_cpu, local_wall = run("local", local_times)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        ray_times = StageTimes()
        _, ray_driver_cpu, ray_wall = run("ray", ray_times, engine="ray")
    finally:
        ray.shutdown()
    with open(workdir / "local" / "indicators.csv", newline="", encoding="utf-8") as f:
        units = sum(int(r["units"]) for r in csv.DictReader(f))
    traces = local["traces"]
    stages = dict(sorted(local_times.items()))
    return {
        "date": time.strftime("%Y-%m-%d"),
        "command": f"python scripts/scale_plan.py measure -n {n}",
        "machine": "x86_64, 2 CPU cores shared with other jobs, torch on CPU (2 threads), local Ray with num_cpus=2",
        "corpus": corpus,
        "traces": traces,
        "units": units,
        "units_per_trace": units / traces,
        "local_engine": {
            "cpu_s_by_stage": stages,
            "process_cpu_s": local_cpu,
            "wall_s": local_wall,
            "encoder_units_per_cpu_s": units / stages["encode"],
            "cpu_stages_cpu_s_per_unit": sum(stages.get(s, 0.0) for s in CPU_STAGES) / units,
            "assemble_cpu_s_per_trace": stages["assemble"] / traces,
        },
        "ray_engine": {
            "wall_s": ray_wall,
            "driver_cpu_s": ray_driver_cpu,
            "driver_wall_s_by_stage": dict(sorted(ray_times.items())),
            "driver_cpu_s_per_trace_without_assemble": (ray_driver_cpu - stages["assemble"]) / traces,
        },
        "identical_outputs": all((workdir / "ray" / f).read_bytes() == (workdir / "local" / f).read_bytes() for f in COMPARED),
    }


class _StepTimes:
    """runner.assemble's progress: CPU seconds of this process from one step's start to the next."""

    def __init__(self):
        self.times: dict[str, float] = {}
        self._step, self._start = None, time.process_time()

    def stage(self, name: str | None) -> None:
        now = time.process_time()
        if self._step is not None:
            self.times[self._step] = now - self._start
        self._step, self._start = name, now


def assemble_cost(run_dir: Path, copies: list[int], workdir: Path) -> dict:
    from types import SimpleNamespace

    from thinkprobe.config import Config
    from thinkprobe.runner import assemble

    parts = sorted((run_dir / "parts").glob("[0-9]*.jsonl"))
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    encoder = SimpleNamespace(path=run["encoder"]["path"], name=run["encoder"]["name"], precision=run["encoder"]["precision"],
                              max_seq_length=run["encoder"]["max_seq_length"], tokenizer_name=run["tokenizer"],
                              device=run["device"])
    linker = SimpleNamespace(name=run["linker"])
    rows = []
    for k in copies:
        out = workdir / f"copies-{k}"
        (out / "parts").mkdir(parents=True)
        for c in range(k):
            for j, part in enumerate(parts):
                (out / "parts" / f"{c * len(parts) + j:06d}.jsonl").write_bytes(part.read_bytes())
        steps = _StepTimes()
        result = assemble(out, Config.load(), encoder, linker, RunOptions(inputs=[str(run_dir)], out_dir=str(out)),
                          progress=steps)
        steps.stage(None)
        rows.append({"copies": k, "traces": result["traces"], "cpu_s_by_step": steps.times,
                     "cpu_s": sum(steps.times.values())})
    first, last = rows[0], rows[-1]
    slope = (last["cpu_s"] - first["cpu_s"]) / (last["traces"] - first["traces"])
    return {"date": time.strftime("%Y-%m-%d"), "command": f"python scripts/scale_plan.py assemble RUN_DIR --copies "
            f"{','.join(map(str, copies))}", "run": run["inputs"], "runs": rows, "cpu_s_per_trace": slope,
            "fixed_cpu_s": first["cpu_s"] - slope * first["traces"]}


def table(bench: dict, measured: dict | None, gpu_units_per_s: float | None, cpus_per_gpu: int,
          traces: int = 1_000_000, gpus: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64),
          assembling: dict | None = None) -> str:
    """The capacity table. `bench`: scripts/bench.py's JSON (units per trace, wall seconds per stage
    of a one-process run, raw encoder units/s); `measured`: this script's `measure` JSON (the Ray
    driver's CPU per trace), or None (that row is then left to measure)."""
    u = bench["units"] / bench["traces"]
    stages = bench["full_pipeline"]["stages_s"]
    c = sum(stages.get(s, 0.0) for s in CPU_STAGES) / bench["units"]  # one process: wall = one core
    a = assembling["cpu_s_per_trace"] if assembling else stages["assemble"] / bench["traces"]
    threads = 2  # torch's threads in that run (bench JSON "machine")
    enc_core = bench["raw_encoder"]["units_per_s"] / threads
    d = measured["ray_engine"]["driver_cpu_s_per_trace_without_assemble"] if measured else None
    r = gpu_units_per_s or ASSUMED_GPU_UNITS_PER_S
    free = cpus_per_gpu - 1.5  # an encoder actor holds 1 CPU, a linker actor 0.5 (configs/default.yaml, ray:)
    units = traces * u
    rows = [
        "| GPUs | encoder h | CPU stages h | driver h | assemble h | total h | limited by |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n in gpus:
        t_gpu = units / (n * r) / 3600
        t_cpu = units * c / (n * free) / 3600
        t_drv = traces * d / 3600 if d is not None else 0.0
        t_asm = traces * a / 3600
        # the streaming stages overlap (the slowest sets their pace); assembling follows them
        stream = max((t_gpu, "encoder (GPU)"), (t_cpu, "CPU stages"), (t_drv, "driver"))
        limit = stream[1] if stream[0] >= t_asm else f"assemble (serial, on the driver); then {stream[1]}"
        rows.append(f"| {n} | {t_gpu:.2f} | {t_cpu:.2f} | {f'{t_drv:.2f}' if d is not None else 'to measure'} "
                    f"| {t_asm:.2f} | {stream[0] + t_asm:.2f} | {limit} |")
    head = [
        f"Inputs: {u:.1f} units/trace; CPU stages (split, tile_type, link, indicators_serialise) {c * 1e6:.0f} "
        f"core-us/unit; assemble {a * 1e3:.2f} ms/trace"
        + (f" (the slope over {assembling['runs'][0]['traces']:,} to {assembling['runs'][-1]['traces']:,} traces, "
           f"{assembling['date']})" if assembling else "")
        + f"; CPU encoder {enc_core:.0f} units per core-second (from {bench['corpus']}, {bench['date']}).",
        f"GPU encoder: {r:,.0f} units/s per GPU "
        + ("(measured)." if gpu_units_per_s else "(ASSUMPTION: sbert.net's V100 figure for all-MiniLM-L6-v2; not measured here)."),
        f"{cpus_per_gpu} CPU cores per GPU, {free:g} of them free for the CPU stages.",
        "",
    ]
    cores = 64
    t_cpu_only = units * (1 / enc_core + c) / cores / 3600
    tail = ["", f"Without GPUs, {cores} CPU cores: {t_cpu_only:.1f} h for the streaming stages, plus {traces * a / 3600:.2f} h assemble."]
    return "\n".join(head + rows + tail)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("-n", type=int, default=100)
    m.add_argument("--json", default=None)
    m.add_argument("--workdir", default=None)
    t = sub.add_parser("table")
    t.add_argument("--bench", default="docs/bench-cpu.json", help="scripts/bench.py's JSON")
    t.add_argument("--measured", default=None, help="this script's measure JSON (the Ray driver's cost)")
    t.add_argument("--gpu-units-per-s", type=float, default=None)
    t.add_argument("--cpus-per-gpu", type=int, default=16)
    t.add_argument("--assemble", default=None, help="this script's assemble JSON (assembling cost per trace)")
    a = sub.add_parser("assemble")
    a.add_argument("run_dir", type=Path)
    a.add_argument("--copies", default="1,5", help="comma-separated copy counts of the run's chunks")
    a.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.cmd == "assemble":
        with tempfile.TemporaryDirectory(prefix="thinkprobe-assemble-") as tmp:
            report = assemble_cost(args.run_dir, [int(k) for k in args.copies.split(",")], Path(tmp))
        text = json.dumps(report, indent=2) + "\n"
        if args.json:
            Path(args.json).write_text(text, encoding="utf-8")
        sys.stdout.write(text)
        return
    if args.cmd == "measure":
        workdir = Path(args.workdir or tempfile.mkdtemp(prefix="thinkprobe-scale-"))
        workdir.mkdir(parents=True, exist_ok=True)
        report = measure(args.n, workdir)
        text = json.dumps(report, indent=2) + "\n"
        if args.json:
            Path(args.json).write_text(text, encoding="utf-8")
        sys.stdout.write(text)
    else:
        bench = json.loads(Path(args.bench).read_text(encoding="utf-8"))
        measured = json.loads(Path(args.measured).read_text(encoding="utf-8")) if args.measured else None
        assembling = json.loads(Path(args.assemble).read_text(encoding="utf-8")) if args.assemble else None
        print(table(bench, measured, args.gpu_units_per_s, args.cpus_per_gpu, assembling=assembling))


if __name__ == "__main__":
    main()
