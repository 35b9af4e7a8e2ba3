"""Runtime: profiles, device choice, seeding, provenance stamps and atomic writes."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from minilib import runtime
from minilab import provenance


def test_profile_default_depends_on_cuda(monkeypatch):
    monkeypatch.delenv("MINILIB_PROFILE", raising=False)
    expected = "full" if torch.cuda.is_available() else "laptop"
    assert runtime.profile() == expected


@pytest.mark.parametrize("name", runtime.PROFILES)
def test_profile_from_env(monkeypatch, name):
    monkeypatch.setenv("MINILIB_PROFILE", name.upper())  # case does not matter
    assert runtime.profile() == name


def test_unknown_profile_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("MINILIB_PROFILE", "huge")
    with pytest.raises(runtime.ProfileError) as err:
        runtime.profile()
    message = str(err.value)
    assert "'huge'" in message
    for valid in runtime.PROFILES:
        assert valid in message
    assert "MINILIB_PROFILE=" in message


def test_unknown_profile_fails_the_cli_with_the_message():
    env = dict(os.environ, MINILIB_PROFILE="huge")
    code = "from minilib import runtime; runtime.profile()"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "Valid profiles" in run.stderr


def test_pick_uses_the_profile(monkeypatch):
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    assert runtime.pick({"smoke": 1, "laptop": 2, "full": 3}) == 1
    with pytest.raises(runtime.ProfileError, match="no sizes defined"):
        runtime.pick({"laptop": 2})


def test_device_override_and_errors(monkeypatch):
    monkeypatch.setenv("MINILIB_DEVICE", "cpu")
    assert runtime.device().type == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        runtime.device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA"):
            runtime.device("cuda")


def test_seed_everything_repeats():
    runtime.seed_everything(7)
    a = (torch.rand(3), np.random.rand(3))
    runtime.seed_everything(7)
    b = (torch.rand(3), np.random.rand(3))
    assert torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_autocast_is_off_on_cpu_by_default(monkeypatch):
    monkeypatch.delenv("MINILIB_CPU_BF16", raising=False)
    with runtime.autocast("cpu"):
        y = torch.nn.Linear(4, 4)(torch.randn(2, 4))
    assert y.dtype == torch.float32
    monkeypatch.setenv("MINILIB_CPU_BF16", "1")
    with runtime.autocast("cpu"):
        y = torch.nn.Linear(4, 4)(torch.randn(2, 4))
    assert y.dtype == torch.bfloat16


def test_stamp_has_provenance(monkeypatch):
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    s = provenance.stamp(seed=3, metric=1.5)
    for key in ("profile", "device", "commit", "seed", "torch", "time"):
        assert key in s
    assert s["profile"] == "smoke" and s["seed"] == 3 and s["metric"] == 1.5


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    provenance.write_json(target, {"v": 1})

    def broken_replace(*_):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        provenance.write_json(target, {"v": 2})
    assert json.loads(target.read_text()) == {"v": 1}
    assert list(tmp_path.iterdir()) == [target]  # no temp file left behind


def test_commit_is_dirty_for_code_changes_but_not_for_rewritten_results(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "point.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    assert not provenance.git_commit(tmp_path).endswith("-dirty")
    (tmp_path / "results" / "point.json").write_text('{"error": 0.5}')      # a run rewrote its cached point
    assert not provenance.git_commit(tmp_path).endswith("-dirty")
    (tmp_path / "code.py").write_text("x = 2\n")
    assert provenance.git_commit(tmp_path).endswith("-dirty")


def test_a_copy_without_git_names_its_commit_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("MINILIB_COMMIT", raising=False)
    assert provenance.git_commit(tmp_path) == "unknown"
    monkeypatch.setenv("MINILIB_COMMIT", "abc1234")
    assert provenance.git_commit(tmp_path) == "abc1234-copy"        # cleanliness cannot be checked in a copy
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert provenance.git_commit(tmp_path) != "abc1234-copy"         # a real checkout never takes the variable
