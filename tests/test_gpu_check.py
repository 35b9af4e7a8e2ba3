"""tools/gpu_check.py (`make gpu-check`): its dry run (the CPU, smoke sizes) runs every section end to end, so
the script is known to work before a GPU call; and the probe that bounds every fit stops a Learner on time."""
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import gpu_check  # noqa: E402

from minilib.train import Learner  # noqa: E402


def test_probe_stops_every_fit_at_its_cap_and_records_the_steps():
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    batches = [(x[i:i + 8], x[i:i + 8].sum(1, keepdim=True)) for i in range(0, 64, 8)]
    meter = gpu_check.Meter(gpu_check.make_plan(dry=True), deadline=time.perf_counter() + 60)
    meter.next("pretrain", data_scale=2.0, cap=3)
    model = torch.nn.Linear(3, 1)
    with gpu_check.probing(meter):
        Learner(model, batches, loss_fn=torch.nn.functional.mse_loss, device="cpu", progress=False).fit(5, lr=0.05)
    assert Learner.fit.__name__ == "fit" and "probing" not in Learner.fit.__qualname__   # restored
    (rec,) = meter.fits
    assert len(rec["losses"]) == 3 and rec["plan_steps"] == 40            # 5 epochs x 8 batches planned
    fit = gpu_check.summarize_fit(rec)
    assert fit["steps"] == 3 and fit["finite"] and fit["data_scale"] == 2.0
    assert math.isclose(fit["full_minutes"], 40 * 2.0 / fit["steps_per_s"] / 60, rel_tol=0.01, abs_tol=0.006)


def test_a_section_over_its_budget_is_recorded_and_the_check_goes_on(monkeypatch, tmp_path):
    def slow(ctx):
        time.sleep(5)

    monkeypatch.setitem(gpu_check.SECTIONS, "slow", slow)
    t0 = time.perf_counter()
    entry = gpu_check.run_section("slow", gpu_check.make_plan(dry=True), 0.5, tmp_path, torch.device("cpu"))
    assert time.perf_counter() - t0 < 3
    assert entry["ok"] is False and "budget" in entry["error"]


@pytest.mark.data
@pytest.mark.slow            # an end-to-end run of real training: make test, not test-fast
def test_dry_run_trains_every_section_and_writes_the_stamped_json(tmp_path):
    out = tmp_path / "gpu-check-cpu-smoke.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("MINILIB_PROFILE", None), env.pop("MINILIB_DEVICE", None)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check.py"), "--dry", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["dry"] and doc["ok"] and doc["provenance"]["profile"] == "smoke" and doc["provenance"]["commit"]
    assert list(doc["sections"]) == [*gpu_check.LESSONS, "ddp"]
    for name, entry in doc["sections"].items():
        assert entry["ok"], (name, entry.get("error"))
        assert entry["full_minutes"] is not None and entry["peak_memory_mb"] > 0, name
        for fit in entry["fits"]:
            assert fit["finite"], (name, fit)
    trained = {name: [f["label"] for f in e["fits"]] for name, e in doc["sections"].items()}
    for name in ("04-ulmfit", "06-gpt", "07-bert"):          # pretraining, then a fine-tuning point from it
        assert trained[name][0] == "pretrain" and "fine-tune" in trained[name], (name, trained[name])
    assert doc["sections"]["ddp"]["wrapped_in_ddp"]
    assert "extrapolation" in doc["extrapolation"]
    bench = doc["bench_gpt"]
    assert bench["ok"] and bench["modes"]["eager"]["minilib"]["tok_per_s"] > 0
    assert seconds < 150, f"the dry run took {seconds:.0f} s"
