"""End to end on the bundled sample traces: outputs, graph invariants, determinism, norms,
export, resume and bad records. The whole profile runs under a guard that fails on network use."""
import csv
import hashlib
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SAMPLES
from thinkprobe.cli import main
from thinkprobe.indicators import INDICATORS
from thinkprobe.engine import RunOptions, run_profile
from thinkprobe.outputs import OUTPUT_FILES
from thinkprobe.records import BACKWARD_EDGES, FORWARD_EDGES, NODE_TYPES


def profile(inputs, out, **kw):
    return run_profile(RunOptions(inputs=[str(p) for p in inputs], out_dir=str(out), progress=False, device="cpu",
                                   **{"cache": "cache_dir" in kw, **kw}))


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    result = profile([SAMPLES], out, chunk_size=4)
    return out, result


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def graphs(out):
    return [json.loads(line) for line in (Path(out) / "graphs.jsonl").read_text(encoding="utf-8").splitlines()]


def test_profile_runs_offline_and_writes_every_output(tmp_path, no_network):
    result = profile([SAMPLES], tmp_path)
    assert result["traces"] == 15 and result["errors"] == 0
    for name in OUTPUT_FILES:
        assert (tmp_path / name).exists(), name
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["device"] == "cpu" and "Tokenizer" in run["tokenizer"] and run["versions"]["torch"]


def test_graph_invariants(sample_run):
    out, _ = sample_run
    for g in graphs(out):
        units = g["units"]
        assert [u["id"] for u in units] == list(range(len(units)))
        for u in units:
            text = g["fields"][next(s["field"] for s in g["sections"] if s["name"] == u["section"])]
            assert text[u["start"]:u["end"]] == u["text"]
            assert u["type"] in NODE_TYPES
        incoming_forward = {e["dst"] for e in g["edges"] if e["type"] in FORWARD_EDGES}
        assert incoming_forward <= set(range(1, len(units)))  # no forced parent: a unit may open a new line
        pairs = [(min(e["src"], e["dst"]), max(e["src"], e["dst"])) for e in g["edges"]]
        assert len(pairs) == len(set(pairs))  # one edge per pair of units
        for e in g["edges"]:
            if e["type"] in FORWARD_EDGES:
                assert e["src"] < e["dst"]
            else:
                assert e["type"] in BACKWARD_EDGES and e["src"] > e["dst"]
            if e["type"] == "critique":
                assert e["polarity"] in ("affirm", "negate", "uncertain")
        # structural node types agree with the edges
        out_types = {}
        for e in g["edges"]:
            out_types.setdefault(e["src"], []).append(e["type"])
        for u in units:
            kinds = out_types.get(u["id"], [])
            if u["type"] == "RPT":
                assert "repetition" in kinds
            if u["type"] == "CRT":
                assert "critique" in kinds
            if u["type"] == "SYN":
                assert kinds.count("synthesis") >= 2


def test_samples_have_long_range_backward_edges(sample_run):
    out, _ = sample_run
    gs = graphs(out)
    far = [e for g in gs for e in g["edges"] if e["type"] in BACKWARD_EDGES and e["src"] - e["dst"] > 3]
    assert {e["type"] for e in far} >= {"critique", "repetition", "synthesis"}
    with_backward = [g for g in gs if any(e["type"] in BACKWARD_EDGES for e in g["edges"])]
    assert len(with_backward) >= 12


def test_indicator_and_profile_tables(sample_run):
    out, _ = sample_run
    rows = read_csv(out / "indicators.csv")
    assert len(rows) == 15
    for name in INDICATORS:
        values = [float(r[name]) for r in rows]
        assert all(math.isfinite(v) for v in values)
    prof = read_csv(out / "profile.csv")
    dims = ["Breadth", "Depth", "Structure", "Metacognition", "Efficiency"]
    for d in dims:  # z-scores over the run: each dimension averages to 0 over the corpus
        assert abs(sum(float(r[d]) for r in prof) / len(prof)) < 1e-4
    cells = read_csv(out / "model_domain_profiles.csv")
    assert {(r["model"], r["domain"]) for r in cells} == {(m, d) for m in ("r1-style", "qwq-style", "oss-style")
                                                          for d in ("math", "logic")}
    assert sum(int(r["n"]) for r in cells) == 15
    # the terse style reads as less exploratory, less metacognitive than the long-winded one
    by_model = {r["model"]: r for r in read_csv(out / "model_profiles.csv")}
    assert set(by_model) == {"r1-style", "qwq-style", "oss-style"}
    assert float(by_model["oss-style"]["Metacognition"]) < float(by_model["qwq-style"]["Metacognition"])
    assert float(by_model["oss-style"]["Breadth"]) < float(by_model["qwq-style"]["Breadth"])


