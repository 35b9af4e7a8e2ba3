"""word2vec (skip-gram / CBOW with negative sampling) and the PPMI-SVD count baseline."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from minilib.models.ppmi import PPMIConfig, cooccurrence, ppmi, randomized_svd, train_ppmi
from minilib.data.skipgram import AliasSampler, Word2VecBatches, keep_probabilities, noise_distribution, prepare_corpus
from minilib.recipes.word2vec import PairSGD, train_word2vec
from minilib.models import word2vec_compiled
from minilib.models.word2vec import Word2Vec, Word2VecConfig


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def unique_token_corpus(lengths):
    """Sentences whose every token id is its position in the whole text, so a pair's ids give its offset."""
    out, start = [], 0
    for n in lengths:
        out.append(np.arange(start, start + n))
        start += n
    return out


def all_batches(sentences, **config):
    cfg = Word2VecConfig(min_count=1, sample=0, **config)
    corpus = prepare_corpus(sentences, None, None, 1)
    return corpus, list(Word2VecBatches(corpus, cfg))


def topic_corpus(n_sentences=300, seed=0):
    """Two topics: ids 0-9 co-occur, ids 10-19 co-occur, never mixed in a sentence."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 10, 12) + 10 * (i % 2) for i in range(n_sentences)]


# -- vocabulary ---------------------------------------------------------------------------------
def test_prepare_corpus_drops_rare_words_and_sorts_by_frequency():
    sentences = [np.array([3, 3, 3, 1, 2]), np.array([1, 3, 0])]  # counts: 3:4, 1:2, 2:1, 0:1
    corpus = prepare_corpus(sentences, words=["zero", "one", "two", "three"], min_count=2)
    assert corpus.words == ["three", "one"]
    assert corpus.counts.tolist() == [4, 2]
    assert corpus.tokens.tolist() == [0, 0, 0, 1, 1, 0]       # rare words removed from the stream
    assert corpus.sentence.tolist() == [0, 0, 0, 0, 1, 1]
    assert corpus.raw_words == 8                               # words/s counts the rare ones too


# -- subsampling and noise ----------------------------------------------------------------------
def test_keep_probability_is_the_word2vec_c_formula():
    counts = np.array([5000, 3000, 1500, 500])                 # total T = 10,000
    keep = keep_probabilities(counts, sample=0.01)             # t·T = 100
    # word2vec.c: ran = (sqrt(cn / (t·T)) + 1) · (t·T) / cn
    assert keep[0] == pytest.approx((math.sqrt(50) + 1) * 100 / 5000)    # 0.16142
    assert keep[0] == pytest.approx(0.161421, abs=1e-6)
    assert keep[3] == pytest.approx((math.sqrt(5) + 1) * 100 / 500)      # 0.64721
    assert keep_probabilities([10, 10_000], 1e-3)[0] == 1.0  # rare words are always kept (capped at 1)
    assert np.all(keep_probabilities(counts, 0) == 1.0)        # sample=0 turns it off


def test_subsampling_keeps_each_word_at_its_rate():
    rng = np.random.default_rng(0)
    sentences = [rng.choice(4, size=500, p=[0.7, 0.2, 0.07, 0.03]) for _ in range(100)]
    cfg = Word2VecConfig(min_count=1, sample=0.01, window=1, batch_size=8000)
    corpus = prepare_corpus(sentences, None, None, 1)
    batches = Word2VecBatches(corpus, cfg)
    expected = keep_probabilities(corpus.counts, 0.01)
    kept = np.zeros(len(corpus.words))
    for _ in range(5):
        for batch in batches:  # window 1 with reduced window 1: a kept token is a target once per kept neighbour
            kept += np.bincount(batch["targets"].numpy(), minlength=len(kept))
    share = kept / corpus.counts                               # ∝ the share of each word that was kept
    rate = (share / share[-1]) / (expected / expected[-1])     # relative to the rarest word
    assert expected[0] < 0.2
    np.testing.assert_allclose(rate, 1.0, atol=0.08)


def test_noise_distribution_is_unigram_to_the_three_quarters():
    p = noise_distribution([1, 16, 81])                        # 1^.75, 16^.75, 81^.75 = 1, 8, 27
    np.testing.assert_allclose(p, np.array([1, 8, 27]) / 36)
    assert p.sum() == pytest.approx(1.0)


def test_alias_sampler_draws_the_distribution():
    p = noise_distribution([500, 120, 40, 30, 5, 1])
    sampler = AliasSampler(p)
    draws = sampler.sample((200_000,), generator=torch.Generator().manual_seed(0))
    freq = np.bincount(draws.numpy(), minlength=len(p)) / len(draws)
    np.testing.assert_allclose(freq, p, atol=0.004)


def test_batches_draw_negatives_from_the_noise_distribution():
    rng = np.random.default_rng(1)
    sentences = [rng.choice(5, size=200, p=[0.5, 0.25, 0.15, 0.07, 0.03]) for _ in range(50)]
    corpus, batches = all_batches(sentences, window=2, batch_size=2048)
    negatives = torch.cat([b["negatives"].reshape(-1) for b in batches]).numpy()
    freq = np.bincount(negatives, minlength=5) / len(negatives)
    np.testing.assert_allclose(freq, noise_distribution(corpus.counts), atol=0.01)


# -- windows ------------------------------------------------------------------------------------
def test_dynamic_window_pair_counts_fall_linearly_with_distance():
    window, n = 5, 40_000
    _, batches = all_batches(unique_token_corpus([n]), window=window, batch_size=8192)
    offsets = torch.cat([b["inputs"] - b["targets"] for b in batches]).numpy()
    assert set(np.unique(offsets)) == set(range(-window, 0)) | set(range(1, window + 1))
    per_distance = np.bincount(np.abs(offsets), minlength=window + 1)[1:] / n
    expected = 2 * (window - np.arange(1, window + 1) + 1) / window        # both sides: 2·(W-d+1)/W
    np.testing.assert_allclose(per_distance, expected, rtol=0.03)
    # and the mean number of pairs per centre is E[2b] = window + 1
    assert per_distance.sum() == pytest.approx(window + 1, rel=0.02)


@pytest.mark.parametrize("layout", ["skipgram", "shared", "cbow"])
def test_no_pair_crosses_a_sentence_boundary(layout):
    lengths = [1, 2, 7, 3, 1, 12, 4, 5, 1, 9] * 20
    sentences = unique_token_corpus(lengths)
    sentence_of = np.repeat(np.arange(len(lengths)), lengths)
    corpus, batches = all_batches(sentences, window=4, batch_size=64, cbow=layout == "cbow",
                                  shared_negatives=layout == "shared")
    n_pairs = 0
    for b in batches:
        if layout == "skipgram":
            inputs, targets = b["inputs"].numpy(), b["targets"].numpy()
        elif layout == "shared":  # grouped layout: each real context slot is one pair
            inputs, targets = slot_pairs(b)
            assert (b["widths"] > 0).all()                     # a centre without context is skipped
        else:  # centre layout: each real context slot is one pair
            m = b["mask"].numpy()
            inputs, targets = b["inputs"].numpy()[m], np.broadcast_to(b["targets"].numpy()[:, None], m.shape)[m]
            assert m.any(1).all()                              # a centre without context is skipped
        assert np.all(sentence_of[inputs] == sentence_of[targets])
        assert np.all(inputs != targets)
        n_pairs += len(inputs)
    assert n_pairs > 1000
    # one-word sentences have no context at all: they never appear
    singles = [s[0] for s in sentences if len(s) == 1]
    seen = np.concatenate([b["targets"].numpy() for b in batches])
    assert not np.isin(singles, seen).any()


def slot_pairs(batch):
    """(context ids, centre ids) of a grouped-layout batch's real slots."""
    m = batch["mask"].numpy()
    centres = np.repeat(batch["targets"].numpy(), 2 * batch["widths"].numpy())
    return batch["inputs"].numpy()[m], centres[m]


