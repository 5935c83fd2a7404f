"""The parser's training code (thinkprobe.training, behind scripts/train_parser.py): the
parent-ranking loss (`listwise_loss`, `--listwise`): the value of the
softmax over each unit's candidates, unit by unit, and what one gradient step does to the ranking."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def train_parser():
    """The training code behind scripts/train_parser.py (thinkprobe.training)."""
    from types import SimpleNamespace

    from thinkprobe.training import parser_data, parser_fit

    return SimpleNamespace(listwise_loss=parser_fit.listwise_loss, WeightMean=parser_fit.WeightMean,
                           unit_type_scores=parser_fit.unit_type_scores, fit_type_offsets=parser_fit.fit_type_offsets,
                           held_out=parser_data.held_out)


def one_unit_at_a_time(logit, gj, arc):
    """The same loss, computed for each child unit alone."""
    losses = []
    for child in torch.unique(gj):
        mine = gj == child
        if arc[mine].sum() > 0:
            logp = torch.log_softmax(logit[mine], dim=0)
            losses.append(-(logp * arc[mine]).sum() / arc[mine].sum())
    return torch.stack(losses).mean()


def test_listwise_loss_is_the_mean_over_units_of_their_parents_log_softmax(train_parser):
    gen = torch.Generator().manual_seed(0)
    # units 1..6 with 1, 2, 3, 1, 5 and 4 candidates; unit 4 has no parent among them
    gj = torch.tensor([1, 2, 2, 3, 3, 3, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6])
    arc = torch.tensor([1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1], dtype=torch.float32)
    logit = torch.randn(len(gj), generator=gen)
    assert torch.allclose(train_parser.listwise_loss(logit, gj, arc), one_unit_at_a_time(logit, gj, arc))
    # a unit with one candidate which is its parent costs nothing; no parent anywhere: no loss
    assert float(train_parser.listwise_loss(logit[:1], gj[:1], arc[:1])) == pytest.approx(0.0, abs=1e-7)
    assert float(train_parser.listwise_loss(logit[6:7], gj[6:7], arc[6:7])) == 0.0
    assert float(train_parser.listwise_loss(logit[:0], gj[:0], arc[:0])) == 0.0


def test_a_gradient_step_ranks_the_parents_higher(train_parser):
    gj = torch.tensor([3, 3, 3, 3, 7, 7, 7])
    arc = torch.tensor([0, 1, 0, 0, 1, 0, 0], dtype=torch.float32)
    logit = torch.zeros(len(gj), requires_grad=True)
    train_parser.listwise_loss(logit, gj, arc).backward()
    grad = logit.grad
    assert (grad[arc == 1] < 0).all() and (grad[arc == 0] > 0).all()  # descent raises parents, lowers the rest
    # shifting one unit's logits by a constant changes nothing: only the ranking within a unit counts
    shifted = torch.tensor([5.0, 5, 5, 5, 0, 0, 0])
    assert torch.allclose(train_parser.listwise_loss(logit.detach() + shifted, gj, arc),
                          train_parser.listwise_loss(logit.detach(), gj, arc))


def synthetic_types(seed: int = 0, n: int = 3000):
    """Held-out "examples" with gold types and type probabilities of a head that knows the types
    fairly well except type 2, rare (5%) and weakly signalled: the macro-F1 optimum under-predicts
    it, as the parser's fit did with EXP."""
    import numpy as np

    from thinkprobe.link.protocol import TYPE_CLASSES

    rng = np.random.default_rng(seed)
    k = len(TYPE_CLASSES)
    gold = rng.choice(k, size=n, p=[0.1, 0.5, 0.05, 0.1, 0.1, 0.1, 0.05])
    signal = np.where(np.arange(k) == 2, 0.5, 2.0)
    logits = rng.normal(size=(n, k)) + (signal[gold][:, None] * np.eye(k)[gold])
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    val = [{"types": gold[s:s + 100], "emb": None} for s in range(0, n, 100)]
    return val, [probs[s:s + 100] for s in range(0, n, 100)], gold


