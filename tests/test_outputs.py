"""The run's declared outputs on a real profile of sample traces (one without a gold answer, so
its redundancy Acc is unknown): pyarrow reads graphs.jsonl, every Parquet twin holds the rows,
columns and values of its CSV, graphs.parquet the records of graphs.jsonl; the graph record's
typed reader names the file and line of a bad record."""
import csv
import json

import pyarrow.json as pajson
import pyarrow.parquet as pq
import pytest

from conftest import SAMPLES
from thinkprobe.outputs import GRAPHS_PARQUET, OUTPUT_FILES, RUN_FILES, TABLES, graphs_arrow_schema
from thinkprobe.engine import RunOptions, run_profile
from thinkprobe.records import GRAPH_RECORD_KEYS, InputError, iter_graph_records


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("outputs")
    lines = SAMPLES.read_text(encoding="utf-8").splitlines()
    records = [json.loads(lines[k]) for k in (0, 6, 11)]
    del records[1]["answer"], records[1]["correct"]  # nothing to judge the answer by: Acc unknown
    path = tmp / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    run_profile(RunOptions(inputs=[str(path)], out_dir=str(tmp / "out"), progress=False, device="cpu", cache=False))
    return tmp / "out"


def test_every_declared_file_is_written(run_dir):
    assert sorted(p.name for p in run_dir.iterdir() if p.is_file()) == sorted(OUTPUT_FILES)
    assert len({f.name for f in RUN_FILES}) == len(RUN_FILES)


def test_pyarrow_reads_graphs_jsonl_with_null_for_unknown_values(run_dir):
    table = pajson.read_json(run_dir / "graphs.jsonl")
    metrics = table.column("redundancy").combine_chunks().field("metrics")
    acc = metrics.field("Acc").to_pylist()
    assert table.num_rows == 3 and acc[1] is None and acc[0] in (0, 1) and acc[2] in (0, 1)
    assert str(metrics.type.field("Acc").type) == "int64"
    assert '"Acc": null' in (run_dir / "graphs.jsonl").read_text(encoding="utf-8").splitlines()[1]


def _typed(cell: str, kind: str):
    if cell == "":
        return None
    return int(cell) if kind == "int" else float(cell) if kind == "float" else cell


@pytest.mark.parametrize("table", [t for t in TABLES if t.parquet], ids=lambda t: t.name)
def test_parquet_equals_its_csv_twin(run_dir, table):
    with open(run_dir / table.name, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        csv_rows = list(reader)
    parquet = pq.read_table(run_dir / table.parquet_name)
    assert parquet.schema.names == header == list(table.columns)
    assert parquet.schema == table.arrow_schema()
    pq_rows = parquet.to_pylist()
    assert len(pq_rows) == len(csv_rows) == 3
    for cells, row in zip(csv_rows, pq_rows):
        assert [_typed(c, table.types[name]) for c, name in zip(cells, header)] == [row[name] for name in header]


def test_graphs_parquet_holds_the_graph_records(run_dir):
    table = pq.read_table(run_dir / GRAPHS_PARQUET)
    assert table.schema == graphs_arrow_schema()
    records = list(iter_graph_records(run_dir))
    rows = table.to_pylist()
    assert len(rows) == len(records) == 3
    for rec, row in zip(records, rows):
        for key in ("trace_id", "model", "domain", "source", "record", "question", "gold_answer", "correct",
                    "sections", "units", "edges", "indicators"):
            assert row[key] == rec[key], key
        assert dict(row["fields"]) == rec["fields"]
        assert json.loads(row["provenance_json"]) == rec["provenance"]
        red = rec["redundancy"]
        assert row["redundancy"]["metrics"] == {k: v for k, v in red["metrics"].items()}
        assert row["redundancy"]["candidates"] == red["candidates"] and row["redundancy"]["sep"] == red["sep"]


def test_graph_record_reader_names_file_line_and_field(tmp_path):
    good = {k: None for k in GRAPH_RECORD_KEYS} | {"trace_id": "a", "model": "m", "domain": "d", "units": [], "edges": []}
    (tmp_path / "graphs.jsonl").write_text(json.dumps(good) + "\n\n" + json.dumps({"trace_id": "b", "model": "m"}) + "\n")
    records = iter_graph_records(tmp_path)
    assert next(records)["trace_id"] == "a"
    with pytest.raises(InputError) as info:
        next(records)
    assert info.value.record == "line 3" and info.value.field == "domain" and info.value.source.endswith("graphs.jsonl")
    assert list(iter_graph_records(tmp_path / "nowhere", missing_ok=True)) == []
    with pytest.raises(FileNotFoundError, match="thinkprobe profile"):
        list(iter_graph_records(tmp_path / "nowhere"))


def test_a_carriage_return_in_a_name_round_trips_through_the_tables(tmp_path):
    """A model name from CRLF data ("gpt\\r", a review): the csv module quoted only "\\n", the bare "\\r"
    split the row when read back, and `stats` then counted 18 traces of 12 from 3 models (the report
    crashed on a domain of None)."""
    import thinkprobe
    from thinkprobe.stats import compute_stats

    thought = "Let me think. 2 plus 3 is 5. Wait, let me check again. Yes, 5."
    records = [{"id": f"c{k}", "model": "gpt\r" if k % 2 else "claude", "domain": "math", "question": "What is 2+3?",
                "reasoning_content": thought + " Check %d." % k, "answer": "5"} for k in range(12)]
    run = thinkprobe.profile(records, tmp_path / "o", device="cpu", linker="cue", types="cue", progress=False)
    assert sorted(run.indicators["model"].unique()) == ["claude", "gpt\r"] and len(run.indicators) == 12
    stats = compute_stats(tmp_path / "o")
    assert stats["n_traces"] == 12 and stats["groupings"]["model"]["groups"] == {"claude": 6, "gpt\r": 6}
    assert (tmp_path / "o" / "report.html").exists()
