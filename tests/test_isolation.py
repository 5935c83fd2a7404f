"""Failure isolation and exit statuses (issue 16): a trace that raises, runs out of memory, runs past
the time limit or has too many units is listed in errors.jsonl and the run goes on; a native crash
loses no committed chunk and --resume gets past the trace that crashed; `profile` exits 4 when no
trace was profiled; stats/report/export/graph on a folder that is not a run exit 2 in one line.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO
from thinkprobe.cli import main
from thinkprobe.isolation import TraceTimeout, time_limit
from thinkprobe.engine import RunOptions, run_profile


def tiny_trace(i: int) -> str:
    return json.dumps({"id": f"t{i}", "model": "m", "domain": "d",
                       "response": f"<think>Okay, we need {i} + 2. That is {i + 2}. Wait, check: {i} + 2 = {i + 2}. "
                                   f"So the sum is {i + 2}.</think>It is {i + 2}."})


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def profile(inputs, out, **kw):
    kw.setdefault("device", "cpu")
    return run_profile(RunOptions(inputs=[str(p) for p in inputs], out_dir=str(out), progress=False,
                                   **{"cache": "cache_dir" in kw, **kw}))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def indicators_by_id(out: Path) -> dict[str, dict]:
    return {g["trace_id"]: g["indicators"] for g in read_jsonl(out / "graphs.jsonl")}


@pytest.fixture(scope="module")
def five_alone(tmp_path_factory):
    """t0, t1, t2, t4, t5 profiled without t3: what every isolated run must give for them."""
    folder = tmp_path_factory.mktemp("alone")
    path = write_lines(folder / "alone.jsonl", [tiny_trace(i) for i in (0, 1, 2, 4, 5)])
    profile([path], folder / "out", chunk_size=2)
    return indicators_by_id(folder / "out")


# --------------------------------------------------------------------------- exceptions and limits


def test_time_limit_interrupts_a_block_and_restores_the_alarm():
    before = signal.getsignal(signal.SIGALRM)
    start = time.monotonic()
    with pytest.raises(TraceTimeout, match=r"took longer than the time limit of 0.2 s"):
        with time_limit(0.2):
            time.sleep(30)
    assert time.monotonic() - start < 25
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    with time_limit(0):  # no limit
        pass


@pytest.mark.parametrize(("failure", "reason"), [
    (RuntimeError("boom"), "profiling failed: RuntimeError: boom"),
    (MemoryError(), "ran out of memory while profiling this trace"),
])
def test_a_trace_that_raises_is_listed_and_the_others_are_profiled_as_alone(tmp_path, monkeypatch, five_alone,
                                                                            failure, reason):
    import thinkprobe.graph as graph

    original = graph.tile_and_type
    tries = []

    def failing(trace, *args, **kwargs):
        if trace.trace_id == "t3":
            tries.append(trace.trace_id)
            raise failure
        return original(trace, *args, **kwargs)

    monkeypatch.setattr(graph, "tile_and_type", failing)
    path = write_lines(tmp_path / "in.jsonl", [tiny_trace(i) for i in range(6)])
    result = profile([path], tmp_path / "out", chunk_size=4)
    assert (result["traces"], result["errors"]) == (5, 1) and len(tries) == 2  # in its chunk, then alone
    assert read_jsonl(tmp_path / "out" / "errors.jsonl") == [
        {"file": str(path), "record": 3, "field": "response", "reason": reason, "model": "m", "trace_id": "t3"}]
    assert indicators_by_id(tmp_path / "out") == five_alone
    assert not list((tmp_path / "out" / "parts").glob("*.running"))


def test_a_trace_past_the_time_limit_is_listed_and_the_others_are_profiled_as_alone(tmp_path, monkeypatch, five_alone):
    import thinkprobe.graph as graph

    original = graph.tile_and_type
    started = []

    def stuck(trace, *args, **kwargs):
        if trace.trace_id == "t3":
            started.append(trace.trace_id)
            time.sleep(3600)
        return original(trace, *args, **kwargs)

    monkeypatch.setattr(graph, "tile_and_type", stuck)
    path = write_lines(tmp_path / "in.jsonl", [tiny_trace(i) for i in range(6)])
    # chunks of one: t3 waits the limit out once (its chunk was the trace alone: not run again)
    result = profile([path], tmp_path / "out", chunk_size=1, trace_timeout=4)
    assert (result["traces"], result["errors"]) == (5, 1) and len(started) == 1
    [error] = read_jsonl(tmp_path / "out" / "errors.jsonl")
    assert error["trace_id"] == "t3"
    assert error["reason"] == "took longer than the time limit of 4 s (raise it with --trace-timeout)"
    assert indicators_by_id(tmp_path / "out") == five_alone


def _load_spies(monkeypatch, weights: bool = False) -> list[tuple[str, bool]]:
    """(what loaded, whether a trace's time limit was running) for spaCy, the encoder's weights and
    the parser's networks (with `weights`, also every safetensors file), from now on (time_limit
    spied in both engines)."""
    import contextlib
    import functools

    import spacy

    import thinkprobe.encoder as encoder_module
    import thinkprobe.isolation as isolation
    import thinkprobe.link.parser.linker as parser_linker
    import thinkprobe.ray_engine as ray_engine
    import thinkprobe.segment as segment

    running, loads = [], []

    @contextlib.contextmanager
    def spied_limit(seconds, named=None):
        running.append(seconds)
        try:
            with time_limit(seconds, named):
                yield
        finally:
            running.pop()

    def spy(name, real):
        def load(*args, **kwargs):
            loads.append((name, any(running)))
            return real(*args, **kwargs)
        return load

    monkeypatch.setattr(isolation, "time_limit", spied_limit)
    monkeypatch.setattr(ray_engine, "time_limit", spied_limit)
    monkeypatch.setattr(spacy, "blank", spy("spacy", spacy.blank))
    monkeypatch.setattr(encoder_module, "load_model", spy("encoder", encoder_module.load_model))
    monkeypatch.setattr(parser_linker, "load_parser_model", spy("parser", parser_linker.load_parser_model))
    if weights:
        import safetensors.torch

        monkeypatch.setattr(safetensors.torch, "load_file", spy("weights", safetensors.torch.load_file))
    # a splitter of its own, not the one earlier tests loaded (it is kept once loaded)
    monkeypatch.setattr(segment, "_nlp", functools.lru_cache(maxsize=1)(segment._nlp.__wrapped__))
    return loads


def test_models_load_before_the_first_traces_time_limit_starts(tmp_path, monkeypatch):
    """With --trace-timeout, spaCy, the encoder's weights and the parser's networks load before any
    trace's time limit starts, in the local engine and in the Ray engine's stages (called here in
    this process, as an actor calls them), so that loading is not charged to the first traces of a
    process."""
    import pickle

    import thinkprobe.ray_engine as ray_engine
    import thinkprobe.segment as segment
    from thinkprobe.records import Trace
    from thinkprobe.runner import run_config, run_traces

    loads = _load_spies(monkeypatch)
    path = write_lines(tmp_path / "in.jsonl", [tiny_trace(i) for i in range(2)])
    assert profile([path], tmp_path / "local", chunk_size=1, trace_timeout=60)["traces"] == 2
    assert {name for name, _ in loads} == {"spacy", "encoder", "parser"} and not any(inside for _, inside in loads), loads

    loads.clear()
    segment._nlp.cache_clear()  # a fresh process: its splitter not loaded yet
    opts = RunOptions(inputs=[str(path)], out_dir=str(tmp_path / "ray"), device="cpu", trace_timeout=60, progress=False)
    cfg = run_config(opts)
    trace = next(t for t in run_traces(opts, cfg) if isinstance(t, Trace))
    batch = ray_engine.split_stage(ray_engine._batch([(0, {"trace": trace})]), cfg)
    batch = ray_engine.EncodeStage(cfg, {"device": "cpu"})(batch)
    batch = ray_engine.LinkStage(opts, cfg, "cpu")(ray_engine.tile_stage(batch, cfg))
    assert "graph" in pickle.loads(batch["state"][0])
    assert {name for name, _ in loads} == {"spacy", "encoder", "parser"} and not any(inside for _, inside in loads), loads


def test_pair_mlp_and_type_head_load_before_the_first_traces_time_limit(tmp_path, monkeypatch):
    """The same for the pair MLP and its type head (`--linker pair-mlp`, `--types head`): their
    weights loaded on first use, inside the first chunk's time limit."""
    loads = _load_spies(monkeypatch, weights=True)
    path = write_lines(tmp_path / "in.jsonl", [tiny_trace(i) for i in range(2)])
    assert profile([path], tmp_path / "out", chunk_size=1, trace_timeout=60, linker="pair-mlp", types="head")["traces"] == 2
    weights = [inside for name, inside in loads if name == "weights"]
    assert len(weights) >= 2 and not any(inside for _, inside in loads), loads  # the pair models and the type head


