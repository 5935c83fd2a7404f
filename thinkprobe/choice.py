"""Model choice (`thinkprobe select`): rank a run's models by how well their 5D profile fits what
is wanted, with bootstrap intervals, and say which of them the run cannot tell apart.

What is wanted, one of:
  want   signed dimensions, "Depth+,Efficiency+": a trace's fit is the mean of its signed z-scores
         on them (+: more is better, -: less); a model's fit is the mean over its traces
  like   a target profile {dimension: z}: a model's fit is minus the Euclidean distance between its
         mean profile and the target over the target's dimensions (0 = exactly the target)
Neither: every dimension "+" (the widest, deepest, most structured, reflective and efficient).

Intervals are percentile bootstraps of the model's fit (the stats section's bootstrap_resamples,
bootstrap_seed, ci_level). When every model answered the same questions the resampling draws
questions, the same for all models (paired); otherwise each model's traces are drawn on their own.
Two models cannot be told apart when the interval of the difference of their fits, over the same
resamples, contains 0 (each pair on its own: no correction for the number of pairs). Tier 1 holds
the best-fitting model and, in order of fit, every model after it until the first one told apart
from it; the next tier starts there, and so on (a model's not_told_apart_from lists every model it
cannot be told apart from, in any tier: a leader with a wide interval keeps models in its tier that
others tell apart). The draws do not depend on the order of the rows. A model with fewer than
stats.select_min_traces traces gets no interval and no tier, and is listed after the placed ones. The fit says how a model's reasoning
looks on the wanted dimensions, not how often it is right: where a lower tier is more accurate,
the note says so.
"""
from __future__ import annotations

from collections import Counter
import difflib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from .config import StatsSettings
from .indicators import DIMENSIONS
from .progress import one_line

__all__ = ["Selection", "parse_want", "read_like", "select_models", "select_by_domain", "format_selection"]

DIMS: tuple[str, ...] = tuple(DIMENSIONS)


@dataclass
class Selection:
    """The ranked models of one selection (rows best first) and how it was made."""

    criterion: str
    domain: str | None
    resampling: str
    rows: list[dict] = field(default_factory=list)
    group: str | None = None
    # what the ranking should be read with, by kind ("empty", "small", "accuracy", "unanswered", "crossing",
    # "reasoning", "groups"), in order
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def note(self) -> str:
        """The notes in one line, as `select` prints them."""
        return "; ".join(self.notes.values())

    def as_dict(self) -> dict:
        return {"criterion": self.criterion, "domain": self.domain, "group": self.group, "resampling": self.resampling,
                "note": self.note, "models": self.rows}


def _dimension(name: str) -> str | None:
    """The dimension `name` is, in any case ("depth" -> Depth), or None."""
    return next((d for d in DIMS if d.lower() == name.strip().lower()), None)


def parse_want(text: str | None) -> dict[str, int]:
    """'Depth+,Efficiency-' -> {'Depth': 1, 'Efficiency': -1} (dimension names in any case; a name
    without a sign counts as +); None: every dimension +. Text that names no dimension ("", ",") is
    an error: the default was not asked for."""
    if text is None:
        return {d: 1 for d in DIMS}
    out: dict[str, int] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        parsed = re.fullmatch(r"(.*?)\s*([+-]?)", part)
        name, sign = parsed.group(1), -1 if parsed.group(2) == "-" else 1
        dim = _dimension(name)
        if dim is None:  # "Depth++": name what was typed, not "Depth+"
            raise ValueError(f"--want: {part!r} is not a dimension with a sign; use {', '.join(DIMS)}, each with + or -")
        if dim in out:  # "Depth+,Depth-": the last one won without a word
            raise ValueError(f"--want names {dim} twice")
        out[dim] = sign
    if not out:  # "," or " , ": nothing named, where the default (every dimension +) was not asked for
        raise ValueError(f"--want {text!r} names no dimension; use {', '.join(DIMS)} with + or -")
    return out


