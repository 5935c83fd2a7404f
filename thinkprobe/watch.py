"""`thinkprobe watch FILE|-`: follow a generation as it is written (a growing file, or standard
input fed by a streaming client) through `thinkprobe.stream`, show each snapshot, and end with
the profile of the whole text. On a terminal the snapshot is a panel redrawn in place (rich);
otherwise one line per snapshot (JSON with --json), so the output can be piped and logged.

It ends at the end of standard input; for a file, when the text holds the `until` sentinel
(what follows it is not profiled), when the file stops growing for `idle_timeout` seconds, or
without `follow` at the file's current end; on Ctrl-C; and when the file is truncated or
replaced while followed (its new text does not continue the old). Each way the stream is closed
and the final profile printed; the summary's `stopped` says which of idle, Ctrl-C and the last two
ended it (None: the end of the input or the sentinel).
"""
from __future__ import annotations

import codecs
import json
import os
import stat
import sys
import time
from typing import Any, Callable, TextIO

from .cognitive_profile import DIMENSION_NAMES, Normalizer, profile_row
from .indicators import DIMENSIONS, INDICATORS
from .io.formats import text_problem
from .io.limits import TooLarge
from .live import NEEDS_NORMS, Snapshot, Stream
from .options import OptionError

__all__ = ["watch", "read_pieces", "snapshot_line", "final_summary", "SourceChanged"]

READ_BYTES = 1 << 16


class SourceChanged(Exception):
    """The watched file shrank or was replaced: what follows its read position is no continuation
    of the text read so far."""


HEAD_BYTES = 4096  # the opening bytes kept to tell a rewritten file from a growing one


def _reader(source: str, stdin=None):
    """(read() -> the bytes that have arrived, up to READ_BYTES; b"" when none, close()). A file
    that shrinks below what was read, whose opening bytes change (rewritten in place, even longer)
    or whose name now points to another file raises SourceChanged instead of splicing the new text
    onto the old; the checks run before every read."""
    if source != "-" and stat.S_ISFIFO(os.stat(source).st_mode):  # a named pipe, <(cmd): read as standard input is
        fd = os.open(source, os.O_RDONLY)  # (no seek: the checks of a growing file do not apply)
        return (lambda: os.read(fd, READ_BYTES)), (lambda: os.close(fd))
    if source != "-":
        handle = open(source, "rb")
        fd = handle.fileno()
        inode = os.fstat(fd).st_ino
        head = bytearray()

        def read_file() -> bytes:
            at = handle.tell()
            try:
                replaced = os.stat(source).st_ino != inode
            except OSError:  # removed: nothing more will come
                replaced = False
            size = os.fstat(fd).st_size
            rewritten = False
            if head:  # read the opening again (seek and read back: os.pread is POSIX only)
                handle.seek(0)
                rewritten = handle.read(len(head)) != bytes(head)
                handle.seek(at)
            if size < at or replaced or rewritten:
                what = ("replaced" if replaced else f"truncated to {size:,} bytes" if size < at
                        else "rewritten (its opening changed)")
                raise SourceChanged(f"{source} was {what} after {at:,} bytes were read: the text read before is "
                                    "profiled; watch the file again for its new text")
            data = handle.read(READ_BYTES)
            if len(head) < HEAD_BYTES:
                head.extend(data[:HEAD_BYTES - len(head)])
            return data

        return read_file, handle.close
    stream = stdin if stdin is not None else sys.stdin.buffer
    try:  # a pipe or a terminal: os.read returns what has arrived without waiting for a full buffer
        fd = stream.fileno()
        return (lambda: os.read(fd, READ_BYTES)), (lambda: None)
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: a stream in memory
        read = getattr(stream, "read1", stream.read)
        return (lambda: read(READ_BYTES)), (lambda: None)


