"""The Python API: `profile(data, **options) -> Run` and `load_run(folder) -> Run`. `thinkprobe
profile` on the command line is a thin layer over `profile`, with the same defaults (embedding
cache on, report written). `data` is what people have in a notebook: file paths, an iterable of
dicts, a pandas DataFrame, a Hugging Face `Dataset` or a pyarrow Table; records in memory go
through the same detection as a file's records, under the source "<memory>".
"""
from __future__ import annotations

import contextlib
import inspect
import math
import os
import shutil
import sys
import tempfile
import weakref
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping

from .options import OptionError, RunOptions, option_specs, options_doc
from .progress import terminal_safe
from .runner import field_warnings
from .outputs import (ANOMALIES_TABLE, ERRORS_FILE, INDICATORS_TABLE, MODEL_DOMAIN_PROFILES_TABLE,
                      MODEL_GROUP_PROFILES_TABLE, MODEL_PROFILES_TABLE, OUTPUT_FILES, PROFILE_TABLE, REDUNDANCY_TABLE,
                      REPORT_FILES, RUN_JSON, TOOL_FILES, TOOL_FOLDERS, Table)
from .records import GRAPHS_FILE, GraphRecord, find_graph_record, iter_graph_records

__all__ = ["profile", "profile_run", "Run", "load_run", "as_records", "OutputFolderError", "prepare_out_dir",
           "field_warnings", "TOOL_FILES"]



def _tool_file(folder: str, name: str, path: Path) -> bool:
    """Whether the file `name` (at `path`) in the tool's folder `folder` is one the tool writes there."""
    if folder == "figures":  # the report's figures, by name
        from .report.writer import FIGURE_NAMES

        return name in {f"{figure}.png" for figure in FIGURE_NAMES}
    if folder == "parts":  # chunks, their markers, the manifest
        from .runner import PART_FILE

        return PART_FILE.fullmatch(name) is not None
    if folder == "traces":  # the report's pages and `graph`'s images, by their title (the user's files stay)
        from .report.trace_pages import is_trace_page

        return name.endswith((".html", ".png", ".svg")) and is_trace_page(path)
    return name.endswith(".graphml")


# ----------------------------------------------------------------------------- input data


def _plain(value: Any) -> Any:
    """A value as JSON would give it: numpy scalars and arrays, pandas' missing markers and
    timestamps (what a DataFrame or a formatted Dataset hands out) become Python values."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy array or scalar
        return _plain(value.tolist())
    if hasattr(value, "isoformat"):  # datetime, pandas Timestamp
        return None if str(value) == "NaT" else value.isoformat()
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


def _is_path(item: Any) -> bool:
    return isinstance(item, (str, os.PathLike))


def as_records(data: Any) -> tuple[list[str], list[Any] | None]:
    """(input paths, in-memory records) from what `profile` accepts; a record's lone surrogates (an
    emoji cut in two) replaced by U+FFFD, as a file's are, and named in its provenance."""
    from .io.unicode import unicode_safe

    paths, records = _as_records(data)
    return paths, None if records is None else [unicode_safe(r) for r in records]


def _as_records(data: Any) -> tuple[list[str], list[Any] | None]:
    if _is_path(data):
        return [os.fspath(data)], None
    if hasattr(data, "columns") and hasattr(data, "to_dict"):  # pandas DataFrame
        return [], [_plain(r) for r in data.to_dict(orient="records")]
    if hasattr(data, "to_pylist"):  # pyarrow Table / RecordBatch
        return [], [_plain(r) for r in data.to_pylist()]
    if isinstance(data, Mapping):
        if data and all(hasattr(v, "column_names") for v in data.values()):
            raise TypeError(f"a DatasetDict with splits {sorted(data)}: pass one split, e.g. data[{sorted(data)[0]!r}]")
        raise TypeError("one record given: pass a list of records (dicts), a DataFrame, a Dataset or file paths")
    if not isinstance(data, Iterable):
        raise TypeError(f"cannot profile a {type(data).__name__}: pass file paths, a list of dicts, a pandas "
                        "DataFrame, a Hugging Face Dataset or a pyarrow Table")
    # A Hugging Face Dataset (or any iterable) yields one record per row.
    paths, records = [], []
    for item in data:
        if _is_path(item):
            paths.append(os.fspath(item))
        else:
            records.append(_plain(item) if isinstance(item, Mapping) else item)
    return paths, (records if records or not paths else None)


