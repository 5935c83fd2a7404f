"""The redundancy row of one graph record (the module docstring of thinkprobe.redundancy defines
every column): candidates and their verdicts, the SEP target, Iso, degrees and answer transitions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..records import FORWARD_EDGES, group_of, source_id
from .choices import question_options
from .extraction import OPTION_LABEL, Candidate, code_tests_of, find_candidates
from .final import final_candidate
from .matching import answers_match
from .normalise import normalise
from .sandbox import NOT_ALLOWED, run_code_tests
from .sep import SEP, edge_tuple, shortest_effective_path
from ..outputs import REDUNDANCY_COLUMNS, REDUNDANCY_METRICS

__all__ = ["COLUMNS", "METRICS", "RedundancyParams", "isolated_units", "redundancy_row", "annotate_record", "has_grade",
           "has_gold", "UNANSWERED_CHOICES", "sep_to", "positional_units"]

COLUMNS: tuple[str, ...] = REDUNDANCY_COLUMNS  # declared with the run's other tables (thinkprobe.outputs)
METRICS: tuple[str, ...] = REDUNDANCY_METRICS


UNANSWERED_CHOICES = ("incorrect", "ungraded")


@dataclass(frozen=True)
class RedundancyParams:
    """The suite's thresholds; a run takes them from its config's `redundancy` section
    (configs/default.yaml), and these defaults equal that file's."""

    iso_overlap: float = 0.2  # a unit sharing less than this share of its content words is off-topic
    code_timeout_s: float = 5.0
    code_memory_mb: int = 512
    # run code answers against their tests (isolated): only when the run is given --allow-code-execution
    allow_code_execution: bool = False
    # a trace with a gold answer (or tests) in which no final answer is found: counted "incorrect", or
    # "ungraded" (left out of Acc: a solution prefix, as ReasonEval's PRM800K steps; --unanswered)
    unanswered: str = "incorrect"

    def __post_init__(self) -> None:
        if self.unanswered not in UNANSWERED_CHOICES:
            raise ValueError(f"redundancy.unanswered={self.unanswered!r}: use one of {', '.join(UNANSWERED_CHOICES)}")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None) -> "RedundancyParams":
        """From a config (a Config, or run.json's "config"): its `redundancy` section over the defaults."""
        section = (getattr(cfg, "data", cfg) or {}).get("redundancy") or {}
        try:
            return cls(**{k: type(getattr(cls, k))(v) for k, v in section.items() if k in cls.__dataclass_fields__})
        except ValueError as exc:  # a bad value is the config's error, named before any work
            from ..config import ConfigError

            raise ConfigError(str(exc)) from None



# ----------------------------------------------------------------------------- Iso

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
        s, d, kind, _ = edge_tuple(e)
        if s not in index or d not in index:
            continue
        if kind in FORWARD_EDGES:
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
        if not _shares_enough(k, words, holders, overlap):
            out.append(int(units[k]["id"]))
    return out


def _shares_enough(k: int, words: Sequence[set[str]], holders: Mapping[str, set[int]], overlap: float) -> bool:
    """Whether some other unit holds at least `overlap` of unit k's content words. Such a unit holds
    `need` of them, hence (pigeonhole) one of the len - need + 1 rarest: only their holders are
    compared, each once, and the first that shares enough ends the search. A trace of repeated
    sentences thus costs about linear time, where counting every pair sharing a word was quadratic."""
    ws = words[k]
    need = next((c for c in range(len(ws) + 1) if c / len(ws) >= overlap), None)
    if need is None:
        return False
    if need == 0:
        return True
    seen = {k}
    for w in sorted(ws, key=lambda w: (len(holders[w]), w))[: len(ws) - need + 1]:
        for other in holders[w]:
            if other not in seen:
                seen.add(other)
                if len(ws & words[other]) >= need:
                    return True
    return False


# ----------------------------------------------------------------------------- per trace


def has_gold(record: Mapping) -> bool:
    """Whether the record carries a gold answer to match (a blank one is none)."""
    gold = record.get("gold_answer")
    return gold is not None and str(gold).strip() != ""


