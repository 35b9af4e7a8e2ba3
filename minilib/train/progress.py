"""Progress display: fastprogress bars in a notebook, plain lines in a console.

Console lines are meant to be read in a log (no carriage-return bars):

    epoch 1/3  step   40/200  loss 4.1234  lr 3.00e-03  12.3k tok/s  eta 1m20s
    epoch 1/3  done  train_loss 4.0012  valid_loss 3.9000  accuracy 0.5100  (12.3s)
"""
from __future__ import annotations

import time


def in_notebook() -> bool:
    """True inside a Jupyter kernel (also under nbval), False in a terminal or plain script."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def make_progress(progress: bool | str, print_every: int | None = None, live_plot: bool = False):
    """True: auto (notebook bars or console lines); 'console'; 'notebook'; False: silent.

    live_plot: in a notebook, redraw a loss graph under the bars at each validation.
    """
    if progress is False or progress is None:
        return NoProgress()
    if progress == "notebook" or (progress is True and in_notebook()):
        import fastprogress.fastprogress as fp

        if fp.IN_NOTEBOOK:  # False if fastprogress could not load its IPython display parts
            return NotebookProgress(live_plot)
        return ConsoleProgress(print_every)
    if progress in (True, "console"):
        return ConsoleProgress(print_every)
    raise ValueError(f"progress={progress!r}: use True, False, 'console' or 'notebook'")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _rate(per_second: float) -> str:
    return f"{per_second / 1000:.1f}k" if per_second >= 1000 else f"{per_second:.1f}"


def _number(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def epoch_summary(row: dict) -> list[str]:
    """`key value` strings for an epoch row (the epoch number and step left out)."""
    return [f"{k} {_number(v)}" for k, v in row.items() if k not in ("epoch", "step", "time") and v is not None]


class NoProgress:
    def start(self, epochs: int, steps_per_epoch: int, epoch: int, batch: int) -> None: ...
    def begin_epoch(self, epoch: int, batch: int) -> None: ...
    def step(self, epoch: int, batch: int, loss: float, lrs: list[float], items: int, unit: str) -> None: ...
    def evaluated(self, history) -> None: ...
    def end_epoch(self, epoch: int, row: dict) -> None: ...
    def end(self, interrupted: bool) -> None: ...


class ConsoleProgress(NoProgress):
    def __init__(self, print_every: int | None = None):
        self.print_every = print_every

    def start(self, epochs, steps_per_epoch, epoch, batch):
        self.epochs, self.n = epochs, steps_per_epoch
        self.every = self.print_every or max(1, steps_per_epoch // 10)  # ~10 lines per epoch
        self.remaining = (epochs - epoch) * steps_per_epoch - batch
        self.t0 = self.t_last = time.perf_counter()
        self.done = self.items = 0

    def step(self, epoch, batch, loss, lrs, items, unit):
        self.done += 1
        self.items += items
        if batch % self.every and batch != self.n:
            return
        now = time.perf_counter()
        rate = self.items / max(now - self.t_last, 1e-9)
        eta = (now - self.t0) / self.done * (self.remaining - self.done)
        lr = f"{lrs[-1]:.2e}" if len(lrs) == 1 else f"{lrs[0]:.1e}..{lrs[-1]:.1e}"
        print(f"epoch {epoch + 1}/{self.epochs}  step {batch:>{len(str(self.n))}d}/{self.n}  loss {loss:.4f}  "
              f"lr {lr}  {_rate(rate)} {unit}/s  eta {_duration(eta)}", flush=True)
        self.t_last, self.items = now, 0

    def end_epoch(self, epoch, row):
        print(f"epoch {epoch + 1}/{self.epochs}  done  " + "  ".join(epoch_summary(row))
              + f"  ({row['time']:.1f}s)", flush=True)


class NotebookProgress(NoProgress):
    """fastprogress 1.0.x bars driven by hand (resume starts mid-way, so we don't iterate them)."""

    def __init__(self, live_plot: bool = False):
        self.live_plot = live_plot

    def start(self, epochs, steps_per_epoch, epoch, batch):
        from fastprogress.fastprogress import NBMasterBar

        self.n, self.header = steps_per_epoch, None
        self.mb = NBMasterBar(range(epochs))
        self.mb.update(0)  # the first update displays the bar and starts its clock
        if epoch:
            self.mb.update(epoch)

    def begin_epoch(self, epoch, batch):
        from fastprogress.fastprogress import NBProgressBar

        self.pb = NBProgressBar(range(self.n), parent=self.mb)
        self.pb.update(0)
        if batch:
            self.pb.update(batch)

    def step(self, epoch, batch, loss, lrs, items, unit):
        self.pb.comment = f"loss {loss:.4f}"
        self.pb.update(batch)  # fastprogress redraws at most every 0.2 s

    def evaluated(self, history):
        if not self.live_plot:
            return
        steps = [r["step"] for r in history.steps]
        evals = [r for r in history.evals if r.get("valid_loss") is not None]
        graphs = [[steps, history.losses], [[r["step"] for r in evals], [r["valid_loss"] for r in evals]]]
        try:
            self.mb.update_graph(graphs)
        except Exception as exc:  # a live plot is a nicety; never let it stop training
            print(f"(live plot off: {exc})")
            self.live_plot = False

    def end_epoch(self, epoch, row):
        if self.header is None:
            self.header = [k for k in row if k != "step"]
            self.mb.write(self.header, table=True)
        self.mb.write([_number(row.get(k)) if k != "time" else _duration(row[k]) for k in self.header], table=True)
        self.mb.update(epoch + 1)

    def end(self, interrupted):
        if interrupted and getattr(self, "pb", None) is not None:
            self.pb.on_interrupt()
        if self.mb.main_bar.last_v is not None:  # not finished (early stop, interrupt): close the bar
            self.mb.on_iter_end()
