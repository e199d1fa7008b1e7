"""Forward batches of token sequences: sequences of similar length batched together (length_batches), and the common
prefix of one prompt's sequences computed once where a decoder allows it (can_share_prefix): used by the VerifyRM's
forwards and by shared-prefix GRPO's (rl/shared_prefix.py)."""

from __future__ import annotations

import torch

BATCH_OVERHEAD = 64  # positions' worth of fixed cost per forward (length_batches; benchmarks/rm_prefix.py)
MIN_SHARED_PREFIX = 8  # tokens: a shorter common prefix is not worth a forward of its own


# decoder-only families whose sequence classifier takes position_ids and a DynamicCache (rotary positions, full
# attention unless a sliding window is set): sharing a prefix's keys/values gives the whole-sequence logits
PREFIX_SHARING_TYPES = ("llama", "mistral", "qwen2", "qwen3", "phi3", "olmo2", "smollm3")


def can_share_prefix(model, max_length: int) -> bool:
    """Whether the backbone is a decoder whose prefix keys/values can be reused (causal attention: they do not depend
    on the tokens after the prefix): a family in PREFIX_SHARING_TYPES with no sliding window shorter than twice
    max_length (padded prefixes shift cache positions by up to max_length)."""
    config = model.config
    window = getattr(config, "sliding_window", None)
    return (
        getattr(config, "model_type", None) in PREFIX_SHARING_TYPES
        and not getattr(config, "is_encoder_decoder", False)
        and (window is None or not getattr(config, "use_sliding_window", True) or window >= 2 * max_length)
    )


def length_batches(lengths: list[int], overhead: int = BATCH_OVERHEAD) -> list[list[int]]:
    """Indices of sequences of these lengths split into batches of similar length that minimise the padded
    positions computed plus ``overhead`` positions per batch (the fixed cost of a forward): sorted by length, the
    best contiguous split (dynamic programming, O(n^2))."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    n = len(order)
    best, cut = [0.0] + [float("inf")] * n, [0] * (n + 1)
    for j in range(1, n + 1):  # best[j]: cost of the j shortest; the last batch is order[i:j], padded to its longest
        width = lengths[order[j - 1]]
        for i in range(j):
            cost = best[i] + (j - i) * width + overhead
            if cost < best[j]:
                best[j], cut[j] = cost, i
    batches, j = [], n
    while j > 0:
        batches.append(order[cut[j] : j])
        j = cut[j]
    return batches[::-1]


def in_input_order(parts: list[tuple[list[int], torch.Tensor]], device) -> torch.Tensor:
    """The values of (indices, values) batches concatenated back into the order of the indices (keeps autograd)."""
    order = torch.tensor([i for batch, _ in parts for i in batch], device=device)
    return torch.cat([value for _, value in parts])[torch.argsort(order)]


def common_prefix_length(seqs: list[list[int]]) -> int:
    """Length of the longest common prefix of token id lists, leaving at least one token of each after it."""
    n = min(len(x) for x in seqs) - 1
    first = seqs[0]
    for i in range(max(n, 0)):
        if any(x[i] != first[i] for x in seqs[1:]):
            return i
    return max(n, 0)