def test_a_fresh_installation_compiles_before_the_first_time_limit(tmp_path):
    """numba compiles the indicators, TextTiling and the pair features on first use, for seconds, in a
    fresh installation (an empty numba cache), and --workers processes start, import and load spaCy;
    under a tight --trace-timeout the first traces timed out and were lost to errors.jsonl (with
    --workers 2 every trace, even at 2 s). Both happen before the first limit now: a run with an empty
    numba cache and a 4-second limit profiles its traces. With --workers 2 the main process links under
    the limit and compiles every routine first (as a run with one process does: `warm_up`), and the
    workers compile theirs; one process alone is not run too (40 s of `make test` for no path of its own)."""
    workers = 2
    path = write_lines(tmp_path / "in.jsonl", [tiny_trace(k) for k in range(1, workers + 1)])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO),
           "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    cmd = [sys.executable, "-m", "thinkprobe.cli", "profile", str(path), "-o", str(tmp_path / "out"), "--device", "cpu",
           "--trace-timeout", "4", "--no-report", "--workers", str(workers), "--chunk-size", "1"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert any((tmp_path / "numba").rglob("*.nbi")), "numba cached nothing: the cache was not fresh"
    assert (tmp_path / "out" / "errors.jsonl").read_text(encoding="utf-8") == ""
    assert sorted(indicators_by_id(tmp_path / "out")) == [f"t{k}" for k in range(1, workers + 1)]


