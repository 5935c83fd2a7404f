"""Raw records from the files people have: JSONL, JSON (lists, record objects, columnar objects),
Parquet, Arrow, Hugging Face `save_to_disk` folders, CSV / TSV and inspect_ai `.eval` logs, gzipped
or not, or a folder of them: one reader per format in `READERS`; a record in an evaluation
framework's layout is expanded into its traces' records (thinkprobe.io.layouts); records counted
cheaply (lines, Parquet metadata) for the progress bar.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import zipfile
import zlib
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator, Sequence

from ..records import InputError
from .fields import ANSWER_FIELDS, QUESTION_FIELDS, REASONING_FIELDS, TAGGED_FIELDS
from .tags import TAG_PAIRS
from .columnar import PARQUET_BATCH_ROWS, iter_arrow, iter_parquet
from .layouts import expand, finish
from .delimited import iter_delimited
from .unicode import SURROGATE_ESCAPE, repaired, unencodable
from .walk import read_once, walk_folder
from .limits import (WHOLE_FILE, GuardedStream, InflateGuard, InputLimits, Skipped, TooLarge, bounded_lines, count_lines,
                     open_input, read_whole, record_reason)

__all__ = ["READERS", "data_files", "source_files", "unread_files", "count_records", "count_inputs", "RECORD_LIST_KEYS", "FORMATS", "HF_METADATA_FILES", "RECORD_OBJECT_LISTS", "RECORD_VALUE_LISTS", "PARQUET_BATCH_ROWS", "WHOLE_FILE", "EMPTY_FILE", "iter_records", "strip_extensions", "type_name", "RepairedRecord"]


RECORD_LIST_KEYS = ("records", "data", "traces")


# File name ending (before an optional .gz) -> format; each format has its reader in READERS.
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet", ".arrow": "arrow",
           ".csv": "csv", ".tsv": "tsv", ".eval": "inspect_eval"}


# Hugging Face `save_to_disk` writes these beside its data-*.arrow files; they describe, not hold, records.
HF_METADATA_FILES = frozenset({"state.json", "dataset_info.json", "dataset_dict.json"})


# A JSON object whose values are all lists is read as records (columnar or grouped) unless it looks
# like one record whose fields hold lists: turns or typed blocks (lists of objects), or lists of texts
# or verdicts (in columnar form each of these would be a list of lists).
RECORD_OBJECT_LISTS = frozenset({"messages", "conversations", "content", "output", "choices"})


RECORD_VALUE_LISTS = frozenset({"generations", "steps", "filtered_resps", "reasonings", "thinking_trajectories",
                                "correctness_math_verify", "is_reasoning_complete"})


EMPTY_FILE = "empty file: it holds no records"


def iter_records(path: str | Path, limits: InputLimits | None = None,
                 keep: Callable[[Path], bool] | None = None) -> Iterator[tuple[str, int | str, dict | InputError]]:
    """Stream ``(source file, record locator, record or InputError)`` from a file or a directory.

    The locator is ``"line N"`` (1-based) for JSON Lines and the 0-based position otherwise.
    A bad record becomes an InputError and the stream goes on; so does one over a size limit
    (`limits`, default: configs/default.yaml's; see thinkprobe.io.limits). `keep`: which of a
    directory's data files are read (FieldMap.matches_path: a --path-pattern's files).
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"no such file or directory: {root}")
    limits = limits if limits is not None else InputLimits.default()
    if not root.is_dir() and not root.is_file():  # a FIFO or a device (/dev/zero) would block or never end
        yield str(root), WHOLE_FILE, InputError(str(root), WHOLE_FILE, "", "not a regular file (a pipe or a device): "
                                                                          "save the records to a file first")
        return
    files, broken = _folder_entries(root, keep) if root.is_dir() else ([root], [])
    for link in broken:  # named here; listed among the data files it would break the counts
        yield str(link), WHOLE_FILE, InputError(str(link), WHOLE_FILE, "", "a broken link: not read")
    for file in files:
        if not file.is_file():  # a FIFO or a device inside a folder, with a data file's name: named, never read
            yield str(file), WHOLE_FILE, InputError(str(file), WHOLE_FILE, "", "not a regular file (a pipe or a "
                                                                               "device): not read")
            continue
        yield from _iter_file(file, limits)


