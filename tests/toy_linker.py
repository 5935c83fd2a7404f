"""A toy linker backend, the way a plugin adds one: this module plus one `register_linker` line.
It chains the units and lets every provisional critique unit critique its predecessor. The
contract test (tests/test_link_contract.py) and the CLI (tests/test_options.py) pick it up from
the registry."""
from __future__ import annotations

from thinkprobe.link import Backend, register_linker
from thinkprobe.records import Edge


class ToyLinker:
    name = "toy"
    kind = "chain + critique of the previous unit (a test backend)"
    structural_types = False
    cache_stats: dict[str, int] = {}
    questions: list = []  # every question it was handed (LinkInput.question), in order, for the tests

    @classmethod
    def load(cls, cfg, *, model_dir=None, device="cpu", cache_dir=None) -> "ToyLinker":
        return cls()

    def link(self, batch, mapper=map):
        out = []
        for item in batch:
            ToyLinker.questions.append(item.question)
            edges = [Edge(j - 1, j, "inference") for j in range(1, len(item.units))]
            edges += [Edge(j, j - 1, "critique", "uncertain") for j in range(1, len(item.units))
                      if item.units[j].node_type == "CRT"]
            out.append(edges)
        return out

    def candidates(self, item):
        import numpy as np

        return [np.arange(max(0, j - 1), j, dtype=np.int64) for j in range(len(item.units))]


TOY = register_linker(Backend("toy", "toy_linker:ToyLinker.load", "a chain with critiques (tests/toy_linker.py)"))
