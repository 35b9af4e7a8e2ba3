"""RT sentiment from static vs ELMo features (minilab.experiments.elmo_downstream) and its widget, on toy features."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from torch import nn

from minilib import tasks
from minilab import widgets
from minilib.data.vectors import WordVectors
from minilab.experiments import elmo_downstream as ed
from minilab.experiments.grid import label_count
from minilib.models.elmo import ScalarMix
from panels import text

N_TRAIN, N_TEST = 400, 200


def toy_features(n, layers, seed, signal=2.0):
    """Labels 0/1; only layer 1's first feature carries them."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randn(n, layers, 6, generator=g)
    x[:, min(1, layers - 1), 0] += signal * (2 * y - 1)
    return x, y


@pytest.fixture
def toy_task(monkeypatch, tmp_path, one_thread):
    data = {"train": toy_features(N_TRAIN, 3, 0), "test": toy_features(N_TEST, 3, 1)}
    toy = tasks.Task("rt", "sentence", ("negative", "positive"),
                     tasks.Split(["w"] * N_TRAIN, data["train"][1].tolist()),
                     tasks.Split(["w"] * N_TEST, data["test"][1].tolist()))
    monkeypatch.setitem(tasks.REGISTRY, "rt", lambda: toy)     # the widget asks for "rt": it gets the toy task
    tasks._registered.cache_clear()
    calls = []

    def features(arm, elmo_path, task, split, **_):
        calls.append((arm, split))
        x = data[split][0]
        return x if arm == "elmo" else x[:, 1:2] * 0.0 + torch.randn(len(x), 1, 6)   # static: no signal
    monkeypatch.setattr(ed, "features", features)
    ckpt = tmp_path / "elmo.pt"
    ckpt.write_bytes(b"a stand-in checkpoint: only its sha256 is read")
    config = ed.DownstreamConfig(label_counts=(40, ed.ALL), seeds=(0, 1), epochs=15, lr=3e-2, l2_grid=(1e-3, 1e-1))
    yield ckpt, config, tmp_path / "results", calls
    tasks._registered.cache_clear()


def test_mean_pooling_commutes_with_scalar_mix():
    torch.manual_seed(0)
    layers = torch.randn(3, 2, 5, 4)                       # (L, B, T, D)
    mix = ScalarMix(3)
    with torch.no_grad():
        mix.w.copy_(torch.tensor([0.3, -1.0, 2.0]))
        pooled_then_mixed = mix(layers.mean(2, keepdim=True))[:, 0]
        torch.testing.assert_close(pooled_then_mixed, mix(layers).mean(1))


def test_static_pooled_averages_known_words():
    vecs = WordVectors(["good", "bad"], np.array([[1, 0], [0, 1]], dtype=np.float32))
    x = ed.static_pooled(vecs, [["good", "zzz", "bad"], ["zzz"]])
    assert x.shape == (2, 1, 2)
    torch.testing.assert_close(x[0, 0], torch.tensor([0.5, 0.5]))
    assert x[1].abs().sum() == 0


def test_train_head_finds_the_informative_layer(one_thread):
    tx, ty = toy_features(N_TRAIN, 3, 0)
    vx, vy = toy_features(N_TEST, 3, 1)
    config = ed.DownstreamConfig(epochs=15, lr=3e-2)   # toy data: a faster LR than real features need
    res = ed.train_head({"elmo": tx}, ty, {"elmo": vx}, vy, config, seed=0, n_classes=2)
    assert res["accuracy"] > 0.9 and len(res["curve"]) == 15
    assert res["curve"][-1]["train_loss"] < res["curve"][0]["train_loss"]
    assert sum(res["layer_weights"]) == pytest.approx(1.0) and np.argmax(res["layer_weights"]) == 1


def test_train_head_has_a_class_per_label_of_a_multiclass_task(one_thread):
    """TREC has 6 classes: the head was once built with RT's 2 and failed on label 2 ("Target 3 is out of bounds")."""
    g = torch.Generator().manual_seed(0)
    y = torch.arange(40) % 4
    x = torch.randn(40, 3, 8, generator=g) + nn.functional.one_hot(y, 8).float()[:, None, :] * 3
    res = ed.train_head({"elmo": x}, y, {"elmo": x}, y, ed.DownstreamConfig(epochs=10, lr=3e-2), seed=0, n_classes=4)
    assert res["accuracy"] > 0.9
    lam, scores = ed.choose_l2({"elmo": x}, y, ed.DownstreamConfig(epochs=2, l2_grid=(0.0, 1.0), cv_folds=2), seed=0,
                               n_classes=4)
    assert set(scores) == {0.0, 1.0}


