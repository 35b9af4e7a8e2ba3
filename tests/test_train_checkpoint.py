"""Checkpoints: a resumed run repeats the uninterrupted one exactly; interrupts and atomic writes."""
import os

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from minilib.train import Callback, Learner, SaveBest, checkpoint, learner as learner_module

EPOCHS, STEPS = 3, 8  # 8 batches per epoch


class Net(nn.Module):
    """Dropout and a shuffled DataLoader: both draw from the RNG a resume must restore."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Dropout(0.3))
        self.head = nn.Linear(32, 2)

    def forward(self, x):
        return self.head(self.body(x))


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(128, 4, generator=g)
    y = (x.sum(1) > 0).long()
    train = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    valid = DataLoader(TensorDataset(x[:32], y[:32]), batch_size=16)
    return train, valid


class Crash(Callback):
    """Stop the run after `step` steps, as a crash (RuntimeError) or a Ctrl-C (KeyboardInterrupt)."""

    def __init__(self, step, exc=RuntimeError):
        self.step, self.exc = step, exc

    def after_step(self, learner):
        if learner.step == self.step:
            raise self.exc("simulated")


def make_learner(seed, tmp_path=None, callbacks=(), **kw):
    torch.manual_seed(seed)
    train, valid = data()
    return Learner(Net(), train, valid, loss_fn=F.cross_entropy, groups=lambda m: [m.body, m.head],
                   device="cpu", progress=False, checkpoint_dir=tmp_path, callbacks=list(callbacks), **kw)


def fit(learner, **kw):
    return learner.fit(EPOCHS, lr=slice(1e-3, 1e-2), schedule="stlr", **kw)


@pytest.fixture(scope="module")
def reference():
    learner = make_learner(0)
    history = fit(learner)
    return history, {k: v.clone() for k, v in learner.model.state_dict().items()}


def assert_same_run(learner, reference):
    history, params = reference
    assert learner.history.losses == history.losses  # exact, not approximately
    assert [r["valid_loss"] for r in learner.history.epochs] == [r["valid_loss"] for r in history.epochs]
    for k, v in learner.model.state_dict().items():
        assert torch.equal(v, params[k]), k


@pytest.mark.parametrize("crash_at,every", [(13, None), (11, 3)], ids=["epoch-checkpoint", "step-checkpoint"])
def test_resume_after_a_crash_repeats_the_uninterrupted_run(tmp_path, reference, crash_at, every):
    first = make_learner(0, tmp_path, [Crash(crash_at)], checkpoint_every=every)
    with pytest.raises(RuntimeError, match="simulated"):
        fit(first)
    saved = checkpoint.load(tmp_path / "fit-0.pt")
    assert saved["fit"]["position"] == ((1, 0) if every is None else (1, 1))  # after step 8, or after step 9
    assert saved["provenance"]["commit"] and "seed" in saved["provenance"]
    resumed = make_learner(123, tmp_path, checkpoint_every=every)  # other init and RNG: all must come from the file
    fit(resumed)
    assert_same_run(resumed, reference)
    # the resumed run of a finished fit loads it and trains no more
    done = make_learner(7, tmp_path)
    fit(done)
    assert_same_run(done, reference)


def test_interrupt_keeps_history_writes_checkpoint_and_resumes_exactly(tmp_path, reference, capsys):
    best = SaveBest()
    first = make_learner(0, tmp_path, [Crash(10, KeyboardInterrupt), best])
    with pytest.raises(KeyboardInterrupt):  # outside a notebook the interrupt goes on, after the cleanup
        fit(first)
    assert len(first.history.losses) == 10 and first.history.losses == reference[0].losses[:10]
    assert "interrupted at epoch 2, step 2" in capsys.readouterr().out
    assert torch.equal(first.model.head.weight, best.weights["head.weight"])  # best weights (epoch 1) put back
    assert checkpoint.load(tmp_path / "fit-0.pt")["fit"]["position"] == (1, 2)
    resumed = make_learner(5, tmp_path)
    fit(resumed)
    assert_same_run(resumed, reference)


def test_interrupt_in_a_notebook_returns_the_history(monkeypatch):
    monkeypatch.setattr(learner_module, "in_notebook", lambda: True)
    learner = make_learner(0, callbacks=[Crash(5, KeyboardInterrupt)])
    history = fit(learner)  # no exception: the Stop button is a way to end training
    assert learner.interrupted and len(history.losses) == 5 and history is learner.history


def test_each_fit_has_its_own_checkpoint(tmp_path):
    learner = make_learner(0, tmp_path)
    learner.fit(1, lr=1e-3)
    learner.freeze_to(-1)
    learner.fit(1, lr=1e-3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit-0.pt", "fit-1.pt"]
    assert checkpoint.load(tmp_path / "fit-1.pt")["n_frozen"] == 1
    other = make_learner(0, tmp_path)
    with pytest.raises(ValueError, match="resume=False"):
        other.fit(2, lr=1e-3)  # a different plan than the one saved


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "model.pt"
    learner = make_learner(0)
    learner.save(path)
    old = path.read_bytes()
    fit(learner)

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        learner.save(path)
    assert path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]  # no temporary file left behind
    monkeypatch.undo()
    fresh = make_learner(1)
    fresh.load(path)
    assert torch.equal(fresh.model.head.bias, make_learner(0).model.head.bias)
