"""The code sandbox: extracted code is run against a record's tests in a separate, limited
``python -I`` process (harness.py, copied into a fresh temporary folder), so a runaway program is a
failed test, never a crash of the profiler.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["run_code_tests"]

_RESULT_FILE = "__thinkprobe_result.json"
_HARNESS = Path(__file__).with_name("harness.py")



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
    """Run extracted code against tests in a separate ``python -I`` process, in a fresh temporary
    folder, with address-space, CPU-time, file-size and process limits and no network.

    Returns (passed, reason): True / False with why; None when there is nothing to run (no code,
    tests in an unknown form) or the sandbox itself could not start. A timeout, a memory blow-up or
    a crash of the child is a failed test, never an exception here.

    The limits are set by the child itself before it reads the user code, not by a ``preexec_fn``:
    a ``preexec_fn`` may deadlock when the parent runs threads (torch, tokenizers), as the profiler does.
    """
    if not code or not code.strip():
        return None, "no code"
    spec = _test_spec(tests)
    if spec is None:
        return None, "no usable tests"
    cpu_s = max(1, int(math.ceil(timeout_s)))
    with tempfile.TemporaryDirectory(prefix="thinkprobe-sandbox-") as tmp:
        work = Path(tmp)
        (work / "solution.py").write_text(code, encoding="utf-8")
        (work / "tests.json").write_text(json.dumps(spec), encoding="utf-8")
        shutil.copyfile(_HARNESS, work / "harness.py")
        env = {"PATH": os.defpath, "HOME": tmp, "TMPDIR": tmp, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
               "LANG": "C.UTF-8"}
        try:
            proc = subprocess.Popen([sys.executable, "-I", "harness.py", _RESULT_FILE, str(int(memory_mb)), str(cpu_s)],
                                    cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            return None, f"sandbox did not start: {exc}"
        try:
            _, err = proc.communicate(timeout=timeout_s + 1.0)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return False, f"timeout after {timeout_s:g} s"
        finally:
            _kill_group(proc)
        result = work / _RESULT_FILE
        if result.exists():
            try:
                data = json.loads(result.read_text(encoding="utf-8"))
                return bool(data["passed"]), str(data["reason"])
            except (ValueError, KeyError):
                pass
        if proc.returncode is not None and proc.returncode < 0:
            import signal

            sig = -proc.returncode
            if sig == getattr(signal, "SIGXCPU", -1) or sig == signal.SIGKILL:
                return False, f"timeout: CPU limit of {cpu_s} s"
            return False, f"killed by signal {sig}"
        tail = (err or b"").decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        if "MemoryError" in tail[0]:
            return False, "memory limit exceeded"
        return False, f"no result (exit code {proc.returncode}) {tail[0][:200]}".strip()


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        import signal

        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()
