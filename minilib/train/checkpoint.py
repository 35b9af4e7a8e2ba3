"""Checkpoint files: atomic writes and the RNG states that make a resumed run exact.

A checkpoint is one `torch.save`d dict. It is written to a temporary file and
moved into place (files.atomic_write_bytes), so a crash while saving
leaves the previous checkpoint intact, never half of a new one.
"""
from __future__ import annotations

import io
import os
import random
from typing import Any

import numpy as np
import torch

from minilib.files import atomic_write_bytes


def save(path: str | os.PathLike, state: Any) -> None:
    """Atomically write `state` (tensors, dicts, lists, numbers) to `path`: checkpoints and caches alike."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def load(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by `save`.

    weights_only=False because a checkpoint holds RNG states (NumPy's is a tuple
    with an array); only load checkpoints you made yourself.
    """
    return torch.load(path, map_location=map_location, weights_only=False)


def rng_state() -> dict[str, Any]:
    """Every random generator a training step may draw from: Python, NumPy, torch (CPU and CUDA)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
