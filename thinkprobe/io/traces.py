"""Records to `Trace`s, in input order, with trace ids unique across the run.
"""
from __future__ import annotations

import hashlib
from dataclasses import replace
from itertools import chain, islice
from pathlib import Path
from typing import Iterator, Sequence

from ..records import InputError, Trace
from .detect import detect, record_model
from .formats import iter_records, source_files, strip_extensions
from .graphs import is_graph_record, trace_of_graph_record, with_given_graph
from .layouts import expand, finish
from .limits import InputLimits, clip_trace
from .sources import FieldMap, Source, parse_source

__all__ = ["record_traces", "iter_traces", "iter_inputs", "detect_inputs", "peek_inputs"]


def record_traces(
    record: dict, fields: FieldMap = FieldMap(), source: str = "records", index: int | str = 0, *,
    id_stem: str | None = None,
) -> list[Trace | InputError]:
    """The traces of one in-memory record, with the same detection as files get: usually one, one per
    generation for an OpenR1-style ``generations`` list. A bad record gives its InputError (never raises).

    ``source`` names where the record came from (errors and generated ids use it), ``index`` its
    position there. Trace ids are unique within the record only; `iter_inputs` makes them unique per run.

    >>> [t.trace_id for t in record_traces({"uuid": "q7", "generations": ["<think>a</think>1", "<think>b</think>2"]})]
    ['q7:g0', 'q7:g1']
    """
    try:
        first: Trace | InputError = detect(record, fields, source, index, id_stem=id_stem)
    except InputError as exc:
        exc.model = record_model(record, fields, source)
        first = exc
    where = first.field if isinstance(first, InputError) else first.provenance["reasoning_from"]
    generations = record.get("generations") if isinstance(record, dict) else None
    if not where.startswith("generations[") or not isinstance(generations, list):
        return [first]
    out: list[Trace | InputError] = []
    for g in range(len(generations)):
        try:
            out.append(detect(record, fields, source, index, id_stem=id_stem, generation=g))
        except InputError as exc:
            exc.model = record_model(record, fields, source)
            out.append(exc)
    return out


class _RunIds:
    """Trace ids unique across a whole run. The first trace keeps its id; a later one from another file
    becomes ``<file label>:<id>``, one from the same file (or still taken) gets ``#2``, ``#3``...;
    provenance keeps the original as ``duplicate_of``. Once a file's id has met another file's, every
    later id of that file is prefixed too (files numbered from 0 each: tts_knowledge, ReasonEval), with
    the original as ``renamed_from``: nothing repeated. An id the record did not have (made from its
    file's name and position, as for two files both named response.json in two folders) is renamed
    the same way but is no duplicate either."""

    def __init__(self) -> None:
        self.owner: dict[str, str] = {}
        self.last_suffix: dict[str, int] = {}
        self.prefixed: set[str] = set()  # files whose ids met another file's

    def claim(self, trace: Trace, file_label: str) -> Trace:
        original = trace.trace_id
        made = trace.provenance.get("trace_id_from") == "file:record"
        if original not in self.owner and (made or trace.source not in self.prefixed):
            self.owner[original] = trace.source
            return trace
        repeated = original in self.owner
        candidate = original
        if not repeated or self.owner[original] != trace.source:
            if not made:
                self.prefixed.add(trace.source)
            candidate = f"{file_label}:{trace.record}" if made else f"{file_label}:{original}"
        if candidate in self.owner:
            repeated = True  # taken: the same id again (within a file, or once more across files)
            suffix = self.last_suffix.get(candidate, 1) + 1
            while f"{candidate}#{suffix}" in self.owner:
                suffix += 1
            self.last_suffix[candidate] = suffix
            candidate = f"{candidate}#{suffix}"
        self.owner[candidate] = trace.source
        if made:
            return replace(trace, trace_id=candidate)
        kept = "duplicate_of" if repeated else "renamed_from"  # renamed_from: a prefixed file's id that repeats nothing
        return replace(trace, trace_id=candidate, provenance={**trace.provenance, kept: original})


