"""Size limits on what the input layer reads, so that memory and time stay bounded for any file.

A hostile or broken file (a zip or gzip bomb, a single line of a gigabyte, a runaway repetition of
millions of tokens) is refused piece by piece with a reason that names the size, the limit and the
option that raises it, and the rest of the file and of the run is read as usual:

- a record (one JSONL line) over `max_record_mb` is skipped without being held: its bytes are read
  in bounded chunks up to the next newline, counted and dropped, and the next line is read;
- a file, archive member (an inspect_ai `.eval` sample) or Parquet row group that is read whole is
  read in chunks that stop once it passes `max_file_mb`; a member's declared size is checked first;
  a JSON document read whole is refused too where parsing it would take more than PARSE_BUDGET
  times `max_file_mb` (many small values cost far more than their text: `json_parse_bytes`);
- a `.gz` stream or zip member may decompress to `max_inflate_ratio` times its compressed bytes, and
  past that by at most `inflate_grace_mb` summed over one input file (`InflateGuard`); the bytes
  of a skipped oversize record do not count (they are dropped, not parsed), so decompression
  work stays linear in the size of the file;
- a trace whose text (reasoning plus answer) is over `max_trace_chars` characters is refused, or,
  with `oversize: truncate`, profiled up to the limit and marked `cut_to_limit` in provenance.

The limits live in configs/default.yaml `limits:`; the options of `profile` override them.
"""
from __future__ import annotations

import functools
import gzip
import io
import os
from dataclasses import dataclass, replace
from typing import BinaryIO, Iterator, NamedTuple

from ..records import InputError, Trace

__all__ = ["MIB", "READ_CHUNK", "WHOLE_FILE", "InputLimits", "TooLarge", "Skipped", "OVERSIZE_CHOICES", "InflateGuard", "CountingReader",
           "GuardedStream", "guard_of", "bounded_lines", "count_lines", "read_whole", "plain_size", "clip_trace",
           "trace_chars", "size_text", "record_reason", "file_reason", "open_input", "PARSE_BUDGET", "json_parse_bytes"]

MIB = 1 << 20
READ_CHUNK = 1 << 20  # bytes per read of a whole-file read, a skipped line, a line count
WHOLE_FILE = "file"  # record locator for errors that concern the whole file
OVERSIZE_CHOICES = ("refuse", "truncate")


@dataclass(frozen=True)
class InputLimits:
    """The size limits of the input layer (config `limits`); 0 = no limit. `InputLimits()` has none."""

    max_record_mb: float = 0.0  # one JSONL line, in MiB (--max-record-mb)
    max_file_mb: float = 0.0  # a file / archive member / Parquet row group read whole, decompressed (--max-file-mb)
    max_inflate_ratio: float = 0.0  # decompressed / compressed bytes of one input file (--max-inflate-ratio)
    inflate_grace_mb: float = 0.0  # MiB one input file may decompress past the ratio
    max_trace_chars: int = 0  # reasoning plus answer characters of one trace (--max-trace-chars)
    oversize: str = "refuse"  # a trace over max_trace_chars: refuse | truncate (--oversize)

    def __post_init__(self) -> None:
        if self.oversize not in OVERSIZE_CHOICES:
            raise ValueError(f"limits.oversize={self.oversize!r}: use one of {', '.join(OVERSIZE_CHOICES)}")

    @classmethod
    def from_config(cls, cfg) -> "InputLimits":
        limits = cfg["limits"]
        try:
            return cls(float(limits["max_record_mb"] or 0), float(limits["max_file_mb"] or 0),
                       float(limits["max_inflate_ratio"] or 0), float(limits["inflate_grace_mb"] or 0),
                       int(limits["max_trace_chars"] or 0), str(limits["oversize"]))
        except ValueError as exc:
            from ..config import ConfigError

            raise ConfigError(str(exc)) from None

    @staticmethod
    @functools.lru_cache(maxsize=1)
    def default() -> "InputLimits":
        """The limits of configs/default.yaml (what readers called without limits use)."""
        from ..config import Config

        return InputLimits.from_config(Config.load())

    @property
    def record_bytes(self) -> int | None:
        return _bytes(self.max_record_mb)

    @property
    def file_bytes(self) -> int | None:
        return _bytes(self.max_file_mb)

    @property
    def grace_bytes(self) -> int:
        return _bytes(self.inflate_grace_mb) or 0


def _bytes(mb: float) -> int | None:
    return int(mb * MIB) if mb > 0 else None


class TooLarge(Exception):
    """Input over a size limit; the message is the reason errors.jsonl shows."""


class Skipped(NamedTuple):
    """A line over the record limit, dropped unread: its size in bytes (without the newline)."""

    size: int


