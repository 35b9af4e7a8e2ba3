"""The Learner: one fit loop for every model in the book.

    learner = Learner(model, train_batches, valid_batches, loss_fn=F.cross_entropy)
    history = learner.fit(3, lr=3e-3, schedule="onecycle")
    history.plot()

Batches. Data is anything re-iterable with len(): a list of batches, a
DataLoader, or an object with __iter__ and __len__ (and optionally
set_epoch(epoch), called before each epoch, as on DistributedSampler).
A batch is a tensor, a tuple/list or a dict; the learner moves it to the device.

  * loss_fn=None: the batch is the model's arguments and the model returns the loss:
    `model(batch)` for a tensor, `model(*batch)` for a tuple, `model(**batch)` for a dict.
  * loss_fn given: a batch is `(inputs..., target)` and the loss is
    `loss_fn(model(*inputs), target)`; metrics are `metric(output, target)`.

Either may return `(loss, extras)` with `extras` a dict: scalar extras are
logged in the history, and callbacks can use any extra (see callbacks.py).
The loss must be a mean over the batch (DDP averages gradients over ranks).

Stateful models (RNN LMs carrying hidden state across BPTT batches) may define
`reset()`: the learner calls it at the start of every epoch and around every
evaluation, so training and validation never see each other's state.

Layer groups (groups.py) give discriminative LRs (`lr=slice(lo, hi)`) and
gradual unfreezing (`freeze_to(-n)`).

Checkpoints. With `checkpoint_dir`, each fit writes `fit-<k>.pt` there (k
counts finished fits of this learner) at every epoch end, every
`checkpoint_every` steps, and on interrupt. `fit(..., resume=True)` continues
from it with the same RNG states and the same data position, so on CPU a
resumed run repeats the uninterrupted one's losses exactly.

Interrupts. Ctrl-C or a notebook's Stop button ends fit cleanly: the history
so far stays on the learner, a checkpoint is written (if checkpoint_dir),
SaveBest puts back its best weights. In a notebook fit then returns the
history (stopping is an intended way to end training); in a script the
KeyboardInterrupt is raised again after that cleanup so the program ends.
Inside `propagate_interrupts()` it is raised again in a notebook too: a caller
that caches what fit made (a grid point) must never cache an unfinished run.
"""
from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch
from torch import nn

from minilib import runtime
from minilib.train import checkpoint, distributed
from minilib.train.callbacks import Callback
from minilib.train.groups import GroupsSpec, layer_groups, optimizer_groups, set_trainable, spread_lr
from minilib.train.history import History
from minilib.train.progress import in_notebook, make_progress
from minilib.train.schedules import Schedule, get_schedule


_propagating = 0  # > 0 inside propagate_interrupts()


@contextlib.contextmanager
def propagate_interrupts():
    """Inside this block a Stop ends fit with KeyboardInterrupt even in a notebook (after the cleanup)."""
    global _propagating
    _propagating += 1
    try:
        yield
    finally:
        _propagating -= 1


