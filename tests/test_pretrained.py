"""The one checkpoint format (minilib/models/pretrained.py): every kind round-trips, a checkpoint of
another kind or another program is refused, and every shipped checkpoint re-measures its number."""
import math

import pytest
import torch

from minilab import provenance
from minilib.data.vocab import Vocab
from minilib.models.awd_lstm import AWDLSTM, AWDLSTMConfig
from minilib.models.pretrained import KINDS, CheckpointError, load_pretrained, save_pretrained, sidecar

CHECKPOINTS = provenance.REPO_ROOT / "checkpoints"


def tiny_awd():
    torch.manual_seed(0)
    return AWDLSTM(AWDLSTMConfig(vocab_size=12, emb_size=4, hidden_size=6, n_layers=2))


def test_round_trip_stores_half_precision_and_ties_once(tmp_path):
    model, vocab = tiny_awd(), Vocab.build([list("abcdefghij")])
    save_pretrained(tmp_path / "m.pt", model, vocab, {"note": "x"})
    raw = torch.load(tmp_path / "m.pt", weights_only=True)
    assert raw["model"] == "awd-lstm" and "decoder.weight" not in raw["state"]
    assert all(v.dtype == torch.float16 for v in raw["state"].values() if v.is_floating_point())
    loaded, v2, meta = load_pretrained(tmp_path / "m.pt")
    assert type(loaded) is AWDLSTM and loaded.decoder.weight is loaded.encoder.embedding.weight
    assert v2.itos == vocab.itos and meta["note"] == "x" and sidecar(tmp_path / "m.pt").exists()
    for k, v in model.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[k], v.half().float())


def test_refuses_other_files(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a minilib checkpoint"):
        load_pretrained(tmp_path / "junk.pt")
    torch.save({"format": "something-else"}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="not a minilib checkpoint"):
        load_pretrained(tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="pretrain awd-lstm"):
        load_pretrained(tmp_path / "missing.pt", "awd-lstm")


def test_every_shipped_checkpoint_is_in_the_one_format():
    shipped = sorted(CHECKPOINTS.glob("*.pt"))
    assert shipped, "no shipped checkpoints"
    for path in shipped:
        raw = torch.load(path, map_location="cpu", weights_only=True)   # weights_only: plain tensors and JSON types
        assert raw["format"] == "minilib-pretrained-v1" and raw["model"] in KINDS, path
        assert sidecar(path).exists(), f"{path.name} has no provenance JSON beside it"


@pytest.mark.data
@pytest.mark.slow
def test_shipped_elmo_remeasures_its_perplexity(one_thread):
    """The biLM's published validation perplexity (measured on its fp32 weights before the fp16 save)
    is re-measured from the shipped fp16 checkpoint on the same valid text (its sha256 is checked)."""
    from minilib import data
    from minilib.data.batching import ELMoBatches
    from minilib.data.corpora import documents_fingerprint
    from minilib.train import Learner

    model, vocab, meta = load_pretrained(CHECKPOINTS / "elmo-laptop.pt", "elmo")
    seen = meta["data"]["valid"]
    docs = data.pretraining_corpus("valid", max_words=seen["words"])
    assert documents_fingerprint(docs)["sha256"] == seen["sha256"]
    valid = ELMoBatches(docs, vocab, model.cfg.batch_size, model.cfg.window, model.cfg.max_chars, shuffle=False)
    result = Learner(model, valid, None, device="cpu", progress=False).evaluate(valid)
    assert math.exp(result["fwd_nll"]) == pytest.approx(meta["metrics"]["valid_fwd_ppl"], rel=0.005)
    assert math.exp(result["bwd_nll"]) == pytest.approx(meta["metrics"]["valid_bwd_ppl"], rel=0.005)
