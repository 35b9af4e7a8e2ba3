"""Chapter 08's compute accounting: N counts what C ≈ 6·N·D says, D is read from each kind's provenance,
fine-tuning counts the examples the runner really reads, and the papers' typed shapes agree with their counts."""
import json

import pytest

from minilab.experiments import compute, grid
from minilib.models.awd_lstm import AWDLSTM, AWDLSTMConfig
from minilib.models.bert import BERT, bert_config
from minilib.models.gpt import GPT, gpt_config


def test_gpt_non_embedding_params_leave_out_token_and_position_tables_only():
    model = GPT(gpt_config(500, "smoke"))
    total = sum(p.numel() for p in model.parameters())   # the tied head is the token table: counted once
    expected = total - model.tok_emb.weight.numel() - model.pos_emb.weight.numel()
    assert compute.non_embedding_params(model, 500) == expected
    L, d = model.cfg.n_layer, model.cfg.n_embd
    assert 12 * L * d * d <= expected < 12 * L * d * d * 1.1, "Kaplan's 12·L·d² plus biases and norms"


def test_bert_leaves_out_segments_and_the_mlm_decoders_vocabulary_bias():
    model = BERT(bert_config(300, "smoke"))
    n = compute.non_embedding_params(model, 300)
    left_out = ("tok_emb.weight", "pos_emb.weight", "seg_emb.weight", "mlm.decoder.bias")
    params = dict(model.named_parameters())
    assert n == sum(p.numel() for p in params.values()) - sum(params[k].numel() for k in left_out)


def test_awd_lstm_counts_its_lstms_not_its_tied_decoder_or_decoder_bias():
    cfg = AWDLSTMConfig(vocab_size=400, emb_size=16, hidden_size=32, n_layers=2)
    model = AWDLSTM(cfg)
    lstm = sum(p.numel() for name, p in model.named_parameters() if ".lstm." in name)
    assert compute.non_embedding_params(model, 400) == lstm


@pytest.mark.parametrize("meta, tokens", [
    ({"metrics": {"train_tokens_seen": 8_192_000}}, 8_192_000),                              # gpt, bert
    ({"metrics": {"train_tokens": 3_440_640}, "config": {"epochs": 2}}, 6_881_280),          # elmo
    ({"data": {"train_tokens": 4_680_540}, "sizes": {"epochs": 1}}, 4_680_540),              # awd-lstm
])
def test_pretraining_tokens_from_each_kinds_provenance(meta, tokens):
    assert compute.pretraining_tokens(meta) == tokens


def test_a_provenance_without_tokens_is_refused():
    with pytest.raises(ValueError, match="no training tokens"):
        compute.pretraining_tokens({"checkpoint": "x.pt", "metrics": {}})


def test_examples_seen_repeat_small_samples_as_the_runner_does():
    assert grid.repeats_per_epoch(100, 32, 20) == 7       # 640 examples an epoch need 7 passes over 100
    assert compute.examples_seen(100, 10, 32, 20) == 7_000
    assert compute.examples_seen(1_000, 10, 32, 20) == 10_000
    assert compute.examples_seen(5_452, 3, 32, 20) == 3 * 5_452


def test_gpt3s_shape_and_tokens_reproduce_its_own_flop_count():
    gpt3 = next(p for p in compute.PAPERS if p.name.startswith("GPT-3"))
    assert gpt3.flops == pytest.approx(gpt3.reported_flops, rel=0.01)
    bert = next(p for p in compute.PAPERS if p.name == "BERT-base")
    assert bert.params == pytest.approx(85e6, rel=0.01)        # 110M total less its 30k × 768 embeddings
    # §A.2: 1M steps of 256 sequences, 90 % at length 128 and 10 % at 512 — not 1M × 128,000 tokens
    assert bert.tokens == pytest.approx(4.26e10, rel=0.01) and bert.flops == pytest.approx(2.17e19, rel=0.01)


def test_every_paper_mark_on_the_compute_axis_is_the_ledgers():
    from minilab.experiments import compute_axis

    for mark in compute_axis.PAPER_MARKS.values():
        assert mark in compute.PAPERS


def test_run_on_the_shipped_gpt(tmp_path):
    from minilab import shipped

    default = shipped.checkpoint("gpt", "laptop")          # the recipe run or its branch, whichever ships
    if not default.is_file():
        pytest.skip("no shipped GPT")
    result = compute.run("laptop", write=False, log=None)
    gpt = result["pretraining"]["gpt"]
    tokens = json.loads(default.with_suffix(".json").read_text())["metrics"]["train_tokens_seen"]
    assert gpt["tokens"] == tokens and gpt["flops"] == 6 * gpt["params"] * gpt["tokens"]
    rows = {(r["task"], r["labels"]): r for r in result["fine_tuning"]["gpt"]}
    assert rows["trec", 100]["flops"] < rows["trec", 1000]["flops"] < rows["trec", "all"]["flops"] < gpt["flops"]
    line = compute.summary_line(result)
    assert line.startswith("compute: ") and "gpt_pretrain_flops=" in line and "gpt-3_over_gpt=" in line
