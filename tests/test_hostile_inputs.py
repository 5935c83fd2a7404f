"""Hostile and oversized inputs (issue 46): each kind of file that once exhausted memory or time is
written small, beside good records, and profiled against lowered limits given as options (a 2 MiB
record and file limit, a 1 MiB decompression grace), so that the code paths of the true sizes
(scripts/hostile_inputs.py: a 2 GiB zstd member, a 1 GiB line; docs/scale.md) run in seconds.
Each check reads the good records' outputs and the errors: the hostile record is in errors.jsonl
with its size, the limit and the option that raises it, and everything else is profiled.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import runpy
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from conftest import REPO
from thinkprobe.cli import main
from thinkprobe.config import Config, ConfigError
from thinkprobe.engine import RunOptions, run_profile
from thinkprobe.io import FieldMap, InputLimits, count_records, iter_inputs, iter_records, iter_traces
from thinkprobe.io.limits import Skipped, bounded_lines, count_lines
from thinkprobe.records import InputError, Trace

HOSTILE = runpy.run_path(str(REPO / "scripts" / "hostile_inputs.py"))  # the generators of the true-size files
MIB = 1 << 20
LOWERED = {"max_record_mb": 2, "max_file_mb": 2, "max_inflate_ratio": 100}
GRACE = {"limits": {"inflate_grace_mb": 1}}
LIMITS = InputLimits(max_record_mb=2, max_file_mb=2, max_inflate_ratio=100, inflate_grace_mb=1)


def good(i: int) -> dict:
    return {**HOSTILE["good_record"](i), "id": f"good-{i}"}


def good_line(i: int) -> bytes:
    return json.dumps(good(i)).encode() + b"\n"


def noise(size: int) -> bytes:
    """Hex of random bytes: text that compresses about 2:1, so a size limit, not the ratio, stops it."""
    import os

    return os.urandom(size // 2).hex().encode()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """One folder of every kind of hostile file, each beside good records."""
    d = tmp_path_factory.mktemp("hostile")
    HOSTILE["write_eval_bomb"](d / "zip_bomb.eval", 5 * MIB)  # zstd, declared size 5 MiB
    HOSTILE["write_eval_bomb"](d / "zip_liar.eval", 5 * MIB, declared=1000)  # zstd, lies about its size
    HOSTILE["write_eval_bomb"](d / "zip_bomb_deflate.eval", 5 * MIB, method=8)
    HOSTILE["write_giant_line"](d / "giant_line.jsonl.gz", 5 * MIB, records_after=2)
    with gzip.open(d / "gzip_bomb.json.gz", "wb") as f:  # a whole-file JSON inflating 1000:1
        f.write(b'[{"id": "bomb", "reasoning_content": "')
        for _ in range(5):
            f.write(b"a" * MIB)
        f.write(b'"}]')
    with gzip.open(d / "big.json.gz", "wb") as f:  # a JSON list over the file limit, not a bomb: refused whole
        f.write(b'[' + good_line(10) + b', {"id": "big", "reasoning_content": "' + noise(3 * MIB) + b'"}]')
    with gzip.open(d / "newline_bomb.jsonl.gz", "wb") as f:  # blank lines: nothing to parse, all inflation
        f.write(good_line(20))
        for _ in range(20):
            f.write(b"\n" * MIB)
        f.write(good_line(21))
    HOSTILE["write_deep"](d / "deep.jsonl", 200_000)
    rows = [good(30), {"id": "wide", "reasoning_content": noise(3 * MIB).decode()}, good(31)]
    with pq.ParquetWriter(d / "groups.parquet", pa.table({k: [r.get(k) for r in rows[:1]] for k in rows[0]}).schema) as w:
        for row in rows:  # one row group per row
            w.write_table(pa.table({k: [row.get(k, "x")] for k in rows[0]}))
    header = "id,model,reasoning_content,content\n"
    (d / "rows.csv").write_bytes(header.encode() + b"good-40,m,First 17 * 3. So 51. Check: 51.,51\n"
                                 + b"wide,m," + noise(3 * MIB) + b",1\n" + b"good-41,m,Then 2 + 2 = 4. Check: 4.,4\n")
    with open(d / "tiny.jsonl", "w") as f:  # a huge number of tiny records (scaled down), all skipped
        f.writelines(json.dumps({"x": i}) + "\n" for i in range(3000))
        f.write(json.dumps(good(50)) + "\n")
    return d


@pytest.fixture(scope="module")
def hostile_run(hostile, tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile_run")
    result = run_profile(RunOptions(inputs=[str(hostile)], out_dir=str(out), device="cpu", progress=False, cache=False,
                                    report=False, **LOWERED), Config.load(overrides=GRACE))
    graphs = [json.loads(line) for line in (out / "graphs.jsonl").read_text().splitlines()]
    errors = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    return result, graphs, errors


def errors_of(errors: list[dict], name: str) -> list[dict]:
    return [e for e in errors if Path(e["file"]).name == name]


def test_every_good_record_beside_a_hostile_one_is_profiled(hostile_run):
    result, graphs, errors = hostile_run
    by_file: dict[str, set] = {}
    for g in graphs:  # the record's own id (a repeated one and the rest of its file renamed, the original kept)
        p = g["provenance"]
        by_file.setdefault(Path(g["source"]).name, set()).add(p.get("duplicate_of") or p.get("renamed_from") or g["trace_id"])
    assert by_file == {
        "zip_bomb.eval": {"good:e1"}, "zip_liar.eval": {"good:e1"}, "zip_bomb_deflate.eval": {"good:e1"},
        "giant_line.jsonl.gz": {"good-0", "good-1"}, "newline_bomb.jsonl.gz": {"good-20"},
        "deep.jsonl": {"good-0"}, "groups.parquet": {"good-30", "good-31"}, "rows.csv": {"good-40", "good-41"},
        "tiny.jsonl": {"good-50"}}
    for g in graphs:  # profiled as usual: units, indicators
        assert g["units"] and g["indicators"], g["trace_id"]
    assert result["traces"] == len(graphs) == 12 and result["errors"] == len(errors)


def test_a_zip_bomb_member_is_refused_by_its_declared_size(hostile_run):
    *_, errors = hostile_run
    for name in ("zip_bomb.eval", "zip_bomb_deflate.eval"):
        (error,) = errors_of(errors, name)
        assert error["record"] == 1 and error["field"] == "samples/bomb_epoch_1.json"
        assert "5.0 MiB" in error["reason"] and "over the limit of 2 MiB" in error["reason"]
        assert "--max-file-mb" in error["reason"]


def test_a_zip_member_that_lies_about_its_size_is_stopped_while_it_inflates(hostile_run):
    *_, errors = hostile_run
    (error,) = errors_of(errors, "zip_liar.eval")
    assert error["record"] == 1 and error["field"] == "samples/bomb_epoch_1.json"
    assert "inflates more than 100 times" in error["reason"] and "--max-inflate-ratio" in error["reason"]


def test_a_giant_line_is_skipped_and_the_lines_after_it_are_read(hostile_run):
    _, graphs, errors = hostile_run
    (error,) = errors_of(errors, "giant_line.jsonl.gz")
    assert error["record"] == "line 1"
    assert "record of 5.0 MiB" in error["reason"] and "limit of 2 MiB" in error["reason"]
    assert "--max-record-mb" in error["reason"]
    assert {g["record"] for g in graphs if Path(g["source"]).name == "giant_line.jsonl.gz"} == {1, 2}  # 0-based


def test_a_gzip_bomb_is_refused(hostile_run):
    *_, errors = hostile_run
    (bomb,) = errors_of(errors, "gzip_bomb.json.gz")
    assert bomb["record"] == "file" and "inflates more than 100 times" in bomb["reason"]
    (big,) = errors_of(errors, "big.json.gz")  # over the file limit, not a bomb: named as such
    assert big["record"] == "file" and "JSON file of more than 2 MiB" in big["reason"] and "--max-file-mb" in big["reason"]
    # a JSONL stream of blank lines: the good line before is kept, the rest is not read
    (stop,) = errors_of(errors, "newline_bomb.jsonl.gz")
    assert stop["record"].startswith("line ") and "inflates more than 100 times" in stop["reason"]


def test_deep_nesting_is_refused(hostile_run):
    _, graphs, errors = hostile_run
    (error,) = errors_of(errors, "deep.jsonl")
    assert error["record"] == "line 1" and "nested too deeply" in error["reason"]
    assert any(Path(g["source"]).name == "deep.jsonl" for g in graphs)


def test_a_parquet_row_group_over_the_limit_is_refused_with_its_rows(hostile_run):
    _, graphs, errors = hostile_run
    (error,) = errors_of(errors, "groups.parquet")
    assert error["record"] == "rows 1-1" and "row group 1 of 3.0 MiB" in error["reason"]
    assert sorted(g["record"] for g in graphs if Path(g["source"]).name == "groups.parquet") == [0, 2]


def test_records_are_traces_plus_skipped_and_a_file_not_read_is_no_record(hostile_run):
    """A review: a refused row group of several rows counted as one record, and a file refused whole as
    one skipped record of none read, so that records = traces + skipped held for no such file. A
    refused batch counts its rows; a file not read (its records unknown) counts under not_read."""
    result, _, _ = hostile_run
    rows = {Path(r["file"]).name: r for r in result["coverage"]["by_file"]}
    assert [n for n, r in rows.items() if r["records"] != r["traces"] + r["skipped"]] == [], rows
    assert rows["groups.parquet"]["records"] == 3 and rows["groups.parquet"]["skipped"] == 1
    assert (rows["big.json.gz"]["records"], rows["big.json.gz"]["skipped"]) == (0, 0)
    assert list(rows["big.json.gz"]["not_read"]) == ["JSON file of more than 2 MiB"]
    from thinkprobe.cli import skipped_line

    line = skipped_line(result)
    n_unread = sum(sum(r["not_read"].values()) for r in rows.values())
    assert line.startswith(f"{sum(r['skipped'] for r in rows.values())} records skipped (") and \
        f"; {n_unread} files not read, or not to the end (" in line and "JSON file of more than 2 MiB 1" in line


def test_a_csv_line_over_the_limit_is_skipped(hostile_run):
    _, graphs, errors = hostile_run
    (error,) = errors_of(errors, "rows.csv")
    assert error["record"] == "line 3" and "--max-record-mb" in error["reason"]
    assert sorted(g["record"] for g in graphs if Path(g["source"]).name == "rows.csv") == [0, 2]


def test_many_tiny_records_are_all_listed(hostile_run):
    result, graphs, errors = hostile_run
    tiny = errors_of(errors, "tiny.jsonl")
    assert len(tiny) == 3000 and {e["record"] for e in tiny} == {f"line {i}" for i in range(1, 3001)}
    run = json.loads((Path(result["out_dir"]) / "run.json").read_text())
    assert run["counts"]["errors"] == len(errors) and run["config"]["limits"]["max_record_mb"] == 2


# ------------------------------------------------------------------ bounded memory, without a run


def test_a_giant_line_is_never_held(tmp_path):
    """Reading and counting a file whose first line is 24 MiB against a 2 MiB record limit holds
    about the limit, not the line."""
    path = tmp_path / "giant.jsonl.gz"
    HOSTILE["write_giant_line"](path, 24 * MIB, records_after=3)
    tracemalloc.start()
    try:
        items = [(loc, type(r).__name__) for _, loc, r in iter_records(path, LIMITS)]
        _, peak_read = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        assert count_records(path) == 4
        _, peak_count = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert items == [("line 1", "InputError"), ("line 2", "dict"), ("line 3", "dict"), ("line 4", "dict")]
    assert peak_read < 8 * MIB and peak_count < 8 * MIB, (peak_read, peak_count)  # the line is 24 MiB


def test_a_json_document_of_many_small_values_is_held_to_what_its_parse_takes(tmp_path):
    """A review: a JSON (not JSONL) document of many small containers took about 27 times its size
    parsed whole (json.loads, tracemalloc), so --max-file-mb bounded its bytes, not the memory. A
    document is read whole only where its parse would take at most PARSE_BUDGET times the limit
    (json_parse_bytes, an estimate never under what tracemalloc measures); else refused, unparsed,
    saying to save it as JSON Lines. Text-heavy documents are read as before, though their strings
    hold many of the characters counted."""
    from thinkprobe.io.limits import PARSE_BUDGET, json_parse_bytes

    limits = InputLimits(max_file_mb=2)
    small = ("[" + ",".join('{"a":[%d]}' % (k % 100) for k in range(60_000)) + "]").encode()  # 0.6 MiB
    tracemalloc.start()
    json.loads(small.decode())
    parse_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(small) < MIB and parse_peak > 15 * len(small) and json_parse_bytes(small) >= parse_peak
    (tmp_path / "small.json").write_bytes(small)
    tracemalloc.start()
    items = list(iter_records(tmp_path / "small.json", limits))
    read_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [(loc, r.reason.split(" that would")[0]) for _, loc, r in items] == [("file", "JSON file of 638.7 KiB (654,001 bytes)")]
    assert f"over the {PARSE_BUDGET} times 2 MiB a document read whole may take: save its records as JSON Lines" in items[0][2].reason
    assert read_peak < 8 * len(small), read_peak  # refused before it is parsed (parsed: 27 times)
    text = [{"id": f"t{k}", "reasoning_content": "So {x}, [y]: z, " * 3000} for k in range(30)]  # 1.4 MiB
    (tmp_path / "text.json").write_text(json.dumps(text))
    data, budget = (tmp_path / "text.json").read_bytes(), PARSE_BUDGET * 2 * MIB
    assert json_parse_bytes(data) > budget > json_parse_bytes(data, budget)  # counted again outside the strings
    assert [r["id"] for _, _, r in iter_records(tmp_path / "text.json", limits)] == [f"t{k}" for k in range(30)]


def test_bounded_lines_on_the_edges():
    data = b"a" * 10 + b"\n" + b"b" * 11 + b"\n" + b"\n" + b"c" * 25 + b"\n" + b"d" * 30
    lines = list(bounded_lines(io.BufferedReader(io.BytesIO(data), 4), 10))
    assert lines == [(1, b"a" * 10 + b"\n"), (2, Skipped(11)), (3, b"\n"), (4, Skipped(25)), (5, Skipped(30))]
    assert count_lines(io.BytesIO(data)) == 4 and count_lines(io.BytesIO(b"x\n\n  \ny")) == 2


def test_many_tiny_records_stream_in_bounded_memory(tmp_path):
    """3,000 one-field records: their errors stream through and none is held (holding them would
    take about 10 MB; the run streams its errors.jsonl too, runner.join_parts)."""
    path = tmp_path / "tiny.jsonl"
    with open(path, "w") as f:
        f.writelines(json.dumps({"x": i}) + "\n" for i in range(3000))
    tracemalloc.start()
    try:
        n = sum(1 for item in iter_inputs([path], limits=LIMITS) if isinstance(item, InputError))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 3000 and peak < MIB, peak


def test_texts_that_parse_as_python_are_not_parsed_whole():
    """A runaway "Wait, Wait, ..." is a valid Python tuple: checking whether a reasoning is a program
    parsed it whole, at 100-200 times its size (a 200 MB record was killed at 21.8 GB). A lighteval
    column of a million short items decoded at 1 KB each. Both stay bounded now."""
    from thinkprobe.io.guess import is_code
    from thinkprobe.io.layouts import literal

    loop = "Wait, " * (2 * MIB // 6)
    numbers = "[" + "1," * MIB + "]"
    tracemalloc.start()
    try:
        assert not is_code(loop) and not is_code("1 + " * (MIB // 4))
        assert literal(numbers) == numbers  # left as text
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MIB, peak  # parsed, the loop alone took over 200 MiB
    assert is_code("import math\n\ndef f(x):\n    return math.sqrt(x)\n")
    assert literal("['<think>a, b</think>51', 'x']") == ["<think>a, b</think>51", "x"]


def test_an_invalid_byte_in_a_csv_costs_its_row_only(tmp_path):
    """One byte that is not UTF-8 ended the CSV (3,076 good rows lost) under a wrong row number."""
    path = tmp_path / "bad.csv"
    rows = [f"g{i},m,<think>Fine {i}.</think>{i}" for i in range(400)]
    path.write_bytes(("id,model,response\n" + "\n".join(rows[:200]) + "\n").encode()
                     + b"bad,m,<think>oops \xff\xfe here.</think>1\n" + ("\n".join(rows[200:]) + "\n").encode())
    items = list(iter_traces(path))
    errors = [e for e in items if isinstance(e, InputError)]
    assert len(items) == 401 and [(e.record, e.field, e.reason) for e in errors] == [(200, "response", "invalid UTF-8 in this cell")]
    assert [t.trace_id for t in items if isinstance(t, Trace)][199:201] == ["g199", "g200"]


def test_a_csv_quote_never_closed_is_named_and_multi_line_cells_still_read(tmp_path):
    """An unterminated quote took every later row into one cell, with no error and the record count
    short; a cell that spans lines on purpose is read as before."""
    path = tmp_path / "quote.csv"
    path.write_text('id,model,response\nu0,m,"<think>a.\nb.</think>c"\nu1,m,"<think>broken. x.</think>y\n'
                    'u2,m,<think>fine. ok.</think>z\nu3,m,<think>f3.</think>z\n')
    items = list(iter_traces(path))
    assert isinstance(items[0], Trace) and "a.\nb." in items[0].reasoning.text
    assert isinstance(items[1], InputError) and len(items) == 2
    assert "a quoted cell opened on line 4 is never closed: lines 4-6" in items[1].reason
    # a quote closed in the wrong place folded the next rows into one cell, silently (a review)
    path.write_text('id,model,response\n1,m,"abc\n2,m,def\n3,m,"ghi"\n4,m,<think>jkl. ok.</think>z\n')
    items = list(iter_traces(path))
    assert isinstance(items[0], InputError) and items[0].reason.startswith("lines 2-4 were read as one row")
    assert isinstance(items[1], Trace) and items[1].trace_id == "4"
    path.write_text('id,model,response\n1,m,"<think>abc.\ndef.</think>x" \n')  # a blank after a closing quote is fine
    assert isinstance(next(iter(iter_traces(path))), Trace)
    path.write_text('id,"model,response\n1,m,x\n')  # the header's own quote
    (error,) = iter_traces(path)
    assert error.record == "file" and error.reason.startswith("header row: a quoted cell opened on line 1")


def test_a_csv_header_naming_a_column_twice_loses_neither(tmp_path):
    """`id,id,response,response`: the last of each silently won; the first keeps the name, the
    second reads as response_2."""
    path = tmp_path / "dup.csv"
    path.write_text('id,id,response,response\nd1,d2,"<think>first. one.</think>a","<think>second. two.</think>b"\n')
    (trace,) = iter_traces(path)
    assert trace.trace_id == "d1" and "first. one." in trace.reasoning.text[trace.reasoning.start:trace.reasoning.end]
    (second,) = iter_traces(path, FieldMap(reasoning_field="response_2"))
    assert "second. two." in second.reasoning.text


def test_a_folders_data_file_in_another_compression_is_named_not_passed_over(tmp_path):
    """A folder's a.jsonl.bz2 was left out in silence (a folder of only such files: "all 0 records were
    skipped" with an empty errors.jsonl); other files (notes, READMEs) stay out as before."""
    import bz2

    (tmp_path / "a.jsonl").write_text(json.dumps(good(1)) + "\n")
    (tmp_path / "b.jsonl.bz2").write_bytes(bz2.compress((json.dumps(good(2)) + "\n").encode()))
    (tmp_path / "notes.txt").write_text("mine")
    items = [(Path(src).name, loc, getattr(r, "reason", "record")) for src, loc, r in iter_records(tmp_path)]
    assert items == [("a.jsonl", "line 1", "record"),
                     ("b.jsonl.bz2", "file", ".bz2 compression is not read: decompress the file, or compress it with gzip (.gz)")]


