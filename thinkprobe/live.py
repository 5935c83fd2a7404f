"""A live structural signal (issue 42): profile a generation while it is being written.

    >>> s = thinkprobe.stream(norms="run/norms.json")            # doctest: +SKIP
    >>> for piece in generation:                                  # doctest: +SKIP
    ...     snap = s.feed(piece)                                   # a Snapshot every `every` new units, else None
    ...     if snap and any(snap.signals[k].fired for k in ("repetition_loop", "phrase_loop")):
    ...         stop_generating()
    >>> run = s.close()    # a Run, as thinkprobe.profile returns for the whole text  # doctest: +SKIP

What is done once per unit and what is redone (docs/stream.md):
- Segmentation: only the text after the last settled point is split again
  (`segment.settled_fragments`); a unit is final once a line break that no later text can move
  follows it.
- Encoding: every unit text is encoded once (`UnitMemo`: embedding, token count and the parser's
  reader vector, kept by text). Settled units wait until enough are pending for the encoder's
  same-length passes to be full (`stream.encode_share`, `stream.encode_batch`).
- Snapshots: TextTiling over the encoded units, then the parser over the newly encoded units and
  `stream.link_context` units before them; the edges a unit owns (those to earlier units, and its
  forward parents) are kept from the snapshot that first linked it. Indicators over all encoded units.
  These are approximations of the whole-trace stages (docs/stream.md measures them).
- `close()`: the whole text through `thinkprobe.profile`'s own code path (segmentation, tiling,
  the parser over the whole trace, indicators), with the stream's encoder, so no unit is encoded
  twice on CPU; its indicators are those of profiling the whole text at once.
"""
from __future__ import annotations

import contextlib
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .cognitive_profile import Normalizer, profile_row
from .config import Config
from .graph import block_starts, link_graphs, tile_and_type
from .indicators import compute_indicators
from .io import record_traces
from .io.tags import LEADING_TOKENS, OSS_BARE_FINAL, SPECIAL_TOKEN, TAG_PAIRS, TRAILING_TOKENS
from .io.unicode import LONE_SURROGATE, unicode_safe
from .io.limits import InputLimits, TooLarge, trace_chars
from .link import bind_encoder
from .nodetypes import cue_categories
from .options import OptionError, RunOptions, option_specs
from .records import Edge, Section, ThoughtGraph, ThoughtUnit, Trace, graph_record
from .runner import MEMORY_SOURCE, run_config, run_linker, run_typer
from .timing import StageTimes
from .segment import fragment_spans, is_filler, merge_fragments, says, settled_fragments, tile

__all__ = ["stream", "Stream", "Snapshot", "Signal", "UnitMemo", "SIGNALS", "NEEDS_NORMS", "failure_risk"]

# What each named signal measures (docs/stream.md defines them; thresholds in configs/default.yaml, stream.signals).
SIGNALS: dict[str, str] = {
    "repetition_loop": "the last units in a row that each repeat the unit p before it, for one period p <= "
                       "loop_max_period (same words and signs in the same order, or Jaccard of their sets >= repeat_jaccard)",
    "critique_run": "the last units in a row that carry a critique cue (lexicon CRT)",
    "revision_without_conclusion": "units with a critique cue since the last unit with a conclusion cue (lexicon CON)",
    "filler_run": "settled filler fragments in a row at the end of the text (\"Hmm.\" over and over: no unit forms)",
    "phrase_loop": "copies in a row, at the end of the text fed so far (settled or not), of its last p words, for the "
                   "period p <= phrase_max_period words that gives the most, counted where they cover at least "
                   "phrase_min_words words and the period holds a word that is not a number (a loop with no line break, "
                   "where no unit settles)",
}
NEEDS_NORMS = "the profile needs norms: pass norms=PATH (a run's norms.json; thinkprobe watch --norms)"
# What may settle a unit or change the sections: a line break, or one of the tags and marks that open
# or close a section (whole, not a bracket alone: "|x|" or "a[i]" in a loop would re-read it every time)
_MAY_SETTLE = re.compile("|".join(["\n", SPECIAL_TOKEN.pattern, *(re.escape(t) for t in (
    *(tag for pair in TAG_PAIRS for tag in pair), *LEADING_TOKENS, *TRAILING_TOKENS, OSS_BARE_FINAL))]))
