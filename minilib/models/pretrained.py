"""One checkpoint format for every pretrained model: `<name>.pt` + `<name>.json`.

The `.pt` is a plain dict that `torch.load(weights_only=True)` reads:

    {"format": "minilib-pretrained-v1", "model": kind, "config": {...}, "state": {name: fp16 tensor},
     "vocab": {"itos", "counts", "unk"}, "meta": {...}}

Floating-point weights are stored in half precision (shipped checkpoints stay small) and a
weight tied to another (AWD-LSTM's decoder = its embedding, AWD-LSTM §4.4) is stored once.
The `.json` beside it is the provenance (command, commit, data fingerprint, device, time,
the validation number measured on the weights as saved). KINDS says which module and config
class each kind needs, so `load_pretrained(path)` rebuilds any of them.
"""
from __future__ import annotations

import dataclasses
import functools
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from minilib import files, runtime
from minilib.runtime import UsageError
from minilib.data.tokenizer import SubwordTokenizer, load_tokenizer_json
from minilib.data.vocab import Vocab
from minilib.models.awd_lstm import AWDLSTM, AWDLSTMConfig
from minilib.models.bert import BERT, BERTConfig
from minilib.models.elmo import BiLM, ELMoConfig
from minilib.models.gpt import GPT
from minilib.models.transformer import TransformerConfig

FORMAT = "minilib-pretrained-v1"


@dataclass(frozen=True)
class ModelKind:
    module: type                                    # the nn.Module class
    config: type                                    # its config dataclass
    tied: dict[str, str] = field(default_factory=dict)  # a weight -> the weight it shares (stored once)


KINDS: dict[str, ModelKind] = {
    "awd-lstm": ModelKind(AWDLSTM, AWDLSTMConfig, {"decoder.weight": "encoder.embedding.weight"}),
    "elmo": ModelKind(BiLM, ELMoConfig),
    "gpt": ModelKind(GPT, TransformerConfig, {"head.weight": "tok_emb.weight"}),
    "bert": ModelKind(BERT, BERTConfig, {"mlm.decoder.weight": "tok_emb.weight"}),
}


class Pretrained(NamedTuple):
    model: nn.Module     # in eval mode, float32
    vocab: Vocab | SubwordTokenizer   # a word Vocab (awd-lstm, elmo) or the subword tokenizer (gpt)
    meta: dict[str, Any]


class CheckpointError(UsageError):
    """A file that is missing, not a minilib checkpoint, or of another kind than asked for."""


def sidecar(path: str | Path) -> Path:
    """The provenance JSON beside a checkpoint: checkpoints/elmo-laptop.pt -> checkpoints/elmo-laptop.json."""
    return Path(path).with_suffix(".json")


def file_sha256(path: str | Path) -> str:
    """The checkpoint's identity in every results cache (hashed once per file version: reading a
    cached grid asks for it at every point)."""
    p = Path(path).resolve()
    st = p.stat()
    return _sha256(str(p), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    return files.sha256_file(path)


def half_state(model: nn.Module, drop=()) -> dict[str, torch.Tensor]:
    """The state dict with floating-point tensors in half precision, without the names in `drop`."""
    return {k: (v.detach().half() if v.is_floating_point() else v.detach()).cpu()
            for k, v in model.state_dict().items() if k not in drop}


def load_half_state(model: nn.Module, source: str | Path | dict[str, torch.Tensor]) -> nn.Module:
    """Load a snapshot (a `half_state` dict, or a file of one: what the pretrainers write every `eval_every` steps
    to .cache/pretrain/<name>/snapshots/) into `model` as float32, re-tying the weights its kind stores once."""
    state = source if isinstance(source, dict) else torch.load(source, map_location="cpu", weights_only=True)
    state = {k: v.float() if v.is_floating_point() else v for k, v in state.items()}
    for weight, tied_to in KINDS[kind_of(model)].tied.items():
        state.setdefault(weight, state[tied_to])
    model.load_state_dict(state)
    return model


def round_to_half(model: nn.Module) -> None:
    """Round the weights to what a half-precision checkpoint holds (so a measured metric is the saved model's)."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())


def kind_of(model: nn.Module) -> str:
    for name, kind in KINDS.items():
        if type(model) is kind.module:
            return name
    raise CheckpointError(f"no checkpoint kind for {type(model).__name__}: add it to KINDS in {__name__}")


def save_pretrained(path: str | Path, model: nn.Module, vocab: Vocab | SubwordTokenizer, meta: dict[str, Any]) -> None:
    """Atomically write `path` (the model in half precision, its config, vocabulary or subword
    tokenizer, and meta) and its JSON."""
    path, kind = Path(path), kind_of(model)
    meta = json.loads(json.dumps({**meta, "model": kind}, default=str))  # plain JSON types for weights_only=True
    if isinstance(vocab, SubwordTokenizer):   # the tokenizer's own JSON travels inside the checkpoint
        words = {"tokenizer": vocab.hf.to_str()}
    else:
        words = {"vocab": {"itos": list(vocab.itos), "counts": vocab.counts.tolist(), "unk": vocab.unk}}
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, "model": kind, "config": dataclasses.asdict(model.cfg),
                "state": half_state(model, tuple(KINDS[kind].tied)), **words, "meta": meta}, buffer)
    files.atomic_write_bytes(path, buffer.getvalue())
    files.write_json(sidecar(path), {**meta, "checkpoint": path.name, "checkpoint_bytes": path.stat().st_size})


def load_pretrained(path: str | Path, kind: str | None = None, device: str | torch.device | None = None) -> Pretrained:
    """(model in eval mode, float32, on `device` (default cpu); its Vocab; meta) from any minilib checkpoint.
    With `kind` ("awd-lstm", "elmo", ...) a checkpoint of another kind is refused."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}: make one with `python -m minilib pretrain {kind or 'MODEL'}`")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated file, another program's pickle, ...
        raise CheckpointError(f"{path} is not a minilib checkpoint ({type(exc).__name__}): "
                              f"write it with `python -m minilib pretrain ...`") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT or ckpt.get("model") not in KINDS:
        raise CheckpointError(f"{path} is not a minilib checkpoint: write it with `python -m minilib pretrain ...`")
    if kind is not None and ckpt["model"] != kind:
        raise CheckpointError(f"{path} holds a {ckpt['model']} model, not {kind}: "
                              f"pass a {kind} checkpoint (python -m minilib pretrain {kind})")
    spec = KINDS[ckpt["model"]]
    model = spec.module(spec.config(**ckpt["config"]))
    state = {k: v.float() if v.is_floating_point() else v for k, v in ckpt["state"].items()}
    for weight, source in spec.tied.items():
        state[weight] = state[source]
    model.load_state_dict(state)
    model = model.to(runtime.device(str(device)) if device else "cpu").eval()
    if "tokenizer" in ckpt:
        return Pretrained(model, load_tokenizer_json(ckpt["tokenizer"]), ckpt["meta"])
    v = ckpt["vocab"]
    return Pretrained(model, Vocab(v["itos"], v["counts"], unk=v["unk"]), ckpt["meta"])
