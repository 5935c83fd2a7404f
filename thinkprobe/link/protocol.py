"""What a linking backend receives and gives (spec section 1, step 5): `LinkInput`, the `Linker`
and `Typer` protocols, and the pair and type classes the trained backends score. Backends live
beside it and are named in thinkprobe.link.registry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from ..records import Edge, ThoughtUnit

__all__ = ["LinkInput", "Linker", "Typer", "PAIR_CLASSES", "TYPE_CLASSES", "FORWARD_CLASSES", "CRITIQUE_CLASSES",
           "REPETITION_CLASS", "bind_encoder"]

# No edge, then the 6 edge types; critique split by polarity.
PAIR_CLASSES: tuple[str, ...] = (
    "none", "inference", "elaboration", "branch", "critique:affirm", "critique:negate", "critique:uncertain",
    "synthesis", "repetition",
)
FORWARD_CLASSES = (1, 2, 3)
CRITIQUE_CLASSES = (4, 5, 6)
REPETITION_CLASS = 8
TYPE_CLASSES: tuple[str, ...] = ("FAC", "RSN", "EXP", "CRT", "MET", "CON", "RPT")



@dataclass(frozen=True)
class LinkInput:
    """One trace as the linker sees it: units (provisional types, cues, segments), embeddings and
    the trace's question (None: none given; a backend may read it or not)."""

    units: Sequence[ThoughtUnit]
    embeddings: np.ndarray  # (n, d), unit-normalised
    question: str | None = None


class Linker(Protocol):
    """What a linking backend offers (every backend in thinkprobe.link follows it; the contract
    test tests/test_link_contract.py checks each one).

    - `link(batch, mapper=map)`: the edges of each trace of `batch`, in order (a list of `Edge`
      per `LinkInput`). A batch spans many traces so that a model can score the candidate pairs
      of all of them together. `mapper` is the run's map (a worker pool's `map`, or the builtin):
      a backend may use it for per-trace CPU work, or ignore it; every backend accepts it.
      Edges point only to existing units; forward edges (inference, elaboration, branch) go
      i -> j with i < j, and every unit but the first gets one unless the backend's decoding lets a
      unit open a new line of thought (a trained backend's `decode["force_parent"]` false); backward
      edges (critique with a polarity, synthesis, repetition) go j -> i with i < j; a pair of units
      carries at most one edge. Same input, same edges.
    - `candidates(item)`: for each unit j of one trace, the earlier units i it considered as
      partners (an int array per unit; evalgold scores recall within them).
    - `cache_stats`: {"hits", "misses"} of its per-trace score cache ({} when it keeps none).
    - `structural_types`: True when it gives every provisional CRT / RPT unit the critique or
      repetition edge those types need, so a type head may assign them.
    - `name` (the run manifest's linker) and `kind` (what it is, in words, for `thinkprobe doctor`).
    - optional `bind_encoder(encoder)`: a backend that reads the encoder itself (the parser's reader,
      on the encoder's lower layers) takes the run's encoder there (`bind_encoder` below).
    """

    name: str
    kind: str
    structural_types: bool

    def link(self, batch: Sequence[LinkInput], mapper=map) -> list[list[Edge]]: ...

    def candidates(self, item: LinkInput) -> list[np.ndarray]: ...

    @property
    def cache_stats(self) -> dict[str, int]: ...


def bind_encoder(linker: Linker, encoder) -> None:
    """Give `linker` the run's encoder when it reads the encoder itself (its `bind_encoder`; the
    parser's reader runs on the encoder's lower layers, so it must be the run's: device, precision,
    batch size); no-op for every other backend."""
    bind = getattr(linker, "bind_encoder", None)
    if bind is not None:
        bind(encoder)


class Typer(Protocol):
    """How units get their provisional node types from a trained model (a type head, or a joint
    parser's type scores); None in its place means the cue lexicon's types.

    - `__call__(units, embeddings)`: the units of one trace with their provisional types.
    - `batch(items, mapper=map)`: the same for several traces at once, each (units, embeddings) or
      (units, embeddings, question) (a typer that does not read the question ignores it).
    - `cache_stats`: {"hits", "misses"} of its per-trace score cache ({} when it keeps none).
    """

    def __call__(self, units: Sequence[ThoughtUnit], emb: np.ndarray) -> list[ThoughtUnit]: ...

    def batch(self, items: Sequence[tuple], mapper=map) -> list[list[ThoughtUnit]]: ...

    @property
    def cache_stats(self) -> dict[str, int]: ...