_SETTLE_LOOKBACK = 40  # characters before a piece searched with it: a tag cut between two pieces
_WORDS = re.compile(r"\w+")


def failure_risk(graph: ThoughtGraph, indicators: Mapping[str, float]) -> float | None:
    """The probability that the trace's answer will be wrong, from the structure of the reasoning so
    far: the shipped failure-risk model (thinkprobe/risk.py, models/failure-risk) on the graph of the
    analysed units; None where no model is installed or the reasoning so far is shorter than any the
    model was trained on."""
    from .risk import failure_risk as risk_of, shipped_model

    model = shipped_model()
    risk = None if model is None else risk_of(graph_record(graph, indicators), model)
    return None if risk is None else float(risk)


@dataclass(frozen=True)
class Signal:
    """One named signal of a snapshot: `value` measured, `fired` when it reaches `threshold`."""

    name: str
    value: float
    threshold: float
    fired: bool
    about: str


@dataclass(frozen=True)
class Snapshot:
    """Where a stream stands. `units` counts the settled Thought Units (final: later text cannot
    change them); `pending_chars` the characters after the last of them. The indicators, profile
    and failure risk cover the first `analysed_units` of them (those encoded so far; None before
    the first). `signals` cover every settled unit (phrase_loop: the text itself)."""

    chars: int
    units: int
    pending_chars: int
    analysed_units: int
    indicators: dict[str, float] | None
    profile: dict[str, float] | None
    profile_note: str | None
    failure_risk: float | None
    signals: dict[str, Signal]
    last_unit: str | None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (what `thinkprobe watch --json` prints, one line per snapshot)."""
        out = asdict(self)
        out["signals"] = {k: {"value": s.value, "threshold": s.threshold, "fired": s.fired} for k, s in self.signals.items()}
        return out


class UnitMemo:
    """An encoder that remembers what it computed for every text: embedding, token count and, with
    a reader attached (the parser's), the reader vector. Asked again, it encodes only texts it has
    not seen. Anything else is the wrapped `Encoder`'s. On CPU a text's embedding does not depend on
    the texts encoded with it (`Encoder._encode_and_count`), so serving it from memory is `exact`;
    on CUDA it is not, and `close()` lets the run encode the whole trace afresh."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.on_encoded = self.on_encoding = None  # a run's progress callbacks (set by run_local)
        self._rows: dict[str, tuple[np.ndarray, int]] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._reader = None

    def __getattr__(self, name: str):
        if name.startswith("__") or name == "encoder":
            raise AttributeError(name)
        return getattr(self.encoder, name)

    @property
    def exact(self) -> bool:
        return str(self.encoder.device).startswith("cpu")

    def __len__(self) -> int:
        return len(self._rows)

    def attach_reader(self, reader) -> None:
        if reader is not self._reader:
            self._reader, self._vectors = reader, {}
        self.encoder.attach_reader(reader)

    def encode_and_count(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if self.on_encoding is not None:
            self.on_encoding(len(texts))
        missing = [t for t in dict.fromkeys(texts) if t not in self._rows]
        if missing:
            emb, tok = self.encoder.encode_and_count(missing)
            self._rows.update((t, (e, int(k))) for t, e, k in zip(missing, emb, tok))
            if self._reader is not None:
                self._vectors.update(zip(missing, self.encoder.reader_vectors(missing, self._reader)))
        if self.on_encoded is not None:
            self.on_encoded(len(texts))
        if not texts:
            return np.zeros((0, self.encoder.dimension), np.float32), np.zeros(0, np.int32)
        return (np.stack([self._rows[t][0] for t in texts]),
                np.array([self._rows[t][1] for t in texts], dtype=np.int32))

    def reader_vectors(self, texts: Sequence[str], reader=None) -> np.ndarray:
        if reader is not None:
            self.attach_reader(reader)
        if self._reader is None:
            raise ValueError("no reader attached to the encoder")
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.encoder.reader_vectors(missing, self._reader)))
        if not texts:
            return np.zeros((0, self._reader.hidden), np.float32)
        return np.stack([self._vectors[t] for t in texts])


