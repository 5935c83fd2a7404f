"""The 19 indicators: numba kernels equal the readable reference, one contract for every indicator,
hand-computed values on toy graphs, and invariance under edge order and duplicate edges."""
from __future__ import annotations

import math

import numpy as np
import pytest

from thinkprobe.indicators import DIMENSIONS, INDICATORS, SIGNS, compute_indicators, reference_indicators
from thinkprobe.records import BACKWARD_EDGES, EDGE_INDEX, EDGE_TYPES, NODE_INDEX, NODE_TYPES, GraphArrays

IMPLEMENTATIONS = [compute_indicators, reference_indicators]


def graph(types: str, edges=(), *, embeddings=None, tokens=None, concreteness=None, hedge=None, perspective=None):
    """A GraphArrays from space-separated node types and (src, dst, edge_type) triples.

    Unset embeddings are one-hot per unit, so every content unit is an idea of its own.
    """
    node_types = types.split()
    n = len(node_types)
    return GraphArrays(
        n=n,
        node_type=np.array([NODE_INDEX[t] for t in node_types], np.int8),
        edge_src=np.array([s for s, _, _ in edges], np.int32),
        edge_dst=np.array([d for _, d, _ in edges], np.int32),
        edge_type=np.array([EDGE_INDEX[k] for _, _, k in edges], np.int8),
        embeddings=np.asarray(embeddings if embeddings is not None else np.eye(max(n, 1))[:n], np.float32).reshape(n, -1 if n else 1),
        tokens=np.asarray(tokens if tokens is not None else [10] * n, np.int32),
        concreteness=np.asarray(concreteness if concreteness is not None else [0.0] * n, np.float64),
        hedge=np.asarray(hedge if hedge is not None else [False] * n, np.bool_),
        perspective=np.asarray(perspective if perspective is not None else [False] * n, np.bool_),
    )