def test_grouped_layout_holds_the_pairs_of_the_pair_layout_in_offset_order():
    """Shared negatives group centres by width: the same (context, centre) pairs as one pair per row,
    each centre's 2w slots the offsets -w..-1, 1..w in order, w its farthest real one, centres by w."""
    window = 4
    sentences = unique_token_corpus([1, 2, 7, 3, 1, 12, 4, 5, 1, 9] * 20)
    _, pairs = all_batches(sentences, window=window, batch_size=64)
    _, grouped = all_batches(sentences, window=window, batch_size=64, shared_negatives=True)
    a, b = pairs[0], grouped[0]       # the same subsample and windows: the first batches hold the same pairs
    context, centre = slot_pairs(b)
    assert sorted(zip(context, centre)) == sorted(zip(a["inputs"].numpy(), a["targets"].numpy()))
    widths = b["widths"].numpy()
    assert (np.diff(widths) >= 0).all()
    start = 0
    for c, w in zip(b["targets"].numpy(), widths):
        slots = slice(start, start + 2 * w)
        real = b["mask"].numpy()[slots]
        offsets = np.concatenate([np.arange(-w, 0), np.arange(1, w + 1)])
        assert (b["inputs"].numpy()[slots][real] - c == offsets[real]).all()   # ids are positions here
        assert real[0] or real[-1]                                             # w is a real offset
        start += 2 * w
    assert start == len(b["inputs"])