@dataclass
class _Section:
    """How far one section of the trace is settled."""

    name: str
    start: int
    first: int  # index of its first unit in the stream's units
    resume: int  # where `settled_fragments` goes on
    seen_break: int = -1  # the last line break it was asked about
    closed_end: int | None = None  # the section's end once a later section exists (its tail then settled too)
    pending: list = field(default_factory=list)  # settled filler fragments waiting for the next content fragment


@dataclass
class _Unit:
    """A settled unit and what the stream keeps of it."""

    unit: ThoughtUnit
    words: tuple[str, ...]  # lower-cased \w+ words, in order
    cues: tuple[str, ...]
    repeats: tuple[int, ...]  # per period p = 1..loop_max_period: units in a row up to this one repeating the unit p back
    tokens: int = 0  # with the encoder's tokenizer (set when analysed)
    cue_type: str = "RSN"  # provisional type from the cue lexicon (set when analysed)
    node_type: str = "RSN"  # final type from the snapshot that linked it
    concreteness: float = 0.0
    hedge: bool = False
    perspective: bool = False


@contextlib.contextmanager
def _small_model_run(linker):
    """The parser over a snapshot's window: one torch thread (a short sequence on several threads
    mostly waits for them), and its scores kept out of the score cache (they are not a trace's)."""
    import torch

    threads = torch.get_num_threads()
    cache = getattr(linker, "cache", None)
    torch.set_num_threads(1)
    if cache is not None:
        linker.cache = None
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        if cache is not None:
            linker.cache = cache


