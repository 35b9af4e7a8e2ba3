"""The LSTM language model, held-out scoring, generation and the agreement probe."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minilib import runtime
from minilib.data import TaggedSentence, Vocab
from minilib.data.batching import LMStream
from minilib.eval.agreement import AgreementItem, agreement_items, agreement_probe, frequency_baseline
from minilib.eval.perplexity import evaluate_lm
from minilib.generate import batch_next_word_log_probs, generate, next_word_log_probs
from minilib.models.bigram import BigramLM, lm_loss
from minilib.models.lstm_lm import LSTMLM, LSTMLMConfig
from minilib.models.ngram import KneserNey
from minilib.train import Learner


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def small(**kw) -> LSTMLM:
    torch.manual_seed(0)
    cfg = dict(vocab_size=50, emb_dim=16, hidden=24, n_layers=2, dropout=0.0)
    return LSTMLM(LSTMLMConfig(**{**cfg, **kw}))


# ----------------------------------------------------------------------------- the model

def test_shapes_and_projection():
    m = small()
    assert m(torch.randint(0, 50, (3, 7))).shape == (3, 7, 50)
    assert m.proj is not None and m.proj.weight.shape == (16, 24)      # H=24 -> E=16 for the tied decoder
    assert small(hidden=16).proj is None
    untied = small(tie_weights=False)
    assert untied.proj is None and untied.decoder.weight.shape == (50, 24)


def test_tied_weights_share_storage():
    m = small()
    assert m.decoder.weight is m.embed.weight
    assert m.decoder.weight.data_ptr() == m.embed.weight.data_ptr()
    untied = small(tie_weights=False)
    assert m.num_params() == untied.num_params() - 50 * 24 + 24 * 16   # V·H decoder gone, H·E projection added
    # one gradient step moves "both": they are one tensor
    opt = torch.optim.SGD(m.parameters(), lr=1.0)
    before = m.embed.weight.detach().clone()
    lm_loss(m(torch.randint(0, 50, (2, 5))), torch.randint(0, 50, (2, 5))).backward()
    opt.step()
    assert not torch.equal(m.embed.weight, before)
    assert torch.equal(m.decoder.weight, m.embed.weight)


def test_hidden_state_is_carried_detached_and_reset():
    m = small().eval()
    x = torch.randint(0, 50, (2, 12))
    whole, _ = m.run(x)
    m.reset()
    first, second = m(x[:, :5]), m(x[:, 5:])                  # two consecutive blocks of the same rows
    assert torch.allclose(torch.cat([first, second], 1), whole, atol=1e-5)
    assert not m.state[0].requires_grad and not m.state[1].requires_grad
    m.reset()
    assert m.state is None
    fresh, _ = m.run(x[:, 5:])
    assert torch.allclose(m(x[:, 5:]), fresh, atol=1e-6)     # after reset: no memory of the first block
    assert not torch.allclose(second, fresh, atol=1e-3)
    assert m(torch.randint(0, 50, (4, 3))).shape == (4, 3, 50)   # another batch size: starts afresh


def test_config_sizes_follow_the_profile():
    smoke = LSTMLMConfig.for_profile(1000, "smoke")
    laptop = LSTMLMConfig.for_profile(1000, "laptop", epochs=3)
    assert smoke.hidden < laptop.hidden and laptop.epochs == 3 and laptop.vocab_size == 1000
    assert (laptop.n_layers, laptop.hidden) == (2, 256)


def test_loss_falls_with_the_learner_and_state_is_reset_per_epoch():
    runtime.seed_everything(0)
    rng = np.random.default_rng(0)
    pattern = rng.permutation(50)[:23]                       # a text that repeats: each word predicts the next
    ids = np.tile(pattern, 300)
    m = small(n_layers=1)
    resets = []
    reset = m.reset
    m.reset = lambda: (resets.append(1), reset())[1]
    learner = Learner(m, LMStream(ids, 8, 20), LMStream(ids[:1000], 8, 20), loss_fn=lm_loss,
                      progress=False, device="cpu")
    before = learner.evaluate()["loss"]
    history = learner.fit(3, lr=3e-2, schedule="onecycle")
    assert history.epochs[-1]["valid_loss"] < 0.3 * before
    assert len(resets) >= 3 * 3 + 2                          # each epoch start and around each evaluation


def test_unigram_bias_init_starts_at_the_unigram_model():
    counts = np.arange(1, 51) ** 2
    m = small()
    m.init_output_bias(counts)
    with torch.no_grad():
        m.embed.weight.zero_()                               # no context signal: logits are the bias
        p = torch.softmax(m(torch.zeros(1, 1, dtype=torch.long))[0, 0], -1).numpy()
    assert np.allclose(p, (counts + 1) / (counts + 1).sum(), atol=1e-6)


# ----------------------------------------------------------------------------- held-out scoring

def test_evaluate_lm_scores_every_target_once_with_carried_state():
    m = small().eval()
    ids = np.random.default_rng(1).integers(0, 50, size=101)
    logits, _ = m.run(torch.as_tensor(ids[None, :-1]))        # one row, whole context
    direct = F.cross_entropy(logits[0], torch.as_tensor(ids[1:])).item()
    assert evaluate_lm(m, ids, batch_size=1, bptt=7) == pytest.approx(direct, rel=1e-5)   # 7 doesn't divide 100
    several = evaluate_lm(m, ids, batch_size=3, bptt=8)       # rows restart: close, not equal
    assert abs(several - direct) < 0.2 and several != pytest.approx(direct, rel=1e-6)
    assert m.state is None and not m.training


def test_evaluate_lm_on_a_stateless_model_is_a_plain_mean():
    torch.manual_seed(0)
    m = BigramLM(30, dim=8)
    ids = np.random.default_rng(2).integers(0, 30, size=57)
    direct = F.cross_entropy(m(torch.as_tensor(ids[None, :-1]))[0], torch.as_tensor(ids[1:])).item()
    assert evaluate_lm(m, ids, batch_size=4, bptt=5) == pytest.approx(direct, rel=1e-5)


def test_token_nats_gives_each_target_its_own_loss_in_stream_order():
    from minilib.eval.perplexity import token_nats

    torch.manual_seed(0)
    m = BigramLM(30, dim=8)
    ids = np.random.default_rng(3).integers(0, 30, size=23)
    direct = F.cross_entropy(m(torch.as_tensor(ids[None, :-1]))[0], torch.as_tensor(ids[1:]), reduction="none")
    nats = token_nats(m, ids, batch_size=4, bptt=3)               # 22 targets over 4 rows: the last row padded
    assert nats.shape == (22,) and np.allclose(nats, direct.detach().numpy(), rtol=1e-5)


# ----------------------------------------------------------------------------- generation

def words_vocab(n=50):
    return Vocab(["<unk>", "the", "cat", "sat", "on", "mat", "."] + [f"w{i}" for i in range(n - 7)])


def test_generation_is_deterministic_given_seed():
    m, vocab = small(), words_vocab()
    a = generate(m, vocab, "the cat", n_words=15, seed=3)
    assert a == generate(m, vocab, "the cat", n_words=15, seed=3)
    assert a.startswith("the cat ") and len(a.split()) == 17
    assert a != generate(m, vocab, "the cat", n_words=15, seed=4)


def test_temperature_zero_is_greedy_and_small_temperature_tends_to_it():
    m, vocab = small(), words_vocab()
    greedy = generate(m, vocab, "the cat", n_words=10, temperature=0)
    ids = vocab.encode(["the", "cat"])
    for _ in range(10):                                       # the argmax chain, by hand
        lp = next_word_log_probs(m, ids)
        lp[vocab.unk_id] = -math.inf
        ids.append(int(lp.argmax()))
    assert greedy == " ".join(vocab.decode(ids))
    assert generate(m, vocab, "the cat", n_words=10, temperature=1e-4, seed=5) == greedy
    assert generate(m, vocab, "the cat", n_words=10, top_k=1, seed=6) == greedy


def test_batched_next_word_equals_one_at_a_time():
    m = small()
    m.train()
    contexts = [[1, 2, 3], [4], [5, 6, 7, 8, 9, 10], [11, 12]]
    batched = batch_next_word_log_probs(m, contexts, batch_size=3)      # right-padded, two chunks
    for c, row in zip(contexts, batched):
        assert torch.allclose(row, next_word_log_probs(m, c), atol=1e-6)
    assert m.training and m.state is None                    # mode restored, no state left behind


def test_top_k_only_draws_the_k_likeliest():
    m, vocab = small(), words_vocab()
    lp = next_word_log_probs(m, vocab.encode(["the"]))
    lp[vocab.unk_id] = -math.inf
    top3 = set(vocab.decode(torch.topk(lp, 3).indices))
    for seed in range(20):
        assert generate(m, vocab, "the", n_words=1, temperature=5.0, top_k=3, seed=seed).split()[-1] in top3


def test_prompt_handling_and_errors():
    m, vocab = small(), words_vocab()
    with pytest.raises(ValueError, match="no words"):
        generate(m, vocab, "   ")
    with pytest.raises(ValueError, match="temperature"):
        generate(m, vocab, "the", temperature=-1)
    # unknown prompt words become <unk>; <unk> is never generated unless allowed
    text = generate(m, vocab, "The Zebra sat", n_words=30, temperature=3.0)
    assert text.startswith("the zebra sat") and "<unk>" not in text.split()[3:]
    with torch.no_grad():
        m.decoder.bias[vocab.unk_id] = 50.0                   # a model that always wants <unk>
    assert "<unk>" not in generate(m, vocab, "the", n_words=5).split()
    assert generate(m, vocab, "the", n_words=5, allow_unk=True).split()[1:] == ["<unk>"] * 5


def test_generation_works_for_bigram_and_kneser_ney():
    vocab = words_vocab()
    torch.manual_seed(0)
    assert len(generate(BigramLM(len(vocab), 8), vocab, "the", n_words=5).split()) == 6
    ids = vocab.encode("the cat sat on the mat .".split() * 30)
    kn = KneserNey(3).fit(ids, len(vocab))
    assert generate(kn, vocab, "the cat", n_words=5, temperature=0) == "the cat sat on the mat ."


# ----------------------------------------------------------------------------- agreement

def tagged(text: str, file_id="cx01") -> TaggedSentence:
    words, tags = zip(*(p.rsplit("/", 1) for p in text.split()))
    return TaggedSentence(file_id, "test", words, tags, ("X",) * len(words))


def test_agreement_items_from_gold_tags():
    sents = [tagged("The/at dog/nn is/bez here/rb ./."),
             tagged("The/at dogs/nns were/bed here/rb ./."),
             tagged("If/cs the/at man/nn were/bed rich/jj ./."),                 # subjunctive: dropped
             tagged("The/at keys/nns to/in the/at cabinet/nn are/ber lost/vbn ./."),
             tagged("He/pps was/bedz here/rb ./."),                              # pronoun: not an item
             tagged("The/at men/nns ,/, the/at boy/nn are/ber ./.")]              # comma: no attractor
    items = agreement_items(sents)
    assert [(i.context, i.correct, i.wrong, i.subject, i.number, i.kind, i.attractor) for i in items] == [
        ("The dog", "is", "are", "dog", "sg", "adjacent", None),
        ("The dogs", "were", "was", "dogs", "pl", "adjacent", None),
        ("The keys to the cabinet", "are", "is", "keys", "pl", "attractor", "cabinet")]


class FixedLM:
    """A count-style LM whose next-word distribution is the same after any context."""

    def __init__(self, probs):
        self.probs = np.asarray(probs, dtype=np.float64)

    def distribution(self, context):
        return self.probs


def test_agreement_probe_scores_and_baseline():
    vocab = Vocab(["<unk>", "the", "dog", "dogs", "is", "are", "was", "were", "has", "have"],
                  counts=[0, 50, 5, 5, 30, 10, 20, 25, 8, 9])
    items = [AgreementItem("The dog", "is", "are", "dog", "sg", "adjacent", None, "x"),
             AgreementItem("The dogs", "are", "is", "dogs", "pl", "adjacent", None, "x"),
             AgreementItem("The dogs", "were", "was", "dogs", "pl", "adjacent", None, "x"),
             AgreementItem("The cat", "is", "are", "cat", "sg", "adjacent", None, "x")]   # cat: not in vocab
    probs = np.full(len(vocab), 0.01)
    probs[vocab["is"]], probs[vocab["are"]], probs[vocab["was"]], probs[vocab["were"]] = 0.3, 0.1, 0.2, 0.25
    result = agreement_probe(FixedLM(probs / probs.sum()), vocab, items)
    assert (result.n, result.n_skipped) == (3, 1)
    assert [s.right for s in result.examples] == [True, False, True]
    assert result.accuracy == pytest.approx(2 / 3)
    assert result.examples[0].p_correct == pytest.approx(0.3 / probs.sum())
    assert list(frequency_baseline(vocab, items[:3])) == [True, False, True]   # is > are, were > was
    assert result.baseline_accuracy == pytest.approx(2 / 3)
    assert result.by_kind["adjacent"]["n"] == 3


def test_agreement_probe_on_a_tiny_trained_model():
    text = ("the dog is here . the dogs are here . the cat is there . the cats are there . "
            "the dog was here . the dogs were there . the cat has one . the cats have two . ") * 20
    vocab = Vocab.build([text.split()])
    kn = KneserNey(2).fit(vocab.encode(text.split()), len(vocab))
    items = agreement_items([tagged("The/at dogs/nns are/ber ./."), tagged("The/at cat/nn has/hvz ./."),
                             tagged("The/at dogs/nns were/bed ./.")])
    result = agreement_probe(kn, vocab, items)
    assert result.accuracy == 1.0 and result.n == 3
    assert agreement_probe(kn, vocab, [tagged("The/at dogs/nns are/ber ./.")]).n == 1   # sentences work too
    assert all(s.p_correct > 5 * s.p_wrong for s in result.examples)
