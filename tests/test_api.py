"""The Python API on a few sample traces: a list of dicts, a pandas DataFrame and a Hugging Face
Dataset (saved to disk and loaded back) give the same indicators as `thinkprobe profile` on the
same traces in a JSONL file; the Run object, load_run, save, --limit / --sample; the README's
worked example."""
import doctest
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import thinkprobe
from conftest import REPO, SAMPLES
from thinkprobe.api import OutputFolderError, as_records
from thinkprobe.cli import main
from thinkprobe.outputs import INDICATORS_TABLE


def _records() -> list[dict]:
    lines = SAMPLES.read_text(encoding="utf-8").splitlines()
    picked = [json.loads(lines[k]) for k in (0, 5, 10)]
    unlabelled = json.loads(lines[12])  # no gold answer, no label: its Acc is unknown (null)
    del unlabelled["answer"], unlabelled["correct"]
    separate = {"id": "separate-fields", "model": "api-style", "domain": "math",
                "reasoning_content": "First, add 2 and 2. That gives 4. Wait, let me check: 2 + 2 = 4. Yes.",
                "content": "The answer is 4.", "metadata": {"note": "nested values survive"}}
    return [*picked, unlabelled, separate]


RECORDS = _records()
FAST = dict(device="cpu", progress=False, report=False)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory, cache):
    tmp = tmp_path_factory.mktemp("cli")
    path = tmp / "traces.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    res = CliRunner().invoke(main, ["profile", str(path), "-o", str(tmp / "out"), "--device", "cpu", "--no-progress",
                                    "--no-report", "--cache-dir", str(cache)])
    assert res.exit_code == 0, res.output
    return tmp / "out"


def _indicator_bytes(run_dir: Path) -> bytes:
    return (Path(run_dir) / INDICATORS_TABLE.name).read_bytes()


def test_list_of_dicts_gives_the_cli_indicators(cli_run, tmp_path, cache):
    run = thinkprobe.profile(RECORDS, tmp_path / "out", cache_dir=cache, **FAST)
    assert _indicator_bytes(run.folder) == _indicator_bytes(cli_run)
    assert run.summary["traces"] == 5 and run.summary["errors"] == 0
    assert list(run.indicators["trace_id"]) == [r["id"] for r in RECORDS]
    assert {g["source"] for g in run.graphs} == {"<memory>"}


def test_dataframe_gives_the_cli_indicators(cli_run, tmp_path, cache):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(RECORDS)  # columns a record lacks are NaN in the frame
    assert frame["answer"].isna().sum() == 2
    run = thinkprobe.profile(frame, tmp_path / "out", cache_dir=cache, **FAST)
    assert _indicator_bytes(run.folder) == _indicator_bytes(cli_run)


def test_saved_hf_dataset_gives_the_cli_indicators(cli_run, tmp_path, cache):
    datasets = pytest.importorskip("datasets")
    columns = list(dict.fromkeys(k for r in RECORDS for k in r))  # a Dataset's rows share its columns
    datasets.Dataset.from_list([{c: r.get(c) for c in columns} for r in RECORDS]).save_to_disk(str(tmp_path / "ds"))
    dataset = datasets.load_from_disk(str(tmp_path / "ds"))
    run = thinkprobe.profile(dataset, tmp_path / "out", cache_dir=cache, **FAST)
    assert _indicator_bytes(run.folder) == _indicator_bytes(cli_run)
    with pytest.raises(TypeError, match="pass one split"):
        thinkprobe.profile(datasets.DatasetDict({"train": dataset}), tmp_path / "dd", **FAST)