def test_ray_link_stage_reads_with_the_runs_encoder_options(tmp_path):
    """The Ray link actor's reader runs on an encoder built with the run's options, as the local
    engine binds it (graph.build_graphs): with --precision bf16 its reader runs in bf16 and the
    graph's types and edges are those of a local run's graph at bf16 (it ran on a default fp32
    encoder before, whatever --encoder / --precision said)."""
    import pickle

    import thinkprobe.ray_engine as ray_engine
    from thinkprobe.encoder import make_encoder
    from thinkprobe.graph import build_graphs
    from thinkprobe.records import Trace
    from thinkprobe.runner import run_config, run_linker, run_traces, run_typer

    path = write_lines(tmp_path / "in.jsonl", [tiny_trace(3)])
    opts = RunOptions(inputs=[str(path)], out_dir=str(tmp_path / "ray"), device="cpu", precision="bf16", progress=False)
    cfg = run_config(opts)
    trace = next(t for t in run_traces(opts, cfg) if isinstance(t, Trace))
    overrides = {"device": "cpu", "precision": "bf16", "batch_size": 4}
    stage = ray_engine.LinkStage(opts, cfg, "cpu", overrides)
    batch = ray_engine.split_stage(ray_engine._batch([(0, {"trace": trace})]), cfg)
    batch = ray_engine.EncodeStage(cfg, overrides)(batch)
    graph = pickle.loads(stage(ray_engine.tile_stage(batch, cfg))["state"][0])["graph"]
    bound = stage.local.linker.encoder
    assert (bound.precision, bound.batch_size) == ("bf16", 4)

    linker = run_linker(opts, cfg, "cpu", None)
    [local] = build_graphs([trace], cfg, make_encoder(cfg, overrides), linker, typer=run_typer(opts, linker, None))
    assert [u.node_type for u in graph.units] == [u.node_type for u in local.units]
    assert graph.edges == local.edges


