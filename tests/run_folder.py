"""Hand-built run folders for the stats and report tests: the files `thinkprobe profile` writes,
with made-up numbers, so these tests never run the encoder."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Mapping, Sequence

from thinkprobe.indicators import DIMENSIONS, INDICATORS
from thinkprobe.cognitive_profile import group_profiles


def _write_csv(path: Path, rows: Sequence[Mapping], columns: Sequence[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, columns, lineterminator="\n")
        w.writeheader()
        for r in rows:  # a missing group is an empty cell, a missing number 0
            w.writerow({c: r.get(c, "" if c == "group" else 0) for c in columns})


def write_run(run_dir: Path, rows: Sequence[Mapping], graphs: Sequence[Mapping] = ()) -> Path:
    """indicators.csv, profile.csv and model_profiles.csv from `rows` (trace_id, model, domain, group
    when a row has one, and any indicator or dimension values; the rest are 0), plus graphs.jsonl when
    `graphs` is given."""
    run_dir.mkdir(parents=True, exist_ok=True)
    head = ["trace_id", "model", "domain", *(["group"] if any(r.get("group") for r in rows) else [])]
    _write_csv(run_dir / "indicators.csv", rows, [*head, "units", "edges", "tokens", *INDICATORS])
    _write_csv(run_dir / "profile.csv", rows, [*head, *DIMENSIONS])
    full = [{**{d: 0.0 for d in DIMENSIONS}, **r} for r in rows]
    _write_csv(run_dir / "model_profiles.csv", group_profiles(full, ("model",)), ["model", "n", *DIMENSIONS])
    _write_csv(run_dir / "model_domain_profiles.csv", group_profiles(full, ("model", "domain")),
               ["model", "domain", "n", *DIMENSIONS])
    if graphs:
        with open(run_dir / "graphs.jsonl", "w", encoding="utf-8") as f:
            for g in graphs:
                f.write(json.dumps(g) + "\n")
    return run_dir


def make_graph(trace_id: str, model: str, domain: str, n_units: int, group: str | None = None) -> dict:
    """A graphs.jsonl record whose units tile a made-up reasoning text, with every edge type (and a
    group when `group` is given)."""
    types = ("FAC", "RSN", "EXP", "RSN", "CRT", "MET", "SYN", "RPT", "RSN", "CON")
    text, units = "<think>\n", []
    for i in range(n_units):
        sentence = f"Step {i}: x = {i} * 2 < {i + 3} & \"quoted\"."
        units.append({"id": i, "section": "reasoning", "start": len(text), "end": len(text) + len(sentence),
                      "text": sentence, "type": types[i % len(types)], "segment": i // 4, "cues": [], "tokens": 9})
        text += sentence + " "
    end = len(text)
    answer = "The answer is 42."
    text += "</think>\n\n" + answer
    units.append({"id": n_units, "section": "answer", "start": len(text) - len(answer), "end": len(text),
                  "text": answer, "type": "CON", "segment": n_units // 4 + 1, "cues": ["CON"], "tokens": 5})
    edges = [{"src": i - 1, "dst": i, "type": ("inference", "elaboration", "branch")[i % 3], "polarity": None,
              "score": 0.7} for i in range(1, n_units + 1)]
    edges += [{"src": i, "dst": i - 3, "type": "critique", "polarity": ("affirm", "negate", "uncertain")[i % 3],
               "score": 0.6} for i in range(4, n_units, 5)]
    edges += [{"src": i, "dst": 0, "type": "synthesis", "polarity": None, "score": 0.5} for i in range(6, n_units, 7)]
    edges += [{"src": i, "dst": i - 2, "type": "repetition", "polarity": None, "score": 0.9} for i in range(7, n_units, 9)]
    return {"trace_id": trace_id, "model": model, "domain": domain, **({"group": group} if group else {}),
            "source": "made-up", "record": 0,
            "question": "What is 6 * 7?", "gold_answer": "42", "correct": True, "provenance": {},
            "sections": [{"name": "reasoning", "field": "response", "start": 8, "end": end},
                         {"name": "answer", "field": "response", "start": len(text) - len(answer), "end": len(text)}],
            "fields": {"response": text}, "units": units, "edges": edges,
            "indicators": {name: 0.5 for name in INDICATORS}}