def _data_named(root: Path) -> list[Path]:
    """Everything in a folder that bears a data file's name (a format's, or another compression's),
    hidden ones and run folders left out, sorted (thinkprobe.io.walk): the one walk of the folder its
    data files and broken links come from."""
    return [p for p in walk_folder(root)[0] if _has_data_name(p)]


def _has_data_name(path: Path) -> bool:
    """Whether a file bears a data file's name: a format's, or that of one packed some way not read."""
    return bool(_format_of(path) or _unread_compression(path))


def _is_data_file(p: Path) -> bool:
    """A data-named path that is read (or named as unread): not a folder, not a link to nothing, not
    Hugging Face metadata or a Thought Anchors side file; a pipe or device is (named as unread)."""
    return p.exists() and not p.is_dir() and not _is_hf_metadata(p) and not _is_anchors_side_file(p)


def _folder_entries(root: Path, keep: Callable[[Path], bool] | None) -> tuple[list[Path], list[Path]]:
    """A folder's data files and its links to nothing with a data file's name (those `keep` accepts),
    from one walk."""
    named = [p for p in _data_named(root) if keep is None or keep(p)]
    return read_once([p for p in named if _is_data_file(p)]), [p for p in named if p.is_symlink() and not p.exists()]


def source_files(root: Path, keep: Callable[[Path], bool] | None = None) -> list[Path]:
    """The data files an input is read from: a folder's (those `keep` accepts), or the file itself."""
    return _folder_entries(root, keep)[0] if root.is_dir() else [root]


def data_files(root: Path) -> list[Path]:
    """The data files of a folder, sorted; hidden ones and Hugging Face metadata left out. A data file
    compressed other than by gzip (`a.jsonl.bz2`), or a pipe or device with a data file's name, is among
    them, so that it is named as unread rather than passed over in silence (a broken link is named by
    iter_records)."""
    return read_once([p for p in _data_named(root) if _is_data_file(p)])


# Thought Anchors keeps beside each base_solution.json the files its layout reads (problem.json,
# scenario.json) and its chunk annotations (thinkprobe.io.layouts): none of them is a trace.
ANCHORS_SIDE_FILES = ("problem.json", "scenario.json", "summary.json", "chunks_labeled.json")


def _is_anchors_side_file(path: Path) -> bool:
    return path.name in ANCHORS_SIDE_FILES and (path.parent / "base_solution.json").is_file()


def _is_hf_metadata(path: Path) -> bool:
    """state.json / dataset_info.json of a `save_to_disk` folder (or dataset_dict.json above its splits)."""
    if path.name not in HF_METADATA_FILES:
        return False
    folder = path.parent
    return any(folder.glob("*.arrow")) or any(folder.glob("*/state.json"))


