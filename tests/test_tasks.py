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