# --------------------------------------------------------------------------- a native crash, then --resume

CRASHING_CLI = """
import os, signal, sys
import thinkprobe.graph as graph

original = graph.tile_and_type


def crash_on_t3(trace, *args, **kwargs):
    if trace.trace_id == "t3":
        os.kill(os.getpid(), signal.SIGSEGV)  # what a segfault in BLAS or numba does to the process
    return original(trace, *args, **kwargs)


graph.tile_and_type = crash_on_t3
from thinkprobe.cli import main

main()
"""


def test_a_native_crash_keeps_committed_chunks_and_resume_gets_past_the_trace(tmp_path, five_alone):
    path = write_lines(tmp_path / "in.jsonl", [tiny_trace(i) for i in range(6)])
    script = tmp_path / "crashing_cli.py"
    script.write_text(CRASHING_CLI, encoding="utf-8")
    out = tmp_path / "out"
    cmd = [sys.executable, str(script), "profile", str(path), "-o", str(out), "--chunk-size", "2", "--device", "cpu",
           "--no-progress", "--no-report", "--no-cache", "--no-summary"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO)}

    def run(*extra):
        return subprocess.run([*cmd, *extra], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)

    first = run()
    assert first.returncode == -signal.SIGSEGV, first.stderr
    committed = out / "parts" / "000000.jsonl"
    stamp = committed.stat().st_ino, committed.stat().st_mtime_ns, committed.read_bytes()
    marker = json.loads((out / "parts" / "000001.running").read_text())
    assert marker == {"mode": "chunk", "trace_ids": ["t2", "t3"]}

    # The chunk that died is profiled trace by trace: t2 is done, t3 crashes again, alone this time.
    second = run("--resume")
    assert second.returncode == -signal.SIGSEGV, second.stderr
    marker = json.loads((out / "parts" / "000001.running").read_text())
    assert marker == {"mode": "trace", "current": 1, "trace_id": "t3", "crashed": []}

    third = run("--resume")
    assert third.returncode == 0, third.stderr
    assert (committed.stat().st_ino, committed.stat().st_mtime_ns, committed.read_bytes()) == stamp
    [error] = read_jsonl(out / "errors.jsonl")
    assert (error["trace_id"], error["record"]) == ("t3", 3)
    assert error["reason"].startswith("the process crashed while profiling this trace")
    assert indicators_by_id(out) == five_alone
    assert not list((out / "parts").glob("*.running"))


def test_an_interrupt_marks_no_trace_as_crashed(tmp_path):
    """Ctrl-C while a chunk runs whole, or while its traces run one by one (after a failure or a crash),
    leaves no trace marked as running: the next --resume skips none of them as crashed. Before, a second
    Ctrl-C in the one-by-one phase made a healthy trace 'the process crashed while profiling this trace'."""
    from thinkprobe.io import FieldMap, detect
    from thinkprobe.isolation import TraceLimits, marker_path, profile_chunk_isolated

    chunk = [detect(json.loads(tiny_trace(i)), FieldMap(), "in.jsonl", i) for i in range(3)]
    part = tmp_path / "000000.jsonl"
    marker = marker_path(part)

    def interrupt(items):
        raise KeyboardInterrupt

    def each(items):
        return f"{items[0].trace_id}\n"

    with pytest.raises(KeyboardInterrupt):  # the chunk whole
        profile_chunk_isolated(chunk, interrupt, each, part, TraceLimits())
    assert not marker.exists()

    def stop_at_t1(items):
        if items[0].trace_id == "t1":
            raise KeyboardInterrupt
        return each(items)

    marker.write_text(json.dumps({"mode": "chunk", "trace_ids": ["t0", "t1", "t2"]}) + "\n")  # a crash came first
    with pytest.raises(KeyboardInterrupt):  # one by one, stopped at t1
        profile_chunk_isolated(chunk, each, stop_at_t1, part, TraceLimits())
    assert json.loads(marker.read_text()) == {"mode": "chunk", "crashed": []}  # one by one again, none skipped
    marker.write_text(json.dumps({"mode": "trace", "current": 0, "trace_id": "t0", "crashed": []}) + "\n")
    with pytest.raises(KeyboardInterrupt):  # t0 really crashed; Ctrl-C at t1
        profile_chunk_isolated(chunk, each, stop_at_t1, part, TraceLimits())
    assert json.loads(marker.read_text()) == {"mode": "chunk", "crashed": [0]}
    lines = profile_chunk_isolated(chunk, each, each, part, TraceLimits()).splitlines()  # the resume
    assert "the process crashed" in lines[0] and lines[1:] == ["t1", "t2"]