def test_batches_per_epoch_is_fixed_and_near_batch_size():
    corpus, batches = all_batches(unique_token_corpus([5000] * 4), window=5, batch_size=1200)
    b = Word2VecBatches(corpus, Word2VecConfig(min_count=1, sample=0, window=5, batch_size=1200))
    assert len(b) == len(list(b)) == len(batches)
    sizes = [len(x["targets"]) for x in batches[:-1]]
    assert abs(np.mean(sizes) / 1200 - 1) < 0.05


# -- the model ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cbow,shared", [(False, False), (False, True), (True, False)])
def test_sgd_step_is_autograd_plus_sgd(cbow, shared):
    """The fast hand-written step equals forward + backward + torch SGD at lr * pairs_per_step."""
    rng = np.random.default_rng(0)
    sentences = [rng.integers(0, 30, size=rng.integers(1, 25)) for _ in range(40)]
    corpus, batches = all_batches(sentences, window=3, batch_size=64, cbow=cbow, shared_negatives=shared)
    batch = batches[0]
    ref = Word2Vec(len(corpus.words), 8, cbow=cbow, pairs_per_step=64).double()
    with torch.no_grad():
        ref.in_embed.weight.normal_(0, 0.3)
        ref.out_embed.weight.normal_(0, 0.3)
    fast = Word2Vec(len(corpus.words), 8, cbow=cbow, pairs_per_step=64).double()
    fast.load_state_dict(ref.state_dict())
    before = {k: v.clone() for k, v in ref.state_dict().items()}
    loss = ref(**batch)
    loss.backward()
    loss = loss.detach()
    torch.optim.SGD(ref.parameters(), lr=0.1 * 64).step()
    fast_loss = fast.sgd_step(batch, lr=0.1)
    assert float(fast_loss) == pytest.approx(loss.item() * 64, rel=1e-9)
    for name, w in ref.state_dict().items():
        torch.testing.assert_close(fast.state_dict()[name], w, rtol=0, atol=1e-12)
        assert not torch.equal(w, before[name])               # the step really moved both tables


def test_pair_sgd_is_sgd_at_lr_times_pairs_per_step():
    batch = {"inputs": torch.tensor([1, 2, 1]), "targets": torch.tensor([0, 3, 3]),
             "negatives": torch.tensor([[2, 4], [0, 1], [4, 4]])}
    a, b = Word2Vec(5, 4, pairs_per_step=3), Word2Vec(5, 4, pairs_per_step=3)
    b.load_state_dict(a.state_dict())
    for model, opt in ((a, PairSGD(a.parameters(), pairs_per_step=3, lr=0.5)),
                       (b, torch.optim.SGD(b.parameters(), lr=1.5))):
        for _ in range(2):
            opt.zero_grad()
            model(**batch).backward()
            assert model.in_embed.weight.grad.is_sparse
            opt.step()
    torch.testing.assert_close(a.state_dict(), b.state_dict())


