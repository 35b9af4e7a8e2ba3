"""minilab/exercises.py: a worked check fails on a wrong answer; an open exercise reports the learner's run."""
import pytest

from minilab.exercises import check, compare_prediction


def test_check_passes_within_tolerance_and_raises_with_the_hint(capsys):
    check("unanswered", None, 1.0)
    assert "replace None with your answer" in capsys.readouterr().out
    check("close", 1.0 + 1e-9, 1.0)
    with pytest.raises(AssertionError, match="hint: softmax first"):
        check("far", 1.1, 1.0, hint="softmax first")


def test_compare_prediction_runs_only_after_a_prediction(capsys):
    ran = []

    def run(shows="larger"):
        ran.append(shows)
        return shows
    choices = ("larger", "smaller")
    assert compare_prediction("lead", None, run, choices) is None and ran == []   # no answer shown before a prediction
    assert "write your prediction" in capsys.readouterr().out
    assert compare_prediction("lead", "larger", run, choices) is True and ran == ["larger"]
    assert compare_prediction("lead", "smaller", run, choices, hint="look at n=10") is False
    assert "look at n=10" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="write one of"):
        compare_prediction("lead", "bigger", run, choices)
    with pytest.raises(AssertionError, match="did the experiment run"):
        compare_prediction("lead", "larger", lambda: None, choices)
