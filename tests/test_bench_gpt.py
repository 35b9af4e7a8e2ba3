"""`python -m minilib bench gpt`: minilib's TransformerLM vs Hugging Face GPT-2, same weights, data and AdamW."""
import pytest
import torch

transformers = pytest.importorskip("transformers")

from minilib.bench.gpt import copy_into_gpt2  # noqa: E402
from minilib.models.transformer import TransformerConfig, TransformerLM  # noqa: E402


def test_copied_weights_give_hf_the_same_logits_and_loss():
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=101, block_size=16, n_layer=2, n_head=2, n_embd=32, dropout=0.0)
    ours = TransformerLM(cfg).eval()
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=101, n_positions=16, n_embd=32, n_layer=2, n_head=2, activation_function="gelu_new",
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=1e-5, bos_token_id=0,
        eos_token_id=0)).eval()
    copy_into_gpt2(ours, hf)
    x, y = torch.randint(0, 101, (3, 16)), torch.randint(0, 101, (3, 16))
    with torch.no_grad():
        torch.testing.assert_close(hf(input_ids=x).logits, ours(x)[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(hf(input_ids=x, labels=x, shift_labels=y).loss, ours(x, y)[1],
                                   atol=1e-5, rtol=1e-5)


@pytest.mark.data
def test_bench_runs_and_both_losses_agree(capsys):
    from minilib.__main__ import main

    assert main(["bench", "gpt", "--layers", "2", "--width", "32", "--heads", "2", "--context", "16",
                 "--batch", "4", "--vocab-size", "500", "--steps", "4", "--warmup", "1", "--threads", "1"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("gpt: ")
    values = dict(item.split("=") for item in last.removeprefix("gpt: ").split())
    assert list(values) == ["minilib_tok_per_s", "hf_tok_per_s", "speed_ratio", "loss_minilib", "loss_hf", "mfu"]
    a, b = float(values["loss_minilib"]), float(values["loss_hf"])
    assert abs(a - b) / b < 0.01, (a, b)  # same weights, data and optimizer: the same training
    assert a < 6.2  # 5 AdamW steps from ln(500) = 6.21: training moved


def test_bench_refuses_a_width_that_heads_do_not_divide(capsys):
    from minilib.__main__ import main

    assert main(["bench", "gpt", "--width", "30", "--heads", "4"]) == 2
    assert "multiple of --heads" in capsys.readouterr().err
