"""The flywheel (experiments/flywheel.py): pretraining snapshots become loadable checkpoints with the snapshot's
exact weights, the tokens axis is the checkpoint's curve, and every point runs through the grid's cache."""
import dataclasses
import io
import json
import re

import pytest
import torch

from minilib import tasks
from minilab import provenance
from minilab.cli.experiment import options_parser
from minilib.data.tokenizer import train_bpe
from minilab.experiments import flywheel, grid
from minilib.models.gpt import GPT, gpt_config
from minilib.models.pretrained import file_sha256, half_state, load_pretrained, save_pretrained
from minilib.runtime import UsageError

TEXTS = ["The cat sat on the mat.", "A dog barked at the postman twice.", "Markets fell sharply on Monday.",
         "The president said the budget would pass.", "She read the book in one night."] * 4
TOKENS = {0: 0, 1: 1500, 2: 5000}   # not steps x a constant: the axis must come from the curve


def save_snapshot(path, model):
    """As recipes/gpt.py's HeldOutCurve writes one: fp16, the tied head stored once."""
    buffer = io.BytesIO()
    torch.save(half_state(model, ("head.weight",)), buffer)
    provenance.atomic_write_bytes(path, buffer.getvalue())


@pytest.fixture
def pretraining(tmp_path):
    """A tiny GPT 'pretrained' for 2 steps: snapshots at steps 0, 1, 2 and the final checkpoint (= step 2)."""
    tok = train_bpe(TEXTS, 300)
    cfg = gpt_config(tok.vocab_size, "smoke", block_size=32, n_layer=1, n_embd=32)
    models = []
    for step in TOKENS:
        torch.manual_seed(step)
        models.append(GPT(cfg).eval())
        save_snapshot(tmp_path / "snapshots" / f"step-{step:06d}.pt", models[-1])
    final = tmp_path / "gpt-tiny.pt"
    curve = [{"step": s, "tokens": t, "valid_nats_per_token": 9.0 - s} for s, t in TOKENS.items()]
    save_pretrained(final, models[-1], tok, {"metrics": {"steps": 2, "curve": curve}})
    return {"checkpoint": final, "snapshots": tmp_path / "snapshots", "models": models, "tok": tok}


def test_a_snapshot_becomes_a_checkpoint_with_its_exact_weights(pretraining, tmp_path):
    snaps = flywheel.snapshots(pretraining["checkpoint"], pretraining["snapshots"])
    built = flywheel.build_checkpoint(snaps[1], pretraining["checkpoint"], tmp_path / "cache")
    back = load_pretrained(built, "gpt")
    x = torch.tensor([pretraining["tok"].encode(TEXTS[1])])
    want = flywheel.snapshot_model(snaps[1].source, back.model.cfg)(x)[0]
    assert torch.equal(back.model(x)[0], want)                       # fp16 on both sides: bit for bit
    assert not torch.equal(back.model(x)[0], pretraining["models"][2](x)[0])   # not the final weights
    assert back.vocab.encode(TEXTS[0]) == pretraining["tok"].encode(TEXTS[0])
    assert back.meta["tokens"] == 1500 and back.meta["snapshot"] == "step-000001.pt"
    # rebuilt elsewhere (a fresh clone's empty .cache): the same bytes, so points cached for it stay valid
    again = flywheel.build_checkpoint(snaps[1], pretraining["checkpoint"], tmp_path / "other")
    assert file_sha256(again) == file_sha256(built)
    mtime = built.stat().st_mtime_ns
    assert flywheel.build_checkpoint(snaps[1], pretraining["checkpoint"], tmp_path / "cache") == built
    assert built.stat().st_mtime_ns == mtime                         # kept, not rewritten
    assert flywheel.build_checkpoint(snaps[2], pretraining["checkpoint"]) == pretraining["checkpoint"]


def test_the_tokens_axis_is_the_checkpoints_curve(pretraining):
    snaps = flywheel.snapshots(pretraining["checkpoint"], pretraining["snapshots"])
    assert [(s.step, s.tokens) for s in snaps] == list(TOKENS.items())
    assert [s.valid_nats_per_token for s in snaps] == [9.0, 8.0, 7.0]
    assert snaps[-1].source == pretraining["checkpoint"]             # the final step is the shipped checkpoint
    kept = flywheel.snapshots(pretraining["checkpoint"], pretraining["snapshots"], keep=2)
    assert [s.step for s in kept] == [0, 2]
    save_snapshot(pretraining["snapshots"] / "step-000007.pt", pretraining["models"][0])
    with pytest.raises(UsageError, match="step-000007.pt is at step 7, which gpt-tiny.pt's curve does not have"):
        flywheel.snapshots(pretraining["checkpoint"], pretraining["snapshots"])
    with pytest.raises(UsageError, match="no pretraining snapshots"):
        flywheel.snapshots(pretraining["checkpoint"], pretraining["snapshots"] / "nowhere")


