"""The Shortest Effective Path (SEP) of a Thought Graph: CoTJudger's shortcut rules as graph
operations on the typed edges, then a breadth-first search from the virtual root (the question)
closed under inference premises. The redundancy row's L_eff and R are read from it.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from ..records import FORWARD_EDGES

__all__ = ["SEP", "shortest_effective_path", "edge_tuple"]

ROOT = -1  # the virtual root: the question


@dataclass(frozen=True)
class SEP:
    path: tuple[int, ...]  # shortest path from the virtual root to the target (root left out)
    units: tuple[int, ...]  # the path closed under inference premises, sorted: the SEP itself
    target: int


def edge_tuple(e: Any) -> tuple[int, int, str, str]:
    if isinstance(e, dict):
        return int(e["src"]), int(e["dst"]), str(e["type"]), str(e.get("polarity") or "")
    src, dst, kind, *rest = e
    return int(src), int(dst), str(kind), str(rest[0] if rest else "")


def shortest_effective_path(n: int, edges: Iterable[Any], target: int) -> SEP:
    """The SEP of a Thought Graph: the shortest path from a virtual root to `target` over the
    forward edges rewritten by CoTJudger's shortcut rules, closed under inference premises.

    `edges` are dicts as in graphs.jsonl ({"src", "dst", "type", "polarity"}) or tuples
    (src, dst, type[, polarity]). The rules, as graph operations (all read the original edges):

    1. Negating critique j -> i (i < j): the span i..j is refuted. Forward edges leaving the span
       (from a unit in i..j to a unit after j) are cut, so no later unit rests on it; jump edges
       go from each forward parent of i (the root when i has none) to j + 1 and to every unit
       those cut edges reached. The path can jump the detour; the units after it lose it as premise.
    2. Affirming critique j -> i: the check j is skipped. Its forward out-edges j -> k are cut and
       replaced by i -> k (same type: k builds on the statement that was confirmed) and by jump
       edges from each forward parent of j to k.
    3. Branch a -> b: jump edges from each forward parent of a (the root when none) to b: the
       path can go straight to the alternative without the direction it replaces.
    4. Repetition j -> i: j is contracted onto its source i (unless j is the target; chains of
       restatements merge onto their earliest unit): edges into and out of j become edges of i;
       those that would point backwards are dropped.

    A synthesis j -> i counts as an inference i -> j (j draws on i: a premise). A unit without a
    forward parent hangs on the units its critique or repetition edges point to: path edges from
    them (never premises), and they stand in for its forward parents in rules 1-3. The root has an
    edge to every unit with neither (the first unit, a unit that builds on the question alone).
    Breadth-first search from the root (neighbours in unit order, so ties go to earlier units)
    gives the path; the SEP adds,
    until nothing changes, every unit with an inference edge (after the rewriting) into a SEP unit.
    Jump edges carry the path only and are never premises. When the target cannot be reached
    the path is the target alone.

    A refuted detour is jumped and a repetition collapses onto its source:

    >>> edges = [(0, 1, "inference"), (1, 2, "inference"), (2, 3, "inference"), (3, 4, "inference"),
    ...          (4, 5, "inference"), (2, 1, "critique", "negate"), (4, 3, "repetition")]
    >>> sep = shortest_effective_path(6, edges, target=5)
    >>> sep.path, sep.units
    ((0, 3, 5), (0, 3, 5))

    An answer that synthesises two results rests on both; one that repeats a result hangs on it:

    >>> edges = [(0, 1, "inference"), (2, 3, "inference"), (4, 1, "synthesis"), (4, 3, "synthesis"), (5, 4, "repetition")]
    >>> shortest_effective_path(6, edges, target=4).units, shortest_effective_path(6, edges, target=5).path
    ((0, 1, 2, 3, 4), (0, 1, 4, 5))
    """
    if n <= 0:
        return SEP((), (), target)
    target = min(max(int(target), 0), n - 1)
    parsed = [edge_tuple(e) for e in edges]
    forward = {(s, d): k for s, d, k, _ in sorted(parsed) if k in FORWARD_EDGES and 0 <= s < d < n}
    for j, i, kind, _ in sorted(parsed):  # a synthesis j -> i draws on i: i is its premise, as inference i -> j
        if kind == "synthesis" and 0 <= i < j < n:
            forward.setdefault((i, j), "inference")
    parents: dict[int, set[int]] = {}
    for s, d in forward:
        parents.setdefault(d, set()).add(s)
    # a unit with no forward parent hangs on the units its critique or repetition edges point to (path only)
    anchors: dict[int, set[int]] = {}
    for j, i, kind, _ in parsed:
        if kind in ("critique", "repetition") and 0 <= i < j < n and j not in parents:
            anchors.setdefault(j, set()).add(i)

    rep = list(range(n))

    def find(x: int) -> int:
        while rep[x] != x:
            rep[x] = rep[rep[x]]
            x = rep[x]
        return x

    typed = _ForwardEdges(n, forward)  # the rewritten forward edges
    jumps: set[tuple[int, int]] = set()
    for j, i, kind, polarity in sorted(parsed, key=lambda e: (e[0], e[1])):
        if not (0 <= i < j < n):
            continue
        if kind == "repetition" and j != target:
            a, b = sorted((find(i), find(j)))
            if b != find(target):  # groups merge onto their earliest unit; the target is never merged away
                rep[b] = a
        elif kind == "critique" and polarity == "negate":
            reached = set(typed.cut_leaving(i, j)) | ({j + 1} if j + 1 < n else set())
            for p in parents.get(i) or anchors.get(i) or {ROOT}:
                jumps.update((p, k) for k in reached)
        elif kind == "critique" and polarity == "affirm":
            for d, k in typed.pop_source(j):
                typed.add(i, d, k)
                jumps.update((p, d) for p in parents.get(j) or anchors.get(j) or {ROOT})
    for (a, b), kind in forward.items():
        if kind == "branch":
            jumps.update((p, b) for p in parents.get(a) or anchors.get(a) or {ROOT})

    def mapped(pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
        out = set()
        for s, d in pairs:
            ms, md = (ROOT if s == ROOT else find(s)), find(d)
            if ms < md:
                out.add((ms, md))
        return out

    starts = {(ROOT, u) for u in range(n) if u not in parents and u not in anchors}
    hung = {(i, j) for j, held in anchors.items() for i in held}
    path_edges = mapped(typed.pairs()) | mapped(jumps) | mapped(starts) | mapped(hung)
    succ: dict[int, list[int]] = {}
    for s, d in sorted(path_edges):
        succ.setdefault(s, []).append(d)
    goal = find(target)
    back = {ROOT: ROOT}
    queue = deque([ROOT])
    while queue and goal not in back:
        u = queue.popleft()
        for v in succ.get(u, ()):
            if v not in back:
                back[v] = u
                queue.append(v)
    if goal in back:
        path = [goal]
        while back[path[-1]] != ROOT:
            path.append(back[path[-1]])
        path.reverse()
    else:
        path = [goal]

    premises: dict[int, set[int]] = {}
    for s, d in mapped(typed.pairs("inference")):
        premises.setdefault(d, set()).add(s)
    closed = set(path)
    stack = list(path)
    while stack:
        for p in premises.get(stack.pop(), ()):
            if p not in closed:
                closed.add(p)
                stack.append(p)
    return SEP(tuple(path), tuple(sorted(closed)), goal)


class _ForwardEdges:
    """The forward edges being rewritten, per source unit, with a max-segment tree over the largest
    destination of each source: the edges leaving a refuted span i..j (source in i..j, destination
    after j) are found in O(log n) each, so the rules cost O((n + m) log n), not O(n * m)."""

    def __init__(self, n: int, edges: dict[tuple[int, int], str]):
        self.out: list[dict[int, str]] = [{} for _ in range(n)]
        self.size = 1
        while self.size < max(n, 1):
            self.size *= 2
        self.tree = [-1] * (2 * self.size)  # max destination under each node; -1: no edge
        for (s, d), kind in edges.items():
            self.out[s][d] = kind
        for s, dst in enumerate(self.out):
            self.tree[self.size + s] = max(dst, default=-1)
        for v in range(self.size - 1, 0, -1):
            self.tree[v] = max(self.tree[2 * v], self.tree[2 * v + 1])

    def _update(self, s: int) -> None:
        v = self.size + s
        self.tree[v] = max(self.out[s], default=-1)
        v //= 2
        while v:
            self.tree[v] = max(self.tree[2 * v], self.tree[2 * v + 1])
            v //= 2

    def add(self, s: int, d: int, kind: str) -> None:
        """The edge s -> d of `kind`, unless s -> d is there already (it keeps its type)."""
        if d not in self.out[s]:
            self.out[s][d] = kind
            if d > self.tree[self.size + s]:
                self._update(s)

    def pop_source(self, s: int) -> list[tuple[int, str]]:
        """Remove and return the edges leaving s, as (destination, type)."""
        edges = list(self.out[s].items())
        if edges:
            self.out[s] = {}
            self._update(s)
        return edges

    def cut_leaving(self, i: int, j: int) -> list[int]:
        """Remove the edges from a source in i..j to a destination after j; their destinations."""
        reached: list[int] = []
        stack = [(1, 0, self.size - 1)]
        while stack:
            v, lo, hi = stack.pop()
            if hi < i or lo > j or self.tree[v] <= j:
                continue
            if lo == hi:
                out = self.out[lo]
                cut = [d for d in out if d > j]
                for d in cut:
                    del out[d]
                reached += cut
                self._update(lo)
                continue
            mid = (lo + hi) // 2
            stack += [(2 * v, lo, mid), (2 * v + 1, mid + 1, hi)]
        return reached

    def pairs(self, kind: str | None = None) -> Iterator[tuple[int, int]]:
        """Every (source, destination), or those of one type."""
        for s, dst in enumerate(self.out):
            for d, k in dst.items():
                if kind is None or k == kind:
                    yield s, d