# ----------------------------------------------------------------------------- the output folder


class OutputFolderError(OptionError):
    """An output folder that holds something other than a run of the same inputs."""


def _run_inputs(out: Path) -> list[str] | None:
    """The inputs of the run in `out` (finished: run.json; interrupted: parts/manifest.json), or None."""
    import json

    for path, key in ((out / RUN_JSON, "inputs"), (out / "parts" / "manifest.json", "inputs")):
        try:
            value = json.loads(path.read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if value is not None:
            return list(value)
    return None


def _spelled(inputs: Iterable[str]) -> list[str]:
    """Inputs as absolute paths from the working folder, each with its ``::`` overrides."""
    from .io import source_path

    out = []
    for spec in inputs:
        try:
            path = source_path(spec)
        except ValueError:  # <memory>, or a spec that does not parse: as written
            out.append(spec)
            continue
        out.append(str(Path(path).resolve()) + spec[len(path):] if spec.startswith(path) else spec)
    return out


def _same_records(out: Path, records) -> bool:
    """Whether the run in `out` profiled these in-memory records (its chunks' manifest keeps their
    digest); True where it cannot tell (no manifest)."""
    import json

    from .runner import MEMORY_SOURCE, records_digest

    try:
        held = json.loads((out / "parts" / "manifest.json").read_text(encoding="utf-8"))["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return True
    return held.get(MEMORY_SOURCE) in (None, records_digest(records))


def _clear(out: Path, names: Iterable[str] | None = None) -> tuple[list[str], list[str]]:
    """Remove the entries of `out` (only those in `names`, with their .tmp twins, when given: in a
    tool's folder, TOOL_FOLDERS, only the files it writes there); returns (the entries left in place,
    a file kept inside a tool's folder as folder/name; the links removed). A link is removed itself,
    never followed: in a tool's folder, one that bears a name the run writes there (`_replaced_link`)."""
    wanted = None if names is None else {*names, *(f"{n}.tmp" for n in names)}
    kept, links = [], []
    for child in sorted(out.iterdir()):
        if wanted is not None and child.name not in wanted:
            kept.append(child.name)
        elif wanted is not None and child.name in TOOL_FOLDERS and child.is_dir() and not child.is_symlink():
            for inner in sorted(child.iterdir()):
                if inner.is_symlink() and _replaced_link(child.name, inner.name, inner):
                    inner.unlink()
                    links.append(f"{child.name}/{inner.name}")
                elif inner.is_file() and not inner.is_symlink() and _tool_file(child.name, inner.name, inner):
                    inner.unlink()
                else:
                    kept.append(f"{child.name}/{inner.name}")
            if not any(child.iterdir()):
                child.rmdir()
        elif child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            if child.is_symlink():
                links.append(child.name)
            child.unlink()
    return kept, links


def _replaced_link(folder: str, name: str, path: Path) -> bool:
    """Whether a link in the tool's folder `folder` is one a run replaces or removes (the link, never what
    it points to: thinkprobe.tables.write_own): one with the name of a file the tool writes there, and in
    traces/ any .html link (the report removes those that are no page of this run's, report.writer)."""
    return (folder == "traces" and name.endswith(".html")) or _tool_file(folder, name, path)


# Options naming a file or folder the run reads: clearing the output folder must not delete one of them.
_READ_OPTIONS = ("config", "norms", "encoder", "linker", "linker_model", "cache_dir")


def _inputs_under(out: Path, opts: RunOptions, names: Iterable[str] | None = None) -> list[str]:
    """What the run reads (its inputs, and the files the options in _READ_OPTIONS name: a --config or
    --norms kept in the output folder had been deleted by --overwrite, then not found) that lies in
    `out` (in one of its entries `names`, when given): clearing those entries would delete it."""
    from .io import source_path

    target = out.resolve()
    read = [(f"the input {spec}", Path(source_path(str(spec)))) for spec in opts.inputs]
    for name in _READ_OPTIONS:
        value = getattr(opts, name, None)
        if isinstance(value, (str, os.PathLike)) and value and Path(value).exists():  # a path, not a registry name
            read.append((f"{value} (--{name.replace('_', '-')})", Path(value)))
    inside = []
    for shown, path in read:
        path = path.resolve()
        if path == target or target in path.parents:
            first = path.relative_to(target).parts[:1] if path != target else ()
            if names is None or not first or first[0] in names or first[0] in {f"{n}.tmp" for n in names}:
                inside.append(shown)
    return inside


def prepare_out_dir(out: Path, opts: RunOptions, check_records: bool = False) -> str | None:
    """Make `out` ready for the run, so that its files are never a mix of two runs; returns what was done.

    Empty or missing: used as it is. --resume: kept (the chunks' manifest says whether they can be
    resumed). A run of the same inputs: its files (TOOL_FILES) removed and run afresh; any other file
    (notes the user put there) is left in place; records given in Python count as the same inputs
    only if their digest is the earlier run's, when `check_records` (thinkprobe.profile; a stream's
    close() replaces its earlier run, whose text was another). Anything else (another run, other
    files) is refused unless --overwrite, which clears it first (never a folder holding .git, the
    working folder or one above it)."""
    from .runner import MEMORY_SOURCE

    if out.exists() and not out.is_dir():
        raise OutputFolderError(f"-o {out}: not a folder")
    if not out.exists() or not any(out.iterdir()):
        return None
    if opts.resume:
        if not (out / "parts" / "manifest.json").is_file():  # a folder of the user's: a fresh run would overwrite it
            raise OutputFolderError(f"-o {out}: --resume found no interrupted run here (no parts/manifest.json); "
                                    "run without --resume into an empty folder, or pass --overwrite to clear this one")
        return "resumed"
    here = Path.cwd().resolve()
    target = out.resolve()
    inputs = ([MEMORY_SOURCE] if opts.records is not None else []) + [str(p) for p in opts.inputs]
    held = _run_inputs(out)
    if held is not None and held != inputs and _spelled(held) == _spelled(inputs):
        held = inputs  # the same files, spelled otherwise ("data/a.jsonl" and "/home/me/data/a.jsonl")
    if held == inputs and opts.records is not None and check_records and not _same_records(out, opts.records):
        held = ["<other records in memory>"]  # records given in Python all read as <memory>: their digest tells
    if held == inputs:  # a rerun: only what the tool wrote goes (TOOL_FILES); the user's own files stay
        if under := _inputs_under(out, opts, TOOL_FILES):
            raise OutputFolderError(f"-o {out}: {under[0]} lies among the files a rerun replaces; choose "
                                    "another output folder")
        chunks = 0 if (out / RUN_JSON).is_file() else len(list((out / "parts").glob("[0-9]" * 6 + ".jsonl")))
        kept, links = _clear(out, TOOL_FILES)
        what = "1 file that is" if len(kept) == 1 else f"{len(kept)} files that are"
        return ("cleared (an earlier run of the same inputs)" if not chunks else
                f"cleared an interrupted run of the same inputs: its {chunks} committed chunk{'s' if chunks > 1 else ''} "
                "discarded (--resume would have gone on from them)") + (
            f"; kept {what} not the tool's: {', '.join(kept[:8])}{' ...' if len(kept) > 8 else ''}" if kept else "") + (
            f"; removed {len(links)} link{'s' if len(links) > 1 else ''} where the run writes (the link{'s' if len(links) > 1 else ''} "
            f"only, not what {'they point' if len(links) > 1 else 'it points'} to): {', '.join(links[:8])}"
            f"{' ...' if len(links) > 8 else ''}" if links else "")
    if opts.overwrite:
        if (target / ".git").exists() or target == here or target in here.parents or target == Path.home().resolve():
            raise OutputFolderError(f"-o {out}: --overwrite will not clear a folder that holds .git, the working "
                                    "folder, one above it or the home folder; choose another output folder")
        if under := _inputs_under(out, opts):
            raise OutputFolderError(f"-o {out}: --overwrite would delete {under[0]}, which lies in it; "
                                    "choose another output folder")
        names = sorted(p.name for p in out.iterdir())
        _clear(out)  # links removed themselves, never followed
        return (f"cleared (--overwrite): removed {', '.join(names[:8])}"
                + (f" ... ({len(names)} entries)" if len(names) > 8 else ""))
    names = sorted(p.name for p in out.iterdir())
    shown = ", ".join(names[:8]) + (f", ... ({len(names)} entries)" if len(names) > 8 else "")
    what = "a run of other inputs" if held is not None else "other files"
    # (no --resume here: it continues a run of the same inputs, and this folder holds none)
    raise OutputFolderError(f"-o {out} is not empty and holds {what} ({shown}): pass --overwrite (in Python "
                            "overwrite=True) to clear it first, or choose another folder")


# ----------------------------------------------------------------------------- profiling


def profile(data: Any, out_dir: str | os.PathLike | None = None, **options: Any) -> "Run":
    """Profile reasoning traces; returns the finished `Run`.

    `data`: a path (JSONL, JSON, Parquet, a folder; gzipped or not) or a list of paths; an
    iterable of dicts; a pandas DataFrame; a Hugging Face `Dataset`; a pyarrow Table.
    `out_dir`: where the run's files go (default: a temporary folder, removed with the Run
    object unless `Run.save` keeps it). The options are those of `thinkprobe profile`, with the
    same names (in Python spelling) and the same defaults (thinkprobe.options.ProfileOptions):

{options}
    """
    from .io import source_path

    unknown = sorted(set(options) - {f.name for f, _ in option_specs()})
    if unknown:
        raise TypeError(f"profile() got unknown options {', '.join(unknown)}; see help(thinkprobe.profile)")
    paths, records = as_records(data)
    for spec in paths:  # before any work, as the command checks its INPUTs
        if not Path(source_path(spec)).exists():
            raise FileNotFoundError(f"no such file or directory: {spec}")
    temporary = out_dir is None
    out = Path(tempfile.mkdtemp(prefix="thinkprobe-run-")) if temporary else Path(out_dir)
    opts = RunOptions(inputs=paths, records=records, out_dir=str(out),
                      **{k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in options.items()})
    return profile_run(opts, temporary, check_records=True)


def profile_run(opts: RunOptions, temporary: bool = False, *, encoder=None, linker=None,
                check_records: bool = False, warn: bool = True) -> "Run":
    """`profile` once its options are built: the run into opts.out_dir (`temporary`: the folder
    goes with the Run object). `encoder` and `linker`, when given, replace the ones the run would
    load (thinkprobe.stream passes its own, which already hold the units' embeddings). Without `warn`
    the run's warnings about its traces are only in its summary (`thinkprobe watch` shows them itself)."""
    from .engine import run_profile

    out = Path(opts.out_dir)
    if opts.allow_code_execution:  # refused before any work where the code cannot be isolated
        from .redundancy import isolation_problem

        problem = isolation_problem()
        if problem:
            raise OptionError(f"allow_code_execution (--allow-code-execution): model-written code cannot be run "
                              f"isolated on this machine, so it is not run: {problem}. Profile without it (code "
                              f"answers stay ungraded); docs/redundancy.md says what the isolation needs")
    from .io.check import repeated_input

    if twice := repeated_input(opts.inputs, opts.field_map):
        raise OptionError(twice)
    warnings = field_warnings(opts)  # also recorded in run.json
    for warning in warnings:
        print(terminal_safe(f"warning: {warning}"), file=sys.stderr)
    with _writing(out):
        prepared = prepare_out_dir(out, opts, check_records)
        if prepared and prepared != "resumed" and (opts.show_progress or "kept" in prepared or "removed" in prepared or "--overwrite" in prepared
                                                   or "interrupted" in prepared):
            print(f"output folder {out}: {prepared}", file=sys.stderr)
        given = {k: v for k, v in (("linker", linker), ("encoder", encoder)) if v is not None}
        summary = run_profile(opts, **given)
        summary["field_warnings"] = [str(w) for w in warnings]
        # a file or model with no trace, or profiled as one-unit traces: never silent
        for warning in (*summary.get("coverage_warnings", ()), *summary.get("short_trace_warnings", ()),
                        *summary.get("loop_warnings", ())) if warn else ():
            print(terminal_safe(f"warning: {warning}"), file=sys.stderr)
        run = Run(out, summary=summary, temporary=temporary)
        if opts.report:
            from .report import write_report

            summary["report"] = str(write_report(out, progress=opts.show_progress))
    return run


@contextlib.contextmanager
def _writing(out: Path):
    """Hold the output folder for one run: an exclusive advisory lock (flock) on the folder itself,
    created if missing, so that a second run into it while the first writes is refused rather than
    mixing the two runs' chunks (a review: two runs into one folder gave one's graphs under the
    other's run.json). Released when the run ends or its process dies. A path that is not a folder is
    left to prepare_out_dir's error; without fcntl (not POSIX) there is no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    made = [p for p in (out, *out.parents) if not p.exists()]  # the folders this run makes, deepest first
    if made:
        out.mkdir(parents=True)
    if not out.is_dir():
        yield
        return
    fd = os.open(out, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputFolderError(f"-o {out}: another thinkprobe run is writing into this folder now; wait "
                                    "for it to end, or choose another folder") from None
        yield
    finally:
        os.close(fd)
        for folder in made:  # a run that stopped before writing anything (a bad config): they go again
            if not folder.is_dir() or any(folder.iterdir()):
                break
            folder.rmdir()


profile.__doc__ = profile.__doc__.format(options=options_doc())
profile.__signature__ = inspect.Signature(
    [inspect.Parameter("data", inspect.Parameter.POSITIONAL_OR_KEYWORD),
     inspect.Parameter("out_dir", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)]
    + [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default) for f, _ in option_specs()])


# ----------------------------------------------------------------------------- the run


def _frame(table: Table, doc: str) -> cached_property:
    """A `Run` property: `table` of the run as a pandas DataFrame, read once."""
    def read(self):
        return self._table(table)

    read.__doc__ = doc
    return cached_property(read)


class Run:
    """A finished profiling run, read from its folder: tables as pandas DataFrames (loaded on
    first use), graph records, and the report.

    `summary` is what the run returned (counts, model profiles; None for a run loaded from disk).
    """

    def __init__(self, folder: str | os.PathLike, summary: dict | None = None, temporary: bool = False):
        self.folder = Path(folder)
        if not (self.folder / RUN_JSON).exists():
            raise FileNotFoundError(f"{self.folder} is not a finished thinkprobe run (no {RUN_JSON})")
        self.summary = summary
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.folder, True) if temporary else None

    def __repr__(self) -> str:
        return f"Run({str(self.folder)!r})"

    def _table(self, table: Table):
        import pandas as pd

        if table.parquet and (self.folder / table.parquet_name).exists():
            frame = pd.read_parquet(self.folder / table.parquet_name)
        else:
            frame = pd.read_csv(self.folder / table.name, keep_default_na=False, na_values=[""], dtype=str)
            for column, kind in table.types.items():
                if kind != "str":
                    frame[column] = pd.to_numeric(frame[column]).astype("float64")
        # a declared integer column: int64, or float64 (NaN) where it has an empty cell, as pandas reads the
        # Parquet twin (the CSV gave pandas' Int64 everywhere: the dtype depended on which file was read)
        for column, kind in table.types.items():
            if kind == "int":
                frame[column] = frame[column].astype("int64" if frame[column].notna().all() else "float64")
        return frame

    indicators = _frame(INDICATORS_TABLE,
                        "One row per trace: trace_id, model, domain, group, units, edges, tokens and the 19 "
                        "indicators.")
    profiles = _frame(PROFILE_TABLE, "One row per trace: the 5D cognitive profile (mean signed z-score per dimension).")
    model_profiles = _frame(MODEL_PROFILES_TABLE, "One row per model: its trace count n and mean profile.")
    model_domain_profiles = _frame(MODEL_DOMAIN_PROFILES_TABLE,
                                   "One row per model and domain: its trace count n and mean profile.")
    model_group_profiles = _frame(MODEL_GROUP_PROFILES_TABLE,
                                  "One row per model and group (over the traces that have a group): its trace count n "
                                  "and mean profile.")
    redundancy = _frame(REDUNDANCY_TABLE,
                        "One row per trace: CoTJudger's redundancy metrics (Acc and DR/SV/EE/EB null when unknown).")
    anomalies = _frame(ANOMALIES_TABLE, "One row per trace: anomaly (distance from its own model's traces), "
                                        "anomaly_rank, drivers, failure_risk and failure_risk_in_sample "
                                        "(1: the failure-risk model was trained on the trace; anomalies.csv).")

    def select(self, domain: str | None = None, want: str | None = None, like=None, group: str | None = None):
        """The models ranked by fit, as `thinkprobe select` ranks them (thinkprobe.choice.Selection)."""
        from .choice import select_run

        return select_run(self.folder, domain=domain, want=want, like=like, group=group)

    @cached_property
    def stats(self):
        """Kruskal-Wallis tests per indicator and dimension, by model, by domain and by group (stats.csv,
        thinkprobe.stats.STATS_TABLE: its Parquet twin where the run has one)."""
        from .stats import STATS_TABLE

        return self._table(STATS_TABLE)

    @cached_property
    def pairwise(self):
        """Every pair of models on every indicator and dimension: P(a > b) with its interval, the Brunner-Munzel p
        (a sign-flip test, question by question, where the models answered the same questions), Holm-corrected p,
        raw and length-controlled (pairwise.csv, thinkprobe.pairwise.PAIRWISE_TABLE: its columns say which test)."""
        from .pairwise import PAIRWISE_TABLE

        return self._table(PAIRWISE_TABLE)

    @cached_property
    def graphs(self) -> list[GraphRecord]:
        """The graph records (thinkprobe.records.GraphRecord), in input order."""
        return list(iter_graph_records(self.folder))

    @cached_property
    def errors(self) -> list[dict]:
        """The skipped records: file, record, field and reason."""
        import json

        path = self.folder / ERRORS_FILE
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []

    def graph(self, trace_id: str) -> GraphRecord:
        """One trace's graph record: by its trace id, or else by its record's own id where one trace
        has it (`source_id`), as `thinkprobe graph RUN ID` finds it; KeyError where neither is found."""
        try:
            return find_graph_record(self.folder / GRAPHS_FILE, trace_id)
        except ValueError as exc:
            raise KeyError(str(exc)) from None

    def to_networkx(self, trace_id: str):
        """One trace's Thought Graph as a networkx MultiDiGraph (node and edge attributes as in graphs.jsonl)."""
        from .export import to_networkx

        return to_networkx(self.graph(trace_id))

    def report(self, path: str | os.PathLike | None = None) -> Path:
        """Write the report (report.html, report.md, figures/, traces/) into `path` (default: the
        run folder); returns report.html's path."""
        from .report import write_report

        written = write_report(self.folder)
        if path is None or Path(path).resolve() == self.folder.resolve():
            return written
        target = Path(path)
        target.mkdir(parents=True, exist_ok=True)
        _copy(self.folder, target, REPORT_FILES)
        return target / written.name

    def save(self, folder: str | os.PathLike, overwrite: bool = False) -> "Run":
        """Copy the run's files (and the report, when written) into `folder`; returns the Run there.
        `folder` must be empty or missing; with overwrite=True the tool's files there are removed first
        (files of the user's own stay), so that it never holds a mix of two runs."""
        target = Path(folder)
        if target.resolve() == self.folder.resolve():
            return self
        if target.exists() and not target.is_dir():
            raise OutputFolderError(f"{target}: not a folder")
        if target.exists() and any(target.iterdir()):
            if not overwrite:
                names = sorted(p.name for p in target.iterdir())
                raise OutputFolderError(f"{target} is not empty ({', '.join(names[:8])}{' ...' if len(names) > 8 else ''}): "
                                        "pass overwrite=True to replace the tool's files there (files of your own "
                                        "stay), or choose another folder")
            _clear(target, TOOL_FILES)
        target.mkdir(parents=True, exist_ok=True)
        _copy(self.folder, target, (*OUTPUT_FILES, *REPORT_FILES))
        return Run(target, summary=self.summary)


def _copy_file(src: str, dst: str) -> None:
    """shutil.copy2, except that a symlink at `dst` is replaced, never written through."""
    if os.path.islink(dst):
        os.unlink(dst)
    shutil.copy2(src, dst)


def _copy(source: Path, target: Path, names: Iterable[str]) -> None:
    for name in names:
        src = source / name
        if src.is_dir():
            if (target / name).is_symlink():
                (target / name).unlink()
            shutil.copytree(src, target / name, dirs_exist_ok=True, copy_function=_copy_file)
        elif src.exists():
            _copy_file(str(src), str(target / name))


def load_run(folder: str | os.PathLike) -> Run:
    """A finished run (the -o folder of `thinkprobe profile`, or a saved Run)."""
    return Run(folder)
