"""Gold evaluation (spec section 7): score Thought Graphs, written as ReasoningFlow documents,
against human-annotated ReasoningFlow graphs of the same texts. Pure functions over documents:
`score(gold_docs, pred_docs)` returns a dict and `format_scores` prints it; `profile_docs` and
`baseline_docs` make the predictions (our pipeline on the gold texts; sentences chained).

Conventions (docs/accuracy.md says why):
- Only response nodes count. Context nodes (source "question") and every gold edge with a
  question-node endpoint are left out: our graphs have no question units.
- Boundaries are character offsets, moved forward over whitespace and think tags, so a boundary
  before or after the whitespace between two spans is the same boundary.
- A predicted unit is projected onto the gold node it overlaps most; edges between two units of
  the same gold node vanish, and pairs are matched undirected. Far pairs are > 1 node apart.
- Labels map to our types by spec section 7, except in documents ThinkProbe exported, whose
  labels are read through the export's own table (exact; see thinkprobe.export).
"""
from __future__ import annotations

import contextlib
import json
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .export import to_reasoningflow
from .reasoningflow import DISTANCE_BINS, GOLD_TYPES, THINK_TAG, edge_types, load_docs, node_types, response_nodes

__all__ = [
    "score", "format_scores", "profile_docs", "baseline_docs", "evaluate", "paired_bootstrap", "projection",
    "BOOTSTRAP_METRICS", "SILVER_LABEL_PRIORITY", "silver_labels",
]

def _content_position(text: str, pos: int) -> int:
    """`pos` moved forward over whitespace and think tags: where the next content starts."""
    n = len(text)
    while pos < n:
        if text[pos].isspace():
            pos += 1
            continue
        m = THINK_TAG.match(text, pos)
        if not m:
            break
        pos = m.end()
    return pos


def boundaries(doc: Mapping) -> set[int]:
    """Normalised internal boundaries: starts and ends of response nodes, whitespace skipped,
    without the start of the first content and the end of the text."""
    text = doc["raw_text"]["response"]
    first, last = _content_position(text, 0), len(text)
    out = set()
    for n in response_nodes(doc):
        for p in (n["start"], n["end"]):
            q = _content_position(text, p)
            if first < q < last:
                out.add(q)
    return out


def window_diff(text: str, gold: set[int], pred: set[int], n_gold_segments: int) -> float:
    """WindowDiff (Pevzner & Hearst 2002) over the non-whitespace characters of `text`, window k =
    half the mean gold segment length. 0 is perfect, 1 is wrong everywhere.

    >>> window_diff("aaaa bbbb", {5}, {5}, 2)
    0.0
    """
    content = np.array([not c.isspace() for c in text], dtype=bool)
    rank = np.concatenate([[0], np.cumsum(content)])  # rank[p] = content characters before p
    n = int(rank[-1])
    if n < 2:
        return 0.0
    k = max(1, int(round(n / max(1, n_gold_segments) / 2)))
    if n <= k:
        return 0.0

    def counts(bounds: set[int]) -> np.ndarray:
        marks = np.zeros(n + 1, dtype=np.int64)
        for p in bounds:
            r = int(rank[p])
            if 0 < r < n:
                marks[r] += 1
        return np.cumsum(marks)

    g, h = counts(gold), counts(pred)
    i = np.arange(n - k)
    return float(np.mean((g[i + k] - g[i]) != (h[i + k] - h[i])))


def _projection(gold_nodes: Sequence[Mapping], pred_nodes: Sequence[Mapping]) -> list[int | None]:
    """For each predicted node, the gold node it overlaps most (the earlier on ties), or None."""
    starts = np.array([n["start"] for n in gold_nodes])
    ends = np.array([n["end"] for n in gold_nodes])
    out: list[int | None] = []
    for p in pred_nodes:
        overlap = np.minimum(ends, p["end"]) - np.maximum(starts, p["start"])
        k = int(np.argmax(overlap)) if len(overlap) else 0
        out.append(k if len(overlap) and overlap[k] > 0 else None)
    return out


def projection(gold_nodes: Sequence[Mapping], pred_nodes: Sequence[Mapping]) -> list[int | None]:
    """For each predicted span ({"start", "end"}), the index of the gold node it overlaps most (the
    earlier on ties), or None: how predictions, and silver labels for training, are projected."""
    return _projection(gold_nodes, pred_nodes)


