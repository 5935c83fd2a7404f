"""The parser's reader (issue 27): the top layers of the encoder, fine-tuned for linking and typing,
over the token states of the frozen lower layers. The pipeline's encoder runs the lower layers
once; the frozen top layers give the unit embedding (TextTiling, indicators), the reader's give
the parser a vector per unit that was trained to keep what linking needs (numbers, references,
checks), at the cost of the top layers only.
"""
from __future__ import annotations

import copy
from typing import Sequence

import numpy as np

__all__ = ["tokenize", "lower_states", "upper_token_states", "upper_states", "build_reader", "READER_FILE", "pad_states", "Reader"]

READER_FILE = "reader.safetensors"


def tokenize(model, texts: Sequence[str]) -> list[np.ndarray]:
    """Token ids of `texts` as the encoder reads them (special tokens, truncated to its maximum length)."""
    if not texts:
        return []
    ids = model.tokenizer(list(texts), truncation=True, max_length=model.max_seq_length, verbose=False)["input_ids"]
    return [np.asarray(x, dtype=np.int64) for x in ids]


def _bert(model):
    """The transformer of a sentence-transformers model."""
    return model[0].auto_model


def lower_states(model, input_ids, frozen: int):
    """Token states after the embeddings and the first `frozen` layers of a batch of same-length,
    unpadded token ids (B, L) -> (B, L, hidden), float32, no gradient."""
    import torch

    bert = _bert(model)
    with torch.inference_mode():
        h = bert.embeddings(input_ids=input_ids, token_type_ids=torch.zeros_like(input_ids))
        for layer in bert.encoder.layer[:frozen]:
            h = layer(h)
            h = h[0] if isinstance(h, tuple) else h
    return h.float()


def upper_token_states(layers, h, mask=None):
    """The remaining layers over token states h (B, L, hidden): their token states (B, L, hidden).
    `mask` (B, L) (1 = token) for padded states; None for unpadded ones, which then take the
    encoder's own unmasked path (its rows do not depend on how many rows share the batch; with an
    all-ones mask they moved in the fifth decimal)."""
    import torch

    add = None if mask is None else (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
    for layer in layers:
        h = layer(h, add)
        h = h[0] if isinstance(h, tuple) else h
    return h


def upper_states(layers, h, mask=None):
    """`upper_token_states` mean-pooled over the tokens (as the encoder pools): (B, hidden)."""
    h = upper_token_states(layers, h, mask)
    if mask is None:
        return h.mean(dim=1)
    m = mask[:, :, None].to(h.dtype)
    return (h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)


def pad_states(items: Sequence[np.ndarray]):
    """Token-state arrays (tokens x hidden) -> padded float32 tensor (B, L, hidden) and mask (B, L)."""
    import torch

    L = max(len(x) for x in items)
    h = np.zeros((len(items), L, items[0].shape[1]), np.float32)
    m = np.zeros((len(items), L), np.float32)
    for r, x in enumerate(items):
        h[r, : len(x)] = x
        m[r, : len(x)] = 1.0
    return torch.from_numpy(h), torch.from_numpy(m)


def build_reader(model=None, frozen: int = 4, config=None):
    """The reader: copies of the encoder's layers above `frozen` (from `model`, a sentence-transformers
    model: its pretrained weights; or new ones of `config`, to load trained weights into)."""
    from torch import nn

    if model is not None:
        bert = _bert(model)
        layers = nn.ModuleList(copy.deepcopy(layer) for layer in bert.encoder.layer[frozen:])
    else:
        from transformers.models.bert.modeling_bert import BertLayer

        layers = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers - frozen))
    return layers


class Reader:
    """A trained reader (the parser folder's reader.safetensors) applied inside the encoder's
    forward pass (`Encoder.attach_reader`): `tap` catches the token states after the frozen layers,
    `vectors` runs the fine-tuned layers on them (in the encoder's precision: rounding the states to
    float16, as the training cache held them, made the vectors depend on the batch through rounding
    flips)."""

    def __init__(self, layers, frozen: int, hidden: int):
        self.layers, self.frozen, self.hidden = layers.eval(), frozen, hidden

    @classmethod
    def load(cls, path, frozen: int, encoder_model) -> "Reader":
        """The reader's weights in `path` (safetensors) on the layers of the encoder's architecture."""
        from safetensors.torch import load_file

        config = _bert(encoder_model).config
        layers = build_reader(config=config, frozen=frozen)
        layers.load_state_dict({k: v.float() for k, v in load_file(str(path)).items()})
        # the encoder's device and dtype: its lower layers' states arrive in fp16 on CUDA (bf16 on
        # request on CPU), and float32 layers refused them (the first CUDA run skipped every trace)
        layers.to(device=encoder_model.device, dtype=next(encoder_model.parameters()).dtype)
        return cls(layers, frozen, config.hidden_size)

    def tap(self, model):
        """Context manager: a list that holds the output of the encoder's last frozen layer of the
        forward pass run inside it (by this thread: the encoder runs passes on several threads)."""
        import contextlib
        import threading

        @contextlib.contextmanager
        def tapped():
            caught: list = []
            me = threading.get_ident()

            def hook(_module, _inputs, output):
                if threading.get_ident() == me:
                    caught.append(output[0] if isinstance(output, tuple) else output)

            handle = _bert(model).encoder.layer[self.frozen - 1].register_forward_hook(hook)
            try:
                yield caught
            finally:
                handle.remove()

        return tapped()

    def vectors(self, h):
        """Normalised reader vectors of a batch of unpadded token states (B, L, hidden), no mask."""
        import torch

        with torch.inference_mode():
            return torch.nn.functional.normalize(upper_states(self.layers, h), dim=1).float()
