"""A contributor's first `pytest`: every test module collects from the repository root."""
from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_name():
    """tests/ has no __init__.py files, so pytest imports each test file by its bare name ("rootdir-relative
    basename"): two files of one name stop the whole collection with "import file mismatch"."""
    names = Counter(p.name for p in (ROOT / "tests").rglob("test_*.py"))
    assert not [name for name, n in names.items() if n > 1], names.most_common(3)


@pytest.mark.slow
def test_plain_pytest_collects_every_test_without_error():
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "", "-p", "no:cacheprovider"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "error" not in out.stdout.splitlines()[-1], out.stdout.splitlines()[-1]

