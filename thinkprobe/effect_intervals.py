"""Percentile bootstrap intervals of the chance-corrected eps2 and of the model/domain ratio (stats.json's
`eps2_corrected_ci` and each ratio's `ci`).

Traces are resampled with replacement over the whole run, `bootstrap_resamples` times from one
generator seeded with `bootstrap_seed` (the stats section's settings, as the profile intervals), and the
same draws serve every variable and every grouping: a resample's eps2(model) and eps2(domain) are of the
same traces, so the ratio's interval is the ratio's own. In each resample a test keeps the traces the
point estimate's test uses (a label, a finite value, a category of at least min_group traces in the run)
and a category drawn no trace of drops out of k. The length-controlled values are the residuals of the
fit over the whole run, resampled as they are (the line is not fitted again in each resample, so the
interval leaves out the fit's own uncertainty: on tts_s16, refitting in each resample moved the ends of
the Depth and Efficiency intervals by at most 0.004, and of Breadth's, whose variance log tokens explains
most (38%), by 0.008).
The percentile interval leans high by up to one chance level, (k - 1) / (n - 1): on tts_s16 (320 traces)
the resamples' mean corrected eps2 was 0.006 above the estimate by model (chance 0.009), 0.002-0.003 by
domain (chance 0.003); it is reported as it is, not shifted.

How: a resample is the count of draws of each trace, so its mid-ranks come from the run's values sorted
once per variable and test (a running sum of the counts of each distinct value), not from sorting the
resample; H with the tie correction 1 - sum(t^3 - t) / (n^3 - n), t the draws of one value (a trace drawn
twice is a tie with itself, as scipy.stats.kruskal sees it). The sums run in a numba kernel (_rank_sums),
resamples in blocks of at most BLOCK_CELLS counts. Not scipy (timed on this project's 2-core machine):
scipy.stats.kruskal per resample and test is one Python call each, 0.43 ms at 320 traces and 3.6 ms at
20,000, so 62 s and 510 s for the 144 tests x 1000 resamples; scipy.stats.bootstrap over the categories as
samples took 0.39 s per test at 320 traces and resamples within each category (sizes fixed, and model and
domain could not share draws); scipy.stats.rankdata(axis=1) on the resampled values sorts every row
again, 0.9 s per 200 resamples of 20,000 traces, about 200 s for a run's 48 rankings. Here: about 3 s at
20,000 traces, 13 s at 100,000. tests/test_stats.py checks the result against scipy.stats.kruskal on the
same resamples.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numba
import numpy as np

from .statuses import TESTED

__all__ = ["BLOCK_CELLS", "METHOD", "CSV_FIELDS", "label_codes", "test_traces", "resample_counts", "Ranking", "ranking",
           "eps2_corrected", "corrected_eps2_draws", "plan_test", "bootstrap_draws",
           "percentile_interval", "floored_ratio", "ratio_interval", "add_effect_intervals"]

# resamples x traces handled at once (16 MB of float32 counts, and their copy in a variable's order). At
# 1,000,000 the resamples' loops got too short: at 100,000 traces the kernel and its copies took 27 s, here 13 s.
BLOCK_CELLS = 4_000_000

METHOD = ("percentile bootstrap over traces (bootstrap_resamples resamples with replacement of the whole run, "
          "generator seeded with bootstrap_seed, ci_level), the same draws for every variable and grouping; each "
          "resample's test keeps the traces of the point estimate's test, a category drawn no trace of leaves k; "
          "length-controlled: the whole-run residuals resampled, the line not fitted again; ratio: "
          "max(model, ratio_floor) / max(domain, ratio_floor) in each resample (1 when both are under the floor), "
          "ci_floored the share of resamples with each side under the floor; no interval for a test not run or a "
          "ratio the point estimate has none of")

# stats.csv's interval columns: (column, where its value sits in a variable's stats.json entry, type)
CSV_FIELDS: list[tuple[str, tuple, str]] = (
    [(f"eps2_corrected_ci_{end}_{by}", (by, "eps2_corrected_ci", i), "float")
     for by in ("model", "domain", "group") for i, end in enumerate(("low", "high"))]
    + [(f"ratio_corrected_ci_{end}", ("ratio_corrected", "ci", i), "float") for i, end in enumerate(("low", "high"))]
    + [(f"length_eps2_corrected_ci_{end}_{by}", ("length_controlled", by, "eps2_corrected_ci", i), "float")
       for by in ("model", "domain", "group") for i, end in enumerate(("low", "high"))]
    + [(f"ratio_length_corrected_ci_{end}", ("ratio_length_corrected", "ci", i), "float")
       for i, end in enumerate(("low", "high"))])


def label_codes(labels: Sequence[str | None]) -> tuple[list[str], np.ndarray]:
    """A grouping's categories (sorted) and each trace's code among them (-1: no label)."""
    names = sorted({g for g in labels if g is not None})
    at = {g: i for i, g in enumerate(names)}
    return names, np.array([at.get(g, -1) if g is not None else -1 for g in labels], dtype=np.int64)


def test_traces(values: Sequence[float], codes: np.ndarray, min_group: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The traces stats.kruskal_test uses for `values` grouped by `codes` (label_codes'; a label, a finite
    value, a category with at least `min_group` such traces): their indices, their categories' codes
    among the kept ones (0 to k - 1, in sorted order) and k."""
    x = np.asarray(values, dtype=np.float64)
    usable = np.isfinite(x) & (codes >= 0)
    sizes = np.bincount(codes[usable], minlength=max(1, int(codes.max()) + 1))
    kept = sizes >= min_group
    new_code = np.cumsum(kept) - 1
    index = np.flatnonzero(usable & kept[np.maximum(codes, 0)])
    return index, new_code[codes[index]], int(kept.sum())