def test_noise_word_equal_to_the_target_is_skipped():
    model = Word2Vec(4, 3, pairs_per_step=1).double()
    with torch.no_grad():
        model.out_embed.weight.normal_()
    batch = {"inputs": torch.tensor([1]), "targets": torch.tensor([2]), "negatives": torch.tensor([[2, 2, 3]])}
    h = model.in_embed.weight[1]
    u = model.out_embed.weight
    expected = -(torch.nn.functional.logsigmoid(u[2] @ h) + torch.nn.functional.logsigmoid(-(u[3] @ h)))
    assert model(**batch).item() == pytest.approx(expected.item())


@pytest.mark.parametrize("shared", [False, True])
def test_compiled_step_is_sgd_step_when_no_two_pairs_share_a_row(shared):
    """word2vec.c's pair-by-pair step and the batched tensor step differ only in what a pair sees of the
    updates before it in its batch: with every pair on rows of its own they must agree."""
    n = 6                                                       # pairs: context i, centre n + i, noise 2n + 2i, 2n + 2i + 1
    batch = {"targets": torch.arange(n, 2 * n), "negatives": torch.arange(2 * n, 4 * n).view(n, 2)}
    if shared:   # the grouped layout: centre i has width 1 (slots -1, +1), the second slot padding
        batch.update(inputs=torch.stack([torch.arange(n), torch.zeros(n, dtype=torch.int64)], 1).view(-1),
                     mask=torch.tensor([True, False] * n), widths=torch.ones(n, dtype=torch.int64))
    else:
        batch["inputs"] = torch.arange(n)
    batch["negatives"][0, 1] = n                                # a noise word equal to its centre: skipped
    ref = Word2Vec(4 * n, 8, pairs_per_step=n)
    with torch.no_grad():
        ref.in_embed.weight.normal_(0, 0.3)
        ref.out_embed.weight.normal_(0, 0.3)
    fast = Word2Vec(4 * n, 8, pairs_per_step=n)
    fast.load_state_dict(ref.state_dict())
    before = {k: v.clone() for k, v in ref.state_dict().items()}
    ref_loss = ref.sgd_step(batch, lr=0.1)
    fast_loss = word2vec_compiled.sgd_step(fast, batch, lr=0.1)
    assert float(fast_loss) == pytest.approx(float(ref_loss), rel=1e-5)
    for name, w in ref.state_dict().items():
        torch.testing.assert_close(fast.state_dict()[name], w, rtol=1e-5, atol=1e-6)
        assert not torch.equal(w, before[name])


def test_compiled_step_applies_each_pair_after_the_one_before():
    """Two pairs on the same rows: the second pair's update starts from the first's result (word2vec.c),
    which a batched step cannot do."""
    batch = {"inputs": torch.tensor([1, 1]), "targets": torch.tensor([2, 2]), "negatives": torch.tensor([[3], [3]])}
    one = {k: v[:1] for k, v in batch.items()}
    model, twice = Word2Vec(4, 5), Word2Vec(4, 5)
    with torch.no_grad():
        model.out_embed.weight.normal_(0, 0.3)
    twice.load_state_dict(model.state_dict())
    word2vec_compiled.sgd_step(model, batch, lr=0.2)
    for _ in range(2):
        word2vec_compiled.sgd_step(twice, one, lr=0.2)
    torch.testing.assert_close(model.state_dict(), twice.state_dict())


def word2vec_c_loop(W_in, W_out, pairs, lr):
    """word2vec.c's skip-gram update, one (context, centre, noise words) pair and one output row at a time."""
    loss = 0.0
    for c, t, noise in pairs:
        grad_h = np.zeros_like(W_in[c])
        for p, label in [(t, 1.0)] + [(p, 0.0) for p in noise if p != t]:
            sig = 1 / (1 + np.exp(-float(W_in[c] @ W_out[p])))
            loss -= np.log(sig if label else 1 - sig)
            g = np.float32((label - sig) * lr)
            grad_h += g * W_out[p]
            W_out[p] += g * W_in[c]
        W_in[c] += grad_h
    return loss


