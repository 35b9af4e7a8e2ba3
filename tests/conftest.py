"""Shared test fixtures."""
import pytest
import torch


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