def iter_traces(path: str | Path, fields: FieldMap = FieldMap(), limits: InputLimits | None = None) -> Iterator[Trace | InputError]:
    """Stream the Traces of one file or folder in input order; a bad record yields its InputError."""
    return iter_inputs([Source(str(path), fields)], limits=limits)


def iter_inputs(
    inputs: Sequence[str | Path | Source], fields: FieldMap = FieldMap(), *, graphs: bool = False,
    limits: InputLimits | None = None,
) -> Iterator[Trace | InputError]:
    """Stream the Traces of all inputs of a run, in order, with ids unique across the run.

    An input is a path, a ``PATH::key=value,...`` spec (see `parse_source`) or a `Source`, whose own
    overrides replace ``fields``. A bad record yields its InputError instead of raising. With
    `graphs` (``--graph-source input``) every trace carries the graph its record holds
    (thinkprobe.io.graphs), or is the InputError that says why it cannot. `limits` bound what is
    read (thinkprobe.io.limits; default: configs/default.yaml's): a record, file or trace over one
    is an InputError naming the size, the limit and the option that raises it.
    """
    for _, item in detect_inputs(inputs, fields, graphs=graphs, limits=limits):
        yield item


def detect_inputs(
    inputs: Sequence[str | Path | Source], fields: FieldMap, *, graphs: bool = False,
    limits: InputLimits | None = None,
) -> Iterator[tuple[int | str, Trace | InputError]]:
    limits = limits if limits is not None else InputLimits.default()
    sources = [parse_source(i, fields) for i in inputs]
    ids = _RunIds()
    for src, label in zip(sources, _input_labels([s.path for s in sources])):
        if src.records is not None:  # in memory: the same layouts as a file's records (thinkprobe.io.layouts)
            state: dict = {}
            records = ((src.path, locator, item) for i, r in enumerate(src.records)
                       for locator, item in expand(src.path, i, r, state))
            records = chain(records, ((src.path, locator, item) for locator, item in finish(src.path, state)))
            root = None
        else:
            root = Path(src.path)
            records = iter_records(root, limits, keep=src.fields.matches_path)
        yield from _detect_records(records, src, label, root, len(sources) == 1, ids, graphs, limits)


def _detect_records(records, src: Source, label: str, root: Path | None, alone: bool, ids: "_RunIds", graphs: bool,
                    limits: InputLimits) -> Iterator[tuple[int | str, Trace | InputError]]:
    """The traces of one input's records (`src`, read from `root`, labelled `label` among the run's
    inputs; `alone`: the run's only input), their ids claimed in `ids`. A trace that repeats an earlier
    trace of its file exactly (`_content_key`) is an InputError: MiP-Overthinking's missing-premise GSM8K
    files hold each of their 582 records twice, which profiled twice weigh double in every test."""
    seen: dict[bytes, int | str] = {}  # the traces of the file being read, by content: their record
    current = None
    for source, locator, record in records:
        if source != current:
            seen, current = {}, source
        if isinstance(record, InputError):
            record.model = record.model or src.fields.model or src.fields.from_path(source).get("model")
            yield locator, record
            continue
        # In a folder, files like */base_solution.json share a stem; the relative path does not. Among several
        # inputs the input's label leads (normal/deepseekR1/response:0 beside MiP/deepseekR1/response:0): an id
        # made from a position says which input it came from, in the first input as in the others.
        file_label = label
        if root is not None and root.is_dir():
            inner = strip_extensions(Path(source).relative_to(root).as_posix())
            file_label = inner if alone else f"{label}/{inner}"
        stem = file_label
        repaired = getattr(record, "repaired_unicode", None)  # io.unicode.RepairedRecord: lone surrogates replaced
        if is_graph_record(record):  # a run's graphs: its sections are the text, parsed again or not
            items = [trace_of_graph_record(record, source, locator, given=graphs, options=src.fields)]
        else:
            items = record_traces(record, src.fields, source, locator, id_stem=stem)
            if graphs:
                items = [item if isinstance(item, InputError) else with_given_graph(record, item, locator) for item in items]
        for item in items:
            if isinstance(item, Trace):
                trace_id = item.trace_id if item.provenance.get("trace_id_from") != "file:record" else None
                item = clip_trace(item, limits, locator)
                if isinstance(item, InputError):  # over a size limit: the id the record gave it stays
                    item.trace_id = item.trace_id or trace_id
                if repaired:  # lone surrogates replaced by U+FFFD (io.unicode.repaired), in these fields
                    item = replace(item, provenance={**item.provenance, "repaired_unicode": repaired})
                if isinstance(item, Trace) and (first := seen.setdefault(_content_key(item), locator)) != locator:
                    where = first if isinstance(first, str) else f"record {first}"
                    item = InputError(source, locator, item.provenance["reasoning_from"],
                                      f"repeats {where} of its file exactly (the same text, question, model and "
                                      "grade): not profiled twice", model=item.model, trace_id=trace_id)
            yield locator, item if isinstance(item, InputError) else ids.claim(item, file_label)


