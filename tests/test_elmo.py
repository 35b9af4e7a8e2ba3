"""ELMo (minilib.models.elmo): char encoder, biLM directions, embed, ScalarMix, batches, pretraining, checkpoints."""
from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from minilib.data import Vocab
from minilib.data.chars import BOW, EOW, char_ids, sentences_to_char_ids
from minilib.models.elmo import BiLM, CharCNNEncoder, ELMoConfig, Highway, ScalarMix, reverse_padded, untrained_like
from minilib.data.batching import ELMoBatches
from minilib.models.pretrained import CheckpointError, load_pretrained, save_pretrained
from minilib.recipes.elmo import pretrain_elmo


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def tiny_config(**kw) -> ELMoConfig:
    cfg = dict(filters=((1, 4), (2, 4), (3, 8)), n_highway=2, cells=16, proj=8, dropout=0.0, vocab_size=50)
    return ELMoConfig(**{**cfg, **kw})


def tiny(**kw) -> BiLM:
    torch.manual_seed(0)
    return BiLM(tiny_config(**kw)).eval()


SENTS = [["the", "bank", "of", "the", "river", "flooded"], ["she", "robbed", "a", "bank"]]


# ----------------------------------------------------------------------------- token encoder

def test_char_ids_are_bytes_with_word_marks_and_padding():
    assert char_ids("ab", 8) == [BOW, ord("a") + 1, ord("b") + 1, EOW, 0, 0, 0, 0]
    assert char_ids("café", 8)[4:7] == [0xC3 + 1, 0xA9 + 1, EOW]            # UTF-8 bytes of "é"
    long = char_ids("x" * 80)
    assert len(long) == 50 and long[0] == BOW and long[-1] == EOW           # cut to max_chars
    chars, lengths = sentences_to_char_ids(SENTS)
    assert chars.shape == (2, 6, 50) and lengths.tolist() == [6, 4]
    assert (chars[1, 4:] == 0).all() and (chars[1, :4, 0] == BOW).all()     # padding tokens: all zeros
    with pytest.raises(ValueError):
        sentences_to_char_ids([["a"], []])


def test_char_encoder_reads_unseen_words_and_ignores_batch_company():
    torch.manual_seed(0)
    enc = CharCNNEncoder(tiny_config()).eval()
    words = ["the", "zyxqwvbn", "antidisestablishmentarianism", "ünïcödé", "the"]
    chars, _ = sentences_to_char_ids([words])
    out = enc(chars)
    assert out.shape == (1, 5, 8) and torch.isfinite(out).all()
    assert torch.equal(out[0, 0], out[0, 4])                                # same word, same vector
    assert not torch.allclose(out[0, 1], out[0, 2])                         # any string gets its own vector
    # a word's vector does not depend on the other words (the batch is cut to its longest word)
    alone = enc(sentences_to_char_ids([["zyxqwvbn"]])[0])
    assert torch.allclose(alone[0, 0], out[0, 1], atol=1e-6)


def test_highway_gate_math():
    torch.manual_seed(0)
    hw = Highway(6)
    assert torch.all(hw.gate.bias == -2.0)                                  # starts mostly carrying
    x = torch.randn(3, 6)
    t = torch.sigmoid(x @ hw.gate.weight.t() + hw.gate.bias)
    expected = t * torch.relu(x @ hw.transform.weight.t() + hw.transform.bias) + (1 - t) * x
    assert torch.allclose(hw(x), expected, atol=1e-6)
    with torch.no_grad():
        hw.gate.bias.fill_(-100.0)                                          # gate shut: y = x
    assert torch.allclose(hw(x), x, atol=1e-6)
    with torch.no_grad():
        hw.gate.weight.zero_(), hw.gate.bias.fill_(100.0)                   # gate open: y = relu(W_h x + b_h)
    assert torch.allclose(hw(x), torch.relu(hw.transform(x)), atol=1e-6)


# ----------------------------------------------------------------------------- the biLM

