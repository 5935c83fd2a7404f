"""scripts/train_parser.py's parent-ranking loss (`listwise_loss`, `--listwise`): the value of the
softmax over each unit's candidates, unit by unit, and what one gradient step does to the ranking."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import REPO

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def train_parser():
    spec = importlib.util.spec_from_file_location("train_parser", REPO / "scripts" / "train_parser.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
