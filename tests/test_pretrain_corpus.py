"""`python -m minilib pretrain MODEL --corpus PATH...`: a user's own text read into documents, a held-out split
carved from it, the checkpoint written to the data cache (never the repository) with the corpus named by
sha256 and size in its provenance, and a second run resuming."""
import hashlib
import io
import json
import random

import pytest

from minilab import pretrain, provenance
from minilab.cli import main
from minilib.data import corpora
from minilib.runtime import UsageError
from tests.conftest import WRITTEN_BY_LESSONS

WORDS = ("the cat dog ship sea whale sailor harbour rope night morning captain deck wind storm calm bird "
         "saw heard found lost took gave quickly slowly and but then").split()


def prose(n_paragraphs: int, seed: int = 0, words_per: int = 60) -> str:
    rng = random.Random(seed)
    paras = []
    for _ in range(n_paragraphs):
        sentences = [" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "."
                     for _ in range(words_per // 12)]
        paras.append(" ".join(sentences))
    return "\n\n".join(paras) + "\n"


def test_documents_per_block_file_and_line(tmp_path):
    folder = tmp_path / "texts"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text(prose(10, 1))
    (folder / "sub" / "b.md").write_text(prose(10, 2))
    (folder / ".hidden.txt").write_text("secret words " * 500)
    (folder / "image.png").write_bytes(b"\x89PNG\x00\x00")
    by = {unit: corpora.read_user_corpus([str(folder)], unit, protect_test_items=False)
          for unit in corpora.DOCUMENT_UNITS}
    assert len(by["file"].documents) == 2 and len(by["block"].documents) == 20
    assert len(by["line"].documents) == 20                                  # one paragraph a line here
    assert [d.doc_id for d in by["file"].documents] == ["a.txt", "sub/b.md"]
    raw = (folder / "a.txt").read_bytes() + (folder / "sub" / "b.md").read_bytes()
    assert by["block"].sha256 == hashlib.sha256(raw).hexdigest() and by["block"].bytes == len(raw)
    assert "secret" not in " ".join(d.text for d in by["block"].documents)


def test_stdin_and_a_utf16_file_read_alike(tmp_path):
    text = prose(30)
    wide = tmp_path / "wide.txt"
    wide.write_bytes(text.encode("utf-16"))
    from_stdin = corpora.read_user_corpus(["-"], stdin=io.BytesIO(text.encode()), protect_test_items=False)
    from_file = corpora.read_user_corpus([str(wide)], protect_test_items=False)
    assert [d.text for d in from_stdin.documents] == [d.text for d in from_file.documents]
    assert from_stdin.name.startswith("stdin-")


def test_hold_out_whole_documents_or_each_documents_tail(tmp_path):
    many = corpora.read_user_corpus(["-"], stdin=io.BytesIO(prose(100).encode()), protect_test_items=False).documents
    train, valid = corpora.hold_out(many, 0.1, seed=0)
    assert valid and train and not {d.key for d in train} & {d.key for d in valid}
    assert len(train) + len(valid) == 100 and 8 <= len(valid) <= 12    # 10 % of the words, about 10 documents
    assert corpora.hold_out(many, 0.1, seed=0) == (train, valid) != corpora.hold_out(many, 0.1, seed=1)
    few = corpora.read_user_corpus(["-"], "file", stdin=io.BytesIO(prose(200).encode()), protect_test_items=False)
    (book,) = few.documents
    train, valid = corpora.hold_out(few.documents, 0.05)
    assert train[0].num_words + valid[0].num_words == book.num_words and valid[0].num_words == round(0.05 * book.num_words)
    assert book.text.startswith(train[0].text) and book.text.endswith(valid[0].text)


@pytest.mark.parametrize("make, message", [
    (lambda d: [str(d / "missing.txt")], "no file or folder"),
    (lambda d: [str(d)], "holds no text files"),
    (lambda d: [str((d / "short.txt").write_text("too few words here " * 200) and d / "short.txt")], "give at least 5,000"),
    (lambda d: [str((d / "latin.txt").write_bytes("caf\xe9 ".encode("latin-1") * 2000) and d / "latin.txt")],
     "--encoding cp1252"),
])
def test_bad_corpus_input_is_one_line(tmp_path, capsys, make, message):
    folder = tmp_path / "in"
    folder.mkdir()
    code = main(["pretrain", "gpt", "--profile", "smoke", "--corpus", *make(folder)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


@pytest.fixture
def corpus_file(tmp_path, monkeypatch):
    monkeypatch.setattr(pretrain, "user_cache", lambda: tmp_path / "cache")
    path = tmp_path / "my book.txt"
    path.write_text(prose(200))
    return path


def tree(root):
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")
            if p.is_file() and p.name not in WRITTEN_BY_LESSONS}   # another worker's lesson writes those (conftest)


@pytest.mark.data   # the leak guard reads the RT and TREC test items
def test_pretrain_gpt_on_a_users_corpus_writes_to_the_cache_and_resumes(corpus_file, tmp_path, capsys, one_thread):
    from minilib.models.pretrained import load_pretrained

    repo_before = {d: tree(provenance.REPO_ROOT / d) for d in ("checkpoints", "results")}
    argv = ["pretrain", "gpt", "--profile", "smoke", "--threads", "1", "--progress", "off", "--max-steps", "3",
            "--corpus", str(corpus_file)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    sha = hashlib.sha256(corpus_file.read_bytes()).hexdigest()
    ckpt = tmp_path / "cache" / "checkpoints" / f"gpt-my-book-{sha[:8]}-smoke.pt"
    assert ckpt.is_file() and "unigram" in out, out
    meta = json.loads(ckpt.with_suffix(".json").read_text())
    assert meta["corpus"]["sha256"] == sha and meta["corpus"]["bytes"] == corpus_file.stat().st_size
    assert meta["corpus"]["held_out"]["words"] > 0 and meta["unigram_nats_per_token"] > 0
    pre = load_pretrained(ckpt, "gpt")
    assert pre.vocab.kind == "bpe" and pre.meta["corpus"]["sha256"] == sha
    assert (tmp_path / "cache" / "pretrain" / ckpt.stem / "bpe.tokenizer.json").is_file()
    assert main(argv) == 0                                            # the same command again: resumes
    assert "already trained" in capsys.readouterr().out
    assert {d: tree(provenance.REPO_ROOT / d) for d in ("checkpoints", "results")} == repo_before


@pytest.mark.data
@pytest.mark.parametrize("model", ["awd-lstm", "elmo", "bert"])
def test_every_pretrainer_takes_a_corpus(model, corpus_file, tmp_path, capsys, one_thread):
    from minilib.models.pretrained import load_pretrained

    assert main(["pretrain", model, "--profile", "smoke", "--threads", "1", "--progress", "off", "--max-steps", "2",
                 "--corpus", str(corpus_file)]) == 0
    (ckpt,) = (tmp_path / "cache" / "checkpoints").glob(f"{model}-my-book-*-smoke.pt")
    assert load_pretrained(ckpt, model).meta["corpus"]["sha256"] == hashlib.sha256(corpus_file.read_bytes()).hexdigest()


def test_a_tokenizer_of_the_other_kind_is_one_line(corpus_file, capsys):
    shipped = provenance.REPO_ROOT / "checkpoints" / "wordpiece-laptop.tokenizer.json"
    code = main(["pretrain", "gpt", "--profile", "smoke", "--corpus", str(corpus_file), "--tokenizer", str(shipped)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "is a wordpiece tokenizer; this model reads bpe" in err and len(err.splitlines()) == 1