# Keys a row of the run's tables carries beside the dimensions (model_profiles, profile.csv): not an error in --like.
_LIKE_OTHER_KEYS = frozenset({"model", "domain", "group", "n", "trace_id", "source_id"})


def read_like(source: str | Path | Mapping, limits=None) -> dict[str, float]:
    """A target profile: a mapping, or a JSON file holding {dimension: z} (dimension names in any case;
    a model_profiles or profile.csv row, or {"profile": {...}}, is accepted too, their other columns
    ignored; any other key is an error), read within `limits` (an `io.limits.InputLimits`; default the
    config's)."""
    if isinstance(source, Mapping):
        data = source
    else:  # a profile is a few lines: read within the input layer's size limit like any input
        from .config import Config
        from .io.limits import InputLimits, TooLarge, read_whole

        with open(source, "rb") as fh:
            try:
                data = json.loads(read_whole(fh, limits or InputLimits.from_config(Config.load()), f"--like {source}",
                                             parsed=True))
            except TooLarge as exc:
                raise ValueError(str(exc)) from exc
            except ValueError as exc:  # not JSON
                raise ValueError(f"--like {source}: not a JSON profile ({exc})") from exc
    if isinstance(data, Mapping) and isinstance(data.get("profile"), Mapping):
        data = data["profile"]
    where = f"--like {source}" if not isinstance(source, Mapping) else "the profile"
    if not isinstance(data, Mapping):  # [1, 2] said "no dimension"
        raise ValueError(f"{where}: not a JSON object of dimensions ({type(data).__name__}); e.g. "
                         '{"Depth": 0.5, "Efficiency": 0.2}')
    target: dict[str, float] = {}
    unknown = []
    for key, value in data.items():
        dim = _dimension(str(key))  # "depth", as --want reads it
        if dim is None:
            if str(key) not in _LIKE_OTHER_KEYS:  # "Effic", "Efficency": dropped without a word until 2026-12-06
                near = difflib.get_close_matches(str(key), DIMS, n=1, cutoff=0.6)
                unknown.append(f"{key!r} is no dimension" + (f" (did you mean {near[0]}?)" if near else ""))
            continue
        if dim in target:
            raise ValueError(f"{where}: {dim} is given twice")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):  # true read as 1.0
            raise ValueError(f"{where}: {dim}'s value is not a number ({value!r})")
        try:
            target[dim] = float(value)
        except ValueError as exc:
            raise ValueError(f"{where}: a dimension's value is not a number ({exc})") from exc
    if unknown:
        raise ValueError(f"{where}: {'; '.join(unknown)}; use {', '.join(DIMS)}")
    if not all(math.isfinite(v) for v in target.values()):  # NaN or 1e400 made every bootstrap draw NaN
        raise ValueError(f"{where}: a dimension's value is not a finite number ({target})")
    if not target:
        raise ValueError(f"--like: no dimension ({', '.join(DIMS)}) in {source if not isinstance(source, Mapping) else 'the profile'}")
    return target


def _question(r: Mapping) -> str | None:
    """What a trace answers, to pair models' traces: the question text, else the record's own id."""
    return r.get("question") or r.get("source_id")


def _draws(groups: dict[str, np.ndarray], keys: dict[str, list], paired: bool, settings: StatsSettings,
           score) -> dict[str, np.ndarray]:
    """Bootstrap distribution of each model's fit: `score(values)` over resampled traces (or
    resampled questions, the same draw for every model, when `paired`)."""
    rng = np.random.default_rng(settings.bootstrap_seed)
    b = settings.bootstrap_resamples
    out = {m: np.empty(b) for m in groups}
    if paired:
        questions = sorted({q for ks in keys.values() for q in ks})
        index = {q: k for k, q in enumerate(questions)}
        at = {m: np.array([index[q] for q in keys[m]]) for m in groups}
        for j in range(b):  # one resample at a time (the same draws as one (b, questions) array, in bounded memory)
            drawn = np.bincount(rng.integers(0, len(questions), size=len(questions)),
                                minlength=len(questions)).astype(np.float64)
            for m, values in groups.items():
                counts = drawn[at[m]]  # each trace weighs as often as its question is drawn
                out[m][j] = score(values, counts) if counts.sum() else np.nan
        return out
    for m, values in groups.items():
        n = len(values)
        for j in range(b):
            out[m][j] = score(values, np.bincount(rng.integers(0, n, size=n), minlength=n).astype(np.float64))
    return out


