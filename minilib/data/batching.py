"""Batches for language models: a long stream of token ids cut into (batch, bptt) blocks."""
from __future__ import annotations

import numpy as np
import torch


class LMStream:
    """A token stream as next-word batches, the way AWD-LSTM and nanoGPT feed a language model.

    The stream is split into `batch_size` contiguous rows (row b holds the
    b-th slice of the text), and each batch is the next `bptt` columns:
    x = tokens[t : t+bptt], y = tokens[t+1 : t+bptt+1], both (batch_size, bptt).
    Consecutive batches continue each row, so a recurrent model can carry its
    hidden state from one batch to the next.
    """

    def __init__(self, ids, batch_size: int, bptt: int):
        ids = torch.as_tensor(np.asarray(ids), dtype=torch.long)
        n_cols = (len(ids) - 1) // batch_size
        if n_cols < 2:
            raise ValueError(f"a stream of {len(ids)} tokens is too short for batch_size={batch_size}; "
                             f"use more text or a smaller batch")
        self.batch_size, self.bptt = batch_size, bptt
        self.x = ids[: n_cols * batch_size].view(batch_size, n_cols)
        self.y = ids[1: n_cols * batch_size + 1].view(batch_size, n_cols)

    @property
    def n_tokens(self) -> int:
        """Tokens predicted in one pass over the stream."""
        return self.x.numel()

    def __len__(self) -> int:
        return -(-self.x.shape[1] // self.bptt)

    def __iter__(self):
        for start in range(0, self.x.shape[1], self.bptt):
            yield self.x[:, start:start + self.bptt], self.y[:, start:start + self.bptt]