def test_failure_risk_computed_per_chunk_is_what_the_graphs_give(sample_run, tmp_path):
    """Each chunk computes its traces' failure_risk as it is profiled (the assembly no longer reads
    every graph record again: 3 ms a trace, serial, at the end); anomalies.csv rebuilt from
    graphs.jsonl alone (a run whose chunks carry none) has the same bytes."""
    import json
    import shutil

    from thinkprobe.anomalies import write_anomalies
    from thinkprobe.risk import failure_risk

    from thinkprobe.accounting import answer_scan
    from thinkprobe.records import dump_graph_record

    out, _ = sample_run
    lines = [json.loads(line) for part in sorted((out / "parts").glob("0*.jsonl")) for line in open(part, encoding="utf-8")]
    assert lines and all(item["failure_risk"] == failure_risk(item["graph"]) for item in lines if "graph" in item)
    # a part line opens with what the scan for answers without thinking reads, and ends with the graph,
    # whose JSON text the join copies: graphs.jsonl is what dumping each record again would write
    assert all(list(item) == ["scan", "failure_risk", "graph"] and item["scan"] == answer_scan(item["graph"])
               for item in lines if "graph" in item)
    assert (out / "graphs.jsonl").read_text(encoding="utf-8") == "".join(
        dump_graph_record(item["graph"]) for item in lines if "graph" in item)
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "anomalies.csv").unlink()
    write_anomalies(copy)
    assert (copy / "anomalies.csv").read_bytes() == (out / "anomalies.csv").read_bytes()


def test_the_join_marks_the_traces_the_failure_risk_model_was_trained_on(sample_run, tmp_path, monkeypatch):
    """anomalies.csv's failure_risk_in_sample: the join, which reads every graph anyway, names the traces
    the failure-risk model was trained on (by risk.trace_key), and a rebuild from graphs.jsonl agrees."""
    import shutil

    import thinkprobe.risk as risk
    from thinkprobe.anomalies import read_anomalies, write_anomalies
    from thinkprobe.config import Config
    from thinkprobe.records import iter_graph_records
    from thinkprobe.redundancy import RedundancyParams
    from thinkprobe.runner import join_parts

    out, _ = sample_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    assert not any(a["failure_risk_in_sample"] for a in read_anomalies(copy))  # our sample traces: never trained on
    first = next(iter(iter_graph_records(copy)))
    monkeypatch.setattr(risk, "training_keys", lambda path=None: frozenset({risk.trace_key(first)}))
    cfg = Config.load()
    joined = join_parts(copy, RedundancyParams.from_config(cfg), cfg.indicators.cluster_exact_max)
    assert joined.in_sample[first["trace_id"]] and len(joined.in_sample) == len(joined.rows)
    write_anomalies(copy, cfg.stats, joined.risks, joined.in_sample)
    flagged = {a["trace_id"] for a in read_anomalies(copy) if a["failure_risk_in_sample"]}
    assert first["trace_id"] in flagged and flagged == {t for t, v in joined.in_sample.items() if v}
    as_joined = (copy / "anomalies.csv").read_bytes()
    (copy / "anomalies.csv").unlink()
    write_anomalies(copy)
    assert (copy / "anomalies.csv").read_bytes() == as_joined


def test_same_bytes_across_runs_chunk_and_batch_sizes(sample_run, tmp_path):
    out, _ = sample_run
    profile([SAMPLES], tmp_path, chunk_size=64, batch_size=7)
    for name in OUTPUT_FILES:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name


def test_same_bytes_with_worker_processes(sample_run, tmp_path):
    out, _ = sample_run
    profile([SAMPLES], tmp_path, chunk_size=4, workers=2)
    for name in OUTPUT_FILES:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name


