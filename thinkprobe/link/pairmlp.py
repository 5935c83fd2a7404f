"""The pair-MLP backend and the type head (spec section 1, steps 4-5): small torch models over
MiniLM unit embeddings and pair features, trained by scripts/train_linker.py on ReasoningFlow
graphs and shipped in models/linker-<name>/.

Candidate pairs (i < j) come from `base.candidates` (a window of neighbours, the top-k most
similar earlier units, a cue-driven look-back); a pair classifier gives each candidate no-edge or
an edge type (critique with its polarity), decoded by `base.decode_edges`.
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np

from ..config import Config
from ..records import Edge, ThoughtUnit
from ..cache import ScoreCache, through_cache
from ..provenance import files_digest
from .candidates import CandidateParams, Similarity, as_similarity, candidate_arrays, candidates
from .decode import decode_edges
from .features import TextFlags, jaccard, shared_pair_features, symbol_rates, word_index
from .models import find_model_dir, read_model_dir
from .protocol import PAIR_CLASSES, TYPE_CLASSES, LinkInput, Typer

__all__ = [
    "UnitFeaturizer", "MLP_PAIR_FEATURES", "pair_features", "link_features", "unit_features", "build_pair_model",
    "build_type_model", "neighbours", "TrainedLinker", "TypeHead", "Retyper", "head_typer", "load_type_head",
]


class UnitFeaturizer(TextFlags):
    """Per-unit features besides the embedding: lexicon cue flags (the run's config), text-shape
    flags (patterns stored with the model, not in code), position, length and similarity to
    earlier units (restatements look like something said before)."""

    numeric = 12

    def __call__(self, units: Sequence[ThoughtUnit], sim: Similarity | np.ndarray,
                 words: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Features of each unit; `sim`: the trace's `Similarity`, or its unit embeddings."""
        out, texts, length, f = self.flags(units)
        n = len(units)
        if not n:
            return out
        k = np.arange(n)
        # each unit's most similar earlier unit: similarity and word overlap
        sim = as_similarity(sim)
        top, top_val = sim.top_earlier(1)
        nearest = np.maximum(top[:, 0], 0)
        best = np.where(top[:, 0] >= 0, top_val[:, 0], 0.0).astype(np.float64)
        words = words if words is not None else word_index(units)
        jac = jaccard(words[0], words[1], k, nearest)
        best[0] = jac[0] = 0.0
        out[:, f] = k / max(1, n - 1)
        out[0, f + 1] = 1.0
        out[n - 1, f + 2] = 1.0
        out[:, f + 3] = [u.section == "answer" for u in units]
        out[:, f + 4] = [q == 0 or units[q - 1].segment != units[q].segment for q in range(n)]
        out[:, f + 5] = np.log1p(length) / 8.0
        out[:, f + 6] = best
        out[:, f + 7] = jac
        adjacent = sim.adjacent()  # similarity to the previous unit; the next unit's is the next one's
        out[1:, f + 8] = adjacent[1:]
        out[:-1, f + 9] = adjacent[1:]
        out[:, f + 10], out[:, f + 11] = symbol_rates(texts, length)
        return out


MLP_PAIR_FEATURES = 19


def pair_features(units: Sequence[ThoughtUnit], sim: Similarity | np.ndarray, i: np.ndarray, j: np.ndarray,
                  origin: np.ndarray, words: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Features of candidate pairs (i < j, ordered by j): similarity and its rank among j's
    earlier units, distance, topical blocks, sections, word overlap and where the candidate came
    from. `sim`: the trace's `Similarity`, or its unit embeddings."""
    m = len(i)
    out = np.zeros((m, MLP_PAIR_FEATURES), dtype=np.float32)
    if not m:
        return out
    words = words if words is not None else word_index(units)
    sim = as_similarity(sim)
    rank, best = sim.rank_and_best(i, j)
    shared = shared_pair_features(units, i, j, origin, sim.pairs(i, j), rank, best, words)
    d = (j - i).astype(np.float32)
    out[:, 0:5] = shared[:, 0:5]  # similarity, its rank and gap to the best, distance
    out[:, 5] = d == 1
    out[:, 6] = d == 2
    out[:, 7:15] = shared[:, 5:13]  # blocks, sections, word overlap, origin
    out[:, 15] = np.log1p(d) / 5.0
    out[:, 16:19] = shared[:, 13:16]  # plan in force at j, opens j's block or the one before
    return out


def link_features(units: Sequence[ThoughtUnit], emb: np.ndarray, params: CandidateParams,
                  featurizer: UnitFeaturizer) -> dict[str, np.ndarray]:
    """What the pair models read of one trace: candidate pairs (i, j, origin), unit features (uf)
    and pair features (pf). NumPy and numba only, so worker processes can build it."""
    sim = Similarity(emb)
    sim.prepare((params.top_k, params.window), (1, 0))  # candidates' and unit features' top-k in one pass
    i, j, origin = candidate_arrays(units, sim, params)
    words = word_index(units)
    return {"i": i, "j": j, "origin": origin, "uf": featurizer(units, sim, words),
            "pf": pair_features(units, sim, i, j, origin, words)}


def unit_features(units: Sequence[ThoughtUnit], emb: np.ndarray, featurizer: UnitFeaturizer) -> np.ndarray:
    """The type head's unit features of one trace (NumPy and numba only, for worker processes)."""
    return featurizer(units, Similarity(emb))


# ----------------------------------------------------------------------------- models


def _torch():
    import torch

    return torch


def build_pair_model(dim: int, unit_size: int, proj: int = 64, hidden: int = 128, dropout: float = 0.3):
    """Pair classifier: a shared projection of both embeddings, their product and difference,
    both units' features and the pair features, then a two-layer MLP over PAIR_CLASSES."""
    torch = _torch()
    nn = torch.nn

    class PairModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(dim, proj)
            self.mlp = nn.Sequential(
                nn.Linear(4 * proj + 2 * unit_size + MLP_PAIR_FEATURES, hidden), nn.ReLU(), nn.Dropout(dropout),
                nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, len(PAIR_CLASSES)),
            )

        def forward(self, ei, ej, ui, uj, pf):
            a, b = self.proj(ei), self.proj(ej)
            return self.mlp(torch.cat([a, b, a * b, (a - b).abs(), ui, uj, pf], dim=1))

        # Inference computes the same function in two steps, so that the work proportional to the
        # number of pairs stays small: the first layer is split into the terms of unit i alone,
        # of unit j alone (computed once per unit) and of the pair (product, difference, features).

        def unit_terms(self, e, u):
            """Per unit: its projection, and its first-layer terms in the role of i and of j."""
            w = self.mlp[0].weight
            a = self.proj(e)
            p, s = a.shape[1], u.shape[1]
            as_i = a @ w[:, :p].T + u @ w[:, 4 * p : 4 * p + s].T
            as_j = a @ w[:, p : 2 * p].T + u @ w[:, 4 * p + s : 4 * p + 2 * s].T
            return a, as_i, as_j

        def pair_logits(self, terms, i, j, pf):
            """Logits of pairs (i[k], j[k]) from `unit_terms` of their units and their features."""
            a, as_i, as_j = terms
            w, first = self.mlp[0].weight, self.mlp[0]
            p, s = a.shape[1], (w.shape[1] - 4 * a.shape[1] - pf.shape[1]) // 2
            ai, aj = a[i], a[j]
            pair_w = torch.cat([w[:, 2 * p : 4 * p], w[:, 4 * p + 2 * s :]], dim=1)
            h = torch.addmm(first.bias, torch.cat([ai * aj, (ai - aj).abs(), pf], dim=1), pair_w.T)
            h = torch.relu(h + as_i[i] + as_j[j])
            return self.mlp[5](torch.relu(self.mlp[3](h)))

    return PairModel()


def build_type_model(dim: int, unit_size: int, hidden: int = 128, dropout: float = 0.3):
    """Type head: the unit's embedding, its neighbours' (context), and its features -> TYPE_CLASSES."""
    torch = _torch()
    nn = torch.nn

    class TypeModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = nn.Sequential(
                nn.Linear(3 * dim + unit_size, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, len(TYPE_CLASSES)),
            )

        def forward(self, e, prev, nxt, u):
            return self.mlp(torch.cat([e, prev, nxt, u], dim=1))

    return TypeModel()


def neighbours(emb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings of the previous and next unit (zeros at the ends)."""
    prev = np.zeros_like(emb)
    nxt = np.zeros_like(emb)
    if len(emb) > 1:
        prev[1:] = emb[:-1]
        nxt[:-1] = emb[1:]
    return prev, nxt


def _load_state(model, path: Path):
    from safetensors.torch import load_file

    model.load_state_dict(load_file(str(path)))
    model.eval()
    return model


# ----------------------------------------------------------------------------- the linker


class TrainedLinker:
    """Pair classifier over candidate pairs, scored for every trace of the batch at once.

    Decoding: a candidate becomes an edge when its no-edge probability is below the threshold
    fitted on held-out silver traces (one for the window, one beyond it), typed by its most
    probable edge class. Then the invariants: a unit with no incoming forward edge gets the
    best-scoring forward parent in its window, and a unit whose provisional type is CRT or RPT
    gets its most probable critique or repetition target, so that typing and edges agree.

    Scores depend on the units and embeddings only (not on node types), so with `cache_dir` they
    are kept on disk per trace and a second run of the same traces scores nothing. The pair
    models run on `device` (the run's: CUDA when present); features are built on the CPU.
    """

    block = 16384  # pairs per forward pass: bounds memory whatever the batch
    structural_types = True  # decoding gives provisional CRT / RPT units their edge
    kind = "pair MLP over candidate pairs + type head (MiniLM features)"

    @classmethod
    def load(cls, cfg: Config, *, model_dir: str | Path, device: str = "cpu",
             cache_dir: str | Path | None = None) -> "TrainedLinker":
        """The registry's loader (thinkprobe.link.registry)."""
        return cls(model_dir, cfg, cache_dir, device)

    def __init__(self, model_dir: str | Path, cfg: Config, cache_dir: str | Path | None = None, device: str = "cpu"):
        self.model_dir = Path(model_dir)
        meta = read_model_dir(str(self.model_dir))
        self.meta = meta
        self.device = device
        self.name = meta.get("name", self.model_dir.name)
        self.params = CandidateParams.from_dict(meta["candidates"])
        self.featurizer = UnitFeaturizer(meta["cue_names"], meta["shape_patterns"])
        self.decode = meta["decode"]
        self._model = None
        self.cache = None
        if cache_dir:
            fingerprint = files_digest((n, Path(self.model_dir) / n) for n in ["config.json", "pair_model.safetensors"])
            self.cache = ScoreCache(cache_dir, "pairs", f"{fingerprint}:{device.split(':')[0]}")

    def warm(self) -> None:
        """Load the pair models now (they load on first use otherwise)."""
        self.models  # noqa: B018 - the property loads them

    @property
    def models(self):
        """The ensemble's pair models (their probabilities are averaged)."""
        if self._model is None:
            from safetensors.torch import load_file

            m = self.meta["pair_model"]
            state = load_file(str(self.model_dir / "pair_model.safetensors"))
            self._model = []
            for k in range(m.get("members", 1)):
                model = build_pair_model(m["dim"], self.featurizer.size, m["proj"], m["hidden"])
                model.load_state_dict({name[len(f"{k}."):]: v for name, v in state.items() if name.startswith(f"{k}.")})
                self._model.append(model.to(self.device).eval())
        return self._model

    @property
    def cache_stats(self) -> dict[str, int]:
        return self.cache.stats if self.cache else {}

    def candidates(self, item: LinkInput) -> list[np.ndarray]:
        return [c for c, _ in candidates(item.units, item.embeddings, self.params)]

    def link(self, batch: Sequence[LinkInput], mapper=map) -> list[list[Edge]]:
        """Edges of every trace of the batch. `mapper` builds the per-trace features (a worker
        pool's map spreads them over processes); the models then score all pairs at once."""
        return [decode_edges(item.units, s["probs"], s["i"], s["j"], s["origin"], self.decode)
                for item, s in zip(batch, self.score_pairs(batch, mapper))]

    def score_pairs(self, batch: Sequence[LinkInput], mapper=map) -> list[dict[str, np.ndarray]]:
        """Per trace: its candidate pairs (i, j, origin) and their class probabilities (probs),
        from the cache where present."""
        return through_cache(self.cache, [(item.units, item.embeddings) for item in batch],
                             lambda todo: self._score([batch[n] for n in todo], mapper))

    def _score(self, batch: Sequence[LinkInput], mapper=map) -> list[dict[str, np.ndarray]]:
        """Candidates and features per trace (through `mapper`); then the models over the pairs
        of all traces at once, in blocks of `block` pairs."""
        torch = _torch()
        feats = list(mapper(link_features, [item.units for item in batch], [item.embeddings for item in batch],
                            itertools.repeat(self.params), itertools.repeat(self.featurizer)))
        offsets = np.cumsum([0] + [len(item.units) for item in batch])
        total = sum(len(f["i"]) for f in feats)
        probs = np.zeros((total, len(PAIR_CLASSES)), np.float32)
        if total:
            dev = self.device

            def stacked(key, shift=False):
                parts = [f[key] + offsets[k] if shift else f[key] for k, f in enumerate(feats)]
                return torch.from_numpy(np.concatenate(parts)).to(dev)

            gi, gj, pf = stacked("i", True), stacked("j", True), stacked("pf")
            with torch.inference_mode():
                e = torch.from_numpy(np.concatenate([np.asarray(item.embeddings, np.float32) for item in batch])).to(dev)
                u = stacked("uf")
                terms = [m.unit_terms(e, u) for m in self.models]
                for s in range(0, total, self.block):
                    part = slice(s, s + self.block)
                    probs[part] = torch.stack([torch.softmax(m.pair_logits(t, gi[part], gj[part], pf[part]), dim=1)
                                               for m, t in zip(self.models, terms)]).mean(0).cpu().numpy()
        out, start = [], 0
        for f in feats:
            m = len(f["i"])
            # compact on disk: int32 indices, uint8 origin flags (probabilities stay float32: decoding compares them)
            out.append({"i": f["i"].astype(np.int32), "j": f["j"].astype(np.int32), "origin": f["origin"].astype(np.uint8),
                        "probs": probs[start : start + m]})
            start += m
        return out


# ----------------------------------------------------------------------------- the type head


class TypeHead:
    """Provisional node types from the unit embedding, its neighbours and its features. Structural
    types are still settled by the edges (`nodetypes.finalise_type`)."""

    def __init__(self, model_dir: str | Path, cache_dir: str | Path | None = None):
        self.model_dir = Path(model_dir)
        meta = read_model_dir(str(self.model_dir))
        self.meta = meta
        self.featurizer = UnitFeaturizer(meta["cue_names"], meta["shape_patterns"])
        self._model = None
        self.cache = None
        if cache_dir:
            fingerprint = files_digest((n, Path(self.model_dir) / n) for n in ["config.json", "type_model.safetensors"])
            self.cache = ScoreCache(cache_dir, "types", fingerprint)

    def warm(self) -> None:
        """Load the type model now (it loads on first use otherwise)."""
        self.model  # noqa: B018 - the property loads it

    @property
    def model(self):
        if self._model is None:
            m = self.meta["type_model"]
            model = build_type_model(m["dim"], self.featurizer.size, m["hidden"])
            self._model = _load_state(model, self.model_dir / "type_model.safetensors")
        return self._model

    def probabilities(self, units: Sequence[ThoughtUnit], emb: np.ndarray) -> np.ndarray:
        """Type probabilities of each unit, from the cache where present."""
        return self.probabilities_batch([(units, emb)])[0]

    def _probabilities(self, units: Sequence[ThoughtUnit], emb: np.ndarray, feats: np.ndarray | None = None) -> np.ndarray:
        torch = _torch()
        emb = np.asarray(emb, dtype=np.float32)
        feats = unit_features(units, emb, self.featurizer) if feats is None else feats
        prev, nxt = neighbours(emb)
        cols = [torch.from_numpy(x) for x in (emb, prev, nxt, feats)]
        with torch.inference_mode():
            return torch.softmax(self.model(*cols), dim=1).numpy()

    def probabilities_batch(self, items: Sequence[tuple[Sequence[ThoughtUnit], np.ndarray]], mapper=map) -> list[np.ndarray]:
        """`probabilities` of several traces: the unit features of those not cached are built
        through `mapper` (a worker pool's map spreads them over processes)."""
        typed = [item for item in items if len(item[0])]

        def compute(todo: list[int]) -> list[dict[str, np.ndarray]]:
            feats = mapper(unit_features, [typed[n][0] for n in todo], [typed[n][1] for n in todo],
                           itertools.repeat(self.featurizer))
            return [{"probs": self._probabilities(*typed[n], f)} for n, f in zip(todo, feats)]

        probs = iter(through_cache(self.cache, typed, compute))
        empty = np.zeros((0, len(TYPE_CLASSES)), np.float32)
        return [next(probs)["probs"] if len(units) else empty for units, _ in items]

    def predict(self, units: Sequence[ThoughtUnit], emb: np.ndarray, structural: bool = True,
                probs: np.ndarray | None = None) -> list[str]:
        """Provisional types. CRT and RPT need an earlier unit to act on, so the first unit gets the
        next best type; with structural=False no unit gets them (for linkers that do not guarantee
        the edge those types need, like the CueLinker). `probs`: this trace's `probabilities`,
        when already at hand."""
        probs = (self.probabilities(units, emb) if probs is None else probs).copy()
        if not len(probs):
            return []
        structural_cols = [TYPE_CLASSES.index("CRT"), TYPE_CLASSES.index("RPT")]
        probs[0 if structural else slice(None), structural_cols] = -1.0
        return [TYPE_CLASSES[k] for k in np.argmax(probs, axis=1)]


class Retyper:
    """(units, embeddings) -> the units with the type head's provisional types."""

    def __init__(self, head: TypeHead, structural: bool):
        self.head, self.structural = head, structural

    def warm(self) -> None:
        self.head.warm()

    def __call__(self, units: Sequence[ThoughtUnit], emb: np.ndarray) -> list[ThoughtUnit]:
        return [replace(u, node_type=t) for u, t in zip(units, self.head.predict(units, emb, self.structural))]

    def batch(self, items: Sequence[tuple], mapper=map) -> list[list[ThoughtUnit]]:
        """Several traces at once ((units, embeddings[, question]) each; the question is not read),
        their features built through `mapper`."""
        items = [(item[0], item[1]) for item in items]
        return [[replace(u, node_type=t) for u, t in zip(units, self.head.predict(units, emb, self.structural, probs))]
                for (units, emb), probs in zip(items, self.head.probabilities_batch(items, mapper))]

    @property
    def cache_stats(self) -> dict[str, int]:
        return self.head.cache.stats if self.head.cache else {}


def head_typer(linker, head: TypeHead | None = None, cache_dir: str | Path | None = None) -> Typer:
    """The "head" typer (thinkprobe.link.registry): the linker's own typer when it has one (a
    joint model types and links together), else a `Retyper` that applies `head` (default: the
    shipped type head, loaded with `cache_dir`). CRT and RPT come from the head only for a linker
    with `structural_types` (it gives such units the edge their type needs)."""
    if head is None and getattr(linker, "typer", None) is not None:
        return linker.typer
    return Retyper(head or load_type_head(cache_dir=cache_dir), structural=bool(getattr(linker, "structural_types", False)))


def load_type_head(name_or_dir: str | None = None, cache_dir: str | Path | None = None) -> TypeHead:
    """The type head shipped with a pair-MLP model (default: the registered pair MLP's folder),
    for linkers that do not type units themselves; with `cache_dir`, its probabilities are kept on
    disk per trace."""
    from .registry import LINKERS

    return TypeHead(find_model_dir(name_or_dir or LINKERS["pair-mlp"].model), cache_dir)
