"""CoTJudger's analyses of a run, each a table that the report draws and people can re-plot:

- difficulty levels: a question answered (graded) by at least `MIN_MODELS` models gets a level
  from 1 (easiest) to 5 by the share of models that answered it correctly (the `level` column of
  redundancy.csv), and the redundancy metrics by model x level (redundancy_by_level.csv);
- where redundancy sits: the density of units outside the Shortest Effective Path over normalised
  position, per model (positions.csv);
- tokens of correct against incorrect traces (outcome_tokens.csv) and token-length distributions
  (lengths.csv) per model;
- answer transitions after the first candidate answer, DR / SV / EE / EB per model (transitions.csv);
- accuracy against the redundancy ratio R with the Pareto frontier (pareto.csv);
- node-type shares per domain and per model (roles.csv) and over normalised position (dynamics.csv).

`Analyses` takes graph records one at a time (the run's assembly streams them;
thinkprobe.redundancy.write_redundancy re-reads graphs.jsonl, as `thinkprobe report` does for a run
made before these analyses existed), so memory holds small per-trace rows and fixed-size
histograms. `write_analyses` writes every table, redundancy.csv with its levels and analyses.json
(the level rule, and why an analysis is missing). Same graph records in, same bytes out.
"""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..outputs import (ANALYSES_JSON, ANALYSIS_TABLES, DYNAMICS_TABLE, LENGTHS_TABLE, LEVEL_REDUNDANCY_TABLE,
                       OUTCOME_TOKENS_TABLE, PARETO_TABLE, POSITIONS_TABLE, REDUNDANCY_METRICS, REDUNDANCY_TABLE,
                       ROLES_TABLE, TRANSITIONS_TABLE, write_table)
from ..records import NODE_TYPES, source_id
from ..tables import write_atomic

__all__ = ["MIN_MODELS", "LEVELS", "POSITION_BINS", "DYNAMICS_BINS", "LEVEL_RULE", "Analyses", "question_key",
           "difficulty_level", "pareto_frontier", "write_analyses"]

MIN_MODELS = 3  # models that must have answered a question (graded) for it to get a level
LEVELS = 5
POSITION_BINS = 20
DYNAMICS_BINS = 10
TRANSITIONS = ("DR", "SV", "EE", "EB")

LEVEL_RULE = (
    f"A question is recognised by its text (whitespace collapsed), else by the record's own id within its "
    f"domain. Each model that answered it with a known verdict (Acc) contributes its accuracy on it (the share "
    f"of its graded traces of that question that are correct); the question's solve rate s is the mean over "
    f"those models. With at least {MIN_MODELS} such models its level is min(5, 1 + floor(5 * (1 - s))), "
    f"computed with exact fractions: s = 1 -> 1 (easiest), s = 0 -> 5 (hardest), a rate on a bin edge falls "
    f"into the harder level (s = 0.8 -> 2). With fewer models the level is null.")


def question_key(record: Mapping) -> str | None:
    """What identifies a record's question across models: its text, else (domain, own id)."""
    question = record.get("question")
    if isinstance(question, str) and question.strip():
        return "text:" + " ".join(question.split())
    own = source_id(record)
    return f"id:{record.get('domain')}:{own}" if own is not None else None


def difficulty_level(solve_rate: Fraction) -> int:
    """Level 1 (every model right) to 5 (none right); see LEVEL_RULE.

    >>> [difficulty_level(Fraction(k, 4)) for k in (4, 3, 2, 1, 0)]
    [1, 2, 3, 4, 5]
    >>> difficulty_level(Fraction(4, 5)), difficulty_level(Fraction(2, 3))
    (2, 2)
    """
    return min(LEVELS, 1 + math.floor(LEVELS * (1 - solve_rate)))