def test_an_interrupted_profile_says_what_is_kept_and_how_to_resume(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM, which the command turns into the same) ends with the chunks kept and the way on,
    exit status 130, instead of click's bare 'Aborted!'."""
    import signal as signals

    import thinkprobe.api

    path = write_lines(tmp_path / "in.jsonl", [tiny_trace(0)])
    out = tmp_path / "out"

    def stopped(*args, **kwargs):
        (out / "parts").mkdir(parents=True)
        (out / "parts" / "000000.jsonl").write_text("{}\n")
        assert signals.getsignal(signals.SIGTERM) is not signals.SIG_DFL  # SIGTERM is turned into an interrupt
        raise KeyboardInterrupt

    monkeypatch.setattr(thinkprobe.api, "profile", stopped)
    before = signals.getsignal(signals.SIGTERM)
    res = CliRunner().invoke(main, ["profile", str(path), "-o", str(out), "--device", "cpu", "--no-progress"])
    assert res.exit_code == 130
    assert f"interrupted: 1 chunk committed in {out / 'parts'}; run the same command with --resume" in res.stderr
    assert signals.getsignal(signals.SIGTERM) is before  # the handler is put back


# --------------------------------------------------------------------------- exit statuses


def test_profile_exits_4_when_no_trace_was_profiled(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "response": 42}\n{not json\n', encoding="utf-8")
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["profile", str(path), "-o", str(out), "--device", "cpu", "--no-progress",
                                    "--no-cache", "--no-report", "--no-summary"])
    assert res.exit_code == 4, res.output
    assert res.stderr == f"no trace was profiled: all 2 records were skipped (see {out}/errors.jsonl)\n"
    assert len(read_jsonl(out / "errors.jsonl")) == 2


@pytest.mark.parametrize(("command", "missing"), [
    (["stats"], "indicators.csv or profile.csv"),
    (["report"], "indicators.csv or profile.csv"),
    (["export"], "graphs.jsonl"),
    (["graph", "--", "t1"], "graphs.jsonl"),
])
def test_commands_on_a_folder_that_is_not_a_run_exit_2_in_one_line(tmp_path, command, missing):
    folder = tmp_path / "not-a-run"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    args = [command[0], str(folder), *command[2:]] if command[0] == "graph" else [command[0], str(folder)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert res.stderr == (f"{folder} is not a thinkprobe run folder (no {missing}); "
                          f"make one with: thinkprobe profile INPUT -o {folder}\n")
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]  # nothing written into it


# --------------------------------------------------------------------------- acceptance: a mixed file


