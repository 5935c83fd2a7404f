"""The linking stage's backends, one table each (name -> a lazily imported loader), the way
lm-eval's registry maps names to classes: adding a backend is its module plus one `register_*`
line. The CLI's choices and help, `thinkprobe doctor` and the contract test read these tables;
a trained model folder names its backend in config.json ("backend"), and a folder without one is
the pair MLP's format.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..config import Config
from .models import find_model_dir, read_model_dir
from .protocol import Linker, Typer

__all__ = ["Backend", "LINKERS", "TYPERS", "DEFAULT_LINKER", "register_linker", "register_typer", "linker_names",
           "typer_names", "linker_backend", "load_linker", "unit_typer"]


@dataclass(frozen=True)
class Backend:
    """One backend: `loader` ("module:callable", imported when first used), what it is in words,
    the folder in models/ it ships with (None: rules, or a folder the user names), and whether it
    needs --linker-model."""

    name: str
    loader: str
    help: str
    model: str | None = None
    needs_model_dir: bool = False
    aliases: tuple[str, ...] = ()

    def load(self) -> Callable[..., Any]:
        module, _, attr = self.loader.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


LINKERS: dict[str, Backend] = {}
TYPERS: dict[str, Backend] = {}
ALIASES: dict[str, str] = {}


def register_linker(backend: Backend) -> Backend:
    """Add a linker backend: its loader is called as loader(cfg, model_dir=..., device=..., cache_dir=...)."""
    LINKERS[backend.name] = backend
    ALIASES.update(dict.fromkeys(backend.aliases, backend.name))
    return backend


def register_typer(backend: Backend) -> Backend:
    """Add a typer backend: its loader is called as loader(linker, cache_dir=...) -> Typer or None."""
    TYPERS[backend.name] = backend
    return backend


register_linker(Backend("parser-reader", "thinkprobe.link.parser:ParserLinker.load",
                        "trace-level parser that reads the units' tokens: the encoder's top layers fine-tuned for "
                        "linking (the reader), a learned reranker picks far candidates, and BiLSTMs over [embedding, reader "
                        "vector] link and type units jointly",
                        model="parser-minilm-reader"))
register_linker(Backend("parser", "thinkprobe.link.parser:ParserLinker.load",
                        "trace-level parser: a BiLSTM over the unit embeddings links and types units jointly",
                        model="parser-minilm-bilstm"))
register_linker(Backend("pair-mlp", "thinkprobe.link.pairmlp:TrainedLinker.load",
                        "pair MLP over candidate pairs with its type head", model="linker-minilm-mlp",
                        aliases=("trained",)))
register_linker(Backend("cue", "thinkprobe.link.cue:CueLinker.load", "rules over cue lexicons, similarity and position"))
register_linker(Backend("cross-encoder", "thinkprobe.link.crossencoder:CrossEncoderLinker.load",
                        "any local Hugging Face sequence-classification model (NLI included), --linker-model DIR",
                        needs_model_dir=True))
register_typer(Backend("head", "thinkprobe.link.pairmlp:head_typer",
                       "the linker's own type scores, else the pair MLP's type head"))
register_typer(Backend("cue", "thinkprobe.link.registry:cue_typer", "the cue lexicons in configs/"))

# What a run uses unless told otherwise (`thinkprobe doctor` names it): the parser with a reader,
# higher than the BiLSTM parser (`--linker parser`, kept as a named backend) on every F1 column of
# held-out silver and of the cross-validated human dev set (docs/accuracy.md). It draws fewer pairs
# 2-3 units apart than the BiLSTM parser, at a higher precision there: people draw fewer such pairs.
DEFAULT_LINKER = "parser-reader"


def linker_names() -> tuple[str, ...]:
    return tuple(LINKERS)


def typer_names() -> tuple[str, ...]:
    return tuple(TYPERS)


def linker_backend(name_or_dir: str | None) -> tuple[Backend, Path | None]:
    """The backend `name_or_dir` names (None / "default": DEFAULT_LINKER) and its model folder: a
    registered name (or alias), the name of a folder in models/, or a folder whose config.json
    names its backend."""
    name = DEFAULT_LINKER if name_or_dir in (None, "", "default") else ALIASES.get(name_or_dir, name_or_dir)
    backend = LINKERS.get(name)
    if backend is not None and backend.model is None:
        return backend, None
    folder = find_model_dir(backend.model if backend is not None else name)
    if backend is None:
        kind = read_model_dir(str(folder)).get("backend", "pair-mlp")
        if kind not in LINKERS:
            raise ValueError(f"{folder}: config.json names backend {kind!r}; known: {', '.join(LINKERS)}")
        backend = LINKERS[kind]
    return backend, folder


def load_linker(name_or_dir: str | None, cfg: Config, *, model_dir: str | None = None, device: str = "cpu",
                cache_dir: str | Path | None = None) -> Linker:
    """The linker a run uses (see `linker_backend`); `model_dir` is the folder a backend that
    ships none needs (--linker-model). With `cache_dir`, a model backend keeps its scores on disk
    per trace."""
    backend, folder = linker_backend(name_or_dir)
    if backend.needs_model_dir and not model_dir:
        raise ValueError(f"--linker {backend.name} needs --linker-model DIR (a local sequence-classification model)")
    return backend.load()(cfg, model_dir=model_dir or folder, device=device, cache_dir=cache_dir)


def unit_typer(linker: Linker, types: str = "head", head=None, cache_dir: str | Path | None = None) -> Typer | None:
    """How units get their provisional types for `linker` (a TYPERS name): None for the cue
    lexicon, else the typer that backend builds (for "head": the linker's own typer when it has
    one, else a `Retyper` applying `head` or the shipped type head)."""
    if types not in TYPERS:
        raise ValueError(f"unknown typing {types!r}: use {' or '.join(TYPERS)}")
    return TYPERS[types].load()(linker, head=head, cache_dir=cache_dir)


def cue_typer(linker: Linker, head=None, cache_dir: str | Path | None = None) -> None:
    """The cue lexicons' types: no model, the types `graph.tile_and_type` already gave."""
    return None