def size_text(n: int) -> str:
    """'1.0 GiB (1,073,741,824 bytes)'; small sizes as plain bytes."""
    unit, scale = next(((u, k) for u, k in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1024)) if n >= k), ("", 1))
    return f"{n / scale:.1f} {unit} ({n:,} bytes)" if unit else f"{n:,} bytes"


def _mb(mb: float) -> str:
    return f"{mb:g} MiB"


def record_reason(size: int, limits: InputLimits, unit: str = "bytes") -> str:
    told = size_text(size) if unit == "bytes" else f"{size:,} {unit}"
    return (f"record of {told}, over the limit of {_mb(limits.max_record_mb)}; skipped unread "
            f"(raise it with --max-record-mb)")


def file_reason(what: str, limits: InputLimits, size: int | None = None) -> str:
    told = f"of {size_text(size)}" if size is not None else f"of more than {_mb(limits.max_file_mb)}"
    return (f"{what} {told}, over the limit of {_mb(limits.max_file_mb)} for what is read whole "
            f"(raise it with --max-file-mb)")


# ----------------------------------------------------------------------------- decompression guard


class InflateGuard:
    """Decompressed bytes of one input file against the compressed bytes read for them.

    Each part of the file (the stream of a `.gz` file, each member of a zip) may decompress to
    `max_inflate_ratio` times its compressed bytes; what goes past that, summed over the file's
    parts, may not exceed `inflate_grace_mb` (so small, very repetitive files pass, and a file
    of many bomb members costs at most the grace once). The compressed bytes of a part come from a
    counting reader (a gzip stream, as it is read) or are given (a zip member's compressed size).
    Bytes dropped unparsed (`skip`: a skipped oversize line) do not count. With `deferred`, only
    `check()` checks (the JSONL reader calls it after each line, once it knows what was skipped)."""

    def __init__(self, what: str, limits: InputLimits, counter: "CountingReader | None" = None):
        self.limits, self.counter = limits, counter
        self.what, self.compressed, self.out, self.skipped = what, 0, 0, 0
        self.excess = 0  # bytes past the ratio in the parts read before this one
        self.deferred = False

    def part(self, what: str, compressed: int) -> None:
        """Start the next part (a zip member), `compressed` bytes long."""
        self.excess += self._over()
        self.what, self.compressed, self.out, self.skipped = what, compressed, 0, 0

    def add(self, n: int) -> None:
        self.out += n
        if not self.deferred:
            self.check()

    def skip(self, n: int) -> None:
        """`n` decompressed bytes were dropped unparsed (a skipped oversize line): not counted."""
        self.skipped += n

    def _compressed(self) -> int:
        return self.counter.count if self.counter is not None else self.compressed

    def _past_ratio(self) -> int:
        """This part's kept bytes beyond the ratio (negative: room left under it); a ratio must be set."""
        return self.out - self.skipped - int(self.limits.max_inflate_ratio * self._compressed())

    def _over(self) -> int:
        return max(0, self._past_ratio()) if self.limits.max_inflate_ratio else 0

    def room(self) -> int | None:
        """Bytes that `add` may still count before it refuses (None: no ratio set)."""
        return self.limits.grace_bytes - self.excess - self._past_ratio() if self.limits.max_inflate_ratio else None

    def check(self) -> None:
        if self.limits.max_inflate_ratio and self.excess + self._over() > self.limits.grace_bytes:
            kept, compressed = self.out - self.skipped, self._compressed()
            raise TooLarge(
                f"{self.what} inflates more than {self.limits.max_inflate_ratio:g} times ({size_text(kept)} so far "
                f"from {size_text(compressed)} compressed): a decompression bomb, or data too repetitive to "
                f"profile; the rest of it is not read (raise it with --max-inflate-ratio)")


class CountingReader(io.RawIOBase):
    """The compressed side of a stream: a binary file that counts the bytes read from it."""

    def __init__(self, raw: BinaryIO):
        self.raw, self.count = raw, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self.raw.read(len(b))
        n = len(data)
        b[:n] = data
        self.count += n
        return n

    def seekable(self) -> bool:
        return self.raw.seekable()

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.raw.seek(pos, whence)

    def tell(self) -> int:
        return self.raw.tell()


class GuardedStream(io.RawIOBase):
    """The decompressed side: every byte read through it is counted by `guard` (which may refuse)."""

    def __init__(self, inner, guard: InflateGuard):
        self.inner, self.guard = inner, guard
        # a gzip file's read1: what one step of decompression gives, so that the lines before a
        # damaged part of the stream are still returned before its error
        self._read = inner.read1 if isinstance(inner, gzip.GzipFile) else inner.read

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self._read(len(b))
        n = len(data)
        b[:n] = data
        self.guard.add(n)
        return n

    def seekable(self) -> bool:
        return self.inner.seekable()

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.inner.seek(pos, whence)

    def tell(self) -> int:
        return self.inner.tell()


