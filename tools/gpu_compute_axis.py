"""The compute axis on one GPU in one call: the three long runs and every mark's points, bounded in time.

    python3 tools/gpu_compute_axis.py pack                     # here: the data, the commit (tools/gpu_check.py)
    python3 tools/device_tree.py hide                          # here: the .pt files stay behind (64 MiB limit)
    # device call: carry [".gpu-check"], command:
    PYTHONUNBUFFERED=1 python3 tools/gpu_compute_axis.py --copy-to $OUT
    python3 tools/device_tree.py show                          # here, at once after the call
    python3 tools/gpu_compute_axis.py unpack <files_at>         # here: results/ and checkpoints/ from the call

On a CPU the long runs of `experiment compute-axis` (GPT, BERT MLM, its left-to-right twin, each 8x the laptop
steps: `pretrain ... --budget 8`) take ~30 CPU-hours each. On one GPU the laptop shape is launch-bound, so the
three runs go side by side as three processes, and while they run, one worker per (claim, task) fine-tunes
every mark already written (`experiment compute-axis --claims C --tasks T`, cached point by point, so a pass
picks up where the last stopped). When the runs end, or at the pretraining deadline, one last pass per worker
covers every mark, then one `--cached-only` pass writes the summary (results/compute-axis-<profile>.json).
Everything is bounded by --total seconds: what ran is kept, the rest stays to run. The call's series replaces
the CPU runs' (results/compute-axis/ and the summary): their marks are other weights, so their points would
not match; stop the CPU runs once it is unpacked, or warm-start them from the call's checkpoints.

What comes back (at most 8 files): `compute-axis.tar.gz` (the points, the summary, the marks' metadata, the
logs) and each run's final checkpoint (checkpoints/<run>-<profile>-8x.pt, fp16, ~11 MB). The marks' own
checkpoints (~11 MB each) stay on the machine: the summary records their sha256, and the points are read by it.

    python3 tools/gpu_compute_axis.py --dry                    # the same, on the CPU at smoke sizes (~2-4 min)

The dry run rehearses the call on a copy of the tree as the device gets it (tracked files without the .pt
files, .gpu-check carried, no data cache), so what the device lacks shows here first.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:       # run as `python3 tools/gpu_compute_axis.py` from a copy without an install
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import device_tree  # noqa: E402
from gpu_check import PACK_DIR, pack, use_pack  # noqa: E402
from minilab.experiments import compute_axis  # noqa: E402

TARBALL = "compute-axis.tar.gz"


def pretrain_args(run: compute_axis.Run, profile: str, threads: int) -> list[str]:
    """The run's own command (compute_axis.Run.command) with the machine's thread count."""
    args = run.command(profile).split()[3:]            # drop "python -m minilib"
    i = args.index("--threads")
    args[i + 1] = str(threads)
    return args


def workers(config: compute_axis.ComputeAxisConfig) -> list[tuple[str, str]]:
    """One (claim, task) per distinct set of long runs and task: pretrained_vs_static on rt reads the points
    gpt_vs_scratch on rt trains, so it gets no worker of its own (the summary pass computes it)."""
    seen, out = set(), []
    for claim in config.claims_run():
        for task in config.tasks_of(claim):
            if (claim.runs, task) not in seen:
                seen.add((claim.runs, task))
                out.append((claim.name, task))
    return out


def minilib(args: list[str], log: Path, env: dict, threads: int) -> subprocess.Popen:
    with open(log, "a") as f:
        f.write(f"$ python -m minilib {' '.join(args)}\n")
    return subprocess.Popen([sys.executable, "-m", "minilib", *args], cwd=ROOT, stdout=open(log, "a"),
                            stderr=subprocess.STDOUT, env={**env, "OMP_NUM_THREADS": str(threads)})


def run_axis(profile: str, total_s: float, logs: Path, threads: int) -> dict:
    """The long runs and the workers, bounded: pretraining stops at 55 % of total_s, the workers' passes at
    85 %; the newest snapshots of runs cut short and the summary pass take the rest."""
    t0 = time.time()
    env = {**os.environ, "MINILIB_PROFILE": profile, "PYTHONUNBUFFERED": "1"}
    # every claim, also where the profile's default keeps fewer (smoke: the rehearsal trains all three runs)
    config = dataclasses.replace(compute_axis.SIZES[profile], claims=tuple(c.name for c in compute_axis.CLAIMS))
    run_names = list(dict.fromkeys(r for c in config.claims_run() for r in c.runs))
    pretrain = {name: minilib(pretrain_args(compute_axis.RUNS[name], profile, threads), logs / f"pretrain-{name}.log",
                              env, threads) for name in run_names}
    passes = {w: None for w in workers(config)}
    final = {w: False for w in passes}                # a pass started after pretraining ended covers every mark
    done = {w: False for w in passes}
    started = {w: 0.0 for w in passes}
    stop_pretrain, stop_passes = t0 + 0.55 * total_s, t0 + 0.85 * total_s
    while not all(done.values()):
        now = time.time()
        running = [p for p in pretrain.values() if p.poll() is None]
        if running and now > stop_pretrain:
            for p in running:
                p.terminate()                         # snapshots so far are kept; the run resumes if called again
            for p in running:
                p.wait(60)
            running = []
        for (claim, task), proc in passes.items():
            if done[(claim, task)] or (proc is not None and proc.poll() is None):
                continue
            if running and time.time() - started[(claim, task)] < 20:
                continue                              # a new mark comes every few dozen seconds at most
            if proc is not None and final[(claim, task)] or time.time() > stop_passes:
                done[(claim, task)] = True
                continue
            final[(claim, task)] = not running
            started[(claim, task)] = time.time()
            passes[(claim, task)] = minilib(
                ["experiment", "compute-axis", "--claims", claim, "--tasks", task, "--fill",
                 "--out", str(logs / f"part-{claim}-{task}.json")], logs / f"points-{claim}-{task}.log", env, threads)
        if time.time() > stop_passes:
            for proc in passes.values():
                if proc is not None and proc.poll() is None:
                    proc.terminate()                  # the point in training is lost; those before it are cached
        time.sleep(2)
    every_claim = ["--claims", ",".join(config.claims)]
    if any(p.returncode != 0 for p in pretrain.values()):         # a run cut short: its newest snapshot comes back
        subprocess.run([sys.executable, "-m", "minilib", "experiment", "compute-axis", "--keep-latest", *every_claim],
                       cwd=ROOT, env=env, stdout=open(logs / "keep-latest.log", "w"), stderr=subprocess.STDOUT,
                       timeout=max(30, t0 + total_s - time.time()))
    summary = subprocess.run([sys.executable, "-m", "minilib", "experiment", "compute-axis", "--cached-only",
                              *every_claim],
                             cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=max(30, t0 + total_s - time.time()))
    (logs / "summary.log").write_text(summary.stdout + summary.stderr)
    return {"returncode": summary.returncode, "lines": [l for l in summary.stdout.splitlines()
                                                        if l.startswith("compute-axis:")],
            "pretrain": {n: p.returncode for n, p in pretrain.items()}, "seconds": round(time.time() - t0)}


def collect(profile: str, logs: Path, copy_to: Path) -> list[Path]:
    """In copy_to: the tarball (points, summary, marks' metadata, checkpoints' sidecars, logs) and, per run, its
    final checkpoint, or where the run did not finish its newest snapshot (checkpoints/compute-axis/<stem>-latest.pt,
    the warm start of a later call: `pretrain ... --budget 8 --warm-start` it)."""
    copy_to.mkdir(parents=True, exist_ok=True)
    weights = []
    for run in compute_axis.RUNS.values():
        final = ROOT / "checkpoints" / f"{run.stem(profile)}.pt"
        latest = compute_axis.kept_path(run, profile)
        weights += [f for f in (final if final.is_file() else latest,) if f.is_file()]
    with tarfile.open(copy_to / TARBALL, "w:gz") as tar:
        for rel in ("results/compute-axis", f"results/compute-axis-{profile}.json"):
            if (ROOT / rel).exists():
                tar.add(ROOT / rel, arcname=rel)
        for meta in sorted(compute_axis.CACHE_DIR.glob("*.json")) + [w.with_suffix(".json") for w in weights]:
            if meta.is_file():
                tar.add(meta, arcname=str(meta.relative_to(ROOT)))
        tar.add(logs, arcname="logs")
    for w in weights:
        shutil.copyfile(w, copy_to / w.name)
    return [copy_to / TARBALL] + [copy_to / w.name for w in weights]


def unpack(files_at: Path) -> int:
    """Here, after the call: the tarball's results/, .cache/ and checkpoints/ sidecars into the tree, its logs into
    .cache/gpu-compute-axis/logs, each checkpoint beside its sidecar. The summary is the call's own: commit results/
    and the checkpoints."""
    tarball = files_at / TARBALL
    if not tarball.is_file():
        print(f"no {TARBALL} in {files_at}", file=sys.stderr)
        return 2
    shutil.rmtree(compute_axis.RESULTS_DIR, ignore_errors=True)          # the call's series replaces the CPU's
    with tarfile.open(tarball) as tar:
        members = tar.getmembers()
        tar.extractall(ROOT, members=[m for m in members if m.name.split("/")[0] in ("results", ".cache",
                                                                                       "checkpoints")], filter="data")
        tar.extractall(ROOT / ".cache" / "gpu-compute-axis", members=[m for m in members
                                                                      if m.name.startswith("logs")], filter="data")
        sidecars = {Path(m.name).stem: Path(m.name).parent for m in members if m.name.startswith("checkpoints/")}
    for ckpt in sorted(files_at.glob("*.pt")):
        shutil.copyfile(ckpt, ROOT / sidecars.get(ckpt.stem, Path("checkpoints")) / ckpt.name)
        print(f"{ckpt.name} -> {sidecars.get(ckpt.stem, Path('checkpoints')) / ckpt.name}")
    print(f"unpacked {tarball.name}: results/, the marks' metadata in .cache/compute-axis, the logs in "
          f".cache/gpu-compute-axis/logs")
    return 0


def device_copy(dest: Path) -> Path:
    """The tree as a device call gets it after `tools/device_tree.py hide`, and .gpu-check (carried)."""
    for rel in device_tree.travelling():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    shutil.copytree(PACK_DIR, dest / PACK_DIR.name)
    return dest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpu_compute_axis", description=__doc__.split("\n\n")[0])
    p.add_argument("action", nargs="?", choices=("run", "pack", "unpack"), default="run")
    p.add_argument("files_at", nargs="?", type=Path, help="unpack: the folder the call's files came back to")
    p.add_argument("--dry", action="store_true", help="rehearse on the CPU at smoke sizes, on a copy of the tree "
                                                      "as the device gets it")
    p.add_argument("--total", type=float, default=None, help="seconds for everything (default 540; dry 400)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads per process (default 2; dry 1)")
    p.add_argument("--copy-to", type=Path, default=None, help="where the files to bring back go (a call's $OUT)")
    p.add_argument("--profile", default="laptop", help=argparse.SUPPRESS)    # the rehearsal's inner call: smoke
    args = p.parse_args(argv)
    if args.action == "pack":
        return pack()
    if args.action == "unpack":
        if args.files_at is None:
            print("unpack needs the folder the call's files came back to", file=sys.stderr)
            return 2
        return unpack(args.files_at)
    total = args.total or (400 if args.dry else 540)
    threads = args.threads or (1 if args.dry else 2)
    if args.dry:
        if not (PACK_DIR / "data.tar.xz").is_file():
            print("no .gpu-check/data.tar.xz: run `python3 tools/gpu_compute_axis.py pack` first", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory() as tmp:
            copy = device_copy(Path(tmp) / "tree")
            env = {k: v for k, v in os.environ.items() if k not in ("MINILIB_DATA", "MINILIB_PROFILE")}
            env["MINILIB_DEVICE"] = "cpu"
            out = args.copy_to or Path(tmp) / "out"
            proc = subprocess.run([sys.executable, str(copy / "tools" / Path(__file__).name), "--profile", "smoke",
                                   "--total", str(total), "--threads", str(threads), "--copy-to", str(out)],
                                  cwd=copy, env=env)
            if proc.returncode == 0 and args.copy_to is None:
                print("dry run: brought back " + ", ".join(f.name for f in sorted(out.iterdir())))
            return proc.returncode
    return call(profile=args.profile, total=total, threads=threads, copy_to=args.copy_to)


def call(profile: str, total: float, threads: int, copy_to: Path | None) -> int:
    """What runs on the device: unpack the data, the axis, the files to bring back."""
    with tempfile.TemporaryDirectory() as tmp:
        did = use_pack(Path(tmp))
        if did:
            print(did)
        import torch

        print(f"device: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu'}; profile {profile}; "
              f"{total:.0f} s; {threads} threads a process")
        # a series of its own: the CPU runs' marks are other weights (their points' keys would not match)
        shutil.rmtree(compute_axis.RESULTS_DIR, ignore_errors=True)
        compute_axis._summary_path(profile).unlink(missing_ok=True)
        logs = ROOT / ".cache" / "gpu-compute-axis" / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        result = run_axis(profile, total, logs, threads)
        print(f"pretraining return codes {result['pretrain']}; {result['seconds']} s")
        for line in result["lines"]:
            print(line)
        if copy_to is not None:
            print("brought back: " + ", ".join(f.name for f in collect(profile, logs, copy_to)))
        return 0 if result["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