# When units of one pair carry several silver edges: the label kept (first wins).
SILVER_LABEL_PRIORITY = ("critique:negate", "critique:affirm", "critique:uncertain", "repetition", "synthesis",
                         "inference", "branch", "elaboration")


def silver_labels(doc: Mapping, units: Sequence) -> tuple[list[str | None], dict[tuple[int, int], int]]:
    """Training labels of our units from a silver ReasoningFlow document (scripts/train_linker.py and
    scripts/train_parser.py): silver nodes projected onto units (most overlap), node and edge
    labels mapped (spec section 7). Offsets: units of a ReasoningFlow trace point into
    raw_text.response, like the nodes. Returns per-unit types (None where no node) and
    {(i, j): PAIR_CLASSES index} for i < j.

    Synthesis (no ReasoningFlow label): a unit inferred from units of two or more other topical
    blocks draws them together when it concludes, says so (a synthesis cue), or combines three or
    more blocks; its inference edges from those blocks become synthesis."""
    from .link.protocol import PAIR_CLASSES

    nodes = response_nodes(doc)
    proj = projection(nodes, [{"start": u.start, "end": u.end} for u in units])
    types = node_types(doc)
    unit_types = [types[k] if k is not None else None for k in proj]
    units_of: dict[int, list[int]] = {}
    for u, k in enumerate(proj):
        if k is not None:
            units_of.setdefault(k, []).append(u)
    labels: dict[tuple[int, int], str] = {}
    for a, b, kind, polarity in edge_types(doc):
        name = f"critique:{polarity or 'uncertain'}" if kind == "critique" else kind
        for u in units_of.get(a, ()):
            for v in units_of.get(b, ()):
                if u == v:
                    continue
                pair = (min(u, v), max(u, v))
                old = labels.get(pair)
                if old is None or SILVER_LABEL_PRIORITY.index(name) < SILVER_LABEL_PRIORITY.index(old):
                    labels[pair] = name
    seg = [u.segment for u in units]
    incoming: dict[int, list[int]] = {}
    for (i, j), name in labels.items():
        if name == "inference" and seg[i] != seg[j]:
            incoming.setdefault(j, []).append(i)
    for j, sources in incoming.items():
        blocks = len({seg[i] for i in sources})
        if blocks >= 3 or (blocks == 2 and (unit_types[j] == "CON" or "synthesis" in units[j].cues)):
            for i in sources:
                labels[(i, j)] = "synthesis"
    return unit_types, {pair: PAIR_CLASSES.index(name) for pair, name in labels.items()}


def _cover(gold_nodes: Sequence[Mapping], pred_nodes: Sequence[Mapping]) -> list[int | None]:
    """For each gold node, the predicted node that overlaps it most, or None."""
    return _projection(pred_nodes, gold_nodes)


def _prf(tp: int, n_pred: int, n_gold: int) -> dict[str, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "tp": tp, "pred": n_pred, "gold": n_gold}


def _type_scores(gold: list[str], pred: list[str]) -> dict[str, Any]:
    labels = sorted(set(gold) | set(pred), key=lambda t: GOLD_TYPES.index(t) if t in GOLD_TYPES else 99)
    per_class = {}
    for t in labels:
        tp = sum(1 for g, p in zip(gold, pred) if g == t and p == t)
        per_class[t] = _prf(tp, pred.count(t), gold.count(t))
    acc = sum(g == p for g, p in zip(gold, pred)) / len(gold) if gold else 0.0
    macro = float(np.mean([per_class[t]["f1"] for t in labels])) if labels else 0.0
    confusion = {g: dict(Counter(p for gg, p in zip(gold, pred) if gg == g)) for g in labels}
    return {"accuracy": acc, "macro_f1": macro, "per_class": per_class, "confusion": confusion, "nodes": len(gold)}