def _format_of(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return next((fmt for ext, fmt in FORMATS.items() if name.endswith(ext)), None)


def record_locator(source: str, position: int | str) -> int | str:
    """The locator errors give a record of `source` at its 0-based `position` (``Trace.record``):
    ``"line N"`` in a JSON Lines file, the position itself otherwise (as `iter_records` gives them)."""
    if isinstance(position, int) and _format_of(Path(source)) == "jsonl":
        return f"line {position + 1}"
    return position


_OTHER_COMPRESSION = (".bz2", ".xz", ".zst", ".zstd", ".lz4", ".zip", ".7z", ".tar", ".tgz")


# Archives are not read (an inspect_ai .eval, a zip of known members, is a format of its own): named as
# unread whatever their name, so that a folder's real.zip is not passed over as a README is (a review)
_ARCHIVES = (".zip", ".7z", ".rar", ".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst")


def _packed_data(path: Path) -> str | None:
    """The suffix of a data file compressed other than by gzip ("a.jsonl.bz2" -> ".bz2"), else None."""
    name = path.name.lower()
    packed = next((c for c in _OTHER_COMPRESSION if name.endswith(c)), None)
    return packed if packed and _format_of(Path(name[: -len(packed)])) else None


def _archive(path: Path) -> str | None:
    """The suffix of an archive of any name that is no packed data file ("real.zip" -> ".zip", "a.tar.gz"
    -> ".tar.gz"), else None."""
    name = path.name.lower()
    return None if _packed_data(path) else next((a for a in _ARCHIVES if name.endswith(a)), None)


def _unread_compression(path: Path) -> str | None:
    """The suffix of a data file packed some way not read: compressed other than by gzip, or an archive."""
    return _packed_data(path) or _archive(path)


# A corpus's documentation: never data, and in nearly every downloaded corpus (naming it on every run is noise)
_DOCUMENTATION = re.compile(r"(readme|licen[cs]e|copying|citation|changelog|notice)([._-].*)?|.*\.(md|rst|bib|cff)",
                            re.IGNORECASE)


def unread_files(root: Path) -> list[Path]:
    """The files of a folder that no reader reads or names as unread, sorted: those without a data
    file's name (notes, a schema .yaml), but for its documentation (a README, a LICENSE, any .md);
    hidden ones and run folders' files left out, as the walk leaves them (thinkprobe.io.walk). Hugging
    Face metadata and Thought Anchors side files bear a data file's name and are read with the data
    they describe."""
    return [p for p in walk_folder(root)[0] if not p.is_dir() and not _has_data_name(p)
            and not _DOCUMENTATION.fullmatch(p.name)]


def strip_extensions(name: str) -> str:
    lower = name.lower()
    if lower.endswith(".gz"):
        name, lower = name[:-3], lower[:-3]
    for ext in FORMATS:
        if lower.endswith(ext):
            return name[: -len(ext)]
    return name


_BINARY_FORMATS = frozenset({"parquet", "arrow", "inspect_eval"})


def _not_utf8(fh) -> str | None:
    return text_problem(fh.peek(4)[:4] if hasattr(fh, "peek") else b"")


def text_problem(head: bytes) -> str | None:
    """Why a text's first 4 bytes say it cannot be read as UTF-8 (UTF-16's byte-order mark; a gzip
    stream, as a .gz compressed twice or a gzip file without its .gz name gives; a zip archive), else
    None."""
    head = head[:4]
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "UTF-16 text (its byte-order mark): save it as UTF-8"
    if len(head) == 4 and (head[1::2] == b"\x00\x00" or head[0::2] == b"\x00\x00") and head.strip(b"\x00"):
        return "UTF-16 text (every other byte is NUL): save it as UTF-8"
    if head[:2] == b"\x1f\x8b":
        return "gzip data where text was expected (compressed twice, or a .gz file without its .gz name): decompress it"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):  # its headers read as lines beside a record between them
        return "a zip archive where text was expected: unzip it"
    if head[:4] == b"\x28\xb5\x2f\xfd":
        return "zstd data where text was expected: decompress it"
    return None


