"""Layer groups: discriminative LRs (ULMFiT §3.2) and freezing (§3.3)."""
import pytest
import torch
from torch import nn

from minilib.train import Learner, discriminative_lrs, spread_lr
from minilib.train.groups import layer_groups, optimizer_groups


def test_discriminative_lrs_divide_by_2_6_per_group():
    lrs = discriminative_lrs(0.01, 4)
    assert lrs[-1] == pytest.approx(0.01)
    for lower, upper in zip(lrs, lrs[1:]):
        assert lower == pytest.approx(upper / 2.6)
    assert lrs[0] == pytest.approx(0.01 / 2.6 ** 3)


def test_spread_lr_forms():
    assert spread_lr(0.1, 3) == [0.1, 0.1, 0.1]
    assert spread_lr(slice(1e-4, 1e-2), 3) == pytest.approx([1e-4, 1e-3, 1e-2])  # geometric
    assert spread_lr(slice(0.01), 3) == pytest.approx(discriminative_lrs(0.01, 3))
    assert spread_lr([1, 2], 2) == [1.0, 2.0]
    with pytest.raises(ValueError, match="3 layer groups"):
        spread_lr([1, 2], 3)


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))


def test_layer_groups_catch_missing_and_duplicate_params():
    m = make_model()
    with pytest.raises(ValueError, match="in no layer group"):
        layer_groups(m, [m[0], m[2]])
    with pytest.raises(ValueError, match="two layer groups"):
        layer_groups(m, [m[0], [m[0].weight, m[2]], m[4]])
    groups = layer_groups(m, lambda model: [model[0], model[2], model[4]])
    assert [len(g) for g in groups] == [2, 2, 2]
    # biases are kept out of weight decay
    opt_groups = optimizer_groups(groups, [1.0, 2.0, 3.0], 0.1)
    assert [(g["layer"], g["weight_decay"], g["lr"]) for g in opt_groups][:2] == [(0, 0.1, 1.0), (0, 0.0, 1.0)]


def test_model_layer_groups_method_is_used():
    class Split(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.head = nn.Linear(2, 2), nn.Linear(2, 1)

        def layer_groups(self):
            return [self.body, self.head]

    learner = Learner(Split(), [torch.zeros(1)], device="cpu", progress=False)
    assert len(learner.groups) == 2


def test_freeze_to_trains_only_unfrozen_groups_and_lrs_per_group():
    m = make_model()
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    learner = Learner(m, [(x, y)], loss_fn=nn.functional.mse_loss, groups=[m[0], m[2], m[4]],
                      device="cpu", progress=False)
    learner.freeze_to(-1)
    before = [p.detach().clone() for p in m.parameters()]
    learner.fit(1, lr=slice(0.01))
    after = list(m.parameters())
    assert torch.equal(before[0], after[0]) and torch.equal(before[3], after[3])  # groups 0, 1 frozen
    assert not torch.equal(before[4], after[4])  # the top group trained
    assert learner.history.steps[0]["lr"] == pytest.approx(discriminative_lrs(0.01, 3))

    learner.freeze_to(-2)
    learner.fit(1, lr=slice(0.01))
    assert torch.equal(before[0], m[0].weight) and not torch.equal(before[2], m[2].weight)
    learner.unfreeze()
    learner.fit(1, lr=0.01)
    assert not torch.equal(before[0], m[0].weight)
    with pytest.raises(ValueError, match="top group must train"):
        learner.freeze_to(3)