class Stream:
    """Profile one generation while it is written: `feed` pieces, `snapshot` at will, `close` at
    the end. Built by `thinkprobe.stream` (see there)."""

    def __init__(self, *, every: int | None = None, record: Mapping[str, Any] | None = None,
                 text_field: str = "response", **options: Any):
        unknown = sorted(set(options) - {f.name for f, _ in option_specs()})
        if unknown:
            raise TypeError(f"stream() got unknown options {', '.join(unknown)}; see help(thinkprobe.stream)")
        self.options = dict(options)
        self.opts = RunOptions(records=[], **options)
        if self.opts.graph_source != "parse":
            raise OptionError("a stream parses the text it is fed: graph_source must be 'parse'")
        if self.opts.engine != "local":
            raise OptionError("a stream runs on this machine: engine must be 'local'")
        self.cfg: Config = run_config(self.opts)
        settings = self.cfg["stream"]
        self.every = int(every or settings["every"])
        self.encode_share, self.encode_batch = float(settings["encode_share"]), int(settings["encode_batch"])
        self.link_context, self.cluster_max = int(settings["link_context"]), int(settings["snapshot_cluster_max"])
        self.thresholds = dict(settings["signals"])
        self.record, self.text_field = dict(record or {}), text_field
        from .pipeline import run_encoder

        self.encoder = UnitMemo(run_encoder(self.opts, self.cfg))
        cache = self.opts.cache_folder
        self.linker = run_linker(self.opts, self.cfg, self.encoder.device, cache)
        self.typer = run_typer(self.opts, self.linker, cache)
        bind_encoder(self.linker, self.encoder)
        self.norms = Normalizer.load(self.opts.norms) if self.opts.norms else None
        self.limits = InputLimits.from_config(self.cfg)
        self.text = ""
        self._repaired = False  # a piece held a lone surrogate (replaced)
        self.closed = False
        self._trace: Trace | None = None
        self._sections: list[_Section] = []
        self._units: list[_Unit] = []
        self._edges: list[Edge] = []  # edges of the analysed units, each kept by its later end
        self._encoded = 0  # units [0, _encoded) are in the encoder's memory
        self._analysed = 0  # units [0, _analysed) have types and edges
        self._indicators: dict[str, float] | None = None
        self._risk: float | None = None
        self._last_snapshot = 0
        self._phrase_checked, self._phrase_fired = 0, False  # text length at the last phrase-loop check; its verdict
        self.times = StageTimes()  # seconds per stage (settle, encode, link, indicators, close): the benchmark's breakdown

    # ------------------------------------------------------------------ feeding

    @property
    def units(self) -> list[ThoughtUnit]:
        """The settled Thought Units so far (types as the latest snapshot gave them)."""
        return [u.unit for u in self._units]

    def feed(self, piece: str) -> Snapshot | None:
        """Append the next piece of the generation; a Snapshot when `every` units settled since the
        last one or when phrase_loop starts to fire (checked every phrase_check_chars), else None."""
        if self.closed:
            raise RuntimeError("the stream is closed")
        if not isinstance(piece, str):
            raise TypeError(f"feed() takes the next piece of text (a str), not {type(piece).__name__}"
                            + (": decode it first, e.g. piece.decode('utf-8')" if isinstance(piece, bytes) else ""))
        if LONE_SURROGATE.search(piece):  # an emoji cut in two: U+FFFD, as profile() reads it, and said
            piece, self._repaired = LONE_SURROGATE.sub("\ufffd", piece), True
        self._check_size(self.text + piece)
        self.text += piece
        # Units settle at a line break, and sections change at a tag ("</think>", "[/THINK]", "◁/think▷",
        # gpt-oss's bare "assistantfinal", a special token): a piece with neither settles nothing new, so
        # the whole text is not read again (a loop without line breaks re-read it every feed: quadratic).
        if self._trace is None or _MAY_SETTLE.search(self.text, max(0, len(self.text) - len(piece) - _SETTLE_LOOKBACK)):
            with self.times("settle"):
                self._settle()
        waiting = len(self._units) - self._encoded
        if self.encode_batch and waiting >= min(self.encode_batch, max(self.every, int(self.encode_share * len(self._units)))):
            self._encode()
        if len(self._units) - self._last_snapshot >= self.every:
            return self.snapshot(analyse=False)
        if len(self.text) - self._phrase_checked >= self.thresholds["phrase_check_chars"]:
            was = self._phrase_fired
            if self._phrase_loop() >= self.thresholds["phrase_loop_min"] and not was:
                return self.snapshot(analyse=False)  # a loop that settles no unit still gets its snapshot
        return None

    def _check_size(self, text: str) -> None:
        """Refuse a piece that takes the trace's text (reasoning plus answer, as `profile` counts it)
        over limits.max_trace_chars, before it is kept: what was fed before stays, and `close()`
        profiles it. With oversize 'truncate', `close()` cuts the text as `profile` would."""
        cap = self.limits.max_trace_chars
        if not cap or self.limits.oversize != "refuse" or len(text) <= cap:  # sections are spans of the text
            return
        item = self._item(text)
        total = trace_chars(item) if isinstance(item, Trace) else len(text)
        if total > cap:
            raise TooLarge(f"this piece takes the stream's trace text to {total:,} characters, over the limit of "
                           f"{cap:,} (raise it with max_trace_chars / --max-trace-chars, or keep the first {cap:,} "
                           f"with oversize='truncate' / --oversize truncate); the piece was not kept")

    def snapshot(self, analyse: bool = True) -> Snapshot:
        """Where the stream stands now; `analyse`: encode the settled units still waiting and
        analyse them first (the indicators then cover every settled unit)."""
        if analyse and self._encoded < len(self._units):
            self._encode()
        self._last_snapshot = len(self._units)
        ind = self._indicators
        profile = {k: float(v) for k, v in profile_row(self.norms.z(ind)).items()} if ind is not None and self.norms else None
        last_end = self._units[-1].unit.end if self._units else 0
        return Snapshot(
            chars=len(self.text), units=len(self._units), pending_chars=len(self.text) - last_end,
            analysed_units=self._analysed if ind is not None else 0, indicators=dict(ind) if ind is not None else None,
            profile=profile, profile_note=None if self.norms else NEEDS_NORMS,
            failure_risk=self._risk if ind is not None else None,
            signals=self.signals(), last_unit=self._units[-1].unit.text if self._units else None)

    def close(self, out_dir: str | Path | None = None, warn: bool = True):
        """End the stream: profile the whole text as `thinkprobe.profile` does (same code path, the
        stream's encoder and parser); returns that `Run`. `out_dir` as `profile`'s; without `warn` its
        warnings (a repetition loop, a one-unit trace) are only in the Run's summary, not on stderr."""
        from .api import profile_run

        self.closed = True
        temporary = out_dir is None
        out = Path(tempfile.mkdtemp(prefix="thinkprobe-stream-")) if temporary else Path(out_dir)
        opts = RunOptions(records=[self.record_now()], out_dir=str(out), **self.options)
        with self.times("close"):
            return profile_run(opts, temporary, encoder=self.encoder if self.encoder.exact else None, linker=self.linker,
                               warn=warn)

    def record_now(self) -> dict:
        """The record of the text so far, as `close` profiles it."""
        return unicode_safe(self._record(self.text), [self.text_field] if self._repaired else [])

    def _record(self, text: str) -> dict:
        return {**self.record, self.text_field: text}

    # ------------------------------------------------------------------ segmentation

    def _item(self, text: str):
        """What the record with `text` as its text reads as (a Trace, or the InputError of a record
        that does not read yet)."""
        return record_traces(self._record(text), self.opts.field_map, MEMORY_SOURCE, 0)[0]

    def _current_trace(self) -> Trace | None:
        item = self._item(self.text)
        return item if isinstance(item, Trace) and item.given is None else None

    def _settle(self) -> None:
        trace = self._current_trace()
        if trace is None:
            return
        self._trace = trace
        # The sections up to the last one read from the streamed field; a later one (the record's own
        # answer field) waits for close(): its units would come before the reasoning still to come.
        fed = [k for k, sec in enumerate(trace.sections) if sec.field == self.text_field]
        sections = trace.sections[:fed[-1] + 1] if fed else trace.sections
        for k, sec in enumerate(sections):
            state = self._sections[k] if k < len(self._sections) else None
            if state is None or (state.name, state.start) != (sec.name, sec.start) or state.resume > sec.end or (
                    state.closed_end is not None and state.closed_end != sec.end):
                first = state.first if state is not None else len(self._units)
                self._truncate(first)
                del self._sections[k:]
                state = _Section(sec.name, sec.start, first, sec.start)
                self._sections.append(state)
            if k < len(sections) - 1:
                if state.closed_end is None:  # the section has ended: its tail settles too
                    self._close_section(state, sec)
            else:
                self._advance(state, sec)
        if len(self._sections) > len(sections):
            self._truncate(self._sections[len(sections)].first)
            del self._sections[len(sections):]

    def _advance(self, state: _Section, sec: Section) -> None:
        brk = self.text.rfind("\n", state.resume, sec.end)
        if brk <= state.seen_break:
            return  # no new line break: nothing can have settled
        state.seen_break = brk
        frags, state.resume = settled_fragments(sec.text, state.resume, sec.end, self.cfg)
        last = next((k for k in range(len(frags) - 1, -1, -1) if not is_filler(sec.text[slice(*frags[k])], self.cfg)), -1)
        if last < 0:  # filler only so far: it waits for content (state.pending holds only filler)
            state.pending += frags
            return
        frags, state.pending = state.pending + frags[:last + 1], frags[last + 1:]
        self._append(sec, merge_fragments(sec.text, frags, self.cfg))

    def _close_section(self, state: _Section, sec: Section) -> None:
        frags = state.pending + fragment_spans(sec.text, state.resume, sec.end, self.cfg.segment.max_line_chars)
        state.pending = []
        spans = merge_fragments(sec.text, frags, self.cfg)
        if frags and len(self._units) > state.first and all(is_filler(sec.text[s:e], self.cfg) for s, e in frags):
            last = self._units[-1].unit  # the section ends in filler only: its last unit takes it in (as unit_spans does)
            self._truncate(len(self._units) - 1)
            spans = [(last.start, frags[-1][1])]
        self._append(sec, spans)
        state.resume, state.closed_end = sec.end, sec.end

    def _append(self, sec: Section, spans: Sequence[tuple[int, int]]) -> None:
        periods = range(1, self.thresholds["loop_max_period"] + 1)
        for s, e in spans:
            text = sec.text[s:e]
            words = says(text)  # signs count: Dyck steps "( ; stack: ( (" are not all the word "stack"
            k = len(self._units)
            before = self._units[-1].repeats if self._units else (0,) * len(periods)
            repeats = tuple(before[p - 1] + 1 if p <= k and self._repeat(words, self._units[k - p].words) else 0
                            for p in periods)
            self._units.append(_Unit(ThoughtUnit(k, sec.name, s, e, text, 0), words, cue_categories(text, self.cfg), repeats))

    def _repeat(self, a: tuple[str, ...], b: tuple[str, ...]) -> bool:
        """Whether a unit's words repeat another's: the same words in the same order, or (both of at
        least repeat_min_words distinct words) word sets of Jaccard similarity >= repeat_jaccard."""
        if a == b:
            return bool(a)
        sa, sb = set(a), set(b)
        small = min(len(sa), len(sb)) < self.thresholds["repeat_min_words"]
        return not small and len(sa & sb) >= self.thresholds["repeat_jaccard"] * len(sa | sb)

    def _truncate(self, n: int) -> None:
        """Forget the units from index n on (the text before them was read differently)."""
        if n >= len(self._units):
            return
        del self._units[n:]
        self._encoded = min(self._encoded, n)
        if self._analysed > n:
            self._analysed = n
            self._edges = [e for e in self._edges if max(e.src, e.dst) < n]
            self._measure()
        self._last_snapshot = min(self._last_snapshot, n)

    # ------------------------------------------------------------------ encoding and analysis

    def _encode(self) -> None:
        with self.times("encode"):
            self.encoder.encode_and_count([u.unit.text for u in self._units[self._encoded:]])
        self._encoded = len(self._units)
        self._analyse()

    def _analyse(self) -> None:
        """Type, link and measure the encoded units (see the module docstring)."""
        start, stop = self._analysed, self._encoded
        if stop <= start or self._trace is None:
            return
        with self.times("tile_type"):
            units, emb, tok, seg = self._tile_and_type(start, stop)
        w0 = max(0, start - self.link_context)
        window = ThoughtGraph(
            trace=self._trace, edges=[], embeddings=emb[w0:], tokens=tok[w0:],
            units=[ThoughtUnit(k - w0, u.section, u.start, u.end, u.text, int(seg[k]), self._units[k].cue_type,
                               self._units[k].cues) for k, u in enumerate(units) if k >= w0],
            concreteness=np.array([u.concreteness for u in self._units[w0:stop]]),
            hedge=np.array([u.hedge for u in self._units[w0:stop]]),
            perspective=np.array([u.perspective for u in self._units[w0:stop]]))
        if len(window.units) > 1:
            with self.times("link"), _small_model_run(self.linker):
                link_graphs([window], self.linker, self.typer)
        for k in range(start, stop):
            kept = self._units[k]
            kept.node_type = window.units[k - w0].node_type
            kept.unit = ThoughtUnit(k, kept.unit.section, kept.unit.start, kept.unit.end, kept.unit.text, int(seg[k]),
                                    kept.node_type, kept.cues)
        self._edges += [Edge(e.src + w0, e.dst + w0, e.edge_type, e.polarity, e.score)
                        for e in window.edges if max(e.src, e.dst) + w0 >= start]
        self._analysed = stop
        self._measure()

    def _measure(self) -> None:
        """The indicators of the analysed units (semantic_spread exact up to stream.snapshot_cluster_max content units)."""
        kept = self._units[:self._analysed]
        if not kept or self._trace is None:
            self._indicators = None
            return
        emb, tok = self.encoder.encode_and_count([u.unit.text for u in kept])
        whole = ThoughtGraph(
            trace=self._trace, units=[u.unit for u in kept], edges=self._edges, embeddings=emb, tokens=tok,
            concreteness=np.array([u.concreteness for u in kept]), hedge=np.array([u.hedge for u in kept]),
            perspective=np.array([u.perspective for u in kept]))
        with self.times("indicators"):
            self._indicators = compute_indicators(whole.arrays(), cluster_distance=self.cfg.indicators.cluster_distance,
                                                  cluster_exact_max=min(self.cluster_max, self.cfg.indicators.cluster_exact_max))
        with self.times("failure_risk"):
            self._risk = failure_risk(whole, self._indicators)

    def _tile_and_type(self, start: int, stop: int):
        """TextTiling over units [0, stop), the per-unit features of [start, stop)."""
        units = [u.unit for u in self._units[:stop]]
        emb, tok = self.encoder.encode_and_count([u.text for u in units])
        tiling = self.cfg.tiling
        seg = tile(emb, block_starts(units), window=tiling.window, min_block_units=tiling.min_block_units,
                   cutoff_std=tiling.cutoff_std, min_depth=tiling.min_depth)
        # per-unit features of the new units: the pipeline's own function (its tiling of them alone is not used)
        fresh = [ThoughtUnit(k, u.section, u.start, u.end, u.text, 0) for k, u in enumerate(units[start:])]
        typed = tile_and_type(self._trace, (fresh, []), emb[start:], tok[start:], self.cfg)
        for k, t in enumerate(typed.units):
            kept = self._units[start + k]
            kept.cue_type, kept.concreteness = t.node_type, float(typed.concreteness[k])
            kept.hedge, kept.perspective = bool(typed.hedge[k]), bool(typed.perspective[k])
            kept.tokens = int(tok[start + k])
        return units, emb, tok, seg

    # ------------------------------------------------------------------ signals

    def signals(self) -> dict[str, Signal]:
        """The named signals over the settled units (docs/stream.md defines each)."""
        th, units = self.thresholds, self._units
        loop = max(units[-1].repeats) if units else 0
        run = 0
        for u in reversed(units):
            if "CRT" not in u.cues:
                break
            run += 1
        revisions = 0
        for u in reversed(units):
            if "CON" in u.cues:
                break
            revisions += "CRT" in u.cues
        filler = len(self._sections[-1].pending) if self._sections else 0
        phrase = self._phrase_loop()
        values = {"repetition_loop": (loop, th["loop_min"]), "critique_run": (run, th["critique_run"]),
                  "revision_without_conclusion": (revisions, th["revision_min"]), "filler_run": (filler, th["filler_run"]),
                  "phrase_loop": (phrase, th["phrase_loop_min"])}
        return {name: Signal(name, float(v), float(t), v >= t, SIGNALS[name]) for name, (v, t) in values.items()}

    def _phrase_loop(self) -> int:
        """The phrase_loop signal's value now (SIGNALS), over the text's last phrase_window_words words."""
        th = self.thresholds
        self._phrase_checked = len(self.text)
        with self.times("phrase_loop"):
            value = phrase_copies(self.text, th["phrase_max_period"], th["phrase_min_words"], th["phrase_window_words"])
        self._phrase_fired = value >= th["phrase_loop_min"]
        return value


