"""One fit loop for every model in the book (docs/design.md §2).

    learner.py     Learner: fit, evaluate, freeze_to/unfreeze, save/load, resume
    schedules.py   constant, linear_decay, cosine (warm-up), slanted_triangular, one_cycle
    groups.py      layer groups, discriminative LRs (ULMFiT §3.2), freezing
    callbacks.py   Callback hooks, EarlyStopping, SaveBest
    history.py     History: per-step / per-epoch records, plot(), to_dict()/from_dict()
    checkpoint.py  atomic checkpoint files and RNG states
    progress.py    fastprogress bars in notebooks, plain lines elsewhere
    distributed.py torchrun setup/teardown, shard, sampler
"""
from minilib.train import checkpoint, distributed
from minilib.train.callbacks import Callback, EarlyStopping, SaveBest
from minilib.train.groups import discriminative_lrs, spread_lr
from minilib.train.history import History
from minilib.train.learner import Learner
from minilib.train.schedules import constant, cosine, linear_decay, one_cycle, slanted_triangular

__all__ = ["Learner", "History", "Callback", "EarlyStopping", "SaveBest", "discriminative_lrs", "spread_lr",
           "constant", "cosine", "linear_decay", "one_cycle", "slanted_triangular", "checkpoint", "distributed"]