def random_graph(rng: np.random.Generator) -> GraphArrays:
    """A random graph with edges pointing the way their type says, sometimes repeated."""
    n = int(rng.integers(0, 61))
    edges = []
    if n >= 2:
        for _ in range(int(rng.integers(0, 3 * n + 1))):
            i = int(rng.integers(0, n - 1))
            # mostly local links, as a linker would make them, plus some long-range ones
            j = min(n - 1, i + 1 + int(rng.geometric(0.4)) - 1) if rng.random() < 0.7 else int(rng.integers(i + 1, n))
            kind = EDGE_TYPES[int(rng.integers(0, len(EDGE_TYPES)))]
            edges.append((j, i, kind) if kind in BACKWARD_EDGES else (i, j, kind))
        edges += [edges[k] for k in rng.integers(0, len(edges), size=len(edges) // 5)] if edges else []
    dim = int(rng.choice([2, 3, 16]))  # low dimensions make clusters merge
    vectors = rng.normal(size=(n, dim))
    vectors[rng.random(n) < 0.05] = 0.0
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return GraphArrays(
        n=n,
        node_type=rng.integers(0, len(NODE_TYPES), size=n).astype(np.int8),
        edge_src=np.array([s for s, _, _ in edges], np.int32),
        edge_dst=np.array([d for _, d, _ in edges], np.int32),
        edge_type=np.array([EDGE_INDEX[k] for _, _, k in edges], np.int8),
        embeddings=vectors.astype(np.float32) if n else np.zeros((0, 1), np.float32),
        tokens=rng.integers(1, 80, size=n).astype(np.int32),
        concreteness=rng.random(n),
        hedge=rng.random(n) < 0.2,
        perspective=rng.random(n) < 0.1,
    )


def with_edges(g: GraphArrays, src, dst, etype) -> GraphArrays:
    """`g` with its edge arrays replaced."""
    return GraphArrays(
        g.n, g.node_type, np.asarray(src, np.int32), np.asarray(dst, np.int32), np.asarray(etype, np.int8),
        g.embeddings, g.tokens, g.concreteness, g.hedge, g.perspective,
    )


# (low, high, integer-valued) where the spec documents a range
RANGES = {name: (0.0, math.inf, False) for name in INDICATORS}
RANGES.update({name: (0.0, 1.0, False) for name in (
    "backtracking_rate", "cross_branch_connectivity", "convergence_index", "recurrence_ratio",
    "self_reflection_rate", "hedging_density", "perspective_taking", "redundancy_ratio",
)})
RANGES.update({name: (0.0, math.inf, True) for name in ("idea_count", "semantic_spread", "max_chain_depth")})
RANGES["initial_diversity"] = (0.0, 2.0, False)
RANGES["specificity_gradient"] = (-math.inf, math.inf, False)


def assert_in_range(name: str, value: float) -> None:
    low, high, integer = RANGES[name]
    assert low <= value <= high, (name, value)
    assert not integer or value == int(value), (name, value)


CHAIN5 = [(i, i + 1, "inference") for i in range(4)]


# --------------------------------------------------------------------------- 1. numba == reference


def test_tables_cover_the_spec():
    assert len(INDICATORS) == len(set(INDICATORS)) == 19
    assert list(DIMENSIONS) == ["Breadth", "Depth", "Structure", "Metacognition", "Efficiency"]
    assert [n for names in DIMENSIONS.values() for n in names] == list(INDICATORS)
    assert {n for n, s in SIGNS.items() if s == -1} == {"tokens_per_idea", "redundancy_ratio"}
    assert set(SIGNS.values()) == {-1, 1} and set(SIGNS) == set(INDICATORS)


@pytest.mark.parametrize("seed", range(4))
def test_numba_equals_reference_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        g = random_graph(rng)
        fast, slow = compute_indicators(g), reference_indicators(g)
        assert list(fast) == list(slow) == list(INDICATORS)
        for name in INDICATORS:
            assert type(fast[name]) is float and math.isfinite(fast[name])
            assert fast[name] == pytest.approx(slow[name], rel=1e-9, abs=1e-9), (name, g.n)
            assert_in_range(name, fast[name])


def test_numba_equals_reference_on_malformed_edges():
    """Forward-typed edges pointing backwards, self-loops and out-of-range ends."""
    rng = np.random.default_rng(99)
    for _ in range(40):
        g = random_graph(rng)
        if g.n < 2:
            continue
        m = 10
        src = np.concatenate([g.edge_src, rng.integers(-1, g.n + 1, m)])
        dst = np.concatenate([g.edge_dst, rng.integers(-1, g.n + 1, m)])
        etype = np.concatenate([g.edge_type, rng.integers(0, len(EDGE_TYPES), m)])
        bad = with_edges(g, src, dst, etype)
        fast, slow = compute_indicators(bad), reference_indicators(bad)
        for name in INDICATORS:
            assert math.isfinite(fast[name])
            assert fast[name] == pytest.approx(slow[name], rel=1e-9, abs=1e-9), name


# --------------------------------------------------------------------------- 2. one contract for every indicator


CONTRACT_GRAPHS = {
    "empty": graph(""),
    "one unit": graph("RSN"),
    "pure chain": graph("FAC RSN RSN RSN CON", CHAIN5, concreteness=[0.1, 0.3, 0.2, 0.6, 0.9]),
    "cycle": graph("FAC RSN EXP RSN CRT", CHAIN5 + [(4, 1, "critique")], hedge=[0, 1, 1, 0, 0]),
}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", INDICATORS)
def test_indicator_contract(name, implementation):
    for label, g in CONTRACT_GRAPHS.items():
        first, second = implementation(g)[name], implementation(g)[name]
        assert type(first) is float and math.isfinite(first), label
        assert first == second, label
        assert_in_range(name, first)
    assert implementation(CONTRACT_GRAPHS["empty"])[name] == 0.0


# --------------------------------------------------------------------------- 3. hand-computed values

E = np.eye(4)
ANGLES = np.radians([0.0, 40.0, 85.0])  # d(a,b)=0.23, d(b,c)=0.29, d(a,c)=0.91
FAN = np.stack([np.cos(ANGLES), np.sin(ANGLES)], axis=1)
BRANCHY_EDGES = [(0, 1, "inference"), (0, 2, "branch"), (2, 3, "inference"), (1, 4, "branch"), (4, 5, "elaboration")]
BRANCHY = "FAC RSN EXP RSN EXP RSN"
NEAREST = [(0, 1, "inference"), (1, 2, "inference"), (0, 3, "branch"), (2, 4, "inference"), (3, 4, "elaboration")]

TOY_CASES = [
    # (case, graph, indicator, expected)
    ("chain", graph("RSN " * 5, CHAIN5), "max_chain_depth", 4),
    ("chain", graph("RSN " * 5, CHAIN5), "mean_branch_depth", 4),
    ("chain", graph("RSN " * 5, CHAIN5), "idea_count", 1),
    ("chain", graph("RSN " * 5, CHAIN5), "recurrence_ratio", 0),
    ("chain", graph("RSN " * 5, CHAIN5), "branching_factor", 0),
    ("chain", graph("RSN " * 5, CHAIN5), "semantic_spread", 5),
    ("chain", graph("RSN " * 5, CHAIN5), "tokens_per_idea", 10),
    ("chain + critique 4->1", graph("RSN " * 5, CHAIN5 + [(4, 1, "critique")]), "recurrence_ratio", 4 / 5),
    ("chain + critique 4->1", graph("RSN " * 5, CHAIN5 + [(4, 1, "critique")]), "revision_depth", 3),
    ("chain + critique 4->1", graph("RSN " * 5, CHAIN5 + [(4, 1, "critique")]), "backtracking_rate", 1 / 5),
    ("chain + critique 4->1", graph("RSN " * 5, CHAIN5 + [(4, 1, "critique")]), "max_chain_depth", 4),
    ("two critiques", graph("RSN " * 5, CHAIN5 + [(4, 1, "critique"), (3, 2, "critique")]), "revision_depth", 2),
    ("two critiques", graph("RSN " * 5, CHAIN5 + [(4, 1, "critique"), (3, 2, "critique")]), "backtracking_rate", 2 / 6),
    ("self-loop is no cycle", graph("RSN CRT", [(0, 1, "inference"), (1, 1, "critique")]), "recurrence_ratio", 0),
    ("synthesis cycle", graph("RSN RSN SYN", [(0, 1, "inference"), (1, 2, "inference"), (2, 0, "synthesis")]),
     "recurrence_ratio", 1),
    ("synthesis cycle", graph("RSN RSN SYN", [(0, 1, "inference"), (1, 2, "inference"), (2, 0, "synthesis")]),
     "convergence_index", 1 / 3),
    ("synthesis cycle", graph("RSN RSN SYN", [(0, 1, "inference"), (1, 2, "inference"), (2, 0, "synthesis")]),
     "cross_branch_connectivity", 0),
    ("three branches", graph(BRANCHY, BRANCHY_EDGES), "idea_count", 3),
    ("three branches", graph(BRANCHY, BRANCHY_EDGES), "branching_factor", 2 / 6),
    ("three branches", graph(BRANCHY, BRANCHY_EDGES), "max_chain_depth", 1),
    ("three branches", graph(BRANCHY, BRANCHY_EDGES), "mean_branch_depth", 1),
    ("three branches", graph(BRANCHY, BRANCHY_EDGES), "cross_branch_connectivity", 0),
    ("three branches + synthesis 5->3", graph(BRANCHY, BRANCHY_EDGES + [(5, 3, "synthesis")]),
     "cross_branch_connectivity", 1 / 3),
    ("three branches + synthesis 5->3, 5->0, 5->2", graph(BRANCHY, BRANCHY_EDGES + [(5, 3, "synthesis"), (5, 0, "synthesis"), (5, 2, "synthesis")]),
     "cross_branch_connectivity", 2 / 3),
    ("three branches + synthesis 5->3, 5->0, 5->2", graph(BRANCHY, BRANCHY_EDGES + [(5, 3, "synthesis"), (5, 0, "synthesis"), (5, 2, "synthesis")]),
     "convergence_index", 3 / 8),
    ("synthesis within a branch", graph(BRANCHY, BRANCHY_EDGES + [(5, 4, "synthesis")]), "cross_branch_connectivity", 0),
    # unit 4 has chain parents 2 (branch 0) and 3 (branch 1): it joins the nearest, 3
    ("nearest predecessor", graph("RSN RSN RSN EXP RSN", NEAREST + [(4, 2, "synthesis")]), "cross_branch_connectivity", 1),
    ("nearest predecessor", graph("RSN RSN RSN EXP RSN", NEAREST + [(4, 3, "synthesis")]), "cross_branch_connectivity", 0),
    ("nearest predecessor", graph("RSN RSN RSN EXP RSN", NEAREST), "max_chain_depth", 3),
    ("nearest predecessor", graph("RSN RSN RSN EXP RSN", NEAREST), "mean_branch_depth", 1.5),
    ("orphan opens a branch", graph("RSN RSN RSN", [(0, 1, "inference")]), "idea_count", 2),
    ("orphan opens a branch", graph("RSN RSN RSN", [(0, 1, "inference")]), "mean_branch_depth", 0.5),
    ("branch target with a chain parent", graph("RSN EXP", [(0, 1, "inference"), (0, 1, "branch")]), "idea_count", 2),
    ("branch target with a chain parent", graph("RSN EXP", [(0, 1, "inference"), (0, 1, "branch")]),
     "mean_branch_depth", 0),
    ("branch target with a chain parent", graph("RSN EXP", [(0, 1, "inference"), (0, 1, "branch")]),
     "max_chain_depth", 1),
    ("backward inference ignored for depth", graph("RSN RSN RSN", CHAIN5[:2] + [(2, 0, "inference")]), "max_chain_depth", 2),
    ("backward inference ignored for depth", graph("RSN RSN RSN", CHAIN5[:2] + [(2, 0, "inference")]), "idea_count", 1),
    ("backward inference still closes a cycle", graph("RSN RSN RSN", CHAIN5[:2] + [(2, 0, "inference")]),
     "recurrence_ratio", 1),
    ("one unit", graph("RSN", tokens=[7]), "idea_count", 1),
    ("one unit", graph("RSN", tokens=[7]), "semantic_spread", 1),
    ("one unit", graph("RSN", tokens=[7]), "tokens_per_idea", 7),
    ("one unit", graph("RSN", tokens=[7]), "max_chain_depth", 0),
    ("one unit", graph("RSN", concreteness=[0.8]), "specificity_gradient", 0),
    ("all node types", graph("FAC RSN EXP EXP CRT MET RPT CON"), "exploration_ratio", 1),
    ("all node types", graph("FAC RSN EXP EXP CRT MET RPT CON"), "critique_ratio", 1 / 2),
    ("all node types", graph("FAC RSN EXP EXP CRT MET RPT CON"), "self_reflection_rate", 1 / 8),
    ("all node types", graph("FAC RSN EXP EXP CRT MET RPT CON"), "redundancy_ratio", 1 / 8),
    ("all node types", graph("FAC RSN EXP EXP CRT MET RPT CON"), "semantic_spread", 5),
    ("no RSN or FAC", graph("MET CRT CRT"), "exploration_ratio", 0),
    ("no EXP", graph("MET CRT CRT"), "critique_ratio", 2),
    ("flags", graph("RSN " * 4, hedge=[1, 0, 0, 1], perspective=[1, 0, 0, 0]), "hedging_density", 0.5),
    ("flags", graph("RSN " * 4, hedge=[1, 0, 0, 1], perspective=[1, 0, 0, 0]), "perspective_taking", 0.25),
    ("rising concreteness", graph("RSN " * 3, concreteness=[0.0, 0.5, 1.0]), "specificity_gradient", 1),
    ("falling concreteness", graph("RSN " * 2, concreteness=[1.0, 0.0]), "specificity_gradient", -1),
    ("step in concreteness", graph("RSN " * 4, concreteness=[0, 0, 1, 1]), "specificity_gradient", 1.2),
    ("flat concreteness", graph("RSN " * 3, concreteness=[0.2, 0.2, 0.2]), "specificity_gradient", 0),
    ("EXP a, b, a, (b)", graph("EXP RSN EXP EXP EXP", embeddings=E[[0, 2, 1, 0, 1]]), "initial_diversity", 2 / 3),
    ("EXP opposite", graph("EXP EXP", embeddings=[[1, 0], [-1, 0]]), "initial_diversity", 2),
    ("EXP zero vector", graph("EXP EXP", embeddings=[[1, 0], [0, 0]]), "initial_diversity", 1),
    ("one EXP", graph("EXP RSN", embeddings=[[1, 0], [0, 1]]), "initial_diversity", 0),
    ("two topics", graph("RSN FAC CON SYN", embeddings=E[[0, 0, 1, 1]]), "semantic_spread", 2),
    ("two topics", graph("RSN FAC CON SYN", embeddings=E[[0, 0, 1, 1]], tokens=[3, 4, 5, 6]), "tokens_per_idea", 9),
    ("non-content units are not ideas", graph("RSN MET CRT RPT"), "semantic_spread", 1),
    ("no content units", graph("MET CRT", tokens=[3, 4]), "tokens_per_idea", 7),
    ("zero vectors are separate ideas", graph("RSN RSN", embeddings=[[0, 0], [0, 0]]), "semantic_spread", 2),
    # single linkage would chain all three at 0.29; average linkage joins c to {a, b} only at 0.60
    ("average linkage", graph("RSN RSN RSN", embeddings=FAN), "semantic_spread", 2),
]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("case", "g", "name", "expected"), TOY_CASES, ids=[f"{c[0]}-{c[2]}" for c in TOY_CASES])
def test_hand_computed(case, g, name, expected, implementation):
    assert implementation(g)[name] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("cluster_distance", "expected"), [(0.45, 1), (0.2, 2), (0.0, 2)])
