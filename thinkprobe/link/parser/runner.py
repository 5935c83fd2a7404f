"""Scoring traces with the parser network: type and pair-class probabilities of each trace, its
candidate pairs scored in blocks; one network or an ensemble (probabilities averaged).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..protocol import PAIR_CLASSES, TYPE_CLASSES
from .network import pair_class_probs

__all__ = ["run_parser"]


def run_parser(model, feats: Sequence[dict], embs: Sequence[np.ndarray], device: str = "cpu",
               max_units: int = 0, block: int = 65536) -> list[dict[str, np.ndarray]]:
    """Type and pair-class probabilities of several traces, their pairs scored in blocks. By default
    each trace runs alone, so its scores never depend on which traces share its batch (the same
    bytes whatever the chunk size, the engine or what the score cache already held; a padded batch
    of several traces changes the last bits of the LSTM's products). `max_units` > 0 pads traces
    into batches of at most that many padded units (faster; a longer trace goes alone).
    `model`: one network or a list of them (an ensemble: probabilities averaged)."""
    import torch

    members = list(model) if isinstance(model, (list, tuple)) else [model]

    out: list[dict | None] = [None] * len(feats)
    order = sorted(range(len(feats)), key=lambda k: -len(embs[k]))
    groups: list[list[int]] = []
    for k in order:
        if groups and (len(groups[-1]) + 1) * len(embs[groups[-1][0]]) <= max_units:
            groups[-1].append(k)
        else:
            groups.append([k])
    with torch.inference_mode():
        for group in groups:
            lengths = [len(embs[k]) for k in group]
            if max(lengths) == 0:
                for k in group:
                    out[k] = {"types": np.zeros((0, len(TYPE_CLASSES)), np.float32),
                              "probs": np.zeros((0, len(PAIR_CLASSES)), np.float32)}
                continue
            T, dim = max(lengths), embs[group[0]].shape[1]
            e = np.zeros((len(group), T, dim), np.float32)
            u = np.zeros((len(group), T, feats[group[0]]["uf"].shape[1]), np.float32)
            for r, k in enumerate(group):
                e[r, : lengths[r]] = embs[k]
                u[r, : lengths[r]] = feats[k]["uf"]
            lens = torch.tensor([max(x, 1) for x in lengths])
            et, ut = torch.from_numpy(e).to(device), torch.from_numpy(u).to(device)
            states = [m.states(et, ut, lens) for m in members]
            types = np.mean([torch.softmax(m.type_logits(h), dim=-1).cpu().numpy() for m, h in zip(members, states)], axis=0)
            flats = [h.reshape(-1, h.shape[-1]) for h in states]
            projected = [m.project(flat) for m, flat in zip(members, flats)]
            for r, k in enumerate(group):
                f = feats[k]
                gi = torch.from_numpy(f["i"] + r * T).to(device)
                gj = torch.from_numpy(f["j"] + r * T).to(device)
                bk, pf = torch.from_numpy(f["bucket"]).to(device), torch.from_numpy(f["pf"]).to(device)
                probs = np.zeros((len(f["i"]), len(PAIR_CLASSES)), np.float32)
                for s in range(0, len(f["i"]), block):
                    sl = slice(s, s + block)
                    probs[sl] = np.mean([pair_class_probs(m.pair_logits(flat, gi[sl], gj[sl], bk[sl], pf[sl], proj)).cpu().numpy()
                                         for m, flat, proj in zip(members, flats, projected)], axis=0)
                out[k] = {"types": types[r, : lengths[r]], "probs": probs}
    return out  # type: ignore[return-value]
