"""fit inside a real Jupyter kernel: fastprogress bars, live plot, and the Stop button (KeyboardInterrupt)."""
import pytest

import nbclient   # with nbval and jupyterlab (pyproject [dev]): missing is a failure, not a skip
import nbformat

CODE = '''
import torch, torch.nn.functional as F
from torch import nn
from minilib.train import Callback, Learner
torch.manual_seed(0)
x = torch.randn(64, 4); y = (x.sum(1) > 0).long()
batches = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 64, 8)]

class Stop(Callback):  # what the Stop button does: a KeyboardInterrupt in the middle of fit
    def after_step(self, learner):
        if learner.step == 20:
            raise KeyboardInterrupt

learner = Learner(nn.Linear(4, 2), batches, batches[:2], loss_fn=F.cross_entropy, device="cpu",
                  callbacks=[Stop()], live_plot=True)
learner.fit(2, lr=1e-2, eval_every=3)
history = learner.fit(3, lr=1e-2)
print("RESULT", len(history.steps), learner.interrupted, len(history.epochs))
'''


@pytest.mark.slow
def test_fit_in_a_kernel_shows_bars_and_stops_cleanly():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CODE)])
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()  # raises if the cell raises
    outputs = nb.cells[0].outputs
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    text = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert "<table" in html and "train_loss" in html  # the epoch table the bars leave behind
    assert any("image/png" in o.get("data", {}) or "Figure" in o.get("data", {}).get("text/plain", "")
               for o in outputs)  # the live loss graph
    assert "interrupted at epoch 1, step 4" in text
    assert "RESULT 20 True 2" in text