def test_every_file_of_a_folder_not_read_is_named(tmp_path):
    """A review: a folder's real.zip was passed over in silence where a.jsonl.zip was named. An archive
    of any name is named in errors.jsonl as a.jsonl.zip is (archives are not read: an .eval log is a
    format of its own); a file without a data file's name (notes, a schema) is named in a warning, in
    run.json's field_warnings and on stderr, and is no skipped record."""
    import zipfile

    from thinkprobe.io.check import UnreadFilesWarning, check_fields

    (tmp_path / "a.jsonl").write_text(json.dumps(good(1)) + "\n")
    for name in ("real.zip", "b.jsonl.zip"):
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            z.writestr("b.jsonl", json.dumps(good(2)) + "\n")
    (tmp_path / "logs.tar.gz").write_bytes(gzip.compress(b"not a tar"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "notes.txt").write_text("mine")
    (tmp_path / "README.md").write_text("# data")  # documentation: not named (in nearly every corpus)
    (tmp_path / "LICENSE").write_text("MIT")
    (tmp_path / "schema.yaml").write_text("a: 1")
    items = [(Path(src).name, loc, getattr(r, "reason", "record")) for src, loc, r in iter_records(tmp_path)]
    extract = "archive is not read: extract it and name its data files as inputs (gzipped ones, .jsonl.gz, are read as they are)"
    assert items == [("a.jsonl", "line 1", "record"),
                     ("b.jsonl.zip", "file", ".zip compression is not read: decompress the file, or compress it with gzip (.gz)"),
                     ("logs.tar.gz", "file", "a .tar.gz " + extract), ("real.zip", "file", "a .zip " + extract)]
    (warning,) = check_fields([str(tmp_path)])
    assert isinstance(warning, UnreadFilesWarning) and warning.unread == ("schema.yaml", "sub/notes.txt")
    assert str(warning).endswith("holds 2 files not read, without a data file's name (.jsonl, .ndjson, .json, .parquet, "
                                 ".arrow, .csv, .tsv, .eval, optionally .gz): schema.yaml, sub/notes.txt")
    res = CliRunner().invoke(main, ["profile", str(tmp_path), "-o", str(tmp_path / "out"), "--device", "cpu", "--no-progress",
                                    "--linker", "cue", "--types", "cue", "--no-cache", "--no-report"])
    assert "warning: input folder" in res.stderr and "schema.yaml, sub/notes.txt" in res.stderr, res.output
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["field_warnings"] == [{"option": None, "field": None, "input": str(tmp_path),
                                      "unread": ["schema.yaml", "sub/notes.txt"]}]
    assert run["counts"]["traces"] == 1 and run["counts"]["errors"] == 3  # the archives; the notes are no record


def test_an_arrow_batch_over_the_file_limit_is_refused_with_its_rows(tmp_path):
    """Arrow had no limit: a 13 KB zstd stream of one 400 MiB string took 2.5 GB. A batch over
    --max-file-mb is refused (as a Parquet row group) before its rows become Python objects."""
    path = tmp_path / "data-00000.arrow"
    schema = pa.schema([("id", pa.string()), ("response", pa.string())])
    with pa.ipc.new_stream(str(path), schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_batch(pa.record_batch([["big"], ["<think>" + "a" * (3 * MIB) + "</think>1"]], schema=schema))
        writer.write_batch(pa.record_batch([["good-1"], ["<think>" + good(1)["reasoning_content"] + "</think>51"]], schema=schema))
    assert path.stat().st_size < 64 * 1024
    items = [(loc, getattr(r, "reason", None) or r["id"]) for _, loc, r in iter_records(path, LIMITS)]
    assert items[1] == (1, "good-1") and items[0][0] == "rows 0-0"
    assert items[0][1].startswith("record batch of 3.0 MiB") and "over the limit of 2 MiB" in items[0][1]


def test_utf16_and_doubly_gzipped_files_are_named_as_such(tmp_path):
    """Both read as 'NUL byte in record', one error per line and none saying why."""
    line = json.dumps(good(1)) + "\n"
    (tmp_path / "u16.jsonl").write_bytes((line * 2).encode("utf-16"))
    (tmp_path / "twice.jsonl.gz").write_bytes(gzip.compress(gzip.compress(line.encode())))
    (tmp_path / "fine.jsonl").write_text(line, encoding="utf-8")
    got = {Path(src).name: [getattr(r, "reason", "record") for _, _, r in iter_records(src)]
           for src in map(str, sorted(tmp_path.iterdir()))}
    assert got["u16.jsonl"] == ["UTF-16 text (its byte-order mark): save it as UTF-8"]
    assert got["twice.jsonl.gz"][0].startswith("gzip data where text was expected") and len(got["twice.jsonl.gz"]) == 1
    assert got["fine.jsonl"] == ["record"]
    import zipfile  # a review: a zip saved as .jsonl had its header lines skipped as NUL records, the record between read

    with zipfile.ZipFile(tmp_path / "z.jsonl", "w") as z:
        z.writestr("a.jsonl", line * 3)
    assert [getattr(r, "reason", "record") for _, _, r in iter_records(tmp_path / "z.jsonl")] == [
        "a zip archive where text was expected: unzip it"]
    (tmp_path / "u16be.jsonl").write_bytes(line.encode("utf-16-be"))  # no byte-order mark
    assert [getattr(r, "reason", "record") for _, _, r in iter_records(tmp_path / "u16be.jsonl")] == [
        "UTF-16 text (every other byte is NUL): save it as UTF-8"]
    latin = tmp_path / "latin.csv"  # a header that is not UTF-8 named keys no output file could write
    latin.write_bytes("id,raisonnement_détaillé\nx,<think>So 4.</think>4\n".encode("latin-1"))
    assert [getattr(r, "reason", "record") for _, _, r in iter_records(latin)] == ["header row: invalid UTF-8 (save the file as UTF-8)"]


def test_a_pipe_or_a_device_named_as_an_input_is_refused_not_read(tmp_path):
    """A FIFO blocked waiting for a writer; /dev/zero was read until a timeout killed the run."""
    import os

    fifo = tmp_path / "records.jsonl"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        assert [(loc, r.reason) for _, loc, r in iter_records(path)] == [
            ("file", "not a regular file (a pipe or a device): save the records to a file first")]


# ------------------------------------------------------------------ trace text over the limit


def long_trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "long.jsonl"
    steps = " ".join(f"Step {k}: we add {k} and {k + 1} to get {2 * k + 1}." for k in range(400))
    path.write_text(json.dumps({"id": "long", "response": f"<think>{steps}</think>The answer is 42."}) + "\n"
                    + json.dumps(good(60)) + "\n")
    return path


def test_a_trace_over_the_text_limit_is_refused_with_its_size(tmp_path):
    path = long_trace_file(tmp_path)
    limits = InputLimits(max_trace_chars=2000)
    items = list(iter_traces(path, limits=limits))
    assert isinstance(items[0], InputError) and isinstance(items[1], Trace)
    assert items[0].record == "line 1" and items[0].field == "response"
    assert "over the limit of 2,000" in items[0].reason and "--max-trace-chars" in items[0].reason
    assert "--oversize truncate" in items[0].reason
    # counted under one reason whatever the size (each size was a reason of its own: thousands of lines)
    from thinkprobe.accounting import reason_kind

    short = InputLimits(max_trace_chars=10)
    kinds = {reason_kind(i.reason) for i in iter_traces(path, limits=short)}
    assert kinds == {"over the character limit"}


def test_truncate_profiles_the_first_characters_and_marks_them(tmp_path):
    path = long_trace_file(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["profile", str(path), "-o", str(out), "--device", "cpu", "--no-progress",
                                    "--no-summary", "--no-cache", "--no-report", "--max-trace-chars", "2000",
                                    "--oversize", "truncate"])
    assert res.exit_code == 0, res.output
    graphs = {json.loads(line)["trace_id"]: json.loads(line) for line in (out / "graphs.jsonl").read_text().splitlines()}
    cut = graphs["long"]
    (section,) = cut["sections"]  # the answer lies past the cut
    assert section["name"] == "reasoning" and section["end"] - section["start"] == 2000
    assert cut["provenance"]["cut_to_limit"]["kept"] == 2000 and cut["provenance"]["cut_to_limit"]["chars"] > 15_000
    assert max(u["end"] for u in cut["units"]) <= section["end"] and len(cut["fields"]["response"]) == section["end"]
    assert "cut_to_limit" not in graphs["good-60"]["provenance"]
    assert not (out / "errors.jsonl").read_text()


# ------------------------------------------------------------------ declared once


def test_the_limits_are_options_of_profile_and_keys_of_the_config():
    help_text = CliRunner().invoke(main, ["profile", "-h"], terminal_width=200).output
    for option in ("--max-record-mb", "--max-file-mb", "--max-inflate-ratio", "--max-trace-chars", "--oversize"):
        assert option in help_text
    limits = InputLimits.from_config(Config.load())
    assert (limits.max_record_mb, limits.max_file_mb, limits.max_inflate_ratio, limits.max_trace_chars,
            limits.oversize) == (64, 256, 100, 5_000_000, "refuse")
    with pytest.raises(ConfigError, match="oversize"):
        InputLimits.from_config(Config.load(overrides={"limits": {"oversize": "drop"}}))


def test_a_pipe_inside_a_folder_is_named_not_passed_over(tmp_path):
    """A FIFO named pipe.jsonl in an input folder was left out with no word (given directly it was
    refused); it is named as unread, never opened (opening it would block)."""
    os.mkfifo(tmp_path / "pipe.jsonl")
    (tmp_path / "a.jsonl").write_text(json.dumps(good(1)) + "\n")
    items = list(iter_traces(tmp_path))
    assert [type(i).__name__ for i in items] == ["Trace", "InputError"]
    assert items[1].source.endswith("pipe.jsonl") and "not a regular file" in items[1].reason


def test_a_broken_link_inside_a_folder_is_named_and_breaks_nothing(tmp_path):
    """A link to nothing named b.jsonl: listed among the data files it crashed peek and the record
    count (a review); left out, it went unsaid. It is named once, and the count agrees."""
    (tmp_path / "a.jsonl").write_text(json.dumps(good(1)) + "\n")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    items = list(iter_traces(tmp_path))
    assert [type(i).__name__ for i in items] == ["InputError", "Trace"] and "broken link" in items[0].reason
    assert count_records(tmp_path) == count_records(tmp_path, keep=lambda p: True) == 2


def test_a_huge_integer_or_a_deep_cut_emoji_costs_its_record_only(tmp_path):
    """A review: an integer of 5,000 digits (over Python's 4,300-digit conversion limit) in any field
    stopped the run with a traceback, in JSON Lines and in a JSON array; so did a lone surrogate
    escape 500 lists down (its repair recursed). Each is now its record's error; the rest is read."""
    big = '{"id": "n0", "reasoning": "So 5.", "big": ' + "9" * 5000 + "}"
    deep = '{"id": "s0", "reasoning": "So 5.", "extra": ' + "[" * 500 + '"x \\ud83d y"' + "]" * 500 + "}"
    lines = tmp_path / "a.jsonl"
    lines.write_text("\n".join([json.dumps(good(1)), big, deep, json.dumps(good(2))]) + "\n")
    items = list(iter_traces(lines))
    errors = [i for i in items if isinstance(i, InputError)]
    assert [t.trace_id for t in items if isinstance(t, Trace)] == ["good-1", "good-2"]
    assert len(errors) == 2 and "4300" in errors[0].reason and "nested too deeply" in errors[1].reason
    array = tmp_path / "b.json"
    array.write_text("[" + json.dumps(good(3)) + ", " + big + "]")
    (error,) = list(iter_traces(array))
    assert isinstance(error, InputError) and "4300" in error.reason and error.source == str(array)


def test_a_linked_folder_is_read_once_and_a_run_folder_inside_is_no_input(tmp_path):
    """A review: a symlinked subfolder of an input folder was passed over without a word (rglob follows
    no folder link), and a ThinkProbe run kept inside the data folder was read as input, a warning per
    output file (its own -o inside the input folder read its chunks, and --resume then saw the inputs
    changed). A linked folder is read (never a link back up to the input folder or above it, and a
    file reached twice is read once); a run folder, told by its files' contents, is not read, said once
    as a warning, and leaves the folder's digest as it is. A dataset's own parts/manifest.json is data."""
    from thinkprobe.io.check import check_fields
    from thinkprobe.provenance import file_digest

    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    data.mkdir()
    elsewhere.mkdir()
    (data / "a.jsonl").write_text(json.dumps(good(1)) + "\n")
    (elsewhere / "b.jsonl").write_text(json.dumps(good(2)) + "\n")
    (data / "linked").symlink_to(elsewhere)
    (data / "again.jsonl").symlink_to(data / "a.jsonl")  # the same file through a link: read once
    (elsewhere / "loop").symlink_to(data)  # back to the input folder
    (elsewhere / "up").symlink_to(tmp_path)  # above it: would walk the tree it lies in
    (elsewhere / "root").symlink_to("/")  # the top of every tree
    before = file_digest(data)
    writing = data / "out"
    (writing / "parts").mkdir(parents=True)
    (writing / "parts" / "manifest.json").write_text(json.dumps({"thinkprobe": "0", "config_digest": "x", "inputs": {}}))
    (writing / "parts" / "000000.jsonl").write_text(json.dumps(good(3)) + "\n")
    assert file_digest(data) == before
    finished = data / "old"
    finished.mkdir()
    (finished / "run.json").write_text(json.dumps({"config": {}, "coverage": {}, "inputs": []}))
    (finished / "graphs.jsonl").write_text(json.dumps(good(4)) + "\n")
    shards = data / "shards" / "parts"  # a sharded dataset's manifest: data, read
    shards.mkdir(parents=True)
    (shards / "manifest.json").write_text(json.dumps({"shards": ["s0.jsonl"]}))
    (shards / "s0.jsonl").write_text(json.dumps(good(5)) + "\n")
    items = list(iter_traces(data))
    assert sorted(t.trace_id for t in items if isinstance(t, Trace)) == ["good-1", "good-2", "good-5"]
    assert not [i for i in items if isinstance(i, InputError) and "manifest" not in i.source]
    assert count_records(data) == len(items)
    (warning,) = [w for w in check_fields([str(data)]) if "run folder" in str(w)]
    assert str(warning) == (f"input folder {data} holds 1 ThinkProbe run folder (old): a run's outputs, not read "
                            "as input")


def test_a_long_line_inside_a_quoted_cell_costs_its_row_not_a_hole_in_it(tmp_path):
    """A review: a line over --max-record-mb inside a quoted multi-line cell was cut out and the row
    profiled without it, errors.jsonl saying a line was skipped. The row is refused whole, named."""
    path = tmp_path / "hole.csv"
    cell = "Let me think.\n" + "X" * (3 * MIB) + "\nSo 5."
    path.write_text(f'id,model,response\ng0,m,<think>Fine.</think>1\nr1,m,"<think>{cell}</think>5"\ng2,m,<think>Ok.</think>2\n')
    items = [r for _, _, r in iter_records(path, LIMITS)]
    assert [r["id"] for r in items if isinstance(r, dict)] == ["g0", "g2"]
    (error,) = [r for r in items if isinstance(r, InputError)]
    assert error.record == 1 and error.reason.startswith("a line of its quoted cell: ")


def test_a_long_line_that_closes_a_quoted_cell_still_says_rows_were_swallowed(tmp_path):
    """A review of the fix above: where the long line held the cell's closing quote, the rows after it
    were read into the cell, and only the long line was said. The quote problem is said again."""
    path = tmp_path / "closing.csv"
    path.write_text('id,model,response\nr1,m,"<think>Let me think.\n' + "X" * (3 * MIB) + '</think>5"\n'
                    "g2,m,<think>Ok.</think>2\ng3,m,<think>Fine.</think>3\n")
    reasons = [r.reason for _, _, r in iter_records(path, LIMITS) if isinstance(r, InputError)]
    assert any("skipped unread" in r for r in reasons) and any("read as one row" in r or "never closed" in r
                                                              for r in reasons), reasons


def test_a_path_pattern_sees_a_linked_file_under_the_name_it_matches(tmp_path):
    """A review: a file reached under two names (one a link) was kept under the name sorting first,
    before --path-pattern chose among them, so a pattern matching only the link's name read neither."""
    from thinkprobe.io import FieldMap

    root = tmp_path / "t1"
    (root / "all").mkdir(parents=True)
    (root / "modelA").mkdir()
    (root / "all" / "modelA.jsonl").write_text(json.dumps(good(1)) + "\n")
    (root / "modelA" / "traces.jsonl").symlink_to(root / "all" / "modelA.jsonl")
    fields = FieldMap(path_pattern=r"(?P<model>[^/]+)/traces\.jsonl$")
    traces = [t for t in iter_traces(root, fields) if isinstance(t, Trace)]
    assert [t.model for t in traces] == ["modelA"]
    assert count_records(root) == 1  # without the pattern: the one file, once


def test_terminal_and_page_escapes_differ_only_in_the_carriage_return():
    """CLI output (terminal_safe) and the report's pages and figures (visible) escape from one base: control
    characters and bidi overrides (a model named "evil\u202egnp.exe" printed as "evilexe.png"); the terminal
    also the carriage return (the rest of the line would overwrite its start), a page keeps it (white space)."""
    from thinkprobe.progress import terminal_safe
    from thinkprobe.report.markup import visible

    name = "t\x1b]0;TITLE\x07 evil\u202egnp.exe\tok\r\n"
    assert terminal_safe(name) == "t\\x1b]0;TITLE\\x07 evil\\u202egnp.exe\tok\\x0d\n"
    assert visible(name) == "t\\x1b]0;TITLE\\x07 evil\\u202egnp.exe\tok\r\n"
    chars = [chr(c) for c in range(0x3000)]
    assert {c for c in chars if terminal_safe(c) != c} == {c for c in chars if visible(c) != c} | {"\r"}