def test_bounded_type_offsets_keep_every_types_count(train_parser, monkeypatch):
    import numpy as np

    import thinkprobe.link.parser as parser
    from thinkprobe.link.protocol import TYPE_CLASSES

    val, probs, gold = synthetic_types()
    monkeypatch.setattr(parser, "run_parser", lambda model, exs, embs: [{"types": p} for p in probs])
    start, _ = train_parser.unit_type_scores(val, probs, [0.0] * 7)
    free = train_parser.fit_type_offsets(None, val, log=lambda m: None)
    bounded = train_parser.fit_type_offsets(None, val, log=lambda m: None, max_rate_ratio=1.5)
    f1_free, rate_free = train_parser.unit_type_scores(val, probs, free)
    f1_bounded, rate = train_parser.unit_type_scores(val, probs, bounded)
    assert np.exp(rate_free[2]) < 1 / 1.5  # macro-F1 alone gives up on the weak rare type's count
    assert np.all(np.abs(rate) <= np.log(1.5) + 1e-9), np.exp(rate)
    assert min(f1_free, f1_bounded) > start  # both fits gain over no offsets
    predicted = [TYPE_CLASSES.index(t) for p in probs for t in parser.predict_types(p, bounded)]
    counts = np.bincount(predicted, minlength=7)
    assert np.allclose(np.exp(rate), np.maximum(counts, 0.5) / np.bincount(gold, minlength=7))


def test_weight_mean_is_the_mean_of_the_offered_epochs(train_parser):
    """`--average-last`: the model ends with the elementwise mean of the weights it had at the
    epochs offered, whatever it holds when the mean is applied."""
    gen = torch.Generator().manual_seed(0)
    model = torch.nn.LSTM(4, 3, batch_first=True)
    mean = train_parser.WeightMean()
    seen = []
    for _ in range(3):
        with torch.no_grad():
            for w in model.parameters():
                w.copy_(torch.randn(w.shape, generator=gen))
        seen.append({k: w.clone() for k, w in model.state_dict().items()})
        mean.offer(model)
    with torch.no_grad():
        for w in model.parameters():
            w.zero_()
    mean.apply(model)
    assert not model.training
    for k, w in model.state_dict().items():
        expected = (seen[0][k] + seen[1][k] + seen[2][k]) / 3
        assert torch.allclose(w, expected, atol=1e-6)
        assert not torch.allclose(w, seen[2][k])


def test_held_out_folds_are_disjoint_and_the_first_is_unchanged(train_parser):
    """`--val-start`: another fold of held-out traces, disjoint from the default one, of about the
    same size; the default split (val_start 0) is the one the shipped models were trained with."""
    import hashlib

    ids = [f"doc-{k}" for k in range(3000)]
    first = {d for d in ids if train_parser.held_out(d, 0.15)}
    second = {d for d in ids if train_parser.held_out(d, 0.15, 0.15)}
    assert not first & second
    assert 0.12 < len(first) / len(ids) < 0.18 and 0.12 < len(second) / len(ids) < 0.18
    assert first == {d for d in ids if int(hashlib.sha1(d.encode()).hexdigest()[:8], 16) % 1000 < 150}


def test_main_with_patches_the_run_only_and_the_flag_runs_without(monkeypatch):
    """The experiment scripts' A/B switch: the patch is in force during the run and gone after it;
    with the `without` flag the plain run happens and the flag never reaches the argument parser."""
    from unittest import mock

    from thinkprobe.training import parser_cli

    runs = []
    monkeypatch.setattr(parser_cli, "train", lambda args: runs.append(("plain", args.epochs)))
    plain = parser_cli.train
    patched = lambda args: runs.append(("patched", args.epochs))  # noqa: E731
    parser_cli.main_with(["train", "--epochs", "2"], "--no-x", mock.patch.object(parser_cli, "train", patched))
    assert parser_cli.train is plain
    parser_cli.main_with(["train", "--no-x", "--epochs", "3"], "--no-x", mock.patch.object(parser_cli, "train", patched))
    assert runs == [("patched", 2), ("plain", 3)]
    assert parser_cli.train is plain
