"""thinkprobe.stream and `thinkprobe watch` (issue 42, a live structural signal): a trace fed in
pieces of several sizes closes to the indicators and units of `thinkprobe.profile` on the whole
text (a bundled sample, and a real ReasoningFlow trace); settled units never change; snapshots
carry their fields with unit counts that only grow; the repetition-loop signal fires on a looping
text and on no real trace; `watch` follows a file being written and standard input."""
import gzip
import json
import threading
import time

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import thinkprobe
from conftest import SAMPLES
from thinkprobe.cli import main
from thinkprobe.config import Config
from thinkprobe.graph import units_of
from thinkprobe.indicators import INDICATORS
from thinkprobe.io import FieldMap, record_traces
from thinkprobe.live import SIGNALS, Stream, UnitMemo
from thinkprobe.records import Section
from thinkprobe.segment import fragment_spans, merge_fragments, settled_fragments, unit_spans
from thinkprobe.tables import read_csv

FAST = dict(device="cpu", progress=False, report=False)
SAMPLE = json.loads(SAMPLES.read_text(encoding="utf-8").splitlines()[5])  # qwq-math-01: <think> ... </think> answer


def _split(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _rf_record(shared_data, doc_id_part: str = "QwQ-32B", max_chars: int = 6000) -> dict:
    """A short real ReasoningFlow v1 trace (the first of the model whose response fits max_chars)."""
    with gzip.open(shared_data / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            text = rec["raw_text"].get("response", "")
            if doc_id_part in rec["doc_id"] and 2000 < len(text) < max_chars and "</think>" in text:
                return {"id": rec["doc_id"], "model": rec["metadata"]["generator"], "response": text}
    pytest.skip("no short ReasoningFlow trace found")


def _rows(run):
    return run.indicators[list(INDICATORS)].to_dict("records")


def _spans(run):
    return [(u["section"], u["start"], u["end"], u["text"]) for u in run.graphs[0]["units"]]


def _stream_and_close(record: dict, size: int, cache, **options):
    meta = {k: v for k, v in record.items() if k != "response"}
    s = thinkprobe.stream(record=meta, every=5, cache_dir=cache, **FAST, **options)
    snaps = []
    for piece in _split(record["response"], size):
        snap = s.feed(piece)
        if snap is not None:
            snaps.append(snap)
    settled = [(u.section, u.start, u.end, u.text) for u in s.units]
    return s, snaps, settled, s.close()


def _check_snapshots(snaps):
    assert snaps, "no snapshot"
    counts = [(s.units, s.analysed_units) for s in snaps]
    assert all(a <= b for a, b in zip(counts, counts[1:])), counts
    assert all(s.analysed_units <= s.units for s in snaps)
    for snap in snaps:
        assert set(snap.signals) == set(SIGNALS)
        assert snap.chars >= snap.pending_chars >= 0
        if snap.indicators is not None:
            assert set(snap.indicators) == set(INDICATORS) and snap.analysed_units > 0
    assert any(s.indicators is not None for s in snaps)
    json.dumps([s.as_dict() for s in snaps])  # JSON-ready


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def sample_once(tmp_path_factory):
    """The sample profiled at once, with an encoder of its own (no cache): the reference."""
    out = tmp_path_factory.mktemp("once")
    return thinkprobe.profile([SAMPLE], out, cache=False, **FAST)


@pytest.fixture(scope="module")
def memo():
    from thinkprobe.encoder import make_encoder

    return UnitMemo(make_encoder(overrides={"device": "cpu"}))


@pytest.fixture
def reuse(monkeypatch):
    """Streams made after `reuse(encoder)` wrap that encoder (a UnitMemo that already holds the
    units' embeddings and reader vectors) instead of a fresh one: each text is encoded once per module."""
    import thinkprobe.pipeline

    return lambda encoder: monkeypatch.setattr(thinkprobe.pipeline, "run_encoder", lambda opts, cfg: encoder)


def test_sample_closes_to_the_one_shot_profile(sample_once, cache):
    """Fed one character at a time, with an encoder of its own: the embeddings of units encoded a
    few at a time are those of the one-shot run, whose encoder saw the whole trace at once."""
    s, snaps, settled, run = _stream_and_close(SAMPLE, 1, cache)
    assert _rows(run) == _rows(sample_once)  # exact
    assert _spans(run) == _spans(sample_once)
    assert settled == [u[:4] for u in _spans(sample_once)][:len(settled)]  # a settled unit never changed
    assert len(settled) >= len(_spans(sample_once)) - 3
    _check_snapshots(snaps)
    assert snaps[-1].profile is None and "norms" in snaps[-1].profile_note
    # the shipped failure-risk model on the graph so far (the answer section is never read)
    assert all(0.0 < x.failure_risk < 1.0 for x in snaps if x.indicators is not None)


@pytest.mark.parametrize("size", [37, 400])
def test_sample_in_other_pieces(sample_once, cache, memo, reuse, size):
    reuse(memo)
    s, snaps, settled, run = _stream_and_close(SAMPLE, size, cache)
    assert _rows(run) == _rows(sample_once)
    assert _spans(run) == _spans(sample_once)
    assert settled == [u[:4] for u in _spans(sample_once)][:len(settled)]
    _check_snapshots(snaps)


def test_reasoning_streamed_into_its_own_field_beside_a_given_answer(cache, memo, reuse, tmp_path):
    """A saved record replayed: the reasoning fed into `thought`, the record already holding the
    answer in `response`. The answer section waits for close() (its units come after the reasoning);
    the reasoning's settled units are not re-read on every feed (they were: a snapshot on every feed,
    settled units cut mid-sentence, 9x the cost), and close() is the one-shot profile."""
    reuse(memo)
    reasoning, answer = SAMPLE["response"].split("</think>")
    record = {"thought": reasoning.strip(), "response": answer.strip()}
    once = thinkprobe.profile([record], tmp_path / "once", cache=False, **FAST)
    s = thinkprobe.stream(record={"response": record["response"]}, text_field="thought", every=5, cache_dir=cache,
                          **FAST)
    snaps, settled_seen = [], []
    for piece in _split(record["thought"], 37):
        if (snap := s.feed(piece)) is not None:
            snaps.append(snap)
            settled_seen.append([(u.section, u.start, u.end, u.text) for u in s.units])
    spans = [u[:4] for u in _spans(once)]
    for seen in settled_seen:  # every snapshot's settled units are the one-shot units, never re-cut
        assert seen == spans[:len(seen)]
    reasoning_units = sum(u[0] == "reasoning" for u in spans)
    assert len(snaps) <= reasoning_units // 5 + 2, (len(snaps), reasoning_units)
    _check_snapshots(snaps)
    run = s.close()
    assert _rows(run) == _rows(once) and _spans(run) == _spans(once)


def test_snapshots_score_against_norms(sample_once, cache, memo, reuse):
    reuse(memo)
    s = thinkprobe.stream(record={"model": "m"}, every=5, cache_dir=cache, norms=str(sample_once.folder / "norms.json"),
                          **FAST)
    for piece in _split(SAMPLE["response"], 120):
        s.feed(piece)
    snap = s.snapshot()  # encodes and analyses every settled unit
    assert snap.analysed_units == snap.units > 0 and snap.profile_note is None
    assert set(snap.profile) == {"Breadth", "Depth", "Structure", "Metacognition", "Efficiency"}


def test_real_trace_closes_to_the_one_shot_profile(shared_data, tmp_path, reuse):
    record = _rf_record(shared_data)
    once = thinkprobe.profile([record], tmp_path / "once", cache=False, **FAST)
    encoder = None
    for size in (200, 23):  # the first stream encodes afresh; the second reuses its encoder
        if encoder is not None:
            reuse(encoder)
        s, snaps, settled, run = _stream_and_close(record, size, tmp_path / "cache")
        encoder = s.encoder
        assert _rows(run) == _rows(once), size
        assert _spans(run) == _spans(once)
        assert settled == [u[:4] for u in _spans(once)][:len(settled)]
        _check_snapshots(snaps)
    assert len(_spans(once)) > 30


def _settled_pieces(text: str, size: int, cfg) -> list[tuple[int, int]]:
    """settled_fragments driven as a stream drives it (the text growing by `size` characters),
    then the rest of the section; merged into units."""
    frags, resume = [], 0
    for end in range(size, len(text) + size, size):
        got, resume = settled_fragments(text, resume, min(end, len(text)), cfg)
        frags += got
    frags += fragment_spans(text, resume, len(text))
    assert frags == fragment_spans(text, 0, len(text))
    return merge_fragments(text, frags, cfg)


@pytest.mark.parametrize("size", [1, 9, 64, 1000])
def test_settled_fragments_rebuild_the_whole_segmentation(size):
    cfg = Config.load()
    texts = [json.loads(line)["response"] for line in SAMPLES.read_text(encoding="utf-8").splitlines()]
    texts.append("Code first:\n```py\nx = 1\n\ny = 2\n```\nThen $$a\n\nb$$ math.\nOkay.\n\\begin{align}\nz\n"
                 "\\end{align}\nDone.\nHmm.\nHmm.")
    for text in texts:
        assert _settled_pieces(text, size, cfg) == unit_spans(text, Section("reasoning", "r", text, 0, len(text)), cfg)


def test_settled_fragments_on_real_traces(shared_data):
    cfg = Config.load()
    with gzip.open(shared_data / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz", "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["raw_text"].get("response", "") for _, line in zip(range(40), f)]
    for k, text in enumerate(t for t in texts if t):
        text = text[:8000]
        assert _settled_pieces(text, (7, 200, 1500)[k % 3], cfg) == unit_spans(
            text, Section("reasoning", "r", text, 0, len(text)), cfg)


PIECES = ["Let x be 2.", " so", "Okay.", "Hmm.", "1.", "\n", "\n\n", "```", "~~~", "$$", "\\[", "\\]", "\\begin{align}",
          "\\end{align}", "$x$", "`c`", "# Head", "e.g.", "Wait,", " ", "中文。", "a", "?"]


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.lists(st.integers(1, 40), min_size=1, max_size=12))
def test_settled_fragments_on_any_text(pieces, steps):
    """Whatever the text and wherever it is cut while it grows, the settled fragments and then the
    rest are the fragments of the whole text (so a settled unit never changes)."""
    text, cfg = "".join(pieces), Config.load()
    frags, resume, end = [], 0, 0
    for step in steps:
        end = min(len(text), end + step)
        got, resume = settled_fragments(text, resume, end, cfg)
        frags += got
    assert frags + fragment_spans(text, resume, len(text)) == fragment_spans(text, 0, len(text))


# ----------------------------------------------------------------------------- signals


@pytest.fixture(scope="module")
def no_encoding_config(tmp_path_factory):
    """A config under which a stream never encodes while fed (signals only: they read text)."""
    path = tmp_path_factory.mktemp("cfg") / "signals.yaml"
    path.write_text("stream:\n  encode_batch: 0\n", encoding="utf-8")
    return str(path)


def _fired(text: str, config: str, size: int = 50, **record) -> list[dict]:
    s = Stream(every=3, record=record, config=config, cache=False, **FAST)
    fired = []
    for piece in _split(text, size):
        snap = s.feed(piece)
        if snap is not None:
            assert snap.indicators is None  # nothing was encoded
            fired.append({k: v.fired for k, v in snap.signals.items()})
    fired.append({k: v.fired for k, v in s.snapshot(analyse=False).signals.items()})
    return fired


LOOP = ("<think>\nWe need the total of 3 apples and 4 apples plus 5 pears.\nFirst, 3 + 4 = 7 apples.\n"
        + "Wait, let me recompute the apples: 3 + 4 = 7 apples in all.\nSo the total is 7 apples and 5 pears, 12 fruits.\n" * 6)


def test_repetition_loop_fires_on_a_looping_text(no_encoding_config):
    fired = _fired(LOOP, no_encoding_config)
    assert not fired[0]["repetition_loop"]  # before the loop has formed
    assert fired[-1]["repetition_loop"]


def test_repetition_loop_on_real_traces(no_encoding_config, shared_data):
    """Quiet on the bundled samples and the first 15 ReasoningFlow v1 traces (five models); fires on
    the QwQ-32B trace that cycles through the same five units over and over (docs/stream.md: the
    signal fires on 8 of the 1,260 v1 traces, each a loop of this kind)."""
    texts = [json.loads(line)["response"] for line in SAMPLES.read_text(encoding="utf-8").splitlines()]
    looping = None
    with gzip.open(shared_data / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz", "rt", encoding="utf-8") as f:
        for k, line in enumerate(f):
            rec = json.loads(line)
            if k < 15:
                texts.append(rec["raw_text"].get("response", ""))
            if rec["doc_id"] == "gpqa-diamond_144_QwQ-32B":
                looping = rec["raw_text"]["response"]
                break
    for text in filter(None, texts):
        assert not any(f["repetition_loop"] for f in _fired(text[:30000], no_encoding_config, size=400))
    assert any(f["repetition_loop"] for f in _fired(looping, no_encoding_config, size=2000))


def test_phrase_copies_counts_the_copies_that_end_the_text():
    from thinkprobe.live import phrase_copies

    loop = "Wait, no, vinyloxy is OCH2CH2? " * 12
    assert phrase_copies("We start. " + loop, 50, 30, 4000) == 12
    assert phrase_copies("We start. " + loop + "Wait, no, vinyl", 50, 30, 4000) == 12  # a cut word is left out
    assert phrase_copies("We start. " + loop + "So the answer is B.", 50, 30, 4000) == 1  # the loop ended
    assert phrase_copies("very " * 20, 50, 30, 4000) == 1  # 20 words: under phrase_min_words
    assert phrase_copies("wait " * 40, 50, 30, 4000) == 40
    assert phrase_copies("a b c " * 10, 2, 3, 4000) == 1  # period 3 is over max_period 2
    assert phrase_copies("a b c " * 400, 50, 30, 60) == 20  # only the last 60 words are read
    terms = " ".join(f"Term {i} adds {2 * i + 1}, giving {(i + 1) ** 2}." for i in range(60))
    assert phrase_copies(terms, 50, 30, 4000) == 1
    assert phrase_copies("The table:\n" + "0 " * 100, 50, 30, 4000) == 1  # numbers only: a table, not a loop


def test_phrase_loop_fires_where_no_unit_settles(no_encoding_config, shared_data):
    """The QwQ-32B trace that ends in "Wait, no, vinyloxy is OCH2CH2?" 565 times with no line break:
    no unit settles in its last 17,000 characters, so repetition_loop cannot see the loop; phrase_loop
    fires and feed returns a snapshot for it. Quiet on the bundled samples (docs/stream.md: on the
    1,260 ReasoningFlow v1 traces it reaches 8 only in 4, each a real loop)."""
    with gzip.open(shared_data / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz", "rt", encoding="utf-8") as f:
        looping = next(json.loads(line)["raw_text"]["response"] for line in f
                       if '"gpqa-diamond_48_QwQ-32B"' in line)
    tail = looping[-20000:]
    assert "\n" not in tail[-17000:]
    fired = _fired(tail, no_encoding_config, size=200)
    assert fired[-1]["phrase_loop"] and not fired[-1]["repetition_loop"]
    assert any(f["phrase_loop"] for f in fired[:-1])  # a snapshot came while it was fed
    for line in SAMPLES.read_text(encoding="utf-8").splitlines():
        assert not any(f["phrase_loop"] for f in _fired(json.loads(line)["response"], no_encoding_config, size=300))


def test_critique_signals_count_cue_units(no_encoding_config):
    s = Stream(every=1, config=no_encoding_config, cache=False, **FAST)
    s.feed("<think>\nThe answer is 4.\nWait, that's wrong.\nLet me check the sum again.\nThe sum is 9.\nNext")
    signals = s.snapshot(analyse=False).signals
    assert [u.text for u in s.units][-1] == "The sum is 9."  # "Next" may go on: not settled
    assert signals["critique_run"].value == 0 and signals["revision_without_conclusion"].value == 2
    s.feed(" line.\nWait, verify that.\nBut wait, is that right?\nActually, no.\nWait, let me double-check.\nThen")
    signals = s.snapshot(analyse=False).signals
    assert signals["critique_run"].value == 4 and signals["critique_run"].fired
    assert signals["revision_without_conclusion"].value == 6 and not signals["revision_without_conclusion"].fired


# ----------------------------------------------------------------------------- watch


def test_watch_follows_a_growing_file(tmp_path, sample_once, memo, reuse):
    reuse(memo)
    path = tmp_path / "generation.txt"
    path.write_text("", encoding="utf-8")
    text = SAMPLE["response"]

    def write():
        with open(path, "a", encoding="utf-8") as f:
            for piece in _split(text, 150):
                f.write(piece)
                f.flush()
                time.sleep(0.05)
            f.write("[[END]] anything after the sentinel is not profiled")

    writer = threading.Thread(target=write)
    writer.start()
    res = CliRunner().invoke(main, ["watch", str(path), "--follow", "--until", "[[END]]", "--idle-timeout", "60",
                                    "--every", "5", "--json", "--device", "cpu", "--cache-dir", str(tmp_path / "c"),
                                    "--model", "qwq-style", "--question", SAMPLE["question"], "-o", str(tmp_path / "o")])
    writer.join()
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in res.output.splitlines() if line.startswith("{")]
    snaps = [x["snapshot"] for x in lines if "snapshot" in x]
    assert len(snaps) >= 3 and [s["units"] for s in snaps] == sorted(s["units"] for s in snaps)
    assert len({(s["units"], s["analysed_units"]) for s in snaps}) == len(snaps)  # no snapshot shown twice
    final = lines[-1]["final"]
    assert final["indicators"] == _rows(sample_once)[0] and final["units"] == len(_spans(sample_once))
    # the whole text's failure risk too (a review: only the snapshots had one), as anomalies.csv has it
    assert final["failure_risk"] == pytest.approx(float(read_csv(tmp_path / "o" / "anomalies.csv")[0]["failure_risk"]))
    graph = json.loads((tmp_path / "o" / "graphs.jsonl").read_text(encoding="utf-8"))
    assert graph["question"] == SAMPLE["question"] == sample_once.graphs[0]["question"]  # the parser read it


def test_watch_reads_standard_input(tmp_path, sample_once, memo, reuse):
    reuse(memo)
    res = CliRunner().invoke(main, ["watch", "-", "--every", "5", "--device", "cpu", "--cache-dir", str(tmp_path)],
                             input=SAMPLE["response"])
    assert res.exit_code == 0, res.output
    assert "units=" in res.output and "final profile of the whole text" in res.output
    assert f"{len(_spans(sample_once))} units" in res.output and "needs norms" in res.output


@pytest.mark.parametrize("how", ["truncated", "replaced", "rewritten"])
def test_watch_stops_when_the_followed_file_is_rewritten(tmp_path, how):
    """A file truncated and rewritten (or replaced under its name) while followed was read on from
    the old offset: old text spliced onto new text nobody wrote, or the new text ignored."""
    import os

    from thinkprobe.watch import SourceChanged, read_pieces

    path = tmp_path / "gen.txt"
    path.write_text("Alpha step one. " * 50, encoding="utf-8")
    pieces = read_pieces(str(path), follow=True, idle_timeout=30, interval=0.01, piece=100)
    got = "".join(next(pieces) for _ in range(8))
    assert got == ("Alpha step one. " * 50)[:800]
    if how == "truncated":
        path.write_text("Beta.", encoding="utf-8")
    elif how == "rewritten":  # in place and longer: the same inode, no shrinking (a review's case)
        path.write_text("Beta step two. " * 200, encoding="utf-8")
    else:
        (tmp_path / "new.txt").write_text("Beta. " * 500, encoding="utf-8")
        os.replace(tmp_path / "new.txt", path)
    with pytest.raises(SourceChanged, match=how):
        "".join(pieces)


def test_watch_ends_on_sigterm_as_on_ctrl_c(tmp_path, no_encoding_config):
    """A scheduler stopping `watch --follow` with SIGTERM killed it silently (exit -15): it now closes
    the stream, prints the profile of what it read and exits 130, as after Ctrl-C."""
    import signal
    import subprocess
    import sys

    path = tmp_path / "gen.txt"
    path.write_text("<think>\n" + "".join(f"Step {k}: we add {k} and 1.\n" for k in range(12)), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "thinkprobe.cli", "watch", str(path), "--follow", "--idle-timeout",
                             "120", "--every", "1", "--json", "--device", "cpu", "--no-cache", "--linker", "cue",
                             "--types", "cue", "--config", no_encoding_config],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()  # a snapshot: it is reading and following
    assert '"snapshot"' in first
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and json.loads(out.splitlines()[-1])["final"]["units"] >= 10


def test_watch_says_why_nothing_was_profiled_and_how_it_ended(tmp_path, monkeypatch):
    path = tmp_path / "empty.txt"
    path.write_text("", encoding="utf-8")
    res = CliRunner().invoke(main, ["watch", str(path), "--device", "cpu", "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0 and "no trace was profiled: empty reasoning" in res.output

    def interrupted(*args, **kwargs):  # Ctrl-C while reading: the profile is printed, the status says so
        yield "<think>\nWe add 2 and 3.\n"
        raise KeyboardInterrupt

    monkeypatch.setattr("thinkprobe.watch.read_pieces", interrupted)
    res = CliRunner().invoke(main, ["watch", str(path), "--device", "cpu", "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 130 and "interrupted" in res.output
    # a followed file that stops growing: it says so, and the summary's `stopped` too (it had said nothing)
    path.write_text("<think>\nWe add 2 and 3.\n", encoding="utf-8")
    monkeypatch.undo()
    res = CliRunner().invoke(main, ["watch", str(path), "--follow", "--idle-timeout", "0.3", "--json", "--device", "cpu",
                                    "--cache-dir", str(tmp_path / "c"), "--linker", "cue", "--types", "cue"])
    assert res.exit_code == 0 and "did not grow for 0.3 s (--idle-timeout)" in res.output
    final = next(json.loads(line)["final"] for line in res.output.splitlines() if line.startswith('{"final"'))
    assert final["stopped"] == "idle" and final["units"] >= 1
    # a repetition loop is named in the final summary, as profile's run names it (it was on stderr alone)
    path.write_text("<think>\nWe add 2 and 3.\n" + "Wait, let me check again.\n" * 12 + "So 5.\n</think>5",
                    encoding="utf-8")
    res = CliRunner().invoke(main, ["watch", str(path), "--json", "--device", "cpu", "--cache-dir", str(tmp_path / "c"),
                                    "--linker", "cue", "--types", "cue"])
    final = next(json.loads(line)["final"] for line in res.output.splitlines() if line.startswith('{"final"'))
    assert res.exit_code == 0 and any("12 times in a row" in w or "repetition loop" in w for w in final["warnings"]), final
    # once: not also on stderr from the profile run that closes the stream (it had been shown twice)
    assert sum("warning:" in line for line in res.output.splitlines()) == 0, res.output


def test_stream_refuses_what_it_cannot_do():
    with pytest.raises(TypeError, match="unknown options"):
        thinkprobe.stream(no_such_option=1)
    with pytest.raises(ValueError, match="graph_source"):
        thinkprobe.stream(graph_source="input")


def test_stream_reads_sections_as_profile_does():
    cfg = Config.load()
    trace = record_traces({"response": SAMPLE["response"]}, FieldMap(), "<memory>", 0)[0]
    assert [s.name for s in trace.sections] == ["reasoning", "answer"]
    assert {u.section for u in units_of(trace, cfg)[0]} == {"reasoning", "answer"}


def test_a_piece_over_the_trace_limit_is_refused_when_fed(no_encoding_config, tmp_path):
    """limits.max_trace_chars holds while the stream is fed, not only at close(): the piece that
    goes over is refused and not kept (the tags around the reasoning do not count, as in profile);
    close() profiles what was kept. `watch` stops reading there and profiles the same text."""
    from thinkprobe.io.limits import TooLarge

    reasoning = "We add 3 and 4.\nThat gives 7.\nSo the answer is 7.\n"
    s = Stream(every=1, config=no_encoding_config, cache=False, max_trace_chars=len(reasoning), **FAST)
    s.feed("<think>\n" + reasoning)  # over the limit in characters fed, within it as a trace
    with pytest.raises(TooLarge, match=f"over the limit of {len(reasoning)}"):
        s.feed("Check: 3 + 4 = 7.\n</think>")
    assert s.text == "<think>\n" + reasoning
    assert s.close().indicators["units"].tolist() == [3]
    # watch reads standard input in pieces of 256 characters: the second takes the text over 400
    text = "<think>\n" + "".join(f"Step {k}: we add {k} and {k + 1} to get {2 * k + 1}.\n" for k in range(30))
    res = CliRunner().invoke(main, ["watch", "-", "--every", "1", "--device", "cpu", "--no-cache", "--json",
                                    "--max-trace-chars", "400", "--config", no_encoding_config], input=text)
    assert res.exit_code == 1, res.output  # the profile printed is not the whole text's: the status says so
    assert "stopped reading: this piece takes the stream's trace text to" in res.stderr
    final = json.loads(res.stdout.splitlines()[-1])["final"]
    kept = thinkprobe.profile([{"id": "x", "response": text[:256]}], cache=False, **FAST)
    assert final["units"] == int(kept.indicators["units"][0]) > 3


def test_a_cut_emoji_is_replaced_and_said_and_bytes_are_refused_by_name(cache):
    """A review: `feed("emoji \\ud83d cut. ")` was accepted, and every close() then failed on the
    text's UTF-8 (so did thinkprobe.profile on such an in-memory record); `feed(b"...")` raised str's
    own TypeError. The lone surrogate becomes U+FFFD, as a file's does, named in the provenance; bytes
    are refused with the fix."""
    s = thinkprobe.stream(record={"model": "m1"}, cache_dir=cache, **FAST)
    with pytest.raises(TypeError, match=r"decode it first, e.g. piece.decode\('utf-8'\)"):
        s.feed(b"Let me think.")
    s.feed("Let me think. The emoji \ud83d is cut. ")
    s.feed("So the answer is 5.")
    run = s.close()
    (g,) = run.graphs
    assert any("\ufffd" in u["text"] for u in g["units"]) and g["provenance"]["repaired_unicode"] == [s.text_field]
    one_shot = thinkprobe.profile([{"id": "a", "model": "m", "reasoning": "So \ud83d five. Then 5."}], cache_dir=cache, **FAST)
    (g,) = one_shot.graphs
    assert g["provenance"]["repaired_unicode"] == ["reasoning"] and any("\ufffd" in u["text"] for u in g["units"])


def test_watch_names_text_it_cannot_read_as_profile_does(tmp_path):
    """A review: `watch` profiled UTF-16 text as mojibake ('\\ufffd\\ufffdL\\x00e\\x00t...') and said
    'no such file' of /dev/zero, where `profile` names both. The same checks, before any work; a
    pipe stays a source (a generation streamed into a FIFO)."""
    from thinkprobe.options import OptionError
    from thinkprobe.watch import read_pieces

    utf16 = tmp_path / "gen16.txt"
    utf16.write_bytes("Let me think. So 5.\n".encode("utf-16"))
    with pytest.raises(OptionError, match="UTF-16 text"):
        list(read_pieces(str(utf16)))
    zipped = tmp_path / "gen.txt"
    zipped.write_bytes(gzip.compress(b"Let me think."))
    with pytest.raises(OptionError, match="gzip data: watch reads plain text; decompress it"):
        list(read_pieces(str(zipped)))
    plain = tmp_path / "gen.md"
    plain.write_text("Hi")  # shorter than the 4 bytes the check reads: text
    assert "".join(read_pieces(str(plain))) == "Hi"
    res = CliRunner().invoke(main, ["watch", str(utf16), "--device", "cpu", "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 2 and "UTF-16 text" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["watch", "/dev/zero", "--device", "cpu"])
    assert res.exit_code == 2 and "not a regular file or a pipe" in res.output


def test_watch_marks_bytes_that_are_not_utf8_as_profile_marks_a_lone_surrogate(tmp_path, no_encoding_config):
    """A byte that is not UTF-8 had become U+FFFD with no word of it; it is now one, and the
    provenance names the field (`repaired_unicode`), as for a lone surrogate fed to a stream."""
    import io

    from thinkprobe.watch import read_pieces, watch

    path = tmp_path / "gen.txt"
    path.write_bytes("<think>\nLet me add 2 and 3 \u2014 that is 5.\n".encode() + b"Caf\xe9 is 5.\n</think>5")
    text = "".join(read_pieces(str(path), piece=7))
    assert "\u2014" in text and "Caf\udce9 is" in text
    watch(str(path), out_dir=str(tmp_path / "o"), out=io.StringIO(), config=no_encoding_config, **FAST)
    graph = json.loads((tmp_path / "o" / "graphs.jsonl").read_text(encoding="utf-8"))
    assert graph["provenance"]["repaired_unicode"] == ["response"]
    assert "Caf\ufffd is 5." in graph["fields"]["response"]
    clean = tmp_path / "clean.txt"
    clean.write_text("<think>\nLet me add 2 and 3.\nThat is 5.\n</think>5", encoding="utf-8")
    watch(str(clean), out_dir=str(tmp_path / "c"), out=io.StringIO(), config=no_encoding_config, **FAST)
    assert "repaired_unicode" not in json.loads((tmp_path / "c" / "graphs.jsonl").read_text(encoding="utf-8"))["provenance"]


def test_pieces_without_a_line_break_or_tag_do_not_reread_the_text(monkeypatch):
    """A review: a loop written without line breaks made every feed read the whole text again (its
    sections found anew): 10,000 pieces of 18 characters took 13.7 s, four times more per doubling.
    Such a piece settles nothing, so the text is read again only at a line break or a tag."""
    import thinkprobe.live as live

    calls = []
    real = live.record_traces
    monkeypatch.setattr(live, "record_traces", lambda *a, **k: calls.append(1) or real(*a, **k))
    s = thinkprobe.stream(record={"model": "m1"}, **FAST)
    for k in range(200):  # brackets and bars of math or code are no tag (a review: "|x|" made it quadratic again)
        s.feed(("I think it is so. ", "so |x| is 3 here. ", "a[i] = a[i-1] + 1; ", "x > 3 and y < 4. ")[k % 4])
    assert len(calls) == 1
    s.feed("\nSo the answer is 5.\n")
    assert len(calls) == 2 and len(s.units) >= 1
    # a tag of another style, or gpt-oss's bare final mark split across pieces, still settles at once
    for opening, closing in (("[THINK]", "[/THINK]"), ("◁think▷", "◁/think▷"), ("analysis", "assistantfinal")):
        s = thinkprobe.stream(record={"model": "m1"}, **FAST)
        s.feed(opening + "\nFirst, compute the sum of the numbers.\nThen check it against the total carefully.")
        s.feed(closing[:-3])
        s.feed(closing[-3:] + "The answer is 5.")
        assert len(s.units) == 2, (opening, [u.text for u in s.units])


def test_watch_reads_a_named_pipe(tmp_path):
    """A review: `watch FIFO` and `watch <(cmd)` crashed with 'Illegal seek' (the checks of a growing
    file seek); a pipe is read as standard input is, to its end."""
    import os

    from thinkprobe.watch import read_pieces

    fifo = tmp_path / "gen.fifo"
    os.mkfifo(fifo)
    text = "<think>\nLet me add 2 and 3.\nThat is 5.\n</think>5"

    def write():
        with open(fifo, "w", encoding="utf-8") as f:
            f.write(text)

    writer = threading.Thread(target=write)
    writer.start()
    assert "".join(read_pieces(str(fifo), follow=True, idle_timeout=30)) == text
    writer.join()
