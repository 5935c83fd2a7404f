"""Cost of one isolated code execution (issue 45): the median wall time of `run_code_tests` on a
correct add(a, b) with two assert tests and on a stdin/stdout case, beside what any child process
costs: a bare `python -I -c pass`, and the same inside the namespaces `unshare` makes (the rest of
an isolated run is the child isolating itself: a tmpfs, Landlock and a seccomp filter, then the test).

    python scripts/sandbox_cost.py [-n 30]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from thinkprobe.redundancy import isolation_problem, run_code_tests  # noqa: E402
from thinkprobe.redundancy.sandbox import UNSHARE_ARGS  # noqa: E402

ADD = "def add(a, b):\n    return a + b"


def median_ms(fn, n: int) -> float:
    fn()  # warm the file cache
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=30, help="executions per measure")
    args = parser.parse_args()
    problem = isolation_problem()
    if problem:
        sys.exit(f"this machine cannot isolate model-written code: {problem}")
    unshare = shutil.which("unshare")
    bare = [sys.executable, "-I", "-c", "pass"]
    rows = [
        ("bare `python -I -c pass`", median_ms(lambda: subprocess.run(bare, check=True), args.n)),
        ("the same inside unshare's namespaces",
         median_ms(lambda: subprocess.run([unshare, *UNSHARE_ARGS, *bare], check=True), args.n)),
        ("run_code_tests, 2 assert tests", median_ms(
            lambda: run_code_tests(ADD, ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]), args.n)),
        ("run_code_tests, 1 stdin/stdout case", median_ms(
            lambda: run_code_tests("a, b = map(int, input().split())\nprint(a + b)", [{"input": "1 2", "output": "3"}]),
            args.n)),
    ]
    base = rows[0][1]
    print(f"median of {args.n} executions each")
    print("| measure | ms | / bare interpreter |")
    print("|---|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.1f} | {ms / base:.2f} |")


if __name__ == "__main__":
    main()