def _interval(x: np.ndarray, level: float) -> tuple[float, float]:
    x = x[np.isfinite(x)]
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(x, [tail, 100 - tail])
    return float(lo), float(hi)


def select_models(rows: Sequence[Mapping], settings: StatsSettings, *, domain: str | None = None,
                  want: Mapping[str, int] | None = None, like: Mapping[str, float] | None = None,
                  redundancy: Mapping[str, float] | None = None, group: str | None = None) -> Selection:
    """Rank the models of `rows` (stats.load_table rows: model, domain, group, question, correct and
    the five dimensions) by fit (module docstring), on one domain's or group's traces when given.
    `redundancy`: mean R per model, shown beside."""
    if want and like:
        raise ValueError("give --want or --like, not both")
    rows = sorted(rows, key=lambda r: str(r.get("trace_id")))  # the draws depend on the order: the report sorts too
    all_models = {str(r["model"]) for r in rows}
    for key, value in (("domain", domain), ("group", group)):
        if value is not None:
            levels = sorted({str(r.get(key)) for r in rows if r.get(key) is not None})
            if value not in levels:
                where = f"of domain {domain}" if key == "group" and domain is not None else "of the run"
                same = [v for v in levels if v.lower() == value.lower()]  # "Math" for "math"
                raise ValueError(f"--{key} {value!r}: the {key}s {where} are {', '.join(levels) or 'none'}"
                                 + (f" (did you mean {same[0]!r}? names are matched exactly)" if same else ""))
            rows = [r for r in rows if r.get(key) == value]
    if like:
        target = dict(like)
        dims = list(target)
        goal = np.array([target[d] for d in dims])
        criterion = "like " + ", ".join(f"{d} {v:+.2f}" for d, v in target.items())

        def score(values, weights):
            mean = (values * weights[:, None]).sum(axis=0) / weights.sum()
            return -float(np.sqrt(((mean - goal) ** 2).sum()))
    else:
        signs = dict(want) if want else parse_want(None)
        dims = list(signs)
        sign = np.array([signs[d] for d in dims], dtype=np.float64)
        criterion = "want " + ",".join(f"{d}{'+' if s > 0 else '-'}" for d, s in signs.items())

        def score(values, weights):
            per_trace = values @ sign / len(sign)
            return float((per_trace * weights).sum() / weights.sum())
    groups: dict[str, np.ndarray] = {}
    keys: dict[str, list] = {}
    for r in rows:
        vals = [r[d] for d in dims]
        if all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals):
            groups.setdefault(r["model"], []).append(vals)
            keys.setdefault(r["model"], []).append(_question(r))
    groups = {m: np.asarray(v, dtype=np.float64) for m, v in sorted(groups.items())}
    question_sets = [set(k) for k in keys.values()]
    paired = (len(groups) > 1 and all(None not in s for s in question_sets)
              and all(s == question_sets[0] for s in question_sets) and len(question_sets[0]) >= 2)
    sel = Selection(criterion, domain, "questions, paired across models" if paired else "traces, per model", group=group)
    if not groups:
        sel.notes["empty"] = "no trace with the dimensions asked for"
        return sel
    draws = _draws(groups, keys, paired, settings, score)
    level = settings.ci_level
    est = {m: score(v, np.ones(len(v))) for m, v in groups.items()}
    order = sorted(groups, key=lambda m: (-est[m], m))
    fewest = max(settings.min_group, settings.select_min_traces)
    small = {m for m, v in groups.items() if len(v) < fewest}

    def apart(a: str, b: str) -> bool:
        lo, hi = _interval(draws[a] - draws[b], level)
        return lo > 0 or hi < 0

    tiers, head = {}, None
    for m in order:  # apart() is asked of placed models only
        if m in small:
            tiers[m] = None  # too few traces to be placed
        elif head is None or apart(head, m):
            head = m
            tiers[m] = max((t for t in tiers.values() if t is not None), default=0) + 1
        else:
            tiers[m] = tiers[head]
    order = [m for m in order if m not in small] + [m for m in order if m in small]  # unplaced ones last
    for rank, m in enumerate(order, start=1):
        graded = [r["correct"] for r in rows if r["model"] == m and r.get("correct") is not None]
        lo, hi = (None, None) if m in small else _interval(draws[m], level)
        sel.rows.append({
            "rank": rank, "model": m, "n": int(len(groups[m])), "fit": est[m], "ci_low": lo, "ci_high": hi,
            "tier": tiers[m],  # None for a model too small to compare: not "indistinguishable from every model"
            "not_told_apart_from": None if m in small else [o for o in order if o != m and o not in small and not apart(m, o)],
            "accuracy": (sum(graded) / len(graded)) if graded else None, "graded": len(graded),
            "R": (redundancy or {}).get(m)})
    if small:
        setting = "stats.min_group" if settings.min_group > settings.select_min_traces else "stats.select_min_traces"
        sel.notes["small"] = (f"fewer than {fewest} traces ({setting}), so no interval and no tier: "
                    + ", ".join(one_line(m) for m in sorted(small)))
    absent = sorted(all_models - {str(r["model"]) for r in rows})
    if absent and (domain is not None or group is not None):  # s1.1 without formula traces had gone unsaid
        within = " and ".join(f"{k} {v}" for k, v in (("domain", domain), ("group", group)) if v is not None)
        sel.notes["absent"] = f"no traces in {within}: " + ", ".join(one_line(m) for m in absent)
    if len(groups) == 1:  # a one-model run's fit is its mean against the norms it was z-scored with
        sel.notes["one"] = (f"only {one_line(next(iter(groups)))} has traces here: there is no other model to rank it "
                            "against, and its fit is its mean against the norms the run was z-scored with (0 on its own "
                            "traces without --norms)")
    worse = _more_accurate_below(sel.rows, settings.select_min_traces)
    if worse:
        sel.notes["accuracy"] = worse
    if unanswered := _unanswered(rows, sel.rows):
        sel.notes["unanswered"] = unanswered
    premise = sum(bool(r.get("gold_not_asked")) and r.get("correct") is not None for r in rows)
    if premise:  # MiP-Overthinking's missing-premise condition: its "correct" is a made-up premise
        sel.notes["premise"] = (f"accuracy counts {premise} graded answers to questions with a premise removed by the "
                                "records' own grades: MiP-Overthinking's eval_result 1 says the answer matches the whole "
                                "question's, a made-up premise, where abstaining (0) is the right answer; which value "
                                "each 'correct' was read from depends on --correct-values (provenance gold_not_asked)")
    return sel