def test_cache_second_run_encodes_and_scores_nothing_and_gives_same_bytes(sample_run, tmp_path):
    out, _ = sample_run
    cache = tmp_path / "cache"
    first = profile([SAMPLES], tmp_path / "a", chunk_size=64, cache_dir=str(cache))
    second = profile([SAMPLES], tmp_path / "b", chunk_size=4, cache_dir=str(cache))
    units = sum(len(g["units"]) for g in graphs(out))
    assert first["cache"]["embeddings"]["misses"] > 0 and first["cache"]["pair_scores"] == {"hits": 0, "misses": 15}
    assert second["cache"] == {"embeddings": {"hits": units, "misses": 0}, "pair_scores": {"hits": 15, "misses": 0},
                               "type_scores": {"hits": 15, "misses": 0}}
    for name in OUTPUT_FILES:
        assert (tmp_path / "a" / name).read_bytes() == (out / name).read_bytes(), name
        assert (tmp_path / "b" / name).read_bytes() == (out / name).read_bytes(), name


def test_saved_norms_score_a_new_corpus(sample_run, tmp_path):
    out, _ = sample_run
    subset = tmp_path / "subset.jsonl"
    subset.write_text("".join(SAMPLES.read_text(encoding="utf-8").splitlines(True)[:5]), encoding="utf-8")
    result = profile([subset], tmp_path / "a", norms=str(out / "norms.json"))
    run = json.loads((tmp_path / "a" / "run.json").read_text(encoding="utf-8"))
    assert run["norms_sha256"] == hashlib.sha256((out / "norms.json").read_bytes()).hexdigest()
    from thinkprobe.cli import format_summary

    assert f"positive = more than the mean of the norms in {out / 'norms.json'}" in format_summary(result)
    against_saved = {r["trace_id"]: r for r in read_csv(tmp_path / "a" / "profile.csv")}
    full = {r["trace_id"]: r for r in read_csv(out / "profile.csv")}
    for tid, row in against_saved.items():
        assert row == full[tid]
    profile([subset], tmp_path / "b")  # fit on the subset itself: different numbers
    own = {r["trace_id"]: r for r in read_csv(tmp_path / "b" / "profile.csv")}
    assert own != against_saved


def test_resume_skips_committed_chunks_and_gives_same_bytes(sample_run, tmp_path):
    out, _ = sample_run
    profile([SAMPLES], tmp_path, chunk_size=4)
    parts = sorted((tmp_path / "parts").glob("0*.jsonl"))
    assert len(parts) == 4
    parts[-1].unlink()
    (tmp_path / "graphs.jsonl").unlink()
    result = profile([SAMPLES], tmp_path, chunk_size=4, resume=True)
    assert result["resumed"] == 12
    for name in ("graphs.jsonl", "indicators.csv", "profile.csv"):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes()
    with pytest.raises(SystemExit, match="chunk_size"):
        profile([SAMPLES], tmp_path, chunk_size=5, resume=True)


def test_bad_records_are_listed_and_do_not_stop_the_batch(tmp_path):
    lines = SAMPLES.read_text(encoding="utf-8").splitlines()
    bad = [
        '{"id": "broken", "response": "<think>unterminated json',
        json.dumps({"id": "num", "model": "m", "response": 42}),
        json.dumps({"id": "blank", "model": "m", "response": "<think>   </think>"}),
        json.dumps({"id": "nothing", "model": "m"}),
    ]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([lines[0], *bad, lines[1]]) + "\n", encoding="utf-8")
    result = profile([mixed], tmp_path / "out")
    assert result["traces"] == 2 and result["errors"] == 4
    errors = [json.loads(x) for x in (tmp_path / "out" / "errors.jsonl").read_text().splitlines()]
    assert all(e["file"].endswith("mixed.jsonl") and e["reason"] for e in errors)
    assert [e["record"] for e in errors] == ["line 2", "line 3", "line 4", "line 5"]
    assert [e["field"] for e in errors[1:]] == ["response", "response", "reasoning"]
    assert "malformed JSON" in errors[0]["reason"]


