"""A lesson records what it read (minilab.provenance) and tools/check_results.py finds the lessons whose saved
outputs no longer match the files, their profile, or each other."""
import hashlib
import importlib.util
import json
from pathlib import Path

import IPython.display
import pytest
import torch

from minilab import provenance

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_results", ROOT / "tools" / "check_results.py")
check_results = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_results)


@pytest.fixture
def recording():
    """Stop the process-wide record after the test, whatever it started."""
    yield
    provenance.stop_recording()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_hook_records_torch_load_and_json_reads_with_their_digest(tmp_path, recording):
    (tmp_path / "results" / "grid").mkdir(parents=True)
    (tmp_path / "checkpoints").mkdir()
    point, ckpt, outside = tmp_path / "results" / "grid" / "p.json", tmp_path / "checkpoints" / "m.pt", tmp_path / "x.json"
    point.write_text('{"error": 0.25}')
    outside.write_text("{}")
    torch.save({"w": torch.ones(3)}, ckpt)
    log = provenance.record_reads(tmp_path)
    torch.load(ckpt, weights_only=True)
    assert json.loads(point.read_text())["error"] == 0.25
    json.loads(outside.read_text())                                    # not under results/ or checkpoints/
    provenance.write_json(tmp_path / "results" / "written.json", {})   # written, never read: not recorded
    assert log.digests == {"results/grid/p.json": sha(point), "checkpoints/m.pt": sha(ckpt)}
    assert log.changed == set()


def test_the_digest_is_taken_at_read_time(tmp_path, recording):
    (tmp_path / "results").mkdir()
    point = tmp_path / "results" / "p.json"
    point.write_text('{"error": 0.25}')
    first = sha(point)
    log = provenance.record_reads(tmp_path)
    point.read_text()
    point.write_text('{"error": 0.5}')                                  # rewritten after the lesson read it
    assert log.record()["reads"] == {"results/p.json": first}
    point.read_text()                                                  # and read again: the outputs mix both
    assert log.record()["changed"] == ["results/p.json"]


def test_note_keeps_numbers_and_refuses_anything_else(tmp_path, recording):
    log = provenance.record_reads(tmp_path)
    assert provenance.note("gpt.N", torch.tensor(7)) == torch.tensor(7)
    provenance.note("error trec@100 ulmfit", 0.446)
    assert log.quantities == {"gpt.N": 7, "error trec@100 ulmfit": 0.446}
    with pytest.raises(TypeError, match="gpt.N"):
        provenance.note("gpt.N", "seven")


def shown_record(monkeypatch) -> dict:
    """The output show_reads displays, as a notebook saves it (IPython's display_data with raw=True)."""
    shown = []
    monkeypatch.setattr(IPython.display, "display",
                        lambda data, raw, metadata: shown.append({"output_type": "display_data", "data": data,
                                                                  "metadata": metadata}))
    provenance.show_reads()
    (output,) = shown
    return output


def make_lesson(root: Path, name: str, monkeypatch, reads=(), quantities=None, profile="laptop") -> Path:
    """lessons/<name>.ipynb whose last cell's output records reading `reads` (paths under root) at `profile`."""
    monkeypatch.setenv("MINILIB_PROFILE", profile)
    provenance.record_reads(root)
    for path in reads:
        (root / path).read_bytes()
    for key, value in (quantities or {}).items():
        provenance.note(key, value)
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# a lesson"},
             {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "provenance.show_reads()",
              "outputs": [shown_record(monkeypatch)]}]
    nb = root / "lessons" / f"{name}.ipynb"
    nb.parent.mkdir(exist_ok=True)
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return nb


@pytest.fixture
def repo(tmp_path, monkeypatch, recording):
    """A checkout with two fresh lessons: 06 read a grid point and the GPT checkpoint, 08 the same point."""
    (tmp_path / "results" / "grid").mkdir(parents=True)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "results" / "grid" / "trec-100-ulmfit-0.json").write_text('{"error": 0.446}')
    (tmp_path / "checkpoints" / "gpt-laptop.pt").write_bytes(b"weights")
    make_lesson(tmp_path, "06-gpt", monkeypatch, ["results/grid/trec-100-ulmfit-0.json", "checkpoints/gpt-laptop.pt"],
                {"gpt.N": 3_159_552, "error trec@100 ulmfit": 0.446})
    make_lesson(tmp_path, "08-the-flywheel", monkeypatch, ["results/grid/trec-100-ulmfit-0.json"],
                {"gpt.N": 3_159_552, "error trec@100 ulmfit": (0.4 + 0.046)})   # one mean, summed another way
    return tmp_path