def score(gold_docs: Sequence[Mapping], pred_docs: Sequence[Mapping]) -> dict[str, Any]:
    """Scores of `pred_docs` against `gold_docs`, matched by doc_id, over the documents in both.

    Returns boundary precision/recall/F1 (micro over boundaries) and WindowDiff (mean over
    documents); node-type accuracy and macro-F1 (each gold node takes the type of the predicted
    unit covering most of it); unlabelled and labelled edge F1 over gold-node pairs, and far-edge
    F1 (pairs more than one node apart); the recall of the candidate pairs on far gold edges when
    the predictions carry `thinkprobe_candidates`; and per-document details.
    """
    preds = {d["doc_id"]: d for d in pred_docs}
    shared = [g for g in gold_docs if g["doc_id"] in preds]
    missing = [g["doc_id"] for g in gold_docs if g["doc_id"] not in preds]
    b_tp = b_pred = b_gold = 0
    wds = []
    gold_t: list[str] = []
    pred_t: list[str] = []
    counts = {k: [0, 0, 0] for k in ("edges", "labelled", "far", "far_labelled")}
    pol = [0, 0]  # critique edges matched with their type, of which same polarity
    cand_far = [0, 0, 0]  # gold far pairs among candidates, gold far pairs, docs with candidates
    reach = [0, 0]  # gold pairs whose two nodes are the image of some predicted unit, gold pairs
    by_distance = {name: [0, 0, 0] for name, _, _ in DISTANCE_BINS}
    per_doc = []
    for gold in shared:
        pred = preds[gold["doc_id"]]
        text = gold["raw_text"]["response"]
        if pred["raw_text"]["response"] != text:
            raise ValueError(f"{gold['doc_id']}: predicted response text differs from the gold one")
        g_nodes, p_nodes = response_nodes(gold), response_nodes(pred)

        gb, pb = boundaries(gold), boundaries(pred)
        tp = len(gb & pb)
        b_tp, b_pred, b_gold = b_tp + tp, b_pred + len(pb), b_gold + len(gb)
        wd = window_diff(text, gb, pb, len(g_nodes))
        wds.append(wd)

        g_types, p_types = node_types(gold), node_types(pred)
        cover = _cover(g_nodes, p_nodes)
        gold_t += g_types
        pred_t += [p_types[c] if c is not None else "RSN" for c in cover]

        g_edges = {}
        for a, b, kind, polarity in edge_types(gold):
            g_edges.setdefault((min(a, b), max(a, b)), {})[kind] = polarity
        proj = _projection(g_nodes, p_nodes)
        p_edges: dict[tuple[int, int], dict[str, str]] = {}
        for a, b, kind, polarity in edge_types(pred):
            ga, gb_ = proj[a], proj[b]
            if ga is None or gb_ is None or ga == gb_:
                continue
            p_edges.setdefault((min(ga, gb_), max(ga, gb_)), {}).setdefault(kind, polarity)
        doc_counts = _edge_counts(g_edges, p_edges)
        for key, (tp_, np_, ng_) in doc_counts.items():
            c = counts[key]
            c[0], c[1], c[2] = c[0] + tp_, c[1] + np_, c[2] + ng_
        doc_bins = _distance_counts(g_edges, p_edges)
        for name, (tp_, np_, ng_) in doc_bins.items():
            c = by_distance[name]
            c[0], c[1], c[2] = c[0] + tp_, c[1] + np_, c[2] + ng_
        for pair, kinds in p_edges.items():
            if "critique" in kinds and "critique" in g_edges.get(pair, {}):
                pol[0] += 1
                pol[1] += kinds["critique"] == g_edges[pair]["critique"]

        images = {k for k in proj if k is not None}
        reach[0] += sum(1 for a, b in g_edges if a in images and b in images)
        reach[1] += len(g_edges)
        far_gold = {pair for pair in g_edges if pair[1] - pair[0] > 1}
        doc_cand = None
        if "thinkprobe_candidates" in pred:
            index = {n["id"]: k for k, n in enumerate(p_nodes)}
            cands = set()
            for a, b in pred["thinkprobe_candidates"]:
                ga, gb_ = proj[index[f"resp{a}"]], proj[index[f"resp{b}"]]
                if ga is not None and gb_ is not None and ga != gb_:
                    cands.add((min(ga, gb_), max(ga, gb_)))
            hit = len(far_gold & cands)
            cand_far[0], cand_far[1], cand_far[2] = cand_far[0] + hit, cand_far[1] + len(far_gold), cand_far[2] + 1
            doc_cand = hit / len(far_gold) if far_gold else None
        per_doc.append({
            "doc_id": gold["doc_id"], "gold_nodes": len(g_nodes), "pred_nodes": len(p_nodes),
            "boundary_f1": _prf(tp, len(pb), len(gb))["f1"], "window_diff": wd,
            "type_accuracy": float(np.mean([g == (p_types[c] if c is not None else "RSN") for g, c in zip(g_types, cover)])) if g_types else 0.0,
            "edge_f1": _prf(*doc_counts["edges"])["f1"], "far_edge_f1": _prf(*doc_counts["far"])["f1"],
            "far_candidate_recall": doc_cand,
            # counts for a paired bootstrap over documents (paired_bootstrap)
            "counts": {**{k: list(v) for k, v in doc_counts.items()}, **{f"dist {k}": list(v) for k, v in doc_bins.items()}},
            "gold_types": g_types, "pred_types": [p_types[c] if c is not None else "RSN" for c in cover],
        })

    return {
        "docs": len(shared),
        "missing_predictions": missing,
        "boundary": _prf(b_tp, b_pred, b_gold),
        "window_diff": float(np.mean(wds)) if wds else 0.0,
        "types": _type_scores(gold_t, pred_t),
        "edges": _prf(*counts["edges"]),
        "edges_labelled": _prf(*counts["labelled"]),
        "far_edges": _prf(*counts["far"]),
        "far_edges_labelled": _prf(*counts["far_labelled"]),
        "critique_polarity_accuracy": pol[1] / pol[0] if pol[0] else None,
        "far_candidate_recall": cand_far[0] / cand_far[1] if cand_far[2] and cand_far[1] else None,
        "edge_projection_ceiling": reach[0] / reach[1] if reach[1] else 0.0,
        "by_distance": {name: _prf(*c) for name, c in by_distance.items()},
        "per_doc": per_doc,
    }