@pytest.fixture
def questions(tmp_path):
    path = tmp_path / "questions.csv"
    rows = [f"who wrote book {i},person" if i % 2 else f"where is town {i},place" for i in range(60)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    return path


def test_one_smoke_run_end_to_end_cached_point_by_point(pretraining, questions, tmp_path, monkeypatch):
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    calls = []
    gpt = grid.method("gpt")

    def counted(*args, **kwargs):
        calls.append(args[4])                                        # the checkpoint it fine-tunes
        return gpt.train(*args, **kwargs)

    monkeypatch.setitem(grid.METHODS, "gpt", dataclasses.replace(gpt, train=counted))
    config = flywheel.FlywheelConfig(tasks=(str(questions),), labels=20, seeds=(0,), snapshots=2)
    where = dict(checkpoint=pretraining["checkpoint"], snapshot_dir=pretraining["snapshots"], config=config,
                 results_dir=tmp_path / "results", cache_dir=tmp_path / "cache", out=tmp_path / "flywheel.json")
    result = flywheel.run("smoke", **where, log=None)
    assert [p["tokens"] for p in result["points"]] == [0, 5000]
    assert [c.name for c in calls] == ["gpt-tiny-step-000000.pt", "gpt-tiny.pt"]
    assert all(0 <= p["questions"]["accuracy"] <= 1 and p["questions"]["seeds"] == 1 for p in result["points"])
    saved = json.loads((tmp_path / "flywheel.json").read_text())
    assert saved["points"] == result["points"] and saved["provenance"]["profile"] == "smoke"
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "results").rglob("*.json")) == [
        "results/step-000000/questions-gpt-n20-s0-smoke.json", "results/step-000002/questions-gpt-n20-s0-smoke.json"]
    assert flywheel.run("smoke", **where, log=None)["points"] == result["points"] and len(calls) == 2   # cached
    assert re.fullmatch(r"flywheel: questions=\d\.\d{3}→\d\.\d{3} tokens=0→5000 labels=20 seeds=1",
                        flywheel.summary_line(result))


def test_the_summary_line():
    point = lambda tokens, acc: {"tokens": tokens, "trec": {"accuracy": acc}, "pos": {"accuracy": acc + 0.3}}
    result = {"tasks": ["trec", "pos"], "labels": 100, "seeds": [0, 1, 2],
              "points": [point(0, 0.2), point(1000, 0.3), point(8192000, 0.45)]}
    assert flywheel.summary_line(result) == ("flywheel: trec=0.200→0.450 pos=0.500→0.750 tokens=0→8192000 "
                                             "labels=100 seeds=3")


def test_the_dry_run_lists_points_and_trains_nothing(pretraining, questions, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    monkeypatch.setattr(grid, "run_point", lambda *a, **k: pytest.fail("a dry run trained a point"))
    monkeypatch.setattr(flywheel, "CACHE_DIR", tmp_path / "cache")
    args = options_parser("flywheel").parse_args(["--checkpoint", str(pretraining["checkpoint"]), "--snapshots", str(pretraining["snapshots"]),
                         "--tasks", str(questions), "--labels", "20", "--max-snapshots", "3", "--dry-run"])
    assert flywheel.cli_run(args, "flywheel") == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("step      0 (0 tokens) questions seed 0: to run")
    assert out[2].startswith("step      2 (5,000 tokens) questions seed 0: to run")
    assert out[-1].startswith("flywheel: dry run: 3 of 3 points to run")
    assert not (tmp_path / "cache").exists()                         # no checkpoint built either


def test_the_plot_shows_zero_tokens(pretraining):
    import matplotlib
    matplotlib.use("Agg")
    acc = lambda a: {"accuracy": a, "accuracy_std": 0.01, "seeds": 3}
    result = {"tasks": ["trec"], "labels": 100, "seeds": [0, 1, 2],
              "points": [{"tokens": t, "trec": acc(0.2 + t / 1e4)} for t in TOKENS.values()],
              "reference": {"trec": {"method": "gpt-scratch", **acc(0.3)}}}
    ax = flywheel.plot(result)
    assert ax.get_xscale() == "symlog" and list(ax.get_lines()[0].get_xdata()) == [0, 1500, 5000]
    assert ax.get_lines()[1].get_ydata()[0] == pytest.approx(30.0)  # the reference, in %


def test_the_shipped_gpts_curve_gives_tokens_per_snapshot(tmp_path):
    """Against the shipped laptop GPT's own JSON: a snapshot at step s saw s x batch x context tokens."""
    checkpoint = provenance.REPO_ROOT / "checkpoints" / "gpt-laptop.pt"
    if not checkpoint.with_suffix(".json").is_file():
        pytest.skip("no shipped laptop GPT")
    meta = json.loads(checkpoint.with_suffix(".json").read_text())
    per_step = meta["config"]["batch_size"] * meta["architecture"]["block_size"]
    for step in (0, 500):
        (tmp_path / f"step-{step:06d}.pt").write_bytes(b"")      # only the names are read here
    snaps = flywheel.snapshots(checkpoint, tmp_path)
    assert [(s.step, s.tokens) for s in snaps] == [(0, 0), (500, 500 * per_step),
                                                   (meta["metrics"]["steps"], meta["metrics"]["steps"] * per_step)]
    assert snaps[-1].source == checkpoint


def test_the_shipped_flywheels_final_points_are_its_own_not_the_leagues():
    """The final snapshot is the recipe run, whose points the league stops reading once GPT moves to its branch
    (minilab/shipped.py): they are cached in the flywheel's own folder, and summarize to what the result says."""
    result = flywheel.cached_result("laptop")
    if result is None:
        pytest.skip("no results/flywheel-laptop.json")
    last = result["points"][-1]
    assert last["checkpoint"] == flywheel.default_checkpoint("laptop").name
    folder = flywheel.FOLDER / f"step-{last['step']:06d}"
    snap = flywheel.Snapshot(last["step"], last["tokens"], None, flywheel.default_checkpoint("laptop"))
    assert flywheel._points_dir(snap, None) == folder
    for task in result["tasks"]:
        rows = [grid.cached_point(tasks.get(task), result["labels"], flywheel.METHOD, seed, "laptop",
                                  checkpoint=flywheel.default_checkpoint("laptop"), results_dir=folder)
                for seed in result["seeds"]]
        assert None not in rows, f"{task}: a final-step point is not in {folder}"
        assert flywheel._accuracy(rows)["accuracy"] == pytest.approx(last[task]["accuracy"])
