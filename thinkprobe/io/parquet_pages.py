"""What a Parquet row group decodes to, read from its pages' own headers before anything is decoded.

A row group's sizes in the footer (its total_byte_size, each column chunk's total_uncompressed_size)
are the writer's word, and a crafted file can understate them: a 50 KB file whose footer said 1,000
bytes held six zstd dictionary pages of 250 MB each, which Arrow decoded whole (6.3 GB) before any
check could run. Each page starts with a header (Thrift's compact protocol, parquet.thrift's
PageHeader) that states its uncompressed size, the size Arrow allocates to decode it; the pages of a
column chunk follow one another over the chunk's compressed bytes. `decoded_size` walks those headers
(a few bytes each, read at their offsets) and sums what the pages say they decode to.
"""
from __future__ import annotations

from typing import BinaryIO

__all__ = ["decoded_size", "page_header"]

FIRST_BYTES = 256  # bytes read first for a page header: most are 20-60 bytes
HEADER_BYTES = 1 << 16  # read where those do not hold it (its statistics may hold min / max values)
MAX_PAGES = 100_000  # pages walked per column chunk, at most


class _Cut(ValueError):
    """A header that does not parse as a PageHeader within the bytes read."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise _Cut("a varint runs past the bytes read")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _skip(buf: bytes, pos: int, kind: int, depth: int = 0) -> int:
    """The position after a value of compact-protocol type `kind` at `pos`."""
    if depth > 32:
        raise _Cut("nested too deeply")
    if kind in (1, 2):  # a boolean inside a list: one byte (a field's boolean is in its header)
        return pos + 1
    if kind == 3:
        return pos + 1
    if kind in (4, 5, 6):
        return _varint(buf, pos)[1]
    if kind == 7:
        return pos + 8
    if kind == 8:
        size, pos = _varint(buf, pos)
        return pos + size
    if kind in (9, 10):
        if pos >= len(buf):
            raise _Cut("a list header past the bytes read")
        head = buf[pos]
        pos += 1
        size, element = head >> 4, head & 0x0F
        if size == 15:
            size, pos = _varint(buf, pos)
        for _ in range(size):
            pos = _skip(buf, pos, element, depth + 1)
            if pos > len(buf):
                raise _Cut("a list past the bytes read")
        return pos
    if kind == 11:
        size, pos = _varint(buf, pos)
        if size:
            if pos >= len(buf):
                raise _Cut("a map header past the bytes read")
            key, item = buf[pos] >> 4, buf[pos] & 0x0F
            pos += 1
            for _ in range(size):
                pos = _skip(buf, _skip(buf, pos, key, depth + 1), item, depth + 1)
                if pos > len(buf):
                    raise _Cut("a map past the bytes read")
        return pos
    if kind == 12:
        return _struct(buf, pos, depth + 1)[1]
    raise _Cut(f"compact-protocol type {kind}")


def _struct(buf: bytes, pos: int, depth: int = 0) -> tuple[dict[int, int], int]:
    """A struct's top-level integer fields {field id: value} and the position after it."""
    fields: dict[int, int] = {}
    field = 0
    while True:
        if pos >= len(buf):
            raise _Cut("a struct past the bytes read")
        head = buf[pos]
        pos += 1
        if head == 0:
            return fields, pos
        delta, kind = head >> 4, head & 0x0F
        if delta:
            field += delta
        else:
            raw, pos = _varint(buf, pos)
            field = _zigzag(raw)
        if kind in (1, 2):
            continue
        if kind in (4, 5, 6):
            raw, pos = _varint(buf, pos)
            fields[field] = _zigzag(raw)
        else:
            pos = _skip(buf, pos, kind, depth)


def page_header(buf: bytes) -> tuple[int, int, int]:
    """(uncompressed size, compressed size, header length) of the PageHeader at the start of `buf`.

    >>> page_header(bytes([0x15, 0x00, 0x15, 0xc8, 0x01, 0x15, 0x14, 0x00]))  # type 0, 100 and 10 bytes
    (100, 10, 8)
    """
    fields, end = _struct(buf, 0)
    if 2 not in fields or 3 not in fields or fields[2] < 0 or fields[3] < 0:
        raise _Cut("no page sizes")
    return fields[2], fields[3], end


def _header_at(fh: BinaryIO, pos: int) -> tuple[int, int, int]:
    """`page_header` of the page at `pos`: FIRST_BYTES read, HEADER_BYTES where those cut it short (reading
    64 KiB for each page of a file of small pages would read it many times over)."""
    fh.seek(pos)
    try:
        return page_header(fh.read(FIRST_BYTES))
    except _Cut:
        fh.seek(pos)
        return page_header(fh.read(HEADER_BYTES))


def decoded_size(fh: BinaryIO, row_group) -> int | None:
    """What the pages of `row_group` (pyarrow's RowGroupMetaData) say they decode to, summed over its
    column chunks; None where a header does not parse (the file is then read as before: Arrow reports
    what is wrong with it). `fh` is left where it was."""
    where = fh.tell()
    total = 0
    try:
        file_size = fh.seek(0, 2)
        for c in range(row_group.num_columns):
            chunk = row_group.column(c)
            starts = [chunk.data_page_offset] + ([chunk.dictionary_page_offset] if chunk.has_dictionary_page else [])
            pos = min(s for s in starts if s is not None and s >= 0)
            end = min(pos + max(chunk.total_compressed_size, 0), file_size)
            for _ in range(MAX_PAGES):
                if pos >= end:
                    break
                uncompressed, compressed, length = _header_at(fh, pos)
                total += uncompressed
                pos += length + compressed
    except (_Cut, OSError, ValueError):
        return None
    finally:
        fh.seek(where)
    return total
