"""minilib.tasks: a validation task holds training items out, stratified, and never reads the test split."""
import pytest

from minilib import tasks


@pytest.fixture
def task(tmp_path):
    path = tmp_path / "reviews.csv"
    rows = [f"review {i} was {'fine' if i % 3 else 'dull'},{'pos' if i % 3 else 'neg'}" for i in range(300)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return tasks.Task.from_csv(path, test_fraction=0.2, seed=0)


def test_validation_holds_out_training_items_stratified(task):
    valid = task.validation(fraction=0.1, seed=0)
    assert valid.name == "reviews-valid" and len(valid.test) == round(0.1 * len(task.train))
    assert len(valid.train) + len(valid.test) == len(task.train)
    assert set(valid.train.texts) | set(valid.test.texts) == set(task.train.texts)
    assert not set(valid.test.texts) & set(task.test.texts)          # the real test split is not in it
    assert not set(valid.test.texts) & set(valid.train.texts)
    share = {split: sum(getattr(valid, split).labels) / len(getattr(valid, split)) for split in ("train", "test")}
    assert share["train"] == pytest.approx(share["test"], abs=0.02)  # class balance kept
    assert task.validation(0.1, seed=0).test.texts == valid.test.texts != task.validation(0.1, seed=1).test.texts
    assert valid.fingerprint != task.fingerprint


def test_validation_lm_text_leaves_the_held_out_items_out(task):
    import dataclasses

    with_text = dataclasses.replace(task, lm_text=lambda: list(task.train.texts) + ["unlabelled extra"])
    valid = with_text.validation()
    assert "unlabelled extra" in valid.lm_text() and not set(valid.lm_text()) & set(valid.test.texts)


# ----------------------------------------------------------------------------- the metric a task is scored by

def _two_class_csv(path, rare: int, common: int):
    rows = [f"review {i} was fine,pos" for i in range(rare)] + [f"review {i} was dull,neg" for i in range(common)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


def test_a_csv_with_a_rare_class_is_scored_by_balanced_accuracy(tmp_path):
    rare = tasks.Task.from_csv(_two_class_csv(tmp_path / "rare.csv", 20, 280), seed=0)      # 6.7 % pos
    even = tasks.Task.from_csv(_two_class_csv(tmp_path / "even.csv", 90, 210), seed=0)      # 30 %: over a quarter
    assert rare.metric == "balanced_accuracy" and even.metric == "accuracy"
    assert "scored by balanced accuracy" in rare.describe() and rare.validation().metric == "balanced_accuracy"
    told = tasks.Task.from_csv(tmp_path / "rare.csv", seed=0, metric="accuracy")
    assert told.metric == "accuracy" and told.fingerprint != rare.fingerprint   # another score, another cache key
    with pytest.raises(tasks.TaskError, match="metric 'f1'"):
        tasks.Task.from_csv(tmp_path / "rare.csv", metric="f1")


def test_balanced_accuracy_is_one_over_k_for_a_constant_answer():
    from minilib.eval.classification import balanced_accuracy

    truth = [0] * 91 + [1] * 9
    assert balanced_accuracy([0] * 100, truth) == 0.5
    assert balanced_accuracy(truth, truth) == 1.0
    assert balanced_accuracy([0] * 91 + [1, 1, 1, 0, 0, 0, 0, 0, 0], truth) == pytest.approx((1 + 3 / 9) / 2)


@pytest.mark.data
def test_class_weighted_bag_of_words_beats_the_majority_on_a_rare_class(tmp_path):
    """trec's LOC questions cut to 9 % of a two-class set (real questions): at 100 labels the weighted bag of words
    finds the rare class on every seed (balanced error under the majority's 0.5); fit on accuracy it never did."""
    import csv

    import numpy as np

    from minilab.experiments import grid

    trec = tasks.get("trec")
    rng = np.random.default_rng(0)
    rows = [(t, "location" if trec.classes[y] == "LOC" else "other")
            for t, y in zip(list(trec.train.texts) + list(trec.test.texts), list(trec.train.labels) + list(trec.test.labels))]
    other = [r for r in rows if r[1] == "other"]
    loc = [r for r in rows if r[1] == "location"]
    keep = other + [loc[i] for i in rng.permutation(len(loc))[:round(len(other) * 0.09 / 0.91)]]
    path = tmp_path / "where.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *(keep[i] for i in rng.permutation(len(keep)))])
    task = tasks.Task.from_csv(path)
    assert task.metric == "balanced_accuracy"
    for seed in range(3):
        majority = grid.run_point(task, 100, "majority", seed, results_dir=tmp_path / "points")
        bow = grid.run_point(task, 100, "bow-lr", seed, results_dir=tmp_path / "points")
        assert majority["error"] == 0.5 and bow["class_weights"] is True
        assert bow["error"] < 0.5, (seed, bow["error"])


def test_choose_task_never_reads_a_test_split():
    """tools/choose_task.py measures candidates on held-out training labels: no text of a would-be (or real)
    test split reaches its tasks, and sms, with 11 % spam, is scored by balanced accuracy there too."""
    import importlib.util
    from pathlib import Path

    from minilib import data
    from minilib.data.splits import hash_unit
    from minilib.data.words import normalize

    spec = importlib.util.spec_from_file_location("choose_task", Path(__file__).parents[1] / "tools" / "choose_task.py")
    choose = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(choose)
    tweets = choose.rated("tweets")
    assert tweets and not [t for t, _ in tweets if hash_unit("tweets/" + normalize(t)) < choose.TEST_FRACTION]
    found = choose.candidates()
    sms = choose.validation_task("sms", *found["sms"])
    real_test = {normalize(r.text) for r in data.sms_spam("test")}
    assert not {normalize(t) for t in sms.train.texts + sms.test.texts} & real_test
    assert sms.metric == "balanced_accuracy" and choose.validation_task("rt", *found["rt"]).metric == "accuracy"