def test_cli_profile_and_reasoningflow_export(tmp_path):
    records = [{"model": "m1" if i % 2 else "m2", "domain": "d", "response": f"<think>Okay, so we need {i} + 2. "
                f"That is {i + 2}. Wait, let me check: {i} + 2 = {i + 2}. Yes.</think>The answer is {i + 2}."}
               for i in range(4)]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    runner = CliRunner()
    res = runner.invoke(main, ["profile", str(path), "-o", str(tmp_path / "out"), "--no-report"])
    assert res.exit_code == 0, res.output
    assert "5D cognitive profile per model" in res.output and "m1" in res.output
    res = runner.invoke(main, ["export", str(tmp_path / "out"), "--format", "reasoningflow"])
    assert res.exit_code == 0, res.output
    docs = [json.loads(line) for line in Path(res.output.strip()).read_text().splitlines()]
    assert len(docs) == 4
    for doc, rec in zip(docs, records):
        response = doc["raw_text"]["response"]
        assert response == rec["response"]
        sections = {n["section"] for n in doc["nodes"]}
        assert sections == {"reasoning", "answer"}
        for node in doc["nodes"]:
            assert response[node["start"]:node["end"]] == node["text"]
    for fmt in ("graphml", "json"):
        res = runner.invoke(main, ["export", str(tmp_path / "out"), "--format", fmt])
        assert res.exit_code == 0, res.output
        assert Path(res.output.strip()).exists()


def test_reasoningflow_export_joins_separate_fields(tmp_path):
    rec = {"id": "sep", "model": "m", "reasoning_content": "First, add 2 and 2. That gives 4.", "content": "It is 4."}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    profile([path], tmp_path / "out")
    from thinkprobe.export import iter_graph_records, to_reasoningflow

    doc = to_reasoningflow(next(iter_graph_records(tmp_path / "out")))
    response = doc["raw_text"]["response"]
    assert "First, add 2 and 2." in response and response.rstrip().endswith("It is 4.")
    for node in doc["nodes"]:
        assert response[node["start"]:node["end"]] == node["text"]


def test_bench_runs_every_measure_and_finds_identical_cached_outputs(tmp_path, capsys, monkeypatch):
    """On two bundled sample traces (the data folder hidden: two real traces, drawn at random,
    made this test a minute long; scripts/bench.py measures the real corpus)."""
    from thinkprobe.bench import format_bench, run_bench

    monkeypatch.setenv("THINKPROBE_DATA", str(tmp_path / "no-data"))
    r = run_bench(2, device="cpu", scale=0, workdir=str(tmp_path / "bench"), naive_n=1)
    assert r["corpus"].startswith("bundled samples")
    assert r["traces"] == 2 and r["units"] > 0 and r["memory_peak_rss_mb"] == {}
    naive = r["naive_per_trace"]  # the naive baseline on the first trace only: its own units
    assert naive["traces"] == 1 and 0 < naive["units"] < r["units"]
    assert r["speedup_over_naive"] == r["full_pipeline"]["units_per_s"] / naive["units_per_s"]
    assert r["gpu_peak_allocated_mb"] is None
    said = capsys.readouterr().err  # each figure as soon as it is measured
    assert all(f"bench: {name}:" in said for name in ("raw encoder", "full", "naive", "cache1", "cache2"))
    assert r["cache"]["identical_outputs"] is True
    assert r["cache"]["hits"]["embeddings"] == {"hits": r["units"], "misses": 0}
    assert r["cache"]["hits"]["pair_scores"] == {"hits": 2, "misses": 0}
    assert {"encode", "link", "split"} <= set(r["full_pipeline"]["stages_s"])
    assert "not measured" in format_bench(r)


def _fill_cache(args):
    from thinkprobe.cache import ScoreCache
    import numpy as np

    folder, worker = args
    cache = ScoreCache(folder, "test", "fp")
    for k in range(60):
        cache.put({cache.key(f"{worker}-{k}".encode()): {"probs": np.full((3, 2), k, np.float32)}})
        cache.get([cache.key(f"{1 - worker}-{k}".encode())])
    return worker


def test_runs_sharing_one_cache_folder_do_not_lock_each_other_out(tmp_path):
    import numpy as np
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from thinkprobe.cache import ScoreCache

    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        assert sorted(pool.map(_fill_cache, [(str(tmp_path), 0), (str(tmp_path), 1)])) == [0, 1]
    cache = ScoreCache(tmp_path, "test", "fp")
    keys = [cache.key(f"{w}-{k}".encode()) for w in (0, 1) for k in range(60)]
    found = cache.get(keys)
    assert len(found) == 120 and np.array_equal(found[keys[61]]["probs"], np.full((3, 2), 1, np.float32))