def test_cluster_distance_cuts_the_tree(cluster_distance, expected, implementation):
    close = np.radians(45.57)  # cosine distance 0.30 from the first vector
    g = graph("RSN EXP", embeddings=[[1.0, 0.0], [np.cos(close), np.sin(close)]], tokens=[6, 6])
    result = implementation(g, cluster_distance=cluster_distance)
    assert result["semantic_spread"] == expected
    assert result["tokens_per_idea"] == 12 / expected


# --------------------------------------------------------------------------- 4. invariances


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS, ids=lambda f: f.__name__)
def test_edge_order_and_duplicates_do_not_matter(implementation):
    rng = np.random.default_rng(7)
    for _ in range(40):
        g = random_graph(rng)
        m = len(g.edge_src)
        if m == 0:
            continue
        expected = implementation(g)
        shuffled = rng.permutation(m)
        assert implementation(with_edges(g, g.edge_src[shuffled], g.edge_dst[shuffled], g.edge_type[shuffled])) == expected
        repeated = np.concatenate([np.arange(m), rng.integers(0, m, size=m)])
        rng.shuffle(repeated)
        doubled = with_edges(g, g.edge_src[repeated], g.edge_dst[repeated], g.edge_type[repeated])
        assert implementation(doubled) == expected


def test_numpy_dtypes_do_not_matter():
    g = graph("FAC RSN EXP CRT", [(0, 1, "inference"), (0, 2, "branch"), (3, 1, "critique")], concreteness=[0, 0.2, 0.4, 1])
    wide = GraphArrays(
        g.n, g.node_type.astype(np.int64), g.edge_src.astype(np.int64), g.edge_dst.astype(np.int64),
        g.edge_type.astype(np.int64), g.embeddings.astype(np.float64), g.tokens.astype(np.int64),
        g.concreteness.astype(np.float32), g.hedge.astype(np.int8), g.perspective.astype(np.int8),
    )
    assert compute_indicators(wide) == pytest.approx(compute_indicators(g), abs=1e-7)


