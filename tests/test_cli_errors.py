"""Every `python -m minilib ...` user mistake ends as one line on stderr naming the fix, exit status 2."""
import pytest

from minilab import provenance
from minilab.cli import main

ELMO = provenance.REPO_ROOT / "checkpoints" / "elmo-laptop.pt"


@pytest.fixture
def reviews(tmp_path):
    path = tmp_path / "reviews.csv"
    rows = [f"a fine film number {i},pos" if i % 2 else f"a dull film number {i},neg" for i in range(60)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


def run(capsys, *argv):
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    return code, err


def fails_with(capsys, message, *argv):
    code, err = run(capsys, *argv)
    assert code == 2, (code, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert message in err, err


def experiment(path, *more):
    return ["experiment", "sample-efficiency", "--task", str(path), "--seeds", "1", *more]


def test_a_good_csv_run_prints_its_summary_line(capsys, reviews, tmp_path):
    code = main(experiment(reviews, "--labels", "10", "--methods", "majority", "--results-dir", str(tmp_path)))
    out = capsys.readouterr().out
    assert code == 0 and "sample-efficiency: reviews labels=10 majority_err=" in out


def test_bad_label_count(capsys, reviews):
    fails_with(capsys, "label count 0 for reviews: use a number from 1 to 48", *experiment(reviews, "--labels", "0", "--methods", "majority"))
    fails_with(capsys, "label count 'ten': use whole numbers or 'all'", *experiment(reviews, "--labels", "ten", "--methods", "majority"))


def test_more_labels_than_exist(capsys, reviews):
    fails_with(capsys, "label count 500 for reviews: use a number from 1 to 48", *experiment(reviews, "--labels", "500", "--methods", "majority"))


def test_unknown_task_and_method(capsys, reviews):
    fails_with(capsys, "unknown task 'nosuch': use one of rt, trec, pos", *experiment("nosuch", "--labels", "10", "--methods", "majority"))
    fails_with(capsys, "unknown method 'bert-large': use one of", *experiment(reviews, "--labels", "10", "--methods", "bert-large"))


def test_missing_csv_file_and_column(capsys, reviews):
    fails_with(capsys, "no file", "data", "task", str(reviews.with_name("missing.csv")))
    fails_with(capsys, "no column 'stars' (columns: text, label)", "data", "task", str(reviews), "--label-column", "stars")


def test_unterminated_quote_names_the_line_it_starts_on(capsys, tmp_path):
    path = tmp_path / "quote.csv"
    path.write_text('text,label\nwho are you,HUM\n"what is this,DESC\nwhere is it,LOC\n')
    fails_with(capsys, "quote.csv: line 3 has a quote (\") that is never closed",
               *experiment(path, "--labels", "10", "--methods", "majority"))


def test_semicolon_delimited_csv_is_named(capsys, tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("text;label\n" + "\n".join(f"text {i};{'ab'[i % 2]}" for i in range(20)) + "\n")
    fails_with(capsys, "semi.csv: the header row is split by ';', not by commas or tabs",
               *experiment(path, "--labels", "10", "--methods", "majority"))


def test_fewer_than_two_classes(capsys, tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("text,label\n" + "\n".join(f"text {i},pos" for i in range(20)) + "\n")
    fails_with(capsys, "needs at least two classes", "data", "task", str(path))


def test_empty_text(capsys, tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("text,label\n,pos\n ,neg\n")
    fails_with(capsys, "no row has a non-empty 'text' and 'label'", "data", "task", str(path))


def test_checkpoint_of_the_wrong_kind(capsys, reviews):
    fails_with(capsys, "holds a elmo model, not awd-lstm", *experiment(reviews, "--labels", "10", "--methods", "scratch",
                                                                       "--checkpoint", str(ELMO)))


def test_method_for_another_kind_of_task(capsys, tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("a,b,label\n" + "\n".join(f"x {i},y {i},{'same' if i % 2 else 'other'}" for i in range(20)) + "\n")
    fails_with(capsys, "handles sentence tasks, and pairs is a pair task",
               *experiment(path, "--text-column", "a", "--text-b-column", "b", "--labels", "10", "--methods", "scratch"))


def test_bad_profile(capsys, monkeypatch, reviews):
    monkeypatch.setenv("MINILIB_PROFILE", "huge")
    code, err = run(capsys, *experiment(reviews, "--labels", "10", "--methods", "majority"))
    assert code == 2 and "huge" in err and "smoke" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("shape, message", [("2x100", "multiple of 64"), ("two", "LAYERSxWIDTH"),
                                            ("2x128,4x256", "give one shape")])
def test_bad_bert_shape(capsys, shape, message):
    fails_with(capsys, message, "pretrain", "bert", "--profile", "smoke", "--shape", shape)


@pytest.mark.parametrize("rate", ["0", "1.5", "-0.1"])
def test_bad_bert_mask_rate(capsys, rate):
    fails_with(capsys, "between 0 and 1", "pretrain", "bert", "--profile", "smoke", "--mask-prob", rate)


def test_bert_ablations_of_a_shape_never_pretrained_names_the_command(capsys, monkeypatch):
    monkeypatch.setenv("MINILIB_PROFILE", "laptop")
    fails_with(capsys, "--shape 1x64", "experiment", "bert-ablations", "--shape", "1x64")


@pytest.mark.parametrize("argv, message", [(["--methods", "bert,elmo"], "--methods elmo"),
                                           (["--methods", "bert,bert-mlm", "--checkpoint", "x.pt", "--results-dir", "r"],
                                            "give one of --methods"),
                                           (["--methods", "bert-mlm", "--checkpoint", "x.pt"], "--results-dir")])
def test_bert_ablations_bad_methods_or_checkpoint(capsys, argv, message):
    fails_with(capsys, message, "experiment", "bert-ablations", *argv)


def test_bert_plateau_of_a_shape_never_pretrained_names_the_command(capsys):
    fails_with(capsys, "--shape 1x64", "experiment", "bert-plateau", "--profile", "laptop", "--shape", "1x64")
    fails_with(capsys, "multiple of 64", "experiment", "bert-plateau", "--profile", "laptop", "--shape", "1x100")


# ----------------------------------------------------------------------------- a user's CSV as spreadsheets save it

ROWS = [f"un café très bon numéro {i},pos" if i % 2 else f"un film ennuyeux numéro {i},neg" for i in range(60)]
BODY = "text,label\n" + "\n".join(ROWS) + "\n"


def test_a_utf8_file_with_a_bom_reads_as_utf8(capsys, tmp_path):
    import codecs

    path = tmp_path / "bom.csv"
    path.write_bytes(codecs.BOM_UTF8 + BODY.encode("utf-8"))
    code, _ = run(capsys, "data", "task", str(path))
    assert code == 0
    from minilib import tasks
    task = tasks.get(str(path))
    assert "un café très bon numéro 1" in task.train.texts + task.test.texts and task.classes == ("neg", "pos")


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_utf16_file_is_decoded(capsys, tmp_path, codec):
    from minilib import tasks

    path = tmp_path / "wide.csv"
    path.write_bytes(BODY.encode(codec))          # utf-16 writes a BOM; -le / -be write none
    assert run(capsys, "data", "task", str(path))[0] == 0
    task = tasks.get(str(path))
    assert len(task.train) + len(task.test) == 60 and "un café très bon numéro 1" in task.train.texts + task.test.texts


def test_a_latin1_file_names_the_encoding_to_use(capsys, tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes(BODY.encode("latin-1"))
    fails_with(capsys, "is not UTF-8 text (byte 0xe9 on line 2): re-save it as UTF-8", "data", "task", str(path))
    fails_with(capsys, "--encoding cp1252", *experiment(path, "--labels", "10", "--methods", "majority"))
    code, _ = run(capsys, "data", "task", str(path), "--encoding", "cp1252")   # the line's advice works
    assert code == 0
    fails_with(capsys, "--encoding klingon: no such encoding", "data", "task", str(path), "--encoding", "klingon")


@pytest.mark.parametrize("content, message", [(b"", "is empty"), (b"\n \n", "is empty"),
                                              (b"\xef\xbb\xbf", "is empty"),
                                              (b"text,label\n", "has a header row (text, label) and no rows below it")])
def test_an_empty_or_header_only_file_is_said_as_such(capsys, tmp_path, content, message):
    path = tmp_path / "nothing.csv"
    path.write_bytes(content)
    fails_with(capsys, message, "data", "task", str(path))
    fails_with(capsys, message, *experiment(path, "--labels", "10", "--methods", "majority"))


@pytest.mark.parametrize("fraction", ["0", "1", "1.5"])
def test_a_bad_test_fraction_names_the_real_flags(capsys, reviews, fraction):
    fails_with(capsys, "(--test-fraction), or give a separate test file (--test-file PATH)",
               "data", "task", str(reviews), "--test-fraction", fraction)


def test_an_experiment_prints_the_leak_guard_drops_per_class(capsys, tmp_path):
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    rows = [f"a fine film number {i} with a long enough text,pos" if i % 2 else
            f"a dull film number {i} with a long enough text,neg" for i in range(60)]
    train.write_text("text,label\n" + "\n".join(rows) + "\n")
    test.write_text("text,label\n" + "\n".join(rows[:5]) + "\n")   # rows 0-4 leak: 3 neg, 2 pos
    code = main(experiment(train, "--test-file", str(test), "--labels", "10", "--methods", "majority",
                           "--results-dir", str(tmp_path / "r")))
    out = capsys.readouterr().out
    assert code == 0
    assert "train: the leak guard dropped 5 of 60 training rows that match a test text (neg 3, pos 2)" in out, out


def test_methods_help_lists_every_method(capsys):
    from minilab.experiments import grid

    with pytest.raises(SystemExit):
        main(["experiment", "sample-efficiency", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")   # argparse wraps at hyphens
    missing = [m for names in grid.families().values() for m in names if m not in text]
    assert not missing and "pooled-elmo" in text and "tagger-elmo" in text and "gpt-scratch" in text, missing


def test_a_baseline_run_warns_nothing(capsys, reviews, tmp_path, recwarn):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(experiment(reviews, "--labels", "20", "--methods", "majority,bow-lr",
                               "--results-dir", str(tmp_path / "r")))
    assert code == 0


def test_bench_outside_the_repository_is_one_line(tmp_path):
    """bench/ is tooling beside the package: from another folder the command says where it lives (exit 2)."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "minilib", "bench", "word2vec"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": ""})   # the repository not on the path
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "repository's root" in done.stderr, done.stderr


def test_an_experiment_has_a_profile_option_exactly_when_it_reads_one():
    """--profile is added by @experiment(..., profile=...): an experiment whose module reads args.profile must
    offer it, and one that sizes by $MINILIB_PROFILE alone must not offer an option it would ignore."""
    import importlib
    import inspect

    from minilab.cli.experiment import EXPERIMENTS, options_parser

    for name, spec in EXPERIMENTS.items():
        reads = "args.profile" in inspect.getsource(importlib.import_module(spec.module))
        offers = any("--profile" in a.option_strings for a in options_parser(name)._actions)
        assert reads == offers, f"{name}: reads args.profile {reads}, offers --profile {offers}"


def test_every_pretrainer_shares_the_run_options():
    """Pretrainer.add_arguments gives every model the same size, stop, corpus and run options."""
    import argparse

    from minilab.cli.pretrain import PRETRAINERS

    shared = {"--profile", "--words", "--max-steps", "--corpus", "--threads", "--seed", "--out", "--no-resume"}
    for name, pretrainer in PRETRAINERS.items():
        p = argparse.ArgumentParser()
        pretrainer.add_arguments(p, name)
        options = {o for a in p._actions for o in a.option_strings}
        assert shared <= options, (name, shared - options)
        assert ("--budget" in options) == ("--tokenizer" in options) == pretrainer.subword, name


def test_a_recipe_search_on_another_checkpoint_needs_its_own_folder(capsys):
    for name in ("gpt-recipe", "bert-recipe"):
        fails_with(capsys, "--checkpoint: give --results-dir too", "experiment", name, "--checkpoint", "x.pt")
    fails_with(capsys, "--candidates no-such: use some of", "experiment", "gpt-recipe", "--candidates", "no-such")