def _iter_file(file: Path, limits: InputLimits) -> Iterator[tuple[str, int | str, dict | InputError]]:
    source = str(file)
    fmt = _format_of(file)
    if fmt is None and (packed := _packed_data(file)):
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"{packed} compression is not read: decompress "
                                                                     "the file, or compress it with gzip (.gz)")
        return
    if fmt is None and (archive := _archive(file)):
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"a {archive} archive is not read: extract it and "
                                                                     "name its data files as inputs (gzipped ones, "
                                                                     ".jsonl.gz, are read as they are)")
        return
    if fmt is None:
        supported = ", ".join(FORMATS)
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"unsupported file type (expected {supported}, optionally .gz)")
        return
    read, state = 0, {}  # state: what a layout keeps across the file's records (lm-eval's filters)
    try:
        with contextlib.ExitStack() as stack:
            fh = open_input(file, limits, stack)
            if fmt not in _BINARY_FORMATS and (encoding := _not_utf8(fh)):
                yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", encoding)
                return
            for source, locator, record in READERS[fmt](source, fh, limits):
                read += 1
                if isinstance(record, InputError):
                    yield source, locator, record
                    continue
                for inner, item in expand(source, locator, record, state):
                    yield source, inner, item
            for inner, item in finish(source, state):  # the file's last stream of chunks
                yield source, inner, item
    except (OSError, EOFError) as exc:  # corrupt gzip, unreadable file: report it and move to the next file
        yield from ((source, inner, item) for inner, item in finish(source, state))
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"cannot read file: {exc}")
        return
    except TooLarge as exc:  # over a size limit where the reader cannot name a record
        yield from ((source, inner, item) for inner, item in finish(source, state))
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", str(exc))
        return
    if not read:  # never silent: a file that holds nothing says so
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", EMPTY_FILE)


def _iter_jsonl(source: str, fh: BinaryIO, limits: InputLimits) -> Iterator[tuple[str, int | str, dict | InputError]]:
    # Bytes, line by line: never the whole file, never more than the record limit of one line,
    # and a bad line spoils only itself. A file that opens with "[" is read whole first (within
    # the file limit, as a .json file is): a JSON array saved under a .jsonl name is its records.
    try:
        head = fh.peek(64)[:64] if hasattr(fh, "peek") else b""
    except (OSError, EOFError, TooLarge):  # not gzip, cut short, inflated too far: the loop below names it
        head = b""
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        try:
            data = bytes(read_whole(fh, limits, "JSON file", parsed=True))
        except TooLarge as exc:
            yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", str(exc))
            return
        try:
            is_array = isinstance(json.loads(data.decode("utf-8-sig")), list)
        except (ValueError, RecursionError):
            is_array = False
        if is_array:
            yield from _iter_json(source, io.BytesIO(data), limits)
            return
        fh = io.BytesIO(data)
    number = 0
    try:
        for number, raw in bounded_lines(fh, limits.record_bytes):
            locator = f"line {number}"
            if isinstance(raw, Skipped):
                yield source, locator, InputError(source, locator, "", record_reason(raw.size, limits))
                continue
            while raw.startswith(b"\xef\xbb\xbf"):  # the file's BOM (twice: saved twice), or a file's joined on
                raw = raw[3:]
            if raw.strip():
                yield source, locator, _parse_record(source, locator, raw)
    except (OSError, EOFError) as exc:  # e.g. a gzip cut short: keep what was read, name where it broke
        locator = f"line {number + 1}"
        yield source, locator, InputError(source, locator, "", f"cannot read file: {exc}")
    except TooLarge as exc:  # the decompression guard: what came before is kept
        locator = f"line {number + 1}"
        yield source, locator, InputError(source, locator, "", str(exc))