# a model whose graded traces are this often wrong for stating no answer at all is named beside its accuracy
UNANSWERED_SHARE = 0.1


def _unanswered(rows: Sequence[Mapping], ranked: Sequence[Mapping]) -> str:
    """Models whose accuracy counts many traces incorrect because no final answer was found in them (rows'
    `no_answer`: PRM800K's solution prefixes, cut-off traces), as many as UNANSWERED_SHARE of their graded
    traces: the accuracy then measures unfinished traces as much as wrong answers."""
    named = []
    for r in ranked:
        n = sum(bool(x.get("no_answer")) for x in rows if x["model"] == r["model"] and x.get("correct") is not None)
        if r["graded"] and n >= UNANSWERED_SHARE * r["graded"]:
            named.append(f"{one_line(r['model'])} {n} of {r['graded']}")
    return ("accuracy counts a trace with no final answer found as incorrect: " + ", ".join(named)
            + " (unfinished? profiled with --unanswered ungraded they are left ungraded)") if named else ""


def _more_accurate_below(rows: Sequence[Mapping], min_graded: int) -> str:
    """Where a model of a lower tier is more accurate than every tier-1 model (each with at least
    min_graded graded traces; no test of the difference), that the fit is a profile, not a quality."""
    graded = [r for r in rows if r["accuracy"] is not None and r["graded"] >= min_graded and r["tier"] is not None]
    top = [r for r in graded if r["tier"] == 1]
    below = [r for r in graded if r["tier"] != 1]
    if not top or not below:
        return ""
    best = max(below, key=lambda r: r["accuracy"])
    if best["accuracy"] <= max(r["accuracy"] for r in top):
        return ""
    return (f"{best['model']} (tier {best['tier']}) answers more accurately ({best['accuracy']:.2f} over "
            f"{best['graded']} graded) than every tier-1 model: the fit ranks how the reasoning looks on the "
            f"wanted dimensions, not how often it is right")


