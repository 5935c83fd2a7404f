"""Redundancy suite (spec section 5): CoTJudger's metrics computed on a Thought Graph record
without a generative model. Reads the per-trace dict written to graphs.jsonl, finds candidate
answers (thinkprobe.answers), extracts the Shortest Effective Path (SEP) and writes
redundancy.csv and model_redundancy.csv next to it.

Columns, in CoTJudger's order (Table 1), one row per trace:
  Acc      1 / 0: the final answer is correct (empty when there is no gold answer, no tests and
           no correctness field)
  Tokens   tokens of all units (the run's tokenizer; whitespace words when a unit has no count)
  |V|      Thought Units;  |E| typed edges;  D = |E| / (|V| - 1) (0 for a single unit)
  Iso      isolated (off-topic) units, see below
  in_max / out_max   largest in- / out-degree over all typed edges
  Self     share of repetition edges;  Back  share of critique edges (0 without edges)
  L_eff    units in the SEP;  R = (|V| - L_eff) / |V|
  Unc      1 when more than two units hold a candidate answer
  DR / SV / EE / EB  transitions between successive candidate answers whose verdict is known:
           correct -> incorrect, correct -> correct, incorrect -> incorrect, incorrect -> correct
           (empty when correctness is unknown)

Verdicts. With a gold answer every candidate is compared with it (answers_match); a code
candidate of a record that carries tests ("tests" / "test_cases" / "test") is run against them in
the sandbox instead. With a correctness field and no gold, the final answer takes the label; an
earlier candidate with the same value as the final one takes it too, a different value is incorrect
when the final answer is correct and unknown otherwise. With neither, every verdict is unknown.
With a gold answer and no candidate at all the final answer counts as incorrect.

Iso. Graph records carry no embeddings, so "low similarity" is lexical: a unit is isolated when
(a) structurally it has nothing beyond the backbone: no backward edge at either end, at most one
forward edge in and one out; and (b) fewer than `iso_overlap` (20%) of its content words (3+
letters, stop words removed, plural "s" dropped) occur in the question, and fewer than that share
in every other unit. Units without content words are not counted.

SEP target: the first candidate judged correct; otherwise (wrong or unknown correctness) the final
conclusion: the final candidate, else the last CON unit, else the last unit.
"""
from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .outputs import MODEL_REDUNDANCY_TABLE, REDUNDANCY_COLUMNS, REDUNDANCY_METRICS, REDUNDANCY_TABLE, RUN_JSON, write_table
from .records import iter_graph_records
from .answers import Candidate, answers_match, final_candidate, find_candidates, run_code_tests, code_tests_of

__all__ = ["COLUMNS", "METRICS", "MODEL_COLUMNS", "RedundancyParams", "SEP", "shortest_effective_path",
           "isolated_units", "redundancy_row", "annotate_record", "table_row", "write_redundancy",
           "write_redundancy_tables", "model_means",
           "format_model_table"]

COLUMNS: tuple[str, ...] = REDUNDANCY_COLUMNS  # declared with the run's other tables (thinkprobe.outputs)
METRICS: tuple[str, ...] = REDUNDANCY_METRICS
MODEL_COLUMNS: tuple[str, ...] = MODEL_REDUNDANCY_TABLE.columns

FORWARD = frozenset({"inference", "elaboration", "branch"})
ROOT = -1  # the virtual root: the question


@dataclass(frozen=True)
class RedundancyParams:
    """The suite's thresholds; a run takes them from its config's `redundancy` section
    (configs/default.yaml), and these defaults equal that file's."""

    iso_overlap: float = 0.2  # a unit sharing less than this share of its content words is off-topic
    code_timeout_s: float = 5.0
    code_memory_mb: int = 512

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None) -> "RedundancyParams":
        """From a config (a Config, or run.json's "config"): its `redundancy` section over the defaults."""
        section = (getattr(cfg, "data", cfg) or {}).get("redundancy") or {}
        return cls(**{k: type(getattr(cls, k))(v) for k, v in section.items() if k in cls.__dataclass_fields__})


