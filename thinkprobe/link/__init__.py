"""Linking (spec section 1, step 5): typed edges between Thought Units, one module per backend (the
parser's: a package, one module per stage), each named in `registry` (linkers: parser, the default;
pair-mlp; cue; cross-encoder; typers: head, cue). What a backend receives and returns is in
`protocol`; the pieces the backends share are `candidates` (similarity and candidate search),
`features`, `decode` and `models` (model folders).

`load_linker` picks the backend a run uses; `unit_typer` how its units get provisional types.
"""
from __future__ import annotations

from .models import MODELS_DIR, find_model_dir, read_agreement, read_model_dir
from .protocol import Linker, LinkInput, Typer, bind_encoder
from .registry import (DEFAULT_LINKER, LINKERS, TYPERS, Backend, linker_backend, linker_names, load_linker,
                       register_linker, register_typer, typer_names, unit_typer)

__all__ = [
    "LinkInput", "Linker", "Typer", "bind_encoder", "Backend", "LINKERS", "TYPERS", "DEFAULT_LINKER", "register_linker",
    "register_typer", "linker_names", "typer_names", "linker_backend", "load_linker", "load_type_head", "unit_typer",
    "MODELS_DIR", "find_model_dir", "read_agreement", "read_model_dir",
]


def __getattr__(name: str):
    # The pair MLP's module (and numba, through it) loads only when its type head is asked for.
    if name == "load_type_head":
        from .pairmlp import load_type_head

        return load_type_head
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
