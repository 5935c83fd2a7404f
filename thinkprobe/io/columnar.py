"""Parquet and Arrow IPC files, read batch by batch within --max-file-mb.

What a batch costs once its rows are Python objects is its dense size: every value a dictionary
index refers to counted each time it is referred to (a 3 KB Parquet file of 300 rows that all refer
to one 10 MiB dictionary value is 3 GB of text), and an Arrow IPC batch's buffers decompressed. So:

- a Parquet row group over the limit (its metadata's uncompressed size) is refused with its rows
  named, as before; its text columns that the file dictionary-encodes are read as dictionaries, so
  that nothing is expanded before it is counted;
- a batch whose dense size (`dense_bytes`, computed without expanding) is over the limit is halved
  until each piece is within it; a single row over the limit is refused by itself and the rows
  beside it are read;
- an Arrow IPC batch over the limit (decompressed) is refused with its rows named.
"""
from __future__ import annotations

from typing import BinaryIO, Iterator

from ..records import InputError
from .limits import WHOLE_FILE, InputLimits, file_reason

__all__ = ["PARQUET_BATCH_ROWS", "dense_bytes", "iter_parquet", "iter_arrow"]

PARQUET_BATCH_ROWS = 1024

Item = tuple[str, "int | str", "dict | InputError"]


def dense_bytes(array) -> int:
    """The bytes `array` holds once every dictionary index is replaced by its value (what its rows
    cost as Python objects, roughly), computed without expanding anything; a slice counts its rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_dictionary(kind):
        indices = array.indices
        values = array.dictionary
        if pa.types.is_binary(values.type) or pa.types.is_string(values.type) or \
                pa.types.is_large_binary(values.type) or pa.types.is_large_string(values.type):
            sizes = pc.binary_length(values)
        elif getattr(values.type, "bit_width", 0) >= 8:
            return indices.nbytes + len(indices) * (values.type.bit_width // 8)
        else:  # nested values: at most the whole dictionary per index
            return indices.nbytes + len(indices) * values.nbytes
        total = pc.sum(pc.take(sizes, indices)).as_py() if len(indices) else 0
        return indices.nbytes + (total or 0)
    if pa.types.is_map(kind):  # its keys and items are the whole array's, whatever the slice
        start, end = (array.offsets[0].as_py(), array.offsets[-1].as_py()) if len(array) else (0, 0)
        return array.offsets.nbytes + sum(dense_bytes(part.slice(start, end - start)) for part in (array.keys, array.items))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return array.offsets.nbytes + dense_bytes(array.flatten())
    if pa.types.is_fixed_size_list(kind):
        return dense_bytes(array.flatten())
    if pa.types.is_struct(kind):
        return sum(dense_bytes(child) for child in array.flatten())
    return array.nbytes


def _has_dictionary(kind) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return True
    return any(_has_dictionary(kind.field(k).type) for k in range(kind.num_fields))


def _batch_bytes(batch) -> int:
    if not any(_has_dictionary(f.type) for f in batch.schema):  # dense already: within its group's or batch's size
        return batch.nbytes
    return sum(dense_bytes(column) for column in batch.columns)


def _rows(source: str, batch, index: int, limits: InputLimits) -> Iterator[Item]:
    """The rows of `batch` (its first row is record `index`), as Python objects a piece within the
    file limit at a time; a row over the limit by itself is refused."""
    limit = limits.file_bytes
    size = _batch_bytes(batch) if limit is not None else 0
    if limit is None or size <= limit:
        for k, row in enumerate(batch.to_pylist()):
            yield source, index + k, row
    elif batch.num_rows == 1:
        yield source, index, InputError(source, index, "", file_reason(f"row {index} (its values expanded)", limits, size))
    else:
        half = batch.num_rows // 2
        yield from _rows(source, batch.slice(0, half), index, limits)
        yield from _rows(source, batch.slice(half), index + half, limits)


def _dictionary_columns(parquet) -> list[str]:
    """The Parquet file's byte-array columns that some row group dictionary-encodes."""
    meta, schema = parquet.metadata, parquet.schema
    found = set()
    for group in range(meta.num_row_groups):
        row_group = meta.row_group(group)
        for c in range(row_group.num_columns):
            column = row_group.column(c)
            if schema.column(c).physical_type == "BYTE_ARRAY" and any("DICTIONARY" in e for e in column.encodings):
                found.add(column.path_in_schema)
    return sorted(found)


def iter_parquet(source: str, fh: BinaryIO, limits: InputLimits) -> Iterator[Item]:
    """Row group by row group (Arrow reads a row group whole): one over --max-file-mb uncompressed
    is refused with its rows named, and the next one is read; each batch's rows within the limit
    once dictionary values are expanded (`_rows`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    index = 0
    try:
        parquet = pq.ParquetFile(fh)
        if limits.file_bytes is not None and (dictionary := _dictionary_columns(parquet)):
            try:  # read as dictionaries: a value referred to by every row is not copied into each
                parquet = pq.ParquetFile(fh, metadata=parquet.metadata, read_dictionary=dictionary)
            except pa.ArrowException:
                pass
        for group in range(parquet.num_row_groups):
            meta = parquet.metadata.row_group(group)
            if limits.file_bytes is not None and meta.total_byte_size > limits.file_bytes:
                locator = f"rows {index}-{index + meta.num_rows - 1}"
                yield source, locator, InputError(source, locator, "", file_reason(f"row group {group}", limits,
                                                                                  meta.total_byte_size))
                index += meta.num_rows
                continue
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=[group]):
                yield from _rows(source, batch, index, limits)
                index += batch.num_rows
    except pa.ArrowException as exc:  # before any row: the whole file, as other formats name it
        where = index if index else WHOLE_FILE
        yield source, where, InputError(source, where, "", f"cannot read Parquet: {exc}")


def iter_arrow(source: str, fh: BinaryIO, limits: InputLimits) -> Iterator[Item]:
    """An Arrow IPC stream (what `datasets` writes as data-*.arrow) or an Arrow IPC file, batch by
    batch (the file format read from the file, not loaded whole first). A batch over --max-file-mb
    (decompressed) is refused with its rows named, as a Parquet row group is; each batch's rows are
    read within the limit once dictionary values are expanded (`_rows`)."""
    import pyarrow as pa

    index = 0
    try:
        try:
            reader = pa.ipc.open_stream(fh)
        except pa.ArrowInvalid:  # not a stream: the random-access IPC file format
            fh.seek(0)
            reader = pa.ipc.open_file(fh)
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        for batch in batches:
            if limits.file_bytes is not None and batch.nbytes > limits.file_bytes:
                # decompressed already, but not turned into Python objects (several times its size)
                locator = f"rows {index}-{index + batch.num_rows - 1}"
                yield source, locator, InputError(source, locator, "", file_reason("record batch", limits, batch.nbytes))
                index += batch.num_rows
                continue
            yield from _rows(source, batch, index, limits)
            index += batch.num_rows
    except pa.ArrowException as exc:
        where = index if index else WHOLE_FILE
        yield source, where, InputError(source, where, "", f"cannot read Arrow: {exc}")
