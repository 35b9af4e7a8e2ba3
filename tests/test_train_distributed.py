"""DDP under torchrun (2 CPU processes, gloo) gives the same parameters as one process."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from minilib.train import distributed

WORKER = Path(__file__).with_name("ddp_worker.py")


def load_worker():
    spec = importlib.util.spec_from_file_location("ddp_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shard_batch_splits_rows_evenly():
    batch = (torch.arange(8), {"y": torch.arange(8) * 10})
    x, d = distributed.shard_batch(batch, rank_=1, world=2)
    assert x.tolist() == [4, 5, 6, 7] and d["y"].tolist() == [40, 50, 60, 70]
    with pytest.raises(ValueError, match="divisible"):
        distributed.shard_batch(torch.arange(7), rank_=0, world=2)
    assert distributed.world_size() == 1 and distributed.is_main() and distributed.setup().type in ("cpu", "cuda", "mps")


@pytest.mark.slow
def test_ddp_two_processes_equal_one(tmp_path):
    out = tmp_path / "ddp.pt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MINILIB_DEVICE": "cpu",
           "PYTHONPATH": os.pathsep.join([str(WORKER.parent.parent), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                             str(WORKER), str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    ddp = torch.load(out)
    assert ddp["world_size"] == 2
    single = load_worker().train()
    torch.manual_seed(0)  # the worker's initial model, to check training moved every parameter
    initial = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).state_dict()
    for name, value in single.items():
        assert (value - initial[name]).abs().max() > 1e-3, name
        torch.testing.assert_close(ddp["params"][name], value, atol=1e-6, rtol=0)
