"""Train a tiny deterministic model; under torchrun, each rank trains on its half of every global batch.

    torchrun --standalone --nproc_per_node=2 tests/ddp_worker.py OUT.pt   (rank 0 writes the final parameters)

tests/test_train_distributed.py runs `train()` in one process on the whole
global batches and compares.
"""
import sys

import torch
import torch.nn.functional as F
from torch import nn

from minilib.train import Learner, distributed


def global_batches(n_batches=6, rows=8):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n_batches * rows, 5, generator=g)
    y = torch.sin(x.sum(1, keepdim=True))
    return [(x[i:i + rows], y[i:i + rows]) for i in range(0, len(x), rows)]


def train() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    learner = Learner(model, distributed.shard(global_batches()), loss_fn=F.mse_loss,  # a mean: DDP averages
                      groups=[model[0], model[2]], clip=0.5, device="cpu", progress=False)
    learner.fit(2, lr=slice(1e-2, 3e-2), schedule="cosine", warmup=2)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


if __name__ == "__main__":
    distributed.setup()
    params = train()
    if distributed.is_main():
        torch.save({"params": params, "world_size": distributed.world_size()}, sys.argv[1])
    distributed.teardown()