def _content_key(trace: Trace) -> bytes:
    """What makes a trace the same as another of its file: its record's own id (none where the id is
    made from the record's position) and generation, model, domain, group, question, gold answer,
    grade and section texts."""
    made = trace.provenance.get("trace_id_from") == "file:record"
    key = (None if made else trace.trace_id, trace.provenance.get("generation"), trace.model, trace.domain, trace.group,
           trace.question, trace.gold_answer, trace.correct, [(s.name, s.field, s.content) for s in trace.sections])
    return hashlib.blake2b(repr(key).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def peek_inputs(inputs: Sequence[str | Path | Source], fields: FieldMap, n: int, max_files: int,
                limits: InputLimits | None = None) -> Iterator[Source | dict | tuple[int | str, Trace | InputError]]:
    """What `peek` shows: the first `n` traces or errors of each data file of the inputs (of a
    folder, its first `max_files` files), with the ids the run would give them (the labels are the
    run's, over all inputs, and ids are claimed in input order as the run claims them). Before each
    file's rows comes its Source; a folder with more files than shown yields {"folder", "more_files"}."""
    limits = limits if limits is not None else InputLimits.default()
    sources = [parse_source(i, fields) for i in inputs]
    ids = _RunIds()
    for src, label in zip(sources, _input_labels([s.path for s in sources])):
        if src.records is not None:
            yield src
            records = ((src.path, i, r) for i, r in enumerate(src.records))
            yield from islice(_detect_records(records, src, label, None, len(sources) == 1, ids, False, limits), n)
            continue
        root = Path(src.path)
        files = source_files(root, src.fields.matches_path)  # as the run reads them
        for f in _shown_files(files, max_files):
            yield Source(str(f), src.fields)
            records = iter_records(f, limits)
            yield from islice(_detect_records(records, src, label, root, len(sources) == 1, ids, False, limits), n)
        if len(files) > max_files:
            yield {"folder": src.path, "more_files": len(files) - max_files}


def _shown_files(files: Sequence[Path], max_files: int) -> list[Path]:
    """At most max_files of a folder's files for peek, taken in turn from each subfolder (in the
    run's order within each), so that one folder of many alike files does not hide the others
    (Schoenfeld's 38 responses_labeled/*.json hid responses_original/, the one readable layout)."""
    if len(files) <= max_files:
        return list(files)
    by_folder: dict[Path, list[Path]] = {}
    for f in files:
        by_folder.setdefault(f.parent, []).append(f)
    queues = list(by_folder.values())
    chosen: set[Path] = set()
    while len(chosen) < max_files:
        for q in queues:
            if q and len(chosen) < max_files:
                chosen.add(q.pop(0))
    return [f for f in files if f in chosen]


def _input_labels(paths: list[str]) -> list[str]:
    """A short readable name per input: the file name without extensions, with as many parent folders
    as it takes to tell inputs apart (twelve */base_solution.json -> p1/base_solution, ...)."""
    parts = [tuple(x for x in Path(strip_extensions(Path(p).as_posix())).parts if x != "/") or ("input",)
             for p in paths]
    depth = [1] * len(paths)
    while True:
        labels = ["/".join(ps[-d:]) for ps, d in zip(parts, depth)]
        seen: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            seen.setdefault(label, []).append(i)
        clashing = [i for group in seen.values() if len(group) > 1 for i in group if depth[i] < len(parts[i])]
        if not clashing:
            return labels
        for i in clashing:
            depth[i] += 1
