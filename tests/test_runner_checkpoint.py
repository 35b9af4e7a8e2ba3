"""`experiment sample-efficiency --checkpoint PATH` for every pretrained family (ULMFiT, ELMo, GPT, BERT): one line
when the checkpoint's kind is not the method's, the checkpoint's sha256 in the point's key, and its points cached
apart from the shipped grid's, outside the repository."""
import json
import shutil

import pytest

from minilab import provenance
from minilab.cli import main
from minilab.experiments import grid
from minilib.models.pretrained import file_sha256

CKPT = provenance.REPO_ROOT / "checkpoints"
KIND_FILES = {"awd-lstm": CKPT / "awd-lstm-laptop.pt", "elmo": CKPT / "elmo-laptop.pt", "gpt": CKPT / "gpt-laptop.pt",
              "bert": CKPT / "bert-laptop-2x128.pt"}
METHOD_KIND = {"ulmfit": "awd-lstm", "pooled-elmo": "elmo", "gpt": "gpt", "gpt-scratch": "gpt", "bert": "bert"}


@pytest.fixture
def reviews(tmp_path, monkeypatch):
    monkeypatch.setenv("MINILIB_DATA", str(tmp_path / "cache"))    # only a CSV task reads no corpus
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    path = tmp_path / "reviews.csv"
    rows = [f"a fine film number {i} here,pos" if i % 2 else f"a dull film number {i} here,neg" for i in range(60)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


def fails_with(capsys, message, *argv):
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, (code, err)


def test_every_family_maps_to_a_checkpoint_kind():
    for method, kind in METHOD_KIND.items():
        assert grid.checkpoint_kind(grid.method(method)) == kind
    assert grid.checkpoint_kind(grid.method("majority")) is None
    assert grid.checkpoint_kind(grid.method("sgns-lr")) is None     # reads the ELMo corpus, not a user's weights


@pytest.mark.parametrize("method", sorted(METHOD_KIND))
def test_a_checkpoint_of_another_kind_is_one_line(capsys, reviews, method):
    want = METHOD_KIND[method]
    other = next(k for k in KIND_FILES if k != want)
    fails_with(capsys, f"holds a {other} model, not {want}: method {method} fine-tunes a {want} checkpoint",
               "experiment", "sample-efficiency", "--task", str(reviews), "--labels", "10", "--seeds", "1",
               "--methods", f"majority,{method}", "--checkpoint", str(KIND_FILES[other]))


def test_a_checkpoint_no_method_uses_and_a_missing_or_foreign_file(capsys, reviews, tmp_path):
    base = ["experiment", "sample-efficiency", "--task", str(reviews), "--labels", "10", "--seeds", "1"]
    fails_with(capsys, "none of --methods majority fine-tunes a checkpoint",
               *base, "--methods", "majority", "--checkpoint", str(KIND_FILES["gpt"]))
    fails_with(capsys, "no checkpoint at", *base, "--methods", "gpt", "--checkpoint", str(tmp_path / "none.pt"))
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    fails_with(capsys, "is not a minilib checkpoint", *base, "--methods", "gpt", "--checkpoint", str(junk))


def test_a_users_gpt_is_fine_tuned_keyed_by_its_sha256_and_cached_apart(capsys, reviews, tmp_path, one_thread):
    mine = tmp_path / "my-gpt.pt"
    shutil.copyfile(KIND_FILES["gpt"], mine)
    code = main(["experiment", "sample-efficiency", "--task", str(reviews), "--labels", "10", "--seeds", "1",
                 "--methods", "gpt", "--checkpoint", str(mine)])
    assert code == 0, capsys.readouterr().err
    folder = tmp_path / "cache" / "results" / "gpt" / f"my-gpt-{file_sha256(mine)[:10]}"
    row = json.loads((folder / "reviews-gpt-n10-s0-smoke.json").read_text())
    assert row["checkpoint_sha256"] == file_sha256(mine) and row["pretrained"] == "<outside>/my-gpt.pt"  # no machine path
    assert not (tmp_path / "cache" / "results" / "gpt" / "reviews-gpt-n10-s0-smoke.json").exists()


def test_a_missing_default_checkpoint_fails_before_anything_trains(capsys, reviews, monkeypatch):
    if (CKPT / "awd-lstm-smoke.pt").exists():
        pytest.skip("a smoke AWD-LSTM was made here")
    calls = []
    real = grid.METHODS["majority"]
    monkeypatch.setitem(grid.METHODS, "majority", grid.Method(real.name, real.family,
                                                              lambda *a, **k: calls.append(1) or real.train(*a, **k),
                                                              real.settings, real.checkpoint, real.kinds, real.label))
    fails_with(capsys, "awd-lstm-smoke.pt, which does not exist", "experiment", "sample-efficiency", "--task",
               str(reviews), "--labels", "10", "--seeds", "1", "--methods", "majority,scratch")
    assert calls == []