def _edge_counts(gold: Mapping[tuple[int, int], Mapping[str, str]],
                 pred: Mapping[tuple[int, int], Mapping[str, str]]) -> dict[str, tuple[int, int, int]]:
    """(true positives, predicted, gold) for pairs, typed pairs, far pairs and typed far pairs."""
    def typed(edges):
        return {(pair, kind) for pair, kinds in edges.items() for kind in kinds}

    def far(items, key=lambda x: x):
        return {x for x in items if key(x)[1] - key(x)[0] > 1}

    gp, pp = set(gold), set(pred)
    gl, pl = typed(gold), typed(pred)
    return {
        "edges": (len(gp & pp), len(pp), len(gp)),
        "labelled": (len(gl & pl), len(pl), len(gl)),
        "far": (len(far(gp) & far(pp)), len(far(pp)), len(far(gp))),
        "far_labelled": (len(far(gl, lambda x: x[0]) & far(pl, lambda x: x[0])),
                         len(far(pl, lambda x: x[0])), len(far(gl, lambda x: x[0]))),
    }


def _distance_counts(gold: Mapping[tuple[int, int], object], pred: Mapping[tuple[int, int], object]
                     ) -> dict[str, tuple[int, int, int]]:
    """(true positives, predicted, gold) pairs per DISTANCE_BINS bin, distances in gold nodes (a
    predicted pair's distance is that of the gold nodes it is projected onto)."""
    out = {}
    for name, lo, hi in DISTANCE_BINS:
        g = {p for p in gold if lo <= p[1] - p[0] <= hi}
        q = {p for p in pred if lo <= p[1] - p[0] <= hi}
        out[name] = (len(g & q), len(q), len(g))
    return out


def _f1_of(docs: Sequence[Mapping], key: str, part: str = "f1") -> float:
    tp = sum(d["counts"][key][0] for d in docs)
    n_pred = sum(d["counts"][key][1] for d in docs)
    n_gold = sum(d["counts"][key][2] for d in docs)
    return _prf(tp, n_pred, n_gold)[part]


