"""The files a profiling run writes, declared once. Each per-trace and per-model table is a
`Table` (file name, columns, column types); the per-trace ones also get a Parquet twin with the
same rows, columns and values. Writers (pipeline, redundancy, stats) and readers (stats, report,
export, the Python API) take file names and columns from here, and `RUN_FILES` lists every file
of a finished run with what it holds and the function that writes it.

>>> INDICATORS_TABLE.name, INDICATORS_TABLE.parquet_name
('indicators.csv', 'indicators.parquet')
>>> PROFILE_TABLE.columns
('trace_id', 'model', 'domain', 'group', 'source_id', 'Breadth', 'Depth', 'Structure', 'Metacognition', 'Efficiency')
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .indicators import INDICATORS
from .cognitive_profile import DIMENSION_NAMES
from .records import GRAPHS_FILE
from .tables import csv_text, fmt_float, fresh_tmp, read_csv, write_atomic

__all__ = ["Table", "RunFile", "INDICATORS_TABLE", "PROFILE_TABLE", "MODEL_PROFILES_TABLE",
           "MODEL_DOMAIN_PROFILES_TABLE", "MODEL_GROUP_PROFILES_TABLE", "REDUNDANCY_TABLE", "MODEL_REDUNDANCY_TABLE",
           "ANOMALIES_TABLE", "TABLES",
           "REDUNDANCY_COLUMNS", "REDUNDANCY_METRICS", "GRAPHS_FILE", "GRAPHS_PARQUET", "ERRORS_FILE",
           "NORMS_FILE", "RUN_JSON", "STATS_JSON", "STATS_CSV", "STATS_PARQUET", "PAIRWISE_CSV", "PAIRWISE_PARQUET", "ANALYSES_JSON", "ANALYSIS_TABLES",
           "LEVEL_REDUNDANCY_TABLE", "POSITIONS_TABLE", "OUTCOME_TOKENS_TABLE", "LENGTHS_TABLE", "TRANSITIONS_TABLE",
           "PARETO_TABLE", "ROLES_TABLE", "DYNAMICS_TABLE", "RUN_FILES", "OUTPUT_FILES",
           "write_table", "read_table", "graphs_arrow_schema", "graph_rows"]

# group: the third design factor beside model and domain (--group-field, --group, (?P<group>...) in
# --path-pattern), null for a trace without one. source_id: the record's own id (a question or sample
# id), null when the record has none; unlike trace_id it does not depend on the other inputs of the
# run, so runs of several models join on it.
KEYS = ("trace_id", "model", "domain", "group", "source_id")

# Column types: "str", "int" (nullable integer) or "float"; the CSV writes floats at 6 significant
# digits and None as an empty cell, and the Parquet twin holds exactly the values the CSV shows.
_FLOAT_METRICS = frozenset({"D", "Self", "Back", "R"})

# CoTJudger's redundancy columns, in its order (thinkprobe.redundancy computes them).
REDUNDANCY_COLUMNS: tuple[str, ...] = (*KEYS, "Acc", "Tokens", "|V|", "Iso", "|E|", "D", "in_max", "out_max",
                                       "Self", "Back", "L_eff", "R", "Unc", "DR", "SV", "EE", "EB")
REDUNDANCY_METRICS: tuple[str, ...] = REDUNDANCY_COLUMNS[len(KEYS):]


@dataclass(frozen=True)
class Table:
    """A CSV table of a run: its file name, columns and their types, and whether a Parquet twin
    (same stem) is written beside it."""

    name: str
    columns: tuple[str, ...]
    types: Mapping[str, str]
    parquet: bool = False

    @property
    def parquet_name(self) -> str | None:
        return self.name.rsplit(".", 1)[0] + ".parquet" if self.parquet else None

    def arrow_schema(self):
        import pyarrow as pa

        kinds = {"str": pa.string(), "int": pa.int64(), "float": pa.float64()}
        return pa.schema([pa.field(c, kinds[self.types[c]]) for c in self.columns])


def _table(name: str, columns: Sequence[str], ints: Iterable[str] = (), floats: Iterable[str] = (),
           parquet: bool = False) -> Table:
    ints, floats = set(ints), set(floats)
    types = {c: "int" if c in ints else "float" if c in floats else "str" for c in columns}
    return Table(name, tuple(columns), types, parquet)


INDICATORS_TABLE = _table("indicators.csv", (*KEYS, "units", "edges", "tokens", *INDICATORS),
                          ints=("units", "edges", "tokens"), floats=INDICATORS, parquet=True)
PROFILE_TABLE = _table("profile.csv", (*KEYS, *DIMENSION_NAMES), floats=DIMENSION_NAMES, parquet=True)
MODEL_PROFILES_TABLE = _table("model_profiles.csv", ("model", "n", *DIMENSION_NAMES), ints=("n",),
                              floats=DIMENSION_NAMES)
MODEL_DOMAIN_PROFILES_TABLE = _table("model_domain_profiles.csv", ("model", "domain", "n", *DIMENSION_NAMES),
                                     ints=("n",), floats=DIMENSION_NAMES)
# One row per model and group over the traces that have a group; only the header when none has one.
MODEL_GROUP_PROFILES_TABLE = _table("model_group_profiles.csv", ("model", "group", "n", *DIMENSION_NAMES),
                                    ints=("n",), floats=DIMENSION_NAMES)
# level: the question's difficulty level 1 (easiest) - 5 from the share of models that answered it
# correctly (thinkprobe.redundancy.analyses), null where fewer than 3 models answered it graded.
# sep_to: what L_eff and R run to (thinkprobe.redundancy.annotate.sep_to).
REDUNDANCY_TABLE = _table("redundancy.csv", (*REDUNDANCY_COLUMNS, "level", "sep_to"), parquet=True,
                          ints=[*(c for c in REDUNDANCY_METRICS if c not in _FLOAT_METRICS), "level"],
                          floats=_FLOAT_METRICS)
# Model means: every metric is a float (a mean), empty where no trace of the model has a value.
# n_graded: the traces Acc (and the answer transitions) are known for.
MODEL_REDUNDANCY_TABLE = _table("model_redundancy.csv", ("model", "n", "n_graded", *REDUNDANCY_METRICS),
                                ints=("n", "n_graded"), floats=REDUNDANCY_METRICS)
# CoTJudger's analyses (thinkprobe.redundancy.analyses): one table behind each report figure.
LEVEL_REDUNDANCY_TABLE = _table("redundancy_by_level.csv", ("model", "level", "n", "questions", *REDUNDANCY_METRICS),
                                ints=("level", "n", "questions"), floats=REDUNDANCY_METRICS)
POSITIONS_TABLE = _table("positions.csv", ("model", "bin", "start", "end", "units", "off_sep", "density", "off_share"),
                         ints=("bin", "units", "off_sep"), floats=("start", "end", "density", "off_share"))
OUTCOME_TOKENS_TABLE = _table("outcome_tokens.csv", ("model", "outcome", "n", "mean", "median", "q1", "q3"),
                              ints=("n",), floats=("mean", "median", "q1", "q3"))
LENGTHS_TABLE = _table("lengths.csv", ("model", "n", "mean", "min", "p10", "q1", "median", "q3", "p90", "max"),
                       ints=("n",), floats=("mean", "min", "p10", "q1", "median", "q3", "p90", "max"))
TRANSITIONS_TABLE = _table("transitions.csv", ("model", "n", "DR", "SV", "EE", "EB"), ints=("n",),
                           floats=("DR", "SV", "EE", "EB"))
PARETO_TABLE = _table("pareto.csv", ("model", "n", "Acc", "R", "frontier"), ints=("n", "frontier"), floats=("Acc", "R"))
# by: model or domain; name: which one (no "group": that is the third design factor's name elsewhere)
ROLES_TABLE = _table("roles.csv", ("by", "name", "type", "units", "share", "traces"), ints=("units", "traces"),
                     floats=("share",))
DYNAMICS_TABLE = _table("dynamics.csv", ("model", "bin", "start", "end", "type", "units", "share"),
                        ints=("bin", "units"), floats=("start", "end", "share"))
# Unusual traces (thinkprobe.anomalies): robust distance from the trace's own model, its drivers,
# and the failure risk (thinkprobe.risk); anomaly_reason says why a trace has no anomaly score.
ANOMALIES_TABLE = _table("anomalies.csv", (*KEYS, "anomaly", "anomaly_rank", "anomaly_reason", "drivers", "failure_risk",
                                           "failure_risk_in_sample"),
                         ints=("anomaly_rank", "failure_risk_in_sample"), floats=("anomaly", "failure_risk"), parquet=True)
ANALYSIS_TABLES: tuple[Table, ...] = (LEVEL_REDUNDANCY_TABLE, POSITIONS_TABLE, OUTCOME_TOKENS_TABLE, LENGTHS_TABLE,
                                      TRANSITIONS_TABLE, PARETO_TABLE, ROLES_TABLE, DYNAMICS_TABLE)
TABLES: tuple[Table, ...] = (INDICATORS_TABLE, PROFILE_TABLE, MODEL_PROFILES_TABLE, MODEL_DOMAIN_PROFILES_TABLE,
                             MODEL_GROUP_PROFILES_TABLE, REDUNDANCY_TABLE, MODEL_REDUNDANCY_TABLE, ANOMALIES_TABLE,
                             *ANALYSIS_TABLES)

GRAPHS_PARQUET = "graphs.parquet"
ERRORS_FILE = "errors.jsonl"
NORMS_FILE = "norms.json"
RUN_JSON = "run.json"
STATS_JSON = "stats.json"
STATS_CSV = "stats.csv"
STATS_PARQUET = "stats.parquet"
PAIRWISE_CSV = "pairwise.csv"
PAIRWISE_PARQUET = "pairwise.parquet"
ANALYSES_JSON = "analyses.json"


@dataclass(frozen=True)
class RunFile:
    name: str
    written_by: str  # the function that writes it
    what: str


RUN_FILES: tuple[RunFile, ...] = (
    RunFile(GRAPHS_FILE, "thinkprobe.pipeline.join_parts", "one Thought Graph record per trace (thinkprobe.records.GraphRecord)"),
    RunFile(GRAPHS_PARQUET, "thinkprobe.pipeline.join_parts", "the graph records as a table, units and edges nested (graphs_arrow_schema)"),
    *(RunFile(name, "thinkprobe.outputs.write_table", f"{t.name.rsplit('.', 1)[0].replace('_', ' ')} table")
      for t in TABLES for name in (t.name, t.parquet_name) if name),
    RunFile(ERRORS_FILE, "thinkprobe.pipeline.write_outputs", "one line per skipped record: file, record, field, reason"),
    RunFile(NORMS_FILE, "thinkprobe.pipeline.write_outputs", "mean and standard deviation per indicator"),
    RunFile(RUN_JSON, "thinkprobe.pipeline.write_outputs", "config, versions, encoder, device, counts, duplicate ids"),
    RunFile(STATS_JSON, "thinkprobe.stats.write_stats", "Kruskal-Wallis tests by model, domain and group (raw and length-controlled, chance-corrected), model/domain ratios, reliabilities, outcome validity, bootstrap intervals"),
    RunFile(STATS_CSV, "thinkprobe.stats.write_stats", "the tests of stats.json as a table (thinkprobe.stats.STATS_TABLE)"),
    RunFile(STATS_PARQUET, "thinkprobe.stats.write_stats", "stats.csv's Parquet twin"),
    RunFile(PAIRWISE_CSV, "thinkprobe.stats.write_stats",
            "every pair of models on every indicator and dimension: P(a > b) with its interval, the Brunner-Munzel "
            "p (question by question where the models answered the same questions: a sign-flip test), "
            "Holm-corrected p, raw and length-controlled (thinkprobe.pairwise.PAIRWISE_TABLE)"),
    RunFile(PAIRWISE_PARQUET, "thinkprobe.stats.write_stats", "pairwise.csv's Parquet twin"),
    RunFile(ANALYSES_JSON, "thinkprobe.redundancy.analyses.write_analyses",
            "CoTJudger's analyses: the difficulty-level rule, questions per level, and why an analysis is missing"),
)
OUTPUT_FILES: tuple[str, ...] = tuple(f.name for f in RUN_FILES)
REPORT_FILES = ("report.html", "report.md", "figures", "traces")
EXPORT_FILES = ("reasoningflow.jsonl", "graphs.node_link.jsonl", "graphml")  # `thinkprobe export`'s default outputs
# Everything the tool writes into a run folder: the run's files (RUN_FILES), the committed chunks, the
# report, and what `thinkprobe export` writes there by default. A rerun removes these only.
TOOL_FILES = (*OUTPUT_FILES, *REPORT_FILES, "parts", *EXPORT_FILES)
# The folders among TOOL_FILES: a rerun removes only the tool's files in them; a file of the user's stays.
TOOL_FOLDERS = ("figures", "traces", "parts", "graphml")


# ----------------------------------------------------------------------------- writing and reading


def _shown(value: Any, kind: str) -> Any:
    """The value as the CSV cell shows it, typed: what the Parquet twin stores."""
    if value is None or value == "":
        return None
    if kind == "float":
        return float(fmt_float(value))
    if kind == "int":
        return int(value)
    return str(value)


def _write_parquet(path: Path, table) -> None:
    import pyarrow.parquet as pq

    tmp = fresh_tmp(path)
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)


def write_table(run_dir: str | Path, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """The table's CSV and, when declared, its Parquet twin, each replaced atomically."""
    run_dir = Path(run_dir)
    write_atomic(run_dir / table.name, csv_text(rows, table.columns))
    if table.parquet:
        import pyarrow as pa

        data = {c: [_shown(r.get(c), table.types[c]) for r in rows] for c in table.columns}
        _write_parquet(run_dir / table.parquet_name, pa.table(data, schema=table.arrow_schema()))