def test_run_tables_graphs_and_round_trip(cli_run, tmp_path):
    run = thinkprobe.load_run(cli_run)
    ind, prof, red = run.indicators, run.profiles, run.redundancy
    assert len(ind) == len(prof) == len(red) == len(run.graphs) == 5
    assert str(ind["units"].dtype) == "int64" and str(prof["Breadth"].dtype) == "float64"
    # a declared integer column with empty cells is float64 (NaN) whichever file is read (the CSV gave Int64)
    ranks = run.anomalies["anomaly_rank"]
    assert str(ranks.dtype) == "float64" and ranks.isna().all()  # 5 traces: too few for anomaly scores
    from_csv = thinkprobe.load_run(run.folder)  # read again with the Parquet twin out of the way
    parquet = run.folder / "anomalies.parquet"
    moved = parquet.rename(parquet.with_suffix(".kept"))
    try:
        assert str(from_csv.anomalies["anomaly_rank"].dtype) == "float64"
        assert str(from_csv.anomalies["failure_risk"].dtype) == "float64"
    finally:
        moved.rename(parquet)
    acc = dict(zip(red["trace_id"], red["Acc"]))
    assert acc[RECORDS[3]["id"]] != acc[RECORDS[3]["id"]] and str(red["Acc"].dtype) == "float64"  # null: NaN
    assert {acc[r["id"]] for r in RECORDS[:3]} <= {0, 1}
    keys = {"trace_id", "model", "domain", "group", "source_id", "units", "edges", "tokens"}
    assert set(run.stats["variable"]) >= set(ind.columns) - keys and set(ind.columns) >= keys
    g = run.to_networkx("separate-fields")
    rec = run.graph("separate-fields")
    assert g.number_of_nodes() == len(rec["units"]) and g.number_of_edges() == len(rec["edges"])
    with pytest.raises(KeyError, match="nope"):
        run.graph("nope")
    saved = run.save(tmp_path / "copy")
    assert saved.indicators.equals(ind) and _indicator_bytes(saved.folder) == _indicator_bytes(cli_run)
    # a review: save() into a folder holding another run mixed the two (its report and trace pages
    # stayed beside the new data) and wrote through a symlink planted at stats.json
    other = tmp_path / "other"
    shutil.copytree(cli_run, other)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file")
    (other / "stats.json").unlink()
    (other / "stats.json").symlink_to(victim)
    (other / "notes.md").write_text("mine")
    (other / "report.md").write_text("# the other run's report")
    with pytest.raises(OutputFolderError, match="not empty"):
        run.save(other)
    kept = run.save(other, overwrite=True)
    assert victim.read_text() == "the user's file" and (other / "notes.md").read_text() == "mine"
    assert not (other / "stats.json").is_symlink() and _indicator_bytes(kept.folder) == _indicator_bytes(cli_run)
    assert not (other / "report.md").exists()  # the other run's report went with it (this run has none)
    page = saved.report(tmp_path / "report")
    assert page == tmp_path / "report" / "report.html" and page.stat().st_size > 0
    # the default linker's agreement with people's graphs travels with the run into its report
    assert json.loads((saved.folder / "run.json").read_text())["linker_agreement"]["measured"]
    assert "| split-half | ρ people | ρ silver |" in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="not a finished thinkprobe run"):
        thinkprobe.load_run(tmp_path)


def test_temporary_run_folder_goes_with_the_run(cache):
    run = thinkprobe.profile(RECORDS[:1], cache_dir=cache, **FAST)
    folder = run.folder
    assert (folder / "graphs.jsonl").exists()
    del run
    assert not folder.exists()


def test_limit_and_sample(tmp_path, cache):
    first = thinkprobe.profile(SAMPLES, tmp_path / "limit", limit=2, cache_dir=cache, **FAST)
    ids = [json.loads(line)["id"] for line in SAMPLES.read_text(encoding="utf-8").splitlines()]
    assert list(first.indicators["trace_id"]) == ids[:2]
    a = thinkprobe.profile(SAMPLES, tmp_path / "a", sample=3, seed=7, cache_dir=cache, **FAST)
    picked = list(a.indicators["trace_id"])
    assert len(picked) == 3 and picked == [i for i in ids if i in picked]  # input order kept
    res = CliRunner().invoke(main, ["profile", str(SAMPLES), "-o", str(tmp_path / "b"), "--sample", "3", "--seed", "7",
                                    "--device", "cpu", "--no-progress", "--no-report", "--cache-dir", str(cache)])
    assert res.exit_code == 0, res.output
    assert _indicator_bytes(tmp_path / "b") == _indicator_bytes(a.folder)
    assert json.loads((tmp_path / "b" / "run.json").read_text())["selection"] == {"limit": None, "sample": 3, "seed": 7}
    assert "note: --sample" not in res.stderr
    res = CliRunner().invoke(main, ["profile", str(SAMPLES), "-o", str(tmp_path / "all"), "--sample", "500",
                                    "--device", "cpu", "--no-progress", "--no-report", "--cache-dir", str(cache)])
    assert res.exit_code == 0 and "note: --sample 500 asks for more than the inputs hold (15 traces" in res.stderr