BOOTSTRAP_METRICS = {
    "edge F1": lambda docs: _f1_of(docs, "edges"),
    "labelled edge F1": lambda docs: _f1_of(docs, "labelled"),
    "far-edge F1": lambda docs: _f1_of(docs, "far"),
    "recall > 10 apart": lambda docs: _f1_of(docs, "dist >10", "recall"),
    "type macro-F1": lambda docs: _type_scores([t for d in docs for t in d["gold_types"]],
                                               [t for d in docs for t in d["pred_types"]])["macro_f1"],
}


def paired_bootstrap(a: Mapping[str, Any], b: Mapping[str, Any], samples: int = 2000, seed: int = 0,
                     level: float = 0.95) -> dict[str, dict[str, float]]:
    """Paired bootstrap over documents of the difference a - b of each BOOTSTRAP_METRICS score, for
    two `score` results on the same gold documents: documents are resampled with replacement (the
    same resample for both systems), the metric recomputed (micro over the resampled documents)
    and the central `level` interval of the differences reported, with the share of resamples
    where a does not beat b (a one-sided p-value)."""
    da = {d["doc_id"]: d for d in a["per_doc"]}
    db = {d["doc_id"]: d for d in b["per_doc"]}
    ids = sorted(set(da) & set(db))
    if not ids:
        raise ValueError("paired bootstrap: the two score results share no document")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(ids), size=(samples, len(ids)))
    out = {}
    for name, metric in BOOTSTRAP_METRICS.items():
        pa, pb = [da[k] for k in ids], [db[k] for k in ids]
        diffs = np.array([metric([pa[k] for k in row]) - metric([pb[k] for k in row]) for row in draws])
        lo, hi = np.quantile(diffs, [(1 - level) / 2, 1 - (1 - level) / 2])
        out[name] = {"a": metric(pa), "b": metric(pb), "diff": metric(pa) - metric(pb), "low": float(lo),
                     "high": float(hi), "p_not_better": float(np.mean(diffs <= 0))}
    return out


COLUMNS = (
    ("boundary P", lambda s: s["boundary"]["precision"]),
    ("boundary R", lambda s: s["boundary"]["recall"]),
    ("boundary F1", lambda s: s["boundary"]["f1"]),
    ("WindowDiff", lambda s: s["window_diff"]),
    ("type acc", lambda s: s["types"]["accuracy"]),
    ("type macro-F1", lambda s: s["types"]["macro_f1"]),
    ("edge F1", lambda s: s["edges"]["f1"]),
    ("labelled edge F1", lambda s: s["edges_labelled"]["f1"]),
    ("far-edge F1", lambda s: s["far_edges"]["f1"]),
    ("far cand. recall", lambda s: s["far_candidate_recall"]),
)


def format_scores(scores: Mapping[str, Any], title: str = "") -> str:
    """The scores as a plain-text table: one line per score, then per-type F1."""
    lines = [f"{title or 'gold evaluation'}: {scores['docs']} documents"
             + (f" ({len(scores['missing_predictions'])} gold documents without a prediction)" if scores["missing_predictions"] else "")]
    width = max(len(name) for name, _ in COLUMNS)
    for name, get in COLUMNS:
        value = get(scores)
        lines.append(f"  {name:<{width}}  {'-' if value is None else f'{value:.3f}'}")
    b, e, f = scores["boundary"], scores["edges"], scores["far_edges"]
    lines.append(f"  ({b['gold']} gold boundaries, {b['pred']} predicted; {e['gold']} gold edge pairs, {e['pred']} predicted, "
                 f"{f['gold']} of them far; {scores['types']['nodes']} gold nodes)")
    per = scores["types"]["per_class"]
    lines.append("  type F1: " + "  ".join(f"{t} {per[t]['f1']:.2f}" for t in per))
    if "by_distance" in scores:
        lines.append("  by gold distance (recall / precision): " + "  ".join(
            f"{name}: {v['recall']:.2f} / {v['precision']:.2f}" for name, v in scores["by_distance"].items()))
    if "indicator_agreement" in scores:
        from .agreement import format_agreement

        lines += ["", format_agreement(scores["indicator_agreement"])]
    return "\n".join(lines)


def table_row(scores: Mapping[str, Any]) -> list[str]:
    """The table's cells for one system (for docs/accuracy.md)."""
    return ["-" if (v := get(scores)) is None else f"{v:.3f}" for _, get in COLUMNS]


