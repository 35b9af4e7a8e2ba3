"""`python -m minilib bench awd-lstm`: what AWD-LSTM's regularisation costs per training step.

It times one training step (forward + backward + clip + AdamW) of AWDLSTM with
every regulariser on (weight drop, embedding / locked dropouts, AR + TAR) against
a plain LSTM LM of the same size (same embedding, layer sizes and tied decoder;
nn.LSTM layers, no dropout of any kind), on the same real-text batches, with the
repetitions interleaved (plain, awd, awd, plain, ...) after a warm-up so both see
the same machine load. It ends with one line:

    awd-lstm: plain_tok_per_s=... awd_tok_per_s=... overhead_ratio=...

tok/s come from each model's median step time, and overhead_ratio (plain / awd speed)
is the median over the interleaved pairs of (awd step time / plain step time): on a
shared machine one stalled step moves a total or a mean a lot, a paired median hardly.
--ablate also times AWD-LSTM with one regulariser off at a time (where the overhead goes).
--threads 1 steadies CPU timings on a busy machine: two OpenMP threads wait for each
other at every time step of the fused LSTM when other jobs hold the cores.
"""
from __future__ import annotations

import argparse
import statistics
import time

# torch is imported inside the functions: `python -m minilib data ...` builds the bench parser too
VOCAB_BY_PROFILE = {"smoke": 2_000, "laptop": 20_000, "full": 33_278}  # full: WikiText-2's vocabulary (paper §5)


def awd_lstm_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default=None, help="cpu, cuda, mps (default: best available)")
    p.add_argument("--batch-size", type=int, default=32, help="rows per batch (default 32)")
    p.add_argument("--bptt", type=int, default=70, help="tokens per row per step (default 70, paper §5)")
    p.add_argument("--steps", type=int, default=20,
                   help="timed steps per model (default 20: fewer leave the paired median noisier than the overhead)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per model first (default 2)")
    p.add_argument("--profile", default=None, choices=("smoke", "laptop", "full"),
                   help="sizes from this profile (default: MINILIB_PROFILE); --emb/--hidden/--layers override")
    p.add_argument("--emb", type=int, default=None, help="embedding size = last layer's size (paper: 400)")
    p.add_argument("--hidden", type=int, default=None, help="hidden size of the other layers (paper: 1150)")
    p.add_argument("--layers", type=int, default=None, help="LSTM layers (paper: 3)")
    p.add_argument("--vocab-size", type=int, default=None,
                   help="most frequent words kept (default: smoke 2k, laptop 20k, full 33,278 as WikiText-2)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--ablate", action="store_true", help="also time AWD-LSTM with each regulariser off in turn")
    p.add_argument("--seed", type=int, default=0)


def plain_lstm_lm(vocab_size: int, emb: int, hidden: int, layers: int):
    """The baseline: embedding -> nn.LSTM layers (last one of size emb) -> tied decoder; no
    dropout, no AR/TAR. Hidden state carried (detached) across batches, like AWDLSTM's."""
    from torch import nn

    class PlainLSTMLM(nn.Module):
        def __init__(self):
            super().__init__()
            sizes = [emb] + [hidden] * (layers - 1) + [emb]
            self.embedding = nn.Embedding(vocab_size, emb)
            self.layers = nn.ModuleList(nn.LSTM(sizes[i], sizes[i + 1], batch_first=True) for i in range(layers))
            self.decoder = nn.Linear(emb, vocab_size)
            self.decoder.weight = self.embedding.weight
            self.state = None

        def forward(self, x):  # (B, T) -> (B, T, V)
            out, state = self.embedding(x), self.state or [None] * len(self.layers)
            new_state = []
            for layer, s in zip(self.layers, state):
                out, (h, c) = layer(out, s)
                new_state.append((h.detach(), c.detach()))
            self.state = new_state
            return self.decoder(out)

    return PlainLSTMLM()


def text_ids(vocab_size: int, n_tokens: int):
    """Token ids of the pretraining corpus (train split) over its `vocab_size` most frequent words."""
    from minilib import data

    words = max(25 * vocab_size, n_tokens)  # e.g. 1M words hold ~49k word types
    tokens = [t for d in data.pretraining_corpus("train", max_words=words) for t in data.tokenize(d.text)]
    vocab = data.Vocab.build([tokens], max_size=vocab_size)
    return vocab.encode_array(tokens), len(vocab)


