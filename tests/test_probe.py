"""Probes (minilib.eval.probe): each test can fail if the probe or the WSD scorer is wrong."""
import numpy as np
import pytest
import torch

from minilib.eval import probe
from minilib.data.vectors import WordVectors
from minilib.models.elmo import BiLM, ELMoConfig


def toy_tagging(n: int, dim: int = 8, n_classes: int = 4, seed: int = 0):
    """Tokens whose tag adds 3 to its own feature (noise 0.3): linearly separable with a wide margin."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, n_classes, (n,), generator=g)
    x = 0.3 * torch.randn(n, dim, generator=g)
    x[torch.arange(n), y] += 3.0
    return x, y


def test_pos_probe_learns_separable_tags(one_thread):
    tx, ty = toy_tagging(2000)
    vx, vy = toy_tagging(500, seed=1)
    res = probe.pos_probe(tx, ty, vx, vy, n_classes=4, config=probe.ProbeConfig(epochs=20))
    assert res["accuracy"] == 1.0 and res["train_accuracy"] == 1.0


def test_pos_probe_random_labels_stay_near_chance(one_thread):
    tx, _ = toy_tagging(2000)
    vx, _ = toy_tagging(2000, seed=1)
    g = torch.Generator().manual_seed(3)
    ty, vy = torch.randint(0, 4, (2000,), generator=g), torch.randint(0, 4, (2000,), generator=g)
    res = probe.pos_probe(tx, ty, vx, vy, n_classes=4)
    assert abs(res["accuracy"] - 0.25) < 0.05


def test_pos_probe_is_seeded(one_thread):
    tx, ty = toy_tagging(300)
    vx, vy = toy_tagging(300, seed=1)
    flip = torch.rand(300, generator=torch.Generator().manual_seed(5)) < 0.3   # noise, so results can differ
    ty = torch.where(flip, (ty + 1) % 4, ty)
    runs = [probe.pos_probe(tx, ty, vx, vy, 4, probe.ProbeConfig(epochs=2, seed=s))["accuracy"] for s in (0, 0, 1)]
    assert runs[0] == runs[1]


def senses_toy(n_per_sense: int = 6, dim: int = 16, seed: int = 0):
    """Two lemmas with two senses each; each sense's vectors sit around its own direction."""
    g = torch.Generator().manual_seed(seed)
    lemmas, senses, vecs = [], [], []
    for k, (lemma, sense) in enumerate([("bank", "bank.n.01"), ("bank", "bank.n.02"),
                                        ("bass", "bass.n.01"), ("bass", "bass.n.07")]):
        centre = torch.zeros(dim)
        centre[k] = 5.0
        for _ in range(n_per_sense):
            lemmas.append(lemma)
            senses.append(sense)
            vecs.append(centre + 0.3 * torch.randn(dim, generator=g))
    return torch.stack(vecs), lemmas, senses


def test_wsd_1nn_perfect_on_separable_senses():
    vecs, lemmas, senses = senses_toy()
    train = probe.wsd_split(lemmas, senses, seed=0)
    res = probe.wsd_1nn(vecs, lemmas, senses, train)
    assert res["accuracy"] == 1.0 and res["n_test"] == 4 * 2 and res["n_lemmas"] == 2


def test_wsd_1nn_fails_with_shuffled_vectors():
    vecs, lemmas, senses = senses_toy(n_per_sense=20)
    shuffled = vecs[torch.randperm(len(vecs), generator=torch.Generator().manual_seed(0))]
    res = probe.wsd_1nn(shuffled, lemmas, senses, probe.wsd_split(lemmas, senses, seed=0))
    assert res["accuracy"] < 0.8


def test_wsd_split_is_seeded_and_keeps_a_centroid_per_sense():
    _, lemmas, senses = senses_toy(n_per_sense=8)
    a, b, c = (probe.wsd_split(lemmas, senses, seed=s) for s in (0, 0, 1))
    assert (a == b).all() and not (a == c).all()
    for sense in set(senses):
        mask = np.array([s == sense for s in senses])
        assert a[mask].sum() == 6 and (~a[mask]).sum() == 2       # 25% of 8 held out, the rest build centroids