@pytest.mark.parametrize("shared", [False, True])
def test_compiled_step_is_word2vec_c_loop_with_repeated_rows(shared):
    """Seven words, so rows repeat within pairs (a noise word drawn twice, or equal to its centre) and
    across them: the compiled step must still be word2vec.c's loop, in its order."""
    rng = np.random.default_rng(1)
    corpus, batches = all_batches([rng.integers(0, 7, size=12) for _ in range(6)], window=2, batch_size=64,
                                  shared_negatives=shared)
    batch = batches[0]
    model = Word2Vec(len(corpus.words), 6)
    with torch.no_grad():
        model.out_embed.weight.normal_(0, 0.5)
    W_in, W_out = (w.detach().numpy().copy() for w in (model.in_embed.weight, model.out_embed.weight))
    if shared:
        centre = torch.repeat_interleave(torch.arange(len(batch["targets"])), 2 * batch["widths"])[batch["mask"]]
        inputs, targets, noise = batch["inputs"][batch["mask"]], batch["targets"][centre], batch["negatives"][centre]
    else:
        inputs, targets, noise = batch["inputs"], batch["targets"], batch["negatives"]
    assert any(len(set(n)) < len(n) or t in n for t, n in zip(targets.tolist(), noise.tolist()))
    expected = word2vec_c_loop(W_in, W_out, zip(inputs.tolist(), targets.tolist(), noise.tolist()), lr=0.3)
    loss = word2vec_compiled.sgd_step(model, batch, lr=0.3)
    assert float(loss) == pytest.approx(expected, rel=1e-4)
    np.testing.assert_allclose(model.in_embed.weight.detach().numpy(), W_in, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model.out_embed.weight.detach().numpy(), W_out, rtol=1e-4, atol=1e-5)


def test_auto_engine_compiles_skipgram_on_cpu_and_refuses_what_it_cannot():
    cfg = Word2VecConfig(dim=8, window=2, min_count=1, sample=0, epochs=1, batch_size=64)
    with pytest.raises(ValueError, match="engine='hogwild'"):
        train_word2vec(topic_corpus(), None, Word2VecConfig(cbow=True, min_count=1), device="cpu", progress=False,
                       engine="compiled")
    # the same seed and batches: only the step differs, so a 1-thread compiled run is reproducible and
    # differs from the tensor step's
    runs = [train_word2vec(topic_corpus(), None, cfg, device="cpu", progress=False, engine=e, threads=1)
            for e in ("auto", "compiled", "hogwild")]
    auto, compiled, hogwild = (r.vectors.vectors for r in runs)
    assert np.array_equal(auto, compiled) and not np.allclose(compiled, hogwild)


@pytest.mark.parametrize("config,engine", [(dict(), "compiled"), (dict(), "hogwild"), (dict(cbow=True), "auto"),
                                           (dict(shared_negatives=True), "compiled"),
                                           (dict(shared_negatives=True), "hogwild")])
def test_loss_falls_and_topics_separate(config, engine):
    cfg = Word2VecConfig(dim=16, window=3, min_count=1, sample=0, epochs=4, batch_size=256, **config)
    words = [f"w{i}" for i in range(20)]
    result = train_word2vec(topic_corpus(), None, cfg, words=words, device="cpu", progress=False, threads=1,
                            engine=engine)
    losses = [row["train_loss"] for row in result.history.epochs]
    assert len(losses) == 4 and losses[-1] < losses[0] - 0.05
    v = result.vectors
    same = np.mean([v.similarity(f"w{i}", f"w{j}") for i in range(10) for j in range(10) if i != j])
    cross = np.mean([v.similarity(f"w{i}", f"w{j + 10}") for i in range(10) for j in range(10)])
    assert same > cross + 0.3
    assert result.words_per_second > 0 and result.raw_words == 300 * 12


def test_learner_engine_trains_the_same_model():
    cfg = Word2VecConfig(dim=16, window=3, min_count=1, sample=0, epochs=3, batch_size=256)
    result = train_word2vec(topic_corpus(), None, cfg, device="cpu", progress=False, engine="learner")
    losses = [row["train_loss"] for row in result.history.epochs]
    assert losses[-1] < losses[0] - 0.05
    lrs = [row["lr"][0] for row in result.history.steps]
    assert lrs[0] == pytest.approx(cfg.start_lr) and lrs[-1] < lrs[0] * 0.05    # linear decay, per pair


def test_config_defaults_follow_word2vec_c():
    cfg = Word2VecConfig()
    assert (cfg.window, cfg.negative, cfg.sample, cfg.min_count, cfg.epochs) == (5, 5, 1e-3, 5, 5)
    assert cfg.start_lr == 0.025 and Word2VecConfig(cbow=True).start_lr == 0.05


