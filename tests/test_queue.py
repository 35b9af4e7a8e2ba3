"""`python -m minilib experiment queue`: N workers fill a grid once, each point claimed; a rerun resumes.

The grid is real and cheap: majority and bow-lr on trec at 100 labels, 2 seeds (a few seconds a point at smoke),
into a temporary results folder and claims folder. The multi-worker runs go through the real command line (a
subprocess), so what the workers stamp is what a user's run stamps.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

from minilib import tasks
from minilab import provenance
from minilab.cli import main
from minilab.experiments import grid, queue

GRID = ["experiment", "queue", "--task", "trec", "--methods", "majority,bow-lr", "--labels", "100", "--seeds", "2"]
POINTS = [f"trec-{m}-n100-s{s}-smoke.json" for m in ("majority", "bow-lr") for s in (0, 1)]
COMMAND = "python -m minilib experiment queue --task trec --methods majority,bow-lr --labels 100 --seeds 2"


def run_queue(folder, *more):
    """The command line on `folder`/points with claims in `folder`/claims: (exit status, stdout, summary)."""
    argv = [sys.executable, "-m", "minilib", *GRID, "--results-dir", str(folder / "points"),
            "--claims-dir", str(folder / "claims"), *more]
    done = subprocess.run(argv, cwd=provenance.REPO_ROOT, capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr, summary(done.stdout)


def summary(out: str) -> dict[str, int]:
    last = [line for line in out.splitlines() if line.startswith("queue: ")]
    assert len(last) == 1, out
    return {k: int(v) for k, v in (kv.split("=") for kv in last[0].split()[1:])}


def snapshot(folder):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted((folder / "points").iterdir())}


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """The grid filled by two workers (once for the module; tests that change it work on a copy)."""
    folder = tmp_path_factory.mktemp("queue")
    code, out, counts = run_queue(folder, "--workers", "2")
    return folder, code, out, counts


def copy_of(filled, tmp_path):
    shutil.copytree(filled[0] / "points", tmp_path / "points")
    return tmp_path


def write_claim(folder, point: str, **record):
    path = queue.claim_path(folder / "points" / point, folder / "claims")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": socket.gethostname(), "started_unix": time.time(), "nonce": "test",
                                **record}) + "\n")
    return path


def test_two_workers_fill_every_point_once_stamped_with_the_queue_command(filled):
    folder, code, out, counts = filled
    assert code == 0, out
    assert counts["points"] == 4 and counts["trained"] == 4 and counts["cached"] == 0 and counts["failed"] == 0, out
    assert "on 2 workers" in out, out
    assert sorted(p.name for p in (folder / "points").iterdir()) == sorted(POINTS)
    for m in ("majority", "bow-lr"):       # one line per point, each point once
        for s in (0, 1):
            finished = rf"^\[\d/4\] trec n=100 +{m} +seed {s}: error \d\.\d{{3}} \(\d+ s\)$"
            assert len(re.findall(finished, out, flags=re.M)) == 1, out
    for name in POINTS:
        row = json.loads((folder / "points" / name).read_text())
        assert row["provenance"]["command"].startswith(COMMAND + " --workers 2 --results-dir "), row["provenance"]
        assert row["provenance"]["threads"] == 1 and 0 <= row["error"] <= 1
    assert not list((folder / "claims").iterdir())        # every claim released as its result was written


def test_a_second_run_trains_nothing_and_leaves_every_file_byte_identical(filled):
    folder = filled[0]
    before = snapshot(folder)
    code, out, counts = run_queue(folder, "--workers", "2")
    assert code == 0 and counts == {**counts, "cached": 4, "trained": 0, "failed": 0}, out
    assert snapshot(folder) == before


@pytest.mark.parametrize("why", ["dead pid", "too old"])
def test_a_stale_claim_is_taken_over(filled, tmp_path, why):
    folder = copy_of(filled, tmp_path)
    (folder / "points" / POINTS[3]).unlink()
    if why == "dead pid":
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        claim, more = write_claim(folder, POINTS[3], pid=gone.pid), []
    else:                                   # a live process, but past --stale-after
        claim = write_claim(folder, POINTS[3], pid=os.getpid(), started_unix=time.time() - 7200)
        more = ["--stale-after", "1"]
    others = {k: v for k, v in snapshot(folder).items()}
    code, out, counts = run_queue(folder, *more)
    assert code == 0 and counts["trained"] == 1 and counts["cached"] == 3 and counts["claimed"] == 0, out
    assert not claim.exists() and not list((folder / "claims").iterdir())
    row = json.loads((folder / "points" / POINTS[3]).read_text())
    assert row["provenance"]["command"].startswith(COMMAND), row["provenance"]
    assert {k: v for k, v in snapshot(folder).items() if k != POINTS[3]} == others


def test_a_live_claim_is_skipped(filled, tmp_path):
    folder = copy_of(filled, tmp_path)
    (folder / "points" / POINTS[3]).unlink()
    claim = write_claim(folder, POINTS[3], pid=os.getpid())        # this test's own process: alive
    held = claim.read_bytes()
    code, out, counts = run_queue(folder)
    assert code == 0 and counts["claimed"] == 1 and counts["trained"] == 0, out
    assert f"claimed by pid {os.getpid()} on {socket.gethostname()}" in out, out
    assert not (folder / "points" / POINTS[3]).exists() and claim.read_bytes() == held


def test_dry_run_trains_nothing(tmp_path):
    code, out, counts = run_queue(tmp_path, "--dry-run")
    assert code == 0 and counts == {**counts, "points": 4, "cached": 0, "trained": 0}, out
    assert sum(line.startswith("to train: trec n=100") for line in out.splitlines()) == 4, out
    assert not (tmp_path / "points").exists() and not (tmp_path / "claims").exists()


def test_a_failing_point_is_one_line_and_the_others_go_on(tmp_path, monkeypatch, capsys):
    """In this process (one worker): a method that raises fails its points only; exit status 1."""
    grid.families()                          # every family registered first: the fake one is not overwritten

    def boom(task, idx, seed, settings, checkpoint, **kw):
        raise RuntimeError(f"no good at seed {seed}\nsecond line")

    monkeypatch.setitem(grid.METHODS, "boom", grid.Method("boom", "baselines", boom, lambda prof: {}))
    argv = sys.argv[:]
    code = main(["experiment", "queue", "--task", "trec", "--methods", "boom,majority", "--labels", "100",
                 "--seeds", "1", "--results-dir", str(tmp_path / "points"), "--claims-dir", str(tmp_path / "claims")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert any(line.endswith("boom                 seed 0: failed: RuntimeError: no good at seed 0 second line")
               for line in out.splitlines()), out
    counts = summary(out)
    assert counts["trained"] == 1 and counts["failed"] == 1, out
    assert [p.name for p in (tmp_path / "points").iterdir()] == ["trec-majority-n100-s0-smoke.json"]
    row = json.loads((tmp_path / "points" / "trec-majority-n100-s0-smoke.json").read_text())
    assert row["provenance"]["command"].startswith("python -m minilib experiment queue --task trec --methods "
                                                   "boom,majority"), row["provenance"]
    assert sys.argv == argv and not list((tmp_path / "claims").iterdir())


@pytest.mark.parametrize("more, message", [
    (["--task", "trec", "--methods", "nosuch"], "unknown method 'nosuch'"),
    (["--task", "nosuch", "--methods", "majority"], "unknown task 'nosuch'"),
    (["--task", "pos", "--methods", "scratch"], "method 'scratch' handles sentence tasks, and pos is a token task"),
    (["--task", "trec", "--methods", "majority", "--labels", "999999"], "label count 999999 for trec"),
    (["--task", "trec", "--methods", "majority", "--workers", "0"], "--workers 0: use 1 or more"),
    (["--task", "trec"], "queue: name the grid"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, more, message):
    code = main(["experiment", "queue", *more, "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, (code, err)
    assert not list(tmp_path.iterdir())


def test_claims_of_a_users_task_stay_out_of_the_repository(tmp_path, monkeypatch):
    monkeypatch.setenv("MINILIB_DATA", str(tmp_path / "data"))
    csv = tmp_path / "reviews.csv"
    csv.write_text("text,label\n" + "\n".join(f"a {'fine' if i % 2 else 'dull'} film {i},{'pos' if i % 2 else 'neg'}"
                                                for i in range(60)) + "\n")
    assert queue.claims_folder(tasks.get("trec")) == provenance.REPO_ROOT / ".cache" / "queue-claims"
    assert queue.claims_folder(tasks.get(str(csv))) == tmp_path / "data" / "queue-claims"
    a, b = (queue.claim_path(tmp_path / d / "rt-bow-lr-n100-s0-smoke.json", tmp_path) for d in ("x", "y"))
    assert a != b and a.name.startswith("rt-bow-lr-n100-s0-smoke-")      # two folders' points claim apart


def test_restamp_gives_outside_points_the_queue_command_and_trains_nothing(filled, tmp_path):
    folder = copy_of(filled, tmp_path)
    inside = folder / "points" / POINTS[0]
    outside = folder / "points" / POINTS[1]
    row = json.loads(outside.read_text())
    row["provenance"]["command"] = ".queue.py"               # made by a script kept outside the repository
    provenance.write_json(outside, row)
    before = inside.read_bytes()
    code, out, counts = run_queue(folder, "--restamp")
    assert code == 0 and counts["trained"] == 0 and "restamp: points=4 restamped=1" in out, out
    after = json.loads(outside.read_text())
    assert after["provenance"]["command"] == ("__main__.py " + " ".join(GRID) + " --results-dir "
                                              f"{provenance.shown_path(folder / 'points')} --claims-dir "
                                              f"{provenance.shown_path(folder / 'claims')} --fill")
    assert after["provenance"]["restamped_from"]["command"] == ".queue.py"
    assert {k: v for k, v in after.items() if k != "provenance"} == {k: v for k, v in row.items() if k != "provenance"}
    assert inside.read_bytes() == before                       # its command is in the repository: left as it was


def test_restamp_never_trains_a_missing_point(tmp_path):
    code, out, counts = run_queue(tmp_path, "--restamp")
    assert code == 1 and counts["trained"] == 0 and out.count("not cached with this key") == 4, out
    assert not (tmp_path / "points").exists() or not any((tmp_path / "points").iterdir())