def has_grade(record: Mapping) -> bool:
    """Whether the record carries its own grade (correct, incorrect, or a value read as not graded,
    such as SimpleQA's C): then the grade, not the gold answer, decides the final verdict."""
    provenance = record.get("provenance") or {}
    return isinstance(record.get("correct"), bool) or bool(provenance.get("correct_from"))


def _option_of(value: str, options: dict[str, str]) -> str | None:
    """The letter of the option a candidate states by its label ("B) ...", "C – triplet of triplets"), by
    naming it ("p = 1.4e-28 N s (choice B)", "Answer B: ...") or by its text: the one option equal to it
    once normalised, else, for a value of math (`_MATH`), the one option of math it matches and is at
    least half as long as (written otherwise: "2.08 \\times 10^{-6} m" for "2.08*1e-6 m"; not "2" for "2
    peaks in standard HPLC and 3 in chiral HPLC", nor prose: "it does not increase" is no option "increase")."""
    labelled = OPTION_LABEL.match(value) or _DASHED_LABEL.match(value)  # "B) All fourth-grade ...", "C – 3 products"
    if labelled and labelled.group(1) in options:
        return labelled.group(1)
    named = {m.group(1) for m in _NAMED_LETTER.finditer(value)} & set(options)
    if len(named) == 1:
        return named.pop()
    # equal once normalised, and to one option only ("it does not increase" states no option "increase")
    exact = [letter for letter, text in options.items() if normalise(text) == normalise(value)]
    if exact:
        return exact[0] if len(exact) == 1 else None
    if not _MATH.search(value):
        return None
    size = len(normalise(value))
    matched = [letter for letter, text in options.items()
               if _MATH.search(text) and 2 * size >= len(normalise(text)) and answers_match(value, text)]
    return matched[0] if len(matched) == 1 else None


_MATH = re.compile(r"\d|\\[A-Za-z]|[=*^/]")  # a digit, a LaTeX command, "=", "*", "^" or "/"
_DASHED_LABEL = re.compile(r"^\s*\(?([A-J])\)?\s*[–—-]\s+\S")  # "C – triplet of triplets"
_NAMED_LETTER = re.compile(r"\b(?i:option|choice|answer)\s*[:_]?\s*\(?([A-J])\)?(?![\w])")  # "(choice B)", "Answer B:"


def _verdicts(record: dict, candidates: Sequence[Candidate], final: Candidate | None,
              params: RedundancyParams) -> tuple[list[bool | None], list[str], bool | None]:
    """Verdict and reason per candidate, and the verdict on the final answer."""
    tests = code_tests_of(record)
    gold = record.get("gold_answer") if has_gold(record) else None
    label = record.get("correct")
    verdicts: list[bool | None] = []
    reasons: list[str] = []
    # a gold option letter: a candidate that states an option's text ("all fourth-grade students at the
    # school", a boxed or closing number "5.4%") is that option
    options = question_options(record.get("question")) if gold is not None and re.fullmatch(
        r"\(?[A-J]\)?", str(gold).strip()) else {}
    for c in candidates:
        if c.kind == "code" and tests is not None:
            v, why = (run_code_tests(c.value, tests, timeout_s=params.code_timeout_s, memory_mb=params.code_memory_mb)
                      if params.allow_code_execution else (None, NOT_ALLOWED))
        elif gold is not None:
            v = answers_match(c.value, gold)
            why = "matches the gold answer" if v else "differs from the gold answer"
            letter = _option_of(c.value, options) if options and not v else None
            if letter is not None:
                v = letter == str(gold).strip().strip("()")
                why = f"states option {letter}'s text, " + ("the gold option" if v else "not the gold option")
        else:
            v, why = None, "no gold answer"
        verdicts.append(v)
        reasons.append(why)
    k_final = candidates.index(final) if final is not None else None

    code_tested = tests is not None and final is not None and final.kind == "code"
    if has_grade(record) and not code_tested:
        # The record's own grade wins over matching: it speaks for the final answer, and for an earlier
        # candidate with the same value; another candidate keeps its gold verdict when it has one. (A
        # code answer with tests is judged by its tests, run or not, as before.)
        for k, c in enumerate(candidates):
            if k == k_final or (final is not None and answers_match(c.value, final.value)):
                verdicts[k], reasons[k] = label, "the record's grade of the final answer"
            elif verdicts[k] is not None:
                continue
            elif final is None:  # the trace goes on past its candidates: nothing the grade speaks for
                verdicts[k], reasons[k] = None, "no final answer found for the record's grade to speak for"
            elif label:
                verdicts[k], reasons[k] = False, "differs from the final answer, graded correct"
            else:
                verdicts[k], reasons[k] = None, "differs from the final answer, not graded correct"
        return verdicts, reasons, label if isinstance(label, bool) else None

    if k_final is not None and verdicts[k_final] is not None:
        return verdicts, reasons, verdicts[k_final]
    if gold is not None or tests is not None:
        if final is None:  # nothing answered: wrong, or under unanswered "ungraded" left out
            return verdicts, reasons, False if params.unanswered == "incorrect" else None
        return verdicts, reasons, verdicts[k_final]
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