def test_embed_shapes_layer0_and_padding_zeros():
    m = tiny()
    out = m.embed(SENTS)
    assert out.shape == (3, 2, 6, 16)                                       # (L, B, T, 2·proj)
    assert torch.equal(out[0, :, :, :8], out[0, :, :, 8:])                  # layer 0 = [x; x]
    assert (out[:, 1, 4:] == 0).all() and (out[:, 1, :4].abs().sum(-1) > 0).all()
    assert not torch.allclose(out[1, 0, 0, :8], out[1, 0, 3, :8])           # context: "the" at 0 and 3 differ
    assert torch.allclose(out[0, 0, 0], out[0, 0, 3])                       # but not at the token layer


def test_padding_never_changes_real_positions():
    m = tiny()
    short = ["she", "robbed", "a", "bank"]
    alone = m.embed([short])[:, 0]
    padded = m.embed([["a", "much", "longer", "sentence", "than", "the", "other", "one"], short])[:, 1, :4]
    assert torch.allclose(alone, padded, atol=1e-5)                         # backward LM starts at "bank", not pad


def test_reverse_padded_reverses_within_lengths():
    x = torch.arange(8).view(2, 4, 1).float()
    r = reverse_padded(x, torch.tensor([4, 2]))
    assert r[:, :, 0].tolist() == [[3, 2, 1, 0], [5, 4, 6, 7]]
    assert torch.equal(reverse_padded(r, torch.tensor([4, 2])), x)


@pytest.mark.parametrize("j", [0, 3, 6])
def test_directions_never_see_what_they_predict(j):
    m = tiny()
    chars, _ = sentences_to_char_ids([["w%d" % i for i in range(7)]])
    changed = chars.clone()
    changed[0, j] = sentences_to_char_ids([["elsewhere"]])[0][0, 0]
    _, f1, b1 = m.states(chars)
    _, f2, b2 = m.states(changed)
    for layer in range(2):
        diff_f = (f1[layer] - f2[layer]).abs().amax(-1)[0]                  # (T,)
        diff_b = (b1[layer] - b2[layer]).abs().amax(-1)[0]
        # (1e-6, not 0: a GEMM over all T positions may round a row differently when another row changes)
        assert (diff_f[:j] < 1e-6).all() and (diff_f[j:] > 1e-4).all()      # forward at k reads x_1..x_k
        assert (diff_b[j + 1:] < 1e-6).all() and (diff_b[:j + 1] > 1e-4).all()  # backward at k reads x_k..x_T


def test_joint_loss_is_the_mean_of_both_directions_shifted_targets():
    m = tiny()
    torch.manual_seed(1)
    ids = torch.randint(0, 50, (3, 7))                                      # windows of T+2 = 7
    chars = torch.stack([sentences_to_char_ids([[f"w{int(i)}" for i in row[1:-1]]])[0][0] for row in ids])
    loss, extras = m(ids, chars)
    _, fwd, bwd = m.states(chars)
    nll_f = F.cross_entropy(m.softmax(fwd[-1]).reshape(-1, 50), ids[:, 2:].reshape(-1))
    nll_b = F.cross_entropy(m.softmax(bwd[-1]).reshape(-1, 50), ids[:, :-2].reshape(-1))
    assert torch.allclose(extras["fwd_nll"], nll_f) and torch.allclose(extras["bwd_nll"], nll_b)
    assert torch.allclose(loss, (nll_f + nll_b) / 2)
    assert torch.allclose(extras["fwd_ppl"], nll_f.exp())
    assert abs(loss.item() - math.log(50)) < 0.5                            # untrained: about uniform


def test_sampled_softmax_in_training_full_softmax_in_eval():
    m = tiny(n_samples=20)
    ids = torch.randint(0, 50, (2, 6))
    chars = sentences_to_char_ids([["a", "b", "c", "d"]] * 2)[0]
    full, _ = m.eval()(ids, chars)
    m.train()
    torch.manual_seed(3)
    sampled, _ = m(ids, chars)
    assert torch.isfinite(sampled) and not torch.allclose(sampled, full)
    sampled.backward()
    touched = (m.softmax.weight.grad.abs().sum(1) > 0).sum().item()
    assert touched <= 20 + 10                                               # only sampled and target rows
    m.eval()
    assert torch.allclose(m(ids, chars)[0], full)