def test_what_profile_accepts():
    assert as_records("a.jsonl") == (["a.jsonl"], None)
    assert as_records([Path("a.jsonl"), "b.json"]) == (["a.jsonl", "b.json"], None)
    np = pytest.importorskip("numpy")
    paths, records = as_records(iter([{"x": np.int64(3), "y": np.array([1.5, float("nan")]), "z": float("nan")}]))
    assert paths == [] and records == [{"x": 3, "y": [1.5, None], "z": None}]
    with pytest.raises(TypeError, match="list of records"):
        as_records({"response": "<think>a</think>"})
    with pytest.raises(TypeError, match="cannot profile a int"):
        as_records(3)
    with pytest.raises(FileNotFoundError, match="no-such.jsonl"):
        thinkprobe.profile(["no-such.jsonl::model=M"], **FAST)


def test_bad_in_memory_records_are_listed(tmp_path, cache):
    run = thinkprobe.profile([RECORDS[0], {"id": "empty", "response": "<think> </think>"}, 42],
                             tmp_path / "out", cache_dir=cache, **FAST)
    assert len(run.indicators) == 1
    assert [(e["file"], e["record"]) for e in run.errors] == [("<memory>", 1), ("<memory>", 2)]


def test_readme_example(tmp_path, monkeypatch):
    """The README's worked example runs as written (its doctest)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    example = re.search(r"## Python API\n(.*?)\n## ", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("THINKPROBE_CACHE", str(tmp_path / "cache"))
    parser = doctest.DocTestParser()
    test = parser.get_doctest(example, {"SAMPLES": str(SAMPLES)}, "README.md#python-api", "README.md", 0)
    assert test.examples, "the README's Python API section has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0


def test_options_reach_the_run_with_the_command_defaults(monkeypatch, tmp_path):
    import thinkprobe.engine as engine

    seen = []

    def stop(opts):
        seen.append(opts)
        raise RuntimeError("stop before profiling")

    monkeypatch.setattr(engine, "run_profile", stop)
    monkeypatch.setenv("THINKPROBE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(RuntimeError):
        thinkprobe.profile(RECORDS, tmp_path / "a")
    with pytest.raises(RuntimeError):
        thinkprobe.profile(RECORDS, tmp_path / "b", model="M", path_pattern="(?P<domain>x)", sample=2, seed=5,
                           cache=False, progress=True)
    default, custom = seen
    assert default.cache_folder == str(tmp_path / "cache")  # the cache is on, as in the command
    assert (default.chunk_size, default.types, default.limit, default.sample) == (64, "head", None, None)
    assert default.records == RECORDS and default.inputs == []
    assert custom.cache_folder is None and custom.show_progress is True and (custom.sample, custom.seed) == (2, 5)
    assert (custom.field_map.model, custom.field_map.path_pattern) == ("M", "(?P<domain>x)")


def test_a_second_run_into_a_folder_being_written_is_refused(tmp_path, cache):
    """A review: two runs started into one -o folder both exited 0, and the folder held one run's
    graphs under the other's run.json (or the second cleared the first's chunks and the first crashed).
    A run holds the folder (flock on the folder) while it writes; a second is refused with that reason
    and writes nothing; once the first is done, the folder is free again."""
    import fcntl
    import os

    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out, os.O_RDONLY)  # as a run in progress holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(OutputFolderError, match="another thinkprobe run is writing into this folder"):
            thinkprobe.profile(RECORDS[:1], out, cache_dir=cache, **FAST)
        assert not any(out.iterdir())
    finally:
        os.close(fd)
    run = thinkprobe.profile(RECORDS[:1], out, cache_dir=cache, **FAST)
    assert len(run.graphs) == 1
