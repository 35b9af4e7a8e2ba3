"""Chapter 05's experiment: LSTM vs Transformer, time per token by length and bits per byte at equal time."""
import json
import math

import numpy as np
import pytest
import torch
from torch import nn

from minilab.cli import main
from minilab.experiments import parallelism as par
from minilib.models.transformer import IGNORE_INDEX


class ByteTokenizer:
    """One id per UTF-8 byte, 256 = end of text: a tokenizer whose byte count is its token count."""
    kind, eos_id, vocab_size = "bytes", 256, 257

    def encode(self, text):
        return list(text.encode("utf-8"))


class UniformLM(nn.Module):
    """Predicts every one of `vocab_size` ids with probability 1 / V: ln V nats per target."""

    def __init__(self, vocab_size):
        super().__init__()
        self.vocab_size = vocab_size
        self.dummy = nn.Parameter(torch.zeros(1))

    def run(self, x, state=None):
        return torch.zeros(*x.shape, self.vocab_size) + 0 * self.dummy, state


def test_encode_stream_separates_documents_and_counts_utf8_bytes():
    ids, n_bytes = par.encode_stream(ByteTokenizer(), ["ab", "é"])      # "é" is two bytes
    assert ids.tolist() == [256, 97, 98, 256, 0xC3, 0xA9, 256]
    assert n_bytes == 4


def test_bits_per_byte_of_a_uniform_model_is_known():
    texts = ["hello world", "naïve café", "x"]
    ids, n_bytes = par.encode_stream(ByteTokenizer(), texts)
    x, y = par.eval_blocks(ids, block=4)
    nats, count = par.total_nats(UniformLM(257), x, y, batch_size=2)
    # every byte and every document's end is predicted once, each at ln 257 nats
    assert count == n_bytes + len(texts) == len(ids) - 1
    assert nats == pytest.approx(count * math.log(257), rel=1e-6)
    assert par.bits_per_byte(nats, n_bytes) == pytest.approx((n_bytes + 3) / n_bytes * math.log2(257), rel=1e-6)
    # a model sure of nothing over 256 byte values pays exactly 8 bits a byte
    assert par.bits_per_byte(n_bytes * math.log(256), n_bytes) == pytest.approx(8.0)
    with pytest.raises(ValueError, match="at least one byte"):
        par.bits_per_byte(1.0, 0)


def test_eval_blocks_predict_every_id_after_the_first_once():
    ids = np.arange(10)
    x, y = par.eval_blocks(ids, block=4, pad_id=0)
    assert x.shape == y.shape == (3, 4)
    targets = y[y != IGNORE_INDEX]
    assert targets.tolist() == list(range(1, 10))
    assert x.flatten()[:9].tolist() == list(range(9))                 # each target's input is the id before it


@pytest.mark.parametrize("profile, vocab_size", [("smoke", 2_000), ("laptop", 8_000), ("full", 8_000)])
def test_the_two_models_have_the_same_parameter_count_within_5_percent(profile, vocab_size):
    counts = par.param_counts(par.build_models(par.SIZES[profile], vocab_size))
    assert abs(counts["ratio_total"] - 1) < 0.05
    # and not only thanks to the shared embedding: the sequence layers match too
    body = counts["lstm"]["without_token_embedding"] / counts["transformer"]["without_token_embedding"]
    assert abs(body - 1) < 0.10


def test_timing_reports_a_median_per_model_and_length(one_thread):
    cfg = par.ParallelismConfig(n_embd=16, n_head=2, lengths=(8, 32), tokens_per_step=64, repeats=3)
    torch.manual_seed(0)
    models = par.build_models(cfg, vocab_size=50)
    out = par.time_per_token(models, np.random.default_rng(0).integers(0, 50, 200), cfg, torch.device("cpu"),
                             log=lambda *_: None)
    assert [r["length"] for r in out["rows"]] == [8, 32] and [r["batch"] for r in out["rows"]] == [8, 2]
    for r in out["rows"]:
        assert len(r["runs_s"]["lstm"]) == len(r["runs_s"]["transformer"]) == 3
        assert r["ratio"] == pytest.approx(np.median(r["runs_s"]["lstm"]) / np.median(r["runs_s"]["transformer"]))
        assert r["lstm_us_per_token"] == pytest.approx(1e6 * np.median(r["runs_s"]["lstm"]) / 64)
    with pytest.raises(ValueError, match="multiple of every length"):
        par.time_per_token(models, np.zeros(200, dtype=np.int64),
                           par.ParallelismConfig(n_embd=16, lengths=(24,), tokens_per_step=64), torch.device("cpu"))


def test_cli_refuses_a_bad_budget_with_exit_status_2(capsys):
    assert main(["experiment", "parallelism", "--profile", "smoke", "--budget", "-1"]) == 2
    assert "--budget must be a positive number" in capsys.readouterr().err


@pytest.mark.data
@pytest.mark.slow            # an end-to-end run of real training: make test, not test-fast
def test_smoke_experiment_runs_and_writes_a_stamped_result(tmp_path, one_thread):
    out = tmp_path / "parallelism-smoke.json"
    res = par.run_parallelism("smoke", out=out, log=lambda *_: None)
    saved = json.loads(out.read_text())
    assert saved["provenance"]["commit"] and saved["provenance"]["seed"] == 0
    assert [r["length"] for r in saved["timing"]["rows"]] == list(par.SIZES["smoke"].lengths)
    assert abs(saved["params"]["ratio_total"] - 1) < 0.05
    for name in par.MODELS:
        curve = saved["equal_compute"]["curves"][name]
        assert len(curve) == par.SIZES["smoke"].slices + 1
        assert curve[0]["seconds"] == 0 and curve[-1]["seconds"] >= par.SIZES["smoke"].budget_s
        assert curve[-1]["valid_bpb"] < curve[0]["valid_bpb"]                 # training lowers the loss
    # an untrained model's first score is near uniform over the vocabulary: log2(V) bits per token
    first = saved["equal_compute"]["curves"]["transformer"][0]
    assert first["valid_nats_per_token"] == pytest.approx(math.log(saved["tokenizer"]["vocab_size"]), rel=0.05)
    assert par.summary_line(res).startswith("parallelism: ratio_16=")