def test_good_traces_a_2mb_trace_over_the_unit_limit_and_bad_records_in_one_file(tmp_path):
    """Issue 16's acceptance: the run completes; the good traces' indicators equal a run over them
    alone; the 2 MB one-line trace (profiled whole in test_reliability's mixed run) is listed in
    errors.jsonl with the limit a user can raise, because this run lowers --max-units below it."""
    from test_reliability import BAD, GOOD_IDS, _odd_records, sample_lines

    by_id = {json.loads(line)["id"]: line for line in sample_lines()}
    good = [by_id[i] for i in GOOD_IDS]
    alone = write_lines(tmp_path / "good.jsonl", good)
    profile([alone], tmp_path / "alone", max_units=0)
    alone_units = {g["trace_id"]: len(g["units"]) for g in read_jsonl(tmp_path / "alone" / "graphs.jsonl")}
    limit = max(alone_units.values())  # every good trace fits; the 2 MB trace (over 100 units) does not
    two_mb = next(record for name, record in _odd_records() if name == "2 MB single line")
    raw = [line.encode() for line in good[:5]] + [raw for _, raw, _, _ in BAD] + [json.dumps(two_mb).encode()]
    raw += [line.encode() for line in good[5:]]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"\n".join(raw) + b"\n")

    res = CliRunner().invoke(main, ["profile", str(mixed), "-o", str(tmp_path / "mixed"), "--device", "cpu",
                                    "--max-units", str(limit), "--no-progress", "--no-cache", "--no-report"])
    assert res.exit_code == 0, res.output
    errors = read_jsonl(tmp_path / "mixed" / "errors.jsonl")
    assert len(errors) == len(BAD) + 1
    [over] = [e for e in errors if e.get("trace_id") == "odd-2mb"]
    n_units = int(over["reason"].split()[0])
    assert n_units > limit >= 10
    assert over == {"file": str(mixed), "record": 5 + len(BAD), "field": "response", "model": "odd",
                    "trace_id": "odd-2mb",
                    "reason": f"{n_units} Thought Units, over the limit of {limit} (raise it with --max-units)"}
    assert indicators_by_id(tmp_path / "mixed") == indicators_by_id(tmp_path / "alone")
    run = json.loads((tmp_path / "mixed" / "run.json").read_text())
    assert run["config"]["limits"]["max_units"] == limit


def test_a_repetition_loop_is_named_and_left_out_with_max_repeat(tmp_path):
    """ReasoningFlow's QwQ-32B trace repeats one sentence 563 times; the summary names such a trace and
    said "leave them out" with no way to: --max-repeat N lists a trace that says one reasoning sentence N
    or more times in a row in errors.jsonl, and the other traces' indicators are those of a run without it."""
    loop = {"id": "loop", "model": "m", "response": "<think>\nWe add 2 and 3.\n" + "Wait, let me check it again.\n" * 11
            + "So the sum is 5.\n</think>5"}
    nine = {**loop, "id": "nine", "response": loop["response"].replace("Wait, let me check it again.\n" * 11,
                                                                    "Wait, let me check it again.\n" * 9)}
    good = [json.dumps({"id": f"g{k}", "model": "m", "response": f"<think>\nWe add {k} and 3. So {k + 3}.\n</think>{k + 3}"})
            for k in range(3)]
    fast = {"linker": "cue", "types": "cue"}
    summary = profile([write_lines(tmp_path / "all.jsonl", [json.dumps(loop), json.dumps(nine), *good])], tmp_path / "all", **fast)
    assert len(summary["loop_warnings"]) == 1 and "loop: 11 times" in summary["loop_warnings"][0]
    profile([write_lines(tmp_path / "all.jsonl", [json.dumps(loop), json.dumps(nine), *good])], tmp_path / "cut",
            max_repeat=10, **fast)
    [error] = read_jsonl(tmp_path / "cut" / "errors.jsonl")
    assert error["trace_id"] == "loop" and error["reason"] == ("a repetition loop: one sentence 11 times in a row ('Wait, "
                                                               "let me check it again.'), at or over the limit of 10 "
                                                               "(--max-repeat; 0: none)")
    profile([write_lines(tmp_path / "kept.jsonl", [json.dumps(nine), *good])], tmp_path / "kept", **fast)
    assert indicators_by_id(tmp_path / "cut") == indicators_by_id(tmp_path / "kept")