def test_scalar_mix_weights_and_gamma():
    layers = torch.randn(3, 2, 4, 6)
    mix = ScalarMix(3)
    assert torch.allclose(mix.weights.sum(), torch.tensor(1.0))
    assert torch.allclose(mix(layers), layers.mean(0), atol=1e-6)           # w = 0: equal weights
    with torch.no_grad():
        mix.w.copy_(torch.tensor([2.0, -1.0, 0.5])), mix.gamma.fill_(3.0)
    s = torch.softmax(torch.tensor([2.0, -1.0, 0.5]), 0)
    assert torch.allclose(mix.weights.sum(), torch.tensor(1.0))
    assert torch.allclose(mix(layers), 3.0 * (s[:, None, None, None] * layers).sum(0), atol=1e-5)
    mix(layers).sum().backward()
    assert mix.w.grad is not None and mix.gamma.grad is not None            # both learned with the task
    normed = ScalarMix(3, do_layer_norm=True)(layers * 100 + 7, mask=torch.ones(2, 4, dtype=torch.bool))
    assert normed.shape == (2, 4, 6) and normed.abs().max() < 10
    with pytest.raises(ValueError, match="ScalarMix"):
        ScalarMix(2)(layers)


def test_config_profiles_and_checkpoint_budget():
    smoke, laptop, full = (ELMoConfig.for_profile(p) for p in ("smoke", "laptop", "full"))
    assert smoke.cells < laptop.cells <= full.cells and smoke.max_chars == 50 and laptop.char_dim == 16
    assert [w for w, _ in full.filters] == list(range(1, 8)) and full.n_highway == 2   # paper's widths 1..7
    assert ELMoConfig.for_profile("smoke", proj=12).proj == 12
    assert BiLM(laptop).num_params() * 2 < 15e6                             # half precision ≤ 15 MB (docs/design.md §5)
    with pytest.raises(ValueError):
        ELMoConfig(filters=((60, 4),))


# ----------------------------------------------------------------------------- data, training, checkpoints

class Doc:
    def __init__(self, text):
        self.text = text


