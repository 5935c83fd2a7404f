"""Linking (spec section 1, step 5): typed edges between Thought Units, one module per backend.

- `base`: what every backend shares: `LinkInput` (what a linker receives), the `Linker` protocol
  (what it returns, its candidates, its cache statistics), candidate search and edge decoding.
- `cue`: rules over cue lexicons, similarity and position (`--linker cue`).
- `parser`: the trace-level parser shipped in models/ (the default): links and types units jointly.
- `pairmlp`: the trained pair MLP and its type head shipped in models/ (`--linker pair-mlp`).
- `crossencoder`: any local Hugging Face sequence-classification model (`--linker cross-encoder`).

`load_linker` picks the backend a run uses; `unit_typer` how its units get provisional types.
"""
from __future__ import annotations

from pathlib import Path

from ..config import Config, resource_dir
from .base import (
    CRITIQUE_CLASSES, FORWARD_CLASSES, FROM_LOOKBACK, FROM_SIMILARITY, FROM_WINDOW, PAIR_CLASSES, REPETITION_CLASS,
    SIM_BLOCK, TYPE_CLASSES, CandidateParams, Linker, LinkInput, Similarity, as_similarity, candidate_arrays,
    candidate_pairs, candidates, decode_edges, jaccard, word_index,
)
from .cue import CueLinker
from .pairmlp import Retyper, TrainedLinker, TypeHead, read_model_dir

__all__ = [
    "LinkInput", "Linker", "CueLinker", "TrainedLinker", "TypeHead", "Retyper", "PAIR_CLASSES", "TYPE_CLASSES",
    "FORWARD_CLASSES", "CRITIQUE_CLASSES", "REPETITION_CLASS", "FROM_WINDOW", "FROM_SIMILARITY", "FROM_LOOKBACK",
    "SIM_BLOCK", "Similarity", "as_similarity", "CandidateParams", "candidate_pairs", "candidates", "candidate_arrays", "word_index", "jaccard", "decode_edges",
    "MODELS_DIR", "DEFAULT_LINKER", "PARSER", "PAIR_MLP", "find_model_dir", "load_linker", "load_type_head", "unit_typer",
]

MODELS_DIR = resource_dir("models")
PAIR_MLP = "linker-minilm-mlp"  # the pair MLP + type head shipped in models/
PARSER = "parser-minilm-bilstm"  # the trace-level parser shipped in models/
# What a run uses unless told otherwise (`thinkprobe doctor` names it): the parser, which beat the
# pair MLP on held-out silver traces (edge, labelled, far-edge and type F1; docs/accuracy.md).
DEFAULT_LINKER = PARSER
NAMES = {"pair-mlp": PAIR_MLP, "trained": PAIR_MLP, "parser": PARSER}


def find_model_dir(name: str) -> Path:
    """A linker model folder: `name` itself when it is a folder, else models/<name> or models/linker-<name>."""
    path = Path(name)
    if path.is_dir():
        return path
    for candidate in (MODELS_DIR / name, MODELS_DIR / f"linker-{name}"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no linker model {name!r}: not a folder, and not in {MODELS_DIR}")


def load_linker(name_or_dir: str | None, cfg: Config, *, model_dir: str | None = None, device: str = "cpu",
                cache_dir: str | Path | None = None) -> Linker:
    """The linker a run uses: None / "default" -> the default model in models/ (DEFAULT_LINKER);
    "cue" -> the rule-based CueLinker; "cross-encoder" -> a local Hugging Face
    sequence-classification model in `model_dir`; "pair-mlp" / "parser" -> that shipped model;
    a folder or model name -> that model, its backend read from its config.json ("backend":
    "parser", else the pair MLP). With `cache_dir`, a model backend keeps its scores on disk per
    trace."""
    if name_or_dir == "cue":
        return CueLinker(cfg)
    if name_or_dir == "cross-encoder":
        if not model_dir:
            raise ValueError("--linker cross-encoder needs --linker-model DIR (a local sequence-classification model)")
        from .crossencoder import CrossEncoderLinker  # transformers is imported only by this backend

        return CrossEncoderLinker(model_dir, cfg, device=device, cache_dir=cache_dir)
    name = DEFAULT_LINKER if name_or_dir in (None, "", "default") else NAMES.get(name_or_dir, name_or_dir)
    folder = find_model_dir(name)
    if read_model_dir(str(folder)).get("backend") == "parser":
        from .parser import ParserLinker

        return ParserLinker(folder, cfg, cache_dir, device)
    return TrainedLinker(folder, cfg, cache_dir, device)


def load_type_head(name_or_dir: str | None = None, cache_dir: str | Path | None = None) -> TypeHead:
    """The type head shipped with a pair-MLP model (default: the shipped pair MLP's), for
    linkers that do not type units themselves; with `cache_dir`, its probabilities are kept on
    disk per trace."""
    return TypeHead(find_model_dir(name_or_dir or PAIR_MLP), cache_dir)


def unit_typer(linker: Linker, types: str = "head", head: TypeHead | None = None,
               cache_dir: str | Path | None = None) -> Retyper | None:
    """How units get their provisional types for `linker`: None for the cue lexicon (types="cue"),
    else the linker's own typer when it has one (a joint model types and links together), else a
    `Retyper` that applies the type head (loaded with `cache_dir` unless `head` is given). CRT
    and RPT come from the head only for a linker with `structural_types` (it gives such units the
    edge their type needs)."""
    if types == "cue":
        return None
    if types != "head":
        raise ValueError(f"unknown typing {types!r}: use head or cue")
    if head is None and getattr(linker, "typer", None) is not None:
        return linker.typer
    return Retyper(head or load_type_head(cache_dir=cache_dir), structural=bool(getattr(linker, "structural_types", False)))