def run_check(root: Path, capsys) -> tuple[int, list[str]]:
    rc = check_results.main(["--root", str(root)])
    return rc, capsys.readouterr().out.strip().splitlines()


def test_a_clean_checkout_passes(repo, capsys):
    rc, lines = run_check(repo, capsys)
    assert lines == ["check-results: lessons=2 stale=0 mismatches=0 overclaims=0"] and rc == 0


def test_a_changed_results_file_makes_its_lesson_stale(repo, capsys):
    (repo / "checkpoints" / "gpt-laptop.pt").write_bytes(b"other weights")
    rc, lines = run_check(repo, capsys)
    assert rc == 1 and lines[-1] == "check-results: lessons=2 stale=1 mismatches=0 overclaims=0"
    assert lines[:-1] == ["stale 06-gpt: checkpoints/gpt-laptop.pt changed since it was read"]


def test_a_gone_file_makes_every_lesson_that_read_it_stale(repo, capsys):
    (repo / "results" / "grid" / "trec-100-ulmfit-0.json").unlink()
    rc, lines = run_check(repo, capsys)
    assert rc == 1 and lines[-1] == "check-results: lessons=2 stale=2 mismatches=0 overclaims=0"
    assert "stale 08-the-flywheel: results/grid/trec-100-ulmfit-0.json is gone" in lines


def test_a_lesson_run_at_smoke_is_stale(repo, capsys, monkeypatch):
    make_lesson(repo, "07-bert", monkeypatch, ["checkpoints/gpt-laptop.pt"], profile="smoke")
    rc, lines = run_check(repo, capsys)
    assert rc == 1 and lines == ["stale 07-bert: executed at profile smoke, not laptop",
                                 "check-results: lessons=3 stale=1 mismatches=0 overclaims=0"]


def test_a_quantity_that_differs_between_lessons_is_a_mismatch(repo, capsys, monkeypatch):
    make_lesson(repo, "07-bert", monkeypatch, [], {"gpt.N": 5_207_552})   # the tied embedding counted
    rc, lines = run_check(repo, capsys)
    assert rc == 1 and lines == ["mismatch gpt.N: 06-gpt 3159552; 07-bert 5207552; 08-the-flywheel 3159552",
                                 "check-results: lessons=3 stale=0 mismatches=1 overclaims=0"]


def test_a_bare_crossover_or_the_old_spread_rule_is_an_overclaim(repo, capsys):
    nb = repo / "lessons" / "07-bert.ipynb"
    nb.write_text((repo / "lessons" / "06-gpt.ipynb").read_text())
    lesson = json.loads(nb.read_text())
    lesson["cells"][1]["outputs"].append({"output_type": "stream", "name": "stdout", "text": [
        "mlm_vs_ltr on pos: at this rate it crosses 0 at about 120x our budget\n",
        "trec: the twin crosses 0 at about 2.68x (95 % interval 1.26x to 21.7x)\n",
        "pos: pretraining raises the error by more than the seed spreads\n"]})
    nb.write_text(json.dumps(lesson))
    rc, lines = run_check(repo, capsys)
    assert rc == 1 and lines[-1] == "check-results: lessons=3 stale=0 mismatches=0 overclaims=2"
    assert [line.split(":")[1].strip() for line in lines[:-1]] == ["a crossover without its interval",
                                                                   "a verdict by the summed-std rule"]


def test_a_lesson_without_a_record_is_stale(repo, capsys):
    (repo / "lessons" / "05-transformer.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                                        "nbformat_minor": 5}))
    rc, lines = run_check(repo, capsys)
    assert rc == 1 and lines[0].startswith("stale 05-transformer: no record of what it read")


def test_show_reads_never_fails_when_nothing_was_recorded(monkeypatch):
    provenance.stop_recording()
    output = shown_record(monkeypatch)
    record = output["metadata"][provenance.RECORD_KEY]
    assert record["reads"] == {} and record["profile"] == "smoke"
    assert "nothing was recorded" in output["data"]["text/plain"]


@pytest.mark.results
def test_main_lessons_are_fresh(capsys):
    """Every lesson of this checkout was executed at laptop from the results and checkpoints here, and the chapters
    agree on every quantity they noted (make check-results runs the same check as a command)."""
    rc, lines = run_check(ROOT, capsys)
    assert rc == 0, "\n".join(lines)
