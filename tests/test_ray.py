"""`--engine ray` (issue 14) on a local Ray instance with two CPUs: the same bytes as the local
engine, bad records in errors.jsonl, a resumed run that skips the committed chunks, and a trace
that fails (raises, runs out of memory, runs past --trace-timeout) or is over --max-units listed in
errors.jsonl as the local engine lists it while the run goes on. The Ray run encodes and scores
afresh (its own cache folder), so its actors' results are what is compared. The failures are
planted by trace id in every worker by tests/ray_failures.py (Ray's worker setup hook); no other
input uses those ids."""
import gzip
import json
import os
import shutil
import threading
import time

import pytest
from click.testing import CliRunner

import ray_failures
from conftest import REPO, SAMPLES
from test_isolation import tiny_trace
from thinkprobe.cli import main
from thinkprobe.engine import run_profile
from thinkprobe.engine import RunOptions

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install thinkprobe[ray])")

COMPARED = ("indicators.csv", "profile.csv", "stats.json", "graphs.jsonl", "errors.jsonl", "model_profiles.csv",
            "redundancy.csv", "norms.json")
BAD = [
    '{"id": "broken", "response": "<think>unterminated json',
    json.dumps({"id": "num", "model": "m", "response": 42}),
    json.dumps({"id": "blank", "model": "m", "response": "<think>   </think>"}),
    json.dumps({"id": "nothing", "model": "m"}),
]


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray on two CPUs, its workers with the failures of tests/ray_failures.py (importable
    by them through PYTHONPATH). Ray gives its processes 30 s to register, which a machine busy
    with other jobs can miss: one more try then. Ray starts its workers at niceness 15 by default;
    here at 0 (RAY_worker_niceness, read by the raylet as it starts), so that the other pytest
    worker of `make test` does not starve them."""
    path = os.pathsep.join([str(REPO / "tests"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    runtime_env = {"env_vars": {"PYTHONPATH": path}, "worker_process_setup_hook": "ray_failures.install"}
    for attempt in (1, 2):
        try:
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("RAY_worker_niceness", "0")
                ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                         runtime_env=runtime_env)
            break
        except Exception:
            ray.shutdown()
            if attempt == 2:
                raise
    yield
    ray.shutdown()


def profile(inputs, out, **kw):
    """A run of either engine. The local one runs torch on one thread, as a Ray actor holding one
    CPU does: on some CPUs the last bits of the encoder's products depend on the thread count, and
    a score on a rounding edge then differs in its last printed digit; like is compared with like."""
    import torch

    threads = torch.get_num_threads()
    if kw.get("engine") != "ray":
        torch.set_num_threads(1)
    try:
        return run_profile(RunOptions(inputs=[str(p) for p in inputs], out_dir=str(out), progress=False, device="cpu",
                                       **{"cache": "cache_dir" in kw, **kw}))
    finally:
        torch.set_num_threads(threads)


REAL_MODELS = ("DeepSeek-R1", "QwQ-32B", "gpt-oss-120b")


def real_subset(folder):
    """12 ReasoningFlow v1 traces (the 4 shortest of DeepSeek-R1, QwQ-32B and gpt-oss-120b: each
    model's conventions) in `folder`/v1_12.jsonl; None without the shared data."""
    from thinkprobe.shared_data import data_dir

    if data_dir() is None:
        return None
    by_model = {m: [] for m in REAL_MODELS}
    with gzip.open(data_dir() / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if doc["metadata"]["generator"] in by_model:
                by_model[doc["metadata"]["generator"]].append(doc)
    picked = [d for docs in by_model.values()
              for d in sorted(docs, key=lambda d: (len(d["raw_text"]["response"]), d["doc_id"]))[:4]]
    subset = folder / "v1_12.jsonl"
    subset.write_text("".join(json.dumps(d) + "\n" for d in picked), encoding="utf-8")
    return subset


@pytest.fixture(scope="module")
def both_runs(local_ray, tmp_path_factory):
    """The sample traces with four bad records among them, profiled by each engine; before them,
    when the shared data is there, 12 real traces (`real_subset`: one run of each engine serves
    both, a Ray run costing most of a minute to start)."""
    tmp = tmp_path_factory.mktemp("ray")
    lines = SAMPLES.read_text(encoding="utf-8").splitlines()
    mixed = tmp / "mixed.jsonl"
    mixed.write_text("\n".join([*lines[:5], *BAD, *lines[5:]]) + "\n", encoding="utf-8")
    inputs = [p for p in (real_subset(tmp), mixed) if p is not None]
    # the local reference in one chunk (a chunk of four holds too few units for full encoder
    # batches: three times the time); its bytes do not depend on the chunk size (test_pipeline.py)
    local = profile(inputs, tmp / "local")
    remote = profile(inputs, tmp / "ray", chunk_size=4, engine="ray", cache_dir=str(tmp / "cache"))
    return tmp, mixed, local, remote


def sample_ids(out):
    """The trace ids of a run's graphs, without the real traces'."""
    graphs = [json.loads(x) for x in (out / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]
    return [g["trace_id"] for g in graphs if not g["source"].endswith("v1_12.jsonl")]


def test_ray_engine_writes_the_local_engines_bytes(both_runs):
    tmp, _, local, remote = both_runs
    assert remote["engine"] == "ray" and remote["traces"] == local["traces"]
    assert len(sample_ids(tmp / "ray")) == 15
    for name in COMPARED:
        assert (tmp / "ray" / name).read_bytes() == (tmp / "local" / name).read_bytes(), name
    local_run = json.loads((tmp / "local" / "run.json").read_text())
    ray_run = json.loads((tmp / "ray" / "run.json").read_text())
    assert ray_run["device"] == local_run["device"] == "cpu" and ray_run["linker"] == local_run["linker"]


def test_bad_records_land_in_errors_jsonl(both_runs):
    tmp, mixed, _, remote = both_runs
    assert remote["errors"] == 4
    errors = [json.loads(x) for x in (tmp / "ray" / "errors.jsonl").read_text().splitlines()]
    assert [e["record"] for e in errors] == ["line 6", "line 7", "line 8", "line 9"]
    assert all(e["file"] == str(mixed) and e["reason"] for e in errors)
    assert "malformed JSON" in errors[0]["reason"]
    assert [e["field"] for e in errors[1:]] == ["response", "response", "reasoning"]
    ids = set(sample_ids(tmp / "ray"))
    assert not ids & {"broken", "num", "blank", "nothing"} and len(ids) == 15


def test_resumed_ray_run_skips_committed_chunks(both_runs):
    tmp, mixed, _, _ = both_runs
    out = tmp / "ray"
    parts = sorted((out / "parts").glob("[0-9]*.jsonl"))
    real = tmp / "v1_12.jsonl"
    inputs = [str(p) for p in (real, mixed) if p.exists()]
    assert len(parts) == (8 if real.exists() else 5)  # 19 records (and 12 real traces) in chunks of 4
    kept = {p: p.stat().st_mtime_ns for p in parts[:3]}
    for p in parts[3:]:
        p.unlink()
    (out / "indicators.csv").unlink()
    res = CliRunner().invoke(main, ["profile", *inputs, "-o", str(out), "--chunk-size", "4", "--device", "cpu",
                                    "--engine", "ray", "--resume", "--cache-dir", str(tmp / "cache"), "--no-report"])
    assert res.exit_code == 0, res.output
    # the first three chunks: the 12 real traces, or 8 samples beside the four bad records without the data
    assert f"({12 if real.exists() else 8} from committed chunks)" in res.output
    assert {p: p.stat().st_mtime_ns for p in parts[:3]} == kept
    assert all(p.exists() for p in parts)
    for name in COMPARED:
        assert (out / name).read_bytes() == (tmp / "local" / name).read_bytes(), name


@pytest.mark.realdata
def test_real_traces_of_three_models_byte_identical(both_runs, shared_data):
    """The 12 real traces of both_runs (three models' conventions, three chunks of four): every
    output the issue names is byte-identical between the engines. Thirty traces took 73 s and
    showed nothing twelve do not."""
    tmp, _, _, _ = both_runs
    graphs = [json.loads(x) for x in (tmp / "ray" / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]
    real = [g for g in graphs if g["source"].endswith("v1_12.jsonl")]
    assert len(real) == 12 and {g["model"] for g in real} == set(REAL_MODELS)
    for name in ("indicators.csv", "profile.csv", "stats.json", "graphs.jsonl"):
        assert (tmp / "ray" / name).read_bytes() == (tmp / "local" / name).read_bytes(), name


# --------------------------------------------------------------------------- failure isolation

# Not shorter: the other traces are tiny, but a Ray stage's time limit also covers starting its
# worker process's libraries, and a machine busy with other tests gave 6 s too little.
TIMEOUT_S = 10


# A trace over --max-units is not encoded and lands in errors.jsonl, as the local engine lists it.
MAX_UNITS = 12
LONG = json.dumps({"id": "long", "model": "m", "domain": "d", "response": "<think>" + " ".join(
    f"Step {k}: add {k} to the total." for k in range(MAX_UNITS + 4)) + "</think>It is done."})


@pytest.fixture(scope="module")
def failing_runs(local_ray, tmp_path_factory):
    """Eight tiny traces, five of which fail in different stages (tests/ray_failures.py), and one
    over --max-units, profiled with --trace-timeout by the local engine (the failures monkeypatched
    in) and on Ray. The model stages take batches of two traces, so that a batch stuck in the linker
    (the time limit in an actor's thread) waits 2 x TIMEOUT_S at most before its traces are run
    alone (t4's batch holds t5, which the encoder failed: t4 is the one trace left in it, and is not
    run again)."""
    import thinkprobe.graph as graph

    tmp = tmp_path_factory.mktemp("failing")
    src = tmp / "in.jsonl"
    src.write_text("".join(line + "\n" for line in [*map(tiny_trace, range(8)), LONG]), encoding="utf-8")
    config = tmp / "small_batches.yaml"
    config.write_text("ray:\n  encode_batch_traces: 2\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        for target, name, replacement in ray_failures.failing(graph):
            mp.setattr(target, name, replacement)
        # chunks of one: a stuck trace costs the local engine TIMEOUT_S once (a chunk of one is not run again)
        local = profile([src], tmp / "local", chunk_size=1, trace_timeout=TIMEOUT_S, config=str(config),
                        max_units=MAX_UNITS)
    remote = profile([src], tmp / "ray", chunk_size=4, trace_timeout=TIMEOUT_S, config=str(config), engine="ray",
                     cache_dir=str(tmp / "cache"), max_units=MAX_UNITS)
    return tmp, src, local, remote


def test_failing_traces_are_listed_and_the_ray_run_goes_on(failing_runs):
    tmp, src, local, remote = failing_runs
    assert (remote["traces"], remote["errors"]) == (local["traces"], local["errors"]) == (3, 6)
    timed_out = f"took longer than the time limit of {TIMEOUT_S} s (raise it with --trace-timeout)"
    reasons = {"t2": timed_out,
               "t3": "profiling failed: RuntimeError: boom",
               "t4": timed_out,
               "t5": "ran out of memory while profiling this trace",
               "t6": "profiling failed: ValueError: cannot link t6"}
    errors = [json.loads(x) for x in (tmp / "ray" / "errors.jsonl").read_text().splitlines()]
    assert errors[:-1] == [{"file": str(src), "record": int(i[1:]), "field": "response", "reason": reason,
                            "model": "m", "trace_id": i} for i, reason in reasons.items()]
    assert errors[-1]["trace_id"] == "long" and f"over the limit of {MAX_UNITS}" in errors[-1]["reason"]
    ids = [json.loads(x)["trace_id"] for x in (tmp / "ray" / "graphs.jsonl").read_text().splitlines()]
    assert ids == ["t0", "t1", "t7"]


def test_failing_traces_give_the_local_engines_bytes_on_ray(failing_runs):
    tmp, _, _, _ = failing_runs
    for name in COMPARED:
        assert (tmp / "ray" / name).read_bytes() == (tmp / "local" / name).read_bytes(), name


def test_time_limit_holds_in_ray_data_tasks_and_actor_pools(local_ray):
    """Where Ray Data calls a map_batches function on this Ray version: a task's in its worker's
    main thread (the time limit is SIGALRM there), an actor pool's in a thread of the actor's own
    (SIGALRM cannot work there; a timer raises in that thread). The limit stops a stuck block in both."""
    ds = ray.data.range(1, override_num_blocks=1)
    task = ds.map_batches(ray_failures.limited_task, batch_size=None, num_cpus=0.5).take_all()
    actor = ds.map_batches(ray_failures.LimitedActor, batch_size=None, num_cpus=0.5,
                           compute=ray.data.ActorPoolStrategy(size=1)).take_all()
    assert [r["main_thread"] for r in task] == [True] and [r["main_thread"] for r in actor] == [False]
    for row in task + actor:
        assert row["stopped"] and row["seconds"] < ray_failures.STUCK_AT_MOST_S / 2


def test_time_limit_off_the_main_thread_ends_with_the_block():
    """The timer path of isolation.time_limit (an actor's thread): the timeout names the limit the
    user set, is raised even if the block catches it, and never after a block that ended in time."""
    from thinkprobe.isolation import TraceTimeout, time_limit

    seen = []

    def run():
        try:
            with time_limit(0.3, named=10):
                try:
                    ray_failures.stuck()
                except Exception:  # noqa: BLE001 - a block that swallows the timeout
                    seen.append("caught inside")
        except TraceTimeout as exc:
            seen.append(str(exc))
        with time_limit(0.3):
            pass
        time.sleep(0.6)  # past that limit: nothing may be raised now
        seen.append("no late timeout")

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(ray_failures.STUCK_AT_MOST_S * 2)
    assert seen == ["caught inside", "took longer than the time limit of 10 s", "no late timeout"]


def test_an_encoder_that_does_not_load_stops_the_ray_run(local_ray, tmp_path):
    """A failure of the run, not of a trace: every batch would fail, so the run stops and says why
    instead of listing each trace in errors.jsonl (as the local engine's preflight does)."""
    from thinkprobe.encoder import default_encoder_path

    weightless = tmp_path / "weightless"
    shutil.copytree(default_encoder_path(), weightless, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    src = tmp_path / "in.jsonl"
    src.write_text(tiny_trace(0) + "\n" + tiny_trace(1) + "\n", encoding="utf-8")
    with pytest.raises(Exception, match="model.safetensors") as info:
        profile([src], tmp_path / "out", engine="ray", encoder=str(weightless), cache_dir=str(tmp_path / "cache"))
    assert str(weightless) in str(info.value)
    assert not (tmp_path / "out" / "errors.jsonl").exists() and not list((tmp_path / "out" / "parts").glob("0*.jsonl"))


def test_a_worker_crash_stops_the_ray_run(local_ray, tmp_path):
    """A trace that kills its worker process cannot be isolated in-process: Ray tries the task again
    `ray: crash_retries` times (here once: each try starts a worker process afresh), then the run
    stops (Ray Data's default retries without end, and the run would hang). Last in the module: it
    leaves Ray to replace the workers that died."""
    src = tmp_path / "in.jsonl"
    src.write_text(tiny_trace(0) + "\n" + tiny_trace(9) + "\n", encoding="utf-8")
    config = tmp_path / "one_retry.yaml"
    config.write_text("ray:\n  crash_retries: 1\n", encoding="utf-8")
    with pytest.raises(Exception, match="died unexpectedly"):
        profile([src], tmp_path / "out", engine="ray", chunk_size=1, config=str(config), cache_dir=str(tmp_path / "cache"))
    assert not (tmp_path / "out" / "errors.jsonl").exists()
