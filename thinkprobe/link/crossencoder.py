"""Cross-encoder linking (spec section 1, step 5): any local Hugging Face sequence-classification
model scores the candidate pairs (unit_i, unit_j), i < j, of every trace of a batch together (in fp16 on CUDA),
batched by length. Two kinds of model are understood, told apart by their config's id2label:

- an NLI model (labels entailment / neutral / contradiction, in any order and case: the columns
  are read from the config, never by a fixed index). Entailment makes inference edges (or a
  repetition when the two units are near-identical), contradiction makes negating critiques,
  and units with a critique cue critique their best-scoring candidate.
- a 7-way model fine-tuned by `scripts/train_linker.py --cross-encoder` (labels none + the 6 edge
  types). Critique polarity then comes from the lexicon. Its thinkprobe.json holds the candidate
  settings and thresholds fitted on held-out silver traces.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from ..config import Config
from ..records import EDGE_TYPES, Edge, ThoughtUnit
from ..cache import ScoreCache, through_cache
from ..provenance import files_digest
from .candidates import FROM_WINDOW, CandidateParams, Similarity, candidate_arrays, candidates
from .decode import decode_edges
from .protocol import PAIR_CLASSES, LinkInput
from .cue import CueLinker

__all__ = ["CrossEncoderLinker", "SEVEN_WAY_LABELS", "nli_columns"]

SEVEN_WAY_LABELS: tuple[str, ...] = ("none", *EDGE_TYPES)
_NLI_NAMES = {"entailment": ("entail",), "contradiction": ("contradict",), "neutral": ("neutral",)}


def nli_columns(id2label: dict) -> dict[str, int] | None:
    """Column of entailment, contradiction and neutral in a classifier's output, read from its
    id2label (any order or case; "ENTAILMENT", "entails" and "contradiction" all work); None when
    the labels are not NLI labels.

    >>> nli_columns({0: "CONTRADICTION", 1: "neutral", 2: "Entailment"}) == {"entailment": 2, "contradiction": 0, "neutral": 1}
    True
    """
    found = {}
    for index, label in id2label.items():
        name = str(label).strip().lower()
        for key, prefixes in _NLI_NAMES.items():
            if name.startswith(prefixes):
                found[key] = int(index)
    return found if len(found) == 3 else None


class CrossEncoderLinker:
    """Linker backed by a local sequence-classification model (see the module docstring)."""

    structural_types = False  # the NLI decoding does not give every RPT unit a repetition edge
    kind = "cross-encoder over candidate pairs (local sequence-classification model)"

    @classmethod
    def load(cls, cfg: Config, *, model_dir: str | Path, device: str = "cpu",
             cache_dir: str | Path | None = None) -> "CrossEncoderLinker":
        """The registry's loader (thinkprobe.link.registry)."""
        return cls(model_dir, cfg, device=device, cache_dir=cache_dir)

    def __init__(self, model_dir: str | Path, cfg: Config, *, device: str = "cpu", batch_size: int = 32,
                 max_length: int = 256, cache_dir: str | Path | None = None):
        from transformers import AutoConfig

        self.model_dir = Path(model_dir)
        if not (self.model_dir / "config.json").exists():
            raise FileNotFoundError(f"{self.model_dir} has no config.json: pass a local Hugging Face model folder")
        self.cfg = cfg
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        hf_config = AutoConfig.from_pretrained(str(self.model_dir), local_files_only=True)
        id2label = {int(k): v for k, v in hf_config.id2label.items()}
        self.nli = nli_columns(id2label)
        self.num_labels = len(id2label)
        names = [str(id2label[k]).lower() for k in sorted(id2label)]
        if self.nli is None and names != list(SEVEN_WAY_LABELS):
            raise ValueError(f"{self.model_dir}: labels {names} are neither NLI labels (entailment, neutral, "
                             f"contradiction) nor ThinkProbe's 7 pair classes {list(SEVEN_WAY_LABELS)}")
        extra_path = self.model_dir / "thinkprobe.json"
        extra = json.loads(extra_path.read_text(encoding="utf-8")) if extra_path.exists() else {}
        link = cfg.link
        self.params = CandidateParams.from_dict(extra.get("candidates", {"window": link.window, "top_k": link.top_k}))
        self.decode = extra.get("decode", {"threshold_near": 0.5, "threshold_far": 0.5})
        self.nli_threshold = float(extra.get("nli_threshold", 0.9))
        self.name = f"cross-encoder:{self.model_dir.name}"
        self._cue = CueLinker(cfg)
        self._model = self._tokenizer = None
        self.cache = None
        if cache_dir:
            # what decides the probabilities: the model's files, the candidates, truncation and the device
            files = sorted(p.name for p in self.model_dir.iterdir() if p.is_file() and p.suffix in (".json", ".safetensors", ".bin", ".txt", ".model"))
            setting = json.dumps({"candidates": self.params.__dict__, "max_length": max_length,
                                  "device": device.split(":")[0]}, sort_keys=True)
            self.cache = ScoreCache(cache_dir, "cross-encoder", f"{files_digest((n, Path(self.model_dir) / n) for n in files)}:{setting}")

    def warm(self) -> None:
        """Load the model and its tokenizer now (they load on first use otherwise)."""
        self._load()

    def _load(self):
        if self._model is None:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir), local_files_only=True)
            model = AutoModelForSequenceClassification.from_pretrained(str(self.model_dir), local_files_only=True)
            model = model.to(self.device)
            if self.device.startswith("cuda"):
                model = model.half()  # fp16 on CUDA, like the encoder; softmax is taken in fp32
            self._model = model.eval()
            self._torch = torch
        return self._model, self._tokenizer

    def candidates(self, item: LinkInput) -> list[np.ndarray]:
        return [c for c, _ in candidates(item.units, item.embeddings, self.params)]

    def pair_probabilities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Softmax outputs for text pairs (first, second), batched by length, in input order."""
        model, tok = self._load()
        torch = self._torch
        out = np.zeros((len(pairs), model.config.num_labels), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda k: (len(pairs[k][0]) + len(pairs[k][1]), k))
        with torch.inference_mode():
            for s in range(0, len(order), self.batch_size):
                idx = order[s:s + self.batch_size]
                enc = tok([pairs[k][0] for k in idx], [pairs[k][1] for k in idx], truncation=True,
                          max_length=self.max_length, padding=True, return_tensors="pt")
                logits = model(**{k: v.to(self.device) for k, v in enc.items()}).logits
                out[idx] = torch.softmax(logits.float(), dim=1).cpu().numpy()
        return out

    @property
    def cache_stats(self) -> dict[str, int]:
        return self.cache.stats if self.cache else {}

    def score_pairs(self, batch: Sequence[LinkInput]) -> list[dict[str, np.ndarray]]:
        """Per trace: its candidate pairs (i, j, origin) and the model's probabilities (probs), the
        pairs of every trace not in the cache scored together, sorted by length."""
        return through_cache(self.cache, [(item.units, item.embeddings) for item in batch],
                             lambda todo: self._score([batch[n] for n in todo]))

    def _score(self, batch: Sequence[LinkInput]) -> list[dict[str, np.ndarray]]:
        plans, texts = [], []
        for item in batch:
            i, j, origin = candidate_arrays(item.units, item.embeddings, self.params)
            plans.append((len(texts), i, j, origin))
            texts += [(item.units[a].text, item.units[b].text) for a, b in zip(i, j)]
        probs = self.pair_probabilities(texts) if texts else np.zeros((0, self.num_labels), np.float32)
        return [{"i": i.astype(np.int32), "j": j.astype(np.int32), "origin": origin.astype(np.uint8),
                 "probs": probs[start:start + len(i)]} for start, i, j, origin in plans]

    def link(self, batch: Sequence[LinkInput], mapper=map) -> list[list[Edge]]:
        out = []
        for item, s in zip(batch, self.score_pairs(batch)):
            p, i, j, origin = s["probs"], s["i"], s["j"], s["origin"]
            if self.nli is not None:
                out.append(self._decode_nli(item.units, Similarity(item.embeddings), p, i, j, origin))
            else:
                out.append(decode_edges(item.units, self.nine_way(item.units, p, j), i, j, origin, self.decode))
        return out

    def nine_way(self, units: Sequence[ThoughtUnit], p: np.ndarray, j: np.ndarray) -> np.ndarray:
        """7-way probabilities in PAIR_CLASSES' layout: critique goes to the lexicon's polarity of unit j."""
        nine = np.zeros((len(p), len(PAIR_CLASSES)), dtype=np.float32)
        for col, name in enumerate(SEVEN_WAY_LABELS):
            if name != "critique":
                nine[:, PAIR_CLASSES.index(name)] = p[:, col]
        crit = SEVEN_WAY_LABELS.index("critique")
        polarity = np.array([PAIR_CLASSES.index(f"critique:{self._cue.polarity(units[b].text)}") for b in j], dtype=np.int64)
        nine[np.arange(len(p)), polarity] = p[:, crit]
        return nine

    def _decode_nli(self, units: Sequence[ThoughtUnit], sim: Similarity, p: np.ndarray, i: np.ndarray, j: np.ndarray,
                    origin: np.ndarray) -> list[Edge]:
        """Zero-shot NLI edges: each unit's most entailing window neighbour as its forward parent,
        contradictions as critiques, other entailments as inferences or repetitions. A pair carries
        one edge (as in link/decode.py): the most probable of those proposed for it, so a parent
        and a critique never make a 2-cycle on one pair."""
        ent, con = p[:, self.nli["entailment"]], p[:, self.nli["contradiction"]]
        near = (origin & FROM_WINDOW) > 0
        link = self.cfg.link
        edges: list[Edge] = []
        for b in range(1, len(units)):
            ks = np.flatnonzero(j == b)
            u = units[b]
            # forward parent: the most entailing neighbour, with the CueLinker's preference for j-1
            window = ks[near[ks]]
            bonus = link.adjacent_bonus * (i[window] == b - 1)
            parent = int(window[int(np.argmax(ent[window] + bonus))])
            kind = "branch" if u.node_type == "EXP" else "elaboration" if u.node_type in ("FAC", "MET") else "inference"
            edges.append(Edge(int(i[parent]), b, kind, score=round(float(ent[parent]), 4)))
            for k in ks:
                a = int(i[k])
                if con[k] >= self.nli_threshold:
                    edges.append(Edge(b, a, "critique", "negate", round(float(con[k]), 4)))
                elif ent[k] >= self.nli_threshold and k != parent:
                    if sim.at(b, a) >= link.repetition_similarity:
                        edges.append(Edge(b, a, "repetition", score=round(float(ent[k]), 4)))
                    else:
                        edges.append(Edge(a, b, "inference", score=round(float(ent[k]), 4)))
            if "CRT" in u.cues or u.node_type == "CRT":
                k = ks[int(np.argmax(ent[ks] + con[ks]))]
                polarity = "negate" if con[k] > ent[k] else "affirm" if ent[k] >= 0.5 else "uncertain"
                edges.append(Edge(b, int(i[k]), "critique", polarity, round(float(max(ent[k], con[k])), 4)))
        best: dict[tuple[int, int], Edge] = {}
        for e in edges:  # the first proposed wins a tie
            pair = (min(e.src, e.dst), max(e.src, e.dst))
            if pair not in best or e.score > best[pair].score:
                best[pair] = e
        return sorted(best.values(), key=lambda e: (e.src, e.dst, e.edge_type))
