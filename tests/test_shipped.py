"""Which run each model ships (minilab/shipped.py): a model that has moved is fine-tuned from its 5x branch by
every method but its -scratch control, the flywheel and the zero-shot study, which keep the recipe run; a branch
shares its recipe run's tokenizer and shape (so the controls' points hold), and beats it on held-out loss."""
import json

import pytest
import torch

from minilab.experiments import bert_finetune, compute, flywheel, gpt_finetune, grid
from minilab import shipped

PAIRS = [(name, p) for name in ("gpt", "bert", "bert-mlm", "bert-ltr") for p in ("laptop",)]


def test_a_model_that_has_moved_is_fine_tuned_from_its_branch(monkeypatch):
    monkeypatch.setitem(shipped.BRANCHES, "laptop", ("gpt", "bert"))
    ckpt = lambda method: grid.method(method).checkpoint("laptop").name
    assert ckpt("gpt") == ckpt("gpt-no-aux") == ckpt("gpt-tapt") == "gpt-laptop-5x.pt"
    assert ckpt("gpt-scratch") == flywheel.default_checkpoint("laptop").name == "gpt-laptop.pt"
    assert gpt_finetune.default_checkpoint("smoke").name == "gpt-laptop-5x.pt"        # smoke reads laptop's
    assert ckpt("bert") == ckpt("bert-tapt") == "bert-laptop-5x.pt"
    assert ckpt("bert-scratch") == "bert-laptop.pt" and ckpt("bert-mlm") == "bert-mlm-laptop.pt"   # not moved
    assert bert_finetune.default_checkpoint("bert", "laptop", (2, 128)).name == "bert-laptop-2x128.pt"
    monkeypatch.setitem(shipped.BRANCHES, "laptop", ())
    assert ckpt("gpt") == "gpt-laptop.pt" and ckpt("bert") == "bert-laptop.pt"


def test_the_compute_table_reads_the_branch_once_gpt_has_moved(monkeypatch, tmp_path):
    """experiments/compute counts the shipped GPT's tokens: the branch's once it has moved (lm-quality reads the
    same shipped.checkpoint)."""
    branch = shipped.branch("gpt", "laptop")
    if not branch.is_file():
        pytest.skip(f"{branch.name}: not shipped yet")
    for suffix in (".pt", ".json"):
        (tmp_path / branch.with_suffix(suffix).name).symlink_to(branch.with_suffix(suffix))
    monkeypatch.setattr(compute, "CHECKPOINTS", tmp_path)
    monkeypatch.setitem(shipped.BRANCHES, "laptop", ())
    assert "gpt" not in compute.shipped_models("laptop")                  # the recipe run is not in tmp_path
    monkeypatch.setitem(shipped.BRANCHES, "laptop", ("gpt",))
    tokens = json.loads(branch.with_suffix(".json").read_text())["metrics"]["train_tokens_seen"]
    assert compute.shipped_models("laptop")["gpt"]["tokens"] == tokens


@pytest.mark.parametrize("name,profile", PAIRS)
def test_a_branch_shares_its_recipe_runs_tokenizer_and_shape(name, profile):
    """The -scratch controls read the recipe run's tokenizer and shape whichever model ships: the same as the
    branch's, or their points would not be the branch's control."""
    recipe, branch = shipped.recipe(name, profile), shipped.branch(name, profile)
    if not branch.is_file():
        pytest.skip(f"{branch.name}: not shipped yet")
    a, b = (torch.load(p, map_location="cpu", weights_only=True, mmap=True) for p in (recipe, branch))
    assert a["tokenizer"] == b["tokenizer"] and a["config"] == b["config"]


@pytest.mark.parametrize("profile", sorted(shipped.BRANCHES))
def test_a_model_moves_only_to_a_branch_that_beats_its_recipe_run(profile):
    for name in shipped.BRANCHES[profile]:
        recipe, branch = (json.loads(p.with_suffix(".json").read_text())["metrics"]
                          for p in (shipped.recipe(name, profile), shipped.branch(name, profile)))
        assert branch["valid_nats_per_token"] < recipe["valid_nats_per_token"], name
        assert branch["train_tokens_seen"] > recipe["train_tokens_seen"], name