def baseline_docs(gold_docs: Iterable[Mapping]) -> list[dict]:
    """The trivial baseline: the response cut at sentence ends (., !, ? then whitespace) and line
    breaks, every unit reasoning, each unit inferred from the one before."""
    out = []
    for gold in gold_docs:
        text = gold["raw_text"]["response"]
        spans, pos = [], 0
        for m in re.finditer(r"(?<=[.!?])\s+|\n+", text):
            spans.append((pos, m.start()))
            pos = m.end()
        spans.append((pos, len(text)))
        nodes = []
        for s, e in spans:
            piece = text[s:e]
            s, e = s + len(piece) - len(piece.lstrip()), e - (len(piece) - len(piece.rstrip()))
            if s < e:
                nodes.append({"id": f"resp{len(nodes)}", "label": "reasoning", "text": text[s:e], "source": "response",
                              "start": s, "end": e, "thinkprobe_type": "RSN"})
        edges = [{"id": f"e{k}", "source_node_id": f"resp{k}", "dest_node_id": f"resp{k + 1}", "label": "reason:infer",
                  "thinkprobe_type": "inference", "polarity": None} for k in range(len(nodes) - 1)]
        out.append({"doc_id": gold["doc_id"], "raw_text": dict(gold["raw_text"]), "metadata": {"annotator": "baseline"},
                    "nodes": nodes, "edges": edges})
    return out


def profile_docs(gold: str | Path | Sequence[Mapping], cfg, encoder, linker, candidates=None, typer=None) -> list[dict]:
    """Our pipeline on the texts of the gold documents (a path, or the documents; reasoning read
    from raw_text.response, as for any ReasoningFlow file), as ReasoningFlow documents with offsets
    into raw_text.response.
    Each document also lists `thinkprobe_candidates`: the unit pairs (i, j) the linker considered,
    from `candidates(LinkInput) -> list[array of i per j]` (default: the linker's own `candidates`
    method, else `link.candidate_pairs` over the configured window and top-k).
    `typer` ((units, embeddings) -> retyped units, see `link.unit_typer`) replaces the
    cue types before linking; structural types are then settled from the edges as in the pipeline."""
    from .graph import build_graphs
    from .io import FieldMap, Source, iter_inputs
    from .link import LinkInput
    from .link.candidates import candidate_pairs
    from .records import InputError, graph_record

    traces = []
    source = Source("<gold>", FieldMap(), list(gold)) if not isinstance(gold, (str, Path)) else Source(str(gold), FieldMap())
    for item in iter_inputs([source]):
        if isinstance(item, InputError):
            raise ValueError(str(item))
        traces.append(item)
    if candidates is None:
        candidates = getattr(linker, "candidates", None)
    if candidates is None:
        p = cfg.link

        def candidates(item):
            return candidate_pairs(item.embeddings, p.window, p.top_k)

    docs = []
    for graph in build_graphs(traces, cfg, encoder, linker, typer=typer):
        if isinstance(graph, InputError):
            raise ValueError(str(graph))
        doc = to_reasoningflow(graph_record(graph, {}))
        item = LinkInput(graph.units, graph.embeddings, graph.trace.question)
        doc["thinkprobe_candidates"] = [[int(i), j] for j, row in enumerate(candidates(item)) for i in row]
        docs.append(doc)
    return docs


def marked_docs(model_dir: str | Path, *marks: str) -> set[str]:
    """The document ids a model folder's traces.txt marks with one of `marks` (its
    "doc_id<TAB>train|heldout|adapted" lines)."""
    listed = Path(model_dir) / "traces.txt"
    return {doc for doc, _, mark in (line.partition("\t") for line in listed.read_text(encoding="utf-8").splitlines())
            if mark in marks}


def seen_docs(docs: Sequence[Mapping], model_dir: str | Path | None) -> list[str]:
    """The ids of `docs` that a trained model saw: those its traces.txt marks `train` or `adapted`
    (a parser adapted to human annotations lists those documents). Scores on them are not a test."""
    seen = marked_docs(model_dir, "train", "adapted") if model_dir and (Path(model_dir) / "traces.txt").exists() else set()
    return [d["doc_id"] for d in docs if d["doc_id"] in seen]


