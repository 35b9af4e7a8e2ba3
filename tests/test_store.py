"""The one result store (minilab/experiments/store.py): every single result is found by name and profile, keyed by
its own fields, read without a write, and saved only when its numbers change."""
import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from minilab import provenance
from minilib import files as core_files
from minilab.experiments import store

ROOT = Path(__file__).resolve().parent.parent
# shipped top-level results that no experiment writes: `python -m minilib data tokenizer --measure` (minilab/cli/data.py)
NOT_EXPERIMENTS = {"tokenizer-bpe.json", "tokenizer-wordpiece.json"}


def shipped() -> list[Path]:
    """The results/*.json files git tracks (a local smoke run's, ignored, are not shipped)."""
    out = subprocess.run(["git", "ls-files", "-z", "--", "results/*.json"], cwd=ROOT, capture_output=True,
                         check=True, timeout=60).stdout.decode()
    return sorted(ROOT / p for p in out.split("\0") if p and "/" not in p[len("results/"):])


def _state(path: Path):
    st = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_ino, st.st_mtime_ns


def test_every_shipped_result_is_a_registered_experiments_result():
    entries = {p.name for _, _, _, p in store.entries()}
    unclaimed = [p.name for p in shipped() if p.name not in entries and p.name not in NOT_EXPERIMENTS]
    assert len(shipped()) > 10 and not unclaimed, f"results no registered experiment names: {unclaimed}"


def test_every_shipped_result_reads_back_through_its_key_and_stays_byte_identical(monkeypatch):
    """Each shipped single result loads as its file holds it, with its own key and with none; a key that differs in
    any one field finds nothing; and the file is not rewritten (its bytes, inode and mtime as before)."""
    files = {p for p in shipped()}
    entries = [e for e in store.entries() if e[3] in files]
    assert len(entries) >= 12, entries
    before = {path: _state(path) for *_, path in entries}
    for module in (core_files, provenance):     # the core's writer, and the lab's name for it
        monkeypatch.setattr(module, "atomic_write_bytes", lambda *a: pytest.fail(f"a read wrote {a[0]}"))
    for name, profile, variant, path in entries:
        held = json.loads(path.read_text(encoding="utf-8"))
        assert store.load(name, profile, variant=variant) == held, path
        key = store.key_of(name, held)
        assert any(v is not None for v in key.values()), f"{path.name} holds none of {name}'s key fields"
        assert store.load(name, profile, key, variant) == held
        for field in key:
            assert store.load(name, profile, {**key, field: "another"}, variant) is None, (path.name, field)
    assert {path: _state(path) for *_, path in entries} == before


def test_save_stamps_writes_once_and_keeps_the_file_when_only_timings_change(tmp_path, monkeypatch):
    name = "test-store-result"
    monkeypatch.setitem(store.KEYS, name, ("config",))
    monkeypatch.setattr(store, "RESULTS", tmp_path)
    result = {"experiment": name, "config": {"steps": (1, 2)}, "value": 0.5, "seconds": 3.0}
    saved = store.save(name, "smoke", result)
    path = tmp_path / "test-store-result-smoke.json"
    assert store.path(name, "smoke") == path and json.loads(path.read_text()) == saved
    assert saved["config"] == {"steps": [1, 2]} and saved["provenance"]["profile"]      # as JSON reads it; stamped
    assert store.load(name, "smoke") == saved
    assert store.load(name, "smoke", {"config": {"steps": (1, 2)}}) == saved          # a tuple key matches its list
    assert store.load(name, "smoke", {"config": {"steps": [1, 3]}}) is None
    assert store.load(name, "laptop") is None and store.load(name, "smoke", variant="x") is None
    first = _state(path)
    again = store.save(name, "smoke", {**result, "seconds": 9.0, "provenance": {"time": "later"}})
    assert again == saved and _state(path) == first                                   # the first run's stamp stays
    store.save(name, "smoke", {**result, "value": 0.6})
    assert store.load(name, "smoke")["value"] == 0.6


def test_save_writes_the_key_into_the_result_and_a_variant_apart(tmp_path):
    saved = store.save("L1-d32-t100", "smoke", {"run": {"loss": 1.0}}, {"config": {"shape": [1, 32]}},
                       root=tmp_path)
    assert saved["config"] == {"shape": [1, 32]}
    assert store.load("L1-d32-t100", "smoke", {"config": {"shape": [1, 32]}}, root=tmp_path)["run"] == {"loss": 1.0}
    store.save("L1-d32-t100", "smoke", {"run": {}}, {"config": {}}, "custom", root=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["L1-d32-t100-smoke-custom.json", "L1-d32-t100-smoke.json"]
    with pytest.raises(KeyError, match="not registered"):
        store.save("never-registered", "smoke", {"x": 1}, root=tmp_path)


def test_entries_parse_name_profile_and_variant(tmp_path):
    store.registered()
    for name in ("compute-axis-laptop", "compute-laptop", "parallelism-laptop-cuda", "bert-plateau-laptop-2x128",
                 "tokenizer-bpe", "compute-nothing", "gpu-check-cpu-smoke"):
        (tmp_path / f"{name}.json").write_text("{}")
    assert sorted((n, p, v) for n, p, v, _ in store.entries(tmp_path)) == [
        ("bert-plateau", "laptop", "2x128"), ("compute", "laptop", None), ("compute-axis", "laptop", None),
        ("parallelism", "laptop", "cuda")]


def test_every_module_that_registers_a_result_is_found():
    """store.registered() imports every experiment module: each result registered in the source is there."""
    found = store.registered()
    in_source = set()
    for path in (ROOT / "minilab" / "experiments").glob("*.py"):
        in_source |= set(re.findall(r'store\.register\("([^"]+)"', path.read_text()))
    assert in_source and in_source <= set(found), in_source - set(found)


def test_no_module_but_the_store_names_the_results_root():
    """The repository's results/ is named once (store.RESULTS); every folder and file under it is made from it.
    minilab/cli/data.py's tokenizer measurement is the one writer outside the experiments (NOT_EXPERIMENTS)."""
    root = re.compile(r"""REPO_ROOT\s*/\s*["']results["']""")
    offending = []
    for path in sorted([*(ROOT / "minilib").rglob("*.py"), *(ROOT / "minilab").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "minilab/experiments/store.py":
            continue
        offending += [f"{rel}:{i + 1}" for i, line in enumerate(path.read_text().splitlines()) if root.search(line)]
    assert not offending, offending


def test_no_lesson_reads_a_results_file_by_itself():
    """A lesson reads results through the store (store.load, or an experiment's reader over it), never with its own
    json.load of a path under results/."""
    own = re.compile(r"json\.loads?\(.*(results|RESULTS)")
    found = []
    for nb in sorted((ROOT / "lessons").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "code":
                found += [f"{nb.name} cell {i}: {line.strip()}" for line in cell["source"] if own.search(line)]
    assert not found, found