def read_pieces(source: str, *, follow: bool = False, until: str | None = None, idle_timeout: float = 10.0,
                interval: float = 0.2, piece: int = 256, stdin=None, on_idle: Callable[[], None] | None = None):
    """The text of `source` ("-": standard input) in pieces of at most `piece` characters, as it
    arrives (see the module docstring for when it ends; `on_idle` is called where a followed file
    stopped growing for `idle_timeout`). UTF-8 split across reads is decoded whole; a
    byte that is not UTF-8 comes as a lone surrogate, which the stream replaces by U+FFFD and names in
    the provenance (`repaired_unicode`), as a file's are."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    piped = source == "-" or stat.S_ISFIFO(os.stat(source).st_mode)  # the end of its input is the end
    read, close = _reader(source, stdin)
    head = b""  # the first bytes, until there are 4 to tell UTF-16, gzip or zip from text (as profile does)
    pending = ""  # decoded, not yet given out: the last len(until) - 1 characters wait for the rest of a sentinel
    idle_since = time.monotonic()
    try:
        while True:
            data = read()
            if not data:
                if piped or not follow or time.monotonic() - idle_since > idle_timeout:
                    if follow and not piped and on_idle is not None:
                        on_idle()
                    yield from _split(pending + decoder.decode(b"", final=True), piece)
                    return
                time.sleep(interval)
                continue
            idle_since = time.monotonic()
            if len(head) < 4:
                head += data[:4 - len(head)]
                if (problem := text_problem(head if len(head) == 4 else head.ljust(4, b"?"))) is not None:
                    if problem.startswith("gzip data"):  # watch reads no .gz, named so or not
                        problem = f"gzip data: watch reads plain text; decompress it (zcat {source} | thinkprobe watch -)"
                    raise OptionError(f"{source}: {problem}")
            pending += decoder.decode(data)
            if until:
                at = pending.find(until)
                if at >= 0:
                    yield from _split(pending[:at], piece)
                    return
                cut = max(0, len(pending) - len(until) + 1)
                ready, pending = pending[:cut], pending[cut:]
            else:
                ready, pending = pending, ""
            yield from _split(ready, piece)
    finally:
        close()


def _split(text: str, piece: int):
    for i in range(0, len(text), piece):
        yield text[i:i + piece]


def snapshot_line(snap: Snapshot) -> str:
    """One line per snapshot for a log: counts, the signals (value/threshold, ! when fired), the profile."""
    signals = " ".join(f"{k}={s.value:g}/{s.threshold:g}{'!' if s.fired else ''}" for k, s in snap.signals.items())
    profile = (" ".join(f"{d}={v:+.2f}" for d, v in snap.profile.items()) if snap.profile
               else "profile: needs --norms" if snap.indicators is not None else "profile: not yet")
    risk = "" if snap.failure_risk is None else f" failure_risk={snap.failure_risk:.2f}"
    return (f"units={snap.units} analysed={snap.analysed_units} pending_chars={snap.pending_chars} {signals} "
            f"{profile}{risk}")


def final_summary(run, norms: Normalizer | None) -> dict[str, Any]:
    """The whole text's result: units, the 19 indicators, the profile against `norms` (None without) and
    the failure risk (anomalies.csv's; None without a failure-risk model); `warnings`: the run's own
    about the text (a repetition loop, a one-unit trace), as `profile` prints them."""
    if not len(run.indicators):
        return {"units": 0, "indicators": None, "profile": None, "profile_note": "no trace was profiled",
                "failure_risk": None, "errors": run.errors}
    warnings = [w for key in ("loop_warnings", "short_trace_warnings") for w in (run.summary or {}).get(key, ())]
    row = run.indicators.iloc[0]
    indicators = {k: float(row[k]) for k in INDICATORS}
    profile = {k: float(v) for k, v in profile_row(norms.z(indicators)).items()} if norms else None
    risk = run.anomalies["failure_risk"].iloc[0] if len(run.anomalies) else None
    return {"units": int(row["units"]), "tokens": int(row["tokens"]), "indicators": indicators, "profile": profile,
            "profile_note": None if norms else NEEDS_NORMS,
            "failure_risk": None if risk is None or risk != risk else float(risk), "warnings": warnings}


def _final_text(final: dict[str, Any]) -> str:
    if final["indicators"] is None:
        return f"final: {final['profile_note']}"
    lines = [f"final profile of the whole text: {final['units']} units, {final['tokens']} tokens"]
    for dim, names in DIMENSIONS.items():
        lines.append(f"  {dim:<13} " + "  ".join(f"{n} {final['indicators'][n]:.4g}" for n in names))
    lines.append("  profile: " + (" ".join(f"{d} {final['profile'][d]:+.3f}" for d in DIMENSION_NAMES)
                                  if final["profile"] else final["profile_note"]))
    if final["failure_risk"] is not None:
        lines.append(f"  failure_risk: {final['failure_risk']:.3f}")
    lines += [f"  warning: {w}" for w in final["warnings"]]
    return "\n".join(lines)


class _Panel:
    """The live panel on a terminal (rich): counts, signals, indicators and profile of the latest snapshot."""

    def __init__(self, out: TextIO):
        from rich.console import Console
        from rich.live import Live

        self.console = Console(file=out)
        self.live = Live(console=self.console, auto_refresh=False, transient=False)
        self.live.start()

    def show(self, snap: Snapshot) -> None:
        from rich.table import Table

        table = Table(title=f"thinkprobe watch: {snap.units} units settled, {snap.analysed_units} analysed, "
                            f"{snap.pending_chars} characters pending", show_header=False, expand=False)
        table.add_column("what", style="bold")
        table.add_column("value")
        for name, s in snap.signals.items():
            table.add_row(name, f"[{'red' if s.fired else 'green'}]{s.value:g} / {s.threshold:g}"
                                f"{'  FIRED' if s.fired else ''}[/]")
        if snap.indicators is not None:
            for dim, names in DIMENSIONS.items():
                table.add_row(dim, "  ".join(f"{n} {snap.indicators[n]:.3g}" for n in names))
        table.add_row("profile", " ".join(f"{d} {v:+.2f}" for d, v in snap.profile.items()) if snap.profile
                      else (snap.profile_note or ""))
        table.add_row("failure risk", "-" if snap.failure_risk is None else f"{snap.failure_risk:.2f}")
        if snap.last_unit:
            table.add_row("last unit", snap.last_unit[:160].replace("\n", " "))
        self.live.update(table, refresh=True)

    def stop(self) -> None:
        self.live.stop()


def watch(source: str, *, out_dir: str | None = None, follow: bool = False, until: str | None = None,
          idle_timeout: float = 10.0, every: int | None = None, as_json: bool = False, text_field: str = "response",
          question: str | None = None, out: TextIO | None = None, panel: bool | None = None,
          emit: Callable[[Snapshot], None] | None = None, **options: Any) -> dict[str, Any]:
    """Follow `source` through a stream (see the module docstring); returns the final summary.
    `question`: the prompt the generation answers (the parser reads it, as `profile` reads a record's
    question). `panel`: the rich panel (default: when `out` is a terminal and not `as_json`); `emit`,
    when given, also receives every snapshot. `options` are `thinkprobe.profile`'s."""
    out = out or sys.stdout
    panel = (out.isatty() and not as_json) if panel is None else panel
    s = Stream(every=every, text_field=text_field, record={"question": question} if question else None, **options)
    shown: list[tuple[int, int]] = []
    view = _Panel(out) if panel else None

    def show(snap: Snapshot) -> None:
        shown.append((snap.units, snap.analysed_units))
        if emit is not None:
            emit(snap)
        if view is not None:
            view.show(snap)
        elif as_json:
            print(json.dumps({"snapshot": snap.as_dict()}), file=out, flush=True)
        else:
            print(snapshot_line(snap), file=out, flush=True)

    idle: list[bool] = []

    def on_idle() -> None:  # it stopped after 1 s of a writer's 3 s pause with exit 0 and not a word
        idle.append(True)
        print(f"stopped reading: {source} did not grow for {idle_timeout:g} s (--idle-timeout); profiling the text "
              "read so far", file=sys.stderr)

    try:
        for piece in read_pieces(source, follow=follow, until=until, idle_timeout=idle_timeout, on_idle=on_idle):
            snap = s.feed(piece)
            if snap is not None:
                show(snap)
        if s.units:
            last = s.snapshot()  # every settled unit analysed
            if not shown or shown[-1] != (last.units, last.analysed_units):  # not the one just shown again
                show(last)
    except KeyboardInterrupt:
        stopped = "interrupted"
        print("interrupted: closing the stream", file=sys.stderr)
    except (TooLarge, SourceChanged) as exc:  # over --max-trace-chars, or a file rewritten: the text kept so far is profiled
        stopped = "too large" if isinstance(exc, TooLarge) else "source changed"
        print(f"stopped reading: {exc}", file=sys.stderr)
    else:
        stopped = "idle" if idle else None
    finally:
        if view is not None:
            view.stop()
    run = s.close(out_dir, warn=False)  # its warnings are shown under the final profile, once
    final = final_summary(run, s.norms)
    final["stopped"] = stopped
    if out_dir:
        final["run"] = str(out_dir)
    if final["indicators"] is None and run.errors:  # say why ("empty reasoning"), not only that nothing was profiled
        final["profile_note"] += ": " + "; ".join(sorted({str(e.get("reason") or e) for e in run.errors}))
    print(json.dumps({"final": final}) if as_json else _final_text(final), file=out, flush=True)
    return final