def _parse_record(source: str, locator: int | str, raw: bytes) -> dict | InputError:
    if b"\x00" in raw:
        return InputError(source, locator, "", "NUL byte in record")
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return InputError(source, locator, "", f"invalid UTF-8 at byte {exc.start}")
    except json.JSONDecodeError as exc:
        return InputError(source, locator, "", f"malformed JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return InputError(source, locator, "", "malformed JSON: nested too deeply")
    except ValueError as exc:  # an integer of more than 4,300 digits (Python's int conversion limit)
        return InputError(source, locator, "", f"unreadable JSON value: {exc}")
    if not isinstance(value, dict):
        return InputError(source, locator, "", f"record is a JSON {type_name(value)}, not an object")
    if SURROGATE_ESCAPE.search(raw):
        return _checked_unicode(source, locator, value)
    return value


def _checked_unicode(source: str, locator: int | str, value: dict) -> dict | InputError:
    """The record, or its lone surrogates replaced (`repaired`); an error where it nests too deeply
    to walk (a cut emoji 500 lists down crashed the reader)."""
    try:
        return repaired(value) if unencodable(value) else value
    except RecursionError:
        return InputError(source, locator, "", "malformed JSON: a lone surrogate nested too deeply to repair")


def _iter_json(source: str, fh: BinaryIO, limits: InputLimits) -> Iterator[tuple[str, int | str, dict | InputError]]:
    try:
        data = read_whole(fh, limits, "JSON file", parsed=True)
    except TooLarge as exc:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", str(exc))
        return
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\x00" in data:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", "NUL byte in file")
        return
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"invalid UTF-8 at byte {exc.start}")
        return
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # JSON Lines saved under a .json name
            yield from _iter_jsonl(source, io.BytesIO(data), limits)
        else:
            yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
        return
    except RecursionError:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", "malformed JSON: nested too deeply")
        return
    except ValueError as exc:  # an integer of more than 4,300 digits
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"unreadable JSON value: {exc}")
        return
    check_unicode = bool(SURROGATE_ESCAPE.search(data))
    if isinstance(value, dict):
        nested = next((value[k] for k in RECORD_LIST_KEYS if isinstance(value.get(k), list)), None)
        items = nested if nested is not None else _object_records(value)
        if isinstance(items, InputError):
            yield source, WHOLE_FILE, _with_source(items, source)
            return
    elif isinstance(value, list):
        items = value
    else:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"top level is a JSON {type_name(value)}, not a list or object")
        return
    if (field := sentences_of_one_reasoning(items)) is not None:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, field, SPLIT_REASONING.format(n=len(items), field=field))
        return
    for index, item in enumerate(items):
        if isinstance(item, dict) and check_unicode:
            yield source, index, _checked_unicode(source, index, item)
        elif isinstance(item, dict):
            yield source, index, item
        else:
            yield source, index, InputError(source, index, "", f"record is a JSON {type_name(item)}, not an object")


SPLIT_REASONING = ("the file's {n} records are the sentences of one reasoning (their `{field}`: one of them closes it "
                   "with a reasoning tag): not profiled one by one; join them into one record to profile the text")
_SENTENCE_RECORDS_MIN = 10  # records that may be the sentences of one text
_SENTENCE_CHARS = 400  # a sentence record's text is at most this long, as a median


