"""`python -m minilib bench gpt`: minilib's TransformerLM against Hugging Face's GPT2LMHeadModel.

Both models get the GPT-2 shape at one configuration (pre-LN, learned positions, tied
embeddings, tanh GELU, LayerNorm eps 1e-5, dropout 0; --layers, --width, --heads, --context,
vocabulary), the SAME initial weights (minilib's, copied into HF's model; HF's Conv1D stores
each weight transposed relative to nn.Linear), the same AdamW (decay on 2-D weights only,
same lr, betas, eps), and the same batches of real text (the pretraining corpus as word ids,
its --vocab-size most frequent words). After --warmup untimed steps, the timed steps
alternate between the two models (minilib, hf, hf, minilib, ...) so both see the same
machine load. A step is forward + loss + backward + AdamW step. It ends with one line:

    gpt: minilib_tok_per_s=... hf_tok_per_s=... speed_ratio=... loss_minilib=... loss_hf=... mfu=...

tok/s come from each model's median step time; speed_ratio is the median over the
interleaved pairs of (hf step time / minilib step time). loss_* are the training losses of
the last step (same weights, data and optimizer: they must agree within 1 %). mfu is
minilib's model FLOPs per token (`TransformerLM.flops_per_token`: 6·N + attention) times its
tok/s, over the peak of a large matmul timed after each pair of steps (the same machine load)
through the same GEMM path: fp32 2048³ on CPU; bf16 8192³ on CUDA, where both models run under
bf16 autocast with flash SDPA and fused AdamW.

Defaults: 4 layers, width 128, 4 heads, context 128, vocabulary 8,192 — the GPT size the lessons
train on a 2-core CPU (DESIGN.md §3: GPT L4 d128 ctx128) — and batch 32 (4,096 tokens a step, a
usual small-LM batch). The ratio depends on the size: the more of a step the GEMMs take (wider
models), the less there is left to gain, since both models run the same GEMMs. Where minilib's speed
comes from on a CPU (same GEMMs, same attention kernel, so the rest decides): the LM head and
its cross-entropy computed chunk by chunk (`chunked_lm_loss`: HF writes and re-reads the
(B·T, V) logits ~6 times), the tanh GELU as one fused kernel (HF's gelu_new is ~8 elementwise
ops forward and their autograd backward), and fewer layers of Python per step.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

# torch and transformers are imported inside the functions: `python -m minilib data ...` builds this parser too


def gpt_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layers", type=int, default=4, help="Transformer blocks (default 4)")
    p.add_argument("--width", type=int, default=128, help="d_model (default 128)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--context", type=int, default=128, help="tokens per row (default 128)")
    p.add_argument("--batch", type=int, default=32, help="rows per batch (default 32: 4,096 tokens a step)")
    p.add_argument("--vocab-size", type=int, default=8192, help="most frequent words kept (default 8,192)")
    p.add_argument("--steps", type=int, default=10, help="timed AdamW steps per model (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per model first (default 2)")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate, both models (default 1e-3)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--device", default=None, help="cpu, cuda, mps (default: best available)")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile both models (the warm-up steps absorb the compile time)")
    p.add_argument("--seed", type=int, default=0)


def copy_into_gpt2(model, hf) -> None:
    """Copy a minilib TransformerLM's weights into a same-shaped Hugging Face GPT2LMHeadModel.

    HF's Conv1D computes x @ W + b with W of shape (in, out): the transpose of nn.Linear's (out, in).
    Both fuse Q, K, V into one projection, in that order, heads side by side.
    """
    import torch

    t, blocks = hf.transformer, model.blocks
    with torch.no_grad():
        t.wte.weight.copy_(model.tok_emb.weight)  # HF's lm_head is tied to wte
        t.wpe.weight.copy_(model.pos_emb.weight)
        for ours, theirs in zip(blocks, t.h):
            pairs = [(ours.ln_1, theirs.ln_1), (ours.ln_2, theirs.ln_2)]
            conv1d = [(ours.attn.qkv, theirs.attn.c_attn), (ours.attn.proj, theirs.attn.c_proj),
                      (ours.mlp.fc, theirs.mlp.c_fc), (ours.mlp.proj, theirs.mlp.c_proj)]
            for a, b in pairs:
                b.weight.copy_(a.weight), b.bias.copy_(a.bias)
            for a, b in conv1d:
                b.weight.copy_(a.weight.t()), b.bias.copy_(a.bias)
        t.ln_f.weight.copy_(model.ln_f.weight), t.ln_f.bias.copy_(model.ln_f.bias)


def adamw_like_minilib(module, lr: float, betas: tuple[float, float], weight_decay: float, fused: bool):
    """The optimizer TransformerLM.configure_optimizers builds, for any module: decay on 2-D weights only."""
    import torch

    params = [p for p in module.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=fused)


def matmul_seconds(device, dtype, n: int = 2048):
    """A function timing one n × n × n matmul in `dtype` on `device` (2·n³ FLOPs), waiting for the device."""
    import torch

    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)

    def seconds() -> float:
        t0 = time.perf_counter()
        (a @ b).sum().item()
        return time.perf_counter() - t0

    seconds()  # warm-up
    return seconds


def start_hf_bench(args: argparse.Namespace, name: str) -> bool:
    """What every bench against Hugging Face checks first: transformers is installed, the width splits
    into the heads; then threads and quiet HF logs. False (the reason printed, one line) if it cannot run."""
    try:
        from transformers.utils import logging as hf_logging
    except ModuleNotFoundError:
        print(f"bench {name} compares against Hugging Face transformers, which is not installed: "
              "pip install transformers (a dev dependency: pip install -e .[dev])", file=sys.stderr)
        return False
    import torch

    if args.width % args.heads:
        print(f"--width {args.width} must be a multiple of --heads {args.heads}", file=sys.stderr)
        return False
    if args.threads:
        torch.set_num_threads(args.threads)
    hf_logging.set_verbosity_error()
    return True


def bench_gpt(args: argparse.Namespace) -> int:
    if not start_hf_bench(args, "gpt"):
        return 2
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from minilib import runtime
    from minilib.bench.awd_lstm import text_ids
    from minilib.data.batching import LMStream
    from minilib.models.transformer import TransformerConfig, TransformerLM

    device = runtime.device(args.device)
    n_tokens = args.batch * args.context * (args.warmup + args.steps) + 1
    ids, vocab_size = text_ids(args.vocab_size, n_tokens)
    stream = LMStream(ids[:n_tokens], args.batch, args.context)
    batches = [(x.contiguous().to(device), y.contiguous().to(device)) for x, y in stream]

    torch.manual_seed(args.seed)
    cfg = TransformerConfig(vocab_size=vocab_size, block_size=args.context, n_layer=args.layers,
                            n_head=args.heads, n_embd=args.width, dropout=0.0, positions="learned", norm="pre",
                            causal=True, bias=True, tie_weights=True, gelu="tanh")
    ours = TransformerLM(cfg)
    hf = GPT2LMHeadModel(GPT2Config(
        vocab_size=vocab_size, n_positions=args.context, n_embd=args.width, n_layer=args.layers,
        n_head=args.heads, activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        layer_norm_epsilon=1e-5, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
        attn_implementation="sdpa"))
    copy_into_gpt2(ours, hf)
    ours.to(device).train(), hf.to(device).train()
    x0, y0 = batches[0]
    with torch.no_grad():
        init_gap = (ours(x0)[0] - hf(input_ids=x0).logits).abs().max().item()

    fused = device.type == "cuda"
    opts = {"minilib": ours.configure_optimizers(weight_decay=0.1, lr=args.lr, betas=(0.9, 0.95),
                                                 device_type=device.type),
            "hf": adamw_like_minilib(hf, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=fused)}
    runs = {"minilib": lambda x, y: ours(x, y)[1],
            "hf": lambda x, y: hf(input_ids=x, labels=x, shift_labels=y).loss}  # y is x shifted already
    if args.compile:
        ours_c, hf_c = torch.compile(ours), torch.compile(hf)
        runs = {"minilib": lambda x, y: ours_c(x, y)[1],
                "hf": lambda x, y: hf_c(input_ids=x, labels=x, shift_labels=y).loss}

    def step(name: str, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
        opt = opts[name]
        t0 = time.perf_counter()
        with runtime.autocast(device):
            loss = runs[name](x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()  # waits for the device, as the Learner's logging does
        return time.perf_counter() - t0, value

    peak_dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    n = 8192 if device.type == "cuda" else 2048  # big enough to reach the GEMM peak, small enough to repeat
    matmul, matmul_times = matmul_seconds(device, peak_dtype, n), []
    flops_per_token = ours.flops_per_token(args.context)
    print(f"gpt bench: L{args.layers} d{args.width} h{args.heads} ctx{args.context}, vocab {vocab_size:,} "
          f"(words of the pretraining corpus), batch {args.batch}; {ours.num_params(non_embedding=False):,} "
          f"parameters; {args.steps} timed AdamW steps (lr {args.lr}) per model after {args.warmup} warm-up; "
          f"{device}, {torch.get_num_threads()} threads, torch {torch.__version__}"
          f"{', compiled' if args.compile else ''}")
    print(f"same initial weights: largest logit gap before training {init_gap:.1e}")
    names = ["minilib", "hf"]
    for x, y in batches[: args.warmup]:
        for name in names:
            step(name, x, y)
    times: dict[str, list[float]] = {name: [] for name in names}
    losses: dict[str, float] = {}
    for i, (x, y) in enumerate(batches[args.warmup: args.warmup + args.steps]):
        for name in names if i % 2 == 0 else names[::-1]:  # alternate the order: drift hits both alike
            seconds, losses[name] = step(name, x, y)
            times[name].append(seconds)
        matmul_times.append(matmul())  # the peak, under the same load as the steps
    tokens = args.batch * args.context
    tok_per_s = {name: tokens / statistics.median(ts) for name, ts in times.items()}
    ratio = statistics.median(h / m for h, m in zip(times["hf"], times["minilib"]))
    peak = 2 * n ** 3 / statistics.median(matmul_times)
    mfu = {name: flops_per_token * tps / peak for name, tps in tok_per_s.items()}
    for name, ts in times.items():
        print(f"  {name:8s} {tok_per_s[name]:8,.0f} tok/s  median step {statistics.median(ts) * 1e3:7.1f} ms "
              f"(min {min(ts) * 1e3:.1f}, max {max(ts) * 1e3:.1f})  MFU {mfu[name]:.3f}  last loss {losses[name]:.4f}")
    print(f"model FLOPs per token {flops_per_token / 1e6:.2f} M (6·N + attention); matmul peak {peak / 1e9:.0f} "
          f"GFLOP/s ({str(peak_dtype).removeprefix('torch.')} {n}³, median of one after each pair of steps)")
    gap = abs(losses["minilib"] - losses["hf"]) / losses["hf"]
    if gap > 0.01:
        print(f"warning: the losses differ by {gap:.2%} (> 1 %): the two models no longer compute the same thing")
    print(f"gpt: minilib_tok_per_s={tok_per_s['minilib']:.0f} hf_tok_per_s={tok_per_s['hf']:.0f} "
          f"speed_ratio={ratio:.3f} loss_minilib={losses['minilib']:.4f} loss_hf={losses['hf']:.4f} "
          f"mfu={mfu['minilib']:.3f}")
    return 0
