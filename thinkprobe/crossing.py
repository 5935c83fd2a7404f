"""How evenly a run's models are crossed with its domains (or groups). A one-way test of the models over
the whole run mixes in the domain when the models' domain mixes differ (a MiP-Overthinking run where QwQ
had no svamp traces headlined a model difference in Efficiency that vanished within each domain); the
report's headline and `thinkprobe select` say so from `model_crossing`.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import chi2_contingency

__all__ = ["CROSSING_V", "model_crossing", "factor_crossing"]


CROSSING_V = 0.3  # Cramér's V of model x domain (or group) from which models and domains are unevenly crossed


def model_crossing(rows: Sequence[Mapping], by: str, min_group: int = 2) -> dict:
    """How evenly the models are crossed with the domains (or groups): the empty cells (a model with no
    trace of a domain that other models have, both with `min_group` traces or more) and Cramér's V of
    the model x `by` table with its chi-square p. `uneven` when a cell is empty or V >= CROSSING_V: a
    one-way model test then mixes in the domain (and the other way round)."""
    return factor_crossing(rows, "model", by, min_group)


def factor_crossing(rows: Sequence[Mapping], first: str, second: str, min_group: int = 2) -> dict:
    """model_crossing for any two factors of the traces (domain and group: MiP's missing-premise
    questions all math); "models" counts the levels of `first`, "levels" those of `second`."""
    # "unknown" (no domain or group found) is no level a model could be crossed with
    kept = [(r.get(first), r.get(second)) for r in rows
            if r.get(first) not in (None, "unknown") and r.get(second) not in (None, "unknown")]
    models = sorted({m for m, _ in kept})
    levels = sorted({d for _, d in kept})
    out = {"models": len(models), "levels": len(levels), "empty_cells": [], "cramers_v": None, "p": None,
           "uneven": False}
    if len(models) < 2 or len(levels) < 2:
        return out
    table = np.zeros((len(models), len(levels)))
    for m, d in kept:
        table[models.index(m), levels.index(d)] += 1
    big_m, big_d = table.sum(axis=1) >= min_group, table.sum(axis=0) >= min_group
    out["empty_cells"] = [[models[i], levels[j]] for i in range(len(models)) for j in range(len(levels))
                          if table[i, j] == 0 and big_m[i] and big_d[j]]
    live = table[big_m][:, big_d]
    if live.shape[0] >= 2 and live.shape[1] >= 2 and (live.sum(axis=0) > 0).all() and (live.sum(axis=1) > 0).all():
        chi2, p, _, _ = chi2_contingency(live, correction=False)
        out["cramers_v"] = float(math.sqrt(chi2 / (live.sum() * (min(live.shape) - 1))))
        out["p"] = float(p)
    out["uneven"] = bool(out["empty_cells"]) or (out["cramers_v"] or 0.0) >= CROSSING_V
    return out