def phrase_copies(text: str, max_period: int, min_words: int, window: int) -> int:
    """How many copies in a row of its last p words end `text` (lower-cased \\w+ words), for the
    period p <= max_period that gives the most where the copies cover at least min_words words and
    the period holds a word that is not a number; 1 where none does. A word the text ends in is left
    out (it may be cut); only the last `window` words are read, so the count stops there."""
    words = _WORDS.findall(text[-12 * window:].lower())[-window:]
    if words and _WORDS.match(text[-1:]):
        words.pop()  # the last word may still be growing: "vinyl" of "vinyloxy" would break the run
    if len(words) < 2:
        return 1
    codes = np.fromiter(map(hash, words), dtype=np.int64, count=len(words))
    best = 1
    for p in range(1, min(max_period, len(codes) // 2) + 1):
        differ = np.flatnonzero(codes[p:] != codes[:-p])  # position i + p repeats position i where equal
        run = len(codes) - p - (differ[-1] + 1 if differ.size else 0)  # repeats in a row at the end
        copies = 1 + run // p
        # a period of numbers only is a table or a list of zeros (a DP table, a matrix), not a loop
        if p * copies >= min_words and copies > best and any(not w.isdigit() for w in words[-p:]):
            best = int(copies)
    return best


def stream(*, every: int | None = None, record: Mapping[str, Any] | None = None, text_field: str = "response",
           **options: Any) -> Stream:
    """A `Stream`: profile one generation while it is written.

    `feed(piece)` appends text and returns a `Snapshot` every `every` newly settled Thought Units
    (default: the config's stream.every), else None; `snapshot()` gives one now; `close()` returns
    the `Run` that `thinkprobe.profile` gives for the whole text (its indicators equal).
    `record`: the rest of the record the text belongs to (model, question, id...); the text goes
    into its `text_field` ("response": reasoning in <think> tags is found as in a file). The
    options are `thinkprobe.profile`'s; `norms` (a run's norms.json) gives snapshots a profile."""
    return Stream(every=every, record=record, text_field=text_field, **options)