def pareto_frontier(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Which (accuracy, R) points no other point dominates (accuracy at least as high and R at
    least as low, one of them strictly).

    >>> pareto_frontier([(0.9, 0.5), (0.8, 0.3), (0.7, 0.6), (0.9, 0.5)])
    [True, True, False, True]
    """
    return [not any(a2 >= a and r2 <= r and (a2 > a or r2 < r) for a2, r2 in points) for a, r in points]


@dataclass
class _ModelHist:
    positions_all: np.ndarray = field(default_factory=lambda: np.zeros(POSITION_BINS, np.int64))
    positions_off: np.ndarray = field(default_factory=lambda: np.zeros(POSITION_BINS, np.int64))
    dynamics: np.ndarray = field(default_factory=lambda: np.zeros((DYNAMICS_BINS, len(NODE_TYPES)), np.int64))
    roles: np.ndarray = field(default_factory=lambda: np.zeros(len(NODE_TYPES), np.int64))
    traces: int = 0


def _bin(position: np.ndarray, bins: int) -> np.ndarray:
    return np.minimum((position * bins).astype(np.int64), bins - 1)


def _mean(values: Iterable[float]) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return float(sum(values) / len(values)) if values else None


def _quantiles(values: Sequence[float], qs: Sequence[float]) -> list[float]:
    return [float(np.quantile(values, q, method="linear")) for q in qs]


class Analyses:
    """Accumulates a run's graph records (with their redundancy.csv rows) and writes the analyses."""

    def __init__(self) -> None:
        self.rows: list[dict] = []  # redundancy.csv rows, in run order
        self.keys: list[str | None] = []
        self.by_model: dict[str, _ModelHist] = defaultdict(_ModelHist)
        self.by_domain: dict[str, _ModelHist] = defaultdict(_ModelHist)

    def add(self, record: Mapping, row: Mapping) -> None:
        self.rows.append(dict(row))
        self.keys.append(question_key(record))
        units = record.get("units") or []
        n = len(units)
        model, domain = self.by_model[record["model"]], self.by_domain[record["domain"]]
        model.traces += 1
        domain.traces += 1
        if not n:
            return
        types = np.array([NODE_TYPES.index(u["type"]) if u.get("type") in NODE_TYPES else 0 for u in units], np.int64)
        counts = np.bincount(types, minlength=len(NODE_TYPES))
        model.roles += counts
        domain.roles += counts
        position = np.arange(n, dtype=np.float64) / (n - 1) if n > 1 else np.zeros(1)
        model.positions_all += np.bincount(_bin(position, POSITION_BINS), minlength=POSITION_BINS)
        off = (record.get("redundancy") or {}).get("off_path_positions")
        if off:
            model.positions_off += np.bincount(_bin(np.asarray(off, np.float64), POSITION_BINS),
                                               minlength=POSITION_BINS)
        np.add.at(model.dynamics, (_bin(position, DYNAMICS_BINS), types), 1)

    # ------------------------------------------------------------------------- levels

    def levels(self) -> tuple[list[int | None], dict]:
        """The level of each row's question, and a summary (questions per level, models per question)."""
        verdicts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for row, key in zip(self.rows, self.keys):
            if key is not None and row.get("Acc") is not None:
                verdicts[key][row["model"]].append(int(row["Acc"]))
        level_of: dict[str, int] = {}
        for key, models in verdicts.items():
            if len(models) >= MIN_MODELS:
                rate = sum((Fraction(sum(v), len(v)) for v in models.values()), Fraction(0)) / len(models)
                level_of[key] = difficulty_level(rate)
        per_level = Counter(level_of.values())
        summary = {
            "rule": LEVEL_RULE, "min_models": MIN_MODELS,
            "questions_graded": len(verdicts),
            "questions_with_level": len(level_of),
            "questions_per_level": {str(k): per_level.get(k, 0) for k in range(1, LEVELS + 1)},
            "largest_models_per_question": max((len(m) for m in verdicts.values()), default=0),
        }
        return [level_of.get(k) if k is not None else None for k in self.keys], summary

    # ------------------------------------------------------------------------- the tables

    def tables(self) -> tuple[dict[str, list[dict]], dict]:
        """Every analysis table's rows and analyses.json (level rule, why an analysis is missing)."""
        levels, level_summary = self.levels()
        rows = [{**r, "level": lv} for r, lv in zip(self.rows, levels)]
        models = sorted(self.by_model)
        by_model_rows: dict[str, list[dict]] = defaultdict(list)
        for r in rows:
            by_model_rows[r["model"]].append(r)
        graded = [r for r in rows if r.get("Acc") is not None]
        out: dict[str, list[dict]] = {REDUNDANCY_TABLE.name: rows}

        # difficulty levels
        cells: dict[tuple[str, int], list[dict]] = defaultdict(list)
        cell_questions: dict[tuple[str, int], set] = defaultdict(set)
        for r, key in zip(rows, self.keys):
            if r["level"] is not None:
                cells[(r["model"], r["level"])].append(r)
                cell_questions[(r["model"], r["level"])].add(key)
        out[LEVEL_REDUNDANCY_TABLE.name] = [
            {"model": m, "level": lv, "n": len(members), "questions": len(cell_questions[(m, lv)]),
             **{c: _mean(x.get(c) for x in members) for c in REDUNDANCY_METRICS}}
            for (m, lv), members in sorted(cells.items())]

        # positions of the units outside the SEP
        pos_rows = []
        for m in models:
            h = self.by_model[m]
            total_off = int(h.positions_off.sum())
            for b in range(POSITION_BINS):
                units, off = int(h.positions_all[b]), int(h.positions_off[b])
                pos_rows.append({"model": m, "bin": b, "start": b / POSITION_BINS, "end": (b + 1) / POSITION_BINS,
                                 "units": units, "off_sep": off,
                                 "density": off / total_off * POSITION_BINS if total_off else None,
                                 "off_share": off / units if units else None})
        out[POSITIONS_TABLE.name] = pos_rows

        # tokens by outcome, token lengths
        outcome_rows = []
        for m in models:
            for outcome, acc in (("correct", 1), ("incorrect", 0)):
                tokens = [float(r["Tokens"]) for r in by_model_rows[m] if r.get("Acc") == acc]
                if tokens:
                    q1, median, q3 = _quantiles(tokens, (0.25, 0.5, 0.75))
                    outcome_rows.append({"model": m, "outcome": outcome, "n": len(tokens), "mean": _mean(tokens),
                                         "median": median, "q1": q1, "q3": q3})
        out[OUTCOME_TOKENS_TABLE.name] = outcome_rows
        length_rows = []
        for m in models:
            tokens = [float(r["Tokens"]) for r in by_model_rows[m]]
            if tokens:
                qs = _quantiles(tokens, (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0))
                length_rows.append({"model": m, "n": len(tokens), "mean": _mean(tokens),
                                    **dict(zip(("min", "p10", "q1", "median", "q3", "p90", "max"), qs))})
        out[LENGTHS_TABLE.name] = length_rows

        # answer transitions
        trans_rows = []
        for m in models:
            known = [r for r in by_model_rows[m] if all(r.get(t) is not None for t in TRANSITIONS)]
            if known:
                trans_rows.append({"model": m, "n": len(known), **{t: _mean(r[t] for r in known) for t in TRANSITIONS}})
        out[TRANSITIONS_TABLE.name] = trans_rows

        # accuracy against R, the Pareto frontier
        pareto = []
        for m in models:
            members = [r for r in by_model_rows[m] if r.get("Acc") is not None]
            if members:
                pareto.append({"model": m, "n": len(members), "Acc": _mean(r["Acc"] for r in members),
                               "R": _mean(r.get("R") for r in members)})
        front = pareto_frontier([(p["Acc"], p["R"] if p["R"] is not None else math.inf) for p in pareto])
        for p, f in zip(pareto, front):
            p["frontier"] = int(f)
        out[PARETO_TABLE.name] = pareto

        # node-type shares per domain and per model, and over the course of a trace
        role_rows = []
        for by, groups in (("domain", self.by_domain), ("model", self.by_model)):
            for g in sorted(groups):
                h = groups[g]
                total = int(h.roles.sum())
                role_rows.extend({"by": by, "name": g, "type": t, "units": int(h.roles[i]),
                                  "share": int(h.roles[i]) / total if total else None, "traces": h.traces}
                                 for i, t in enumerate(NODE_TYPES))
        out[ROLES_TABLE.name] = role_rows
        dyn_rows = []
        for m in models:
            h = self.by_model[m]
            for b in range(DYNAMICS_BINS):
                total = int(h.dynamics[b].sum())
                dyn_rows.extend({"model": m, "bin": b, "start": b / DYNAMICS_BINS, "end": (b + 1) / DYNAMICS_BINS,
                                 "type": t, "units": int(h.dynamics[b, i]),
                                 "share": int(h.dynamics[b, i]) / total if total else None}
                                for i, t in enumerate(NODE_TYPES))
        out[DYNAMICS_TABLE.name] = dyn_rows

        missing = {}
        if not out[LEVEL_REDUNDANCY_TABLE.name]:
            missing["difficulty"] = (
                "no question was answered with a known verdict by at least "
                f"{MIN_MODELS} models" + (" (the run has no gold answers or correctness labels)" if not graded else
                                          f" (at most {level_summary['largest_models_per_question']} per question)"))
        if not any(r["off_sep"] for r in pos_rows):
            missing["positions"] = "no trace has units outside its Shortest Effective Path"
        if not outcome_rows:
            missing["outcome_tokens"] = "no trace is graded (no gold answers or correctness labels)"
        elif len({r["outcome"] for r in outcome_rows}) < 2:
            missing["outcome_tokens"] = f"every graded trace is {outcome_rows[0]['outcome']}: nothing to compare"
        if not trans_rows:
            missing["transitions"] = "no trace has candidate answers with known verdicts (no gold answers or labels)"
        if not pareto:
            missing["pareto"] = "no trace is graded (no gold answers or correctness labels)"
        elif len(pareto) < 2:
            missing["pareto"] = "a single model: a frontier needs at least two"
        if len(models) < 2 and len(self.by_domain) < 2:
            missing["roles"] = "a single model and a single domain: nothing to compare"
        info = {"levels": level_summary, "missing": missing,
                "bins": {"positions": POSITION_BINS, "dynamics": DYNAMICS_BINS}}
        return out, info


def write_analyses(run_dir: str | Path, analyses: Analyses) -> dict:
    """redundancy.csv (with levels), every analysis table and analyses.json; returns analyses.json's data.
    model_redundancy.csv is written beside them by thinkprobe.redundancy.tables.write_redundancy_tables."""
    run_dir = Path(run_dir)
    out, info = analyses.tables()
    tables = {t.name: t for t in (REDUNDANCY_TABLE, *ANALYSIS_TABLES)}
    for name, rows in out.items():
        write_table(run_dir, tables[name], rows)
    write_atomic(run_dir / ANALYSES_JSON, json.dumps(info, indent=2, sort_keys=True) + "\n")
    return info