@pytest.mark.slow   # ~20 s of CPU: a grid of small probes trained, then the claim checked
def test_run_point_caches_and_elmo_beats_static(toy_task):
    ckpt, config, results, calls = toy_task
    rows = ed.run_grid(config, ckpt, results_dir=results, log=lambda *_: None)
    assert len(rows) == 2 * len(ed.ARMS) * 2 and len(list(results.glob("*.json"))) == len(rows)
    summary = {(s["n_labels"], s["arm"]): s for s in ed.summarize(rows)}
    assert summary[(N_TRAIN, "elmo")]["accuracy"] > 0.85 > summary[(N_TRAIN, "static")]["accuracy"]
    assert summary[(N_TRAIN, "static+elmo")]["accuracy"] > 0.85          # the concatenation keeps ELMo's signal
    assert rows[0]["provenance"]["seed"] == 0 and rows[0]["n_labels"] == 40
    assert all(r["l2"] in config.l2_grid and set(r["cv_accuracy"]) == {"0.001", "0.1"} for r in rows)
    n_calls = len(calls)
    again = ed.run_point("elmo", 40, 1, ckpt, config, results_dir=results)      # from the cache: nothing computed
    assert len(calls) == n_calls and again == next(r for r in rows if (r["arm"], r["n_labels"], r["seed"]) == ("elmo", 40, 1))
    other = ed.DownstreamConfig(label_counts=(40,), seeds=(1,), epochs=3)         # other settings: retrained
    assert len(ed.run_point("elmo", 40, 1, ckpt, other, results_dir=results)["curve"]) == 3


def test_choose_l2_cross_validates_inside_the_labelled_sample(monkeypatch):
    calls = []

    def fake_train_head(tx, ty, vx, vy, config, seed, stats=None, l2=0.0, *, n_classes):
        calls.append((l2, tx["elmo"][:, 0, 0].long().tolist(), vx["elmo"][:, 0, 0].long().tolist(), vy.tolist()))
        return {"accuracy": {1e-4: 0.6, 1e-2: 0.7, 1.0: 0.7}[l2]}
    monkeypatch.setattr(ed, "train_head", fake_train_head)
    x, y = torch.arange(30.0).reshape(30, 1, 1), torch.arange(30) % 2          # item i has feature i
    config = ed.DownstreamConfig(l2_grid=(1e-4, 1e-2, 1.0), cv_folds=3)
    lam, scores = ed.choose_l2({"elmo": x}, y, config, seed=0, n_classes=2)
    assert scores == pytest.approx({1e-4: 0.6, 1e-2: 0.7, 1.0: 0.7}) and lam == 1.0    # a tie goes to the stronger L2
    assert len(calls) == 9
    for l2 in config.l2_grid:
        folds = [c for c in calls if c[0] == l2]
        held_out = sorted(i for c in folds for i in c[2])
        assert held_out == list(range(30))                                       # each item validated once
        for _, train, val, val_y in folds:
            assert not set(train) & set(val) and len(train) + len(val) == 30
            assert val_y == [i % 2 for i in val] and sum(val_y) == 5              # stratified: 5 of each class
    assert ed.choose_l2({"elmo": x}, y, ed.DownstreamConfig(l2_grid=(0.5,)), seed=0, n_classes=2) == (0.5, {})


def test_label_count_messages():
    assert label_count(ed.ALL, 50) == 50 and label_count("20", 50) == 20
    with pytest.raises(ValueError, match="from 1 to 50"):
        label_count(51, 50)


@pytest.mark.data
@pytest.mark.slow            # an end-to-end run of a command: make test, not test-fast
def test_downstream_explorer_shows_cache_and_ignores_a_second_click(toy_task, monkeypatch):
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")  # the panel names the profile it reads; not the machine's default
    ckpt, config, results, _ = toy_task
    for arm in ("static", "elmo", "static+elmo"):
        ed.run_point(arm, 40, 0, ckpt, config, results_dir=results)
    panel = widgets.downstream_explorer(ckpt, config, results_dir=results)
    assert "static+elmo      at    40 labels" in text(panel) and "⚠" not in text(panel)
    slider, _, button = panel.children[0].children
    slider.value = ed.ALL                  # nothing cached for "all" (40 is not all of the 400)
    assert "no cached smoke points at all labels" in text(panel) and "⚠" not in text(panel)

    real, trained = ed.run_point, []

    def run_point_clicking_again(*args, **kwargs):
        button.click()                     # a second click while the first is training: must be ignored
        trained.append(args[:3])
        return real(*args, **kwargs)
    monkeypatch.setattr(ed, "run_point", run_point_clicking_again)
    button.click()
    shown = text(panel)
    assert trained == [(arm, ed.ALL, 0) for arm in ed.ARMS] and "⚠" not in shown
    assert "elmo             at   400 labels" in shown and "trained here" in shown and not button.disabled


def test_untrained_control_arms_read_their_own_features(toy_task):
    ckpt, config, results, calls = toy_task
    assert {"untrained", "static+untrained"} <= set(ed.ARMS) and "untrained" in ed.KINDS
    row = ed.run_point("static+untrained", 40, 0, ckpt, config, results_dir=results)
    assert {arm for arm, _ in calls} == {"static", "untrained"} and row["arm"] == "static+untrained"
    with pytest.raises(ValueError, match="use one of"):
        ed.arm_features("static+random", ckpt, "rt", "train")
