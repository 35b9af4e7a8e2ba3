"""Words as characters, for ELMo's char-CNN token encoder (Peters et al. 2018 §3.4): no word is unknown."""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import torch

# Char ids: 0 = padding (after the end-of-word mark, and every char of a padding token),
# byte b -> b + 1 (1..256), then the begin- and end-of-word marks. Józefowicz et al. §3.3 and
# bilm-tf also read UTF-8 bytes with begin/end-of-word characters (they add sentence marks too).
CHAR_PAD = 0
BOW = 257            # begin of word
EOW = 258            # end of word
N_CHARS = 259        # rows of the char embedding


@lru_cache(maxsize=200_000)
def _char_ids_cached(word: str, max_chars: int) -> tuple[int, ...]:
    raw = word.encode("utf-8")[: max_chars - 2]       # long words are cut, as in bilm-tf
    ids = [BOW, *(b + 1 for b in raw), EOW]
    return tuple(ids + [CHAR_PAD] * (max_chars - len(ids)))


def char_ids(word: str, max_chars: int = 50) -> list[int]:
    """The `max_chars` char ids of `word`: [BOW, byte+1, ..., EOW, 0, 0, ...]."""
    return list(_char_ids_cached(word, max_chars))


def sentences_to_char_ids(sentences: Sequence[Sequence[str]], max_chars: int = 50
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """(chars (B, T, max_chars) long, lengths (B,) long) for a batch of token lists, T = longest.

    Padding tokens are all-zero rows; `lengths` says where each sentence ends."""
    lengths = torch.tensor([len(s) for s in sentences], dtype=torch.long)
    if len(sentences) == 0 or int(lengths.min()) == 0:
        raise ValueError("every sentence needs at least one token (got an empty sentence or batch)")
    chars = torch.zeros(len(sentences), int(lengths.max()), max_chars, dtype=torch.long)
    for b, sent in enumerate(sentences):
        chars[b, : len(sent)] = torch.tensor([_char_ids_cached(w, max_chars) for w in sent])
    return chars, lengths
