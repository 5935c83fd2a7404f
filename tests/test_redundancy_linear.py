"""The SEP and Iso of the redundancy suite are linear in trace length (issue 16); they must give
exactly what the quadratic reference gave (tests/redundancy_reference.py) on random graphs with every
rule (negating and affirming critiques, repetitions, branches), on repeated real-looking sentences,
and on a long trace."""
from __future__ import annotations

import random

import pytest

import redundancy_reference as reference
from thinkprobe.redundancy import isolated_units, shortest_effective_path

FORWARD_KINDS = ("inference", "elaboration", "branch")
WORDS = ("speed distance time train hours minutes answer check compute total apples oranges price cost "
         "triangle angle side length area circle radius prime number divisor remainder").split()


def random_graph(rng: random.Random, n: int, m: int) -> list[tuple]:
    """Forward edges mostly local, backward edges (critique, repetition) of any reach."""
    edges = []
    for _ in range(m):
        if rng.random() < 0.6 and n > 1:
            s = rng.randrange(n - 1)
            d = min(n - 1, s + 1 + int(rng.expovariate(0.3)))
            edges.append((s, d, rng.choice(FORWARD_KINDS)))
        elif n > 1:
            j = rng.randrange(1, n)
            i = rng.randrange(j)
            kind = rng.choice(("critique", "critique", "repetition", "synthesis"))
            polarity = rng.choice(("negate", "affirm", "")) if kind == "critique" else ""
            edges.append((j, i, kind, polarity))
    return edges


def random_units(rng: random.Random, n: int, vocabulary: int) -> list[dict]:
    return [{"id": k, "text": " ".join(rng.choice(WORDS[:vocabulary]) for _ in range(rng.randint(0, 9)))}
            for k in range(n)]


@pytest.mark.parametrize("seed", range(40))
def test_sep_equals_the_reference_on_random_graphs(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 60)
    edges = random_graph(rng, n, rng.randint(0, 3 * n))
    for target in {0, n - 1, rng.randrange(n)}:
        assert shortest_effective_path(n, edges, target) == reference.shortest_effective_path(n, edges, target)


@pytest.mark.parametrize("seed", range(40))
def test_isolated_units_equal_the_reference(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 80)
    units = random_units(rng, n, rng.choice((3, 8, len(WORDS))))
    edges = random_graph(rng, n, rng.randint(0, n))
    question = " ".join(rng.sample(WORDS, 3))
    for overlap in (0.0, 0.1, 0.2, 0.5, 1.0):
        assert isolated_units(units, edges, question, overlap) == reference.isolated_units(units, edges, question, overlap)


def test_a_long_trace_equals_the_reference():
    """3,000 units of repeated sentences with 300 long-reaching critiques: the case that was quadratic."""
    rng = random.Random(3)
    n = 3000
    units = random_units(rng, n, 12)
    edges = [(k, k + 1, "inference") for k in range(n - 1)] + random_graph(rng, n, 600)
    assert shortest_effective_path(n, edges, n - 1) == reference.shortest_effective_path(n, edges, n - 1)
    assert isolated_units(units, edges, "train speed") == reference.isolated_units(units, edges, "train speed")