def sentences_of_one_reasoning(items: Sequence) -> str | None:
    """The text field of records that are the sentences of one reasoning, else None: ten or more objects
    with the same keys, none a field a trace is read from (reasoning, answer, question), whose longest field
    holds short texts, a closing reasoning tag in one or two of them and no record that opens and closes
    one (Schoenfeld et al.'s `responses_labeled`: `{"text": sentence,
    "gt-class-1": ...}`, "**Final Answer** \\boxed{A}</think>" among them). Read one by one, the sentence
    holding the tag had been profiled as a whole trace and the others skipped."""
    if len(items) < _SENTENCE_RECORDS_MIN or not all(isinstance(x, dict) for x in items):
        return None
    keys = set(items[0])
    if any(set(x) != keys for x in items) or keys & {*REASONING_FIELDS, *TAGGED_FIELDS, *ANSWER_FIELDS, *QUESTION_FIELDS}:
        return None
    texts = [k for k in keys if all(isinstance(x[k], str) for x in items)]
    if not texts:
        return None
    field = max(texts, key=lambda k: sum(len(x[k]) for x in items))
    values = [x[field] for x in items]
    closing = [v for v in values if any(close in v for _, close in TAG_PAIRS)]
    whole = any(opening in v and v.index(opening) < v.rfind(close) for v in values for opening, close in TAG_PAIRS)
    median = sorted(len(v) for v in values)[len(values) // 2]
    return field if 1 <= len(closing) <= 2 and not whole and median <= _SENTENCE_CHARS else None


def _object_records(value: dict) -> list | InputError:
    """The records a top-level JSON object holds.

    - columnar: ``{"question": [...], "steps": [...]}``, equal-length lists of values -> one record per row;
    - grouped: ``{key: [record, record], ...}``, lists of objects (MR-BEN: question id -> solutions) ->
      each object is a record;
    - anything else is one record.
    """
    lists = [v for v in value.values() if isinstance(v, list)]
    if len(lists) != len(value) or not value or _one_record(value):
        return [value]
    if all(isinstance(item, dict) for column in lists for item in column):
        return [item for column in lists for item in column]
    if len(value) < 2:
        return [value]
    lengths = {len(column) for column in lists}
    if len(lengths) > 1:
        detail = ", ".join(f"{k}: {len(v)}" for k, v in islice(value.items(), 8))
        return InputError("", WHOLE_FILE, "", f"columnar JSON with lists of different lengths ({detail})")
    keys = list(value)
    return [dict(zip(keys, row)) for row in zip(*lists)]


def _one_record(value: dict) -> bool:
    return any(
        (k in RECORD_OBJECT_LISTS and v and all(isinstance(x, dict) for x in v))
        or (k in RECORD_VALUE_LISTS and v and not any(isinstance(x, list) for x in v))
        for k, v in value.items()
    )


def _with_source(error: InputError, source: str) -> InputError:
    return InputError(source, error.record, error.field, error.reason)


_EVAL_SAMPLE = re.compile(r"^samples/.+_epoch_(\d+)\.json$")


ZIP_ZSTANDARD = 93  # the compression inspect_ai writes .eval members with (Python's zipfile reads it from 3.14)


class _ArchiveSlice(io.RawIOBase):
    """`length` bytes of an archive from `start`: a member's compressed bytes, read as they are needed."""

    def __init__(self, fp: BinaryIO, start: int, length: int):
        self.fp, self.start, self.length, self.pos = fp, start, length, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        self.fp.seek(self.start + self.pos)
        data = self.fp.read(min(len(b), self.length - self.pos))
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)


def _open_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> BinaryIO:
    """A member's decompressed bytes as a stream; zstd members through `zstandard` from their raw bytes."""
    if info.compress_type != ZIP_ZSTANDARD:
        return archive.open(info)
    import struct

    import zstandard

    fp = archive.fp
    fp.seek(info.header_offset)
    local = fp.read(30)
    if local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header of {info.filename}")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    raw = _ArchiveSlice(fp, info.header_offset + 30 + name_len + extra_len, info.compress_size)
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)


def _zstd_error() -> type[Exception]:
    import zstandard

    return zstandard.ZstdError


def _zip_member(archive: zipfile.ZipFile, name: str, limits: InputLimits, guard: InflateGuard) -> bytearray:
    """One member's bytes, read in chunks that stop at --max-file-mb (its declared size checked first),
    counted by the archive's decompression guard."""
    info = archive.getinfo(name)
    guard.part(f"member {name}", info.compress_size)
    with _open_member(archive, info) as member:
        return read_whole(GuardedStream(member, guard), limits, f"member {name}", size=info.file_size, parsed=True)