def read_table(run_dir: str | Path, table: Table) -> list[dict[str, str]]:
    """A table of a run as dicts of the CSV's strings (columns as declared)."""
    return read_csv(Path(run_dir) / table.name)


# ----------------------------------------------------------------------------- graphs.parquet


def graphs_arrow_schema():
    """graphs.parquet: one row per graph record; units, edges and sections as lists of structs;
    the free-form parts (provenance, a programming record's tests) as JSON text, so records of
    different inputs share one schema; the field texts as a map from field name to text."""
    import pyarrow as pa

    unit = pa.struct([("id", pa.int64()), ("section", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                      ("text", pa.string()), ("type", pa.string()), ("segment", pa.int64()),
                      ("cues", pa.list_(pa.string())), ("tokens", pa.int64())])
    edge = pa.struct([("src", pa.int64()), ("dst", pa.int64()), ("type", pa.string()), ("polarity", pa.string()),
                      ("score", pa.float64())])
    section = pa.struct([("name", pa.string()), ("field", pa.string()), ("start", pa.int64()), ("end", pa.int64())])
    answer = [("unit", pa.int64()), ("value", pa.string()), ("kind", pa.string())]
    candidate = pa.struct([*answer, ("correct", pa.bool_()), ("reason", pa.string())])
    metric_types = REDUNDANCY_TABLE.arrow_schema()
    redundancy = pa.struct([
        ("metrics", pa.struct([metric_types.field(c) for c in REDUNDANCY_METRICS])),
        ("sep", pa.list_(pa.int64())), ("sep_path", pa.list_(pa.int64())), ("sep_target", pa.int64()),
        ("candidates", pa.list_(candidate)), ("final_answer", pa.struct(answer)), ("final_correct", pa.bool_()),
        ("off_path_positions", pa.list_(pa.float64())),
    ])
    return pa.schema([
        ("trace_id", pa.string()), ("model", pa.string()), ("domain", pa.string()), ("group", pa.string()),
        ("source", pa.string()), ("record", pa.int64()),
        ("question", pa.string()), ("gold_answer", pa.string()), ("correct", pa.bool_()),
        ("tests_json", pa.string()), ("provenance_json", pa.string()),
        ("sections", pa.list_(section)), ("fields", pa.map_(pa.string(), pa.string())),
        ("units", pa.list_(unit)), ("edges", pa.list_(edge)),
        ("indicators", pa.struct([(name, pa.float64()) for name in INDICATORS])),
        ("redundancy", redundancy),
    ])


def graph_rows(records: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Graph records as rows of graphs_arrow_schema()."""
    import json

    def as_json(value):
        return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)

    rows = []
    for rec in records:
        red = rec.get("redundancy")
        rows.append({
            **{k: rec[k] for k in ("trace_id", "model", "domain", "source", "record", "question", "gold_answer",
                                   "correct", "sections", "units", "edges", "indicators")},
            "group": rec.get("group"),
            "tests_json": as_json(rec.get("tests")),
            "provenance_json": as_json(rec["provenance"]),
            "fields": list(rec["fields"].items()),
            "redundancy": None if red is None else {
                "metrics": {c: None if red["metrics"].get(c) == "" else red["metrics"].get(c) for c in REDUNDANCY_METRICS},
                "sep": red["sep"], "sep_path": red["sep_path"], "sep_target": red["sep_target"],
                "candidates": red["candidates"], "final_answer": red["final_answer"],
                "final_correct": red["final_correct"], "off_path_positions": red["off_path_positions"],
            },
        })
    return rows


class GraphsParquetWriter:
    """Streams graph records into graphs.parquet in row groups (a long run never holds them all),
    then moves the file into place."""

    def __init__(self, path: str | Path, batch: int = 256):
        import pyarrow.parquet as pq

        self.path = Path(path)
        self.tmp = fresh_tmp(self.path)
        self.schema = graphs_arrow_schema()
        self.writer = pq.ParquetWriter(self.tmp, self.schema, compression="zstd")
        self.batch, self.pending = batch, []

    def write(self, record: Mapping[str, Any]) -> None:
        self.pending.append(record)
        if len(self.pending) >= self.batch:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self.pending:
            self.writer.write_table(pa.Table.from_pylist(graph_rows(self.pending), schema=self.schema))
            self.pending = []

    def close(self) -> None:
        self._flush()
        self.writer.close()
        os.replace(self.tmp, self.path)
