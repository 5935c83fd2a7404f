"""The code sandbox: model-written code is run against a record's tests only when the run allows it
(--allow-code-execution), and then in a child process the operating system isolates: namespaces
from `unshare` (util-linux), Landlock and seccomp set by the child itself (harness.py, whose
docstring lists what each one blocks). A runaway or hostile program is a failed test, never a crash
of the profiler. Where a mechanism is missing, the code is not run at all and the reason says what
is missing (`isolation_problem`).
"""
from __future__ import annotations

import functools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

__all__ = ["NOT_ALLOWED", "ALLOW_HINT", "run_code_tests", "isolation_problem", "not_run_line", "code_not_run"]

_HARNESS = Path(__file__).with_name("harness.py")
UNSHARE_ARGS = ("--user", "--map-root-user", "--net", "--pid", "--ipc", "--uts", "--mount", "--fork", "--kill-child")
_READ_LIMIT = 64 * 1024  # bytes read back from the child's stdout and stderr
NO_ISOLATION = "not run: no isolation on this machine: "

# The verdict reason of code left unrun by default, and how to allow it.
NOT_ALLOWED = "not run: code execution is off (--allow-code-execution)"
ALLOW_HINT = ("--allow-code-execution (thinkprobe.profile(allow_code_execution=True)) runs their tests, isolated by "
              "the operating system (docs/redundancy.md, \"Code answers\")")


def not_run_line(count: int) -> str:
    """The summary's, run.json's and the report's line for `count` code answers left ungraded."""
    answers = "1 code answer was" if count == 1 else f"{count} code answers were"
    return f"{answers} not graded, because running model-written code is off: {ALLOW_HINT}"


def _test_spec(tests: Any) -> dict | None:
    """Tests as {"mode": "asserts" | "io", "tests": [...]}: assert code (a string or a list of
    strings), stdin/stdout cases (a list of {"input", "output"}) or APPS-style {"inputs", "outputs"}."""
    if isinstance(tests, str):
        return {"mode": "asserts", "tests": [tests]} if tests.strip() else None
    if isinstance(tests, dict) and "inputs" in tests and "outputs" in tests:
        cases = [{"input": i if isinstance(i, str) else "\n".join(map(str, i)), "output": o if isinstance(o, str) else "\n".join(map(str, o))}
                 for i, o in zip(tests["inputs"], tests["outputs"])]
        return {"mode": "io", "tests": cases} if cases else None
    if isinstance(tests, (list, tuple)) and tests:
        if all(isinstance(t, str) for t in tests):
            return {"mode": "asserts", "tests": list(tests)}
        if all(isinstance(t, dict) and "input" in t and "output" in t for t in tests):
            return {"mode": "io", "tests": [{"input": str(t["input"]), "output": str(t["output"])} for t in tests]}
    return None


def run_code_tests(code: str, tests: Any, timeout_s: float = 5, memory_mb: int = 512) -> tuple[bool | None, str]:
    """Run model-written code against tests in an isolated child (module docstring): a fresh
    empty working folder, read-only system folders, no other files, no processes, no network,
    killed at its wall-clock and CPU limits, its memory and output capped.

    Returns (passed, reason): True / False with why; None when there is nothing to run (no code,
    tests in an unknown form) or the isolation is not available here (the reason names what is
    missing; the code was not run). A timeout, a memory blow-up, a blocked call or a crash of the
    child is a failed test, never an exception here.

    The child sets its limits itself, not through a ``preexec_fn``: a ``preexec_fn`` may deadlock
    when the parent runs threads (torch, tokenizers), as the profiler does.
    """
    if not code or not code.strip():
        return None, "no code"
    spec = _test_spec(tests)
    if spec is None:
        return None, "no usable tests"
    unshare = shutil.which("unshare") if sys.platform.startswith("linux") else None
    if unshare is None:
        return None, NO_ISOLATION + ("`unshare` (util-linux) not found" if sys.platform.startswith("linux")
                                     else f"Linux namespaces, Landlock and seccomp are needed ({sys.platform})")
    cpu_s = max(1, int(math.ceil(timeout_s)))
    with tempfile.TemporaryDirectory(prefix="thinkprobe-sandbox-") as tmp:
        work = Path(tmp)
        (work / "solution.py").write_text(code, encoding="utf-8")
        (work / "tests.json").write_text(json.dumps(spec), encoding="utf-8")
        shutil.copyfile(_HARNESS, work / "harness.py")
        env = {"PATH": os.defpath, "HOME": tmp, "TMPDIR": tmp, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
               "LANG": "C.UTF-8"}
        # stdout and stderr are files here, out of the child's reach once it has isolated itself;
        # its writes to them stop at its file-size limit, and only their first bytes are read back
        with open(work / "out", "w+b") as out, open(work / "err", "w+b") as err:
            try:
                proc = subprocess.Popen([unshare, *UNSHARE_ARGS, sys.executable, "-I", "harness.py", str(int(memory_mb)),
                                         str(cpu_s)], cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=err, start_new_session=True)
            except OSError as exc:
                return None, NO_ISOLATION + f"unshare did not start: {exc}"
            try:
                proc.wait(timeout=timeout_s + 1.0)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(proc)
            lines = _read(out).splitlines()
            err_tail = _read(err, tail=True).decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    if not lines or lines[0] != b'"started"':
        if timed_out:  # a machine too busy to start it in time
            return False, f"timeout after {timeout_s:g} s, before the child started"
        return None, NO_ISOLATION + f"the isolated child did not start ({err_tail[0][:200]})"
    result = _json(lines[1]) if len(lines) > 1 else None
    if isinstance(result, dict) and "unavailable" in result:
        return None, NO_ISOLATION + str(result["unavailable"])[:300]
    if timed_out:
        return False, f"timeout after {timeout_s:g} s"
    if isinstance(result, dict) and "passed" in result:
        return bool(result["passed"]), str(result.get("reason"))[:300]
    if proc.returncode is not None and proc.returncode < 0:
        sig = -proc.returncode
        if sig in (getattr(signal, "SIGXCPU", -1), signal.SIGKILL):
            return False, f"timeout: CPU limit of {cpu_s} s"
        return False, f"killed by signal {sig}"
    if "MemoryError" in err_tail[0]:
        return False, "memory limit exceeded"
    return False, f"no result (exit code {proc.returncode}) {err_tail[0][:200]}".strip()


def _read(f, tail: bool = False) -> bytes:
    """At most _READ_LIMIT bytes of a file the child wrote: its head, or its tail."""
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - _READ_LIMIT) if tail else 0)
    return f.read(_READ_LIMIT)


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()


@functools.lru_cache(maxsize=1)
def isolation_problem() -> str | None:
    """None when this machine isolates model-written code as run_code_tests needs; else what is
    missing (a trivial program is run through the whole sandbox once per process)."""
    passed, reason = run_code_tests("x = 1", "assert x == 1")
    if passed:
        return None
    return reason.removeprefix(NO_ISOLATION) if passed is None else f"the sandbox fails a trivial program: {reason}"


def code_not_run(record: Mapping) -> bool:
    """Whether a graph record's final answer is code left unrun because code execution was off."""
    red = record.get("redundancy") or {}
    final = red.get("final_answer")
    return bool(final) and red.get("final_correct") is None and any(
        c.get("reason") == NOT_ALLOWED and c.get("unit") == final["unit"] and c.get("value") == final["value"]
        for c in red.get("candidates") or ())
