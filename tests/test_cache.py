"""The on-disk cache (embeddings and model outputs) and the file digests its keys rest on: what is
put comes back bit for bit, keys keep models and settings apart, and a cached trace is never
computed twice."""
from __future__ import annotations

import numpy as np
import pytest

from thinkprobe.cache import EmbeddingCache, ScoreCache, pack, through_cache, trace_digest, unpack
from thinkprobe.provenance import file_digest, files_digest, package_version
from thinkprobe.records import ThoughtUnit


def units(*texts: str) -> list[ThoughtUnit]:
    return [ThoughtUnit(k, "reasoning", 0, len(t), t, 0) for k, t in enumerate(texts)]


def test_embeddings_come_back_bit_for_bit_beyond_one_query_slice(tmp_path):
    cache = EmbeddingCache(tmp_path, "model-a")
    texts = [f"unit {k}" for k in range(1234)]  # more keys than one SQLite query takes
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((len(texts), 8)).astype(np.float32)
    keys = [cache.key(t) for t in texts]
    cache.put([(k, len(t), v.tobytes()) for k, t, v in zip(keys, texts, vecs)])
    found = EmbeddingCache(tmp_path, "model-a").get(keys)  # another connection, as another run
    assert len(found) == len(texts)
    assert all(found[k] == (len(t), v.tobytes()) for k, t, v in zip(keys, texts, vecs))


def test_embedding_keys_keep_models_and_precisions_apart(tmp_path):
    fp32, bf16 = EmbeddingCache(tmp_path, "m"), EmbeddingCache(tmp_path, "m:bf16")
    fp32.put([(fp32.key("same text"), 2, b"\x00" * 4)])
    assert bf16.get([bf16.key("same text")]) == {}
    assert fp32.key("same text") != fp32.key("same text ")


@pytest.mark.parametrize("arrays", [
    {"scores": np.arange(6, dtype=np.float32).reshape(2, 3)},
    {"probs": np.zeros((0, 8), np.float32), "ids": np.array([3, -1], np.int64), "flag": np.array(True)},
])
def test_pack_round_trips_names_dtypes_and_shapes(arrays):
    back = unpack(pack(arrays))
    assert list(back) == list(arrays)
    for name, a in arrays.items():
        assert back[name].dtype == a.dtype and back[name].shape == a.shape and (back[name] == a).all()


def test_through_cache_computes_each_missing_trace_once(tmp_path):
    cache = ScoreCache(tmp_path, "pairs", "linker-1")
    emb = np.eye(2, dtype=np.float32)
    traces = [(units("a", "b"), emb), (units("c", "d"), emb), (units("a", "b"), emb)]  # the first repeated
    asked = []

    def compute(indices):
        asked.append(list(indices))
        return [{"score": np.array([float(i)])} for i in indices]

    first = through_cache(cache, traces, compute)
    assert asked == [[0, 1]]
    assert [float(r["score"][0]) for r in first] == [0.0, 1.0, 0.0]
    again = through_cache(ScoreCache(tmp_path, "pairs", "linker-1"), traces, compute)
    assert asked == [[0, 1]] and [float(r["score"][0]) for r in again] == [0.0, 1.0, 0.0]
    other = through_cache(ScoreCache(tmp_path, "pairs", "linker-2"), traces, compute)  # another model: no hits
    assert asked == [[0, 1], [0, 1]] and len(other) == 3


def test_trace_digest_reads_texts_and_embeddings_but_not_types():
    emb = np.ones((1, 4), np.float32)
    a = trace_digest(units("x"), emb)
    assert trace_digest([ThoughtUnit(0, "reasoning", 0, 1, "x", 0, node_type="CON")], emb) == a
    assert trace_digest(units("y"), emb) != a
    assert trace_digest(units("x"), emb * 2) != a


def test_file_digest_follows_content_and_names(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "weights.bin").write_bytes(b"\x01\x02")
    before = file_digest(folder)
    assert len(before) == 16 and file_digest(folder) == before
    (folder / "weights.bin").write_bytes(b"\x01\x03")
    assert file_digest(folder) != before
    assert files_digest([("a", folder / "config.json")]) != files_digest([("b", folder / "config.json")])
    assert files_digest([("a", folder / "config.json")], seed="x") != files_digest([("a", folder / "config.json")])


def test_package_version():
    assert package_version("numpy") == np.__version__
    assert package_version("no-such-distribution-thinkprobe") is None
