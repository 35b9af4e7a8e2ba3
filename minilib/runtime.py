"""Where and how big: the device, the size profile, seeding and mixed precision.

Every lesson and command asks this module once, at the top, instead of
scattering sizes and `torch.device(...)` calls through the code.

    >>> from minilib import runtime
    >>> runtime.profile()        # 'smoke' | 'laptop' | 'full'
    >>> runtime.device()         # cuda > mps > cpu, or $MINILIB_DEVICE
    >>> cfg = runtime.pick({"smoke": small, "laptop": medium, "full": large})
    >>> runtime.classroom()      # $MINILIB_CLASSROOM=1 (`make classroom`): widgets answer from caches only
"""
from __future__ import annotations

import contextlib
import functools
import os
import platform
import random
import sys
from typing import Mapping, TypeVar

import numpy as np
import torch

from minilib import files

PROFILES = ("smoke", "laptop", "full")
PROFILE_HELP = {
    "smoke": "CI and nbval: every cell runs in seconds; checks direction only",
    "laptop": "a learner without a GPU: each lesson's claim in minutes, from shipped checkpoints",
    "full": "one GPU: paper-like sizes, pretraining from scratch",
}
DEVICES = ("cpu", "cuda", "mps")

T = TypeVar("T")


class UsageError(ValueError):
    """A user's mistake (a bad option, file, name or number): `python -m minilib` prints it as one
    line naming the fix and exits with status 2, never a traceback."""


class ProfileError(UsageError):
    """An unknown size profile."""


def _cuda_available() -> bool:
    return torch.cuda.is_available()


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps and mps.is_available())


def device(override: str | None = None) -> torch.device:
    """The device to train on: `override`, else $MINILIB_DEVICE, else cuda > mps > cpu."""
    name = override or os.environ.get("MINILIB_DEVICE")
    if name:
        kind = name.split(":")[0]
        if kind not in DEVICES:
            raise ValueError(f"unknown device {name!r}; use one of {', '.join(DEVICES)} (e.g. MINILIB_DEVICE=cpu)")
        if kind == "cuda" and not _cuda_available():
            raise RuntimeError(f"device {name!r} asked for, but torch sees no CUDA GPU "
                               f"(torch {torch.__version__}); unset MINILIB_DEVICE or set it to cpu")
        if kind == "mps" and not _mps_available():
            raise RuntimeError("device 'mps' asked for, but this torch has no Apple-GPU support; set MINILIB_DEVICE=cpu")
        return torch.device(name)
    if _cuda_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def profile() -> str:
    """The size profile: $MINILIB_PROFILE, else 'full' on CUDA and 'laptop' elsewhere."""
    name = os.environ.get("MINILIB_PROFILE", "").strip().lower()
    if not name:
        return "full" if _cuda_available() else "laptop"
    if name not in PROFILES:
        valid = "\n".join(f"  {p:7s} {PROFILE_HELP[p]}" for p in PROFILES)
        raise ProfileError(f"unknown MINILIB_PROFILE={name!r}. Valid profiles:\n{valid}\n"
                           f"Set one, e.g. `export MINILIB_PROFILE=laptop`, or unset it for the default.")
    return name


CLASSROOM_VALUES = {"1": True, "true": True, "yes": True, "on": True,
                    "": False, "0": False, "false": False, "no": False, "off": False}


def classroom() -> bool:
    """Classroom mode: $MINILIB_CLASSROOM=1 (what `make classroom` sets). Every widget then answers
    from the shipped caches at once and live training is opt-in, per widget (minilab/widgets.py,
    `LiveTraining`). Unset or 0: the usual behaviour. Read here and nowhere else."""
    value = os.environ.get("MINILIB_CLASSROOM", "").strip().lower()
    if value not in CLASSROOM_VALUES:
        raise UsageError(f"unknown MINILIB_CLASSROOM={value!r}: use 1 for classroom mode (`make classroom`), "
                         f"or 0 / unset it for the usual behaviour")
    return CLASSROOM_VALUES[value]


def pick(by_profile: Mapping[str, T], name: str | None = None) -> T:
    """The entry of `by_profile` for the current (or given) profile."""
    name = name or profile()
    if name not in PROFILES:
        raise ProfileError(f"unknown profile {name!r}; valid: {', '.join(PROFILES)}")
    if name not in by_profile:
        raise ProfileError(f"no sizes defined for profile {name!r} (have: {', '.join(by_profile)})")
    return by_profile[name]


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (all devices) so a CPU run repeats exactly."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def autocast(dev: torch.device | str):
    """bf16 autocast on CUDA (tensor cores); full precision elsewhere.

    On CPU, $MINILIB_CPU_BF16=1 turns bf16 autocast on too, for CPUs with bf16 instructions (AVX-512 BF16,
    AMX). Off by default: on the AVX2-only 2-core machines this is built on, a bf16 matmul is ~45x slower
    than fp32 (docs/measurements.md).
    """
    dev = torch.device(dev)
    if dev.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    if dev.type == "cpu" and os.environ.get("MINILIB_CPU_BF16") == "1":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@functools.cache          # the machine does not change under a process: /proc/cpuinfo read once, not per stamp
def cpu_name() -> str:
    """The CPU's model and the vector instructions torch's kernels use on it ("AMD EPYC (AVX512)"): two machines
    whose kernels differ round differently, and a long training run can end elsewhere on each."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model} ({torch.backends.cpu.get_cpu_capability()})"


def environment() -> dict[str, str]:
    """What a bug report needs: versions, device, profile, threads."""
    import matplotlib

    dev = device()
    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
        "device": str(dev),
        "cpu": cpu_name(),
        "profile": profile(),
        "cpu threads": str(torch.get_num_threads()),
    }
    if dev.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(dev)
        info["gpus"] = str(torch.cuda.device_count())
    return info


@contextlib.contextmanager
def one_thread_per_op(device: torch.device):
    """On CPU, run each torch op on one core for the duration (restored after).

    word2vec's ops are small (a few MB); on a busy 2-core machine a 2-thread OpenMP op
    waits for a descheduled thread at every barrier: generating batches measured 35x
    slower with 2 threads than with 1 while another job ran. Parallelism comes from
    worker threads instead (see fit_hogwild), as in word2vec.c and gensim.
    """
    if torch.device(device).type != "cpu":
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


# ----------------------------------------------------------------------------- stamps

def stamp(*, seed: int | None = None, **extra):
    """Where a checkpoint came from, as the JSON beside it records it: the lab's stamp when the lab is loaded (every
    `python -m minilib` command and lesson: files.stamp_with), else this machine's facts: profile, device, CPU, seed,
    versions, time."""
    if files.stamper is not None:
        return files.stamper(seed=seed, **extra)
    import datetime

    dev = device()
    return {"profile": profile(),
            "device": str(dev) if dev.type != "cuda" else f"cuda ({torch.cuda.get_device_name(dev)})",
            "cpu": cpu_name(), "seed": seed, "torch": torch.__version__, "python": sys.version.split()[0],
            "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **extra}
