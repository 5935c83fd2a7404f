"""Failures planted in the profiling functions, by trace id, for tests/test_ray.py. A monkeypatch in
the test process does not reach Ray's workers, so `install` is the workers' setup hook
(`ray.init(runtime_env={"worker_process_setup_hook": "ray_failures.install"})`); a local run gets
the same failures through `failing(thinkprobe.graph)` and monkeypatch. The traces are
test_isolation.tiny_trace(i), ids t0, t1, ...; no other test input uses these ids.

    t2  stuck in tile_and_type (a per-trace CPU stage) until a time limit stops it
    t3  tile_and_type raises RuntimeError("boom")
    t4  stuck in link_graphs (a model stage, in an actor's thread) until a time limit stops it
    t5  the encoder (a model stage) runs out of memory on the batch holding its first unit
    t6  link_graphs (a model stage) raises ValueError on any batch holding t6
    t9  units_of (the first stage, before any model) kills its worker process (what a segfault in
        native code does); never run by a local engine in the test process
"""
from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np

STUCK, RAISES, LINK_STUCK, OUT_OF_MEMORY, LINK_FAILS, CRASHES = "t2", "t3", "t4", "t5", "t6", "t9"
OUT_OF_MEMORY_TEXT = "Okay, we need 5 + 2."  # t5's first Thought Unit
STUCK_AT_MOST_S = 60  # a stuck trace gives up by itself, so a limit that does not hold fails the test, not hangs it


def stuck() -> None:
    """Wait in short sleeps (Python code between them, where either kind of time limit takes effect)."""
    deadline = time.monotonic() + STUCK_AT_MOST_S
    while time.monotonic() < deadline:
        time.sleep(0.05)


def _tile(original):
    def tile_and_type(trace, *args, **kwargs):
        if trace.trace_id == STUCK:
            stuck()
        if trace.trace_id == RAISES:
            raise RuntimeError("boom")
        return original(trace, *args, **kwargs)

    return tile_and_type


def _split(original):
    def units_of(trace, *args, **kwargs):
        if trace.trace_id == CRASHES:
            os.kill(os.getpid(), signal.SIGSEGV)
        return original(trace, *args, **kwargs)

    return units_of


def _encode(original):
    def encode_and_count(self, texts):
        if OUT_OF_MEMORY_TEXT in texts:
            raise MemoryError()
        return original(self, texts)

    return encode_and_count


def _link(original):
    def link_graphs(graphs, *args, **kwargs):
        if any(g.trace.trace_id == LINK_STUCK for g in graphs):
            stuck()
        if any(g.trace.trace_id == LINK_FAILS for g in graphs):
            raise ValueError(f"cannot link {LINK_FAILS}")
        return original(graphs, *args, **kwargs)

    return link_graphs


def failing(module) -> list[tuple[object, str, object]]:
    """(object, attribute, replacement) for the functions `module` calls: thinkprobe.graph for the
    local engine, thinkprobe.ray_engine for Ray's stages."""
    from thinkprobe.encoder import Encoder

    return [(module, "units_of", _split(module.units_of)), (module, "tile_and_type", _tile(module.tile_and_type)),
            (module, "link_graphs", _link(module.link_graphs)), (Encoder, "encode_and_count", _encode(Encoder.encode_and_count))]


def install() -> None:
    """Ray's worker_process_setup_hook: the failures in every worker process."""
    import thinkprobe.ray_engine

    for target, name, replacement in failing(thinkprobe.ray_engine):
        setattr(target, name, replacement)


# --------------------------------------------------------------------------- where Ray Data runs a UDF


def _limited() -> dict:
    """A stuck block under a 0.5 s time_limit, in whichever thread Ray Data calls the UDF."""
    from thinkprobe.isolation import TraceTimeout, time_limit

    start, stopped = time.monotonic(), False
    try:
        with time_limit(0.5):
            stuck()
    except TraceTimeout:
        stopped = True
    return {"main_thread": np.array([threading.current_thread() is threading.main_thread()]),
            "stopped": np.array([stopped]), "seconds": np.array([time.monotonic() - start])}


def limited_task(batch: dict) -> dict:
    return _limited()


class LimitedActor:
    def __call__(self, batch: dict) -> dict:
        return _limited()
