"""`python -m minilib pretrain` (minilab/cli/pretrain.py, minilab/pretrain.py): a smoke-size AWD-LSTM is
pretrained into a temporary folder, reloaded, and its validation perplexity re-measured to match its JSON."""
import json

import numpy as np
import pytest
import torch

from minilab import pretrain
from minilab.cli import main
from minilab.cli.pretrain import PRETRAINERS
from minilib.eval.perplexity import evaluate_lm
from minilib.models.pretrained import CheckpointError, load_pretrained
from minilib.recipes.awd_lstm import corpus_ids


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


ARGS = ["pretrain", "awd-lstm", "--profile", "smoke", "--words", "20000", "--vocab-size", "1500",
        "--epochs", "1", "--batch-size", "8", "--bptt", "20", "--max-steps", "12", "--valid-words", "4000",
        "--emb-size", "16", "--hidden-size", "24", "--progress", "off"]


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pretrain")
    out = folder / "awd-smoke.pt"
    assert main([*ARGS, "--out", str(out), "--checkpoint-dir", str(folder / "train")]) == 0
    return out, folder


@pytest.mark.data
def test_checkpoint_is_half_precision_with_vocab_config_and_provenance(pretrained):
    out, _ = pretrained
    state = torch.load(out, map_location="cpu", weights_only=True)
    assert all(v.dtype == torch.float16 for v in state["state"].values() if v.is_floating_point())
    assert "decoder.weight" not in state["state"]  # tied: stored once
    assert state["config"]["emb_size"] == 16 and len(state["vocab"]["itos"]) == 1500
    meta = json.loads(out.with_suffix(".json").read_text())
    for key in ("command", "commit", "device", "time", "valid_perplexity", "data", "config", "tokens_per_s"):
        assert key in meta, key
    assert meta["command"].startswith("python -m minilib pretrain awd-lstm")
    assert len(meta["data"]["train_ids_sha256"]) == 64 and "brown" in meta["data"]["sources"]
    assert 1 < meta["valid_perplexity"] < 1500 * 1.5  # a few steps: near uniform, but finite
    assert out.stat().st_size < 15e6


@pytest.mark.data
def test_reload_remeasures_the_same_validation_perplexity(pretrained):
    out, _ = pretrained
    model, vocab, meta = load_pretrained(out, "awd-lstm")
    assert model.decoder.weight is model.encoder.embedding.weight and not model.training
    valid_ids = corpus_ids("valid", vocab, meta["eval"]["max_words"])
    import hashlib
    assert hashlib.sha256(valid_ids.tobytes()).hexdigest() == meta["valid_ids_sha256"]
    ce = evaluate_lm(model, valid_ids, meta["eval"]["batch_size"], meta["eval"]["bptt"])
    assert np.exp(ce) == pytest.approx(json.loads(out.with_suffix(".json").read_text())["valid_perplexity"], rel=1e-5)


@pytest.mark.data
def test_rerun_resumes_the_finished_training(pretrained, capsys):
    out, folder = pretrained
    first = json.loads(out.with_suffix(".json").read_text())
    again = folder / "again.pt"
    assert main([*ARGS, "--out", str(again), "--checkpoint-dir", str(folder / "train")]) == 0
    assert "already trained" in capsys.readouterr().out
    assert json.loads(again.with_suffix(".json").read_text())["valid_perplexity"] == pytest.approx(
        first["valid_perplexity"], rel=1e-6)


def test_registry_and_errors(tmp_path):
    assert "awd-lstm" in PRETRAINERS
    with pytest.raises(CheckpointError, match="pretrain awd-lstm"):
        load_pretrained(tmp_path / "missing.pt", "awd-lstm")
    with pytest.raises(SystemExit):
        main(["pretrain", "no-such-model"])


SHIPPED = sorted((pretrain.provenance.REPO_ROOT / "checkpoints").glob("awd-lstm-*.pt"))


@pytest.mark.skipif(not SHIPPED, reason="no shipped AWD-LSTM checkpoint in checkpoints/ yet")
@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
@pytest.mark.data
@pytest.mark.slow
def test_shipped_checkpoint_remeasures_its_perplexity(path):
    """docs/design.md §5: every shipped checkpoint is reloaded and its validation metric re-measured."""
    model, vocab, meta = load_pretrained(path, "awd-lstm")
    assert path.stat().st_size <= 15e6
    valid_ids = corpus_ids("valid", vocab, meta["eval"]["max_words"])
    ce = evaluate_lm(model, valid_ids, meta["eval"]["batch_size"], meta["eval"]["bptt"])
    assert np.exp(ce) == pytest.approx(meta["valid_perplexity"], rel=1e-4)


def test_the_command_a_run_records_names_no_machine_path():
    """A branch started from another checkout's kept snapshot records it as checkpoints/..., as results do."""
    from argparse import Namespace
    from pathlib import Path

    from minilab.pretrain import _command_line

    args = Namespace(model="bert", objective="mlm", budget=5.0, threads=1, out=None, progress=False,
                     warm_start=Path("/work/runs/checkpoints/compute-axis/bert-mlm-laptop-8x-latest.pt"))
    assert _command_line(args) == ("python -m minilib pretrain bert --objective mlm --budget 5.0 --threads 1 "
                                   "--warm-start checkpoints/compute-axis/bert-mlm-laptop-8x-latest.pt")