def test_errors_a_user_can_fix_are_one_line_not_a_traceback(tmp_path):
    """A review's tracebacks: a config turning code execution on, `graph -o` naming a file, a damaged
    run.json under report and select, --resume over a damaged manifest. Each is one line now."""
    import shutil

    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": "t1", "model": "m", "reasoning": "Let me think. So 5."}) + "\n")
    out = tmp_path / "run"
    fast = ["--device", "cpu", "--no-progress", "--no-cache", "--linker", "cue", "--types", "cue", "--no-summary"]
    runner = CliRunner()
    assert runner.invoke(main, ["profile", str(path), "-o", str(out), *fast]).exit_code == 0
    config = tmp_path / "allow.yaml"
    config.write_text("redundancy:\n  allow_code_execution: true\n")
    res = runner.invoke(main, ["profile", str(path), "-o", str(tmp_path / "c"), "--config", str(config), *fast])
    assert res.exit_code in (1, 2) and "allow_code_execution" in res.output and res.exc_info[0] is SystemExit
    taken = tmp_path / "taken.html"
    taken.write_text("mine")
    res = runner.invoke(main, ["graph", str(out), "t1", "-o", str(taken)])
    assert res.exit_code == 1 and res.exc_info[0] is SystemExit and taken.read_text() == "mine", res.output
    damaged = tmp_path / "damaged"
    shutil.copytree(out, damaged)
    (damaged / "run.json").write_text("{\n")
    for command in (["report"], ["select"]):
        res = runner.invoke(main, [*command, str(damaged)])
        assert res.exit_code == 2 and res.stderr.startswith(f"{damaged / 'run.json'} is damaged"), res.output
    (out / "run.json").unlink()
    (out / "parts" / "manifest.json").write_text("{not json")
    res = runner.invoke(main, ["profile", str(path), "-o", str(out), "--resume", *fast])
    assert res.exit_code == 1 and "manifest.json is damaged" in res.output and res.exc_info[0] is SystemExit


def test_a_rerun_over_an_interrupted_run_says_its_chunks_are_discarded(tmp_path):
    """A review: rerunning without --resume into an interrupted run's folder dropped its committed
    chunks without a word (the 'cleared' line shows only with progress on)."""
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": "t1", "model": "m", "reasoning": "Let me think. So 5."}) + "\n")
    out = tmp_path / "run"
    fast = ["--device", "cpu", "--no-progress", "--no-cache", "--linker", "cue", "--types", "cue", "--no-summary",
            "--no-report"]
    runner = CliRunner()
    assert runner.invoke(main, ["profile", str(path), "-o", str(out), *fast]).exit_code == 0
    res = runner.invoke(main, ["profile", str(path), "-o", str(out), *fast])
    assert res.exit_code == 0 and "interrupted" not in res.stderr  # a finished run's rerun: quiet as before
    (out / "run.json").unlink()  # as an interrupted run leaves it: committed chunks, no run.json
    res = runner.invoke(main, ["profile", str(path), "-o", str(out), *fast])
    assert res.exit_code == 0 and ("cleared an interrupted run of the same inputs: its 1 committed chunk discarded "
                                   "(--resume would have gone on from them)") in res.stderr, res.stderr


