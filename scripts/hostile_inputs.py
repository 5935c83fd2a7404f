"""Hostile and oversized inputs (issue 46): writes small files that each hold one hostile record beside
a good one, profiles each in its own process under /usr/bin/time -v and prints the wall time, the
peak memory (maximum resident set size) and what the run did with the two records:

    python scripts/hostile_inputs.py OUT_DIR              # the true sizes of the issue
    python scripts/hostile_inputs.py OUT_DIR --scale 0.01 # the same files a hundred times smaller
    python scripts/hostile_inputs.py OUT_DIR --only giant_line --progress   # other options go to `profile`
    python scripts/hostile_inputs.py --scan ../shared/data   # what the default limits make of real files

- eval_bomb.eval: an inspect_ai log whose second sample member inflates to 2 GiB (zstd), beside a
  good sample; and eval_liar.eval, the same member with a declared size of 1 KB, so that the
  streaming guard, not the declared size, has to stop it;
- giant_line.jsonl.gz: a JSONL whose first record is one 1 GiB line, then a good record;
- deep.jsonl: a record nested 200,000 lists deep, then a good record;
- many_tiny.jsonl: 200,000 one-field records (each skipped: no reasoning), then a good record.

--scan reads every data file of a folder with the default limits (no profiling) and prints the
traces, the refusals by a size limit, the largest JSONL line, the longest trace text and the
highest gzip ratio: the figures the defaults were chosen against.

The files are written in 1 MiB chunks (zstd / deflate / gzip streaming compressors), so the generator
stays small in memory whatever the size. tests/test_hostile_inputs.py writes the same files at a few
MB against lowered limits. Measurements: docs/scale.md ("Hostile and oversized inputs").
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Iterable, Iterator

REPO = Path(__file__).resolve().parent.parent
CHUNK = 1 << 20
ZIP_DEFLATED, ZIP_ZSTANDARD = 8, 93

GOOD_REASONING = ("First, 17 * 3 means three seventeens. So 17 + 17 = 34, and 34 + 17 = 51. "
                  "Wait, let me check: 3 * 17 = 30 + 21 = 51. So the answer is 51.")


def good_record(i: int = 0) -> dict:
    """A plain chat-completion record with its reasoning in `reasoning_content`."""
    return {"id": f"good-{i}", "model": "m", "domain": "arith", "question": "What is 17 * 3?",
            "reasoning_content": GOOD_REASONING, "content": "51"}


def repeated(prefix: bytes, byte: bytes, size: int, suffix: bytes) -> Iterator[bytes]:
    """prefix + `byte` * size + suffix, in chunks of at most 1 MiB."""
    yield prefix
    block = byte * CHUNK
    while size > 0:
        yield block[: min(size, CHUNK)]
        size -= CHUNK
    yield suffix


def write_zip(path: Path, members: Iterable[tuple[str, Iterable[bytes], int, int | None]]) -> None:
    """A zip of (name, chunks, method, declared size) members, streamed: method 8 (deflate) or 93
    (zstd, what inspect_ai writes; Python's zipfile writes it only from 3.14). `declared`: the
    uncompressed size the headers state (None: the true size; a smaller one makes a lying archive)."""
    import zstandard

    entries = []
    with open(path, "wb") as f:
        for name, chunks, method, declared in members:
            offset, raw_name = f.tell(), name.encode()
            f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 63, 0, method, 0, 0x21, 0, 0, 0, len(raw_name), 0) + raw_name)
            start, crc, size = f.tell(), 0, 0
            packer = (zstandard.ZstdCompressor(level=3).compressobj() if method == ZIP_ZSTANDARD
                      else zlib.compressobj(9, zlib.DEFLATED, -15))
            for chunk in chunks:
                crc, size = zlib.crc32(chunk, crc), size + len(chunk)
                f.write(packer.compress(chunk))
            f.write(packer.flush())
            compressed, stated = f.tell() - start, size if declared is None else declared
            f.seek(offset + 14)
            f.write(struct.pack("<III", crc, compressed, stated))
            f.seek(0, os.SEEK_END)
            entries.append((raw_name, method, crc, compressed, stated, offset))
        directory = f.tell()
        for raw_name, method, crc, compressed, stated, offset in entries:
            f.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 63, 63, 0, method, 0, 0x21, crc, compressed, stated,
                                len(raw_name), 0, 0, 0, 0, 0, offset) + raw_name)
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), f.tell() - directory,
                            directory, 0))


def inspect_sample(sid: str, reasoning: str) -> dict:
    message = {"role": "assistant", "content": [{"type": "reasoning", "reasoning": reasoning}, {"type": "text", "text": "51"}]}
    return {"id": sid, "epoch": 1, "input": "What is 17 * 3?", "target": "51", "messages": [message],
            "output": {"choices": [{"message": message}]}, "scores": {"match": {"value": "C"}}}


def write_eval_bomb(path: Path, size: int, declared: int | None = None, method: int = ZIP_ZSTANDARD) -> None:
    """An inspect_ai log: a good sample, then one whose member inflates to `size` bytes."""
    header = {"version": 2, "status": "success", "eval": {"task": "arith", "model": "m", "config": {}}}
    good = json.dumps(inspect_sample("good", GOOD_REASONING)).encode()
    bomb = inspect_sample("bomb", "@")
    del bomb["output"]  # the reasoning once, in the messages
    before, after = json.dumps(bomb).split('"@"')
    write_zip(path, [
        ("header.json", [json.dumps(header).encode()], method, None),
        ("samples/good_epoch_1.json", [good], method, None),
        ("samples/bomb_epoch_1.json", repeated((before + '"').encode(), b"a", size, ('"' + after).encode()), method,
         declared),
    ])


def write_giant_line(path: Path, size: int, records_after: int = 1) -> None:
    """A .jsonl.gz whose first record is one line of `size` bytes (a reasoning of 'a's), then good records."""
    with gzip.open(path, "wb", compresslevel=6) as f:
        for chunk in repeated(b'{"id": "giant", "reasoning_content": "', b"a", size, b'", "content": "1"}\n'):
            f.write(chunk)
        for i in range(records_after):
            f.write(json.dumps(good_record(i)).encode() + b"\n")


def write_deep(path: Path, depth: int) -> None:
    """A JSONL whose first record is nested `depth` lists deep, then a good record."""
    with open(path, "wb") as f:
        f.write(b'{"id": "deep", "reasoning_content": ' + b"[" * depth + b"]" * depth + b"}\n")
        f.write(json.dumps(good_record()).encode() + b"\n")


def write_many_tiny(path: Path, n: int) -> None:
    with open(path, "w") as f:
        f.writelines(json.dumps({"x": i}) + "\n" for i in range(n))
        f.write(json.dumps(good_record()) + "\n")


def scan(root: Path) -> dict:
    """Every data file under `root` read with the default limits: what would be refused, and the sizes."""
    sys.path.insert(0, str(REPO))
    from thinkprobe.io import iter_traces
    from thinkprobe.io.formats import data_files
    from thinkprobe.records import InputError

    options = ("--max-record-mb", "--max-file-mb", "--max-inflate-ratio", "--max-trace-chars")
    files = data_files(root)
    counts = {"files": len(files), "traces": 0, "other_errors": 0, "limit_refusals": []}
    longest = line = ratio = 0
    for file in files:
        for item in iter_traces(file):
            if not isinstance(item, InputError):
                counts["traces"] += 1
                longest = max(longest, sum(s.end - s.start for s in item.sections))
            elif any(o in item.reason for o in options):
                counts["limit_refusals"].append(item.as_dict())
            else:
                counts["other_errors"] += 1  # not found, malformed...: nothing to do with size
        opener = gzip.open if file.name.endswith(".gz") else open
        with opener(file, "rb") as f:
            size = 0
            while chunk := f.read(CHUNK):
                size += len(chunk)
        if file.name.endswith(".gz"):
            ratio = max(ratio, size / file.stat().st_size)
        if ".jsonl" in file.name:
            with opener(file, "rb") as f:
                line = max([line, *(len(x) for x in f)])
    return {**counts, "longest_trace_chars": longest, "largest_jsonl_line_bytes": line,
            "highest_gzip_ratio": round(ratio, 1)}


def measure(path: Path, out: Path, extra: list[str]) -> dict:
    """Profile `path` into `out` in a fresh process under /usr/bin/time -v."""
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "thinkprobe.cli", "profile", str(path), "-o", str(out),
           "--overwrite", "--device", "cpu", "--no-progress", "--no-summary", "--no-report", "--no-cache", *extra]
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    t = time.time()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.time() - t
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr)
    graphs = [json.loads(line)["trace_id"] for line in (out / "graphs.jsonl").read_text().splitlines()] \
        if (out / "graphs.jsonl").exists() else []
    errors = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()] \
        if (out / "errors.jsonl").exists() else []
    return {"status": res.returncode, "wall_s": round(wall, 1), "peak_rss_mb": int(rss.group(1)) // 1024 if rss else None,
            "profiled": graphs[:20], "profiled_count": len(graphs),
            "errors": [{k: e[k] for k in ("record", "field", "reason")} for e in errors[:20]], "error_count": len(errors),
            **({"stderr": res.stderr[-1500:]} if res.returncode else {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, nargs="?", help="folder for the files and the runs")
    ap.add_argument("--scan", type=Path, help="read a folder of real data files with the default limits instead")
    ap.add_argument("--scale", type=float, default=1.0, help="size factor of the eval bomb and the giant line")
    ap.add_argument("--only", choices=("eval_bomb", "eval_liar", "giant_line", "deep", "many_tiny"), action="append",
                    help="only these files (repeatable)")
    args, profile_args = ap.parse_known_args()  # the rest: `thinkprobe profile` options (--progress, --max-file-mb 512)
    if args.scan:
        print(json.dumps(scan(args.scan), indent=1))
        return
    if args.out is None:
        ap.error("give OUT (or --scan FOLDER)")
    args.out.mkdir(parents=True, exist_ok=True)
    files = {
        "eval_bomb": ("eval_bomb.eval", lambda p: write_eval_bomb(p, int(2 * (1 << 30) * args.scale))),
        "eval_liar": ("eval_liar.eval", lambda p: write_eval_bomb(p, int(2 * (1 << 30) * args.scale), declared=1000)),
        "giant_line": ("giant_line.jsonl.gz", lambda p: write_giant_line(p, int((1 << 30) * args.scale))),
        "deep": ("deep.jsonl", lambda p: write_deep(p, 200_000)),
        "many_tiny": ("many_tiny.jsonl", lambda p: write_many_tiny(p, 200_000)),
    }
    for key, (name, write) in files.items():
        if args.only and key not in args.only:
            continue
        path = args.out / name
        t = time.time()
        write(path)
        print(f"{name}: {path.stat().st_size:,} bytes, written in {time.time() - t:.1f} s", flush=True)
        print(json.dumps(measure(path, args.out / f"run_{key}", profile_args), indent=1), flush=True)


if __name__ == "__main__":
    main()