# -- the count baseline -------------------------------------------------------------------------
def test_ppmi_matches_a_hand_computation():
    counts = np.array([[0, 2, 1],
                       [2, 0, 3],
                       [1, 3, 0]], dtype=float)
    # |D| = 12; #(w) = row sums 3, 5, 4; #(c) = column sums 3, 5, 4.
    # P_0.75(c) = #(c)^.75 / sum: 3^.75 = 2.27951, 5^.75 = 3.34370, 4^.75 = 2.82843; sum 8.45164
    p_ctx = np.array([2.27951, 3.34370, 2.82843]) / 8.45164
    # PMI(w0, c1) = log( (2/12) / ((3/12) * P(c1)) ) = log(0.166667 / (0.25 * 0.395627)) = 0.52181
    assert p_ctx[1] == pytest.approx(0.395627, abs=1e-5)
    out = ppmi(sp.csr_matrix(counts), cds=0.75).toarray()
    assert out[0, 1] == pytest.approx(0.52181, abs=1e-4)
    # every cell: max(log(#(w,c)·|D|... ) written with probabilities; zero counts stay zero
    for w in range(3):
        for c in range(3):
            if counts[w, c] == 0:
                assert out[w, c] == 0
            else:
                pmi = math.log((counts[w, c] / 12) / ((counts[w].sum() / 12) * p_ctx[c]))
                assert out[w, c] == pytest.approx(max(pmi, 0.0), abs=1e-4)
    assert out[0, 2] == 0 and out[2, 0] == 0                 # PMI -0.004 and -0.076: clipped to 0
    assert out[1, 0] == pytest.approx(0.39411, abs=1e-4)
    # plain PPMI (cds = 1) and the shift log k
    plain = ppmi(sp.csr_matrix(counts), cds=1.0).toarray()
    assert plain[0, 1] == pytest.approx(math.log(2 * 12 / (3 * 5)))
    shifted = ppmi(sp.csr_matrix(counts), cds=1.0, neg=1.5).toarray()
    assert shifted[0, 1] == pytest.approx(math.log(2 * 12 / (3 * 5)) - math.log(1.5))


def test_cooccurrence_window_weights_and_sentence_boundaries():
    corpus = prepare_corpus([np.array([0, 1, 2]), np.array([3, 4])], min_count=1)  # all counts 1: ids kept
    dyn = cooccurrence(corpus, window=2, dynamic_window=True).toarray()
    assert dyn[0, 1] == 1.0 and dyn[0, 2] == 0.5 and dyn[1, 2] == 1.0    # distance 2 weighs (2-2+1)/2
    assert dyn[2, 3] == 0 and dyn[3, 4] == 1.0                           # none across the sentence break
    np.testing.assert_array_equal(dyn, dyn.T)
    flat = cooccurrence(corpus, window=2, dynamic_window=False).toarray()
    assert flat[0, 2] == 1.0


def test_randomized_svd_finds_the_top_singular_values():
    rng = np.random.default_rng(0)
    low_rank = rng.standard_normal((300, 8)) @ np.diag([50, 40, 30, 20, 10, 5, 3, 2]) @ rng.standard_normal((8, 200))
    noisy = low_rank + 0.01 * rng.standard_normal((300, 200))
    U, S, Vt = randomized_svd(sp.csr_matrix(noisy), 5, power_iterations=3)
    exact = np.linalg.svd(noisy, compute_uv=False)[:5]
    np.testing.assert_allclose(S, exact, rtol=1e-3)
    assert U.shape == (300, 5) and Vt.shape == (5, 200)


def test_ppmi_vectors_separate_topics():
    words = [f"w{i}" for i in range(20)]
    v = train_ppmi(topic_corpus(), None, PPMIConfig(dim=4, window=3, min_count=1), words=words)
    assert len(v) == 20 and v.dim == 4
    same = np.mean([v.similarity(f"w{i}", f"w{j}") for i in range(10) for j in range(10) if i != j])
    cross = np.mean([v.similarity(f"w{i}", f"w{j + 10}") for i in range(10) for j in range(10)])
    assert same > cross + 0.3
