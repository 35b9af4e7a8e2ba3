"""fit_head, the one loop that trains a head on frozen features (probes, pooled classifiers, taggers)."""
import torch
from torch import nn

from minilib.train.head import fit_head


def separable(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=g)
    return x, (x[:, 0] + x[:, 1] > 0).long()


def batches(n, size, seed):
    g = torch.Generator().manual_seed(seed)
    return lambda: torch.randperm(n, generator=g).split(size)


def test_fit_head_learns_a_separable_problem_and_ends_in_eval_mode():
    x, y = separable()
    torch.manual_seed(0)
    head = nn.Sequential(nn.Dropout(0.1), nn.Linear(5, 2))
    draw = batches(len(x), 32, 0)
    losses, modes = [], []
    fit_head(head, (draw() for _ in range(10)), lambda m, i: nn.functional.cross_entropy(m(x[i]), y[i]),
             lr=0.05, weight_decay=0.0, on_step=lambda s, v: losses.append(v.item()),
             on_epoch=lambda e: modes.append(head.training))
    assert len(losses) == 10 * 7 and modes == [False] * 10 and not head.training
    assert sum(losses[-7:]) < 0.5 * sum(losses[:7])
    assert (head(x).argmax(-1) == y).float().mean() > 0.95


def test_steps_decay_the_lr_to_zero_and_none_keeps_it():
    """Both runs take the same first step; with `steps` the 20th runs at lr·(1 - 19/20), far smaller."""
    x, y = separable()

    def moves(steps):
        torch.manual_seed(0)
        head = nn.Linear(5, 2)
        before = [head.weight.detach().clone()]

        def track(step, value):
            before.append(head.weight.detach().clone())

        fit_head(head, [[torch.arange(len(x))] * 20], lambda m, i: nn.functional.cross_entropy(m(x[i]), y[i]),
                 lr=0.1, weight_decay=0.0, steps=steps, on_step=track)
        return [float((b - a).norm()) for a, b in zip(before, before[1:])]

    decayed, constant = moves(20), moves(None)
    assert abs(decayed[0] - constant[0]) < 1e-6
    assert decayed[-1] < 0.2 * constant[-1]
