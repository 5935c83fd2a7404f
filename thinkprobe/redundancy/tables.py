"""redundancy.csv (one row per trace, COLUMNS) and model_redundancy.csv (means per model) of a run."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..outputs import MODEL_REDUNDANCY_TABLE, RUN_JSON, write_table
from ..records import group_of, iter_graph_records, source_id
from .analyses import Analyses, write_analyses
from .annotate import METRICS, RedundancyParams, annotate_record, positional_units, redundancy_row, sep_to

__all__ = ["MODEL_COLUMNS", "model_means", "write_redundancy", "table_row", "write_redundancy_tables",
           "format_model_table"]

MODEL_COLUMNS: tuple[str, ...] = MODEL_REDUNDANCY_TABLE.columns


def model_means(rows: Sequence[dict]) -> list[dict]:
    """Per-model means of every metric (MODEL_COLUMNS); empty cells are left out of the means,
    and a column with no value for a model stays empty."""
    by_model: dict[str, list[dict]] = {}
    for r in rows:
        by_model.setdefault(str(r["model"]), []).append(r)
    out = []
    for model in sorted(by_model):
        group = by_model[model]
        mean = {"model": model, "n": len(group), "n_graded": sum(r.get("Acc") not in ("", None) for r in group)}
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
    analyses = Analyses()
    for record in iter_graph_records(run, missing_ok=True):
        if not isinstance(record.get("redundancy"), dict):  # a record made elsewhere: its SEP is needed too
            record = annotate_record(record, params)
        analyses.add(record, table_row(record, params))
    return write_redundancy_tables(run, analyses)


def table_row(record: dict, params: RedundancyParams = RedundancyParams()) -> dict:
    """The redundancy.csv row of a graph record: its stored metrics, else computed afresh."""
    stored = record.get("redundancy")
    if isinstance(stored, dict) and isinstance(stored.get("metrics"), dict):
        return {"trace_id": record.get("trace_id"), "model": record.get("model"),
                "domain": record.get("domain"), "group": group_of(record), "source_id": source_id(record),
                **stored["metrics"], "sep_to": sep_to(stored, positional_units(record))}
    return redundancy_row(record, params)[0]


def write_redundancy_tables(run: Path, analyses: Analyses) -> dict:
    """redundancy.csv (with difficulty levels), model_redundancy.csv and CoTJudger's analysis tables
    from the rows an `Analyses` gathered."""
    info = write_analyses(run, analyses)
    models = model_means(analyses.rows)
    write_table(run, MODEL_REDUNDANCY_TABLE, models)
    return {"redundancy_csv": str(run / "redundancy.csv"), "model_redundancy_csv": str(run / "model_redundancy.csv"),
            "traces": len(analyses.rows), "models": models, "analyses": info}


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
