"""The parser's reader (thinkprobe/reader.py): the encoder's top layers run again, fine-tuned, on the
token states of its lower layers, inside the same forward pass (Encoder.attach_reader). Checked on
real sentences of the sample traces with the shipped encoder: attaching a reader leaves the
embeddings' bytes as they were; a reader holding the encoder's own top layers gives back the
embedding itself (so the tap sits after the right layer); vectors of texts the embedding cache
served are computed the same way as those of texts encoded in the pass; the shipped reader runs in
the encoder's precision (fp16 on CUDA, bf16 here)."""
import numpy as np
import pytest
import torch

import thinkprobe
from thinkprobe.encoder import Encoder
from thinkprobe.link import LINKERS, MODELS_DIR
from thinkprobe.reader import READER_FILE, Reader, build_reader, lower_states, pad_states, tokenize, upper_states
from thinkprobe.shared_data import SAMPLES

from test_link_contract import sample_sentences

FROZEN = 4


@pytest.fixture(scope="module")
def texts():
    s = sample_sentences()
    return s[:40] + s[:3]  # repeated texts too


@pytest.fixture(scope="module")
def encoder():
    return Encoder(device="cpu", precision="fp32")


def own_top_reader(encoder):
    return Reader(build_reader(encoder.model, FROZEN), FROZEN, encoder.dimension)


def test_attached_reader_keeps_the_embeddings_bytes(encoder, texts):
    plain, tok = Encoder(device="cpu", precision="fp32").encode_and_count(texts)
    with_reader = Encoder(device="cpu", precision="fp32")
    with_reader.attach_reader(own_top_reader(encoder))
    emb, tok2 = with_reader.encode_and_count(texts)
    assert emb.tobytes() == plain.tobytes() and np.array_equal(tok, tok2)


def test_own_top_layers_give_back_the_embedding(encoder, texts):
    enc = Encoder(device="cpu", precision="fp32")
    reader = own_top_reader(encoder)
    enc.attach_reader(reader)
    emb, _ = enc.encode_and_count(texts)
    vec = enc.reader_vectors(texts)
    cos = np.sum(vec * emb, axis=1)
    assert vec.shape == emb.shape and cos.min() > 0.999, cos.min()


def test_vectors_equal_the_training_path(encoder, texts):
    """The pipeline's vectors (tap inside the forward pass) equal the training path's (lower layers
    cached, then the reader's layers over padded states), here for a perturbed reader."""
    torch.manual_seed(0)
    layers = build_reader(encoder.model, FROZEN)
    with torch.no_grad():
        for p in layers.parameters():
            p.add_(0.02 * torch.randn_like(p))
    reader = Reader(layers, FROZEN, encoder.dimension)
    enc = Encoder(device="cpu", precision="fp32")
    enc.attach_reader(reader)
    enc.encode_and_count(texts)
    got = enc.reader_vectors(texts)
    ids = tokenize(encoder.model, texts)
    lows = [lower_states(encoder.model, torch.tensor(x[None]), FROZEN)[0].numpy() for x in ids]
    h, m = pad_states(lows)
    with torch.no_grad():
        want = torch.nn.functional.normalize(upper_states(layers.eval(), h, m), dim=1).numpy()
    assert np.abs(got - want).max() < 1e-4
    assert np.sum(got * enc.encode_and_count(texts)[0], axis=1).min() < 0.999  # the perturbation shows


def test_cache_served_texts_get_vectors_too(encoder, texts, tmp_path):
    reader = own_top_reader(encoder)
    first = Encoder(device="cpu", precision="fp32", cache_dir=tmp_path)
    first.attach_reader(reader)
    first.encode_and_count(texts)
    want = first.reader_vectors(texts)
    second = Encoder(device="cpu", precision="fp32", cache_dir=tmp_path)  # every embedding from the cache
    second.attach_reader(reader)
    second.encode_and_count(texts)
    assert second.cache_stats["hits"] == len(texts)
    assert np.array_equal(second.reader_vectors(texts), want)


SHIPPED = MODELS_DIR / LINKERS["parser-reader"].model


def test_the_shipped_reader_runs_in_the_encoders_precision(texts):
    """On CUDA the encoder runs in fp16, so the token states its lower layers hand to the reader are
    fp16; the reader's layers were loaded in float32 and refused them, and the first run on a GPU
    skipped every trace. bf16 on CPU is the same case here: the reader takes the encoder's dtype, its
    vectors come back float32 and near the fp32 encoder's."""
    vectors = {}
    for precision in ("fp32", "bf16"):
        enc = Encoder(device="cpu", precision=precision)
        reader = Reader.load(SHIPPED / READER_FILE, FROZEN, enc.model)
        assert next(reader.layers.parameters()).dtype == next(enc.model.parameters()).dtype
        enc.attach_reader(reader)
        enc.encode_and_count(texts)
        vectors[precision] = enc.reader_vectors(texts)
        assert vectors[precision].dtype == np.float32
    cos = np.sum(vectors["fp32"] * vectors["bf16"], axis=1)
    assert cos.min() > 0.98, cos.min()


def test_a_bf16_run_profiles_every_trace(tmp_path):
    """The whole default pipeline (the reader parser) in bf16: no record skipped, graphs with edges.
    Two traces: before the fix the first one came through and the second was skipped."""
    run = thinkprobe.profile(SAMPLES, tmp_path / "run", device="cpu", precision="bf16", limit=2, report=False)
    assert run.errors == []
    assert len(run.graphs) == 2 and all(g["edges"] for g in run.graphs)
