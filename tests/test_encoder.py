"""The sentence encoder: built in one place from the config and overrides, in the precision asked
for, with cached embeddings equal to fresh ones and bf16 kept apart from fp32."""
from __future__ import annotations

import numpy as np
import pytest

from thinkprobe.config import Config
from thinkprobe.encoder import cpu_has_native_bf16, make_encoder, resolve_precision

TEXTS = ["The train covers 120 km in 2 hours.", "So its speed is 60 km/h.", "Wait, check the units.",
         "The train covers 120 km in 2 hours.", "Yes."]


def test_make_encoder_takes_the_config_then_the_overrides():
    cfg = Config.load(overrides={"encoder": {"batch_size": 7, "max_seq_length": 128, "precision": "fp32"}})
    enc = make_encoder(cfg, {"device": "cpu", "batch_size": None})  # None: keep the config's
    assert (enc.batch_size, enc.max_seq_length, enc.precision, enc.device) == (7, 128, "fp32", "cpu")
    enc = make_encoder(cfg, {"device": "cpu", "batch_size": 3, "precision": "bf16"})
    assert (enc.batch_size, enc.precision) == (3, "bf16")
    with pytest.raises(TypeError, match="unknown options"):
        make_encoder(cfg, {"devise": "cpu"})


def test_precision_resolution():
    assert resolve_precision("auto", "cuda") == "fp16"
    assert resolve_precision("auto", "cpu") == "fp32"  # bf16 on CPU is opt-in (docs/benchmarks.md)
    assert isinstance(cpu_has_native_bf16(), bool)
    assert resolve_precision("bf16", "cpu") == "bf16"
    with pytest.raises(ValueError, match="needs a CUDA device"):
        resolve_precision("fp16", "cpu")
    with pytest.raises(ValueError, match="expected one of"):
        resolve_precision("int8", "cpu")


@pytest.fixture(scope="module")
def fresh():
    """fp32 and bf16 embeddings and token counts of TEXTS, without a cache."""
    return {p: make_encoder(overrides={"device": "cpu", "precision": p}).encode_and_count(TEXTS) for p in ("fp32", "bf16")}


def test_embeddings_are_unit_vectors_and_repeated_texts_equal(fresh):
    emb, tokens = fresh["fp32"]
    assert emb.shape == (len(TEXTS), 384) and emb.dtype == np.float32
    assert np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    assert (emb[0] == emb[3]).all() and tokens[0] == tokens[3] and tokens[4] < tokens[0]


def test_bf16_stays_close_to_fp32(fresh):
    cosine = (fresh["fp32"][0] * fresh["bf16"][0]).sum(axis=1)
    assert cosine.min() > 0.999
    assert (fresh["fp32"][1] == fresh["bf16"][1]).all()  # token counts do not depend on the dtype


def test_the_cache_returns_fresh_bytes_and_keeps_bf16_apart(tmp_path, fresh):
    fp32 = make_encoder(overrides={"device": "cpu", "precision": "fp32", "cache_dir": str(tmp_path)})
    first = fp32.encode_and_count(TEXTS)
    assert fp32.cache_stats == {"hits": 0, "misses": 4}  # the repeated text is encoded once
    bf16 = make_encoder(overrides={"device": "cpu", "precision": "bf16", "cache_dir": str(tmp_path)})
    mixed = bf16.encode_and_count(TEXTS)
    assert bf16.cache_stats["misses"] == 4  # nothing of the fp32 run is served to a bf16 run
    again = make_encoder(overrides={"device": "cpu", "precision": "fp32", "cache_dir": str(tmp_path)})
    cached = again.encode_and_count(TEXTS)
    assert again.cache_stats == {"hits": 5, "misses": 0}
    for got, want in ((first, fresh["fp32"]), (cached, fresh["fp32"]), (mixed, fresh["bf16"])):
        assert got[0].tobytes() == want[0].tobytes() and (got[1] == want[1]).all()


def test_batch_composition_does_not_change_an_embedding(fresh):
    """Same-length texts are batched together across traces; a text's embedding must not depend on
    which others share its batch, in either precision."""
    for precision in ("fp32", "bf16"):
        alone = make_encoder(overrides={"device": "cpu", "precision": precision, "batch_size": 2}).encode_and_count(TEXTS[1:3])
        assert alone[0].tobytes() == fresh[precision][0][1:3].tobytes()


def test_embeddings_do_not_depend_on_batches_or_threads():
    """Hundreds of sentences of the sample traces, encoded in one call (batch 32, two threads) and
    again in other batches, companions and thread counts: the same bytes per text (with several
    threads inside each pass they moved in the last bit, which the trained parser carried into its
    scores)."""
    import json
    import re

    import torch

    from conftest import SAMPLES

    texts = []
    for line in SAMPLES.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        texts += [s for v in record.values() if isinstance(v, str) for s in re.split(r"(?<=[.!?])\s+", v) if s.strip()]
    texts = list(dict.fromkeys(texts))[:400]
    assert len(texts) == 400
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        whole = make_encoder(overrides={"device": "cpu", "precision": "fp32", "batch_size": 32}).encode_and_count(texts)[0]
        for batch_size, step, n_threads in ((7, 1, 2), (5, 3, 1), (64, 2, 3)):
            torch.set_num_threads(n_threads)
            part = make_encoder(overrides={"device": "cpu", "precision": "fp32", "batch_size": batch_size}).encode_and_count(texts[::step])[0]
            assert torch.get_num_threads() == n_threads  # the encoder gives the process its threads back
            assert part.tobytes() == whole[::step].tobytes(), (batch_size, step, n_threads)
    finally:
        torch.set_num_threads(threads)
