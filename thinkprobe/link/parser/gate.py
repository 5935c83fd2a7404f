"""The restatement gate: which units are RPT, decided from the type head's log-probabilities and the
unit's overlap with the trace's question (`question_overlap`). Most restatements people mark restate
the question, which the parser's network never reads; a multinomial logistic regression over the
head's 7 log-probabilities and the 4 question columns, fitted on the parser's held-out silver traces
(`thinkprobe.training.rpt_gate`), decides RPT, and the head keeps every other decision. A trace
without a question keeps the head's types.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ...records import ThoughtUnit
from ..protocol import TYPE_CLASSES
from .features import question_overlap

__all__ = ["RPT", "gate_inputs", "gate_says_rpt", "gated_types", "gated_trace_types"]

RPT = TYPE_CLASSES.index("RPT")


def gate_inputs(types: np.ndarray, question_cols: np.ndarray) -> np.ndarray:
    """(n, 11): the head's type log-probabilities (floored at 1e-6), then the question's columns."""
    return np.hstack([np.log(np.maximum(np.asarray(types, np.float64), 1e-6)), np.asarray(question_cols, np.float64)])


def gate_says_rpt(x: np.ndarray, gate: Mapping) -> np.ndarray:
    """Whether each unit is RPT: the regression's most probable class after the gate's offsets."""
    z = x @ np.asarray(gate["weights"], np.float64).T + np.asarray(gate["bias"], np.float64) + np.asarray(gate["offsets"], np.float64)
    return z.argmax(axis=1) == RPT


def gated_types(types: np.ndarray, question_cols: np.ndarray, gate: Mapping) -> np.ndarray:
    """The head's type probabilities with RPT decided by `gate` (a model folder's "rpt_gate":
    weights (7, 11), bias and offsets (7)): RPT certain where the gate says so and impossible
    elsewhere, so that `predict_types` with the model's offsets gives RPT exactly there and the
    head's order of the other types everywhere else; the first unit, never RPT, keeps the head's
    other types. Unchanged without a question (question_cols' last column 0).

    >>> w = np.zeros((7, 11)); w[6, 7] = 2.0  # RPT's score rises with the share of the question's words
    >>> gate = {"weights": w, "bias": np.zeros(7), "offsets": [0, 0, 0, 0, 0, 0, -1.0]}
    >>> p = np.array([[0.1, 0.6, 0.1, 0.1, 0.05, 0.0, 0.05]] * 4)
    >>> q = np.array([[0.9, 0.9, 1.0, 1.0], [0.9, 0.9, 1.0, 1.0], [0.1, 0.1, 0.0, 1.0], [0.9, 0.9, 1.0, 0.0]])
    >>> gated_types(p, q, gate)[:, 6].astype(float).round(2).tolist()  # the first unit; a restatement; not; no question
    [0.0, 1.0, 0.0, 0.05]
    """
    types = np.asarray(types, np.float32)
    asked = np.asarray(question_cols)[:, -1] > 0
    if not asked.any():
        return types
    says = gate_says_rpt(gate_inputs(types, question_cols), gate)
    says[0] = False  # the first unit is never RPT (`predict_types`): it keeps the head's other types
    out = types.copy()
    out[asked & says] = 1e-12
    out[asked, RPT] = np.where(says[asked], 1.0, 0.0)
    return out


def gated_trace_types(types: np.ndarray, units: Sequence[ThoughtUnit], question: str | None, gate: Mapping) -> np.ndarray:
    """`gated_types` of one trace, its question's columns computed from its units (`question_overlap`):
    what a parser folder with a gate does to its type head's output (the linker and dev_cv alike)."""
    return gated_types(types, question_overlap(units, question), gate)