def _iter_inspect_eval(source: str, fh: BinaryIO, limits: InputLimits) -> Iterator[tuple[str, int | str, dict | InputError]]:
    """An inspect_ai `.eval` log (a zip: header.json with the eval spec, samples/<id>_epoch_<n>.json):
    one record per sample and epoch, in the order the log stored them. Members are read one at a
    time, each bounded by the limits; one over a limit is that sample's error."""
    from .layouts import inspect_sample

    guard = InflateGuard(source, limits)
    try:
        archive = zipfile.ZipFile(fh)
        names = archive.namelist()
        head_name = "header.json" if "header.json" in names else "_journal/start.json"
        if head_name not in names:
            yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "header.json", "not an inspect_ai .eval log (no header.json)")
            return
        try:
            header = json.loads(_zip_member(archive, head_name, limits, guard))
        except TooLarge as exc:
            yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, head_name, str(exc))
            return
        except RecursionError:  # a few hundred bytes of brackets; the samples' own JSON is checked below
            yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, head_name, "malformed header JSON: nested too deeply")
            return
        spec = header.get("eval") if isinstance(header, dict) else None
        if not isinstance(spec, dict):
            yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "header.json", "no eval spec")
            return
        samples = [n for n in names if _EVAL_SAMPLE.match(n)]
        if not samples:
            yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "samples", "inspect_ai log has no samples "
                                                 "(written with log_samples=False, or a run that did not finish)")
            return
        for index, name in enumerate(samples):
            try:
                sample = json.loads(_zip_member(archive, name, limits, guard))
            except TooLarge as exc:
                yield source, index, InputError(source, index, name, str(exc))
                continue
            except (zipfile.BadZipFile, OSError, EOFError, zlib.error, _zstd_error()) as exc:  # this member only
                yield source, index, InputError(source, index, name, f"cannot read member: {exc}")
                continue
            except (ValueError, UnicodeDecodeError) as exc:
                yield source, index, InputError(source, index, name, f"malformed sample JSON: {exc}")
                continue
            except RecursionError:
                yield source, index, InputError(source, index, name, "malformed sample JSON: nested too deeply")
                continue
            yield source, index, inspect_sample(spec, sample) if isinstance(sample, dict) else \
                InputError(source, index, name, "sample is not an object")
    except (zipfile.BadZipFile, ValueError, KeyError, ImportError) as exc:
        yield source, WHOLE_FILE, InputError(source, WHOLE_FILE, "", f"cannot read inspect_ai .eval log: {exc}")


# One reader per format: (source name, binary file handle, size limits) -> (source, locator, record or InputError).
READERS: dict[str, Callable[[str, BinaryIO, InputLimits], Iterator[tuple[str, int | str, dict | InputError]]]] = {
    "jsonl": _iter_jsonl, "json": _iter_json, "arrow": iter_arrow, "parquet": iter_parquet,
    "csv": iter_delimited(","), "tsv": iter_delimited("\t"), "inspect_eval": _iter_inspect_eval,
}


def count_records(path: str | Path, limits: InputLimits | None = None,
                  keep: Callable[[Path], bool] | None = None) -> int:
    """Records in one input: non-blank lines of a JSONL file (gzipped or not; read in bounded chunks,
    so a line of any length is counted without being held) and rows in a Parquet file's metadata,
    without parsing them; anything else is read once by the loader (with `limits`)."""
    path = Path(path)
    name = path.name.lower()
    stem = name[:-3] if name.endswith(".gz") else name
    if path.is_file() and stem.endswith((".jsonl", ".ndjson")):
        try:
            with contextlib.ExitStack() as stack:
                fh = open_input(path, limits if limits is not None else InputLimits.default(), stack)
                if not fh.peek(64)[:64].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
                    return count_lines(fh)  # else a JSON array saved as .jsonl: its records are counted below
        except (OSError, EOFError, TooLarge):  # a damaged file: the loader reports it; count what it will read
            pass
    if path.is_file() and name.endswith(".parquet"):
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(path).metadata.num_rows
        except Exception:  # not readable as Parquet: the loader reports it
            pass
    if path.is_dir() and keep is not None:
        files, broken = _folder_entries(path, keep)
        return sum(count_records(f, limits) for f in files) + len(broken)
    return sum(1 for _ in iter_records(path, limits))


def count_inputs(paths: Sequence[str | Path], limits: InputLimits | None = None) -> int:
    return sum(count_records(p, limits) for p in paths)


def type_name(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
