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

With several --modes (`--shape gpt2-small` runs eager then compiled, each from the same initial weights and
batches) the line is instead

    gpt: speed_ratio_eager=... mfu_eager=... mfu_hf_eager=... speed_ratio_compiled=... mfu_compiled=... mfu_hf_compiled=... loss_minilib=... loss_hf=...

and `--json PATH` writes every number (both models, each mode, graph breaks, peak memory). Compiled, the bench
first counts the graph breaks torch.compile's tracer meets in minilib's loss path (on CUDA: the bf16 head GEMM
and an fp32 F.cross_entropy, `lm_loss.head_loss`; it should be 0).

tok/s come from each model's median step time; speed_ratio is the median over the
interleaved pairs of (hf step time / minilib step time). loss_* are the training losses of
the last step (same weights, data and optimizer: they must agree within 1 %). mfu is
minilib's model FLOPs per token (`TransformerLM.flops_per_token`: 6·N + attention) times its
tok/s, over the peak of a large matmul timed after each pair of steps (the same machine load)
through the same GEMM path: fp32 2048³ on CPU; bf16 8192³ on CUDA, where both models run under
bf16 autocast with flash SDPA and fused AdamW.

Defaults: 4 layers, width 128, 4 heads, context 128, vocabulary 8,192 — the GPT size the lessons
train on a 2-core CPU (GPT L4 d128 ctx128) — and batch 32 (4,096 tokens a step, a
usual small-LM batch). The ratio depends on the size: the more of a step the GEMMs take (wider
models), the less there is left to gain, since both models run the same GEMMs. Where minilib's speed
comes from on a CPU (same GEMMs, same attention kernel, so the rest decides): the LM head and
its cross-entropy computed chunk by chunk (`chunked_lm_loss`: HF writes and re-reads the
(B·T, V) logits ~6 times), the tanh GELU as one fused kernel (HF's gelu_new is ~8 elementwise
ops forward and their autograd backward), and fewer layers of Python per step.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

# torch and transformers are imported inside the functions: `python -m minilib data ...` builds this parser too


SHAPES = {
    # the GPT size the lessons train on a 2-core CPU (docs/design.md §3: GPT L4 d128 ctx128), batch 32 (4,096 tokens)
    "default": dict(layers=4, width=128, heads=4, context=128, batch=32, vocab_size=8192),
    # GPT-2 small's shape (Radford et al. 2019: 12 x 768, 12 heads, context 1024), batch 16 x 1024 tokens,
    # a vocabulary of 32,768 words: a size where a GPU step is GEMM-bound, not launch-bound
    "gpt2-small": dict(layers=12, width=768, heads=12, context=1024, batch=16, vocab_size=32768),
}
MODES = ("eager", "compiled")


def gpt_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", choices=tuple(SHAPES), default="default",
                   help="a preset for the six size options below (default: 'default' = L4 d128 h4 ctx128, batch 32, "
                        "vocab 8,192; 'gpt2-small' = L12 d768 h12 ctx1024, batch 16, vocab 32,768); "
                        "an option given explicitly wins")
    p.add_argument("--layers", type=int, default=None, help="Transformer blocks (default 4)")
    p.add_argument("--width", type=int, default=None, help="d_model (default 128)")
    p.add_argument("--heads", type=int, default=None, help="attention heads (default 4)")
    p.add_argument("--context", type=int, default=None, help="tokens per row (default 128)")
    p.add_argument("--batch", type=int, default=None, help="rows per batch (default 32: 4,096 tokens a step)")
    p.add_argument("--vocab-size", type=int, default=None, help="most frequent words kept (default 8,192)")
    p.add_argument("--steps", type=int, default=10, help="timed AdamW steps per model (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per model first (default 2)")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate, both models (default 1e-3)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--device", default=None, help="cpu, cuda, mps (default: best available)")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile both models (the warm-up steps absorb the compile time); = --modes compiled")
    p.add_argument("--modes", default=None,
                   help="comma-separated, run in turn from the same initial weights and batches: eager, compiled "
                        "(default: eager; 'eager,compiled' with --shape gpt2-small)")
    p.add_argument("--json", type=Path, default=None, metavar="PATH",
                   help="also write every number measured (each mode, both models, graph breaks) to PATH")
    p.add_argument("--seed", type=int, default=0)


def resolve_shape(args: argparse.Namespace) -> None:
    """Fill the size options left unset from the --shape preset (in place)."""
    for key, value in SHAPES[args.shape].items():
        if getattr(args, key) is None:
            setattr(args, key, value)