def bench_awd_lstm(args: argparse.Namespace) -> int:
    import torch
    from torch import nn

    from minilib import runtime
    from minilib.data.batching import LMStream
    from minilib.models.awd_lstm import AWDLSTM, AWDLSTMConfig
    from minilib.models.bigram import lm_loss

    if args.threads:
        torch.set_num_threads(args.threads)
    device = runtime.device(args.device)
    profile = args.profile or runtime.profile()
    sizes = {k: v for k, v in dict(emb_size=args.emb, hidden_size=args.hidden, n_layers=args.layers).items() if v}
    n_tokens = args.batch_size * args.bptt * (args.steps + args.warmup) + 1
    ids, vocab_size = text_ids(args.vocab_size or VOCAB_BY_PROFILE[profile], n_tokens)
    cfg = AWDLSTMConfig.for_profile(vocab_size, profile, **sizes)
    stream = LMStream(ids[:n_tokens], args.batch_size, args.bptt)
    batches = [(x.to(device), y.to(device)) for x, y in stream][: args.steps + args.warmup]

    torch.manual_seed(args.seed)
    models = {"plain": plain_lstm_lm(vocab_size, cfg.emb_size, cfg.hidden_size, cfg.n_layers),
              "awd": AWDLSTM(cfg)}
    if args.ablate:  # AWD-LSTM with one regulariser off at a time
        off = {"no_wdrop": dict(wdrop=0), "no_dropoute": dict(dropoute=0),
               "no_locked": dict(dropouti=0, dropouth=0, dropout=0), "no_ar_tar": dict(alpha=0, beta=0)}
        for name, change in off.items():
            models[name] = AWDLSTM(AWDLSTMConfig(**{**vars(cfg), **change}))
    opts = {}
    for name, model in models.items():
        model.to(device).train()
        opts[name] = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=device.type == "cuda")

    def step(name: str, x: torch.Tensor, y: torch.Tensor) -> float:
        model, opt = models[name], opts[name]
        t0 = time.perf_counter()
        with runtime.autocast(device):
            if name == "plain":
                loss = lm_loss(model(x), y)
            else:
                loss, extras = model(x, y)
                if model.cfg.alpha or model.cfg.beta:
                    loss = loss + extras["ar"] + extras["tar"]  # what the ARTAR callback adds
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)  # the paper's clip (§5)
        opt.step()
        loss.item()  # waits for the device, as the Learner's logging does
        return time.perf_counter() - t0

    names = list(models)
    print(f"awd-lstm bench: {profile} sizes emb {cfg.emb_size}, hidden {cfg.hidden_size}, {cfg.n_layers} layers, "
          f"vocab {vocab_size:,}; batch {args.batch_size} x bptt {args.bptt}; {args.steps} timed steps per model "
          f"after {args.warmup} warm-up; {device}, {torch.get_num_threads()} threads, torch {torch.__version__}")
    print(f"AWD-LSTM regularisers: dropoute {cfg.dropoute}, dropouti {cfg.dropouti}, dropouth {cfg.dropouth}, "
          f"dropout {cfg.dropout}, wdrop {cfg.wdrop}, alpha {cfg.alpha}, beta {cfg.beta}")
    for x, y in batches[: args.warmup]:
        for name in names:
            step(name, x, y)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i, (x, y) in enumerate(batches[args.warmup:]):
        for name in names if i % 2 == 0 else names[::-1]:  # alternate the order: drift hits both alike
            times[name].append(step(name, x, y))
    tokens = args.batch_size * args.bptt
    tok_per_s = {name: tokens / statistics.median(ts) for name, ts in times.items()}
    paired = {name: statistics.median(t / p for t, p in zip(ts, times["plain"])) for name, ts in times.items()}
    for name, ts in times.items():
        print(f"  {name:12s} {tok_per_s[name]:9,.0f} tok/s  median step {statistics.median(ts) * 1e3:8.1f} ms  "
              f"(min {min(ts) * 1e3:.1f}, max {max(ts) * 1e3:.1f})  paired time / plain: median {paired[name]:.3f}")
    print(f"awd-lstm: plain_tok_per_s={tok_per_s['plain']:.0f} awd_tok_per_s={tok_per_s['awd']:.0f} "
          f"overhead_ratio={paired['awd']:.3f}")
    return 0