# --------------------------------------------------------------------------- 5. bounded clustering


def topic_embeddings(rng, topics: int, n: int, dim: int = 32, noise: float = 0.15, zero_every: int = 0):
    """n vectors drawn around `topics` orthogonal random directions (dim >= topics)."""
    centres = np.sqrt(dim) * np.linalg.qr(rng.normal(size=(dim, dim)))[0][:topics]
    emb = centres[rng.integers(0, topics, size=n)] + noise * rng.normal(size=(n, dim))
    if zero_every:
        emb[::zero_every] = 0.0  # units without an embedding: orthogonal to everything
    return emb.astype(np.float32)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("topics", "zero_every"), [(1, 0), (7, 0), (12, 97)])
def test_sampled_clustering_counts_separated_topics_like_the_exact_one(topics, zero_every, implementation):
    rng = np.random.default_rng(topics)
    n = 900
    g = graph(" ".join(["RSN"] * n), embeddings=topic_embeddings(rng, topics, n, zero_every=zero_every),
              tokens=[3] * n)
    exact = implementation(g, cluster_exact_max=n)["semantic_spread"]
    sampled = implementation(g, cluster_exact_max=200)["semantic_spread"]
    assert exact == topics + (len(range(0, n, zero_every)) if zero_every else 0)
    assert sampled == exact


