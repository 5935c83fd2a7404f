"""The input layer, the first pipeline stage (load -> segment -> type -> link -> graph ->
indicators -> profile): streams the files people already have into `Trace` records, finding the
reasoning in known fields, content blocks or inline tags and noting where each value came from.

- `sources`: the inputs and the field map (where reasoning, model, domain, id, gold are read);
- `limits`: size limits on records, files, decompression and trace text, and the bounded reads;
- `formats`: one reader per file format (`READERS`), folders, record counting;
- `columnar`: Parquet and Arrow IPC, batch by batch within the file limit (dictionary values expanded);
- `tags`: reasoning inside tags; `detect`: where a record keeps each value;
- `traces`: records to traces with run-unique ids; `peek`: what `thinkprobe peek` shows.
"""
from __future__ import annotations

from .detect import detect
from .formats import READERS, count_inputs, count_records, iter_records
from .limits import InputLimits
from .peek import format_peek, peek, unknown_fix, usable
from .sources import FieldMap, Source, parse_source, source_path
from .traces import iter_inputs, iter_traces, record_traces

__all__ = [
    "FieldMap", "Source", "parse_source", "source_path", "InputLimits", "READERS", "iter_records", "count_records", "count_inputs",
    "iter_traces", "iter_inputs", "record_traces", "detect", "peek", "format_peek", "usable", "unknown_fix",
]
