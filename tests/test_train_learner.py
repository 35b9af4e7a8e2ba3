"""The fit loop: learning, clipping, callbacks, batch conventions, history, progress."""
import json

import matplotlib

matplotlib.use("Agg")
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minilib.train import Callback, EarlyStopping, History, Learner, SaveBest


def blobs(n=256, batch=32, seed=0):
    """Two Gaussian classes in 4-d: a small learnable problem."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    x = torch.randn(n, 4, generator=g) + 1.5 * (2 * y[:, None] - 1)
    return [(x[i:i + batch], y[i:i + batch]) for i in range(0, n, batch)]


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))


def accuracy(output, target):
    return (output.argmax(-1) == target).float().mean()


def test_loss_falls_and_metrics_are_recorded():
    train, valid = blobs(), blobs(64, seed=1)
    learner = Learner(mlp(), train, valid, loss_fn=F.cross_entropy, metrics=[accuracy], device="cpu", progress=False)
    before = learner.evaluate()
    history = learner.fit(3, lr=1e-2, schedule="onecycle")
    assert history is learner.history
    assert history.epochs[-1]["valid_loss"] < 0.5 * before["loss"]
    assert history.epochs[-1]["train_loss"] < history.epochs[0]["train_loss"]
    assert history.epochs[-1]["accuracy"] > 0.9
    assert len(history.steps) == 3 * len(train) and history.steps[-1]["step"] == 24
    assert history.best("accuracy")["accuracy"] == max(r["accuracy"] for r in history.epochs)
    assert history.best()["valid_loss"] == min(r["valid_loss"] for r in history.epochs)


def test_gradient_clipping_caps_the_norm():
    norms = []

    class GradNorm(Callback):
        def before_step(self, learner):
            norms.append(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in learner.model.parameters()])))

    x, y = torch.randn(32, 4) * 100, torch.randn(32, 2) * 100  # huge gradients
    model = nn.Linear(4, 2)
    learner = Learner(model, [(x, y)] * 3, loss_fn=F.mse_loss, clip=0.5, callbacks=[GradNorm()],
                      device="cpu", progress=False)
    learner.fit(1, lr=1e-3)
    assert all(n <= 0.5 + 1e-5 for n in norms)
    assert all(r["grad_norm"] > 10 for r in learner.history.steps)  # the logged norm is the one before clipping
    unclipped = Learner(nn.Linear(4, 2), [(x, y)], loss_fn=F.mse_loss, clip=None, callbacks=[GradNorm()],
                        device="cpu", progress=False)
    unclipped.fit(1, lr=1e-3)
    assert norms[-1] > 10


class LossModel(nn.Module):
    """Returns (loss, extras) itself: the loss_fn=None convention."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x, y):
        h = self.lin(x)
        return F.cross_entropy(h, y), {"acc": accuracy(h, y), "hidden": h}


def test_model_returning_loss_and_extras_with_callback_added_loss():
    seen = []

    class ActivationPenalty(Callback):  # AR-style extra term from what the model returned
        def after_loss(self, learner):
            seen.append(learner.extras["hidden"].shape)
            learner.loss = learner.loss + 0.5 * learner.extras["hidden"].pow(2).mean()

    learner = Learner(LossModel(), blobs(), blobs(64, seed=1), callbacks=[ActivationPenalty()],
                      device="cpu", progress=False)
    learner.fit(1, lr=1e-2)
    row = learner.history.steps[0]
    assert "acc" in row and "hidden" not in row  # scalar extras logged, tensors not
    assert row["total_loss"] > row["loss"]  # the penalty was added to what was optimised
    assert seen[0] == (32, 2)
    assert "acc" in learner.history.epochs[-1] and learner.extras is None  # freed after backward


def test_dict_and_tensor_batches():
    class DictModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 3)

        def forward(self, ids, labels):
            return (self.emb(ids).sum(-1) - labels).pow(2).mean()

    ids = torch.randint(0, 10, (8, 5))
    batches = [{"ids": ids, "labels": torch.ones(8, 5)}] * 4
    learner = Learner(DictModel(), batches, device="cpu", progress=False)
    learner.fit(2, lr=0.1)
    assert learner.history.losses[-1] < learner.history.losses[0]

    class TensorModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))

        def forward(self, x):
            return (x * self.w).pow(2).mean()

    learner = Learner(TensorModel(), [torch.randn(4, 3)] * 3, device="cpu", progress=False)
    learner.fit(1, lr=0.1)
    assert learner.history.losses[-1] < learner.history.losses[0]
    with pytest.raises(TypeError, match=r"\(inputs..., target\)"):
        Learner(TensorModel(), batches, loss_fn=F.mse_loss, device="cpu", progress=False).fit(1)


def test_sparse_embeddings_with_a_custom_optimizer():
    class SkipGram(nn.Module):  # word2vec-like: sparse gradients need SparseAdam or SGD
        def __init__(self):
            super().__init__()
            self.inp, self.out = nn.Embedding(20, 8, sparse=True), nn.Embedding(20, 8, sparse=True)

        def forward(self, center, context):
            return -F.logsigmoid((self.inp(center) * self.out(context)).sum(-1)).mean()

    batches = [(torch.randint(0, 20, (16,)), torch.randint(0, 20, (16,)))] * 5
    learner = Learner(SkipGram(), batches, opt=lambda groups: torch.optim.SparseAdam(groups), clip=None,
                      device="cpu", progress=False)
    learner.fit(2, lr=0.05, schedule="linear")
    assert learner.history.losses[-1] < learner.history.losses[0]
    assert learner.history.steps[-1]["lr"][0] == pytest.approx(0.05 * (1 - 9 / 10))
    with pytest.raises(ValueError, match="clip=None"):
        Learner(SkipGram(), batches, opt="sgd", device="cpu", progress=False).fit(1)


