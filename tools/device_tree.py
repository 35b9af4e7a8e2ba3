"""What a device call sends, kept under its 64 MiB limit: the shipped .pt checkpoints stay behind.

A device call copies the working tree: tracked files and untracked ones git does not ignore. The shipped
checkpoints are ~108 MB of it, so around a call the .pt files a GPU script does not read leave the index
for a moment and are ignored (.git/info/exclude); the files themselves never move.

    python3 tools/device_tree.py size      # what would travel now, in MiB
    python3 tools/device_tree.py hide      # before the call: untrack the .pt files but KEEP
    python3 tools/device_tree.py show      # at once after the call: the index and the exclude file as before

`hide` refuses when the index already differs from HEAD under checkpoints/ (nothing to mix up), and `show`
restores exactly what HEAD tracks. Never commit between the two: `git status` shows the .pt files as deleted.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The checkpoints the GPU scripts read: the compute axis's fixed comparisons name one in their points' cache key
# (gpt-scratch: the shipped GPT, whose shape and tokenizer it takes; sgns-lr: ELMo's, whose corpus it reads).
KEEP = ("checkpoints/gpt-laptop.pt", "checkpoints/elmo-laptop.pt")
LIMIT_MIB = 64
EXCLUDE_LINES = ["# tools/device_tree.py hide: undo with `tools/device_tree.py show`", "/checkpoints/**/*.pt"]


def git(*args: str, root: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def hidden(root: Path = ROOT) -> list[str]:
    """The tracked .pt files a call leaves behind: every one under checkpoints/ but KEEP."""
    return [f for f in git("ls-files", "-z", "checkpoints", root=root).split("\0")
            if f.endswith(".pt") and f not in KEEP]


def travelling(root: Path = ROOT) -> list[str]:
    """The files a call would send once hidden() is out: tracked or untracked-not-ignored, repo-relative."""
    gone = set(hidden(root))
    listed = git("ls-files", "-co", "--exclude-standard", "-z", root=root).split("\0")
    return [f for f in dict.fromkeys(listed) if f and f not in gone and (root / f).is_file()]


def size_mib(files: list[str], root: Path = ROOT) -> float:
    return sum((root / f).stat().st_size for f in files) / 2 ** 20


def _exclude(root: Path) -> Path:
    return root / ".git" / "info" / "exclude"


def hide(root: Path = ROOT) -> int:
    if git("diff", "--cached", "--name-only", "HEAD", "--", "checkpoints", root=root).strip():
        print("the index already differs from HEAD under checkpoints/: run `tools/device_tree.py show` or commit "
              "first", file=sys.stderr)
        return 2
    files = hidden(root)
    if files:
        git("rm", "--cached", "--quiet", "--", *files, root=root)
    exclude = _exclude(root)
    lines = exclude.read_text().splitlines() if exclude.is_file() else []
    if EXCLUDE_LINES[-1] not in lines:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("\n".join(lines + EXCLUDE_LINES) + "\n")
    # the exclude pattern would also hide KEEP from `ls-files -o`, but KEEP stays tracked, so it travels
    sent = travelling(root)
    print(f"hidden {len(files)} .pt files; {size_mib(sent, root):.1f} MiB would travel (limit {LIMIT_MIB}; "
          f"carried paths add to it). Run `python3 tools/device_tree.py show` right after the call.")
    return 0


def show(root: Path = ROOT) -> int:
    git("reset", "--quiet", "HEAD", "--", "checkpoints", root=root)
    exclude = _exclude(root)
    if exclude.is_file():
        exclude.write_text("".join(l + "\n" for l in exclude.read_text().splitlines() if l not in EXCLUDE_LINES))
    print(f"checkpoints/ tracked as in HEAD again ({len(hidden(root))} .pt files back in the index)")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["hide"]:
        return hide()
    if argv[:1] == ["show"]:
        return show()
    if argv[:1] == ["size"]:
        print(f"{size_mib(travelling()):.1f} MiB would travel with the .pt files hidden "
              f"(now tracked in all: {size_mib([f for f in git('ls-files', '-z').split(chr(0)) if f]):.1f} MiB)")
        return 0
    print("usage: python3 tools/device_tree.py size|hide|show", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
