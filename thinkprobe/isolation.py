"""Failure isolation for a profiling run: one trace that fails must not take the others with it.

A chunk is first profiled as a whole (the encoder and the models see all its traces at once). If
that raises (any exception, MemoryError, or the time limit), the chunk is profiled again one trace
at a time and each trace that still fails becomes an error line with the reason (a chunk of one
trace is not run again: its failure is the trace's). The time limit
holds in any thread (Ray Data runs an actor's batches off the main thread). A crash in native
code (a segfault) cannot be caught in-process, so a marker file beside the chunk records what was
running: on --resume a chunk that died is profiled trace by trace, and a trace that died while
running alone is listed in errors.jsonl instead of being tried again. An interrupt (Ctrl-C, or
SIGTERM where the command turns it into one) is no crash: it leaves no trace marked as running.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import signal
import threading
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from .records import InputError, Trace
from .tables import write_atomic

__all__ = ["TraceLimits", "TraceTimeout", "time_limit", "failure_line", "profile_chunk_isolated", "marker_path"]


@dataclass(frozen=True)
class TraceLimits:
    """Per-trace limits (config section `limits`, or --max-units / --trace-timeout); 0 = none."""

    max_units: int = 0
    trace_timeout_s: float = 0.0

    @classmethod
    def from_config(cls, cfg) -> "TraceLimits":
        limits = cfg["limits"]
        return cls(int(limits["max_units"] or 0), float(limits["trace_timeout_s"] or 0))


class TraceTimeout(Exception):
    """Raised in the block given to `time_limit` when its time runs out."""


def _expired(limit: float) -> type[TraceTimeout]:
    """A TraceTimeout whose message names `limit` even when raised without arguments (the
    other-thread path can raise only a class in the thread, not an instance)."""
    message = f"took longer than the time limit of {limit:g} s"

    class Expired(TraceTimeout):
        def __init__(self, *args):
            super().__init__(*(args or (message,)))

    Expired.__name__ = Expired.__qualname__ = TraceTimeout.__name__
    return Expired


@contextlib.contextmanager
def time_limit(seconds: float, named: float | None = None) -> Iterator[None]:
    """Raise TraceTimeout in the block after `seconds` of wall time (0: no limit); its message
    names `named` (default `seconds`: a trace's time left after earlier stages is less than the
    limit the user set). In the main thread the alarm is a POSIX signal, which also interrupts a
    sleep or a blocking system call. In any other thread a timer raises the exception in the
    block's thread (CPython's PyThreadState_SetAsyncExc), taking effect when the thread next runs
    Python code. Either way, native code that does not return (a BLAS call, a numba kernel; and
    in another thread a sleep or a blocking read) is interrupted only when it returns to Python."""
    if seconds <= 0:
        yield
        return
    expired = _expired(seconds if named is None else named)
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        with _thread_time_limit(seconds, expired):
            yield
        return

    def expire(signum, frame):
        raise expired()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> None:
    # exc None clears an exception set but not raised yet
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


@contextlib.contextmanager
def _thread_time_limit(seconds: float, expired: type[TraceTimeout]) -> Iterator[None]:
    """time_limit off the main thread: a timer thread raises `expired` in this one. The lock makes
    the end of the block and the timer exclusive, so no exception is raised after the block."""
    thread_id, lock, state = threading.get_ident(), threading.Lock(), {"done": False, "fired": False}

    def expire():
        with lock:
            if not state["done"]:
                state["fired"] = True
                _set_async_exc(thread_id, expired)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            state["done"] = True
        timer.cancel()
        if state["fired"]:  # also when the block caught the exception itself and went on
            _set_async_exc(thread_id, None)
            raise expired()


def marker_path(part: Path) -> Path:
    """The marker of a chunk in progress: parts/000003.running beside parts/000003.jsonl."""
    return part.with_suffix(".running")


def _error_line(item, reason: str) -> str:
    if isinstance(item, Trace):
        field = item.reasoning.field if item.reasoning else "reasoning"
        error = InputError(item.source, item.record, field, reason, item.model)
        return json.dumps({"error": error.as_dict() | {"trace_id": item.trace_id}}, ensure_ascii=False) + "\n"
    return ""  # not reached: load errors cannot fail later


def failure_line(item: Trace, exc: BaseException) -> str:
    """The output line (an errors.jsonl entry) of a trace whose profiling raised `exc`: the one
    place both engines build it."""
    return _error_line(item, _reason(exc))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TraceTimeout):
        return f"{exc} (raise it with --trace-timeout)"
    if isinstance(exc, MemoryError):
        return "ran out of memory while profiling this trace"
    return f"profiling failed: {type(exc).__name__}: {exc}"


_POOL_BROKEN = ("a worker process of --workers died (out of memory, a crash in native code, or, from Python, a script "
                "that starts the run without `if __name__ == \"__main__\":`, which each worker imports): no trace is "
                "blamed for it; the committed chunks are kept, so run the same command with --resume (with fewer "
                "--workers if memory is short)")


def profile_chunk_isolated(chunk: Sequence, profile_all: Callable[[Sequence], str],
                           profile_one: Callable[[Sequence], str], part: Path, limits: TraceLimits,
                           preflight: Callable[[], object] | None = None) -> str:
    """The output lines of `chunk` (one per item), whatever fails.

    `profile_all(items)` profiles the whole chunk at once; `profile_one([item])` one item alone
    (in this process, so that a native crash is pinned to the item). The marker beside `part` is
    left behind if the process dies; the caller removes it once `part` is committed.
    `preflight()`, called when the whole chunk failed, raises what is the run's failure rather than
    a trace's (an encoder folder whose weights do not load), so that it stops the run.
    """
    marker = marker_path(part)
    if not any(isinstance(item, Trace) for item in chunk) and not marker.exists():
        return profile_all(chunk)  # skipped records only: nothing runs that could fail or crash
    previous = json.loads(marker.read_text(encoding="utf-8")) if marker.exists() else None
    ids = [getattr(item, "trace_id", None) for item in chunk]
    if previous is None:
        write_atomic(marker, json.dumps({"mode": "chunk", "trace_ids": ids}) + "\n")
        try:
            with time_limit(limits.trace_timeout_s * len(chunk)):
                return profile_all(chunk)
        except KeyboardInterrupt:  # Ctrl-C is no crash: --resume runs the chunk whole again
            marker.unlink(missing_ok=True)
            raise
        except BrokenProcessPool as exc:  # the run's worker pool, not a trace: stop (--resume runs the chunk again)
            marker.unlink(missing_ok=True)
            raise SystemExit(_POOL_BROKEN) from exc
        except Exception as exc:  # noqa: BLE001 - any failure of one trace: find it by profiling them one by one
            if preflight is not None:
                preflight()
            if len(chunk) == 1:  # it ran alone already, under its own limit: running it again would repeat that
                return failure_line(chunk[0], exc)
            previous = {"mode": "chunk"}
    # One trace at a time. A trace that was running alone when the process died is not retried.
    crashed = set(previous.get("crashed", []))
    if previous["mode"] == "trace":
        crashed.add(previous["current"])
    lines = []
    for k, item in enumerate(chunk):
        if k in crashed:
            lines.append(_error_line(item, "the process crashed while profiling this trace (native code: a "
                                           "segmentation fault or a kill); it was skipped on --resume"))
            continue
        if not isinstance(item, Trace):
            lines.append(profile_one([item]))
            continue
        write_atomic(marker, json.dumps({"mode": "trace", "current": k, "trace_id": ids[k],
                                         "crashed": sorted(crashed)}) + "\n")
        try:
            with time_limit(limits.trace_timeout_s):
                lines.append(profile_one([item]))
        except (KeyboardInterrupt, BrokenProcessPool) as exc:  # no crash of the trace: not skipped on --resume,
            # which goes on one trace at a time (the chunk whole failed or crashed), skipping only those that crashed
            write_atomic(marker, json.dumps({"mode": "chunk", "crashed": sorted(crashed)}) + "\n")
            if isinstance(exc, BrokenProcessPool):
                raise SystemExit(_POOL_BROKEN) from exc
            raise
        except Exception as exc:  # noqa: BLE001 - the reason goes to errors.jsonl, the run goes on
            lines.append(failure_line(item, exc))
    return "".join(lines)