def sep_to(extra: Mapping[str, Any], units: Sequence[dict]) -> str | None:
    """What the trace's SEP (L_eff, R) runs to, from the per-trace data `redundancy_row` keeps:
    "first_correct" (the first candidate answer judged correct, CoTJudger's definition),
    "final_answer" (no correct candidate: the final one), "conclusion" (no candidate: the last CON
    unit) or "last_unit"; None for a trace without units."""
    target = extra.get("sep_target")
    if target is None:
        return None
    if any(c.get("correct") is True for c in extra.get("candidates") or ()):
        return "first_correct"
    if extra.get("final_answer") is not None:
        return "final_answer"
    return "conclusion" if any(int(u["id"]) == target and u.get("type") == "CON" for u in units) else "last_unit"


def _transitions(verdicts: Sequence[bool | None]) -> dict[str, int]:
    counts = {"DR": 0, "SV": 0, "EE": 0, "EB": 0}
    names = {(True, False): "DR", (True, True): "SV", (False, False): "EE", (False, True): "EB"}
    for a, b in zip(verdicts, verdicts[1:]):
        if a is not None and b is not None:
            counts[names[(a, b)]] += 1
    return counts


def positional_units(record: dict) -> list[dict]:
    """The record's units in text order with ids 0..n-1 (the ids SEP data refers to)."""
    return _positional(record)[0]


def _positional(record: dict) -> tuple[list[dict], list[tuple[int, int, str, str]]]:
    """Units in text order with ids 0..n-1 (as the pipeline writes them) and edges on those ids;
    records built by hand with other ids are renumbered, edges to unknown units dropped."""
    units = sorted(record.get("units") or [], key=lambda u: int(u["id"]))
    edges = [edge_tuple(e) for e in record.get("edges") or []]
    if [int(u["id"]) for u in units] == list(range(len(units))):
        return units, edges
    pos = {int(u["id"]): k for k, u in enumerate(units)}
    return ([{**u, "id": k} for k, u in enumerate(units)],
            [(pos[s], pos[d], k, p) for s, d, k, p in edges if s in pos and d in pos])


def _tokens(u: dict) -> int:
    t = u.get("tokens")
    return int(t) if isinstance(t, (int, float)) else len(str(u.get("text", "")).split())


def redundancy_row(record: dict, params: RedundancyParams = RedundancyParams()) -> tuple[dict, dict]:
    """The redundancy.csv row of one graph record (COLUMNS order, then sep_to) and the per-trace data to keep
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
        "group": group_of(record), "source_id": source_id(record),
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
    row["sep_to"] = sep_to(extra, units)
    return row, extra


def annotate_record(record: dict, params: RedundancyParams = RedundancyParams()) -> dict:
    """The graph record with a "redundancy" key: the CSV row's metrics plus the SEP data, so
    graphs.jsonl keeps the path and write_redundancy need not recompute (or rerun code)."""
    row, extra = redundancy_row(record, params)
    return {**record, "redundancy": {"metrics": {k: row[k] for k in METRICS}, **extra}}
