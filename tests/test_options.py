"""Each run option is declared once (thinkprobe.options.ProfileOptions): the command's options and
the Python API's keywords are derived from it and agree on every name and default; a backend
registered as a plugin would register it shows up in the command."""
import inspect
import json

import click
import pytest
from click.testing import CliRunner

import thinkprobe
import toy_linker
from thinkprobe.cli import main
from thinkprobe.options import OptionError, ProfileOptions, option_specs

from conftest import SAMPLES

COMMAND_ONLY = {"inputs", "out_dir", "summary", "strict"}  # what the command adds: its arguments and output


def command_params(name: str) -> dict[str, click.Parameter]:
    return {p.name: p for p in main.commands[name].params if p.name not in ("help",)}


def test_command_and_api_accept_the_same_options_with_the_same_defaults():
    declared = {f.name: f.default for f, _ in option_specs()}
    cli = command_params("profile")
    assert set(cli) - COMMAND_ONLY == set(declared)
    assert {name: cli[name].default for name in declared} == declared
    sig = inspect.signature(thinkprobe.profile)
    api = {n: p.default for n, p in sig.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert api == declared
    assert list(sig.parameters)[:2] == ["data", "out_dir"]
    for name in declared:  # the docstring documents every keyword
        assert f"    {name} = " in thinkprobe.profile.__doc__


def test_flags_are_spelled_from_the_declaration():
    cli = command_params("profile")
    assert cli["cache"].opts == ["--cache"] and cli["cache"].secondary_opts == ["--no-cache"]
    assert cli["resume"].is_flag and not cli["resume"].secondary_opts
    assert cli["trace_timeout"].opts == ["--trace-timeout"]
    peek = command_params("peek")
    assert {"reasoning_field", "model_field", "path_pattern"} <= set(peek) and "device" not in peek


def test_the_api_refuses_what_the_command_refuses(tmp_path):
    with pytest.raises(TypeError, match="unknown options chunksize"):
        thinkprobe.profile([str(SAMPLES)], tmp_path / "a", chunksize=3)
    with pytest.raises(OptionError, match="types='rules'"):
        thinkprobe.profile([str(SAMPLES)], tmp_path / "b", types="rules")
    with pytest.raises(OptionError, match="limit=0"):
        ProfileOptions(limit=0)
    res = CliRunner().invoke(main, ["profile", str(SAMPLES), "-o", str(tmp_path / "c"), "--limit", "0"])
    assert res.exit_code == 2 and "--limit" in res.output
    # a misspelt device or linker is a usage error before the run begins (no traceback, no parts/ left)
    for option, value, said in (("--device", "cpux", "use auto, cpu, cuda or cuda:N"),
                                ("--linker", "parser-readr", "no linker model 'parser-readr'")):
        res = CliRunner().invoke(main, ["profile", str(SAMPLES), "-o", str(tmp_path / "d"), option, value])
        assert res.exit_code == 2 and said in res.output and not (tmp_path / "d").exists(), res.output


def test_a_registered_backend_is_offered_and_runs(tmp_path):
    res = CliRunner().invoke(main, ["profile", "--help"])
    assert res.exit_code == 0 and "toy" in res.output and toy_linker.TOY.name == "toy"
    out = tmp_path / "out"
    toy_linker.ToyLinker.questions.clear()
    res = CliRunner().invoke(main, ["profile", str(SAMPLES), "-o", str(out), "--linker", "toy", "--types", "cue",
                                    "--device", "cpu", "--no-cache", "--no-report", "--no-progress", "--limit", "2"])
    assert res.exit_code == 0, res.output
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["linker"] == "toy" and not run["linker_agreement"]["measured"]
    questions = [json.loads(line)["question"] for line in SAMPLES.read_text(encoding="utf-8").splitlines()[:2]]
    assert sorted(toy_linker.ToyLinker.questions) == sorted(questions)  # each trace's question reaches the linker
    for line in (out / "graphs.jsonl").read_text(encoding="utf-8").splitlines():
        g = json.loads(line)
        assert [(e["src"], e["dst"]) for e in g["edges"] if e["type"] == "inference"] == \
            [(j - 1, j) for j in range(1, len(g["units"]))]