def guard_of(fh) -> InflateGuard | None:
    """The guard of a stream made by `GuardedStream` (wrapped in a BufferedReader), else None."""
    return getattr(getattr(fh, "raw", None), "guard", None)


# ----------------------------------------------------------------------------- bounded reads


def bounded_lines(fh: BinaryIO, max_bytes: int | None) -> Iterator[tuple[int, bytes | Skipped]]:
    """(1-based line number, line bytes) of a binary stream; a line over `max_bytes` (without its
    newline) is read on in chunks to its newline, counted and dropped, and comes as `Skipped`.
    Never holds more than about `max_bytes` of one line."""
    guard = guard_of(fh)
    if guard is not None:
        guard.deferred = True
    number = 0
    while True:
        line = fh.readline(max_bytes + 1 if max_bytes else -1)
        if not line:
            return
        number += 1
        if max_bytes is None or len(line) <= max_bytes or (len(line) == max_bytes + 1 and line.endswith(b"\n")):
            if guard is not None:
                guard.check()
            yield number, line
            continue
        size, ended = len(line), False
        line = b""
        while not ended:
            piece = fh.readline(READ_CHUNK)
            if not piece:
                break
            size += len(piece)
            ended = piece.endswith(b"\n")
        if guard is not None:
            guard.skip(size)
            guard.check()
        yield number, Skipped(size - ended)


def count_lines(fh: BinaryIO) -> int:
    """Non-blank lines of a binary stream, read in bounded chunks (a line of any length is fine)."""
    count, content = 0, False
    while chunk := fh.read(READ_CHUNK):
        *ended, rest = chunk.split(b"\n")
        for part in ended:
            count += content or bool(part.strip())
            content = False
        content = content or bool(rest.strip())
    return count + content


def plain_size(fh) -> int | None:
    """The size of an uncompressed file on disk (None for a decompressing stream)."""
    if isinstance(fh, io.BufferedReader) and isinstance(fh.raw, io.FileIO):
        return os.fstat(fh.raw.fileno()).st_size
    return None


def read_whole(fh: BinaryIO, limits: InputLimits, what: str, size: int | None = None,
               parsed: bool = False) -> bytearray:
    """All bytes of `fh`, read in chunks that stop once they pass `limits.max_file_mb` (TooLarge,
    naming `what`). `size`: a size known beforehand (a file on disk, a member's declared size),
    refused before anything is read. `parsed`: the bytes are a JSON document to be parsed whole,
    refused too where that would take more than PARSE_BUDGET times the limit (`json_parse_bytes`)."""
    limit = limits.file_bytes
    size = size if size is not None else plain_size(fh)
    if limit is not None and size is not None and size > limit:
        raise TooLarge(file_reason(what, limits, size))
    data = bytearray()
    while chunk := fh.read(READ_CHUNK if limit is None else min(READ_CHUNK, limit + 1 - len(data))):
        data += chunk
        if limit is not None and len(data) > limit:
            raise TooLarge(file_reason(what, limits))
    if parsed and limit is not None and (cost := json_parse_bytes(data, PARSE_BUDGET * limit)) > PARSE_BUDGET * limit:
        raise TooLarge(f"{what} of {size_text(len(data))} that would take about {size_text(cost)} parsed whole (it "
                       f"holds that many small values and containers), over the {PARSE_BUDGET} times "
                       f"{_mb(limits.max_file_mb)} a document read whole may take: save its records as JSON Lines, "
                       f"one per line, which are read one at a time (or raise it with --max-file-mb)")
    return data


# What parsing a JSON document whole takes (json.loads, measured with tracemalloc): its bytes, their str
# and the strings parsed from them, up to about 3 bytes per byte (text-heavy documents: 2.0-3.4); and
# each value or container a Python object of its own, 30-70 bytes beyond its text (a document of many
# small containers, [{"a":[1]}, ...], took 27 times its size: 67 bytes per token). A document is read
# whole only where that stays within PARSE_BUDGET times --max-file-mb.
PARSE_BUDGET = 3
_TEXT_BYTES, _TOKEN_BYTES = 3, 72
_TOKENS = (b"{", b"[", b",", b":")
_NOT_TOKEN = bytes(b for b in range(256) if b not in b'"{[,:')  # deleted to count the tokens outside strings


