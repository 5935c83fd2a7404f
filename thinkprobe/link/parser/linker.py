"""The trace-level parser as a linking backend (`ParserLinker`, the `Linker` protocol) and the
provisional typer of a run (`ParserTyper`): features, the network's scores (from the score cache
where present), decoding and provisional types.
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np

from ...cache import ScoreCache, through_cache
from ...config import Config
from ...provenance import files_digest
from ...records import Edge, ThoughtUnit
from ..candidates import CandidateParams
from ..decode import decode_edges
from ..models import read_model_dir
from ..protocol import LinkInput
from .features import ParserFeaturizer, trace_features, unit_features
from .gate import gated_trace_types
from .model_dir import load_parser_model
from .network import predict_types
from .runner import run_parser

__all__ = ["ParserLinker", "ParserTyper"]


class ParserLinker:
    """The trace-level parser as a linking backend (the `Linker` protocol) and, through `typer`,
    the provisional typer of the run. Probabilities depend only on the units' text, cues, blocks
    and embeddings, so typing then linking the same batch scores it once (a small memo keyed by
    the batch's unit spans)."""

    structural_types = True

    @property
    def kind(self) -> str:
        """What `thinkprobe doctor` says the loaded model is."""
        rerank = "; far candidates chosen by a learned reranker" if "rerank" in self.meta else ""
        rerank += "; restatements typed with the question" if "rpt_gate" in self.meta else ""
        if "reader" in self.meta:
            return ("trace-level parser reading the units' tokens (fine-tuned top encoder layers, BiLSTMs over "
                    f"[embedding, reader vector]): edges and node types jointly{rerank}")
        return f"trace-level parser (BiLSTM over MiniLM unit embeddings): edges and node types jointly{rerank}"

    @classmethod
    def load(cls, cfg: Config, *, model_dir: str | Path, device: str = "cpu",
             cache_dir: str | Path | None = None) -> "ParserLinker":
        """The registry's loader (thinkprobe.link.registry)."""
        return cls(model_dir, cfg, cache_dir, device)

    def __init__(self, model_dir: str | Path, cfg: Config | None = None, cache_dir: str | Path | None = None,
                 device: str = "cpu"):
        self.model_dir = Path(model_dir)
        self.meta = read_model_dir(str(self.model_dir))
        self.name = self.meta.get("name", self.model_dir.name)
        self.params = CandidateParams.from_dict(self.meta["candidates"])
        self.decode = dict(self.meta["decode"])
        self.featurizer = ParserFeaturizer(self.meta["cue_names"], self.meta["shape_patterns"], self.meta.get("lexical_pairs", False),
                                           self.meta.get("question", False))
        self.gate = self.meta.get("rpt_gate")  # RPT decided with the question (`gate.gated_trace_types`), or None
        self.reads_question = self.featurizer.question or self.gate is not None
        self.device = device
        self._model = None
        self._retriever = None
        self._reranker = None
        self._reader = None
        self._encoder = None
        self._memo: dict = {}
        self.cache = None
        if cache_dir:  # per-trace outputs on disk, keyed by the model's files and what it reads of a trace
            names = ["config.json", "parser.safetensors"] + [f"{part}.safetensors" for part in ("retriever", "reader", "rerank")
                                                             if part in self.meta]
            fingerprint = files_digest((n, self.model_dir / n) for n in names)
            self.cache = ScoreCache(cache_dir, "parser", f"{fingerprint}:{device.split(':')[0]}")

    def warm(self) -> None:
        """Load every model file now (each loads on first use otherwise): the networks, the reranker
        or retriever and, with a reader, its layers (onto the bound encoder, else a default one)."""
        self.model, self.reranker, self.retriever  # noqa: B018 - the properties load them
        if "reader" in self.meta:
            self.reader  # noqa: B018

    @property
    def reranker(self):
        """The candidate reranker of the model folder (`rerank.Reranker`; None: the model has none)."""
        if "rerank" not in self.meta:
            return None
        if self._reranker is None:
            from ..rerank import RERANK_FILE, Reranker

            self._reranker = Reranker.load(self.model_dir / RERANK_FILE)
        return self._reranker

    @property
    def model(self):
        if self._model is None:
            self._model, _, _ = load_parser_model(self.model_dir)
            for m in (self._model if isinstance(self._model, list) else [self._model]):
                m.to(self.device)
        return self._model

    @property
    def retriever(self):
        """The learned candidate retriever of the model folder (None: the model has none)."""
        if "retriever" not in self.meta:
            return None
        if self._retriever is None:
            from ..retriever import load_retriever

            self._retriever = load_retriever(self.model_dir, self.meta).to(self.device)
        return self._retriever

    @property
    def embedding_dim(self) -> int:
        """The unit embeddings' size (the network reads twice that with a reader: the reader's vectors
        come from the same encoder)."""
        dim = self.meta["model"]["dim"]
        return dim // 2 if "reader" in self.meta else dim

    def bind_encoder(self, encoder) -> None:
        """The run's encoder: a model with a reader (fine-tuned top encoder layers) attaches it there,
        so that one pass of the encoder's lower layers serves both the embeddings and the reader."""
        self._encoder = encoder
        if "reader" in self.meta:
            encoder.attach_reader(self.reader)

    @property
    def reader(self):
        """The model's reader (`thinkprobe.reader.Reader`; None: the model reads embeddings only)."""
        if "reader" not in self.meta:
            return None
        if self._reader is None:
            from ...reader import READER_FILE, Reader

            self._reader = Reader.load(self.model_dir / READER_FILE, self.meta["reader"]["frozen"], self.encoder.model)
        return self._reader

    @property
    def encoder(self):
        """The encoder bound by the run (`bind_encoder`), else one of the default encoder on this device."""
        if self._encoder is None:
            from ...encoder import Encoder

            self._encoder = Encoder(device=self.device)
        return self._encoder

    def parser_inputs(self, items: Sequence[tuple]) -> list[np.ndarray]:
        """What the network reads per unit: the embedding, and with a reader its vector of the unit's text."""
        embs = [np.asarray(e, np.float32).reshape(len(u), self.embedding_dim) for u, e, *_ in items]
        if "reader" not in self.meta:
            return embs
        vec = self.encoder.reader_vectors([x.text for u, *_ in items for x in u], self.reader)
        bounds = np.cumsum([0] + [len(u) for u, *_ in items])
        return [np.concatenate([e, vec[a:b]], axis=1) for e, a, b in zip(embs, bounds, bounds[1:])]

    @property
    def cache_stats(self) -> dict[str, int]:
        return self.cache.stats if self.cache else {}

    def features(self, items: Sequence[tuple], mapper=map) -> list[dict[str, np.ndarray]]:
        """`trace_features` of each trace ((units, embeddings) or (units, embeddings, question)) through
        `mapper`; with a learned retriever, its queries and keys first (each trace alone, on the model's
        device); with a reranker, it chooses candidates there."""
        units = [u for u, *_ in items]
        embs = [np.asarray(e, np.float32).reshape(len(u), self.embedding_dim) for u, e, *_ in items]
        questions = [self._question(item) for item in items]
        retrieved: Sequence = [None] * len(items)
        if self.retriever is not None:
            from ..retriever import retrieve

            ufs = list(mapper(unit_features, units, embs, itertools.repeat(self.params), itertools.repeat(self.featurizer),
                              questions))
            retrieved = [retrieve(self.retriever, e, uf, self.device) for e, uf in zip(embs, ufs)]
        return list(mapper(trace_features, units, embs, itertools.repeat(self.params), itertools.repeat(self.featurizer),
                           retrieved, itertools.repeat(self.reranker), questions))

    def _question(self, item: tuple) -> str | None:
        """The question of an item ((units, embeddings[, question])) where the model reads it, else None."""
        return (item[2] or None) if self.reads_question and len(item) > 2 else None

    def candidates(self, item: LinkInput) -> list[np.ndarray]:
        f = self.features([(item.units, item.embeddings, item.question)])[0]  # the pairs it scores
        i, j = f["i"], f["j"]
        bounds = np.searchsorted(j, np.arange(len(item.units) + 1))
        return [i[bounds[k]:bounds[k + 1]] for k in range(len(item.units))]

    @staticmethod
    def _key(units: Sequence[ThoughtUnit], emb: np.ndarray, question: str | None = None):
        return (len(units), tuple((u.start, u.end, u.segment, u.cues, u.text) for u in units),
                np.asarray(emb, np.float32).tobytes(), question)

    def score(self, items: Sequence[tuple], mapper=map) -> list[dict]:
        """Per trace ((units, embeddings) or (units, embeddings, question)): candidate pairs (i, j,
        origin), type probabilities (types) and pair-class probabilities (probs); from the score cache
        where present. The question counts only for a model that reads it (its network, or its
        restatement gate: the types then have RPT decided by `gate.gated_trace_types`)."""
        items = [(item[0], item[1], self._question(item)) for item in items]  # the question None where not read
        keys = [self._key(*item) for item in items]
        todo = [n for n, k in enumerate(keys) if k not in self._memo]
        if todo:
            def compute(idx: list[int]) -> list[dict[str, np.ndarray]]:
                sub = [items[todo[n]] for n in idx]
                feats = self.features(sub, mapper)
                res = run_parser(self.model, feats, self.parser_inputs(sub), self.device)
                if self.gate is not None:
                    for (units, _, question), r in zip(sub, res):
                        r["types"] = gated_trace_types(r["types"], units, question, self.gate)
                # what decoding and typing read, compact (as stored in the cache)
                return [{"i": f["i"].astype(np.int32), "j": f["j"].astype(np.int32), "origin": f["origin"].astype(np.uint8),
                         "probs": r["probs"], "types": r["types"]} for f, r in zip(feats, res)]

            got = through_cache(self.cache, [items[n] for n in todo], compute)
            memo = {k: self._memo[k] for k in keys if k in self._memo}  # only this batch: typing then linking it
            for n, r in zip(todo, got):
                memo[keys[n]] = r
            self._memo = memo
        return [self._memo[k] for k in keys]

    def link(self, batch: Sequence[LinkInput], mapper=map) -> list[list[Edge]]:
        scored = self.score([(item.units, item.embeddings, item.question) for item in batch], mapper)
        return [decode_edges(item.units, s["probs"], s["i"], s["j"], s["origin"], self.decode) if len(item.units) > 1 else []
                for item, s in zip(batch, scored)]

    def predict_types(self, probs: np.ndarray) -> list[str]:
        """Provisional types from type probabilities (`predict_types`, with this model's type offsets)."""
        return predict_types(probs, self.decode.get("type_offsets"))

    @property
    def typer(self) -> "ParserTyper":
        return ParserTyper(self)


class ParserTyper:
    """(units, embeddings[, question]) -> units with the parser's provisional types (the shape of `Retyper`)."""

    def __init__(self, parser: ParserLinker):
        self.parser = parser

    def __call__(self, units: Sequence[ThoughtUnit], emb: np.ndarray) -> list[ThoughtUnit]:
        return self.batch([(units, emb)])[0]

    def batch(self, items: Sequence[tuple], mapper=map) -> list[list[ThoughtUnit]]:
        scored = self.parser.score(items, mapper)
        return [[replace(u, node_type=t) for u, t in zip(units, self.parser.predict_types(s["types"]))]
                for (units, *_), s in zip(items, scored)]

    @property
    def cache_stats(self) -> dict[str, int]:
        return self.parser.cache_stats