def test_workers_carry_skipped_records_and_a_dead_pool_blames_no_trace(tmp_path):
    """A review, on MiP-Overthinking: with --workers 2 a chunk holding a skipped record sent its
    InputError to a worker, which could not unpickle it (rebuilt from its message alone); the pool
    broke, a chunk of skipped records only crashed the run (and every --resume), and a later one-trace
    chunk was written to errors.jsonl as 'profiling failed: BrokenProcessPool' with exit 0. Skipped
    records now travel whole, the outputs equal --workers 1, and a dead pool stops the run, blaming no
    trace, its chunk left to --resume."""
    import pickle
    from concurrent.futures.process import BrokenProcessPool

    from thinkprobe.io import FieldMap, detect
    from thinkprobe.isolation import TraceLimits, marker_path, profile_chunk_isolated
    from thinkprobe.records import InputError

    error = pickle.loads(pickle.dumps(InputError("f.jsonl", "line 3", "reasoning", "no reasoning text found", "m")))
    assert error.as_dict() == {"file": "f.jsonl", "record": "line 3", "field": "reasoning",
                               "reason": "no reasoning text found", "model": "m"}
    lines = [json.dumps({"id": "s1", "question": "2+2?"}), json.dumps({"id": "s2", "question": "3+3?"}),
             tiny_trace(1), json.dumps({"id": "s3", "question": "4+4?"}), tiny_trace(2)]
    path = write_lines(tmp_path / "in.jsonl", lines)
    outs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        res = CliRunner().invoke(main, ["profile", str(path), "-o", str(out), "--device", "cpu", "--no-progress",
                                        "--no-cache", "--no-report", "--no-summary", "--chunk-size", "2",
                                        "--workers", str(workers)])
        assert res.exit_code == 0, res.output
        outs[workers] = {name: (out / name).read_bytes() for name in ("indicators.csv", "errors.jsonl")}
    assert outs[1] == outs[2] and outs[2]["errors.jsonl"].count(b"\n") == 3

    chunk = [detect(json.loads(tiny_trace(i)), FieldMap(), "in.jsonl", i) for i in range(2)]
    part = tmp_path / "000000.jsonl"

    def broken(items):
        raise BrokenProcessPool("a child process terminated abruptly")

    with pytest.raises(SystemExit, match="a worker process of --workers died"):  # the chunk whole
        profile_chunk_isolated(chunk, broken, broken, part, TraceLimits())
    assert not marker_path(part).exists()
    marker_path(part).write_text(json.dumps({"mode": "chunk", "trace_ids": ["t0", "t1"]}) + "\n")  # one by one
    with pytest.raises(SystemExit, match="no trace is blamed"):
        profile_chunk_isolated(chunk, broken, broken, part, TraceLimits())
    assert json.loads(marker_path(part).read_text()) == {"mode": "chunk", "crashed": []}


def test_a_resume_counts_the_traces_of_committed_chunks_not_their_skipped_records(tmp_path):
    """A review: 'profiled 16 traces (24 from committed chunks)': the count took every item of a
    committed chunk, skipped records included."""
    lines = [json.dumps({"id": "s1", "question": "2+2?"}), tiny_trace(1), json.dumps({"id": "s2", "question": "3?"}),
             tiny_trace(2)]
    path = write_lines(tmp_path / "in.jsonl", lines)
    out = tmp_path / "out"
    args = ["profile", str(path), "-o", str(out), "--device", "cpu", "--no-progress", "--no-cache", "--no-report",
            "--chunk-size", "2", "--linker", "cue", "--types", "cue"]
    assert CliRunner().invoke(main, args).exit_code == 0
    (out / "run.json").unlink()  # as an interrupted run leaves it
    res = CliRunner().invoke(main, [*args, "--resume"])
    assert res.exit_code == 0 and "profiled 2 traces" in res.output and "(2 from committed chunks)" in res.output, res.output


def test_a_run_folder_inside_the_input_is_warned_of_but_not_the_runs_own(tmp_path):
    """A review: every rerun into -o inside the input folder warned of the run's own output as 'a
    ThinkProbe run folder' (printed, while run.json's copy said nothing). Another run kept there is
    said once; the run's own -o is not."""
    import shutil

    data = tmp_path / "in"
    data.mkdir()
    write_lines(data / "a.jsonl", [tiny_trace(1)])
    fast = ["--device", "cpu", "--no-progress", "--no-cache", "--linker", "cue", "--types", "cue", "--no-summary",
            "--no-report"]
    runner = CliRunner()
    for _ in range(2):
        res = runner.invoke(main, ["profile", str(data), "-o", str(data / "out"), *fast])
        assert res.exit_code == 0 and "run folder" not in res.stderr, res.stderr
    shutil.copytree(data / "out", data / "old")
    res = runner.invoke(main, ["profile", str(data), "-o", str(data / "out"), *fast])
    assert res.exit_code == 0 and res.stderr.count("ThinkProbe run folder") == 1 and "(old)" in res.stderr
    assert len((data / "out" / "indicators.csv").read_text().splitlines()) == 2  # one trace: neither run was read
