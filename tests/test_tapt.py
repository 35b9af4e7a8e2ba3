"""The in-domain stage (experiments/tapt.py): the adapted checkpoint moves the pretrained weights, is built once
per (checkpoint, task, settings) and reused, and gpt-tapt / bert-tapt carry its settings in the grid's key."""
import pytest
import torch

from minilib import tasks
from minilab.experiments import grid, tapt
from minilab.experiments.gpt_finetune import default_checkpoint
from minilib.models.pretrained import load_pretrained


@pytest.mark.data
@pytest.mark.slow            # an end-to-end run of real training: make test, not test-fast
def test_adapted_checkpoint_moves_the_weights_once_per_task(tmp_path, monkeypatch, one_thread):
    import minilib.recipes.gpt as recipe

    monkeypatch.setattr(tapt, "CACHE_DIR", tmp_path)
    calls = []
    adapt = recipe.adapt_lm
    monkeypatch.setattr(recipe, "adapt_lm", lambda *a, **k: calls.append(1) or adapt(*a, **k))
    base = default_checkpoint("laptop")
    task = tasks.get("trec")
    settings = {"steps": 2, "lr": 2.5e-4}
    out = tapt.adapted_checkpoint(task, base, settings)
    assert tapt.adapted_checkpoint(task, base, settings) == out and calls == [1]        # cached, not retrained
    before, after = load_pretrained(base, "gpt").model, load_pretrained(out, "gpt").model
    moved = [not torch.equal(a, b) for a, b in zip(before.state_dict().values(), after.state_dict().values())]
    assert any(moved) and load_pretrained(out).meta["task"] == "trec"
    assert tapt.adapted_checkpoint(task, base, {"steps": 3, "lr": 2.5e-4}) != out           # settings in the key
    assert tapt.task_text(tasks.get("pos"))[0] == " ".join(tasks.get("pos").train.texts[0])   # no lm_text: train


def test_tapt_methods_carry_their_stage_in_the_key():
    for name, base in (("gpt-tapt", "gpt"), ("bert-tapt", "bert")):
        settings = grid.method(name).settings("laptop")
        assert settings.pop("tapt") == tapt.SETTINGS["laptop"]
        assert settings == grid.method(base).settings("laptop")     # otherwise fine-tuned exactly as the base
        assert "tapt" not in grid.method(base).settings("laptop")
