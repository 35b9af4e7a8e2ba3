"""No machine's paths in what the repository ships: a results/ or checkpoints/ JSON records paths
repo-relative ("checkpoints/gpt-laptop.pt"), in the data cache as "$MINILIB_DATA/…", anything else as
"<outside>/<name>" (minilab.provenance.shown_path), so a result reads the same on every machine and checkout.
tools/portable_paths.py rewrites files written before that rule."""
import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("results", "checkpoints")
# a home, a worktree or a temporary folder of some machine, anywhere in a string (a command line too)
MACHINE_FOLDERS = ("/work/", "/home/", "/root/", "/tmp/", "/Users/", "/mnt/", "/var/", "/private/")
# a whole string that is an absolute path: "/" and a name, then another "/" or a machine's top folder;
# a lone "/" (a BPE merge in a tokenizer) names no path
ABSOLUTE = re.compile(r"^/[^/\s]+/|^/(work|home|root|tmp|Users|mnt|var|opt|srv|data|scratch)$")


def shipped_json() -> list[Path]:
    """The JSON files under results/ and checkpoints/ that git tracks or would add (ignored outputs, such as a
    local smoke run's, are not shipped); every such file when this is no git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *FOLDERS],
                             cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
        paths = [ROOT / p for p in out.decode().split("\0") if p.endswith(".json")]
    except (OSError, subprocess.SubprocessError):
        paths = [p for folder in FOLDERS for p in (ROOT / folder).rglob("*.json")]
    return sorted(p for p in paths if p.is_file())


def machine_path(text: str) -> bool:
    return bool(ABSOLUTE.match(text)) or any(f in text for f in MACHINE_FOLDERS)


def machine_paths(obj, where: str = "") -> list[str]:
    """'key.path: value' for every string (a value or a key) in `obj` that names a machine's path."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if machine_path(k):
                found.append(f"{where}{{key}}: {k}")
            found += machine_paths(v, f"{where}.{k}" if where else k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += machine_paths(v, f"{where}[{i}]")
    elif isinstance(obj, str) and machine_path(obj):
        found.append(f"{where}: {obj}")
    return found


def test_the_rule_tells_a_machine_path_from_a_portable_one():
    for bad in ("/work/run-abl2/checkpoints/bert-laptop-2x128.pt", "/tmp/x", "/srv/minilib/results/a.json",
                "__main__.py experiment flywheel --snapshots /work/snaps-a", "MINILIB_DATA=/home/me/data"):
        assert machine_path(bad), bad
    for good in ("checkpoints/gpt-laptop.pt", ".cache/flywheel/gpt-laptop-step-002000.pt", "$MINILIB_DATA/results/x",
                 "<outside>/my-gpt.pt", "/", "tokens/s", "C = 6·N·D", "1/8 of the steps"):
        assert not machine_path(good), good
    assert machine_paths({"a": [{"checkpoint": "/work/x/y.pt"}], "/tmp/k": 1}) == ["a[0].checkpoint: /work/x/y.pt",
                                                                                 "{key}: /tmp/k"]


def test_no_result_or_checkpoint_json_names_a_machines_path():
    files = shipped_json()
    assert len(files) > 100, f"only {len(files)} JSON files under {FOLDERS}: is this the repository?"
    offending = {}
    for path in files:
        found = machine_paths(json.loads(path.read_text(encoding="utf-8")))
        if found:
            offending[path.relative_to(ROOT).as_posix()] = found
    listing = "\n".join(f"  {p}: {found[0]}" + (f" (+{len(found) - 1} more)" if len(found) > 1 else "")
                        for p, found in sorted(offending.items()))
    assert not offending, (f"{len(offending)} of {len(files)} files record a machine's path "
                           f"(rewrite them with `python tools/portable_paths.py`):\n{listing}")


# ----------------------------------------------------------------------------- the writers' rule

def test_shown_path_names_no_machine(tmp_path, monkeypatch):
    from minilab import provenance

    monkeypatch.setenv("MINILIB_DATA", str(tmp_path / "data"))
    other = tmp_path / "run-x"                            # another checkout of this repository (a worktree)
    cases = {ROOT / "checkpoints" / "gpt-laptop.pt": "checkpoints/gpt-laptop.pt",
             "checkpoints/gpt-laptop.pt": "checkpoints/gpt-laptop.pt",
             tmp_path / "data" / "results" / "gpt" / "x.json": "$MINILIB_DATA/results/gpt/x.json",
             other / ".cache" / "flywheel" / "s.pt": ".cache/flywheel/s.pt",
             tmp_path / "mine" / "my-gpt.pt": "<outside>/my-gpt.pt"}
    for path, shown in cases.items():
        assert provenance.shown_path(path) == shown, path
        assert not machine_path(provenance.shown_path(path))


def test_text_rule_for_files_written_before_it():
    from minilab.provenance import portable_path, portable_text

    assert portable_path("/work/run-abl2/checkpoints/bert-laptop-2x128.pt") == "checkpoints/bert-laptop-2x128.pt"
    assert portable_path("/work/run-gpt/.cache/flywheel/gpt-laptop-step-0.pt") == ".cache/flywheel/gpt-laptop-step-0.pt"
    assert portable_path("/root/.cache/minilib/results/gpt/x.json") == "$MINILIB_DATA/results/gpt/x.json"
    assert portable_path("/work/snaps-a") == "<outside>/snaps-a"
    assert (portable_text("__main__.py experiment flywheel --snapshots /work/run-pre/.cache/pretrain --out=/tmp/f.json")
            == "__main__.py experiment flywheel --snapshots .cache/pretrain --out=<outside>/f.json")
    for text in ("/", "tokens/s", "1/8 of the laptop steps", "C = 6·N·D", "a / b"):
        assert portable_text(text) == text


def test_a_stamp_records_its_command_without_machine_paths(monkeypatch):
    from minilab import provenance

    monkeypatch.setattr("sys.argv", ["/work/x/minilib/__main__.py", "experiment", "flywheel", "--snapshots",
                                     "/tmp/run/.cache/pretrain/gpt-laptop/snapshots", f"--out={ROOT}/results/f.json"])
    command = provenance.stamp()["command"]
    assert command == ("__main__.py experiment flywheel --snapshots .cache/pretrain/gpt-laptop/snapshots "
                       "--out=results/f.json"), command


# ----------------------------------------------------------------------------- the same numbers are not re-saved

def _stat(path):
    st = path.stat()
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def test_the_same_content_again_leaves_the_file_as_it_was(tmp_path):
    from minilab import provenance

    path = tmp_path / "r.json"
    first = {"experiment": "x", "value": 1.5, "seconds": 3.0, "provenance": {"time": "then"}}
    assert provenance.write_if_changed(path, first) == first
    before = _stat(path)
    again = provenance.write_if_changed(path, {**first, "seconds": 4.0, "provenance": {"time": "now"}})
    assert again == first and _stat(path) == before       # the stamp of the run that made the numbers stays
    noise = {**first, "value": 1.5 * (1 + 1e-15), "provenance": {"time": "now"}}    # another machine's last bits
    assert provenance.write_if_changed(path, noise) == first and _stat(path) == before
    new = {**first, "value": 2.5, "provenance": {"time": "now"}}
    assert provenance.write_if_changed(path, new) == new and json.loads(path.read_text()) == new
    assert not provenance.same_content({"v": [1.0, 2]}, {"v": [1.0 + 1e-6, 2]})
    assert not provenance.same_content({"v": 1.0}, {"v": "1.0"}) and not provenance.same_content([1.0], [1.0, 2.0])
    assert provenance.same_content({"v": [0.0, True]}, {"v": [1e-15, True]})


def test_saving_the_same_static_vector_scores_again_rewrites_nothing(tmp_path):
    """Chapter 01 saves its table each time it runs: the same scores (seconds aside) leave the file untouched."""
    from minilab.experiments import static_vectors as sv

    config = sv.SIZES["smoke"]
    rows = [{"model": "PPMI-SVD (minilib)", "wordsim": 0.3, "seconds": 1.0}]
    path = sv.save_results(rows, config, tmp_path / "static-vectors-smoke.json")
    before = _stat(path)
    sv.save_results([{**rows[0], "seconds": 2.0}], config, path)
    assert _stat(path) == before
    sv.save_results([{**rows[0], "wordsim": 0.31}], config, path)
    assert json.loads(path.read_text())["rows"][0]["wordsim"] == 0.31


# ----------------------------------------------------------------------------- every command is in the repository

def stamped_commands(obj):
    """Every provenance command in a result (a summary can hold its points' stamps), the command a restamped
    result came from aside (provenance.restamped keeps it as history)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "restamped_from":
                continue
            if k == "command" and isinstance(v, str):
                yield v
            else:
                yield from stamped_commands(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from stamped_commands(v)


def test_the_rule_tells_a_command_in_the_repository_from_one_outside():
    from minilab.provenance import command_in_repo

    for inside in ("__main__.py experiment queue --task rt --methods scratch", "ipykernel_launcher.py -f k.json",
                   "python -m minilib experiment queue --task trec", "gpu_check.py --copy-to <outside>/out"):
        assert command_in_repo(inside), inside
    for outside in (".queue.py", "search.py --x 1", "-c", "", "rerun_gpt.py", "python -m other"):
        assert not command_in_repo(outside), outside


def test_every_shipped_result_names_a_command_in_the_repository():
    from minilab.provenance import command_in_repo

    offending = {}
    for path in shipped_json():
        bad = [c for c in stamped_commands(json.loads(path.read_text(encoding="utf-8"))) if not command_in_repo(c)]
        if bad:
            offending[path.relative_to(ROOT).as_posix()] = bad[0]
    listing = "\n".join(f"  {p}: {c!r}" for p, c in sorted(offending.items())[:20])
    assert not offending, (f"{len(offending)} files were stamped by a command that is not in the repository "
                           f"(run the in-repository command that remakes them with --restamp):\n{listing}")