def json_parse_bytes(data: bytes | bytearray, budget: int | None = None) -> int:
    """About the most memory json.loads takes to parse `data` whole: _TEXT_BYTES per byte, and
    _TOKEN_BYTES per value or container (counted by its '{', '[', ',' and ':'). Counted first over
    all of `data` (quick, and too many where strings hold these characters); only where that passes
    `budget`, again outside the strings (`_tokens_outside_strings`)."""
    tokens = sum(data.count(c) for c in _TOKENS)
    if budget is not None and _TEXT_BYTES * len(data) + _TOKEN_BYTES * tokens > budget:
        tokens = _tokens_outside_strings(data)
    return _TEXT_BYTES * len(data) + _TOKEN_BYTES * tokens


def _tokens_outside_strings(data: bytes | bytearray) -> int:
    """The '{', '[', ',' and ':' of a JSON document that are not inside a string, a chunk at a time
    (never a copy of the whole): escaped backslashes and quotes dropped, then all but quotes and
    tokens, and a token counted where the quotes before it are even in number. A chunk never ends
    inside a run of backslashes, so no escape is cut in two."""
    import numpy as np

    count, inside, start = 0, 0, 0
    while start < len(data):
        end = min(len(data), start + READ_CHUNK)
        while end < len(data) and data[end - 1] == 0x5C:  # a backslash: its escape goes with it
            end += 1
        marks = np.frombuffer(bytes(data[start:end]).replace(b"\\\\", b"").replace(b'\\"', b"")
                              .translate(None, _NOT_TOKEN), np.uint8)
        quote = marks == ord('"')
        odd = (np.cumsum(quote, dtype=np.uint8) + inside) & 1  # inside a string after each mark
        count += int(np.count_nonzero(~quote & (odd == 0)))
        inside = (inside + int(np.count_nonzero(quote))) & 1
        start = end
    return count


# ----------------------------------------------------------------------------- trace text


def trace_chars(trace: Trace) -> int:
    """The characters of a trace's text that max_trace_chars counts: its sections' (reasoning plus answer)."""
    return sum(s.end - s.start for s in trace.sections)


def clip_trace(trace: Trace, limits: InputLimits, locator: int | str | None = None) -> Trace | InputError:
    """`trace` when its text (reasoning plus answer) is within `limits.max_trace_chars`; else its
    InputError, or with `oversize: truncate` the trace cut to its first max_trace_chars characters
    in text order (sections emptied by the cut dropped), marked `cut_to_limit` in provenance.
    A trace that brings its own graph (`Trace.given`) is never cut: its units would point past the text.
    `locator`: the record's locator in its file ("line N"), which the error names (default: its position)."""
    given_graph = trace.given is not None
    cap = limits.max_trace_chars
    total = trace_chars(trace)
    if not cap or total <= cap:
        return trace
    lengths = [s.end - s.start for s in trace.sections]
    if limits.oversize == "refuse" or given_graph:
        parts = ", ".join(f"{s.name} {n:,}" for s, n in zip(trace.sections, lengths))
        how = "" if given_graph else f", or profile its first {cap:,} with --oversize truncate"
        first = next((s for s, n in zip(trace.sections, lengths) if n > 0), trace.sections[0])
        return InputError(trace.source, trace.record if locator is None else locator, first.field,
                          f"trace text of {total:,} characters ({parts}), over the limit of {cap:,} "
                          f"(raise it with --max-trace-chars{how})")
    kept, left = [], cap
    for section, n in zip(trace.sections, lengths):
        keep = min(n, left)
        if keep > 0:
            kept.append((section, section.start + keep))
        left -= keep
    # the text past the cut is let go; sections of one field share its text, so it ends at their last end
    field_end: dict[str, int] = {}
    for section, end in kept:
        field_end[section.field] = max(field_end.get(section.field, 0), end)
    sections = [replace(s, text=s.text[:field_end[s.field]], end=end) for s, end in kept]
    cut = {"chars": total, "kept": cap, "sections": {s.name: n for s, n in zip(trace.sections, lengths)}}
    return replace(trace, sections=tuple(sections), provenance={**trace.provenance, "cut_to_limit": cut})


# ----------------------------------------------------------------------------- opening a file


def open_input(path, limits: InputLimits, stack) -> BinaryIO:
    """A file to read, in binary: a `.gz` file decompressed through an `InflateGuard`; `stack`
    (a contextlib.ExitStack) closes what was opened."""
    raw = stack.enter_context(open(path, "rb"))
    if not str(path).lower().endswith(".gz"):
        return raw
    counter = CountingReader(raw)
    inflated = stack.enter_context(gzip.GzipFile(fileobj=counter, mode="rb"))
    return stack.enter_context(io.BufferedReader(GuardedStream(inflated, InflateGuard(str(path), limits, counter)),
                                                 READ_CHUNK))
