"""ULMFiT (minilib/models/ulmfit.py) and the sample-efficiency experiment: pooling, BPT3C,
gradual unfreezing, discriminative LRs, STLR, vocabulary growth, and one grid point end to end."""
import dataclasses
import json

import ipywidgets as w
import numpy as np
import pytest
import torch

from minilib import data, tasks
from minilib.data.words import normalize
from minilab.experiments import sample_efficiency as se
from minilib.models.awd_lstm import AWDLSTM, AWDLSTMConfig
from minilib.data.batching import ClassificationBatches, encode_texts, pad_collate
from minilib.models.ulmfit import ULMFiTClassifier, concat_pool
from minilib.eval.classification import error_rate
from minilib.recipes.ulmfit import extend_vocab, fine_tune_classifier, fine_tune_lm, grow_vocab
from minilib.train.callbacks import Callback
from minilib.train.schedules import slanted_triangular
from panels import parts, text


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


def tiny_lm(vocab=50, seed=0, **kw) -> AWDLSTM:
    torch.manual_seed(seed)
    return AWDLSTM(AWDLSTMConfig(vocab, emb_size=8, hidden_size=12, n_layers=3, **kw))


def tiny_lm_text() -> tuple[data.Vocab, list[str]]:
    """A 9-word vocabulary and 100 short texts for stage-(b) tests."""
    vocab = data.Vocab(["<unk>", "<eos>", "a", "good", "film", "bad", "plot", "the", "end"])
    return vocab, ["a good film", "a bad plot", "the end", "good plot", "bad film"] * 20


def tiny_clf(n_classes=3, bptt=70, max_len=1400, seed=0) -> ULMFiTClassifier:
    return ULMFiTClassifier(tiny_lm(seed=seed).encoder, n_classes, hidden=6, bptt=bptt, max_len=max_len)


