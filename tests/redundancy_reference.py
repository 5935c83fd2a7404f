"""The redundancy suite's SEP and Iso as they were before they were made linear (thinkprobe 0.1.0,
quadratic in trace length): the readable reference that tests/test_redundancy_linear.py keeps the
package's implementation equal to."""
from __future__ import annotations

import re
from collections import deque
from typing import Any, Iterable, Sequence

from thinkprobe.redundancy import SEP

FORWARD = frozenset({"inference", "elaboration", "branch"})
ROOT = -1


def _edge_tuple(e: Any) -> tuple[int, int, str, str]:
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
    """
    if n <= 0:
        return SEP((), (), target)
    target = min(max(int(target), 0), n - 1)
    parsed = [_edge_tuple(e) for e in edges]
    forward = {(s, d): k for s, d, k, _ in sorted(parsed) if k in FORWARD and 0 <= s < d < n}
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

    typed = dict(forward)  # (src, dst) -> type; the rewritten forward edges
    jumps: set[tuple[int, int]] = set()
    for j, i, kind, polarity in sorted(parsed, key=lambda e: (e[0], e[1])):
        if not (0 <= i < j < n):
            continue
        if kind == "repetition" and j != target:
            a, b = sorted((find(i), find(j)))
            if b != find(target):  # groups merge onto their earliest unit; the target is never merged away
                rep[b] = a
        elif kind == "critique" and polarity == "negate":
            leaving = [(s, d) for (s, d) in typed if i <= s <= j and d > j]
            reached = {d for _, d in leaving} | ({j + 1} if j + 1 < n else set())
            for edge in leaving:
                del typed[edge]
            for p in parents.get(i) or anchors.get(i) or {ROOT}:
                jumps.update((p, k) for k in reached)
        elif kind == "critique" and polarity == "affirm":
            for (s, d), k in [(e, t) for e, t in typed.items() if e[0] == j]:
                del typed[(s, d)]
                typed.setdefault((i, d), k)
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
    path_edges = mapped(typed) | mapped(jumps) | mapped(starts) | mapped(hung)
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
    for s, d in mapped(e for e, k in typed.items() if k == "inference"):
        premises.setdefault(d, set()).add(s)
    closed = set(path)
    stack = list(path)
    while stack:
        for p in premises.get(stack.pop(), ()):
            if p not in closed:
                closed.add(p)
                stack.append(p)
    return SEP(tuple(path), tuple(sorted(closed)), goal)



_CONTENT_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
_CONTENT_NUMBER = re.compile(r"(?<![\d.])\d{2,}(?:\.\d+)?|(?<![\d.])\d\.\d+")
_STOPWORDS = frozenset("""
about above after again against all also and any are because been before being below between both but can
could did does doing down during each few for from further had has have having her here hers herself him
himself his how into its itself just let lets like more most much must not now off once only other our ours
out over own same she should some such than that the their theirs them then there these they this those
through too under until very was were what when where which while who whom why will with would you your
yours yourself okay yes hmm wait well so maybe think know see get got make need one two use using way
""".split())


def _content_words(text: str) -> set[str]:
    words = set()
    for w in _CONTENT_WORD.findall(text.lower()):
        if w in _STOPWORDS:
            continue
        words.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    # a number of two or more digits is content too: "7 plus 5 is 12" is on the topic the other units' 12 is
    words.update(_CONTENT_NUMBER.findall(text))
    return words


def isolated_units(units: Sequence[dict], edges: Sequence[Any], question: str | None,
                   overlap: float = 0.2) -> list[int]:
    """Ids of off-topic units: only backbone edges and little word overlap with the question and
    with every other unit (module docstring).

    >>> units = [{"id": 0, "text": "Compute the train speed from distance and time."},
    ...          {"id": 1, "text": "My cat enjoys sunny windowsills."},
    ...          {"id": 2, "text": "The speed is distance over time."}]
    >>> isolated_units(units, [(0, 1, "inference"), (1, 2, "inference")], "How fast is the train?")
    [1]
    """
    n = len(units)
    f_in, f_out, touched = [0] * n, [0] * n, [False] * n
    index = {int(u["id"]): k for k, u in enumerate(units)}
    for e in edges:
        s, d, kind, _ = _edge_tuple(e)
        if s not in index or d not in index:
            continue
        if kind in FORWARD:
            f_out[index[s]] += 1
            f_in[index[d]] += 1
        else:
            touched[index[s]] = touched[index[d]] = True
    words = [_content_words(u["text"]) for u in units]
    question_words = _content_words(question or "")
    holders: dict[str, set[int]] = {}
    for k, ws in enumerate(words):
        for w in ws:
            holders.setdefault(w, set()).add(k)
    out = []
    for k, ws in enumerate(words):
        if not ws or touched[k] or f_in[k] > 1 or f_out[k] > 1:
            continue
        if len(ws & question_words) / len(ws) >= overlap:
            continue
        shared: dict[int, int] = {}
        for w in ws:
            for other in holders[w]:
                if other != k:
                    shared[other] = shared.get(other, 0) + 1
        if max(shared.values(), default=0) / len(ws) < overlap:
            out.append(int(units[k]["id"]))
    return out