def _redundancy_means(run_dir: Path, domain: str | None, group: str | None = None) -> dict[str, float]:
    from .outputs import REDUNDANCY_TABLE, read_table

    if not (run_dir / REDUNDANCY_TABLE.name).exists():
        return {}
    sums: dict[str, list[float]] = {}
    for r in read_table(run_dir, REDUNDANCY_TABLE):
        if (domain is None or r["domain"] == domain) and (group is None or r.get("group") == group) \
                and r.get("R", "") != "":
            sums.setdefault(r["model"], []).append(float(r["R"]))
    return {m: sum(v) / len(v) for m, v in sums.items()}


def select_run(run_dir: str | Path, *, domain: str | None = None, want: str | Mapping[str, int] | None = None,
               like: str | Path | Mapping | None = None, settings: StatsSettings | None = None,
               rows: Sequence[Mapping] | None = None, group: str | None = None) -> Selection:
    """select_models over a run folder (its own stats settings); `want` may be the --want text."""
    from .crossing import model_crossing
    from .stats import load_table, stats_settings

    run_dir = Path(run_dir)
    settings = settings or stats_settings(run_dir)
    rows = rows if rows is not None else load_table(run_dir)
    want_map = parse_want(want) if isinstance(want, str) else want
    like_map = read_like(like) if like is not None else None
    sel = select_models(rows, settings, domain=domain, want=want_map if want else None, like=like_map,
                        redundancy=_redundancy_means(run_dir, domain, group), group=group)
    in_group = [r for r in rows if group is None or r.get("group") == group]
    if domain is None and (crossing := model_crossing(in_group, "domain", settings.min_group))["uneven"]:
        empty = ", ".join(f"{m} has no {d} traces" for m, d in crossing["empty_cells"][:3])
        sel.notes["crossing"] = (
            "models and domains are unevenly crossed (" + ", ".join(x for x in (empty, f"Cramér's V {_num(crossing['cramers_v'], 2)}"
                                                                         if crossing["cramers_v"] is not None else "") if x)
            + "): a difference in fit may be one of domain; rank within a domain with --domain")
    from .report.coverage import run_json, summary_caveat

    ranked = {r["model"] for r in sel.rows}  # their traces in the whole run, as run.json counts them
    sizes = {m: n for m, n in Counter(str(r["model"]) for r in rows).items() if m in ranked}
    if len(sizes) > 1 and (caveat := summary_caveat(sizes, run_json(run_dir))):  # a summary, or cut off
        sel.notes["reasoning"] = caveat
    groups = sorted({str(r["group"]) for r in rows
                     if r.get("group") is not None and (domain is None or r["domain"] == domain)})
    if group is None and len(groups) > 1:  # a design condition (MiP / normal) moves the profile as much as a model
        # spread unevenly over the models (a MiP run: QwQ 11 of 16 traces missing a premise, R1 8 of 15), a
        # difference in fit may be the condition's
        mix = model_crossing([r for r in rows if domain is None or r["domain"] == domain], "group", settings.min_group)
        uneven = (f", over which the models' traces are spread unevenly (Cramér's V {_num(mix['cramers_v'], 2)}: part "
                  "of a difference in fit may be the group's)" if mix["uneven"] and mix["cramers_v"] is not None else "")
        sel.notes["groups"] = (f"the fit pools the run's groups ({', '.join(groups[:5])}"
                               f"{', ...' if len(groups) > 5 else ''}){uneven}; rank within one with --group")
    return sel


