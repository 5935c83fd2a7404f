"""The parser network (torch, built on first use): unit inputs, a BiLSTM over the trace's units, an
arc scorer of the candidate pairs and a node-type head; and what its outputs mean (pair-class
probabilities, provisional types).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..candidates import DISTANCE_BUCKETS
from ..features import SHARED_PAIR_FEATURES
from ..protocol import PAIR_CLASSES, TYPE_CLASSES

__all__ = ["build_parser_model", "pair_class_probs", "predict_types"]


def build_parser_model(dim: int, unit_size: int, proj: int = 128, hidden: int = 128, layers: int = 1,
                       arc_hidden: int = 128, context: str = "bilstm", pair_feats: bool = True, dropout: float = 0.2,
                       pair_size: int = SHARED_PAIR_FEATURES):
    """The parser network (see `thinkprobe.link.parser`). `context`: "bilstm" or "none" (the states are
    the projected unit inputs: an ablation); `pair_feats`: whether the arc scorer reads them."""
    import torch
    from torch import nn

    class ParserNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Sequential(nn.Linear(dim + unit_size, proj), nn.ReLU(), nn.Dropout(dropout))
            if context == "bilstm":
                self.ctx = nn.LSTM(proj, hidden, num_layers=layers, bidirectional=True, batch_first=True,
                                   dropout=dropout if layers > 1 else 0.0)
                size = 2 * hidden + proj
            else:
                self.ctx = None
                size = proj
            self.drop = nn.Dropout(dropout)
            self.types = nn.Sequential(nn.Linear(size, hidden), nn.ReLU(), nn.Linear(hidden, len(TYPE_CLASSES)))
            self.head = nn.Linear(size, arc_hidden)
            self.dep = nn.Linear(size, arc_hidden)
            self.bucket = nn.Embedding(len(DISTANCE_BUCKETS) + 1, arc_hidden)
            self.pair = nn.Linear(pair_size, arc_hidden) if pair_feats else None
            self.arc = nn.Sequential(nn.Linear(2 * arc_hidden, arc_hidden), nn.ReLU(), nn.Dropout(dropout),
                                     nn.Linear(arc_hidden, len(PAIR_CLASSES)))  # 0: arc logit, 1..: labels

        def states(self, emb, uf, lengths):
            """Contextual states of a padded batch of traces (B, T, ...) -> (B, T, size)."""
            x = self.inp(torch.cat([emb, uf], dim=-1))
            if self.ctx is None:
                return x
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, _ = self.ctx(packed)
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
            return torch.cat([self.drop(out), x], dim=-1)

        def type_logits(self, h):
            return self.types(h)

        def project(self, h_flat):
            """Head and dependent projections of every unit's state, computed once per unit."""
            return self.head(h_flat), self.dep(h_flat)

        def pair_logits(self, h_flat, gi, gj, bucket, pf, projected=None):
            """Logits of the candidate pairs (gi[k], gj[k]); `projected`: `project(h_flat)`, when
            the caller scores a trace's pairs in several blocks."""
            heads, deps = projected if projected is not None else self.project(h_flat)
            a, b = heads[gi], deps[gj]
            z = a + b + self.bucket(bucket)
            if self.pair is not None:
                z = z + self.pair(pf)
            return self.arc(torch.cat([torch.relu(z), a * b], dim=-1))

    return ParserNet()


def pair_class_probs(logits):
    """(arc logit, label logits) -> probabilities over PAIR_CLASSES: none = 1 - sigmoid(arc),
    each edge class = sigmoid(arc) x softmax(labels)."""
    import torch

    arc = torch.sigmoid(logits[:, 0:1])
    return torch.cat([1.0 - arc, arc * torch.softmax(logits[:, 1:], dim=1)], dim=1)


def predict_types(probs: np.ndarray, offsets: Sequence[float] | None = None) -> list[str]:
    """Provisional types from type probabilities: the most probable type after adding `offsets`
    (one per TYPE_CLASSES, to the log-probabilities; fitted on held-out silver for macro-F1 by
    scripts/train_parser.py and stored in the model's config.json), the first unit never CRT or RPT.

    >>> p = np.array([[0.1, 0.5, 0, 0.4, 0, 0, 0], [0.1, 0.5, 0, 0, 0, 0.4, 0]])
    >>> predict_types(p), predict_types(p, [0, 0, 0, 0, 0, 0.5, 0])
    (['RSN', 'RSN'], ['RSN', 'CON'])
    """
    if not len(probs):
        return []
    score = np.log(np.maximum(np.asarray(probs, np.float64), 1e-12))
    if offsets is not None:
        score = score + np.asarray(offsets, np.float64)
    score[0, [TYPE_CLASSES.index("CRT"), TYPE_CLASSES.index("RPT")]] = -np.inf
    return [TYPE_CLASSES[k] for k in np.argmax(score, axis=1)]

