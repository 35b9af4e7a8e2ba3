"""`python -m minilib bench gpt`: minilib's TransformerLM vs Hugging Face GPT-2, same weights, data and AdamW."""
import pytest
import torch

import transformers  # a dev dependency (pyproject [dev]): missing is a failure, not a skip

from bench.gpt import copy_into_gpt2  # noqa: E402
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
    from minilab.cli import main

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
    from minilab.cli import main

    assert main(["bench", "gpt", "--width", "30", "--heads", "4"]) == 2
    assert "multiple of --heads" in capsys.readouterr().err


def test_shapes_fill_unset_sizes_and_an_explicit_option_wins():
    import argparse

    from bench.gpt import gpt_arguments, resolve_modes, resolve_shape

    p = argparse.ArgumentParser()
    gpt_arguments(p)
    args = p.parse_args(["--shape", "gpt2-small", "--batch", "8"])
    resolve_shape(args)
    assert (args.layers, args.width, args.heads, args.context, args.batch, args.vocab_size) == (12, 768, 12, 1024, 8,
                                                                                                 32768)
    assert resolve_modes(args) == ["eager", "compiled"]            # GPT-2 small: with and without torch.compile
    plain = p.parse_args([])
    resolve_shape(plain)
    assert (plain.layers, plain.width, plain.context, plain.batch) == (4, 128, 128, 32) and resolve_modes(plain) == ["eager"]
    assert resolve_modes(p.parse_args(["--compile"])) == ["compiled"]
    assert resolve_modes(p.parse_args(["--modes", "eager,fast"])) is None


def test_the_gpu_loss_path_traces_without_a_graph_break():
    """On CUDA the loss is the head GEMM (bf16 under autocast) + an fp32 F.cross_entropy, no custom autograd
    Function: torch.compile's tracer must see one graph. The same code runs on a CPU with chunked_loss=False;
    the CPU's chunked path (a custom Function with data-dependent branches) is the one that breaks."""
    from bench.gpt import graph_breaks

    torch.manual_seed(0)
    x, y = torch.randint(0, 101, (2, 16)), torch.randint(0, 101, (2, 16))
    for chunked, expected in ((False, 0), (True, None)):
        cfg = TransformerConfig(vocab_size=101, block_size=16, n_layer=2, n_head=2, n_embd=32, dropout=0.0,
                                chunked_loss=chunked)
        model = TransformerLM(cfg)
        breaks = graph_breaks(lambda a, b: model(a, b)[1], x, y)
        if expected is not None:
            assert breaks == expected
        else:
            assert breaks and breaks > 0        # the check can fail: the CPU path does break


def test_the_gpu_and_cpu_loss_paths_agree():
    from minilib.models.transformer import chunked_lm_loss, head_loss

    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=101, block_size=16, n_layer=1, n_head=2, n_embd=32, dropout=0.0)
    plain = TransformerLM(TransformerConfig(**{**cfg.__dict__, "chunked_loss": False}))
    chunked = TransformerLM(cfg)
    chunked.load_state_dict(plain.state_dict())
    x, y = torch.randint(0, 101, (3, 16)), torch.randint(0, 101, (3, 16))
    y[0, :4] = -100
    torch.testing.assert_close(plain(x, y)[1], chunked(x, y)[1], atol=1e-6, rtol=1e-6)
    h = chunked.hidden(x)
    torch.testing.assert_close(head_loss(h, chunked.head.weight, y), chunked_lm_loss(h, chunked.head.weight, y))


@pytest.mark.data
def test_bench_with_two_modes_writes_json_and_one_line(capsys, tmp_path):
    """The CPU dry version of `bench gpt --shape gpt2-small` (a tiny shape; eager twice, compiling on a CPU is slow)."""
    import json

    from minilab.cli import main

    out = tmp_path / "bench.json"
    assert main(["bench", "gpt", "--layers", "2", "--width", "32", "--heads", "2", "--context", "16", "--batch", "4",
                 "--vocab-size", "500", "--steps", "3", "--warmup", "1", "--threads", "1", "--modes", "eager",
                 "--json", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("gpt: minilib_tok_per_s=")            # one mode: the line as before
    doc = json.loads(out.read_text())
    r = doc["modes"]["eager"]
    assert r["minilib"]["mfu"] > 0 and r["hf"]["mfu"] > 0 and r["speed_ratio"] > 0
    assert abs(r["minilib"]["last_loss"] - r["hf"]["last_loss"]) / r["hf"]["last_loss"] < 0.01
    assert doc["provenance"]["commit"] and doc["shape"]["layers"] == 2