def held_out_docs(docs: Sequence[Mapping], model_dir: str | Path) -> list[Mapping]:
    """The documents a trained model held out from its training: those its traces.txt marks
    `heldout` (the parser's "doc_id<TAB>train|heldout" lines)."""
    listed = Path(model_dir) / "traces.txt"
    if not listed.exists():
        raise ValueError(f"{model_dir} has no traces.txt naming its training and held-out documents")
    held = marked_docs(model_dir, "heldout")
    if not held:
        raise ValueError(f"{listed} marks no document as held out (lines 'doc_id<TAB>heldout')")
    return [d for d in docs if d["doc_id"] in held]


def evaluate(gold: str | Path, pred: str | Path | None = None, *, baseline: bool = False, linker: str | None = None,
             linker_model: str | None = None, types: str = "head", config_path: str | None = None,
             encoder_path: str | None = None, device: str = "auto", pred_out: str | Path | None = None,
             precision: str | None = None, heldout_of: str | Path | None = None, indicators: bool = True,
             cache_dir: str | None = None) -> dict[str, Any]:
    """What `thinkprobe eval-gold` computes: scores of `pred` (ReasoningFlow files), of the trivial
    baseline, or of our pipeline run on the gold texts (the default; `linker` and `types` as for
    `profile`), against `gold` (only the documents `heldout_of`'s model held out, when given); and,
    with `indicators`, the agreement of the indicators and profile of both graphs
    (thinkprobe.agreement; `cache_dir` keeps their embeddings). Without a `cache_dir`, our
    pipeline's embeddings are kept in a temporary one for the run that profiles its graphs again."""
    with contextlib.ExitStack() as temporary:
        gold_docs = load_docs(gold)
        if heldout_of is not None:
            gold_docs = held_out_docs(gold_docs, heldout_of)
        seen: list[str] = []  # gold documents the linker was trained or adapted on
        if pred is not None:
            pred_docs, system = load_docs(pred), f"predictions {pred}"
        elif baseline:
            pred_docs, system = baseline_docs(gold_docs), "trivial baseline (sentences, chained)"
        else:
            from .config import Config
            from .encoder import make_encoder
            from .link import load_linker, unit_typer

            cfg = Config.load(config_path)
            if cache_dir is None and indicators:  # kept for the run that profiles our graphs again
                cache_dir = temporary.enter_context(tempfile.TemporaryDirectory(prefix="thinkprobe-evalgold-"))
            encoder = make_encoder(cfg, {"path": encoder_path, "device": device, "precision": precision,
                                         "cache_dir": cache_dir})
            chosen = load_linker(linker, cfg, model_dir=linker_model, device=encoder.device)
            pred_docs = profile_docs(gold_docs, cfg, encoder, chosen, typer=unit_typer(chosen, types))
            system = f"thinkprobe (linker {chosen.name}, {types} types)"
            seen = seen_docs(gold_docs, getattr(chosen, "model_dir", None))
            if seen:
                system += (f" -- NOT A TEST: the linker was trained or adapted on {len(seen)} of these {len(gold_docs)}"
                           f" documents (its traces.txt); score another linker or the held-out ones")
        if pred_out:
            Path(pred_out).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in pred_docs),
                                      encoding="utf-8")
        result = score(gold_docs, pred_docs)
        result["system"] = system
        result["seen_by_linker"] = seen
        result["gold"] = str(gold) + (f" (held out by {heldout_of})" if heldout_of is not None else "")
        if indicators:
            from .agreement import indicator_agreement, profile_graphs

            common = {d["doc_id"] for d in gold_docs} & {d["doc_id"] for d in pred_docs}
            run = {"config": config_path, "encoder": encoder_path, "device": device, "precision": precision,
                   "cache_dir": cache_dir}
            gold_rows, gold_errors = profile_graphs([d for d in gold_docs if d["doc_id"] in common], **run)
            pred_rows, pred_errors = profile_graphs([d for d in pred_docs if d["doc_id"] in common], **run)
            result["indicator_agreement"] = {**indicator_agreement(gold_rows, pred_rows),
                                             "skipped": {"gold": gold_errors, "pred": pred_errors}}
        return result