def test_compare_runs_script_on_a_run_and_itself(sample_run, tmp_path):
    """scripts/compare_runs.py (docs/findings.md's linker comparison): a run against itself agrees
    perfectly on every indicator that varies; runs of different traces are refused."""
    import shutil
    import subprocess
    import sys

    out, _ = sample_run
    script = Path(__file__).resolve().parent.parent / "scripts" / "compare_runs.py"
    done = subprocess.run([sys.executable, str(script), str(out), str(out)], capture_output=True, text=True, check=True)
    assert "Thought Units and tokens identical in both runs: True" in done.stdout
    rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    by_name = {r[0].strip("| *"): r for r in rows}
    assert set(by_name) >= set(INDICATORS)
    n = len(read_csv(out / "indicators.csv"))
    for name in INDICATORS:
        rho, same = by_name[name][1], by_name[name][2]
        assert same == f"{n}/{n}"
        values = {r[name] for r in read_csv(out / "indicators.csv")}
        assert rho == ("1.00" if len(values) > 1 else "–"), name
    other = tmp_path / "other"
    shutil.copytree(out, other)
    # a variable constant in every trace has no effect sizes in stats.json: shown as "–", not a crash
    stats = json.loads((other / "stats.json").read_text(encoding="utf-8"))
    untested = stats["variables"][0]
    for grouping in ("model", "domain"):
        untested[grouping].update(status="constant", eps2=None, eps2_expected=None, eps2_corrected=None)
    untested["ratio_corrected"] = {"value": None, "floored": None, "note": "a grouping was not tested"}
    (other / "stats.json").write_text(json.dumps(stats), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(out), str(other)], capture_output=True, text=True, check=True)
    [row] = [line.split(" | ") for line in done.stdout.splitlines() if line.split(" | ")[0].strip("| *") == untested["variable"]]
    assert row[4] == "– / –" and row[3] != "– / –" and row[5].endswith("→ – |"), row
    lines = (other / "indicators.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (other / "indicators.csv").write_text("".join(lines[:-1]), encoding="utf-8")
    refused = subprocess.run([sys.executable, str(script), str(out), str(other)], capture_output=True, text=True)
    assert refused.returncode != 0 and "do not hold the same traces" in refused.stderr


def test_worker_processes_end_when_the_run_is_killed(tmp_path):
    """A run killed with SIGKILL (or by the OOM killer) cannot stop its --workers pool: the workers,
    children of the forkserver, lived on holding their memory (a red-team review: 467 MB alive 90 s
    later and through the --resume run). Each now ends itself within a second or two of the main process."""
    import os
    import signal
    import subprocess
    import sys
    import time

    def children(pid):
        found = []
        for d in Path("/proc").iterdir():
            try:
                if d.name.isdigit() and int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(d.name))
            except (OSError, ValueError):
                continue
        return found

    def running(pid):
        try:
            return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc (Linux) to find the worker processes")
    thought = " ".join(f"Step {j}: we add {j} and 2, giving {j + 2}. Wait, let me check it." for j in range(30))
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps({"id": f"t{k}", "model": "m", "reasoning_content": thought, "answer": "1"}) + "\n"
                            for k in range(400)))
    run = subprocess.Popen([sys.executable, "-m", "thinkprobe.cli", "profile", str(data), "-o", str(tmp_path / "o"),
                            "--workers", "2", "--chunk-size", "8", "--linker", "cue", "--types", "cue", "--no-cache",
                            "--device", "cpu", "--no-progress", "--no-report"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 180
        while not (tmp_path / "o" / "parts" / "000001.jsonl").exists() and run.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        tree, todo = [], [run.pid]
        while todo:
            found = children(todo.pop())
            tree += found
            todo += found
        assert run.poll() is None and len(tree) >= 3, "the run ended or started no workers before it could be killed"
    finally:
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    deadline = time.time() + 20
    while any(running(p) for p in tree) and time.time() < deadline:
        time.sleep(0.5)
    alive = [p for p in tree if running(p)]
    for p in alive:
        os.kill(p, signal.SIGKILL)
    assert not alive