def resolve_modes(args: argparse.Namespace) -> list[str] | None:
    """The modes to run, in order, or None (the reason printed) when --modes names something else."""
    text = args.modes or ("compiled" if args.compile else "eager,compiled" if args.shape == "gpt2-small" else "eager")
    modes = list(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        print(f"--modes {text!r}: use a comma-separated list of {', '.join(MODES)}", file=sys.stderr)
        return None
    return modes


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


def graph_breaks(fn, *inputs) -> int | None:
    """How many graph breaks torch.compile's tracer (dynamo) meets in fn(*inputs), or None where it cannot tell."""
    import torch

    try:
        import torch._dynamo as dynamo

        dynamo.reset()
        count = dynamo.explain(fn)(*inputs).graph_break_count
        dynamo.reset()
        return int(count)
    except Exception as exc:  # an explain that fails is reported, never fatal to the bench
        print(f"graph breaks not counted: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)
        return None


def bench_gpt(args: argparse.Namespace) -> int:
    resolve_shape(args)
    modes = resolve_modes(args)
    if modes is None or not start_hf_bench(args, "gpt"):
        return 2
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from minilib import runtime
    from bench.awd_lstm import text_ids
    from minilib.data.batching import LMStream
    from minilib.models.transformer import TransformerConfig, TransformerLM

    device = runtime.device(args.device)
    n_tokens = args.batch * args.context * (args.warmup + args.steps) + 1
    ids, vocab_size = text_ids(args.vocab_size, n_tokens)
    stream = LMStream(ids[:n_tokens], args.batch, args.context)
    batches = [(x.contiguous().to(device), y.contiguous().to(device)) for x, y in stream]
    cfg = TransformerConfig(vocab_size=vocab_size, block_size=args.context, n_layer=args.layers,
                            n_head=args.heads, n_embd=args.width, dropout=0.0, positions="learned", norm="pre",
                            causal=True, bias=True, tie_weights=True, gelu="tanh")
    hf_cfg = GPT2Config(
        vocab_size=vocab_size, n_positions=args.context, n_embd=args.width, n_layer=args.layers,
        n_head=args.heads, activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        layer_norm_epsilon=1e-5, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
        attn_implementation="sdpa")
    peak_dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    n = 8192 if device.type == "cuda" else 2048  # big enough to reach the GEMM peak, small enough to repeat
    matmul = matmul_seconds(device, peak_dtype, n)
    flops_per_token = TransformerLM(cfg).flops_per_token(args.context)
    print(f"gpt bench: L{args.layers} d{args.width} h{args.heads} ctx{args.context}, vocab {vocab_size:,} "
          f"(words of the pretraining corpus), batch {args.batch}; {args.steps} timed AdamW steps (lr {args.lr}) "
          f"per model after {args.warmup} warm-up; {device}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}; modes: {', '.join(modes)} (each from the same initial weights and batches)")

    def run_mode(mode: str) -> dict:
        """Both models built afresh from the seed (the same weights in every mode), timed step by step."""
        torch.manual_seed(args.seed)
        ours = TransformerLM(cfg)
        hf = GPT2LMHeadModel(hf_cfg)
        copy_into_gpt2(ours, hf)
        ours.to(device).train(), hf.to(device).train()
        x0, y0 = batches[0]
        with torch.no_grad():
            init_gap = (ours(x0)[0] - hf(input_ids=x0).logits).abs().max().item()
        fused = device.type == "cuda"
        opts = {"minilib": ours.configure_optimizers(weight_decay=0.1, lr=args.lr, betas=(0.9, 0.95),
                                                     device_type=device.type),
                "hf": adamw_like_minilib(hf, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=fused)}
        losses_of = {"minilib": lambda m: lambda x, y: m(x, y)[1],
                     "hf": lambda m: lambda x, y: m(input_ids=x, labels=x, shift_labels=y).loss}  # y = x shifted
        breaks = None
        if mode == "compiled":
            with runtime.autocast(device):  # the loss path as the timed steps trace it
                breaks = graph_breaks(losses_of["minilib"](ours), x0, y0)
            runs = {"minilib": losses_of["minilib"](torch.compile(ours)), "hf": losses_of["hf"](torch.compile(hf))}
        else:
            runs = {"minilib": losses_of["minilib"](ours), "hf": losses_of["hf"](hf)}

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

        names = ["minilib", "hf"]
        warm_t0 = time.perf_counter()
        for x, y in batches[: args.warmup]:
            for name in names:
                step(name, x, y)
        warmup_s = time.perf_counter() - warm_t0
        times: dict[str, list[float]] = {name: [] for name in names}
        losses: dict[str, float] = {}
        matmul_times = []
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        for i, (x, y) in enumerate(batches[args.warmup: args.warmup + args.steps]):
            for name in names if i % 2 == 0 else names[::-1]:  # alternate the order: drift hits both alike
                seconds, losses[name] = step(name, x, y)
                times[name].append(seconds)
            matmul_times.append(matmul())  # the peak, under the same load as the steps
        tokens = args.batch * args.context
        tok_per_s = {name: tokens / statistics.median(ts) for name, ts in times.items()}
        peak = 2 * n ** 3 / statistics.median(matmul_times)
        out = {"mode": mode, "init_logit_gap": init_gap, "warmup_seconds": round(warmup_s, 2),
               "speed_ratio": statistics.median(h / m for h, m in zip(times["hf"], times["minilib"])),
               "peak_flops": peak, "graph_breaks_minilib": breaks,
               "peak_memory_mb": (round(torch.cuda.max_memory_allocated(device) / 2**20)
                                  if device.type == "cuda" else None)}
        for name, ts in times.items():
            out[name] = {"tok_per_s": tok_per_s[name], "median_step_ms": statistics.median(ts) * 1e3,
                         "min_step_ms": min(ts) * 1e3, "max_step_ms": max(ts) * 1e3,
                         "mfu": flops_per_token * tok_per_s[name] / peak, "last_loss": losses[name]}
        del ours, hf, runs, opts
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return out

    results = {}
    for mode in modes:
        r = results[mode] = run_mode(mode)
        print(f"[{mode}] same initial weights: largest logit gap before training {r['init_logit_gap']:.1e}; "
              f"warm-up {r['warmup_seconds']:.1f} s" + (f"; graph breaks in minilib's loss path: "
                                                         f"{r['graph_breaks_minilib']}" if mode == "compiled" else ""))
        for name in ("minilib", "hf"):
            m = r[name]
            print(f"  {name:8s} {m['tok_per_s']:8,.0f} tok/s  median step {m['median_step_ms']:7.1f} ms "
                  f"(min {m['min_step_ms']:.1f}, max {m['max_step_ms']:.1f})  MFU {m['mfu']:.3f}  "
                  f"last loss {m['last_loss']:.4f}")
        print(f"  speed_ratio (HF step / minilib step, median of pairs) {r['speed_ratio']:.3f}; matmul peak "
              f"{r['peak_flops'] / 1e9:.0f} GFLOP/s ({str(peak_dtype).removeprefix('torch.')} {n}³, median of one "
              f"after each pair of steps)")
        gap = abs(r["minilib"]["last_loss"] - r["hf"]["last_loss"]) / r["hf"]["last_loss"]
        if gap > 0.01:
            print(f"warning: the losses differ by {gap:.2%} (> 1 %): the two models no longer compute the same thing")
    print(f"model FLOPs per token {flops_per_token / 1e6:.2f} M (6·N + attention)")
    if args.json is not None:
        from minilab import provenance

        provenance.write_json(args.json, {
            "bench": "gpt", "shape": {k: getattr(args, k) for k in SHAPES["default"]} | {"vocab_size": vocab_size},
            "name": args.shape, "steps": args.steps, "warmup": args.warmup, "lr": args.lr, "device": str(device),
            "flops_per_token": flops_per_token, "modes": results,
            "provenance": provenance.stamp(seed=args.seed, threads=torch.get_num_threads())})
    if len(modes) == 1:
        r = results[modes[0]]
        print(f"gpt: minilib_tok_per_s={r['minilib']['tok_per_s']:.0f} hf_tok_per_s={r['hf']['tok_per_s']:.0f} "
              f"speed_ratio={r['speed_ratio']:.3f} loss_minilib={r['minilib']['last_loss']:.4f} "
              f"loss_hf={r['hf']['last_loss']:.4f} mfu={r['minilib']['mfu']:.3f}")
    else:
        parts = []
        for mode, r in results.items():
            parts += [f"speed_ratio_{mode}={r['speed_ratio']:.3f}", f"mfu_{mode}={r['minilib']['mfu']:.3f}",
                      f"mfu_hf_{mode}={r['hf']['mfu']:.3f}"]
        last = results[modes[-1]]
        print(f"gpt: {' '.join(parts)} loss_minilib={last['minilib']['last_loss']:.4f} "
              f"loss_hf={last['hf']['last_loss']:.4f}")
    return 0