def select_by_domain(run_dir: str | Path, settings: StatsSettings | None = None,
                     rows: Sequence[Mapping] | None = None) -> list[Selection]:
    """One default selection per named domain with at least two models (the report's "which model for
    which domain" table; traces of no named domain, 'unknown', pool any domain: no row)."""
    from .stats import level, load_table

    rows = rows if rows is not None else load_table(run_dir)
    out = []
    for d in sorted({d for r in rows if (d := level(r, "domain")) is not None}):
        if len({r["model"] for r in rows if r["domain"] == d}) >= 2:
            out.append(select_run(run_dir, domain=d, settings=settings, rows=rows))
    return out


def _num(x, digits=3) -> str:
    if x is None:
        return "–"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # "-0.000" is 0


def _apart_cell(names: list[str] | None) -> str:
    return "not compared (too few traces)" if names is None else one_line(", ".join(names) or "–")


def format_selection(sel: Selection) -> str:
    """The ranking as a text table."""
    untiered = any(r["tier"] is None for r in sel.rows) and any(r["tier"] is not None for r in sel.rows)
    lines = [f"models ranked by fit ({sel.criterion}{'; domain ' + sel.domain if sel.domain else ''}"
             f"{'; group ' + sel.group if sel.group else ''}"
             f"{'; models too small for a tier after the others' if untiered else ''}); "
             f"bootstrap over {sel.resampling}"]
    if not sel.rows:
        return "\n".join(lines + [sel.note])
    width = max(8, *(len(one_line(r["model"])) for r in sel.rows))
    lines.append(f"{'rank':>4} {'tier':>4}  {'model':<{width}} {'n':>5} {'fit':>7} {'interval':>17} {'accuracy':>9} "
                 f"{'R':>6}  not told apart from")
    for r in sel.rows:
        ci = f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]" if r["ci_low"] is not None else "–"
        acc = f"{r['accuracy']:.2f} ({r['graded']})" if r["accuracy"] is not None else "–"
        tier = "–" if r["tier"] is None else r["tier"]
        lines.append(f"{r['rank']:>4} {tier:>4}  {one_line(r['model']):<{width}} {r['n']:>5} {_num(r['fit']):>7} "
                     f"{ci:>17} {acc:>9} {_num(r['R'], 2):>6}  {_apart_cell(r['not_told_apart_from'])}")
    if sel.note:
        lines.append(sel.note)
    lines.append("fit: the model's mean signed z over the wanted dimensions (or closeness to --like), with its bootstrap "
                 "interval; the profile is not length-controlled (longer traces open more ideas: `thinkprobe stats` "
                 "gives each dimension's model effect beyond length); tier 1: the model that fits best and, in order of "
                 "fit, those after it up to, not including, the first one told apart from it (the interval of the difference in fit "
                 "excludes 0; no correction for the number of pairs compared); accuracy: share of graded traces correct (how many graded); R: mean redundancy "
                 "ratio (|V| - L_eff) / |V| of the model's traces (CoTJudger)"
                 + ("; with --like, fit is minus the distance to the profile, and a resampled mean lies farther "
                    "from it than the mean itself, so an interval sits below its fit: read the tiers" if
                    sel.criterion.startswith("like") else ""))
    return "\n".join(lines)
