"""Shared test fixtures."""
import os

import pytest
import torch

# Tests run as the lessons and the command line do, with the lab loaded: its stamper (commit, command line) is
# what the core's checkpoints carry (minilib.runtime.stamp), whichever test file a worker happens to run first.
import minilab  # noqa: F401

# Under pytest-xdist (`make test` runs `-n 2`: one worker per core) each worker is one process on one core:
# torch's default of a thread per core would put 2 workers x 2 OpenMP threads on 2 cores, which stall each
# other (the `one_thread` fixture's measure). Each worker, the subprocesses its tests start and the kernels
# nbval starts for the lessons use one thread. PYTEST_XDIST_WORKER is set in a worker before conftest loads.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

# Lesson 01 writes results/static-vectors-smoke.json (git-ignored) at the smoke profile. Under `make test` (-n 2,
# --dist loadfile) it may run beside a test that snapshots results/ to check that reading never writes: such tests
# leave this one file out of their snapshot, since the other worker's lesson, not their read, wrote it.
WRITTEN_BY_LESSONS = ("static-vectors-smoke.json",)


@pytest.fixture(scope="session", autouse=True)
def smoke_profile():
    """Every test runs at the `smoke` profile (minilib.runtime reads $MINILIB_PROFILE), whatever the
    shell or the machine would pick: `pytest` on a contributor's laptop sizes the models as CI does.

    A test that means another profile says so itself, `monkeypatch.setenv("MINILIB_PROFILE", "laptop")`
    (or `--profile laptop` on a command line); monkeypatch puts `smoke` back after it. Subprocesses a
    test starts inherit `smoke` too.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MINILIB_PROFILE", "smoke")
        yield "smoke"


@pytest.fixture
def one_thread():
    """Run a test on one torch thread.

    Small LSTMs gain nothing from a second thread, and on a busy 2-core machine
    two OpenMP threads stall each other (measured 2-20x slower than one).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
