"""Callbacks: small objects the fit loop calls at named moments, each given the learner.

    before_fit    before_epoch    before_batch    after_loss    before_step    after_step    after_epoch    after_fit

In a step: `before_batch` (learner.batch is on the device) → forward →
`after_loss` (learner.loss, learner.extras; a callback may *change* learner.loss)
→ backward, clip → `before_step` (gradients ready, learner.grad_norm) →
optimizer step → `after_step`. `after_epoch` runs after validation
(learner.history.epochs[-1] is this epoch's row). `after_fit` always runs,
also after an interrupt (learner.interrupted is then True).

Set `learner.should_stop = True` to end training after the current step/epoch.

An extra loss term, e.g. AWD-LSTM's activation regularisation (Merity et al.
2017, §4.6), comes either from the model (return `(loss, extras)`) or from a
callback that reads what the model returned in `extras`:

    class AR(Callback):
        def after_loss(self, learner):
            h = learner.extras["dropped_output"]          # (B, T, H), returned by the model
            learner.loss = learner.loss + 2.0 * h.pow(2).mean()

learner.output (loss_fn path) and learner.extras exist until backward, i.e. in
after_loss; they are then dropped to free memory. Scalar extras are logged in
learner.history.steps, others are not.
"""
from __future__ import annotations

import copy
import math
import time
from typing import Any

from minilib.train.history import _lower_is_better

class Callback:
    """Base class: every hook is a no-op. A callback with state_dict()/load_state_dict()
    has its state saved in checkpoints."""

    def before_fit(self, learner) -> None: ...
    def before_epoch(self, learner) -> None: ...
    def before_batch(self, learner) -> None: ...
    def after_loss(self, learner) -> None: ...
    def before_step(self, learner) -> None: ...
    def after_step(self, learner) -> None: ...
    def after_epoch(self, learner) -> None: ...
    def after_fit(self, learner) -> None: ...


class _Monitor(Callback):
    """Tracks the best value of an epoch metric (min for losses, else max)."""

    def __init__(self, monitor: str = "valid_loss", mode: str | None = None, min_delta: float = 0.0):
        self.monitor, self.min_delta = monitor, min_delta
        self.lower = _lower_is_better(monitor) if mode is None else mode == "min"
        self.best, self.best_epoch = math.inf if self.lower else -math.inf, None

    def _improved(self, learner) -> bool:
        value = learner.history.epochs[-1].get(self.monitor)
        if value is None:
            raise KeyError(f"{type(self).__name__} monitors {self.monitor!r}, but epochs record "
                           f"{sorted(learner.history.epochs[-1])}; pass valid_data or monitor another key")
        better = value < self.best - self.min_delta if self.lower else value > self.best + self.min_delta
        if better:
            self.best, self.best_epoch = value, learner.history.epochs[-1]["epoch"]
        return better

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "best_epoch": self.best_epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.best_epoch = state["best"], state["best_epoch"]


class EarlyStopping(_Monitor):
    """Stop when `monitor` has not improved for `patience` epochs."""

    def __init__(self, monitor: str = "valid_loss", patience: int = 3, mode: str | None = None,
                 min_delta: float = 0.0):
        super().__init__(monitor, mode, min_delta)
        self.patience, self.wait = patience, 0

    def after_epoch(self, learner) -> None:
        self.wait = 0 if self._improved(learner) else self.wait + 1
        if self.wait >= self.patience:
            print(f"early stopping: no better {self.monitor} than {self.best:.4f} (epoch {self.best_epoch}) "
                  f"for {self.patience} epochs")
            learner.should_stop = True

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "wait": self.wait}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.wait = state["wait"]


class SaveBest(_Monitor):
    """Keep a copy of the weights from the best epoch and put them back when fit ends
    (also after an interrupt or early stop)."""

    def __init__(self, monitor: str = "valid_loss", mode: str | None = None):
        super().__init__(monitor, mode)
        self.weights: dict | None = None

    def after_epoch(self, learner) -> None:
        if self._improved(learner):
            self.weights = {k: v.detach().to("cpu", copy=True) for k, v in learner.model.state_dict().items()}

    def after_fit(self, learner) -> None:
        if self.weights is not None:
            learner.model.load_state_dict(self.weights)
            print(f"restored the weights of epoch {self.best_epoch} ({self.monitor} {self.best:.4f})")

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "weights": self.weights}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.weights = copy.deepcopy(state["weights"])


class ARTAR(Callback):
    """Adds §4.6's AR and TAR (the model's extras "ar" and "tar") to the training loss."""

    def after_loss(self, learner) -> None:
        extras = learner.extras or {}
        if "ar" not in extras or "tar" not in extras:
            raise KeyError("ARTAR needs the model to return (loss, {'ar': ..., 'tar': ...}) in training: "
                           "use AWDLSTM with Learner(..., loss_fn=None) so batches are passed as model(x, y)")
        learner.loss = learner.loss + extras["ar"] + extras["tar"]


class SeqLenLR(Callback):
    """§4.1: with variable-length BPTT, scale the step's LR by seq_len / bptt, so that a short
    sequence (whose mean loss weighs each token more) does not get a larger update per token.
    It rescales the LR the Learner set for this step; the history records the unscaled LR."""

    def __init__(self, bptt: int = 70):
        self.bptt = bptt

    def before_step(self, learner) -> None:
        scale = learner.batch[0].shape[1] / self.bptt
        for group in learner.opt.param_groups:
            group["lr"] *= scale


class StopAfter(Callback):
    """Ends fit after `steps` optimizer steps (timing runs, tests)."""

    def __init__(self, steps: int):
        self.steps = steps

    def after_step(self, learner) -> None:
        if learner.step >= self.steps:
            learner.should_stop = True


class TokenClock(Callback):
    """Counts the tokens trained on in this fit and the seconds spent, for tokens/s."""

    def __init__(self):
        self.tokens, self.seconds, self._t = 0, 0.0, None

    def before_batch(self, learner) -> None:
        self._t = time.perf_counter()

    def after_step(self, learner) -> None:
        self.tokens += learner.batch[0].numel()
        self.seconds += time.perf_counter() - self._t

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else float("nan")
