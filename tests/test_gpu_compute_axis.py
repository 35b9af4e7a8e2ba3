"""tools/device_tree.py keeps a device call under its size limit and puts the index back exactly;
tools/gpu_compute_axis.py's rehearsal (the CPU, smoke sizes, the tree as the device gets it) brings back
the summary and the points."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import device_tree  # noqa: E402
import gpu_compute_axis  # noqa: E402

from minilab.experiments import compute_axis  # noqa: E402


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "checkpoints" / "compute-axis").mkdir(parents=True)
    for rel, size in {"checkpoints/gpt-laptop.pt": 10, "checkpoints/bert-laptop.pt": 3_000_000,
                      "checkpoints/compute-axis/gpt-latest.pt": 2_000_000, "checkpoints/gpt-laptop.json": 5,
                      "README.md": 5}.items():
        (root / rel).write_bytes(b"x" * size)
    for cmd in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *cmd], cwd=root, check=True)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("# mine\n/.gpu-check/\n")
    return root


def test_hide_sends_no_pt_but_the_kept_one_and_show_restores_index_and_exclude(tmp_path, capsys):
    root = _repo(tmp_path)
    exclude_before = (root / ".git" / "info" / "exclude").read_text()
    assert device_tree.hide(root) == 0
    tracked = device_tree.git("ls-files", root=root).split()
    assert "checkpoints/bert-laptop.pt" not in tracked and "checkpoints/compute-axis/gpt-latest.pt" not in tracked
    assert "checkpoints/gpt-laptop.pt" in tracked                          # KEEP travels
    untracked = device_tree.git("ls-files", "-o", "--exclude-standard", root=root).split()
    assert not [f for f in untracked if f.endswith(".pt")]                 # ignored, so they do not travel either
    sent = device_tree.travelling(root)
    assert sorted(sent) == ["README.md", "checkpoints/gpt-laptop.json", "checkpoints/gpt-laptop.pt"]
    assert "checkpoints/elmo-laptop.pt" in device_tree.KEEP
    assert (root / "checkpoints" / "bert-laptop.pt").stat().st_size == 3_000_000    # the files never move
    assert device_tree.hide(root) == 2                                     # twice: refused, one line
    assert "index already differs" in capsys.readouterr().err
    assert device_tree.show(root) == 0
    assert device_tree.git("status", "--porcelain", root=root) == ""
    assert (root / ".git" / "info" / "exclude").read_text() == exclude_before


def test_the_tree_a_call_sends_fits_the_device_limit_with_the_data_pack():
    sent = device_tree.size_mib(device_tree.travelling())
    pack = gpu_compute_axis.PACK_DIR / "data.tar.xz"
    carried = pack.stat().st_size / 2 ** 20 if pack.is_file() else 15.0      # 14.6 MiB when packed
    assert sent + carried < device_tree.LIMIT_MIB, f"{sent:.1f} + {carried:.1f} MiB"
    assert all(Path(ROOT / k).is_file() for k in device_tree.KEEP)


def test_every_fixed_comparison_of_the_axis_finds_its_checkpoint_on_the_device():
    from minilab.experiments import grid

    for claim in compute_axis.CLAIMS:
        for name in claim.comparison:
            m = grid.method(name)
            if name not in compute_axis.RUNS and m.checkpoint:
                rel = Path(m.checkpoint("laptop")).resolve().relative_to(ROOT).as_posix()
                assert rel in device_tree.KEEP, f"{name} reads {rel}, which `hide` leaves behind"


def test_one_worker_per_runs_and_task():
    config = compute_axis.ComputeAxisConfig()
    assert gpu_compute_axis.workers(config) == [("gpt_vs_scratch", "trec"), ("gpt_vs_scratch", "rt"),
                                                ("gpt_vs_scratch", "pos"), ("gpt_vs_scratch", "sms"),
                                                ("mlm_vs_ltr", "pos")]
    args = gpu_compute_axis.pretrain_args(compute_axis.RUNS["bert-ltr"], "laptop", 2)
    assert args == ["pretrain", "bert", "--profile", "laptop", "--objective", "ltr", "--budget", "8", "--threads", "2"]


@pytest.mark.data
@pytest.mark.slow   # the whole GPU call rehearsed on the CPU: pretrains and fine-tunes at smoke, minutes
def test_rehearsal_brings_back_the_summary_points_and_checkpoints(tmp_path):
    if not (gpu_compute_axis.PACK_DIR / "data.tar.xz").is_file():
        assert gpu_compute_axis.pack() == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_compute_axis.py"), "--dry", "--total", "150",
                           "--copy-to", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(list(out.iterdir())) <= 8                                   # what a call may bring back
    with tarfile.open(out / gpu_compute_axis.TARBALL) as tar:
        names = tar.getnames()
        summary = json.load(tar.extractfile("results/compute-axis-smoke.json"))
    assert any(n.startswith("results/compute-axis/gpt/") for n in names)
    assert any(n.startswith("logs/pretrain-bert-mlm") for n in names)
    line = next(c for c in summary["claims"] if c["claim"] == "gpt_vs_scratch" and c["task"] == "trec")
    assert len(line["series"]) >= 1, proc.stdout[-3000:]
    assert summary["provenance"]["commit"]


def test_compute_axis_tasks_option_narrows_the_claims_and_names_a_bad_task_in_one_line():
    env = {**os.environ, "MINILIB_PROFILE": "smoke"}
    bad = subprocess.run([sys.executable, "-m", "minilib", "experiment", "compute-axis", "--tasks", "imdb",
                          "--dry-run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "'imdb'" in bad.stderr
    config = compute_axis.ComputeAxisConfig(tasks=("pos",))
    assert [c.name for c in config.claims_run()] == ["gpt_vs_scratch", "mlm_vs_ltr"]
    assert config.tasks_of(compute_axis.CLAIMS[0]) == ("pos",)


def test_compute_axis_on_a_machine_without_the_snapshots_keeps_the_summary_byte_identical(tmp_path, monkeypatch):
    monkeypatch.setenv("MINILIB_PROFILE", "laptop")
    summary = tmp_path / "compute-axis-laptop.json"
    shutil.copyfile(ROOT / "results" / "compute-axis-laptop.json", summary)
    before = summary.read_bytes()
    result = compute_axis.run("laptop", snapshots_root=tmp_path / "none", cache_dir=tmp_path / "cache", out=summary,
                              train=True, log=None)
    assert summary.read_bytes() == before                                  # reading never rewrites it
    assert len(result["marks"]) == len(json.loads(before)["marks"])       # no mark dropped, none retrained
    assert not (tmp_path / "cache").exists()


def test_a_command_stops_before_training_past_its_budget_and_says_fill(tmp_path, monkeypatch):
    from minilab.experiments import grid
    from minilib.runtime import UsageError

    monkeypatch.setenv("MINILIB_PROFILE", "laptop")
    with grid.cost_guard(1.0):
        with pytest.raises(UsageError, match="--fill"):
            grid.run_point("trec", 100, "gpt", 99, results_dir=tmp_path)      # a timed method: ~minutes a point
        with pytest.raises(UsageError, match=r"6 uncached points, about 2\.0 h.*--fill"):
            grid.check_cost(7200, 6)
    assert not list(tmp_path.iterdir())                                    # nothing trained, nothing written
    with grid.cost_guard(None):
        grid.check_cost(7200, 6)                                           # --fill: no limit
    grid.check_cost(7200, 6)                                               # no guard outside the command line