def test_sampled_clustering_of_units_unlike_each_other_counts_every_unit():
    # No two units close: every pass clusters its sample into singletons and keeps going.
    emb = np.eye(500, dtype=np.float32)
    g = graph(" ".join(["FAC"] * 500), embeddings=emb, tokens=[1] * 500)
    assert compute_indicators(g, cluster_exact_max=64)["semantic_spread"] == 500


def test_only_content_units_count_toward_the_exact_limit():
    rng = np.random.default_rng(3)
    types = " ".join(["MET", "CRT", "RSN"] * 300)  # 300 content units, 600 others
    g = graph(types, embeddings=topic_embeddings(rng, 200, 900, dim=256, noise=0.0), tokens=[2] * 900)
    from thinkprobe.indicators import sampled_clusters

    # 300 content units <= 300: the exact path, whatever the 900 units overall
    assert compute_indicators(g, cluster_exact_max=300) == compute_indicators(g, cluster_exact_max=10**6)
    content = g.embeddings[2::3].astype(np.float64)
    assert compute_indicators(g, cluster_exact_max=299)["semantic_spread"] == sampled_clusters(content, 0.45, 299)


def test_docs_table_is_derived_from_the_indicator_records():
    """docs/indicators.md's table, the lists, dimensions and signs all come from INDICATOR_RECORDS."""
    from pathlib import Path

    from thinkprobe.indicators import INDICATOR_RECORDS, indicator_glossary, indicator_table

    doc = (Path(__file__).resolve().parent.parent / "docs" / "indicators.md").read_text(encoding="utf-8")
    assert indicator_table() in doc
    assert INDICATORS == tuple(i.name for i in INDICATOR_RECORDS) and len(INDICATORS) == 19
    assert {n for names in DIMENSIONS.values() for n in names} == set(SIGNS) == set(indicator_glossary())
    assert [n for n, s in SIGNS.items() if s < 0] == ["tokens_per_idea", "redundancy_ratio"]
