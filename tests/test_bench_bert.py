"""`python -m minilib bench bert`: minilib's BERT MLM step vs Hugging Face BertForMaskedLM, same weights, data, AdamW."""
import argparse

import pytest
import torch

import transformers  # a dev dependency (pyproject [dev]): missing is a failure, not a skip

from bench.bert import bench_bert, bert_arguments, copy_into_bert, hf_bert_config  # noqa: E402
from minilib.data.mlm import SpecialTokens, mask_tokens  # noqa: E402
from minilib.models.bert import BERT, BERTConfig  # noqa: E402


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    bert_arguments(p)
    return p.parse_args(list(argv))


def test_copied_weights_give_hf_the_same_logits_and_loss(one_thread):
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=101, block_size=16, n_layer=2, n_head=2, n_embd=32, dropout=0.0, objective="mlm")
    ours = BERT(cfg).eval()
    with torch.no_grad():                                                         # LayerNorms and biases off 1 and 0,
        for p in ours.parameters():                                               # so a copy left out shows
            p.add_(0.1 * torch.randn_like(p))
    hf = transformers.BertForMaskedLM(hf_bert_config(cfg)).eval()
    copy_into_bert(ours, hf)
    sp = SpecialTokens(cls_id=2, sep_id=3, pad_id=0, mask_id=4, vocab_size=101, special_ids=(0, 1, 2, 3, 4))
    ids = torch.randint(5, 101, (3, 16))
    ids[:, 0], ids[:, 7], ids[:, 12] = 2, 3, 3
    ids[2, 13:] = 0                                                               # a padded row
    segments = torch.zeros_like(ids)
    segments[:, 8:13] = 1
    mask = (ids != 0).long()
    inputs, labels = mask_tokens(ids, sp, torch.Generator().manual_seed(0))
    with torch.no_grad():
        theirs = hf(input_ids=inputs, token_type_ids=segments, attention_mask=mask, labels=labels)
        mine = ours(inputs, segments, mask, labels)
        real = mask.bool()
        torch.testing.assert_close(theirs.logits[real], ours(inputs, segments, mask).mlm_logits[real],
                                   atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(theirs.loss, mine.loss, atol=1e-5, rtol=1e-5)


def test_copy_refuses_a_model_hf_bert_cannot_be():
    cfg = BERTConfig(vocab_size=50, block_size=8, n_layer=1, n_head=2, n_embd=16, norm="pre", objective="mlm")
    with pytest.raises(ValueError, match="post-LN"):
        copy_into_bert(BERT(cfg), transformers.BertForMaskedLM(hf_bert_config(cfg)))


@pytest.mark.data
def test_bench_prints_one_line_and_both_losses_agree(capsys):
    args = parse("--layers", "2", "--width", "32", "--heads", "2", "--context", "32", "--batch", "4",
                 "--words", "20000", "--steps", "4", "--warmup", "1", "--lr", "1e-2", "--threads", "1")
    assert bench_bert(args) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("bert: ")
    values = dict(item.split("=") for item in last.removeprefix("bert: ").split())
    assert list(values) == ["minilib_tok_per_s", "hf_tok_per_s", "speed_ratio", "loss_minilib", "loss_hf"]
    a, b = float(values["loss_minilib"]), float(values["loss_hf"])
    assert abs(a - b) / b < 0.01, (a, b)          # same weights, data and optimizer: the same training
    assert a < 8.9                                # 5 steps at LR 1e-2 from ln(8,000) = 8.99: training moved
    assert all(float(values[k]) > 0 for k in ("minilib_tok_per_s", "hf_tok_per_s", "speed_ratio"))


def test_bench_refuses_a_width_that_heads_do_not_divide(capsys):
    assert bench_bert(parse("--width", "30", "--heads", "4")) == 2
    assert "multiple of --heads" in capsys.readouterr().err
