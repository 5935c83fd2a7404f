"""The 19 indicators of a Thought Graph (spec section 4): the `graph -> indicators` stage.

`compute_indicators` runs numba kernels over the `GraphArrays` form; `reference_indicators` is a
plain Python / networkx reading of the same definitions that the tests keep equal to it.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import networkx as nx
import numba
import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist
from scipy.stats import linregress

from thinkprobe.records import EDGE_INDEX, EDGE_TYPES, NODE_INDEX, NODE_TYPES, GraphArrays

__all__ = ["Indicator", "INDICATOR_RECORDS", "INDICATORS", "DIMENSIONS", "DIMENSION_ABOUT", "SIGNS", "CONTENT_TYPES",
           "compute_indicators", "reference_indicators", "indicator_glossary", "dimension_glossary", "indicator_table"]


@dataclass(frozen=True)
class Indicator:
    """One indicator: its dimension of the 5D profile, its definition (docs/indicators.md's
    table), what it means in words (the report's glossary) and its sign in the profile."""

    name: str
    dimension: str
    definition: str
    meaning: str
    sign: int = 1  # -1: more of it reads as less of its dimension (less efficient)


# Everything else about an indicator (the lists, dimensions, signs, glossaries and the docs table)
# is derived from these records; its computation is in both compute_indicators and reference_indicators.
INDICATOR_RECORDS: tuple[Indicator, ...] = (
    Indicator("branching_factor", "Breadth", "|E_branch| / n", "branch edges per unit: |E_branch| / n"),
    Indicator("idea_count", "Breadth", "number of branches",
              "number of branches (runs of units joined by inference/elaboration edges; a unit without "
              "such a parent starts one)"),
    Indicator("semantic_spread", "Breadth",
              "clusters of content units (FAC, RSN, EXP, SYN, CON), average-linkage on cosine distance cut at 0.45 (scipy)",
              "clusters of content units (FAC, RSN, EXP, SYN, CON), average-linkage, cosine distance 0.45"),
    Indicator("initial_diversity", "Breadth",
              "mean pairwise cosine distance of the first 3 EXP units (0 with fewer than 2)",
              "mean pairwise cosine distance of the first 3 exploration units"),
    Indicator("max_chain_depth", "Depth", "longest path (edges) in the inference + elaboration subgraph",
              "longest path (edges) in the inference + elaboration subgraph"),
    Indicator("mean_branch_depth", "Depth",
              "mean over branches of the longest inference + elaboration path inside the branch",
              "mean over branches of the longest inference + elaboration path inside the branch"),
    Indicator("specificity_gradient", "Depth", "OLS slope of unit concreteness against position k/(n-1)",
              "slope of concreteness (numbers, symbols, units, names) against position in the trace"),
    Indicator("exploration_ratio", "Structure", "|N_EXP| / (|N_RSN| + |N_FAC|)",
              "exploration units / (reasoning + fact units)"),
    Indicator("backtracking_rate", "Structure", "|E_critique| / |E|", "critique edges / all edges"),
    Indicator("cross_branch_connectivity", "Structure",
              "share of branch pairs joined by a synthesis edge (0 with < 2 branches)",
              "share of branch pairs joined by a synthesis edge"),
    Indicator("convergence_index", "Structure", "|E_synthesis| / |E|", "synthesis edges / all edges"),
    Indicator("recurrence_ratio", "Structure", "share of units in a strongly connected component of size > 1",
              "share of units on a directed cycle"),
    Indicator("revision_depth", "Structure", "mean |i - j| over critique edges",
              "mean distance (units) spanned by critique edges"),
    Indicator("self_reflection_rate", "Metacognition", "|N_MET| / n", "metacognition units / all units"),
    Indicator("critique_ratio", "Metacognition", "|N_CRT| / max(|N_EXP|, 1)",
              "critique units / exploration units (at least 1)"),
    Indicator("hedging_density", "Metacognition", "share of units with a hedge marker (lexicon `hedge`)",
              "share of units with a hedge marker"),
    Indicator("perspective_taking", "Metacognition", "share of units with a perspective marker (lexicon `perspective`)",
              "share of units with a perspective-shift marker"),
    Indicator("tokens_per_idea", "Efficiency", "tokens / max(semantic_spread, 1)",
              "tokens / semantic_spread; lower is more efficient", sign=-1),
    Indicator("redundancy_ratio", "Efficiency", "|N_RPT| / n",
              "repetition units / all units; lower is more efficient", sign=-1),
)
# What each dimension of the profile reads (its indicators are listed after it in the glossary).
DIMENSION_ABOUT: dict[str, str] = {
    "Breadth": "how many distinct directions and ideas the trace opens (as branches: a unit with no "
               "inference/elaboration parent, often a critique or a restatement, opens one)",
    "Depth": "how long the chains of inference run",
    "Structure": "how much the trace explores, backtracks, reconnects and revises",
    "Metacognition": "how much the trace plans, checks and hedges",
    "Efficiency": "how few tokens and repetitions per idea",
}
DIMENSIONS: dict[str, tuple[str, ...]] = {
    dim: tuple(i.name for i in INDICATOR_RECORDS if i.dimension == dim) for dim in DIMENSION_ABOUT}
INDICATORS: tuple[str, ...] = tuple(name for names in DIMENSIONS.values() for name in names)
# More tokens per idea and more repetition read as *less* efficient, so the profile flips them.
SIGNS: dict[str, int] = {i.name: i.sign for i in INDICATOR_RECORDS}


def indicator_glossary() -> dict[str, str]:
    """Indicator -> what it means, in INDICATORS order (the report's glossary)."""
    return {i.name: i.meaning for i in INDICATOR_RECORDS}


def dimension_glossary() -> dict[str, str]:
    """Dimension -> what it reads and which indicators make it (the report's glossary)."""
    out = {}
    for dim, names in DIMENSIONS.items():
        flipped = all(SIGNS[n] < 0 for n in names)
        listed = (" and ".join(names) + (", both sign-flipped" if len(names) == 2 else ", all sign-flipped")
                  if flipped else ", ".join(names))
        out[dim] = f"{DIMENSION_ABOUT[dim]} ({listed})"
    return out


def indicator_table() -> str:
    """docs/indicators.md's table of the 19 indicators (a test keeps the file equal to it)."""
    lines = ["| # | dimension | indicator | definition | profile sign |", "|---|---|---|---|---|"]
    for k, i in enumerate(INDICATOR_RECORDS, start=1):
        lines.append(f"| {k} | {i.dimension} | {i.name} | {i.definition.replace('|', chr(92) + '|')} | "
                     f"{'+' if i.sign > 0 else '-'} |")
    return "\n".join(lines) + "\n"


CONTENT_TYPES: tuple[str, ...] = ("FAC", "RSN", "EXP", "SYN", "CON")

_FAC, _RSN, _EXP, _CRT, _MET, _RPT = (NODE_INDEX[t] for t in ("FAC", "RSN", "EXP", "CRT", "MET", "RPT"))
_INFERENCE, _ELABORATION, _BRANCH = EDGE_INDEX["inference"], EDGE_INDEX["elaboration"], EDGE_INDEX["branch"]
_CRITIQUE, _SYNTHESIS = EDGE_INDEX["critique"], EDGE_INDEX["synthesis"]
_N_EDGE_TYPES = len(EDGE_TYPES)
_CONTENT = np.array([NODE_INDEX[t] for t in CONTENT_TYPES], dtype=np.int64)


# --------------------------------------------------------------------------- shared helpers


def _content_clusters(embeddings: np.ndarray, node_type: np.ndarray, cluster_distance: float,
                      exact_max: int = 2000) -> int:
    """Number of average-linkage clusters of the content units, cut at cosine distance `cluster_distance`.

    Exact up to `exact_max` content units (scipy's linkage over all pairwise distances: agglomerative
    clustering is scipy's job, not ours to hand-write). Above that, `sampled_clusters` bounds memory.
    """
    content = np.asarray(embeddings, dtype=np.float64)[np.isin(node_type, _CONTENT)]
    if len(content) > exact_max:
        return sampled_clusters(content, cluster_distance, exact_max)
    return len(np.unique(_exact_clusters(content, cluster_distance)))


def _exact_clusters(content: np.ndarray, cluster_distance: float) -> np.ndarray:
    """Flat average-linkage cluster label per row."""
    if len(content) < 2:
        return np.arange(len(content))
    # Same as linkage(content, "average", metric="cosine"), but scipy gives NaN distances for a
    # zero vector and linkage rejects them; a unit without an embedding counts as orthogonal.
    distances = np.clip(np.nan_to_num(pdist(content, "cosine"), nan=1.0), 0.0, 2.0)
    return fcluster(linkage(distances, method="average"), t=cluster_distance, criterion="distance")


def sampled_clusters(content: np.ndarray, cluster_distance: float, sample_size: int) -> int:
    """Bounded approximation of the cluster count for more than `sample_size` content units.

    Cluster `sample_size` evenly spaced units exactly; every other unit joins the cluster whose
    average cosine distance to it is smallest, if that is within `cluster_distance` (the average
    distance to a cluster is exact from the sum of its unit vectors, compared in blocks of
    `sample_size` rows). Units that join none are clustered again the same way, until at most
    `sample_size` are left, which are clustered exactly. Memory stays O(sample_size^2); a unit
    never merges two sample clusters, and a sample links differently from the whole, so the count
    can differ from the exact one either way.
    """
    norms = np.linalg.norm(content, axis=1, keepdims=True)
    unit = np.divide(content, norms, out=np.zeros_like(content), where=norms > 0)  # zero rows stay zero
    remaining = np.arange(len(unit))
    count = 0
    while len(remaining) > sample_size:
        picked = np.zeros(len(remaining), bool)
        picked[np.linspace(0, len(remaining) - 1, sample_size).round().astype(np.int64)] = True
        sample = remaining[picked]
        labels = np.unique(_exact_clusters(unit[sample], cluster_distance), return_inverse=True)[1]
        k = int(labels.max()) + 1
        sums = np.zeros((k, unit.shape[1]))
        np.add.at(sums, labels, unit[sample])
        sizes = np.bincount(labels, minlength=k).astype(np.float64)
        rest = remaining[~picked]
        joined = np.zeros(len(rest), bool)
        for a in range(0, len(rest), sample_size):
            mean_distance = 1.0 - (unit[rest[a:a + sample_size]] @ sums.T) / sizes
            joined[a:a + sample_size] = np.clip(mean_distance, 0.0, 2.0).min(axis=1) <= cluster_distance
        count += k
        remaining = rest[~joined]
    return count + len(np.unique(_exact_clusters(unit[remaining], cluster_distance)))


def _as_result(values) -> dict[str, float]:
    """Plain finite Python floats in INDICATORS order."""
    # A NaN in one input column (say concreteness) must not poison the corpus z-scores downstream.
    return {name: float(np.nan_to_num(values[name], nan=0.0, posinf=0.0, neginf=0.0)) for name in INDICATORS}


# --------------------------------------------------------------------------- numba kernels


@numba.njit(cache=True)
def _edges_by(n, key):
    """CSR grouping of edge ids by `key` (edge_src for outgoing, edge_dst for incoming): (indptr, edge ids)."""
    indptr = np.zeros(n + 1, np.int64)
    for k in range(key.size):
        indptr[key[k] + 1] += 1
    for v in range(n):
        indptr[v + 1] += indptr[v]
    fill = indptr[:-1].copy()
    edge_ids = np.empty(key.size, np.int64)
    for k in range(key.size):
        edge_ids[fill[key[k]]] = k
        fill[key[k]] += 1
    return indptr, edge_ids


@numba.njit(cache=True)
def _branches(n, in_ptr, in_edges, edge_src, edge_type):
    """Branch id of every unit and the number of branches.

    A unit opens a branch at the trace start, as a branch target, or when no inference/elaboration
    edge reaches it from earlier; otherwise it joins its nearest such predecessor. Forward-typed
    edges that do not point forward are malformed and ignored.
    """
    branch = np.empty(n, np.int64)
    n_branches = 0
    for v in range(n):
        opens = v == 0
        nearest = -1
        for p in range(in_ptr[v], in_ptr[v + 1]):
            k = in_edges[p]
            u = edge_src[k]
            if u >= v:
                continue
            if edge_type[k] == _BRANCH:
                opens = True
            elif (edge_type[k] == _INFERENCE or edge_type[k] == _ELABORATION) and u > nearest:
                nearest = u
        if opens or nearest < 0:
            branch[v] = n_branches
            n_branches += 1
        else:
            branch[v] = branch[nearest]
    return branch, n_branches


@numba.njit(cache=True)
def _chain_depths(n, in_ptr, in_edges, edge_src, edge_type, branch, n_branches):
    """(max_chain_depth, mean_branch_depth): longest inference+elaboration paths, overall and inside branches.

    Only forward edges count, so index order is a topological order and one pass suffices.
    """
    depth = np.zeros(n, np.int64)
    inner = np.zeros(n, np.int64)  # longest path ending here that stays inside the unit's branch
    for v in range(n):
        for p in range(in_ptr[v], in_ptr[v + 1]):
            k = in_edges[p]
            u = edge_src[k]
            if u >= v or (edge_type[k] != _INFERENCE and edge_type[k] != _ELABORATION):
                continue
            depth[v] = max(depth[v], depth[u] + 1)
            if branch[u] == branch[v]:
                inner[v] = max(inner[v], inner[u] + 1)
    if n == 0:
        return 0.0, 0.0
    branch_depth = np.zeros(n_branches, np.int64)
    for v in range(n):
        branch_depth[branch[v]] = max(branch_depth[branch[v]], inner[v])
    return float(depth.max()), branch_depth.sum() / n_branches


@numba.njit(cache=True)
def _on_cycle(n, out_ptr, out_edges, edge_dst):
    """Mask of units in a strongly connected component of size > 1 (iterative Tarjan, no recursion)."""
    index = np.full(n, -1, np.int64)
    low = np.zeros(n, np.int64)
    on_stack = np.zeros(n, np.bool_)
    stack = np.empty(n, np.int64)
    call_node = np.empty(n, np.int64)  # explicit DFS call stack: node and next outgoing edge slot
    call_next = np.empty(n, np.int64)
    result = np.zeros(n, np.bool_)
    counter = 0
    top = 0
    for root in range(n):
        if index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack[top] = root
        top += 1
        on_stack[root] = True
        call_node[0], call_next[0] = root, out_ptr[root]
        depth = 1
        while depth > 0:
            v = call_node[depth - 1]
            p = call_next[depth - 1]
            if p < out_ptr[v + 1]:
                call_next[depth - 1] = p + 1
                w = edge_dst[out_edges[p]]
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack[top] = w
                    top += 1
                    on_stack[w] = True
                    call_node[depth], call_next[depth] = w, out_ptr[w]
                    depth += 1
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            depth -= 1
            if depth > 0:
                parent = call_node[depth - 1]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                start = top
                while True:
                    top -= 1
                    on_stack[stack[top]] = False
                    if stack[top] == v:
                        break
                if start - top > 1:
                    result[stack[top:start]] = True
    return result


@numba.njit(cache=True)
def _cross_branch_connectivity(edge_src, edge_dst, edge_type, branch, n_branches):
    """Share of unordered branch pairs joined by at least one synthesis edge."""
    if n_branches < 2:
        return 0.0
    keys = np.empty(edge_src.size, np.int64)
    n_keys = 0
    for k in range(edge_src.size):
        a, b = branch[edge_src[k]], branch[edge_dst[k]]
        if edge_type[k] == _SYNTHESIS and a != b:
            keys[n_keys] = min(a, b) * n_branches + max(a, b)
            n_keys += 1
    n_pairs = n_branches * (n_branches - 1) // 2
    return np.unique(keys[:n_keys]).size / n_pairs


@numba.njit(cache=True)
def _cosine_distance(a, b):
    """1 - cosine similarity in float64; a zero vector counts as orthogonal to everything."""
    dot = 0.0
    norm_a = 0.0
    norm_b = 0.0
    for i in range(a.size):
        dot += np.float64(a[i]) * np.float64(b[i])
        norm_a += np.float64(a[i]) * np.float64(a[i])
        norm_b += np.float64(b[i]) * np.float64(b[i])
    if norm_a == 0.0 or norm_b == 0.0:
        return 1.0
    return min(max(1.0 - dot / np.sqrt(norm_a * norm_b), 0.0), 2.0)


@numba.njit(cache=True)
def _initial_diversity(node_type, embeddings):
    """Mean pairwise cosine distance among the first three EXP units (0 with fewer than two)."""
    first = np.empty(3, np.int64)
    found = 0
    for v in range(node_type.size):
        if found < 3 and node_type[v] == _EXP:
            first[found] = v
            found += 1
    if found < 2:
        return 0.0
    total = 0.0
    for i in range(found):
        for j in range(i + 1, found):
            total += _cosine_distance(embeddings[first[i]], embeddings[first[j]])
    return total / (found * (found - 1) // 2)


@numba.njit(cache=True)
def _ols_slope(y):
    """OLS slope of y against position k / (n - 1); 0 when it is undefined."""
    n = y.size
    if n < 2:
        return 0.0
    x_mean = 0.5  # positions are evenly spread over [0, 1]
    y_mean = y.mean()
    sxy = 0.0
    sxx = 0.0
    for k in range(n):
        dx = k / (n - 1) - x_mean
        sxy += dx * (y[k] - y_mean)
        sxx += dx * dx
    return sxy / sxx


@numba.njit(cache=True)
def _edge_stats(edge_src, edge_dst, edge_type):
    """(|E_branch|, |E_critique|, |E_synthesis|, sum of |i - j| over critique edges)."""
    counts = np.zeros(_N_EDGE_TYPES, np.int64)
    critique_span = 0
    for k in range(edge_type.size):
        counts[edge_type[k]] += 1
        if edge_type[k] == _CRITIQUE:
            critique_span += abs(edge_src[k] - edge_dst[k])
    return counts[_BRANCH], counts[_CRITIQUE], counts[_SYNTHESIS], critique_span


def _clean_edges(g: GraphArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges with both ends in the graph and a known type, each (src, dst, type) once, as int64 arrays.

    An exact duplicate carries nothing the array form could tell apart, so it must not move a ratio.
    """
    src = np.asarray(g.edge_src, np.int64)
    dst = np.asarray(g.edge_dst, np.int64)
    etype = np.asarray(g.edge_type, np.int64)
    valid = (src >= 0) & (src < g.n) & (dst >= 0) & (dst < g.n) & (etype >= 0) & (etype < len(EDGE_TYPES))
    key = np.unique((src[valid] * g.n + dst[valid]) * len(EDGE_TYPES) + etype[valid])
    etype, pair = key % len(EDGE_TYPES), key // len(EDGE_TYPES)
    return pair // g.n, pair % g.n, etype


def compute_indicators(g: GraphArrays, *, cluster_distance: float = 0.45, cluster_exact_max: int = 2000) -> dict[str, float]:
    """The 19 indicators of one Thought Graph, in INDICATORS order, as finite floats (all 0 for n = 0).

    Graph work runs in numba kernels; clustering for semantic_spread uses scipy, exactly up to
    `cluster_exact_max` content units and on a bounded sample above (see `sampled_clusters`).

    A fact, a derivation from it, an alternative opened from the fact, and a conclusion that
    critiques the derivation (a cycle 1 -> 3 -> 1):

    >>> import numpy as np
    >>> from thinkprobe.records import GraphArrays
    >>> g = GraphArrays(
    ...     n=4,
    ...     node_type=np.array([0, 1, 2, 6], np.int8),            # FAC RSN EXP CON
    ...     edge_src=np.array([0, 0, 1, 3], np.int32),
    ...     edge_dst=np.array([1, 2, 3, 1], np.int32),
    ...     edge_type=np.array([0, 2, 0, 3], np.int8),            # inference branch inference critique
    ...     embeddings=np.eye(4, dtype=np.float32),
    ...     tokens=np.array([5, 7, 4, 6], np.int32),
    ...     concreteness=np.array([0.1, 0.2, 0.3, 0.4]),
    ...     hedge=np.array([False, False, True, False]),
    ...     perspective=np.zeros(4, bool),
    ... )
    >>> ind = compute_indicators(g)
    >>> ind["idea_count"], ind["max_chain_depth"], ind["recurrence_ratio"], ind["revision_depth"]
    (2.0, 2.0, 0.5, 2.0)
    >>> ind["semantic_spread"], ind["tokens_per_idea"], ind["backtracking_rate"]
    (4.0, 5.5, 0.25)
    """
    n = int(g.n)
    if n == 0:
        return dict.fromkeys(INDICATORS, 0.0)
    node_type = np.asarray(g.node_type, np.int64)
    src, dst, etype = _clean_edges(g)
    in_ptr, in_edges = _edges_by(n, dst)
    out_ptr, out_edges = _edges_by(n, src)
    branch, n_branches = _branches(n, in_ptr, in_edges, src, etype)
    max_depth, mean_branch_depth = _chain_depths(n, in_ptr, in_edges, src, etype, branch, n_branches)
    n_branch_edges, n_critique, n_synthesis, critique_span = _edge_stats(src, dst, etype)
    type_counts = np.bincount(node_type[(node_type >= 0) & (node_type < len(NODE_INDEX))], minlength=len(NODE_INDEX))
    n_edges = max(len(etype), 1)
    semantic_spread = _content_clusters(g.embeddings, node_type, cluster_distance, cluster_exact_max)
    explored = type_counts[_RSN] + type_counts[_FAC]
    values = {
        "branching_factor": n_branch_edges / n,
        "idea_count": n_branches,
        "semantic_spread": semantic_spread,
        "initial_diversity": _initial_diversity(node_type, np.ascontiguousarray(g.embeddings)),
        "max_chain_depth": max_depth,
        "mean_branch_depth": mean_branch_depth,
        "specificity_gradient": _ols_slope(np.asarray(g.concreteness, np.float64)),
        "exploration_ratio": type_counts[_EXP] / explored if explored else 0.0,
        "backtracking_rate": n_critique / n_edges,
        "cross_branch_connectivity": _cross_branch_connectivity(src, dst, etype, branch, n_branches),
        "convergence_index": n_synthesis / n_edges,
        "recurrence_ratio": _on_cycle(n, out_ptr, out_edges, dst).mean(),
        "revision_depth": critique_span / n_critique if n_critique else 0.0,
        "self_reflection_rate": type_counts[_MET] / n,
        "critique_ratio": type_counts[_CRT] / max(type_counts[_EXP], 1),
        "hedging_density": np.asarray(g.hedge, np.bool_).mean(),
        "perspective_taking": np.asarray(g.perspective, np.bool_).mean(),
        "tokens_per_idea": np.asarray(g.tokens, np.int64).sum() / max(semantic_spread, 1),
        "redundancy_ratio": type_counts[_RPT] / n,
    }
    return _as_result(values)


# --------------------------------------------------------------------------- reference


def _reference_branches(n: int, edges: set[tuple[int, int, str]]) -> list[int]:
    """Branch id per unit, read straight off the definition."""
    branch: list[int] = []
    for v in range(n):
        incoming = [(u, kind) for u, w, kind in edges if w == v and u < v]
        opens_branch = v == 0 or any(kind == "branch" for _, kind in incoming)
        chain_parents = [u for u, kind in incoming if kind in ("inference", "elaboration")]
        if opens_branch or not chain_parents:
            branch.append(max(branch, default=-1) + 1)
        else:
            branch.append(branch[max(chain_parents)])
    return branch


def _reference_cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    """1 - cosine similarity; a zero vector counts as orthogonal to everything."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return 1.0 if norms == 0 else min(max(1.0 - float(a @ b) / norms, 0.0), 2.0)


def reference_indicators(g: GraphArrays, *, cluster_distance: float = 0.45, cluster_exact_max: int = 2000) -> dict[str, float]:
    """The same 19 indicators as `compute_indicators`, written for reading rather than speed."""
    n = int(g.n)
    if n == 0:
        return dict.fromkeys(INDICATORS, 0.0)
    types = [NODE_TYPES[t] if 0 <= t < len(NODE_TYPES) else "" for t in g.node_type]
    edges = {
        (int(s), int(d), EDGE_TYPES[int(t)])
        for s, d, t in zip(g.edge_src, g.edge_dst, g.edge_type)
        if 0 <= s < n and 0 <= d < n and 0 <= t < len(EDGE_TYPES)
    }
    edges_of = {kind: [(s, d) for s, d, k in edges if k == kind] for kind in EDGE_TYPES}
    branch = _reference_branches(n, edges)
    n_branches = len(set(branch))

    chain = nx.DiGraph()
    chain.add_nodes_from(range(n))
    chain.add_edges_from((s, d) for s, d, k in edges if k in ("inference", "elaboration") and s < d)
    branch_depths = [
        nx.dag_longest_path_length(chain.subgraph([v for v in range(n) if branch[v] == b])) for b in range(n_branches)
    ]

    everything = nx.DiGraph()
    everything.add_nodes_from(range(n))
    everything.add_edges_from((s, d) for s, d, _ in edges)
    on_cycle = sum(len(c) for c in nx.strongly_connected_components(everything) if len(c) > 1)

    joined_pairs = {frozenset((branch[s], branch[d])) for s, d in edges_of["synthesis"] if branch[s] != branch[d]}
    n_pairs = n_branches * (n_branches - 1) // 2

    first_exp = [v for v in range(n) if types[v] == "EXP"][:3]
    exp_distances = [_reference_cosine_distance(g.embeddings[a], g.embeddings[b]) for a, b in combinations(first_exp, 2)]

    positions = np.arange(n) / max(n - 1, 1)
    concreteness = np.asarray(g.concreteness, np.float64)
    constant = np.all(concreteness == concreteness[0])
    slope = 0.0 if n < 2 or constant else linregress(positions, concreteness).slope

    count = {t: types.count(t) for t in NODE_INDEX}
    n_edges = len(edges)
    critique_spans = [abs(s - d) for s, d in edges_of["critique"]]
    semantic_spread = _content_clusters(g.embeddings, np.asarray(g.node_type), cluster_distance, cluster_exact_max)
    explored = count["RSN"] + count["FAC"]
    values = {
        "branching_factor": len(edges_of["branch"]) / n,
        "idea_count": n_branches,
        "semantic_spread": semantic_spread,
        "initial_diversity": float(np.mean(exp_distances)) if exp_distances else 0.0,
        "max_chain_depth": nx.dag_longest_path_length(chain),
        "mean_branch_depth": float(np.mean(branch_depths)),
        "specificity_gradient": slope,
        "exploration_ratio": count["EXP"] / explored if explored else 0.0,
        "backtracking_rate": len(edges_of["critique"]) / n_edges if n_edges else 0.0,
        "cross_branch_connectivity": len(joined_pairs) / n_pairs if n_pairs else 0.0,
        "convergence_index": len(edges_of["synthesis"]) / n_edges if n_edges else 0.0,
        "recurrence_ratio": on_cycle / n,
        "revision_depth": float(np.mean(critique_spans)) if critique_spans else 0.0,
        "self_reflection_rate": count["MET"] / n,
        "critique_ratio": count["CRT"] / max(count["EXP"], 1),
        "hedging_density": float(np.mean(g.hedge)),
        "perspective_taking": float(np.mean(g.perspective)),
        "tokens_per_idea": int(np.sum(g.tokens, dtype=np.int64)) / max(semantic_spread, 1),
        "redundancy_ratio": count["RPT"] / n,
    }
    return _as_result(values)

