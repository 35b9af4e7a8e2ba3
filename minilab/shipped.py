"""Which run of each pretrained model the lessons fine-tune by default: its recipe run or its shipped branch.

Each pretrained model has its recipe run (`python -m minilib pretrain gpt`: checkpoints/gpt-laptop.pt) and, from
the compute axis, a shipped branch: its long run cooled down at SHIP_BUDGET x the laptop compute
(`pretrain ... --budget 5 --warm-start` the long run's 4x weights: checkpoints/gpt-laptop-5x.pt;
experiments/compute_axis.py). A model's default moves to its branch once the branch is better on held-out loss
and every grid point that reads the default has been re-run on it; BRANCHES names the models that have moved.

    from minilab import shipped
    shipped.checkpoint("gpt", "laptop")       # checkpoints/gpt-laptop.pt, or gpt-laptop-5x.pt once gpt has moved

The `-scratch` controls, the flywheel and GPT's zero-shot study keep the recipe run (`shipped.recipe`): the
controls read only its tokenizer and shape, which the branch shares; the other two read its own snapshots.
"""
from __future__ import annotations

from pathlib import Path

from minilab import provenance

SHIP_BUDGET = 5         # x the laptop compute: a 5x run's 20 % cool-down starts at 4x, where the long runs stood
BRANCHES: dict[str, tuple[str, ...]] = {    # profile -> the models whose default is their shipped branch
    "laptop": ("gpt", "bert", "bert-mlm", "bert-ltr"),
}
CHECKPOINTS = provenance.REPO_ROOT / "checkpoints"


def recipe(name: str, profile: str) -> Path:
    """The recipe run's checkpoint: checkpoints/<name>-<profile>.pt (name: gpt, bert, bert-mlm, bert-ltr)."""
    return CHECKPOINTS / f"{name}-{profile}.pt"


def branch(name: str, profile: str) -> Path:
    """The shipped branch's checkpoint: checkpoints/<name>-<profile>-5x.pt."""
    return CHECKPOINTS / f"{name}-{profile}-{SHIP_BUDGET:g}x.pt"


def checkpoint(name: str, profile: str) -> Path:
    """The model's default checkpoint at `profile`: its branch where BRANCHES says it has moved, else its recipe run."""
    return branch(name, profile) if name in BRANCHES.get(profile, ()) else recipe(name, profile)
