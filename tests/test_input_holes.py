"""Holes a red-team review found in the input layer: one small record that crashed a whole run
where it should be one InputError naming its file, record and field, and files whose size limits
were passed by the way they are encoded (a dictionary column, a compressed Arrow batch)."""
from __future__ import annotations

import itertools
import json
import tracemalloc
import zipfile
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from thinkprobe.io import InputLimits, iter_records
from thinkprobe.io.columnar import dense_bytes


def _eval_log(path, header: bytes) -> None:
    sample = {"id": "q1", "epoch": 1, "input": "What is 2+3?", "target": "5",
              "messages": [{"role": "user", "content": "What is 2+3?"},
                           {"role": "assistant", "content": "<think>2 plus 3 is 5.</think>5"}]}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", header)
        z.writestr("samples/q1_epoch_1.json", json.dumps(sample))


def test_an_eval_log_whose_header_nests_too_deeply_is_one_error(tmp_path):
    deep = tmp_path / "deep.eval"  # 851 bytes of brackets raised RecursionError out of the run
    _eval_log(deep, b'{"eval": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    ((source, where, error),) = list(iter_records(deep))
    assert source == str(deep) and where == "file"
    assert error.field == "header.json" and "nested too deeply" in error.reason


REASONING = "Let me think. 2 plus 3 is 5. Wait, let me check: 3 plus 2 is also 5. So the answer is 5."


def graph_record(trace_id: str) -> dict:
    """A ThinkProbe graph record (a graphs.jsonl line) over REASONING and its answer."""
    spans = [(0, 28, "RSN"), (29, 68, "CRT"), (69, 88, "CON")]
    units = [{"id": k, "section": "reasoning", "start": a, "end": b, "type": t} for k, (a, b, t) in enumerate(spans)]
    units.append({"id": 3, "section": "answer", "start": 0, "end": 16, "type": "CON"})
    return {"trace_id": trace_id, "model": "m", "domain": "math",
            "sections": [{"name": "reasoning", "field": "reasoning_content", "start": 0, "end": 88},
                         {"name": "answer", "field": "content", "start": 0, "end": 16}],
            "fields": {"reasoning_content": REASONING, "content": "The answer is 5."},
            "units": units, "edges": [{"src": 0, "dst": 1, "type": "elaboration", "polarity": None, "score": 0.5},
                                      {"src": 1, "dst": 2, "type": "inference", "polarity": None, "score": 0.7}]}


def _section(k, **change):
    return lambda r: r["sections"][k].update(change)


def _unit(k, **change):
    return lambda r: r["units"][k].update(change)


def _edge(k, **change):
    return lambda r: r["edges"][k].update(change)


SECTION_FAULTS = {  # wrong under either --graph-source: the text itself cannot be read
    "section without start": (lambda r: r["sections"][0].pop("start"), "sections[0]"),
    "section without name": (lambda r: r["sections"][0].pop("name"), "sections[0].name"),
    "section start not an int": (_section(0, start="abc"), "sections[0]"),
    "section past its text": (_section(1, end=99), "sections[1]"),
    "section given twice": (lambda r: r["sections"].append(dict(r["sections"][0])), "sections[2].name"),
    "sections a text": (lambda r: r.update(sections="abc"), "sections"),
}
GRAPH_FAULTS = {  # wrong under --graph-source input
    "unit start a text": (_unit(0, start="0"), "units[0]"),
    "unit without end": (lambda r: r["units"][0].pop("end"), "units[0]"),
    "unit not an object": (lambda r: r["units"].__setitem__(0, "x"), "units[0].section"),
    "unit given twice": (lambda r: r["units"].insert(1, dict(r["units"][0])), "units[1]"),
    "units out of order": (lambda r: r["units"].reverse(), "units[1]"),
    "edge a list": (lambda r: r["edges"].__setitem__(0, [0, 1]), "edges[0]"),
    "edge score a text": (_edge(0, score="abc"), "edges[0].score"),
    "edge score NaN": (_edge(1, score=float("nan")), "edges[1].score"),
    "edge src a boolean": (_edge(0, src=True), "edges[0]"),
    "edge polarity a number": (_edge(0, polarity=3), "edges[0].polarity"),
    "edges an object": (lambda r: r.update(edges={"src": 0}), "edges"),
}


def _profiled(tmp_path, fault, graphs: bool):
    from thinkprobe.io import iter_inputs
    from thinkprobe.records import InputError

    bad = graph_record("bad")
    fault(bad)
    path = tmp_path / "graphs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [graph_record("a"), bad, graph_record("b")]))
    items = list(iter_inputs([str(path)], graphs=graphs))
    return [i for i in items if isinstance(i, InputError)], [i.trace_id for i in items if not isinstance(i, InputError)]


@pytest.mark.parametrize("graphs", [False, True], ids=["parse", "input"])
@pytest.mark.parametrize("name", SECTION_FAULTS)
def test_a_graph_record_with_a_bad_section_is_one_error_under_either_graph_source(tmp_path, name, graphs):
    fault, field = SECTION_FAULTS[name]
    errors, traces = _profiled(tmp_path, fault, graphs)
    assert traces == ["a", "b"]
    assert [(e.record, e.field) for e in errors] == [("line 2", field)], [e.reason for e in errors]


@pytest.mark.parametrize("name", GRAPH_FAULTS)
def test_a_graph_record_with_a_bad_unit_or_edge_is_one_error_naming_it(tmp_path, name):
    fault, field = GRAPH_FAULTS[name]
    errors, traces = _profiled(tmp_path, fault, True)
    assert traces == ["a", "b"]
    assert [(e.record, e.field) for e in errors] == [("line 2", field)], [e.reason for e in errors]
    assert _profiled(tmp_path, fault, False) == ([], ["a", "bad", "b"])  # its text alone is parsed again


# ----------------------------------------------------------------------------- dictionary and compression bombs

MIB = 1 << 20
LIMITS = InputLimits(max_record_mb=2, max_file_mb=2, max_inflate_ratio=100, inflate_grace_mb=1)
NO_RATIO = replace(LIMITS, max_inflate_ratio=0)  # the batches' own bounds, without the file's inflate ratio
BIG = "x" * (MIB // 4)  # one dictionary value that 40 rows refer to: 10 MiB once expanded, over the 2 MiB limit


def _dictionary_table(rows: int = 40, nested_row: int | None = None) -> pa.Table:
    ids = [f"good-{k}" for k in range(rows)]
    junk = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array([BIG]))
    many = [[0] * (12 if k == nested_row else 1) for k in range(rows)]  # 12 references: 3 MiB in one row
    refs = pa.ListArray.from_arrays(pa.array([0] + list(itertools.accumulate(len(m) for m in many)), pa.int32()),
                                    pa.DictionaryArray.from_arrays(pa.array([i for m in many for i in m], pa.int32()),
                                                                   pa.array([BIG])))
    return pa.table({"id": ids, "reasoning_content": [f"Step {k}. So {k}." for k in range(rows)], "junk": junk,
                     "refs": refs})


def _read_watching_memory(path, limits: InputLimits = LIMITS) -> tuple[list, int, int]:
    """The records of `path` read one at a time and dropped, with the peaks of Python's and Arrow's
    memory while they are read."""
    tracemalloc.start()
    arrow_peak, items = 0, []
    try:
        for _, where, record in iter_records(path, limits):
            arrow_peak = max(arrow_peak, pa.total_allocated_bytes())
            items.append((where, record["id"] if isinstance(record, dict) else record.reason))
            del record
        python_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return items, python_peak, arrow_peak


@pytest.mark.parametrize("store_schema", [True, False], ids=["arrow-schema", "parquet-only"])
def test_a_parquet_dictionary_bomb_is_read_within_the_file_limit(tmp_path, store_schema):
    """300 rows that refer to one 10 MiB dictionary value: 3 KB on disk, 3.5 GB once every row
    was a Python string at once (the row group's size in the metadata counts the value once). Read
    without the inflate ratio, which would stop it (next test): the batches alone stay within the limit."""
    path = tmp_path / "bomb.parquet"
    pq.write_table(_dictionary_table(), path, store_schema=store_schema)
    assert path.stat().st_size < 64 * 1024 and pq.ParquetFile(path).metadata.row_group(0).total_byte_size < 2 * MIB
    items, python_peak, arrow_peak = _read_watching_memory(path, NO_RATIO)
    assert [i for _, i in items] == [f"good-{k}" for k in range(40)]
    assert python_peak < 5 * MIB and arrow_peak < 5 * MIB, (python_peak, arrow_peak)


def test_a_parquet_row_group_whose_metadata_understates_it_is_held_to_what_it_decodes_to(tmp_path):
    """A review: the row group check trusted the file's own total_byte_size. 512 values of 64 KiB that
    share their prefixes, DELTA_BYTE_ARRAY-encoded: 35 KiB by the metadata, 32 MiB decoded (a crafted
    footer can state any size). Arrow decoded them in one batch of 1,024 rows before anything was
    checked; now the file's first rows are decoded alone, the batches sized by what they decode to,
    and the row group refused, the rest of its rows named, once what it decodes to passes the limit."""
    path = tmp_path / "delta.parquet"
    n, size = 512, 64 * 1024
    good = pa.table({"id": [f"good-{k}" for k in range(40)], "reasoning_content": [f"Step {k}. So {k}." for k in range(40)]})
    crafted = pa.table({"id": [f"big-{k}" for k in range(n)], "reasoning_content": ["x" * (size - 6) + f"{k:06d}" for k in range(n)]})
    with pq.ParquetWriter(path, good.schema, use_dictionary=False, compression="zstd",
                          column_encoding={"id": "PLAIN", "reasoning_content": "DELTA_BYTE_ARRAY"}) as writer:
        writer.write_table(good)
        writer.write_table(crafted)
    del good, crafted  # Arrow's memory, counted below
    assert pq.ParquetFile(path).metadata.row_group(1).total_byte_size < MIB // 8 and path.stat().st_size < 64 * 1024
    items, _, arrow_peak = _read_watching_memory(path)
    assert [i for _, i in items[:40]] == [f"good-{k}" for k in range(40)]
    assert [w for w, _ in items[40:]] == ["rows 40-551"], items[40:]
    assert items[40][1].startswith("row group 1 decodes to more than 2 MiB where its metadata says ")
    assert items[40][1].endswith("over the limit for what is read whole; rows 40-551 not read (raise it with --max-file-mb)")
    assert arrow_peak < 12 * MIB, arrow_peak  # one batch of 64 rows (4 MiB; 8 with its builder), not 512 (32 MiB)


@pytest.mark.parametrize("form", ["dictionary", "row groups", "arrow batches"])
def test_a_parquet_file_whose_rows_expand_past_the_inflate_ratio_is_stopped(tmp_path, form):
    """A review: with every batch within the file limit, a 6 KB Parquet file of 40 rows that all refer
    to one 51 MB dictionary value took 21 s to read (each row detected, then refused as too long; 600
    rows, 5 minutes), and thirty 10 MB row groups of repeated text fit in 36 KB. What a file's rows
    expand to is now held to max_inflate_ratio times its bytes plus the grace, as a .gz stream is:
    the rows within it are read, and the rest of the file is refused with its rows named."""
    path = tmp_path / "bomb.parquet"
    if form == "dictionary":
        pq.write_table(_dictionary_table(), path)
    else:
        table = pa.table({"id": ["r"], "reasoning_content": ["So we try again. " * (MIB // 34)]})  # 0.5 MiB a row
        if form == "arrow batches":
            path = tmp_path / "data-00000.arrow"
            writer = pa.ipc.new_stream(str(path), table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd"))
        else:
            writer = pq.ParquetWriter(path, table.schema, compression="zstd", use_dictionary=False)
        with writer:
            for k in range(40):
                writer.write_table(table.set_column(0, "id", pa.array([f"good-{k}"])))
    size = path.stat().st_size
    assert size < 64 * 1024
    items = [(where, getattr(r, "reason", None) or r["id"]) for _, where, r in iter_records(path, LIMITS)]
    *read, (where, reason) = items
    room = LIMITS.max_inflate_ratio * size + LIMITS.inflate_grace_mb * MIB  # bytes the rows may expand to
    assert [i for _, i in read] == [f"good-{k}" for k in range(len(read))]
    assert 1 <= len(read) <= room / (MIB / 2), (len(read), room)  # each row is at least half a MiB
    assert where == f"rows {len(read)}" + (" and after" if form == "arrow batches" else "-39")  # an IPC stream has no row count
    assert reason.startswith(f"{path} inflates more than 100 times") and reason.endswith("(raise it with --max-inflate-ratio)")
    assert [w for _, w, _ in iter_records(path, NO_RATIO)][-1] == 39  # without the ratio, every row is read


def _shared_value_batch(form: str, rows: int, value: str):
    """A record batch of `rows` rows whose reasoning is one stored `value` referred to by every row: by
    string views over one buffer, or one run of a run-end encoded column."""
    import numpy as np

    if form == "string views":
        views = np.zeros(rows, dtype=[("len", "<i4"), ("prefix", "S4"), ("buffer", "<i4"), ("offset", "<i4")])
        views["len"], views["prefix"] = len(value), value[:4].encode()
        column = pa.Array.from_buffers(pa.string_view(), rows, [None, pa.py_buffer(views.tobytes()),
                                                                 pa.py_buffer(value.encode())])
    else:
        column = pa.RunEndEncodedArray.from_arrays(pa.array([rows], pa.int32()), pa.array([value]))
    return pa.record_batch([pa.array([f"good-{k}" for k in range(rows)]), column], names=["id", "reasoning_content"])


@pytest.mark.parametrize("form", ["string views", "run-end encoded"])
def test_rows_that_share_one_stored_value_count_it_once_each(tmp_path, form):
    """A security review: string_view and run-end encoded columns were counted by their buffers, so a
    736-byte Arrow file of 300 rows viewing one 10 MiB value was read whole (3.1 GB). They count once
    per row now, as dictionary values do: the file is stopped by the inflate ratio, and read without it."""
    path = tmp_path / "data-00000.arrow"
    batch = _shared_value_batch(form, 40, "x" * (MIB // 2))
    with pa.ipc.new_stream(str(path), batch.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_batch(batch)
    assert path.stat().st_size < 8 * 1024
    items = [(where, getattr(r, "reason", None) or r["id"]) for _, where, r in iter_records(path, LIMITS)]
    assert 1 <= len(items) - 1 <= 4 and items[-1][0] == f"rows {len(items) - 1} and after"
    assert "inflates more than 100 times" in items[-1][1]
    assert len([w for _, w, _ in iter_records(path, NO_RATIO)]) == 40


def test_an_arrow_files_dictionaries_are_limited_together_and_counted_at_each_batch(tmp_path):
    """A security review: each dictionary batch was held to --max-file-mb alone, so six dictionaries of
    250 MB (or one, grown by deltas) were all decoded, and every record batch decoded them all again
    (1,000 one-row batches: 80 s). The dictionaries are now limited together, and what each record
    batch decodes again counts against the inflate ratio."""
    big = pa.array(["x" * (MIB // 2)])
    fields = [pa.field(f"d{k}", pa.dictionary(pa.int32(), pa.string())) for k in range(6)]
    schema = pa.schema([pa.field("id", pa.string()), *fields])
    path = tmp_path / "data-00000.arrow"
    with pa.ipc.new_stream(str(path), schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        for k in range(3):
            dictionaries = [pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), big) for _ in fields]
            writer.write_batch(pa.record_batch([pa.array([f"good-{k}"]), *dictionaries], schema=schema))
    items = [(where, getattr(r, "reason", None) or r["id"]) for _, where, r in iter_records(path, LIMITS)]
    assert items[-1][1].startswith("the dictionaries with batch") and "over the limit of 2 MiB" in items[-1][1]
    few = tmp_path / "few.arrow"  # two dictionaries (1 MiB, within the limit) and 40 batches that refer to none
    schema = pa.schema([pa.field("id", pa.string()), *fields[:2]])
    none = [pa.DictionaryArray.from_arrays(pa.array([None], pa.int32()), big) for _ in range(2)]
    with pa.ipc.new_stream(str(few), schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        for k in range(40):
            writer.write_batch(pa.record_batch([pa.array([f"good-{k}"]), *none], schema=schema))
    items = [(where, getattr(r, "reason", None) or r["id"]) for _, where, r in iter_records(few, LIMITS)]
    assert 1 <= len(items) - 1 < 40 and "inflates more than 100 times" in items[-1][1]


def test_rows_cost_something_even_when_empty_and_a_gzipped_parquet_file_is_read_whole(tmp_path):
    """A security review: a 98 KB Parquet file of 50 million null rows read on for hours (a row of
    nothing counted 0 bytes); now each row counts ROW_BYTES against the inflate ratio. And a
    .parquet.gz, read through seeks into the gzip stream, was decompressed again from its start at each
    (over 2 minutes for 516 KB): it is decompressed once, within --max-file-mb."""
    import gzip

    from thinkprobe.io.columnar import ROW_BYTES

    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"id": pa.nulls(2_000_000)}), nulls)
    items = list(iter_records(nulls, LIMITS))
    room = LIMITS.max_inflate_ratio * nulls.stat().st_size + LIMITS.inflate_grace_mb * MIB
    assert len(items) - 1 <= room / ROW_BYTES and items[-1][1].startswith("rows ") and "inflates" in items[-1][2].reason
    table = pa.table({"id": [f"good-{k}" for k in range(300)], "reasoning_content": [f"Step {k}." for k in range(300)]})
    plain = tmp_path / "plain.parquet"
    pq.write_table(table, plain, row_group_size=10)
    packed = tmp_path / "packed.parquet.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert [r["id"] for *_, r in iter_records(packed, LIMITS)] == [f"good-{k}" for k in range(300)]
    large = tmp_path / "large.parquet.gz"  # 3 MiB inside, over the 2 MiB limit for what is read whole
    pq.write_table(pa.table({"reasoning_content": [os_random(MIB)] * 3}), plain, compression="none", use_dictionary=False)
    large.write_bytes(gzip.compress(plain.read_bytes()))
    [(_, where, error)] = list(iter_records(large, LIMITS))
    assert where == "file" and "decompressed" in error.reason and "Parquet compresses its own pages" in error.reason


def os_random(n: int) -> str:
    import os

    return os.urandom(n // 2).hex()


def test_a_row_over_the_limit_once_expanded_is_refused_alone(tmp_path):
    path = tmp_path / "bomb.parquet"
    pq.write_table(_dictionary_table(nested_row=7), path)
    items = [(where, getattr(r, "reason", None) or r["id"]) for _, where, r in iter_records(path, NO_RATIO)]
    assert [i for _, i in items[:7] + items[8:]] == [f"good-{k}" for k in range(40) if k != 7]
    assert items[7][0] == 7 and items[7][1].startswith("row 7 (its values expanded) of 3.3 MiB")
    assert "over the limit of 2 MiB" in items[7][1]


def test_an_arrow_stream_with_a_dictionary_column_is_read_within_the_file_limit(tmp_path):
    path = tmp_path / "data-00000.arrow"
    table = _dictionary_table()
    with pa.ipc.new_stream(str(path), table.schema) as writer:
        writer.write_table(table)
    items, python_peak, _ = _read_watching_memory(path)
    assert [i for _, i in items] == [f"good-{k}" for k in range(40)]
    assert python_peak < 5 * MIB, python_peak


def test_dense_bytes_counts_what_each_row_refers_to():
    column = _dictionary_table(rows=4, nested_row=1).column("refs").combine_chunks()
    assert dense_bytes(column.slice(1, 1)) >= 12 * len(BIG) > dense_bytes(column.slice(2, 2)) >= 2 * len(BIG)
    table = pa.table({"m": pa.array([[("a", BIG)], [("b", "c")]], pa.map_(pa.string(), pa.string()))})
    assert dense_bytes(table.column("m").combine_chunks().slice(1)) < 1000


@pytest.mark.parametrize("form", ["stream", "file"])
def test_a_compressed_arrow_batch_over_the_limit_is_refused_before_it_is_decompressed(tmp_path, form):
    """A 68 KB zstd stream of a 2 GiB batch peaked at 2.8 GB: the batch was decompressed, then
    refused. Its size decompressed is read from its buffers' headers; it is skipped undecoded."""
    path = tmp_path / "data-00000.arrow"
    schema = pa.schema([("id", pa.string()), ("response", pa.string())])
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    opened = pa.ipc.new_stream if form == "stream" else pa.ipc.new_file
    with opened(str(path), schema, options=options) as writer:
        writer.write_batch(pa.record_batch([["good-0"], ["<think>Step 0.</think>0"]], schema=schema))
        writer.write_batch(pa.record_batch([["big", "big2"], ["<think>" + "a" * (8 * MIB) + "</think>1", "b"]],
                                           schema=schema))
        writer.write_batch(pa.record_batch([["good-3"], ["<think>Step 3.</think>3"]], schema=schema))
    assert path.stat().st_size < 64 * 1024
    items, _, arrow_peak = _read_watching_memory(path)
    assert items[0] == (0, "good-0") and items[2] == (3, "good-3") and items[1][0] == "rows 1-2"
    assert items[1][1].startswith("record batch of 8.0 MiB") and "over the limit of 2 MiB" in items[1][1]
    assert arrow_peak < 2 * MIB, arrow_peak


def test_a_parquet_row_groups_size_is_read_from_its_pages_headers_before_it_is_decoded(tmp_path):
    """A security review: a 50 KB Parquet file whose footer said 1,000 bytes for six zstd dictionary
    pages of 250 MB had Arrow decode them (6.3 GB) before any check. A row group's size is now the
    largest of its footer's word and its pages' headers (parquet_pages.decoded_size), taken before
    anything is decoded: the headers give what the column chunks say they decode to, whatever the
    encoding; a footer that understates every size is caught by them, and the group refused unread."""
    from types import SimpleNamespace

    from thinkprobe.io.columnar import _stated_size
    from thinkprobe.io.parquet_pages import decoded_size

    words = [f"step {k} " * (k % 7 + 1) for k in range(3000)]
    table = pa.table({"id": [f"r{k}" for k in range(3000)], "reasoning_content": words,
                      "n": list(range(3000)), "tags": [[w[:6]] * 3 for w in words]})
    for options in ({"compression": "zstd"}, {"compression": "snappy", "use_dictionary": False},
                    {"compression": "none", "data_page_version": "2.0", "row_group_size": 700}):
        path = tmp_path / "pages.parquet"
        pq.write_table(table, path, **options)
        meta = pq.ParquetFile(path).metadata
        with open(path, "rb") as fh:
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                stated = sum(group.column(c).total_uncompressed_size for c in range(group.num_columns))
                pages = decoded_size(fh, group)
                assert 0.9 * stated <= pages <= stated, (options, g, pages, stated)  # the headers' own bytes aside
    big = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), pa.array(["x" * (3 * MIB)]))
    path = tmp_path / "lying.parquet"
    pq.write_table(pa.table({"id": ["good-0", "good-1"], "reasoning_content": big}), path, compression="zstd")
    group = pq.ParquetFile(path).metadata.row_group(0)

    class Lying:  # a footer that understates the group and each of its column chunks
        total_byte_size, num_columns = 1000, group.num_columns

        def column(self, c):
            real = group.column(c)
            return SimpleNamespace(total_uncompressed_size=10, total_compressed_size=real.total_compressed_size,
                                   data_page_offset=real.data_page_offset, has_dictionary_page=real.has_dictionary_page,
                                   dictionary_page_offset=real.dictionary_page_offset)

    with open(path, "rb") as fh:
        assert _stated_size(fh, Lying()) >= 3 * MIB
    [(_, where, error)] = list(iter_records(path, LIMITS))  # the honest footer: refused unread all the same
    assert where == "rows 0-1" and error.reason.startswith("row group 0 of 3.0 MiB") and "over the limit of 2 MiB" in error.reason


def test_dictionary_encoded_parquet_gives_the_plain_files_records(tmp_path):
    """Text columns a writer dictionary-encodes (pyarrow's default) are read as dictionaries, so that a
    value every row refers to is counted before it is copied; their rows are then decoded before they
    become Python values, which Arrow does several times slower for dictionaries nested in lists of
    structs (ReasoningFlow's nodes: 3.8 s against 0.6 s). The records are the plain file's."""
    rows = [{"id": f"t{k}", "reasoning_content": f"Step {k}. So {k}.", "meta": {"model": "m", "domain": "math"},
             "nodes": [{"label": ("plan", "check")[j % 2], "text": f"unit {j}"} for j in range(k % 4)],
             "tags": {"a": "x"}} for k in range(200)]
    table = pa.Table.from_pylist(rows)
    plain, coded = tmp_path / "plain.parquet", tmp_path / "coded.parquet"
    pq.write_table(table, plain, use_dictionary=False)
    pq.write_table(table, coded, use_dictionary=True)
    read = {p: [r for *_, r in iter_records(p, LIMITS)] for p in (plain, coded)}
    assert read[coded] == read[plain] and len(read[plain]) == 200 and read[plain][3]["nodes"][1]["label"] == "check"
