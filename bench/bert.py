"""`python -m minilib bench bert`: minilib's BERT masked-LM step against Hugging Face's BertForMaskedLM.

Both models get BERT's shape at one configuration (post-LN blocks, learned position and segment
embeddings, embedding LayerNorm, tanh GELU, LayerNorm eps 1e-5, dropout 0, the MLM head with its
decoder tied to the token embedding and its own bias; --layers, --width, --heads, --context), the
SAME initial weights (minilib's, copied into HF's: HF keeps Q, K and V as three Linear layers where
minilib fuses them into one), the same AdamW (decay on 2-D weights only), and the same batches of
real text: sentence pairs of the pretraining corpus in the shipped WordPiece vocabulary, masked by
§3.1's rule (`data.mlm`). The masked LM alone ("No NSP": BertForMaskedLM has no NSP head). After
--warmup untimed steps, the timed steps alternate between the two models (minilib, hf, hf,
minilib, ...) so both see the same machine load. A step is forward + loss + backward + AdamW step.
It ends with one line:

    bert: minilib_tok_per_s=... hf_tok_per_s=... speed_ratio=... loss_minilib=... loss_hf=...

tok/s count every input position (padding included: both read it) over each model's median step
time; speed_ratio is the median over the interleaved pairs of (hf step time / minilib step time);
loss_* are the last step's training losses (same weights, data, optimizer: they agree within 1 %).

Defaults: the bench gpt size (4 layers, width 128, 4 heads, context 128, batch 32), the design's BERT
size class on a 2-core CPU. Where minilib's speed comes from: its MLM head runs on the masked ~15 %
of positions (HF's computes (B·T, V) logits and then ignores 85 % of them in the loss), the fused
Q/K/V projection (one GEMM instead of three) and fewer layers of Python per step.
"""
from __future__ import annotations

import argparse
import statistics
import time

# torch and transformers are imported inside the functions: `python -m minilib data ...` builds this parser too


def bert_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--layers", type=int, default=4, help="Transformer blocks (default 4)")
    p.add_argument("--width", type=int, default=128, help="d_model (default 128)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--context", type=int, default=128, help="tokens per pair, [CLS] and [SEP]s included (default 128)")
    p.add_argument("--batch", type=int, default=32, help="pairs per batch (default 32: 4,096 tokens a step)")
    p.add_argument("--words", type=int, default=300_000, help="words of the train split to cut pairs from")
    p.add_argument("--steps", type=int, default=10, help="timed AdamW steps per model (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per model first (default 2)")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate, both models (default 1e-3)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--device", default=None, help="cpu, cuda, mps (default: best available)")
    p.add_argument("--seed", type=int, default=0)


def hf_bert_config(cfg):
    """Hugging Face's BertConfig for a minilib BERTConfig (post-LN, dropout 0 in the bench)."""
    from transformers import BertConfig

    return BertConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.n_embd, num_hidden_layers=cfg.n_layer,
                      num_attention_heads=cfg.n_head, intermediate_size=4 * cfg.n_embd,
                      hidden_act="gelu_pytorch_tanh" if cfg.gelu == "tanh" else "gelu",
                      hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
                      max_position_embeddings=cfg.block_size, type_vocab_size=cfg.type_vocab_size,
                      layer_norm_eps=1e-5, tie_word_embeddings=True, attn_implementation="sdpa")


def copy_into_bert(model, hf) -> None:
    """Copy a minilib BERT's weights into a same-shaped Hugging Face BertForMaskedLM.

    minilib fuses W^Q, W^K, W^V into one (3C, C) Linear (rows: Q, then K, then V, heads side by side);
    HF keeps three (C, C) Linears. The decoder's weight is tied to the word embeddings in both.
    """
    import torch

    if model.cfg.norm != "post" or model.cfg.causal:
        raise ValueError("HF's BertForMaskedLM is a post-LN encoder: build the minilib model with norm='post', "
                         "objective 'mlm' or 'mlm+nsp'")
    emb, layers, head = hf.bert.embeddings, hf.bert.encoder.layer, hf.cls.predictions
    with torch.no_grad():
        emb.word_embeddings.weight.copy_(model.tok_emb.weight)
        emb.position_embeddings.weight.copy_(model.pos_emb.weight)
        emb.token_type_embeddings.weight.copy_(model.seg_emb.weight)
        pairs = [(model.emb_ln, emb.LayerNorm), (model.mlm.dense, head.transform.dense),
                 (model.mlm.ln, head.transform.LayerNorm)]
        for ours, theirs in zip(model.blocks, layers):
            q, k, v = ours.attn.qkv.weight.chunk(3, 0)
            qb, kb, vb = ours.attn.qkv.bias.chunk(3, 0)
            for w, b, lin in ((q, qb, theirs.attention.self.query), (k, kb, theirs.attention.self.key),
                              (v, vb, theirs.attention.self.value)):
                lin.weight.copy_(w), lin.bias.copy_(b)
            pairs += [(ours.attn.proj, theirs.attention.output.dense), (ours.ln_1, theirs.attention.output.LayerNorm),
                      (ours.mlp.fc, theirs.intermediate.dense), (ours.mlp.proj, theirs.output.dense),
                      (ours.ln_2, theirs.output.LayerNorm)]
        for a, b in pairs:
            b.weight.copy_(a.weight), b.bias.copy_(a.bias)
        head.bias.copy_(model.mlm.decoder.bias)                  # HF's decoder.bias is this same tensor


def bench_bert(args: argparse.Namespace) -> int:
    from bench.gpt import adamw_like_minilib, start_hf_bench

    if not start_hf_bench(args, "bert"):
        return 2
    import torch
    from transformers import BertForMaskedLM

    from minilib import data, runtime
    from minilib.data.mlm import DocumentStream, PairBatches, SpecialTokens
    from minilib.data.tokenizer import pretrained_tokenizer
    from minilib.models.bert import BERT, BERTConfig

    device = runtime.device(args.device)
    tok = pretrained_tokenizer("wordpiece", "laptop")
    stream = DocumentStream.from_documents(tok, data.pretraining_corpus("train", max_words=args.words))
    pairs = PairBatches(stream, SpecialTokens.of(tok), args.batch, args.context, args.warmup + args.steps,
                        target="mlm", p_random_next=0.0, seed=args.seed)
    batches = [tuple(t.to(device) for t in b[:4]) for b in pairs]     # ids, segments, attention_mask, labels

    torch.manual_seed(args.seed)
    cfg = BERTConfig(vocab_size=tok.vocab_size, block_size=args.context, n_layer=args.layers, n_head=args.heads,
                     n_embd=args.width, dropout=0.0, norm="post", objective="mlm", gelu="tanh")
    ours = BERT(cfg)
    hf = BertForMaskedLM(hf_bert_config(cfg))
    copy_into_bert(ours, hf)
    ours.to(device).train(), hf.to(device).train()
    ids, seg, mask, labels = batches[0]
    with torch.no_grad():
        real = mask.bool()
        init_gap = (ours(ids, seg, mask).mlm_logits[real]
                    - hf(input_ids=ids, token_type_ids=seg, attention_mask=mask).logits[real]).abs().max().item()

    fused = device.type == "cuda"
    opts = {"minilib": adamw_like_minilib(ours, lr=args.lr, betas=(0.9, 0.999), weight_decay=0.01, fused=fused),
            "hf": adamw_like_minilib(hf, lr=args.lr, betas=(0.9, 0.999), weight_decay=0.01, fused=fused)}
    runs = {"minilib": lambda i, s, m, y: ours(i, s, m, y).loss,
            "hf": lambda i, s, m, y: hf(input_ids=i, token_type_ids=s, attention_mask=m, labels=y).loss}

    def step(name: str, batch) -> tuple[float, float]:
        opt = opts[name]
        t0 = time.perf_counter()
        with runtime.autocast(device):
            loss = runs[name](*batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()  # waits for the device, as the Learner's logging does
        return time.perf_counter() - t0, value

    masked = sum(int((b[3] != -100).sum()) for b in batches) / sum(b[0].numel() for b in batches)
    print(f"bert bench: L{args.layers} d{args.width} h{args.heads} ctx{args.context}, WordPiece vocab "
          f"{tok.vocab_size:,}, batch {args.batch} pairs of the pretraining corpus ({masked:.1%} of positions "
          f"masked); {ours.num_params(non_embedding=False):,} parameters; {args.steps} timed AdamW steps "
          f"(lr {args.lr}) per model after {args.warmup} warm-up; {device}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}")
    print(f"same initial weights: largest logit gap before training {init_gap:.1e}")
    names = ["minilib", "hf"]
    for batch in batches[: args.warmup]:
        for name in names:
            step(name, batch)
    times: dict[str, list[float]] = {name: [] for name in names}
    losses: dict[str, float] = {}
    for i, batch in enumerate(batches[args.warmup: args.warmup + args.steps]):
        for name in names if i % 2 == 0 else names[::-1]:  # alternate the order: drift hits both alike
            seconds, losses[name] = step(name, batch)
            times[name].append(seconds)
    tokens = args.batch * args.context
    tok_per_s = {name: tokens / statistics.median(ts) for name, ts in times.items()}
    ratio = statistics.median(h / m for h, m in zip(times["hf"], times["minilib"]))
    for name, ts in times.items():
        print(f"  {name:8s} {tok_per_s[name]:8,.0f} tok/s  median step {statistics.median(ts) * 1e3:7.1f} ms "
              f"(min {min(ts) * 1e3:.1f}, max {max(ts) * 1e3:.1f})  last loss {losses[name]:.4f}")
    gap = abs(losses["minilib"] - losses["hf"]) / losses["hf"]
    if gap > 0.01:
        print(f"warning: the losses differ by {gap:.2%} (> 1 %): the two models no longer compute the same thing")
    print(f"bert: minilib_tok_per_s={tok_per_s['minilib']:.0f} hf_tok_per_s={tok_per_s['hf']:.0f} "
          f"speed_ratio={ratio:.3f} loss_minilib={losses['minilib']:.4f} loss_hf={losses['hf']:.4f}")
    return 0