# ----------------------------------------------------------------------------- SEP


@dataclass(frozen=True)
class SEP:
    path: tuple[int, ...]  # shortest path from the virtual root to the target (root left out)
    units: tuple[int, ...]  # the path closed under inference premises, sorted: the SEP itself
    target: int


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

    The root has an edge to every unit without a forward parent. Breadth-first search from the
    root (neighbours in unit order, so ties go to earlier units) gives the path; the SEP adds,
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
    parents: dict[int, set[int]] = {}
    for s, d in forward:
        parents.setdefault(d, set()).add(s)

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
            for p in parents.get(i) or {ROOT}:
                jumps.update((p, k) for k in reached)
        elif kind == "critique" and polarity == "affirm":
            for (s, d), k in [(e, t) for e, t in typed.items() if e[0] == j]:
                del typed[(s, d)]
                typed.setdefault((i, d), k)
                jumps.update((p, d) for p in parents.get(j) or {ROOT})
    for (a, b), kind in forward.items():
        if kind == "branch":
            jumps.update((p, b) for p in parents.get(a) or {ROOT})

    def mapped(pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
        out = set()
        for s, d in pairs:
            ms, md = (ROOT if s == ROOT else find(s)), find(d)
            if ms < md:
                out.add((ms, md))
        return out

    starts = {(ROOT, u) for u in range(n) if u not in parents}
    path_edges = mapped(typed) | mapped(jumps) | mapped(starts)
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


# ----------------------------------------------------------------------------- Iso

_CONTENT_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
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
    return words


def isolated_units(units: Sequence[dict], edges: Sequence[Any], question: str | None,
                   overlap: float = RedundancyParams.iso_overlap) -> list[int]:
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


# ----------------------------------------------------------------------------- per trace


def _has_gold(record: dict) -> bool:
    gold = record.get("gold_answer")
    return gold is not None and str(gold).strip() != ""


def _verdicts(record: dict, candidates: Sequence[Candidate], final: Candidate | None,
              params: RedundancyParams) -> tuple[list[bool | None], list[str], bool | None]:
    """Verdict and reason per candidate, and the verdict on the final answer."""
    tests = code_tests_of(record)
    gold = record.get("gold_answer") if _has_gold(record) else None
    label = record.get("correct")
    verdicts: list[bool | None] = []
    reasons: list[str] = []
    for c in candidates:
        if c.kind == "code" and tests is not None:
            v, why = run_code_tests(c.value, tests, timeout_s=params.code_timeout_s, memory_mb=params.code_memory_mb)
        elif gold is not None:
            v = answers_match(c.value, gold)
            why = "matches the gold answer" if v else "differs from the gold answer"
        else:
            v, why = None, "no gold answer"
        verdicts.append(v)
        reasons.append(why)
    k_final = candidates.index(final) if final is not None else None

    if gold is None and not (tests is not None and final is not None and final.kind == "code") and isinstance(label, bool):
        # Correctness label only: it speaks for the final answer; same value, same verdict.
        for k, c in enumerate(candidates):
            if k == k_final or answers_match(c.value, final.value):
                verdicts[k], reasons[k] = label, "correctness label of the final answer"
            elif label:
                verdicts[k], reasons[k] = False, "differs from the final answer, labelled correct"
            else:
                verdicts[k], reasons[k] = None, "differs from the final answer, labelled incorrect"
        return verdicts, reasons, label

    if k_final is not None and verdicts[k_final] is not None:
        return verdicts, reasons, verdicts[k_final]
    if gold is not None or tests is not None:
        return verdicts, reasons, False if final is None else verdicts[k_final]
    return verdicts, reasons, label if isinstance(label, bool) else None


def _sep_target(units: Sequence[dict], candidates: Sequence[Candidate], verdicts: Sequence[bool | None],
                final: Candidate | None) -> int:
    for c, v in zip(candidates, verdicts):
        if v is True:
            return c.unit
    if final is not None:
        return final.unit
    conclusions = [int(u["id"]) for u in units if u.get("type") == "CON"]
    return conclusions[-1] if conclusions else int(units[-1]["id"])


def _transitions(verdicts: Sequence[bool | None]) -> dict[str, int]:
    counts = {"DR": 0, "SV": 0, "EE": 0, "EB": 0}
    names = {(True, False): "DR", (True, True): "SV", (False, False): "EE", (False, True): "EB"}
    for a, b in zip(verdicts, verdicts[1:]):
        if a is not None and b is not None:
            counts[names[(a, b)]] += 1
    return counts


def _positional(record: dict) -> tuple[list[dict], list[tuple[int, int, str, str]]]:
    """Units in text order with ids 0..n-1 (as the pipeline writes them) and edges on those ids;
    records built by hand with other ids are renumbered, edges to unknown units dropped."""
    units = sorted(record.get("units") or [], key=lambda u: int(u["id"]))
    edges = [_edge_tuple(e) for e in record.get("edges") or []]
    if [int(u["id"]) for u in units] == list(range(len(units))):
        return units, edges
    pos = {int(u["id"]): k for k, u in enumerate(units)}
    return ([{**u, "id": k} for k, u in enumerate(units)],
            [(pos[s], pos[d], k, p) for s, d, k, p in edges if s in pos and d in pos])


def _tokens(u: dict) -> int:
    t = u.get("tokens")
    return int(t) if isinstance(t, (int, float)) else len(str(u.get("text", "")).split())


def redundancy_row(record: dict, params: RedundancyParams = RedundancyParams()) -> tuple[dict, dict]:
    """The redundancy.csv row of one graph record (COLUMNS order) and the per-trace data to keep
    in graphs.jsonl: the SEP, its path, the candidates with verdicts, the normalised positions
    (0-1) of the units outside the SEP, and the verdict on the final answer."""
    units, edges = _positional(record)
    n = len(units)
    record = {**record, "units": units}
    candidates = find_candidates(record)
    final = final_candidate(candidates, record)
    verdicts, reasons, final_correct = _verdicts(record, candidates, final, params)
    known = final_correct is not None

    if n:
        sep = shortest_effective_path(n, edges, _sep_target(units, candidates, verdicts, final))
    else:
        sep = SEP((), (), -1)
    on_sep = set(sep.units)
    off_path = [round(u / (n - 1), 4) if n > 1 else 0.0 for u in range(n) if u not in on_sep]

    in_deg, out_deg = [0] * n, [0] * n
    for s, d, _, _ in edges:
        if 0 <= s < n and 0 <= d < n:
            out_deg[s] += 1
            in_deg[d] += 1
    m = len(edges)
    l_eff = len(sep.units)
    transitions = _transitions(verdicts) if known else dict.fromkeys(("DR", "SV", "EE", "EB"))
    row = {
        "trace_id": record.get("trace_id"), "model": record.get("model"), "domain": record.get("domain"),
        "Acc": int(final_correct) if known else None,
        "Tokens": sum(_tokens(u) for u in units),
        "|V|": n,
        "Iso": len(isolated_units(units, edges, record.get("question"), params.iso_overlap)),
        "|E|": m,
        "D": m / (n - 1) if n > 1 else 0.0,
        "in_max": max(in_deg, default=0),
        "out_max": max(out_deg, default=0),
        "Self": sum(k == "repetition" for _, _, k, _ in edges) / m if m else 0.0,
        "Back": sum(k == "critique" for _, _, k, _ in edges) / m if m else 0.0,
        "L_eff": l_eff,
        "R": (n - l_eff) / n if n else 0.0,
        "Unc": int(len({c.unit for c in candidates}) > 2),
        **transitions,
    }
    extra = {
        "sep": list(sep.units),
        "sep_path": list(sep.path),
        "sep_target": sep.target if n else None,
        "candidates": [{"unit": c.unit, "value": c.value, "kind": c.kind, "correct": v, "reason": why}
                       for c, v, why in zip(candidates, verdicts, reasons)],
        "final_answer": None if final is None else {"unit": final.unit, "value": final.value, "kind": final.kind},
        "final_correct": final_correct,
        "off_path_positions": off_path,
    }
    return row, extra


def annotate_record(record: dict, params: RedundancyParams = RedundancyParams()) -> dict:
    """The graph record with a "redundancy" key: the CSV row's metrics plus the SEP data, so
    graphs.jsonl keeps the path and write_redundancy need not recompute (or rerun code)."""
    row, extra = redundancy_row(record, params)
    return {**record, "redundancy": {"metrics": {k: row[k] for k in METRICS}, **extra}}


# ----------------------------------------------------------------------------- files


def model_means(rows: Sequence[dict]) -> list[dict]:
    """Per-model means of every metric (MODEL_COLUMNS); empty cells are left out of the means,
    and a column with no value for a model stays empty."""
    by_model: dict[str, list[dict]] = {}
    for r in rows:
        by_model.setdefault(str(r["model"]), []).append(r)
    out = []
    for model in sorted(by_model):
        group = by_model[model]
        mean = {"model": model, "n": len(group)}
        for c in METRICS:
            values = [float(r[c]) for r in group if r.get(c) not in ("", None)]
            mean[c] = sum(values) / len(values) if values else ""
        out.append(mean)
    return out


def write_redundancy(run_dir: str | Path, params: RedundancyParams | None = None) -> dict:
    """Read RUN_DIR/graphs.jsonl and write redundancy.csv (one row per trace) and
    model_redundancy.csv (means per model). Records annotated by annotate_record are not
    recomputed; the others use `params`, by default the run's own (its run.json config).
    Returns the paths, the trace count and the model rows."""
    run = Path(run_dir)
    if params is None:
        run_json = run / RUN_JSON
        config = json.loads(run_json.read_text(encoding="utf-8")).get("config") if run_json.exists() else None
        params = RedundancyParams.from_config(config)
    rows = [table_row(record, params) for record in iter_graph_records(run, missing_ok=True)]
    return write_redundancy_tables(run, rows)


def table_row(record: dict, params: RedundancyParams = RedundancyParams()) -> dict:
    """The redundancy.csv row of a graph record: its stored metrics, else computed afresh."""
    stored = record.get("redundancy")
    if isinstance(stored, dict) and isinstance(stored.get("metrics"), dict):
        return {"trace_id": record.get("trace_id"), "model": record.get("model"),
                "domain": record.get("domain"), **stored["metrics"]}
    return redundancy_row(record, params)[0]


def write_redundancy_tables(run: Path, rows: Sequence[dict]) -> dict:
    """redundancy.csv (with its Parquet twin) and model_redundancy.csv from the per-trace rows."""
    models = model_means(rows)
    write_table(run, REDUNDANCY_TABLE, rows)
    write_table(run, MODEL_REDUNDANCY_TABLE, models)
    return {"redundancy_csv": str(run / REDUNDANCY_TABLE.name), "model_redundancy_csv": str(run / MODEL_REDUNDANCY_TABLE.name),
            "traces": len(rows), "models": models}


def format_model_table(models: Sequence[dict]) -> str:
    """The model-level table as Markdown (for reports and docs)."""
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in MODEL_COLUMNS) + " |", "|" + "---|" * len(MODEL_COLUMNS)]
    for m in models:
        cells = []
        for c in MODEL_COLUMNS:
            v = m.get(c, "")
            cells.append(f"{v:.3g}" if isinstance(v, float) and c not in ("Tokens",) else
                         f"{v:.0f}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