def toy_data(n=48, vocab=50, n_classes=3, seed=0):
    """Documents whose label is readable from their tokens (so training has something to learn)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n)
    docs = [np.concatenate([rng.integers(3, vocab, rng.integers(2, 15)), [y] * 3]) for y in labels]
    return docs, labels


# ----------------------------------------------------------------------------- pooling and BPT3C

def test_concat_pool_ignores_padding():
    clf = tiny_clf().eval()
    doc = torch.randint(0, 50, (1, 9))
    alone = clf.pooled(doc)  # (1, 24): no padding at all
    other = torch.randint(0, 50, (1, 16))
    ids, lengths = pad_collate([doc[0].numpy(), other[0].numpy()], pad_id=7)  # doc padded with 7 extra ids
    assert ids.shape == (2, 16) and lengths.tolist() == [9, 16]
    batched = clf.pooled(ids, lengths)
    torch.testing.assert_close(batched[0:1], alone, rtol=1e-5, atol=1e-6)
    assert alone.shape == (1, 3 * 8)
    # the padding really would change the pooled vector if it were not masked
    assert not torch.allclose(clf.pooled(ids[0:1]), alone, atol=1e-4)
    torch.testing.assert_close(clf(ids, lengths)[0:1], clf(doc), rtol=1e-5, atol=1e-6)  # logits too


def test_concat_pool_is_last_max_mean():
    out = torch.tensor([[[1.0, -1.0], [3.0, 0.0], [2.0, 5.0], [9.0, 9.0]]])  # (1, 4, 2); position 3 is padding
    pooled = concat_pool(out, torch.tensor([3]))
    torch.testing.assert_close(pooled, torch.tensor([[2.0, 5.0, 3.0, 5.0, 2.0, 4 / 3]]))


def test_bpt3c_matches_one_pass():
    clf = tiny_clf(bptt=70).eval()
    ids = torch.randint(0, 50, (2, 20))
    lengths = torch.tensor([20, 13])
    raw_outputs, _ = clf.encoder(ids)  # one pass, no chunks
    clf.encoder.reset()
    one_pass = concat_pool(raw_outputs[-1], lengths)
    torch.testing.assert_close(clf.pooled(ids, lengths), one_pass)  # shorter than bptt: one chunk
    chunked = ULMFiTClassifier(clf.encoder, 3, hidden=6, bptt=6).eval()  # 4 chunks, state carried
    torch.testing.assert_close(chunked.pooled(ids, lengths), one_pass, rtol=1e-5, atol=1e-6)


def test_bpt3c_pools_the_last_max_len_tokens_and_gradients_reach_them():
    clf = ULMFiTClassifier(tiny_lm().encoder, 2, hidden=6, bptt=4, max_len=8).eval()
    ids = torch.randint(0, 50, (1, 14))
    raw_outputs, _ = clf.encoder(ids)
    clf.encoder.reset()
    h = raw_outputs[-1][0]  # (14, 8)
    expected = torch.cat([h[-1], h[-8:].amax(0), h[-8:].mean(0)])
    torch.testing.assert_close(clf.pooled(ids)[0], expected, rtol=1e-5, atol=1e-6)
    clf.pooled(ids).sum().backward()
    grad = clf.encoder.embedding.weight.grad
    assert grad[ids[0, 8]].abs().sum() > 0  # a token in the window, two chunks before the last: gradient flows
    assert clf.encoder.state is None  # no state leaks to the next document


# ----------------------------------------------------------------------------- batching

def test_classification_batches_sortish_complete_and_no_singletons():
    docs, labels = toy_data(n=49)
    batches = ClassificationBatches(docs, labels, batch_size=8, seed=1)
    seen = []
    for ids, lengths, y in batches:
        assert ids.shape[0] == lengths.shape[0] == y.shape[0] >= 2  # BatchNorm needs 2+ in training
        assert ids.shape[1] == lengths.max()
        seen += [tuple(ids[i, :lengths[i]].tolist()) for i in range(len(ids))]
    assert sorted(seen) == sorted(tuple(d.tolist()) for d in docs)
    assert len(list(batches)) == len(batches)
    first = [b[2].tolist() for b in batches]
    batches.set_epoch(1)
    assert [b[2].tolist() for b in batches] != first  # a new order each epoch
    evaluation = ClassificationBatches(docs, labels, batch_size=8, shuffle=False)
    lens = [int(l) for _, lengths, _ in evaluation for l in lengths]
    assert lens == sorted(lens, reverse=True)


def test_encode_texts_starts_with_bos():
    vocab = data.Vocab(["<unk>", "<eos>", "good", "film"])
    assert [d.tolist() for d in encode_texts(["Good film!", ""], vocab)] == [[1, 2, 3, 0], [1]]


# ----------------------------------------------------------------------------- stage (c): the schedule

class Snapshots(Callback):
    """The classifier's layer groups' parameters after every epoch."""

    def __init__(self):
        self.after = []

    def before_fit(self, learner):
        if not self.after:
            self.after.append(self._copy(learner))

    def after_epoch(self, learner):
        self.after.append(self._copy(learner))

    @staticmethod
    def _copy(learner):
        return [[p.detach().clone() for p in group] for group in learner.groups]


def changed(before, after) -> list[bool]:
    return [any(not torch.equal(a, b) for a, b in zip(g0, g1)) for g0, g1 in zip(before, after)]


def test_gradual_unfreezing_one_group_per_epoch():
    docs, labels = toy_data()
    clf = tiny_clf()
    snaps = Snapshots()
    learner = fine_tune_classifier(clf, ClassificationBatches(docs, labels, 16), epochs=6, lr=1e-2,
                                   callbacks=[snaps])
    groups = ["embedding", "lstm1", "lstm2", "lstm3", "head"]
    assert len(learner.groups) == len(groups)
    for epoch in range(1, 7):
        moved = changed(snaps.after[epoch - 1], snaps.after[epoch])
        expected = [i >= len(groups) - epoch for i in range(len(groups))]  # epoch 1: head; 2: + lstm3; ...
        assert moved == expected, f"epoch {epoch}: changed {dict(zip(groups, moved))}"
    assert learner.n_frozen == 0


def test_without_gradual_unfreezing_every_group_trains_from_the_start():
    docs, labels = toy_data()
    snaps = Snapshots()
    fine_tune_classifier(tiny_clf(), ClassificationBatches(docs, labels, 16), epochs=1, lr=1e-2,
                         gradual_unfreezing=False, callbacks=[snaps])
    assert changed(snaps.after[0], snaps.after[1]) == [True] * 5


def test_discriminative_lrs_and_one_stlr_over_all_epochs():
    docs, labels = toy_data()
    train = ClassificationBatches(docs, labels, 16)
    hi = 1e-2
    learner = fine_tune_classifier(tiny_clf(), train, epochs=3, lr=hi, gradual_unfreezing=False)
    steps = learner.history.steps
    total = 3 * len(train)
    assert len(steps) == total
    for i, row in enumerate(steps):
        mult = slanted_triangular(i, total)  # one triangle over all 3 epochs (eq. 3, T = every step)
        np.testing.assert_allclose(row["lr"], [hi * mult / 2.6 ** (4 - k) for k in range(5)], rtol=1e-9)
    plain = fine_tune_classifier(tiny_clf(), train, epochs=1, lr=hi, discriminative=False, stlr=False)
    assert all(row["lr"] == [hi] * 5 for row in plain.history.steps)


def test_a_cycle_per_stage_gives_every_group_a_full_peak():
    docs, labels = toy_data()
    train = ClassificationBatches(docs, labels, 16)
    hi, n = 1e-2, len(train)
    learner = fine_tune_classifier(tiny_clf(), train, epochs=7, lr=hi, cycle_per_stage=True, stage_lr_decay=0.5)
    steps = learner.history.steps
    assert len(steps) == 7 * n
    # stages: 4 one-epoch unfreezing stages, then one cycle over the 3 epochs with every group trainable
    starts, lengths = [0, n, 2 * n, 3 * n, 4 * n], [n, n, n, n, 3 * n]
    for stage, (start, length) in enumerate(zip(starts, lengths)):
        for i in range(length):
            mult = slanted_triangular(i, length)
            np.testing.assert_allclose(steps[start + i]["lr"][-1], hi * 0.5 ** stage * mult, rtol=1e-9)
    peak_of_embedding = max(r["lr"][0] for r in steps[4 * n:])
    assert peak_of_embedding == pytest.approx(hi * 0.5 ** 4 / 2.6 ** 4)  # one cycle read literally: ~1/3 of this
    one = fine_tune_classifier(tiny_clf(), train, epochs=7, lr=hi)
    assert max(r["lr"][0] for r in one.history.steps[4 * n:]) < 0.5 * hi / 2.6 ** 4


def test_classifier_learns_the_toy_task():
    docs, labels = toy_data(n=96)
    train = ClassificationBatches(docs, labels, 16)
    clf = tiny_clf()
    before = error_rate(clf, ClassificationBatches(docs, labels, 32, shuffle=False))
    fine_tune_classifier(clf, train, epochs=8, lr=3e-2, gradual_unfreezing=False, discriminative=False)
    after = error_rate(clf, ClassificationBatches(docs, labels, 32, shuffle=False))
    assert after < min(before, 0.4)


# ----------------------------------------------------------------------------- stage (b): vocabulary and LM

def test_grow_and_extend_vocab_keep_old_rows_and_set_new_rows_to_the_mean():
    old = data.Vocab(["<unk>", "<eos>", "the", "film", "was"], [0, 0, 9, 5, 4])
    new = grow_vocab(old, [["the", "plot", "plot", "plot", "twist", "twist", "twist", "rare"]], min_count=3)
    assert new.itos == ["<unk>", "<eos>", "the", "film", "was", "plot", "twist"]  # old ids unchanged
    lm = tiny_lm(vocab=len(old))
    with torch.no_grad():
        lm.decoder.bias.normal_()
    big = extend_vocab(lm, old, new)
    w, b = lm.encoder.embedding.weight, lm.decoder.bias
    torch.testing.assert_close(big.encoder.embedding.weight[:5], w)
    torch.testing.assert_close(big.encoder.embedding.weight[5:], w.mean(0).expand(2, -1))
    torch.testing.assert_close(big.decoder.bias[:5], b)
    torch.testing.assert_close(big.decoder.bias[5:], b.mean().expand(2))
    assert big.decoder.weight is big.encoder.embedding.weight  # still tied
    sd_old, sd_new = lm.state_dict(), big.state_dict()
    for k in sd_old:
        if "embedding" not in k and "decoder" not in k:
            torch.testing.assert_close(sd_new[k], sd_old[k])
    shuffled = data.Vocab(["<unk>", "film", "new", "the"])  # mapping is by token, not by position
    mapped = extend_vocab(lm, old, shuffled).encoder.embedding.weight
    torch.testing.assert_close(mapped[[1, 3]], w[[3, 2]])
    torch.testing.assert_close(mapped[2], w.mean(0))
    with pytest.raises(ValueError, match="old_vocab"):
        extend_vocab(lm, new, new)


def test_fine_tune_lm_discriminative_stlr_and_held_out_loss():
    vocab, texts = tiny_lm_text()
    lm = tiny_lm(vocab=len(vocab))
    learner = fine_tune_lm(lm, texts, vocab, epochs=2, lr=1e-2, batch_size=4, bptt=8, valid_frac=0.1)
    steps = learner.history.steps
    for i, row in enumerate(steps):
        np.testing.assert_allclose(row["lr"], [1e-2 * slanted_triangular(i, len(steps)) / 2.6 ** (3 - k)
                                               for k in range(4)], rtol=1e-9)
    assert np.isfinite(learner.history.epochs[-1]["valid_loss"])
    assert learner.history.epochs[-1]["valid_loss"] < learner.history.epochs[0]["train_loss"]
    with pytest.raises(ValueError, match="extend_vocab"):
        fine_tune_lm(tiny_lm(vocab=5), texts, vocab)


def test_fine_tune_lm_resumes_a_killed_run_exactly(tmp_path):
    """Stage (b) on rt's text takes ~2 hours on a 2-core CPU: a run killed midway continues from its checkpoint.
    The one thing not restored is the LSTM state carried from batch to batch (truncated BPTT): the
    resumed run starts it from zeros, as at an epoch start. So the reference run resets it there too."""
    from minilib.train.callbacks import Callback

    class Crash(Callback):
        def after_step(self, learner):
            if learner.step == 7:
                raise RuntimeError("killed")

    class ResetAt6(Callback):
        def before_batch(self, learner):
            if learner.step == 6:
                learner.model.reset()

    vocab, texts = tiny_lm_text()

    def run(ckpt=None, callbacks=(), init_seed=0):
        lm = tiny_lm(vocab=len(vocab), seed=init_seed)
        torch.manual_seed(0)
        fine_tune_lm(lm, texts, vocab, epochs=2, lr=1e-2, batch_size=4, bptt=8, callbacks=callbacks,
                     checkpoint_dir=ckpt, checkpoint_every=3)  # saved after steps 3 and 6, then killed at 7
        return lm.state_dict()

    reference = run(callbacks=[ResetAt6()])
    with pytest.raises(RuntimeError, match="killed"):
        run(tmp_path, [Crash()])
    resumed = run(tmp_path, init_seed=1)  # another init: the weights must come from the checkpoint
    for k, v in reference.items():
        assert torch.equal(resumed[k], v), k


# ----------------------------------------------------------------------------- sample efficiency

@pytest.mark.parametrize("task", ["rt", "trec"])
@pytest.mark.data
def test_labelled_sample_is_stratified_seeded_nested_and_never_a_test_item(task):
    texts, labels = se.task_data(task, "train")
    labels = np.asarray(labels)
    idx = tasks.stratified_sample(labels, 100, seed=3)
    assert len(idx) == len(set(idx.tolist())) == 100
    share = np.bincount(labels, minlength=se.n_classes(task)) / len(labels)
    got = np.bincount(labels[idx], minlength=se.n_classes(task))
    assert np.all(np.abs(got - share * 100) <= 1.0 + 1e-9)  # proportional to within rounding
    assert np.all(got >= 1)
    np.testing.assert_array_equal(idx, tasks.stratified_sample(labels, 100, seed=3))  # seeded
    assert set(idx.tolist()) != set(tasks.stratified_sample(labels, 100, seed=4).tolist())
    assert set(tasks.stratified_sample(labels, 50, seed=3).tolist()) <= set(idx.tolist())  # nested
    test_keys = {normalize(t) for t in se.task_data(task, "test")[0]}
    big = tasks.stratified_sample(labels, min(2000, len(labels)), seed=0)
    assert not any(normalize(texts[i]) in test_keys for i in big)


def test_stratified_sample_rounding_and_errors():
    labels = [0] * 90 + [1] * 9 + [2] * 1
    idx = tasks.stratified_sample(labels, 10, seed=0)
    assert np.bincount(np.asarray(labels)[idx], minlength=3).tolist() == [8, 1, 1]  # every class present
    with pytest.raises(ValueError, match="labelled examples"):
        tasks.stratified_sample(labels, 101, seed=0)


@pytest.fixture(scope="module")
def tiny_pretrained(tmp_path_factory):
    """A randomly initialised 'pretrained' AWD-LSTM over the RT words, saved like `pretrain` does."""
    from minilib.models.pretrained import save_pretrained

    texts, _ = se.task_data("rt", "train")
    vocab = data.Vocab.build((data.tokenize(t) for t in texts), max_size=1500, specials=("<unk>", "<eos>"))
    torch.manual_seed(0)
    model = AWDLSTM(AWDLSTMConfig(len(vocab), emb_size=16, hidden_size=24, n_layers=3))
    path = tmp_path_factory.mktemp("pretrained") / "awd-tiny.pt"
    save_pretrained(path, model, vocab, {"model": "awd-lstm", "note": "random init, for tests"})
    return path


@pytest.mark.data
def test_run_point_end_to_end_and_cached(tiny_pretrained, tmp_path, monkeypatch):
    config = dataclasses.replace(se.SIZES["smoke"], label_counts=(20,), clf_epochs=2, lm_max_texts=150,
                                 max_test=100)
    rows = {}
    for method in se.METHODS:
        rows[method] = se.run_point("rt", 20, method, 0, tiny_pretrained, config, results_dir=tmp_path,
                                    lm_cache_dir=tmp_path / "lm")
    for method, row in rows.items():
        assert 0 <= row["error"] <= 1 and row["n_test"] == 100 and row["method"] == method
        saved = json.loads((tmp_path / f"rt-{method}-n20-s0-{row['provenance']['profile']}.json").read_text())
        assert saved["error"] == row["error"] and saved["pretrained_sha256"] == row["pretrained_sha256"]
        assert {"commit", "device", "time"} <= set(saved["provenance"])
    assert rows["ulmfit"]["lm_seconds"] > rows["ulmfit-supervised"]["lm_seconds"]  # stage (b) ran
    assert list((tmp_path / "lm").glob("lm-*.pt"))
    import minilib.recipes.ulmfit as recipes

    trained = []
    monkeypatch.setattr(recipes, "fine_tune_classifier", lambda *a, **k: trained.append(a))
    again = se.run_point("rt", 20, "ulmfit", 0, tiny_pretrained, config, results_dir=tmp_path,
                         lm_cache_dir=tmp_path / "lm")
    assert again == rows["ulmfit"] and trained == []   # reused, not retrained
    grid = se.run_grid(config, tiny_pretrained, results_dir=tmp_path, lm_cache_dir=tmp_path / "lm")
    assert trained == []                               # every point of this grid is cached
    assert sorted(r["error"] for r in grid) == sorted(r["error"] for r in rows.values())
    summary = se.summarize(list(rows.values()))
    assert {r["method"] for r in summary} == set(se.METHODS)


@pytest.mark.data
def test_a_stopped_point_is_not_cached_and_resumes_where_it_stopped(tiny_pretrained, tmp_path, monkeypatch):
    """An all-label point on rt takes ~45 CPU minutes. Stopped in a notebook mid-epoch in its third unfreezing
    stage, it caches no result (fit returns normally in a notebook, but not inside a grid point); run again,
    it resumes from the step it stopped at and ends exactly as an uninterrupted run; its folder then goes."""
    import minilib.train.learner as learner_module

    class Stop(Callback):
        def after_step(self, learner):
            if learner.step == 57:
                raise KeyboardInterrupt

    class Count(Callback):
        steps = 0

        def after_step(self, learner):
            self.steps += 1

    config = dataclasses.replace(se.SIZES["smoke"], clf_epochs=4, max_test=100)
    monkeypatch.setattr(se, "RESUME_MIN_STEPS", 80)  # this point's 4 epochs x 20 steps (a short one does not resume)

    def point(name, callbacks=()):
        return se.run_point("rt", 20, "ulmfit-supervised", 0, tiny_pretrained, config, callbacks=callbacks,
                            results_dir=tmp_path / name, resume_dir=tmp_path / "partial")

    trained, retrained = Count(), Count()
    reference = point("reference", [trained])
    assert len(reference["curve"]) == 4 and not any((tmp_path / "partial").iterdir())
    monkeypatch.setattr(learner_module, "in_notebook", lambda: True)
    with pytest.raises(KeyboardInterrupt):
        point("resumed", [Stop()])
    assert not (tmp_path / "resumed").exists()
    (partial,) = (tmp_path / "partial").iterdir()
    assert sorted(p.name for p in partial.iterdir()) == ["fit-0.pt", "fit-1.pt", "fit-2.pt"]
    resumed = point("resumed", [retrained])
    assert retrained.steps == trained.steps - 57  # the Stop wrote a checkpoint: not one step trained twice
    assert resumed["curve"] == reference["curve"] and resumed["error"] == reference["error"]
    assert not partial.exists()


@pytest.mark.data
def test_resolve_labels_all_and_bad_counts():
    assert se.resolve_labels("rt", "all") == len(se.task_data("rt", "train")[1])
    assert se.resolve_labels("trec", "50") == 50
    for bad in (0, -3, 10**6, "many"):
        with pytest.raises(ValueError, match="label count"):
            se.resolve_labels("rt", bad)


def test_catch_up_reads_the_multiple_off_the_curve():
    def row(method, n, err):
        return {"task": "rt", "method": method, "n_labels": n, "error": err, "error_std": 0.0, "seeds": 3}
    summary = [row("ulmfit", 100, 0.30), row("scratch", 100, 0.48), row("scratch", 500, 0.35),
               row("scratch", 1000, 0.29), row("scratch", 2000, 0.25)]
    assert se.catch_up(summary, "rt") == 10.0
    assert se.catch_up(summary[:3], "rt") is None  # scratch never gets there in this grid
    with pytest.raises(ValueError, match="no ulmfit point"):
        se.catch_up(summary, "rt", at=50)


@pytest.mark.data
def test_recipes_switch_the_tricks_they_name(monkeypatch, tiny_pretrained, tmp_path):
    """Each ablation turns off exactly its own trick in stage (c), and only ulmfit* load the pretrained weights."""
    import minilib.recipes.ulmfit as ulmfit_module  # run_point imports fine_tune_classifier from here when called

    seen = {}
    original = ulmfit_module.fine_tune_classifier

    def spy(model, train, valid=None, **kw):
        seen[current] = {k: kw[k] for k in ("gradual_unfreezing", "discriminative", "stlr")}
        return original(model, train, valid, **kw)

    monkeypatch.setattr(ulmfit_module, "fine_tune_classifier", spy)
    config = dataclasses.replace(se.SIZES["smoke"], clf_epochs=1, lm_max_texts=150, max_test=60)
    for current in ("ulmfit-no-discr", "ulmfit-no-stlr", "ulmfit-no-unfreezing"):
        se.run_point("rt", 20, current, 0, tiny_pretrained, config, results_dir=tmp_path, lm_cache_dir=tmp_path / "lm")
    assert seen["ulmfit-no-discr"] == dict(gradual_unfreezing=True, discriminative=False, stlr=True)
    assert seen["ulmfit-no-stlr"] == dict(gradual_unfreezing=True, discriminative=True, stlr=False)
    assert seen["ulmfit-no-unfreezing"] == dict(gradual_unfreezing=False, discriminative=True, stlr=True)


@pytest.mark.data
def test_experiment_cli_prints_the_summary_line(tiny_pretrained, tmp_path, capsys, monkeypatch):
    from minilab.cli import main

    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    assert main(["experiment", "sample-efficiency", "--task", "rt", "--labels", "20", "--methods", "scratch,ulmfit",
                 "--seeds", "1", "--checkpoint", str(tiny_pretrained), "--results-dir", str(tmp_path)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("sample-efficiency: rt labels=20 ") and "scratch_err=" in last and "ulmfit_err=" in last
    assert main(["experiment", "sample-efficiency", "--labels", "0", "--checkpoint", str(tiny_pretrained)]) == 2
    assert "label count 0 for rt" in capsys.readouterr().err
    assert main(["experiment", "sample-efficiency", "--labels", "20", "--methods", "scratch",
                 "--checkpoint", str(tmp_path / "missing.pt")]) == 2
    assert "make one with `python -m minilib pretrain awd-lstm`" in capsys.readouterr().err


@pytest.mark.data
def test_sample_efficiency_widget_trains_once_and_never_raises(tiny_pretrained, tmp_path, monkeypatch):
    from minilab import widgets

    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    monkeypatch.setattr(widgets, "DOUBLE_CLICK_S", 0.0)  # the clicks below are deliberate, not a double-click
    config = dataclasses.replace(se.SIZES["smoke"], label_counts=(20, 40), seeds=(0,), clf_epochs=1,
                                 lm_max_texts=150, max_test=60)
    panel = widgets.sample_efficiency_explorer("rt", tiny_pretrained, config, results_dir=tmp_path)
    assert "no cached smoke points" in text(panel)
    labels, _, button = panel.children[0].children
    labels.value = 20
    button.click()
    shown, step = text(panel), parts(panel, w.HTML)[-1].value
    assert "⚠" not in shown and "trained here" in shown and "done: 3 points" in step
    assert len(list(tmp_path.glob("rt-*-n20-*.json"))) == 3
    import minilib.recipes.ulmfit as recipes

    trained = []
    monkeypatch.setattr(recipes, "fine_tune_classifier", lambda *a, **k: trained.append(a))
    button.click()  # the same point again: read from the cache, not retrained
    assert trained == [] and "⚠" not in text(panel)

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")
    monkeypatch.setattr(se, "run_point", broken)
    button.click()
    assert "⚠ RuntimeError: out of memory" in text(panel) and not button.disabled