def test_early_stopping_and_save_best_restore_the_best_weights():
    class Scripted(Callback):  # fake validation losses so the best epoch is known
        values = iter([1.0, 0.5, 0.7, 0.9, 0.8, 0.6])

        def after_epoch(self, learner):
            learner.history.epochs[-1]["valid_loss"] = next(self.values)

    snapshots = []

    class Snapshot(Callback):
        def after_epoch(self, learner):
            snapshots.append(learner.model.weight.detach().clone())

    x, y = torch.randn(16, 4), torch.randn(16, 2)
    model = nn.Linear(4, 2)
    best = SaveBest()
    learner = Learner(model, [(x, y)], loss_fn=F.mse_loss, device="cpu", progress=False,
                      callbacks=[Scripted(), Snapshot(), best, EarlyStopping(patience=2)])
    learner.fit(6, lr=0.1)
    assert len(learner.history.epochs) == 4  # epochs 3 and 4 did not beat 0.5
    assert best.best_epoch == 1
    assert torch.equal(model.weight, snapshots[1])


def test_history_round_trip_plot_and_repr():
    learner = Learner(mlp(), blobs(), blobs(64, seed=1), loss_fn=F.cross_entropy, metrics=[accuracy],
                      device="cpu", progress=False)
    learner.fit(2, lr=1e-2, eval_every=3)
    h = learner.history
    assert [r["step"] for r in h.evals] == [3, 6, 8, 9, 12, 15, 16]
    again = History.from_dict(json.loads(json.dumps(h.to_dict())))
    assert again.to_dict() == h.to_dict() and again.losses == h.losses
    fig = h.plot()
    assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 2
    assert len(fig.axes[0].lines) == 3  # raw train, smoothed train, valid
    assert "valid_loss" in repr(h) and "accuracy" in repr(h)


def test_console_progress_lines_and_silence(capsys):
    learner = Learner(mlp(), blobs(), loss_fn=F.cross_entropy, device="cpu", progress="console", print_every=4)
    learner.fit(1, lr=1e-2)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[0].startswith("epoch 1/1  step 4/8  loss ") and "it/s" in out[0] and "eta" in out[0]
    assert out[-1].startswith("epoch 1/1  done  train_loss")
    Learner(mlp(), blobs(), loss_fn=F.cross_entropy, device="cpu", progress=False).fit(1)
    assert capsys.readouterr().out == ""


def test_nonfinite_loss_stops_with_a_clear_error():
    learner = Learner(nn.Linear(4, 2), [(torch.full((2, 4), float("nan")), torch.zeros(2, 2))],
                      loss_fn=F.mse_loss, device="cpu", progress=False)
    with pytest.raises(FloatingPointError, match="lower the lr"):
        learner.fit(1)


def test_lr_each_step_follows_the_schedule():
    from minilib.train.schedules import slanted_triangular

    learner = Learner(mlp(), blobs(), loss_fn=F.cross_entropy, device="cpu", progress=False)
    learner.fit(5, lr=0.01, schedule="stlr")
    T = 5 * 8
    assert [r["lr"][0] for r in learner.history.steps] == pytest.approx(
        [0.01 * slanted_triangular(t, T) for t in range(T)])
    assert learner.opt.param_groups[0]["lr"] == pytest.approx(learner.history.steps[-1]["lr"][0])


def test_stateful_models_are_reset_each_epoch_and_around_evaluation():
    class Stateful(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.resets = nn.Linear(4, 2), 0

        def reset(self):
            self.resets += 1

        def forward(self, x):
            return self.lin(x)

    model = Stateful()
    Learner(model, blobs(), blobs(64), loss_fn=F.cross_entropy, device="cpu", progress=False).fit(2)
    assert model.resets == 2 * (1 + 2)  # per epoch: its start, and before and after validation


def test_to_device_keeps_named_tuples():
    from typing import NamedTuple

    from minilib.train.learner import to_device

    class Batch(NamedTuple):
        x: torch.Tensor
        y: torch.Tensor

    moved = to_device(Batch(torch.zeros(2), torch.ones(2)), torch.device("cpu"))
    assert isinstance(moved, Batch) and torch.equal(moved.y, torch.ones(2))


def test_start_at_continues_the_plan_from_a_step_with_a_fresh_optimizer(capsys):
    train = blobs()                                                  # 8 batches an epoch
    whole = Learner(mlp(), train, None, loss_fn=F.cross_entropy, device="cpu", progress=False)
    whole.fit(2, lr=1e-2, schedule="cosine", warmup=2)
    later = Learner(mlp(1), train, None, loss_fn=F.cross_entropy, device="cpu", progress=False)
    later.start_at(11)                                               # epoch 2, batch 3
    later.fit(2, lr=1e-2, schedule="cosine", warmup=2)
    assert "warm start at step 11 of 16" in capsys.readouterr().out
    assert [r["step"] for r in later.history.steps] == list(range(12, 17))
    assert [r["lr"] for r in later.history.steps] == [r["lr"] for r in whole.history.steps[11:]]
    assert later.step == 16 and later.epochs_done == 2
    again = Learner(mlp(), train, None, loss_fn=F.cross_entropy, device="cpu", progress=False)
    again.start_at(16)
    with pytest.raises(ValueError, match="steps 0 to 15"):
        again.fit(2, lr=1e-2)
