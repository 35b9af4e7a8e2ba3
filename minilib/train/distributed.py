"""The same training code under `torchrun`: one process per device, DistributedDataParallel.

    # train.py, run with: torchrun --standalone --nproc_per_node=2 train.py
    from minilib.train import Learner, distributed
    device = distributed.setup()
    learner = Learner(model, distributed.shard(batches), device=device)   # wraps the model in DDP
    learner.fit(3, lr=1e-3)                                              # rank 0 prints and saves
    distributed.teardown()

DDP averages gradients over ranks, so a run on 2 ranks × B rows equals one
process on 2B rows only if each rank's loss is a *mean* over an equal-size batch.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def is_main() -> bool:
    """True on rank 0 (and in a plain single process): the one that prints and saves."""
    return rank() == 0


def setup(backend: str | None = None) -> torch.device:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, LOCAL_RANK) and return this rank's device.

    gloo on CPU, NCCL on CUDA. Without torchrun's variables this is a no-op
    returning minilib.runtime.device(), so a script runs unchanged as one process.
    """
    from minilib import runtime

    if "RANK" not in os.environ or int(os.environ.get("WORLD_SIZE", "1")) == 1:
        return runtime.device()
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)  # before init, so NCCL binds each rank to its own GPU
    else:
        device = torch.device("cpu")
    if not dist.is_initialized():
        dist.init_process_group(backend or ("nccl" if device.type == "cuda" else "gloo"))
    return device


def teardown() -> None:
    """Leave the process group. The barrier first: destroying it while another rank
    is still in a collective crashes (seen on these machines)."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def shard_batch(batch, rank_: int | None = None, world: int | None = None):
    """This rank's equal slice (along dim 0) of a global batch: a tensor, tuple/list or dict."""
    rank_ = rank() if rank_ is None else rank_
    world = world_size() if world is None else world
    if isinstance(batch, torch.Tensor):
        if batch.shape[0] % world:
            raise ValueError(f"a global batch of {batch.shape[0]} rows does not split evenly over {world} ranks; "
                             f"use a batch size divisible by the world size")
        size = batch.shape[0] // world
        return batch[rank_ * size:(rank_ + 1) * size]
    if isinstance(batch, dict):
        return {k: shard_batch(v, rank_, world) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(shard_batch(v, rank_, world) for v in batch)
    return batch


def shard(batches, rank: int | None = None, world_size: int | None = None) -> "Sharded":
    """Wrap re-iterable batches so each rank sees its slice of every global batch.

    Keeps len() and forwards set_epoch(), so it drops in wherever the batches went.
    """
    return Sharded(batches, rank, world_size)


class Sharded:
    """Re-iterable batches, each cut to this rank's slice (see `shard`)."""

    def __init__(self, batches, rank: int | None = None, world_size: int | None = None):
        self.batches, self.rank, self.world_size = batches, rank, world_size

    def __iter__(self):
        for batch in self.batches:
            yield shard_batch(batch, self.rank, self.world_size)

    def __len__(self) -> int:
        return len(self.batches)

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.batches, "set_epoch"):
            self.batches.set_epoch(epoch)


def sampler(dataset, shuffle: bool = True, seed: int = 0) -> torch.utils.data.Sampler:
    """A sampler giving each rank a disjoint part of `dataset` (for a DataLoader's sampler=).

    The order depends only on (seed, epoch): the fit loop calls set_epoch(epoch),
    so each epoch is shuffled differently and a resumed run sees the same order.
    Works in a single process too (one replica).
    """
    return torch.utils.data.DistributedSampler(dataset, num_replicas=world_size(), rank=rank(),
                                               shuffle=shuffle, seed=seed)
