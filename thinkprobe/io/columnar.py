"""Parquet and Arrow IPC files, read batch by batch within --max-file-mb.

What a batch costs once its rows are Python objects is its dense size: every value a dictionary
index refers to counted each time it is referred to (a 3 KB Parquet file of 300 rows that all refer
to one 10 MiB dictionary value is 3 GB of text), and an Arrow IPC batch's buffers decompressed. So:

- a Parquet row group over the limit (its metadata's uncompressed size) is refused with its rows
  named, as before; its text columns that the file dictionary-encodes are read as dictionaries, so
  that nothing is expanded before it is counted;
- the metadata may understate a row group (a crafted footer; DELTA_BYTE_ARRAY values sharing their
  prefixes decode to far more than they are stored in), so what its batches decode to is counted
  too, and the rest of the group refused, its rows named, once that passes the limit; its batches
  are sized from its first rows, decoded alone (`_group_batches`);
- a batch whose dense size (`dense_bytes`, computed without expanding) is over the limit is halved
  until each piece is within it; a single row over the limit is refused by itself and the rows
  beside it are read;
- an Arrow IPC stream is read message by message (`_messages`): a record batch's size, and that of
  its buffers once decompressed (each compressed buffer starts with its uncompressed length), is
  read from its metadata before anything is decompressed, and a batch over the limit is refused
  with its rows named and skipped undecoded;
- what the rows of a whole file expand to may not pass --max-inflate-ratio times the file's bytes by
  more than `inflate_grace_mb`, as a `.gz` stream may not (`InflateGuard`): every row group or batch
  within the limit by itself, a 6 KB Parquet file of 40 rows that all refer to one 51 MB dictionary
  value still took 21 s to read and refuse row by row (and 600 rows, 5 minutes), and thirty 10 MB
  row groups of repeated text fit in 36 KB. Past that, the rest of the file is refused, its rows named.
  What is decoded and carried by no row counts too: a row group's dictionaries (once), a row group
  refused for decoding past the limit, an Arrow file's dictionaries each time a record batch decodes
  them again; and each row ROW_BYTES, so that millions of empty rows are not free;
- string views, run-end encoded and list-view columns refer to stored values from many rows, as
  dictionaries do, and count once per row (`dense_bytes`); an Arrow file's dictionaries are held to
  the limit together (ids and deltas), not each alone;
- a gzipped Parquet file is decompressed once, within the limit (reading it in place seeks in the gzip
  stream, which decompresses it again from its start each time).
A row group's size is taken before it is decoded from the largest of what its footer says and what its
pages' own headers say (`parquet_pages`): a footer that said 1,000 bytes for six 250 MB zstd dictionary
pages had Arrow decode them (6.3 GB from a 50 KB file) before anything could be counted.
"""
from __future__ import annotations

import io
import struct
from typing import BinaryIO, Iterator

import numpy as np

from ..records import InputError
from .limits import (READ_CHUNK, WHOLE_FILE, InflateGuard, InputLimits, TooLarge, file_reason, guard_of, plain_size,
                     read_whole, size_text)
from .parquet_pages import decoded_size

__all__ = ["PARQUET_BATCH_ROWS", "dense_bytes", "iter_parquet", "iter_arrow"]

PARQUET_BATCH_ROWS = 1024  # rows per batch of a Parquet row group, at most (see _group_batches)
FIRST_BATCH_ROWS = 64  # rows of a row group decoded first, to size its batches from what they decode to
ROW_BYTES = 100  # what a row costs as a Python dict beyond its values, counted with them: 50M rows of nothing are not free

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
    if pa.types.is_string_view(kind) or pa.types.is_binary_view(kind):  # views share their data buffers
        return 16 * len(array) + int(_view_lengths(array).sum())
    if pa.types.is_run_end_encoded(kind):  # a value stands for every row of its run
        lo, hi = array.offset, array.offset + len(array)
        ends = np.asarray(array.run_ends, dtype=np.int64)
        starts = np.concatenate([[0], ends[:-1]])
        runs = np.clip(np.minimum(ends, hi) - np.maximum(starts, lo), 0, None)
        return array.run_ends.nbytes + int((runs * _element_sizes(array.values)).sum())
    if pa.types.is_list_view(kind) or pa.types.is_large_list_view(kind):  # views may overlap: each counted
        values = array.values
        sums = np.concatenate([[0], np.cumsum(_element_sizes(values))])
        start = np.clip(np.asarray(array.offsets.fill_null(0), dtype=np.int64), 0, len(values))
        end = np.clip(start + np.asarray(array.sizes.fill_null(0), dtype=np.int64), start, len(values))
        return array.offsets.nbytes + array.sizes.nbytes + int((sums[end] - sums[start]).sum())
    return array.nbytes