def resample_counts(rng: np.random.Generator, n_traces: int, resamples: int) -> np.ndarray:
    """How often each trace is drawn in each of `resamples` resamples of `n_traces` draws with replacement:
    a (n_traces, resamples) float32 array (exact counts), a column a resample summing to n_traces
    (rng.integers, then counted)."""
    draws = rng.integers(0, n_traces, size=(resamples, n_traces))
    draws += (np.arange(resamples) * n_traces)[:, None]
    counts = np.bincount(draws.ravel(), minlength=resamples * n_traces).reshape(resamples, n_traces)
    return np.ascontiguousarray(counts.T, dtype=np.float32)


@numba.njit(cache=True)
def _rank_sums(counts, starts, codes, rank_sums, sizes, ties):  # pragma: no cover - compiled
    """Per resample (a column of `counts`: draws of each of the set's traces, in the order of their values),
    each category's sum of mid-ranks and size (rows of rank_sums and sizes) and sum(t^3 - t) over the
    distinct values. `starts`: where each distinct value begins, and the set's size last; `codes`: per
    position, its row of rank_sums in each grouping. The inner loops run over resamples, contiguous in memory."""
    resamples, groupings = counts.shape[1], codes.shape[1]
    below, drawn, mid = np.zeros(resamples), np.zeros(resamples), np.zeros(resamples)
    for j in range(starts.shape[0] - 1):
        drawn[:] = 0.0
        for i in range(starts[j], starts[j + 1]):
            for b in range(resamples):
                drawn[b] += counts[i, b]
        for b in range(resamples):
            mid[b] = below[b] + (drawn[b] + 1.0) * 0.5  # mid-rank: draws below the value + (its draws + 1) / 2
            ties[b] += drawn[b] * (drawn[b] * drawn[b] - 1.0)
            below[b] += drawn[b]
        for i in range(starts[j], starts[j + 1]):
            for g in range(groupings):
                row = codes[i, g]
                for b in range(resamples):
                    rank_sums[row, b] += counts[i, b] * mid[b]
                    sizes[row, b] += counts[i, b]


