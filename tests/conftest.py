"""Shared test fixtures."""
import pytest
import torch

# Tests run as the lessons and the command line do, with the lab loaded: its stamper (commit, command line) is
# what the core's checkpoints carry (minilib.runtime.stamp), whichever test file a worker happens to run first.
import minilab  # noqa: E402,F401


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