def _view_lengths(array) -> np.ndarray:
    """The lengths of a string_view / binary_view array's values, from its 16-byte views (the length first)."""
    views = np.frombuffer(array.buffers()[1], dtype=np.int32).reshape(-1, 4)[:, 0]
    return np.clip(views[array.offset:array.offset + len(array)].astype(np.int64), 0, None)


def _element_sizes(values) -> np.ndarray:
    """The dense bytes of each value of `values` (an array): a text's length, a number's width, a
    dictionary index's value; for nested values, the whole array's dense bytes each (an upper bound)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = values.type
    if pa.types.is_dictionary(kind):
        return _element_sizes(values.dictionary)[np.asarray(values.indices.fill_null(0), dtype=np.int64)]
    if pa.types.is_string_view(kind) or pa.types.is_binary_view(kind):
        return _view_lengths(values)
    if any(check(kind) for check in (pa.types.is_binary, pa.types.is_string, pa.types.is_large_binary,
                                      pa.types.is_large_string)):
        return np.asarray(pc.binary_length(values).fill_null(0), dtype=np.int64)
    if getattr(kind, "bit_width", 0) >= 8:
        return np.full(len(values), kind.bit_width // 8, dtype=np.int64)
    return np.full(len(values), dense_bytes(values), dtype=np.int64)


def _shares_values(kind) -> bool:
    """Whether arrays of type `kind` may refer to one stored value from many rows (a dictionary, a view,
    a run), anywhere inside it: their buffers then understate what their rows hold."""
    import pyarrow as pa

    if any(check(kind) for check in (pa.types.is_dictionary, pa.types.is_string_view, pa.types.is_binary_view,
                                      pa.types.is_run_end_encoded, pa.types.is_list_view, pa.types.is_large_list_view)):
        return True
    return any(_shares_values(kind.field(k).type) for k in range(kind.num_fields))


def _batch_bytes(batch) -> int:
    if not any(_shares_values(f.type) for f in batch.schema):  # dense already: within its group's or batch's size
        return batch.nbytes
    return sum(dense_bytes(column) for column in batch.columns)


def _group_batches(parquet, group: int, limit: int | None) -> Iterator:
    """The batches of a Parquet row group, in order. Without a limit, PARQUET_BATCH_ROWS rows each.
    With one, what a batch decodes to is not known before it is decoded (the metadata may understate
    it: a crafted file, or DELTA_BYTE_ARRAY values that share their prefixes), so the group's first
    FIRST_BATCH_ROWS rows are decoded alone, and every batch after has as many rows as would decode to
    a quarter of the limit at the largest row size seen so far in the group (at most
    PARQUET_BATCH_ROWS): Arrow holds one batch of a few rows over that, not PARQUET_BATCH_ROWS of them.
    (Not the file's: a crafted file's first group of small rows sized a later group's batches.)"""
    if limit is None:
        yield from parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=[group])
        return
    batches = parquet.iter_batches(batch_size=FIRST_BATCH_ROWS, row_groups=[group])
    first = next(batches, None)
    if first is None:
        return
    yield first
    skip = first.num_rows
    if parquet.metadata.row_group(group).num_rows <= 4 * FIRST_BATCH_ROWS:  # a few batches: cheaper than a new reader
        yield from batches
        return
    dictionaries: dict[int, int] = {}  # a column read as dictionary holds its values there
    per_row = (_held_bytes(first, dictionaries) + sum(dictionaries.values())) / max(1, first.num_rows)
    rows = int(min(PARQUET_BATCH_ROWS, max(FIRST_BATCH_ROWS, limit // 4 / max(per_row, 1.0))))
    for batch in parquet.iter_batches(batch_size=rows, row_groups=[group]):  # from the group's first row again
        if skip >= batch.num_rows:
            skip -= batch.num_rows
            continue
        yield batch.slice(skip) if skip else batch
        skip = 0


def _held_bytes(batch, dictionaries: dict[int, int]) -> int:
    """The bytes Arrow decoded for `batch` (its buffers, not expanded): a dictionary column's indices,
    its dictionary (one per column chunk) kept in `dictionaries` by column, counted once per row group."""
    import pyarrow as pa

    size = 0
    for k, column in enumerate(batch.columns):
        if pa.types.is_dictionary(column.type):
            size += column.indices.nbytes
            dictionaries[k] = max(dictionaries.get(k, 0), column.dictionary.nbytes)
        else:
            size += column.nbytes
    return size


class _Stopped(Exception):
    """The file's rows expanded past its `InflateGuard` at row `index`: the rest of the file is refused."""

    def __init__(self, index: int, reason: str):
        super().__init__(reason)
        self.index = index


def _expansion_guard(source: str, fh: BinaryIO, limits: InputLimits) -> InflateGuard | None:
    """What the file's rows may expand to: max_inflate_ratio times its bytes on disk, plus the grace
    (a gzipped file's own guard, which counts its compressed bytes); None without a ratio."""
    if not limits.max_inflate_ratio:
        return None
    if (guard := guard_of(fh)) is not None:
        return guard
    guard = InflateGuard(source, limits)
    guard.part(source, plain_size(fh) or 0)
    return guard


def _rows(source: str, batch, index: int, limits: InputLimits, guard: InflateGuard | None = None) -> Iterator[Item]:
    """The rows of `batch` (its first row is record `index`), as Python objects a piece within the
    file limit and the room `guard` leaves at a time; a row over the limit by itself is refused, and
    one past the guard's room stops the file (`_Stopped`)."""
    limit = limits.file_bytes
    room = guard.room() if guard is not None else None
    size = _batch_bytes(batch) + ROW_BYTES * batch.num_rows if limit is not None or room is not None else 0
    if (limit is None or size <= limit) and (room is None or size <= room):
        if guard is not None:
            guard.add(size)
        for k, row in enumerate(_undictionaried(batch).to_pylist()):
            yield source, index + k, row
    elif batch.num_rows == 1:
        if limit is not None and size > limit:
            yield source, index, InputError(source, index, "", file_reason(f"row {index} (its values expanded)", limits, size))
            return
        _charge(guard, size, index)  # past the guard's room: raises
    else:
        half = batch.num_rows // 2
        yield from _rows(source, batch.slice(0, half), index, limits, guard)
        yield from _rows(source, batch.slice(half), index + half, limits, guard)


def _stated_size(fh: BinaryIO, meta) -> int:
    """What a Parquet row group decodes to by the largest of its footer's word (its total_byte_size, its
    column chunks' uncompressed sizes) and its pages' headers (`parquet_pages.decoded_size`), before
    anything is decoded: a footer can understate it."""
    footer = max(meta.total_byte_size, sum(max(meta.column(c).total_uncompressed_size, 0) for c in range(meta.num_columns)))
    return max(footer, decoded_size(fh, meta) or 0)


def _plain_type(kind):
    """`kind` with every dictionary in it replaced by its values' type."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return _plain_type(kind.value_type)
    if pa.types.is_struct(kind):
        return pa.struct([kind.field(i).with_type(_plain_type(kind.field(i).type)) for i in range(kind.num_fields)])
    if pa.types.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(_plain_type(kind.value_type)))
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_plain_type(kind.value_type)))
    if pa.types.is_fixed_size_list(kind):
        return pa.list_(kind.value_field.with_type(_plain_type(kind.value_type)), kind.list_size)
    if pa.types.is_map(kind):
        return pa.map_(kind.key_field.with_type(_plain_type(kind.key_type)),
                       kind.item_field.with_type(_plain_type(kind.item_type)))
    return kind


def _undictionaried(batch):
    """`batch` with its dictionaries decoded (its dense size is within the limits by now): Arrow turns a
    dictionary nested in a list of structs into Python values several times slower than its plain values
    (the ReasoningFlow corpus as dictionary-encoded Parquet: 3.8 s against 0.6 s). As it is where Arrow
    cannot cast a type."""
    import pyarrow as pa

    schema = pa.schema([f.with_type(_plain_type(f.type)) for f in batch.schema])
    if schema.equals(batch.schema):
        return batch
    try:
        return batch.cast(schema)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return batch


def _charge(guard: InflateGuard | None, size: int, index: int) -> None:
    """Count `size` decoded bytes that no row carries (dictionaries, a refused row group) against the
    file's guard; past its room, the file stops at row `index`."""
    if guard is not None:
        try:
            guard.add(size)
        except TooLarge as exc:
            raise _Stopped(index, str(exc)) from None


def _stopped(source: str, stop: _Stopped, rows: int | None) -> Item:
    locator = f"rows {stop.index}-{rows - 1}" if rows is not None and rows > stop.index else f"rows {stop.index} and after"
    return source, locator, InputError(source, locator, "", str(stop))


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
    """Row group by row group: one over --max-file-mb uncompressed by its metadata, or once what its
    batches decode to passes it (the rest of it), is refused with its rows named, and the next one is
    read; each batch's rows within the limit once dictionary values are expanded (`_rows`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    index = 0
    guard = _expansion_guard(source, fh, limits)
    if guard_of(fh) is not None:  # a .parquet.gz: seeks in a gzip stream decompress it again from its start
        try:
            fh = io.BytesIO(read_whole(fh, limits, f"{source} decompressed"))
        except TooLarge as exc:
            yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"{exc}; or decompress it: Parquet "
                                                                          "compresses its own pages")
            return
    try:
        parquet = pq.ParquetFile(fh)
        if limits.file_bytes is not None and (dictionary := _dictionary_columns(parquet)):
            try:  # read as dictionaries: a value referred to by every row is not copied into each
                parquet = pq.ParquetFile(fh, metadata=parquet.metadata, read_dictionary=dictionary)
            except pa.ArrowException:
                pass
        for group in range(parquet.num_row_groups):
            meta = parquet.metadata.row_group(group)
            end = index + meta.num_rows
            size = _stated_size(fh, meta) if limits.file_bytes is not None or guard is not None else 0
            if limits.file_bytes is not None and size > limits.file_bytes:
                locator = f"rows {index}-{end - 1}"
                yield source, locator, InputError(source, locator, "", file_reason(f"row group {group}", limits, size))
                index = end
                continue
            if guard is not None and size > guard.room():
                _charge(guard, size, index)  # past the file's room before it is decoded: the file stops here
            decoded, dictionaries = 0, {}
            for batch in _group_batches(parquet, group, limits.file_bytes):
                decoded += _held_bytes(batch, dictionaries)
                if limits.file_bytes is not None and decoded + sum(dictionaries.values()) > limits.file_bytes:
                    locator = f"rows {index}-{end - 1}"  # the metadata understated it: the rest is not read
                    yield source, locator, InputError(source, locator, "", (
                        f"row group {group} decodes to more than {limits.max_file_mb:g} MiB where its metadata says "
                        f"{size_text(meta.total_byte_size)}: over the limit for what is read whole; rows {index}-"
                        f"{end - 1} not read (raise it with --max-file-mb)"))
                    _charge(guard, decoded, end)  # decoded all the same
                    break
                yield from _rows(source, batch, index, limits, guard)
                index += batch.num_rows
            _charge(guard, sum(dictionaries.values()), end)  # the group's dictionaries, decoded once (rows may use none)
            index = end
    except _Stopped as stop:
        if stop.index < parquet.metadata.num_rows:  # else nothing was left to read
            yield _stopped(source, stop, parquet.metadata.num_rows)
    except pa.ArrowException as exc:  # before any row: the whole file, as other formats name it
        where = index if index else WHOLE_FILE
        yield source, where, InputError(source, where, "", f"cannot read Parquet: {exc}")


# ----------------------------------------------------------------------------- Arrow IPC, message by message

_CONTINUATION, _EOS = b"\xff\xff\xff\xff", b"\xff\xff\xff\xff\x00\x00\x00\x00"
_SCHEMA, _DICTIONARY, _RECORD_BATCH = 1, 2, 3  # the MessageHeader union's types (Message.fbs)


class _Malformed(ValueError):
    """An IPC message whose framing or metadata cannot be read."""


class _Reader:
    """Exact reads from a file handle, with bytes already read put back first."""

    def __init__(self, fh: BinaryIO, head: bytes = b""):
        self.fh, self.head = fh, head

    def read(self, n: int) -> bytes:
        parts, self.head = [self.head[:n]], self.head[n:]
        got = len(parts[0])
        while got < n and (chunk := self.fh.read(min(READ_CHUNK, n - got))):  # joined once: a body of
            parts.append(chunk)  # hundreds of MiB was copied again at every 1 MiB read
            got += len(chunk)
        return b"".join(parts)

    def skip(self, n: int) -> None:
        while n > 0 and (chunk := self.read(min(READ_CHUNK, n))):
            n -= len(chunk)


def _table(meta: bytes, pos: int):
    """A flatbuffer table at `pos`: field number -> the position of its value, or None if absent."""
    vtable = pos - struct.unpack_from("<i", meta, pos)[0]
    size = struct.unpack_from("<H", meta, vtable)[0]

    def field(i: int) -> int | None:
        slot = 4 + 2 * i
        offset = struct.unpack_from("<H", meta, vtable + slot)[0] if slot < size else 0
        return pos + offset if offset else None
    return field


def _deref(meta: bytes, pos: int) -> int:
    return pos + struct.unpack_from("<I", meta, pos)[0]


def _header(meta: bytes) -> tuple[int, int, int, list[tuple[int, int]], bool, int, bool]:
    """(header type, body length, rows, buffers (offset, length), compressed, dictionary id, delta)
    of an IPC message's flatbuffer metadata (Message.fbs, Schema.fbs)."""
    try:
        message = _table(meta, _deref(meta, 0))
        kind = meta[message(1)] if message(1) is not None else 0
        body = struct.unpack_from("<q", meta, message(3))[0] if message(3) is not None else 0
        if kind == _SCHEMA:
            return kind, body, 0, [], False, 0, False
        if kind not in (_DICTIONARY, _RECORD_BATCH):
            raise _Malformed(f"an IPC message of type {kind}, not a schema, dictionary or record batch")
        batch = _table(meta, _deref(meta, message(2)))
        dictionary_id, delta = 0, False
        if kind == _DICTIONARY:
            dictionary_id = struct.unpack_from("<q", meta, batch(0))[0] if batch(0) is not None else 0
            delta = bool(meta[batch(2)]) if batch(2) is not None else False
            batch = _table(meta, _deref(meta, batch(1)))
        rows = struct.unpack_from("<q", meta, batch(0))[0] if batch(0) is not None else 0
        buffers = []
        if batch(2) is not None:
            vector = _deref(meta, batch(2))
            buffers = [struct.unpack_from("<qq", meta, vector + 4 + 16 * k)
                       for k in range(struct.unpack_from("<I", meta, vector)[0])]
        return kind, body, rows, buffers, batch(3) is not None, dictionary_id, delta
    except (struct.error, IndexError, TypeError) as exc:
        raise _Malformed(f"unreadable IPC message metadata ({exc})") from None


def _plain_size(body: bytes, buffers: list[tuple[int, int]], compressed: bool) -> int:
    """A message body's bytes once decompressed: a compressed buffer starts with its uncompressed
    length (-1: stored as it is), read without decompressing anything."""
    if not compressed:
        return len(body)
    total = 0
    for offset, length in buffers:
        if length >= 8 and 0 <= offset and offset + 8 <= len(body):
            plain = struct.unpack_from("<q", body, offset)[0]
            total += length - 8 if plain == -1 else max(plain, 0)
        else:
            total += max(length, 0)
    return total


def _messages(reader: _Reader, limit: int | None) -> Iterator[tuple[int, bytes | None, int, int, int, bool]]:
    """(header type, the message's bytes or None where its body was over `limit` and skipped, rows,
    size decompressed, dictionary id, delta) for each message of an IPC stream, to its end."""
    while True:
        head = reader.read(4)
        if head == _CONTINUATION:
            head = reader.read(4)
        if len(head) < 4:
            return
        (length,) = struct.unpack("<i", head)
        if length == 0:
            return
        if length < 0 or (limit is not None and length > limit):
            raise _Malformed(f"an IPC message's metadata length {length} is impossible")
        meta = reader.read(length)
        if len(meta) < length:
            raise _Malformed("the file ends inside an IPC message")
        kind, body_length, rows, buffers, compressed, dictionary_id, delta = _header(meta)
        if body_length < 0:
            raise _Malformed(f"an IPC message's body length {body_length} is impossible")
        if limit is not None and body_length > limit:
            reader.skip(body_length)
            yield kind, None, rows, body_length, dictionary_id, delta
            continue
        body = reader.read(body_length)
        if len(body) < body_length:
            raise _Malformed("the file ends inside an IPC message's body")
        raw = _CONTINUATION + head + meta + body
        yield kind, raw, rows, _plain_size(body, buffers, compressed), dictionary_id, delta


def iter_arrow(source: str, fh: BinaryIO, limits: InputLimits) -> Iterator[Item]:
    """An Arrow IPC stream (what `datasets` writes as data-*.arrow) or an Arrow IPC file (the stream
    it holds after its magic), message by message: a record batch over --max-file-mb decompressed
    is refused with its rows named before it is decompressed, as a Parquet row group is, and each
    batch's rows are read within the limit once dictionary values are expanded (`_rows`)."""
    import pyarrow as pa

    index, limit = 0, limits.file_bytes
    schema, dictionaries = b"", {}
    guard = _expansion_guard(source, fh, limits)
    try:
        head = fh.read(8)
        reader = _Reader(fh, b"" if head[:6] == b"ARROW1" else head)
        for kind, raw, rows, size, dictionary_id, delta in _messages(reader, limit):
            if kind == _SCHEMA and raw is not None:
                schema, dictionaries = raw, {}
            elif kind == _DICTIONARY:
                held = size + sum(n for i, (_, n) in dictionaries.items() if delta or i != dictionary_id)
                if raw is None or (limit is not None and held > limit):
                    where = index if index else WHOLE_FILE
                    what = (f"dictionary batch {dictionary_id}" if raw is None or held == size else
                            f"the dictionaries with batch {dictionary_id}")
                    yield source, where, InputError(source, where, "", file_reason(what, limits, held)
                                                    + "; the batches after it are not read")
                    return
                parts, before = dictionaries.get(dictionary_id, ([], 0)) if delta else ([], 0)
                dictionaries[dictionary_id] = (parts + [raw], before + size)
            elif kind == _RECORD_BATCH:
                if raw is None or (limit is not None and size > limit):
                    locator = f"rows {index}-{index + rows - 1}"
                    yield source, locator, InputError(source, locator, "", file_reason("record batch", limits, size))
                    index += rows
                    continue
                if not schema:
                    raise _Malformed("a record batch before the schema")
                # every batch decodes the dictionaries again: their bytes count each time
                _charge(guard, sum(n for _, n in dictionaries.values()), index)
                stream = schema + b"".join(b"".join(parts) for parts, _ in dictionaries.values()) + raw + _EOS
                batch = pa.ipc.open_stream(pa.py_buffer(stream)).read_next_batch()
                yield from _rows(source, batch, index, limits, guard)
                index += batch.num_rows
        if not schema:
            raise _Malformed("no schema: not an Arrow IPC stream or file")
    except _Stopped as stop:  # the rows after it are not counted: an IPC stream does not say how many
        yield _stopped(source, stop, None)
    except (pa.ArrowException, _Malformed) as exc:
        where = index if index else WHOLE_FILE
        yield source, where, InputError(source, where, "", f"cannot read Arrow: {exc}")