def test_most_frequent_sense_counts_training_examples_only():
    lemmas = ["bank"] * 6
    senses = ["b.1", "b.2", "b.2", "b.2", "b.1", "b.1"]
    train = np.array([True, True, True, False, True, False])  # training: b.1 twice, b.2 twice -> tie: first seen
    assert probe.most_frequent_sense(lemmas, senses, train) == {"bank": "b.1"}
    train[4] = False                                            # now b.2 has more training examples
    assert probe.most_frequent_sense(lemmas, senses, train) == {"bank": "b.2"}


def test_wsd_mfs_accuracy_matches_hand_count():
    vecs, lemmas, senses = senses_toy()
    train = np.ones(len(senses), dtype=bool)
    train[[0, 6]] = False            # one bank.n.01 and one bank.n.02 test example; training: 5 and 5 -> tie
    res = probe.wsd_1nn(vecs, lemmas, senses, train)
    assert res["n_test"] == 2 and res["mfs"] == 0.5       # MFS (bank.n.01, first seen) gets one of two


def test_wsd_identical_vectors_answer_like_mfs():
    _, lemmas, senses = senses_toy()
    same = torch.ones(len(senses), 4)                 # a static vector: every occurrence looks alike
    train = np.ones(len(senses), dtype=bool)
    train[[0, 1, 6]] = False                          # training: bank.n.01 x4, bank.n.02 x5 -> MFS bank.n.02
    res = probe.wsd_1nn(same, lemmas, senses, train)
    assert res["accuracy"] == res["mfs"] == pytest.approx(1 / 3)


def test_static_features_zero_for_unknown_words():
    vecs = WordVectors(["the", "bank"], np.array([[1, 0], [0, 1]], dtype=np.float32))
    feats = probe.static_features(vecs, [["the", "zzz", "bank"]])
    assert feats[0].shape == (1, 3, 2) and feats[0][0, 1].abs().sum() == 0 and feats[0][0, 2, 1] == 1
    assert probe.oov_rate(vecs, [["the", "zzz", "bank"]]) == pytest.approx(1 / 3)


def test_layer_features_match_one_by_one_embedding(one_thread):
    torch.manual_seed(0)
    model = BiLM(ELMoConfig(filters=((1, 4), (2, 4)), n_highway=1, cells=16, proj=8, dropout=0.0,
                            vocab_size=50)).eval()
    sents = [["the", "bank"], ["a", "river", "bank", "flooded"], ["hi"]]
    feats = probe.layer_features(model, sents, batch_size=2)
    assert [tuple(f.shape) for f in feats] == [(3, 2, 16), (3, 4, 16), (3, 1, 16)]
    for s, f in zip(sents, feats):      # batching and length-sorting must not change a sentence's vectors
        torch.testing.assert_close(f, model.embed([s])[:, 0], atol=1e-5, rtol=1e-5)


def test_probe_token_matches_tokenizer():
    assert probe.probe_token("The") == "the" and probe.probe_token("``") == '"'
    assert probe.probe_token("didn't") == "didn't"     # would split in two: kept whole so tags align


def test_wsd_examples_keeps_lemmas_with_two_tested_senses():
    from minilib.data import SenseExample

    exs = [SenseExample("bank", "bank.n.01", "the bank of the river", 1)] * 2 + \
          [SenseExample("bank", "bank.n.02", "money in the bank", 3)] * 2 + \
          [SenseExample("bass", "bass.n.01", "a bass guitar", 1)] * 3 + \
          [SenseExample("bass", "bass.n.07", "he caught a bass", 3)] + \
          [SenseExample("hot_dog", "hot_dog.n.01", "a hot dog", 1)] * 4
    kept = probe.wsd_examples(exs)
    assert {e.lemma for e in kept} == {"bank"} and len(kept) == 4