@dataclass
class Ranking:
    """One variable's values over one set of traces, sorted once, and the groupings tested on that set."""
    order: np.ndarray  # the set's trace indices, by value (int32, as starts and codes: 48 rankings of 100,000 traces)
    starts: np.ndarray  # where each distinct value begins in `order`, and len(order) last
    codes: np.ndarray | None = None  # (positions, groupings tested on the set): each position's column
    slices: dict = field(default_factory=dict)  # test key: its columns of the rank sums
    width: int = 0  # columns so far


def ranking(values: np.ndarray, index: np.ndarray) -> Ranking:
    """A Ranking of `values` over the traces `index` (no grouping yet)."""
    order = index[np.argsort(values[index], kind="stable")].astype(np.int32)
    v = values[order]
    return Ranking(order, np.concatenate([[0], np.flatnonzero(v[1:] != v[:-1]) + 1, [len(v)]]).astype(np.int32))


def eps2_corrected(rank_sums: np.ndarray, sizes: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """Chance-corrected eps2 per resample (row) from each category's rank sum and size and sum(t^3 - t):
    H with the tie correction, minus (k - 1), over n - 1 (k the categories drawn); NaN where fewer than 2
    categories were drawn or every drawn value is one."""
    n = sizes.sum(axis=1)
    k = (sizes > 0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        centred = np.where(sizes > 0, rank_sums / sizes - ((n + 1) / 2)[:, None], 0.0)
        h = 12.0 / (n * (n + 1)) * (sizes * centred ** 2).sum(axis=1) / (1.0 - ties / (n ** 3 - n))
        out = (h - (k - 1)) / (n - 1)
    return np.where((k >= 2) & (ties < n ** 3 - n), out, np.nan)


def corrected_eps2_draws(counts: np.ndarray, rankings: Sequence[Ranking], out: Mapping, rows: slice) -> None:
    """For each ranking and each test on it, the chance-corrected eps2 of the resamples `counts`
    (resample_counts': one column a resample), written into out[test key][rows]."""
    resamples = counts.shape[1]
    for r in rankings:
        rank_sums, sizes, ties = np.zeros((r.width, resamples)), np.zeros((r.width, resamples)), np.zeros(resamples)
        # the set's rows in the order of its values, read in sequence by the kernel (random rows there: 3x slower)
        _rank_sums(np.take(counts, r.order, axis=0), r.starts, r.codes, rank_sums, sizes, ties)
        for test, cols in r.slices.items():
            out[test][rows] = eps2_corrected(rank_sums[cols].T, sizes[cols].T, ties)


def percentile_interval(draws: np.ndarray, level: float) -> list[float] | None:
    """[low, high], the percentile interval of the finite draws (None when there are none)."""
    finite = draws[np.isfinite(draws)]
    if not len(finite):
        return None
    tail = 100 * (1 - level) / 2
    return [float(x) for x in np.percentile(finite, [tail, 100 - tail])]


def floored_ratio(model: np.ndarray, domain: np.ndarray, floor: float) -> np.ndarray:
    """max(model, floor) / max(domain, floor): stats' floor rule (a side under the floor raised to it; both
    under gives 1, where the point estimate gives no ratio at all)."""
    return np.maximum(model, floor) / np.maximum(domain, floor)


def ratio_interval(model: np.ndarray, domain: np.ndarray, floor: float, level: float) -> dict:
    """The ratio's percentile interval over the resamples and the share of them with a side under the floor."""
    ok = np.isfinite(model) & np.isfinite(domain)
    m, d = model[ok], domain[ok]
    if not len(m):
        return {"ci": None, "ci_floored": None}
    return {"ci": percentile_interval(floored_ratio(m, d, floor), level),
            "ci_floored": {"domain": float(np.mean((d < floor) & (m >= floor))),
                           "model": float(np.mean((m < floor) & (d >= floor))),
                           "both": float(np.mean((m < floor) & (d < floor)))}}


def plan_test(rankings: dict, column: tuple, test: tuple, values: np.ndarray, codes: np.ndarray, min_group: int) -> None:
    """Adds the test `test` (the variable `column`'s `values` grouped by label_codes' `codes`) to `rankings`,
    on the Ranking of the traces it uses: one per variable and set of traces, shared by the groupings
    tested on the same traces (model and domain, as a rule)."""
    index, kept, k = test_traces(values, codes, min_group)
    r = rankings.setdefault((column, index.tobytes()), ranking(values, index))
    position = np.empty(len(values), dtype=np.int64)
    position[r.order] = np.arange(len(r.order))
    where = np.empty((len(r.order), 1), dtype=np.int32)
    where[position[index], 0] = r.width + kept
    r.codes = where if r.codes is None else np.hstack([r.codes, where])
    r.slices[test] = slice(r.width, r.width + k)
    r.width += k


def bootstrap_draws(rankings: Mapping[tuple, Ranking], n_traces: int, resamples: int, seed: int) -> dict:
    """{test: its chance-corrected eps2 in each of `resamples` resamples of the run's traces}, the resamples
    drawn in blocks of at most BLOCK_CELLS counts (the same draws whatever the block size) from one
    generator seeded with `seed`."""
    draws = {test: np.full(resamples, np.nan) for r in rankings.values() for test in r.slices}
    rng = np.random.default_rng(seed)
    step = max(1, BLOCK_CELLS // max(1, n_traces))
    for start in range(0, resamples if draws else 0, step):
        rows = slice(start, min(resamples, start + step))
        corrected_eps2_draws(resample_counts(rng, n_traces, rows.stop - rows.start), list(rankings.values()), draws, rows)
    return draws


def add_effect_intervals(results: Sequence[dict], columns: Sequence[tuple[Sequence[float], np.ndarray | None]],
                         labels: Mapping[str, Sequence[str | None]], settings) -> None:
    """Adds `eps2_corrected_ci` to every test of `results` (stats' variable entries, the raw tests and the
    length-controlled ones: None for a test that did not run) and `ci`, `ci_floored` to both ratios.
    `columns`: each entry's raw values and length residuals (None: no length-controlled test);
    `labels`: each grouping's label per trace; `settings`: StatsSettings."""
    n_traces = len(next(iter(labels.values()), []))
    level, floor, resamples = settings.ci_level, settings.ratio_floor, settings.bootstrap_resamples
    coded = {by: label_codes(labels[by])[1] for by in labels}
    rankings: dict[tuple, Ranking] = {}
    for v, (entry, (raw, resid)) in enumerate(zip(results, columns)):
        for lc, values, tests in ((False, raw, entry), (True, resid, entry["length_controlled"])):
            for by in labels:
                tests[by]["eps2_corrected_ci"] = None
                if tests[by]["status"] == TESTED and values is not None and resamples >= 1:
                    plan_test(rankings, (v, lc), (v, lc, by), np.asarray(values, dtype=np.float64), coded[by],
                              settings.min_group)
    draws = bootstrap_draws(rankings, n_traces, resamples, settings.bootstrap_seed)
    for v, entry in enumerate(results):
        for lc, tests, ratio in ((False, entry, "ratio_corrected"), (True, entry["length_controlled"],
                                                                     "ratio_length_corrected")):
            for by in labels:
                if (v, lc, by) in draws:
                    tests[by]["eps2_corrected_ci"] = percentile_interval(draws[(v, lc, by)], level)
                    undefined = int(np.isnan(draws[(v, lc, by)]).sum())
                    if undefined:
                        tests[by]["eps2_corrected_ci_undefined"] = undefined  # resamples with no H
            both = (v, lc, "model") in draws and (v, lc, "domain") in draws
            entry[ratio].update(ratio_interval(draws[(v, lc, "model")], draws[(v, lc, "domain")], floor, level)
                                if both and entry[ratio]["value"] is not None else {"ci": None, "ci_floored": None})