def test_batches_are_windows_with_both_targets_and_chars():
    words = [f"w{i}" for i in range(200)]
    vocab = Vocab.build([words[:150]])
    batches = ELMoBatches([Doc(" ".join(words[:100])), Doc(" ".join(words[100:]))], vocab, batch_size=3, window=5)
    assert len(batches) == (198 // 5) // 3
    seen = []
    for ids, chars in batches:
        assert ids.shape == (3, 7) and chars.shape == (3, 5, 50)
        for row_ids, row_chars in zip(ids, chars):
            start = int(bytes(c - 1 for c in row_chars[0, 1:].tolist() if c not in (0, EOW)).decode()[1:])
            assert row_chars[0, 0] == BOW
            expect = [vocab[f"w{k}"] for k in range(start - 1, start + 6)]
            assert row_ids.tolist() == expect                              # x_0 (bwd target) .. x_{T+1} (fwd)
            seen.extend(range(start, start + 5))
    assert len(seen) == len(set(seen))                                      # each token an input once
    first = next(iter(batches))[0]
    batches.set_epoch(1)
    assert not torch.equal(next(iter(batches))[0], first)                   # reshuffled per epoch
    with pytest.raises(ValueError, match="smaller batch"):
        ELMoBatches([Doc("a b c")], vocab, batch_size=4, window=5)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    from minilib import data

    threads = torch.get_num_threads()        # module-scoped: set up before the one_thread fixture runs
    torch.set_num_threads(1)
    train_docs = data.pretraining_corpus("train", max_words=20_000)
    valid_docs = data.pretraining_corpus("valid", max_words=4_000)
    path = tmp_path_factory.mktemp("elmo") / "elmo.pt"
    cfg = ELMoConfig.for_profile("smoke", vocab_size=1_500)
    try:
        metrics = pretrain_elmo(cfg, train_docs, valid_docs, path, progress=False, device="cpu")
    finally:
        torch.set_num_threads(threads)
    return path, metrics, valid_docs


@pytest.mark.data
def test_pretraining_on_real_text_lowers_both_directions(pretrained):
    path, metrics, _ = pretrained
    assert metrics["valid_loss"] < metrics["valid_loss_before"] - 0.3, metrics
    assert 1 < metrics["valid_fwd_ppl"] < 1_000 and 1 < metrics["valid_bwd_ppl"] < 1_000
    assert metrics["valid_loss"] == pytest.approx(
        (math.log(metrics["valid_fwd_ppl"]) + math.log(metrics["valid_bwd_ppl"])) / 2, rel=1e-4)


@pytest.mark.data
def test_checkpoint_round_trip_reproduces_perplexity_and_provenance(pretrained):
    from minilib.train import Learner

    path, metrics, valid_docs = pretrained
    assert path.stat().st_size < 15e6
    model, vocab, meta = load_pretrained(path, "elmo", device="cpu")
    assert len(vocab) == model.cfg.vocab_size and meta["metrics"] == metrics
    side = json.loads(path.with_suffix(".json").read_text())
    for key in ("command", "commit", "device", "time", "data", "metrics", "config"):
        assert key in side, key
    assert side["data"]["valid"]["sha256"] and side["metrics"]["valid_fwd_ppl"] == metrics["valid_fwd_ppl"]
    valid = ELMoBatches(valid_docs, vocab, model.cfg.batch_size, model.cfg.window, shuffle=False)
    again = Learner(model, valid, None, device="cpu", progress=False).evaluate(valid)
    assert math.exp(again["fwd_nll"]) == pytest.approx(metrics["valid_fwd_ppl"], rel=0.02)
    assert math.exp(again["bwd_nll"]) == pytest.approx(metrics["valid_bwd_ppl"], rel=0.02)


def test_save_load_reproduces_embeddings_in_half_precision(tmp_path):
    m = tiny()
    vocab = Vocab.build([["a", "b"]])
    save_pretrained(tmp_path / "m.pt", m, vocab, {"note": "x"})
    loaded, v2, meta = load_pretrained(tmp_path / "m.pt", "elmo", device="cpu")
    assert v2.itos == vocab.itos and meta == {"note": "x", "model": "elmo"} and not loaded.training
    a, b = m.embed(SENTS), loaded.embed(SENTS)
    assert torch.allclose(a, b, atol=2e-2, rtol=2e-2) and not torch.equal(a, b)   # fp16 weights: close, not equal
    with pytest.raises(CheckpointError, match="pretrain elmo"):
        load_pretrained(tmp_path / "missing.pt", "elmo")
    with pytest.raises(CheckpointError, match="holds a elmo model, not awd-lstm"):
        load_pretrained(tmp_path / "m.pt", "awd-lstm")


def test_untrained_like_is_a_fresh_frozen_twin():
    trained = tiny()
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(1.0)                                   # stands in for pretraining: any other weights
    state = torch.random.get_rng_state()
    a, b = untrained_like(trained, seed=0), untrained_like(trained, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)          # the global RNG is left alone
    assert a.cfg == trained.cfg and not a.training
    assert all(not p.requires_grad for p in a.parameters())
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))          # seeded
    assert not torch.equal(next(a.parameters()), next(untrained_like(trained, seed=1).parameters()))
    assert all(not torch.equal(p, q) for p, q in zip(a.parameters(), trained.parameters()) if p.numel() > 1)
    assert a.embed(SENTS).shape == trained.embed(SENTS).shape


@pytest.mark.data
def test_probes_score_each_layer_beside_its_untrained_twin(pretrained, tmp_path):
    from minilab.experiments import elmo_probes as ep

    path, _, _ = pretrained
    config = ep.ProbesConfig(pos_train_sentences=40, pos_test_sentences=20, pos_epochs=2, wsd_max_lemmas=8,
                             static_dim=16, static_epochs=1)
    res = ep.run_probes(path, "smoke", seeds=1, config=config, out=tmp_path / "probes.json", log=lambda *_: None)
    s = res["summary"]
    for task in ("pos", "wsd"):
        for k in range(3):
            assert 0 <= s[f"{task}_l{k}"]["mean"] <= 1 and 0 <= s[f"{task}_untrained_l{k}"]["mean"] <= 1
    assert ep.summary_line(res).startswith("elmo-probes: pos_l0=") and "wsd_mfs=" in ep.summary_line(res)
    assert ep.control_line(res).count("_untrained") == 0 and "pos_l1=" in ep.control_line(res)
    assert json.loads((tmp_path / "probes.json").read_text())["summary"] == json.loads(json.dumps(s))
