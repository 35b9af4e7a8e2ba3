"""`python -m minilib` started as a shell's background job (SIGINT ignored) still ends a training run as Ctrl-C
does on `kill -INT` and on `kill` (SIGTERM): exit 130, its state saved unfinished, and the same command resumes."""
import signal
import subprocess
import sys

import pytest
import torch

from minilab import provenance
from test_pretrain_corpus import prose


@pytest.mark.data            # a corpus run's leak guard reads the RT and TREC test items
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_background_run_saves_its_state_on_a_signal_and_resumes(signum, tmp_path):
    corpus = tmp_path / "book.txt"
    corpus.write_text(prose(200))
    argv = [sys.executable, "-m", "minilib", "pretrain", "gpt", "--profile", "smoke", "--threads", "1",
            "--progress", "off", "--budget", "8", "--corpus", str(corpus), "--out", str(tmp_path / "gpt.pt"),
            "--checkpoint-dir", str(tmp_path / "state")]
    ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)   # as `cmd &` in a script starts it
    proc = subprocess.Popen(argv, cwd=provenance.REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=ignore_sigint)
    lines = []
    for line in proc.stdout:                 # wait until it has trained a few steps
        lines.append(line)
        if line.startswith("step 10:"):
            break
    else:
        pytest.fail("the run ended before step 10: " + "".join(lines) + proc.stderr.read())
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "interrupted" in err
    state = torch.load(tmp_path / "state" / "fit-0.pt", weights_only=False)
    assert state["fit"]["finished"] is False and state["fit"]["position"][1] >= 10
    assert not (tmp_path / "gpt.pt").exists()                       # no final checkpoint for a paused run
    again = subprocess.run(argv + ["--max-steps", "12"], cwd=provenance.REPO_ROOT, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resuming from" in again.stdout, again.stdout[-2000:]