def to_device(batch, device: torch.device):
    """Move every tensor in a (nested) tensor / tuple / list / dict batch to `device`."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a NamedTuple takes its fields positionally
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def _first_tensor(batch) -> torch.Tensor | None:
    if isinstance(batch, torch.Tensor):
        return batch
    for item in (batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (tuple, list)) else ()):
        found = _first_tensor(item)
        if found is not None:
            return found
    return None


def _scalars(extras: dict) -> dict[str, float]:
    """The extras worth logging: plain numbers and one-element tensors."""
    out = {}
    for k, v in extras.items():
        if isinstance(v, torch.Tensor) and v.numel() == 1:
            out[k] = v.item()
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = float(v)
    return out


def _set_epoch(data, epoch: int) -> None:
    """Tell the data (or its DataLoader's sampler) which epoch starts, so it can re-shuffle."""
    for obj in (data, getattr(data, "sampler", None)):
        if hasattr(obj, "set_epoch"):
            obj.set_epoch(epoch)


class Learner:
    """A model, its data and how to train it (see the module doc for the batch convention).

    groups: layer groups, lowest first (modules, parameters or lists of them, or a
        splitter model -> groups); default the model's layer_groups() or one group.
    opt: 'adamw' (fused on CUDA), 'sgd', or a callable param_groups -> optimizer
        (e.g. SparseAdam for sparse embeddings). clip: max global grad norm, None for off.
    metrics: metric(output, target) -> number, averaged over valid batches (needs loss_fn).
    checkpoint_dir / checkpoint_every: save each epoch / also every N steps, and resume.
    progress: True (bars in a notebook, lines in a console), 'console', False.
    """

    def __init__(self, model: nn.Module, train_data: Iterable, valid_data: Iterable | None = None, *,
                 loss_fn: Callable | None = None, groups: GroupsSpec = None,
                 opt: str | Callable[[list[dict]], torch.optim.Optimizer] = "adamw",
                 weight_decay: float = 0.01, clip: float | None = 1.0, metrics: Sequence[Callable] = (),
                 callbacks: Sequence[Callback] = (), device: str | torch.device | None = None,
                 checkpoint_dir: str | Path | None = None, checkpoint_every: int | None = None,
                 progress: bool | str = True, print_every: int | None = None, live_plot: bool = False):
        if metrics and loss_fn is None:
            raise ValueError("metrics are called as metric(output, target), which needs loss_fn; "
                             "without loss_fn, return metrics from the model as extras: (loss, {'accuracy': acc})")
        if device is None and distributed.is_distributed() and torch.cuda.is_available():
            device = torch.device("cuda", torch.cuda.current_device())  # set by distributed.setup()
        self.device = runtime.device() if device is None else torch.device(device)
        self.model = model.to(self.device)
        self.train_data, self.valid_data = train_data, valid_data
        self.loss_fn, self.metrics, self.callbacks = loss_fn, list(metrics), list(callbacks)
        self.groups = layer_groups(model, groups)
        self.opt_spec, self.weight_decay, self.clip = opt, weight_decay, clip
        self.opt: torch.optim.Optimizer | None = None  # made by the first fit (or load), kept across fits
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.checkpoint_every, self.progress, self.print_every = checkpoint_every, progress, print_every
        self.live_plot = live_plot
        self.history = History()
        self.n_frozen = 0  # lowest groups with requires_grad=False
        self.step = 0  # optimizer steps over all fits
        self.epochs_done = 0  # finished epochs over all fits
        self.fits_done = 0  # finished fit() calls: names this fit's checkpoint file
        self.should_stop = self.interrupted = False
        self.epoch = 0  # the current epoch, counted over all fits
        self.loss = self.extras = self.batch = self.output = self.grad_norm = None

    # ---- layer groups -------------------------------------------------------------------------
    def start_at(self, step: int) -> None:
        """Begin the next fit at `step` of its plan (its schedule and data from there) with the model's weights as
        they are and a fresh optimizer: a warm start from saved weights when a run's training state is gone.
        Adam's moments restart from zero, the one way the run then differs from an uninterrupted one."""
        self._start_step = step

    def freeze_to(self, n: int) -> None:
        """Freeze groups[:n] and train the rest; freeze_to(-1) trains only the top group (ULMFiT §3.3)."""
        n_frozen = n if n >= 0 else len(self.groups) + n
        if not 0 <= n_frozen < len(self.groups):
            raise ValueError(f"freeze_to({n}) with {len(self.groups)} layer groups: use n in "
                             f"-{len(self.groups)}..{len(self.groups) - 1} (at least the top group must train)")
        self.n_frozen = n_frozen
        set_trainable(self.groups, n_frozen)

    def freeze(self) -> None:
        """Train only the top layer group (e.g. a new classifier head)."""
        self.freeze_to(-1)

    def unfreeze(self) -> None:
        self.freeze_to(0)

    def _make_optimizer(self, lrs: list[float]) -> torch.optim.Optimizer:
        param_groups = optimizer_groups(self.groups, lrs, self.weight_decay)
        if callable(self.opt_spec):  # e.g. SparseAdam for nn.Embedding(sparse=True)
            return self.opt_spec(param_groups)
        if self.opt_spec == "adamw":
            return torch.optim.AdamW(param_groups, fused=self.device.type == "cuda")  # one kernel for all params
        if self.opt_spec == "sgd":
            return torch.optim.SGD(param_groups)
        raise ValueError(f"opt={self.opt_spec!r}: use 'adamw', 'sgd' or a callable param_groups -> optimizer")

    # ---- one batch ----------------------------------------------------------------------------
    def _loss(self, model: nn.Module, batch) -> tuple[torch.Tensor, dict, Any, Any]:
        """(loss, extras, output, target) for a batch, following the convention in the module doc."""
        output = target = None
        if self.loss_fn is None:
            if isinstance(batch, dict):
                out = model(**batch)
            elif isinstance(batch, (tuple, list)):
                out = model(*batch)
            else:
                out = model(batch)
        else:
            if not isinstance(batch, (tuple, list)) or len(batch) < 2:
                raise TypeError(f"with loss_fn, a batch must be a tuple (inputs..., target); got {type(batch).__name__}. "
                                f"For dict batches, let the model compute the loss (loss_fn=None)")
            *inputs, target = batch
            output = model(*inputs)
            out = self.loss_fn(output, target)
        loss, extras = out if isinstance(out, (tuple, list)) else (out, {})
        if not isinstance(loss, torch.Tensor) or loss.ndim != 0 or not isinstance(extras, dict):
            raise TypeError("the loss must be a scalar tensor, or (loss, extras_dict); "
                            f"got {type(out).__name__}{'' if not isinstance(out, tuple) else ' of ' + str(len(out))}")
        return loss, extras, output, target

    def _clip(self) -> float | None:
        """Clip the global gradient norm to `clip`; returns the norm before clipping."""
        if not self.clip:
            return None
        params = [p for group in self.groups for p in group if p.grad is not None]
        if any(p.grad.is_sparse for p in params):
            raise ValueError("clip can't handle sparse gradients (nn.Embedding(sparse=True)); pass clip=None")
        return float(torch.nn.utils.clip_grad_norm_(params, self.clip))

    def _reset_state(self) -> None:
        if callable(getattr(self.model, "reset", None)):
            self.model.reset()

    def _hook(self, name: str) -> None:
        for cb in self.callbacks:
            getattr(cb, name)(self)

    # ---- evaluation ---------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self, data: Iterable | None = None) -> dict[str, float]:
        """Mean loss, metrics and scalar extras over `data` (default: valid_data), weighted by batch size."""
        data = self.valid_data if data is None else data
        if data is None:
            raise ValueError("nothing to evaluate: pass data or give the Learner valid_data")
        was_training = self.model.training
        self.model.eval()
        self._reset_state()
        totals: dict[str, float] = {}
        count = 0
        try:
            for batch in data:
                batch = to_device(batch, self.device)
                with runtime.autocast(self.device):
                    loss, extras, output, target = self._loss(self.model, batch)
                first = _first_tensor(batch)
                n = first.shape[0] if first is not None and first.ndim else 1
                values = {"loss": loss.item(), **_scalars(extras)}
                for metric in self.metrics:
                    values[getattr(metric, "__name__", type(metric).__name__)] = float(metric(output, target))
                for k, v in values.items():
                    totals[k] = totals.get(k, 0.0) + v * n
                count += n
        finally:
            self.model.train(was_training)
            self._reset_state()
        return {k: v / max(count, 1) for k, v in totals.items()}

    def _validate(self, epoch: int) -> dict[str, float]:
        result = self.evaluate()
        row = {"valid_loss": result.pop("loss"), **result}
        self.history.evals.append({"step": self.step, "epoch": epoch, **row})
        return row

    # ---- checkpoints --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs, except the RNG and data position (added by fit)."""
        model = self.model
        return {"model": model.state_dict(), "opt": self.opt.state_dict() if self.opt else None,
                "history": self.history.to_dict(), "step": self.step, "epochs_done": self.epochs_done,
                "fits_done": self.fits_done, "n_frozen": self.n_frozen,
                "callbacks": {key: cb.state_dict() for key, cb in self._stateful_callbacks().items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.freeze_to(state["n_frozen"])
        if state["opt"] is not None:
            if self.opt is None:
                self.opt = self._make_optimizer([0.0] * len(self.groups))  # fit sets the LRs every step
            self.opt.load_state_dict(state["opt"])
        self.history = History.from_dict(state["history"])
        self.step, self.epochs_done, self.fits_done = state["step"], state["epochs_done"], state["fits_done"]
        for key, cb in self._stateful_callbacks().items():  # matched by class name; others start afresh
            if key in state["callbacks"]:
                cb.load_state_dict(state["callbacks"][key])

    def _stateful_callbacks(self) -> dict[str, Callback]:
        out = {}
        for cb in self.callbacks:
            if hasattr(cb, "state_dict"):
                name = type(cb).__name__
                out[name if name not in out else f"{name}#{len(out)}"] = cb
        return out

    def save(self, path: str | Path, **extra: Any) -> None:
        """Atomically write the learner's state with a provenance stamp (only rank 0 writes)."""
        if distributed.is_main():
            stamp = extra.pop("provenance", None) or runtime.stamp(seed=torch.initial_seed())
            checkpoint.save(path, {**self.state_dict(), **extra,
                                   "provenance": {**stamp, "saved": time.strftime("%Y-%m-%dT%H:%M:%S")}})

    def load(self, path: str | Path) -> dict[str, Any]:
        """Restore model, optimizer, history, freezing and callback state; returns the raw checkpoint."""
        state = checkpoint.load(path)
        self.load_state_dict(state)
        return state

    def _checkpoint_path(self) -> Path | None:
        return None if self.checkpoint_dir is None else self.checkpoint_dir / f"fit-{self.fits_done}.pt"

    def _save_checkpoint(self, finished: bool = False) -> None:
        if self.checkpoint_dir is not None:
            self.save(self._checkpoint_path(), provenance=self._stamp, fit=dict(self._fit_state, finished=finished),
                      rng=self._rng, epoch_rng=self._epoch_rng)

    # ---- the loop -----------------------------------------------------------------------------
    def fit(self, epochs: int, lr: float | slice | Sequence[float] = 3e-3, *,
            schedule: str | Schedule = "constant", warmup: int | float = 0, resume: bool = True,
            eval_every: int | None = None) -> History:
        """Train for `epochs` passes over train_data; returns (and keeps) the History.

        lr: a float, slice(lo, hi) (geometric over layer groups), slice(hi) (ULMFiT's /2.6
        per group) or one LR per group. schedule: 'constant' | 'linear' | 'cosine' | 'wsd' |
        'stlr' | 'onecycle' | callable (step, total) -> multiplier. warmup: steps, or a fraction of
        all steps if < 1 (for constant/linear/cosine/wsd). eval_every: also validate every N steps.
        """
        n = len(self.train_data)
        total = epochs * n
        base_lrs = spread_lr(lr, len(self.groups))
        warmup_steps = round(warmup * total) if 0 < warmup < 1 else int(warmup)
        sched = get_schedule(schedule, warmup=warmup_steps)
        plan = {"epochs": epochs, "steps_per_epoch": n, "lr": base_lrs}
        if self.opt is None:
            self.opt = self._make_optimizer(base_lrs)
        self._fit_state = {"plan": plan, "epoch_base": self.epochs_done, "position": (0, 0)}
        self._epoch_rng = None
        start, self._start_step = getattr(self, "_start_step", 0), 0
        if start:
            if not 0 < start < total:
                raise ValueError(f"start_at({start}): this fit has steps 0 to {total - 1}")
            self._fit_state["position"], self.step = divmod(start, n), start
            self._epoch_rng = checkpoint.rng_state()

        path = self._checkpoint_path()
        if resume and path is not None and path.exists():
            state = self.load(path)
            if state["fit"]["plan"] != plan:
                raise ValueError(f"{path} was made by a fit with {state['fit']['plan']}, this one has {plan}; "
                                 f"pass resume=False to start over, or use another checkpoint_dir")
            self._fit_state, self._epoch_rng = state["fit"], state["epoch_rng"]
            checkpoint.set_rng_state(state["rng"])
            if state["fit"]["finished"]:
                print(f"already trained: loaded the finished run from {path}")
                self.epochs_done = self._fit_state["epoch_base"] + self._fit_state["position"][0]
                self.fits_done += 1
                return self.history
            print(f"resuming from {path}: epoch {self._fit_state['position'][0] + 1}, "
                  f"step {self._fit_state['position'][1]} of {n}")
        elif start:
            print(f"warm start at step {start} of {total}: the given weights, a fresh optimizer")
        self._stamp = runtime.stamp(seed=torch.initial_seed()) if self.checkpoint_dir is not None else None
        self._rng = checkpoint.rng_state()
        self.epochs, self.total_steps, self.base_lrs, self.schedule = epochs, total, base_lrs, sched
        self.should_stop = self.interrupted = False
        # DDP syncs gradients of the parameters that require grad *now*, so wrap per fit (after freezing)
        model = self.model
        if distributed.is_distributed():
            model = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        bar = make_progress(self.progress if distributed.is_main() else False, self.print_every, self.live_plot)
        start_epoch, start_batch = self._fit_state["position"]
        self._hook("before_fit")
        bar.start(epochs, n, start_epoch, start_batch)
        try:
            for epoch in range(start_epoch, epochs):
                self._run_epoch(model, epoch, start_batch if epoch == start_epoch else 0, bar, eval_every)
                if self.should_stop:
                    break
        except KeyboardInterrupt:
            self.interrupted = True
            where = f"epoch {self._fit_state['position'][0] + 1}, step {self._fit_state['position'][1]}"
            if distributed.is_main():
                print(f"interrupted at {where}; learner.history keeps the {len(self.history)} steps so far"
                      + (f"; checkpoint {path} (fit again with resume=True to continue)" if path else ""))
            self._save_checkpoint()
        bar.end(self.interrupted)
        self._hook("after_fit")
        epoch, batch = self._fit_state["position"]
        self.epochs_done = self._fit_state["epoch_base"] + epoch + (batch > 0)  # a started epoch counts
        if self.interrupted:
            if _propagating or not in_notebook():
                raise KeyboardInterrupt
        else:
            self.fits_done += 1  # an interrupted fit keeps its number, so fitting again resumes it
        return self.history

    def _run_epoch(self, model: nn.Module, epoch: int, skip: int, bar, eval_every: int | None) -> None:
        n, global_epoch = len(self.train_data), self._fit_state["epoch_base"] + epoch
        self.epoch = global_epoch
        _set_epoch(self.train_data, global_epoch)
        self._hook("before_epoch")
        self._reset_state()
        t0 = time.perf_counter()
        # Resuming mid-epoch: replay this epoch's data order by making the iterator from the
        # RNG state it was first made with, skip the batches already trained on, then continue
        # from the RNG state of the checkpoint (dropout etc. draw exactly as before).
        now_rng = checkpoint.rng_state()
        if skip:
            checkpoint.set_rng_state(self._epoch_rng)
        else:
            self._epoch_rng = now_rng
        batches = iter(self.train_data)
        for _ in range(skip):
            next(batches)
        if skip:
            checkpoint.set_rng_state(now_rng)
        bar.begin_epoch(epoch, skip)
        model.train()  # evaluate() restores train mode after mid-epoch validation

        for i, batch in enumerate(batches, start=skip):
            self.batch = to_device(batch, self.device)
            self._hook("before_batch")
            multiplier = self.schedule(epoch * n + i, self.total_steps)
            lrs = [base * multiplier for base in self.base_lrs]
            for group in self.opt.param_groups:
                group["lr"] = lrs[group.get("layer", 0)]

            with runtime.autocast(self.device):
                loss, self.extras, self.output, _ = self._loss(model, self.batch)
            self.loss = loss
            self._hook("after_loss")  # a callback may add terms to self.loss (AR/TAR)
            self.opt.zero_grad(set_to_none=True)
            self.loss.backward()
            scalars = _scalars(self.extras)
            self.output = self.extras = None  # free activations (e.g. logits) before the next forward
            self.grad_norm = self._clip()
            self._hook("before_step")
            self.opt.step()
            self.step += 1

            row = {"step": self.step, "epoch": global_epoch, "loss": loss.item(), "lr": lrs}
            if not math.isfinite(row["loss"]):
                raise FloatingPointError(f"loss is {row['loss']} at step {self.step}: lower the lr, or check the data")
            if self.loss is not loss:
                row["total_loss"] = self.loss.item()
            if self.grad_norm is not None:
                row["grad_norm"] = self.grad_norm
            row.update(scalars)
            self.history.steps.append(row)
            if eval_every and self.valid_data is not None and (epoch * n + i + 1) % eval_every == 0 and i + 1 < n:
                self._validate(global_epoch)
                bar.evaluated(self.history)

            # the state after step i+1 is now complete: remember it for a checkpoint
            self._fit_state["position"], self._rng = (epoch, i + 1), checkpoint.rng_state()
            if self.checkpoint_every and self.step % self.checkpoint_every == 0:
                self._save_checkpoint()
            first = _first_tensor(self.batch)
            tokens = first is not None and not first.is_floating_point()
            bar.step(epoch, i + 1, row["loss"], lrs, first.numel() if tokens else 1, "tok" if tokens else "it")
            self._hook("after_step")
            if self.should_stop:
                break

        row = {"epoch": global_epoch, "step": self.step,
               "train_loss": _mean([r["loss"] for r in self.history.steps if r["epoch"] == global_epoch])}
        if self.valid_data is not None:
            row.update(self._validate(global_epoch))
            bar.evaluated(self.history)
        row["time"] = time.perf_counter() - t0
        self.history.epochs.append(row)
        bar.end_epoch(epoch, row)
        self._hook("after_epoch")
        self._fit_state["position"], self._rng = (epoch + 1, 0), checkpoint.rng_state()
        self._save_checkpoint(finished=self.should_stop or epoch + 1 == self.epochs)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan
