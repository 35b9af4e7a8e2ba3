"""minilib.models.transformer: attention, masks, positions, blocks, the LM and its optimizer groups."""
import math

import pytest
import torch
import torch.nn.functional as F

from minilib.models.transformer import (IGNORE_INDEX, Block, MultiHeadAttention, TransformerConfig, TransformerLM,
                                        attention, attention_mask_4d, chunked_lm_loss, head_loss,
                                        sinusoidal_positions)

V = 97


def tiny(**overrides) -> TransformerConfig:
    return TransformerConfig(**{**dict(vocab_size=V, block_size=16, n_layer=2, n_head=4, n_embd=32, dropout=0.0),
                                **overrides})


def padding(B: int = 3, T: int = 10) -> torch.Tensor:
    """(B, T) 1 at real tokens, 0 at padding: rows of length T, T-3 and 4 (right-padded)."""
    lengths = torch.tensor([T, T - 3, 4])[:B]
    return (torch.arange(T)[None, :] < lengths[:, None]).long()


# -- attention: the fast path equals the written-out equation --------------------------------------
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_sdpa_equals_written_out_attention(causal, padded):
    torch.manual_seed(0)
    B, nh, T, hs = 3, 4, 10, 8
    q, k, v = (torch.randn(B, nh, T, hs) for _ in range(3))
    mask = attention_mask_4d(T, causal, padding(B, T) if padded else None)
    want = attention(q, k, v, mask)
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    if causal and not padded:
        torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, is_causal=True), want,
                                   atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_attention_module_fast_and_slow_paths_agree(causal, padded):
    torch.manual_seed(1)
    mha = MultiHeadAttention(tiny(causal=causal))
    x = torch.randn(3, 10, 32)
    mask = attention_mask_4d(10, causal, padding()) if padded else None
    fast = mha(x, mask)
    mha.fast = False
    torch.testing.assert_close(mha(x, mask), fast, atol=1e-5, rtol=1e-5)


def test_whole_model_fast_and_slow_paths_agree():
    torch.manual_seed(2)
    fast = TransformerLM(tiny(causal=False))
    slow = TransformerLM(tiny(causal=False, fast_attention=False))
    slow.load_state_dict(fast.state_dict())
    idx, am = torch.randint(0, V, (3, 10)), padding()
    torch.testing.assert_close(slow(idx, attention_mask=am)[0], fast(idx, attention_mask=am)[0],
                               atol=1e-5, rtol=1e-5)


def test_attention_weights_are_zero_on_masked_keys():
    q = k = v = torch.randn(1, 1, 5, 4)
    mask = attention_mask_4d(5, True, None)
    v_future = v.clone()
    v_future[..., 3:, :] += 100.0  # change only keys/values 3 and 4
    assert torch.equal(attention(q, k, v, mask)[..., :3, :], attention(q, k, v_future, mask)[..., :3, :])


# -- masks in the whole model ----------------------------------------------------------------------
@pytest.mark.parametrize("fast", [True, False])
def test_causal_model_never_looks_ahead(fast):
    torch.manual_seed(3)
    model = TransformerLM(tiny(fast_attention=fast)).eval()
    idx = torch.randint(0, V, (2, 12))
    changed = idx.clone()
    changed[:, 7] = (changed[:, 7] + 1) % V
    a, b = model(idx)[0], model(changed)[0]
    torch.testing.assert_close(a[:, :7], b[:, :7], atol=0, rtol=0)  # positions before 7: bit-identical
    assert (a[:, 7:] - b[:, 7:]).abs().max() > 1e-3                # from 7 on: they do see it


def test_bidirectional_model_looks_both_ways():
    torch.manual_seed(4)
    model = TransformerLM(tiny(causal=False)).eval()
    idx = torch.randint(0, V, (2, 12))
    changed = idx.clone()
    changed[:, 7] = (changed[:, 7] + 1) % V
    assert (model(idx)[0][:, :7] - model(changed)[0][:, :7]).abs().max() > 1e-3


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("fast", [True, False])
def test_padded_positions_never_change_real_outputs(causal, fast):
    torch.manual_seed(5)
    model = TransformerLM(tiny(causal=causal, fast_attention=fast)).eval()
    am = padding()
    idx = torch.randint(0, V, (3, 10))
    other = torch.where(am.bool(), idx, torch.randint(0, V, (3, 10)))  # new tokens at padded places only
    assert not torch.equal(idx, other)
    a, b = model(idx, attention_mask=am)[0], model(other, attention_mask=am)[0]
    real = am.bool()
    torch.testing.assert_close(a[real], b[real], atol=1e-6, rtol=1e-6)
    assert torch.isfinite(a).all()  # padded queries see themselves: no all -inf row, no NaN
    if not causal:  # without the mask the encoder reads the padding too
        assert (model(idx)[0][real] - model(other)[0][real]).abs().max() > 1e-3


@pytest.mark.parametrize("chunked", [False, True])
def test_padding_targets_are_ignored(chunked):
    torch.manual_seed(6)
    model = TransformerLM(tiny(chunked_loss=chunked))
    idx = torch.randint(0, V, (2, 8))
    targets = torch.randint(0, V, (2, 8))
    partial = targets.clone()
    partial[:, 5:] = IGNORE_INDEX
    _, loss = model(idx, partial)
    logits = model(idx)[0]
    want = F.cross_entropy(logits[:, :5].reshape(-1, V), targets[:, :5].reshape(-1))
    torch.testing.assert_close(loss, want)


def test_chunked_loss_equals_cross_entropy_in_value_and_gradients():
    torch.manual_seed(11)
    h = torch.randn(50, 16, requires_grad=True)
    w = torch.randn(V, 16, requires_grad=True)
    t = torch.randint(0, V, (50,))
    t[[3, 17, 40]] = IGNORE_INDEX
    want = F.cross_entropy(h @ w.t(), t, ignore_index=IGNORE_INDEX)
    want_grads = torch.autograd.grad(2.5 * want, (h, w))
    got = chunked_lm_loss(h, w, t, chunk_size=16)  # 50 rows: chunks of 16, 16, 16 and 2
    got_grads = torch.autograd.grad(2.5 * got, (h, w))
    torch.testing.assert_close(got, want)
    for g, wg in zip(got_grads, want_grads):
        torch.testing.assert_close(g, wg)
    with torch.no_grad():  # evaluation: the loss alone
        torch.testing.assert_close(chunked_lm_loss(h, w, t, chunk_size=16), want)


def test_chunked_and_plain_model_losses_train_alike():
    torch.manual_seed(12)
    plain = TransformerLM(tiny(chunked_loss=False))
    chunked = TransformerLM(tiny())
    chunked.load_state_dict(plain.state_dict())
    idx = torch.randint(0, V, (4, 16))
    (logits, a), (none, b) = plain(idx[:, :-1], idx[:, 1:]), chunked(idx[:, :-1], idx[:, 1:])
    assert logits.shape == (4, 15, V) and none is None
    a.backward(), b.backward()
    torch.testing.assert_close(a, b)
    for p, q in zip(plain.parameters(), chunked.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-6, rtol=1e-4)


def test_head_loss_is_chunked_on_a_cpu_and_one_head_gemm_elsewhere():
    torch.manual_seed(13)
    h, w, t = torch.randn(2, 9, 16), torch.randn(V, 16), torch.randint(0, V, (2, 9))
    t[0, :3] = IGNORE_INDEX
    want = F.cross_entropy((h @ w.t()).reshape(-1, V), t.reshape(-1), ignore_index=IGNORE_INDEX)
    torch.testing.assert_close(head_loss(h, w, t), want)
    torch.testing.assert_close(head_loss(h, w, t), chunked_lm_loss(h, w, t))
    meta = head_loss(h.to("meta"), w.to("meta"), t.to("meta"))   # off the CPU: the plain path, which 'meta' runs
    assert meta.device.type == "meta" and meta.shape == ()

# -- positions -------------------------------------------------------------------------------------
def test_sinusoidal_positions_match_the_formula():
    d, pe = 16, sinusoidal_positions(50, 16)
    for pos in (0, 1, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_model_has_no_position_parameters():
    learned, fixed = TransformerLM(tiny()), TransformerLM(tiny(positions="sinusoidal"))
    assert learned.num_params(non_embedding=False) - fixed.num_params(non_embedding=False) == 16 * 32
    assert "pos_table" not in fixed.state_dict()  # recomputed from the formula, not saved
    torch.testing.assert_close(fixed.pos_table, sinusoidal_positions(16, 32))


# -- blocks ----------------------------------------------------------------------------------------
def test_post_and_pre_ln_blocks_compute_what_they_say():
    torch.manual_seed(7)
    x = torch.randn(2, 6, 32)
    for norm in ("post", "pre"):
        block = Block(tiny(norm=norm)).eval()
        a, m = block.attn, block.mlp
        if norm == "post":  # LN(x + f(x))
            h = block.ln_1(x + a(x))
            want = block.ln_2(h + m(h))
        else:               # x + f(LN(x))
            h = x + a(block.ln_1(x))
            want = h + m(block.ln_2(h))
        torch.testing.assert_close(block(x), want)
    assert isinstance(TransformerLM(tiny(norm="pre")).ln_f, torch.nn.LayerNorm)
    assert isinstance(TransformerLM(tiny(norm="post")).ln_f, torch.nn.Identity)  # GPT-1: no final LN
    out = Block(tiny(norm="post")).eval()(x)  # a post-LN block's output is normalised: mean 0, var 1 per token
    torch.testing.assert_close(out.mean(-1), torch.zeros(2, 6), atol=1e-5, rtol=0)


def test_dropout_sits_where_the_paper_puts_it():
    model = TransformerLM(tiny(dropout=0.1))
    drops = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Dropout)]
    assert drops == ["dropout"] + [f"blocks.{i}.{d}" for i in range(2) for d in ("attn.attn_dropout", "dropout")]
    model.train()
    idx = torch.randint(0, V, (2, 8))
    assert not torch.equal(model(idx)[0], model(idx)[0])  # training: random masks
    model.eval()
    assert torch.equal(model(idx)[0], model(idx)[0])


# -- the language model ----------------------------------------------------------------------------
def test_head_is_tied_to_the_token_embedding():
    model = TransformerLM(tiny())
    assert model.head.weight is model.tok_emb.weight
    assert model.head.weight.data_ptr() == model.tok_emb.weight.data_ptr()
    untied = TransformerLM(tiny(tie_weights=False))
    assert untied.head.weight is not untied.tok_emb.weight


def test_loss_at_init_is_log_vocab():
    torch.manual_seed(8)
    cfg = tiny(vocab_size=1000)
    for norm in ("pre", "post"):
        model = TransformerLM(TransformerConfig(**{**vars(cfg), "norm": norm}))
        _, loss = model(torch.randint(0, 1000, (4, 16)), torch.randint(0, 1000, (4, 16)))
        assert abs(loss.item() - math.log(1000)) < 0.05  # logits ~ N(0, 0.02²·d): near-uniform


def test_gpt2_init_scales_residual_projections():
    torch.manual_seed(9)
    model = TransformerLM(tiny(n_layer=8, n_embd=128, block_size=64))
    assert model.blocks[0].attn.qkv.weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert model.blocks[0].mlp.proj.weight.std().item() == pytest.approx(0.02 / math.sqrt(16), rel=0.05)
    assert model.blocks[0].attn.qkv.bias.abs().max().item() == 0


def test_tiny_model_overfits_one_batch():
    torch.manual_seed(10)
    model = TransformerLM(tiny())
    idx = torch.randint(0, V, (4, 16))
    opt = model.configure_optimizers(weight_decay=0.0, lr=1e-2, betas=(0.9, 0.95))
    losses = []
    for _ in range(50):
        _, loss = model(idx[:, :-1], idx[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > 4.3 and losses[-1] < 0.2, losses[::10]


def test_param_count_formula():
    d, L, T = 32, 2, 16
    per_block = 12 * d * d + 13 * d          # qkv 3d²+3d, proj d²+d, fc 4d²+4d, proj 4d²+d, 2 LayerNorms 4d
    for norm in ("pre", "post"):
        for tie in (True, False):
            model = TransformerLM(tiny(norm=norm, tie_weights=tie))
            want = V * d + T * d + L * per_block + (2 * d if norm == "pre" else 0) + (0 if tie else V * d)
            assert model.num_params(non_embedding=False) == want
            assert model.num_params() == want - T * d - (0 if tie else V * d)
    model = TransformerLM(tiny())
    assert model.flops_per_token() == 6 * model.num_params() + 12 * L * T * d


def test_optimizer_groups_decay_only_matrices():
    model = TransformerLM(tiny())
    opt = model.configure_optimizers(weight_decay=0.1, lr=1e-3, betas=(0.9, 0.95), device_type="cpu")
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decay["params"]) and all(p.dim() == 1 for p in no_decay["params"])
    ids = {id(p) for p in decay["params"]}
    assert id(model.tok_emb.weight) in ids and id(model.blocks[0].attn.qkv.weight) in ids  # as nanoGPT
    assert id(model.blocks[0].attn.qkv.bias) not in ids and id(model.ln_f.weight) not in ids
    n = sum(p.numel() for g in opt.param_groups for p in g["params"])
    assert n == model.num_params(non_embedding=False)  # every parameter once, the tied matrix once
    assert opt.defaults["betas"] == (0.9, 0.95) and not opt.defaults["fused"]


def test_bad_configs_say_how_to_fix_them():
    with pytest.raises(ValueError, match="multiple of n_head"):
        tiny(n_embd=30)
    with pytest.raises(ValueError, match="'learned' or 'sinusoidal'"):
        tiny(positions="rotary")
    with pytest.raises(ValueError, match="'post'"):
        tiny(norm="sandwich")
    with pytest.raises(ValueError, match="'tanh'"):
        tiny(gelu="erf")
    with pytest.raises(ValueError, match="block_size"):
        TransformerLM(tiny())(torch.zeros(1, 17, dtype=torch.long))
