"""Shared-prefix GRPO: each group's prompt computed once in the log-prob forwards (reference, old, policy loss).

GRPO scores G completions of every prompt, and TRL forwards the prompt once per completion: in the reference pass,
the old-policy pass and the policy's forward and backward. A causal decoder's prompt positions do not depend on what
follows them, so the rows of one prompt can share them: one forward of each distinct prompt (without its last token)
fills a key/value cache, the cache is indexed out to the group's rows, and each row then forwards only its last
prompt token and its completion, attending to the cache. The log-probs are the whole-sequence ones (the same
positions, masks and weights; only the matmul shapes differ, so fp32 rounding does), and the gradient of a prompt
position is the sum over its group's completions, which autograd's indexing backward computes (Prefix Grouper,
arXiv 2506.05433, proves the same for its packed-sequence form).

``SharedPrefix`` wraps TRL's private log-prob method (``trl_internals.TRAINER_METHODS['logps']``) on one trainer, in
place of ``rollout_speed.PaddingTrimmer``, whose padding trims it keeps: a call drops the columns all its rows pad, and
forwards its rows' suffixes in batches of similar length (each as wide as its longest), all on one prefix forward.
Calls it cannot serve exactly go to TRL's own path (``fallbacks``): multimodal or MoE inputs, a model wrapped for
several processes (DDP/FSDP/DeepSpeed run the forward's hooks once per call), and with the cache mechanism the loss's
forward under gradient checkpointing (its layers drop the cache; the no-grad reference and old passes still share).

``packed_prefix_logps`` is the other mechanism (``--shared_prefix_mechanism packed``): one sequence per group, the
prompt then each completion, with a prefix/suffix attention mask (Prefix Grouper's form); one forward per call, and
no cache, so it shares under gradient checkpointing too. The default, ``auto``, takes the cache mechanism and the
packed one for a loss forward under gradient checkpointing.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from cooper_rl.cooper.batching import PREFIX_SHARING_TYPES, in_input_order, length_batches
from cooper_rl.rl.rollout_speed import TEXT_ONLY_KWARGS, shift_invariant, trimmed_span
from cooper_rl.rl.trl_internals import wrap_trainer_method


def prompt_groups(input_ids: torch.Tensor, attention_mask: torch.Tensor, prompt_width: int):
    """(distinct prompts' row indices, inverse): rows whose prompt columns (ids and mask) are equal share a group;
    ``inverse[i]`` is row i's group, groups numbered in order of first appearance."""
    key = torch.cat([input_ids[:, :prompt_width], attention_mask[:, :prompt_width]], dim=1)
    _, inverse = torch.unique(key, dim=0, return_inverse=True)
    first: dict[int, int] = {}
    for i, g in enumerate(inverse.tolist()):
        first.setdefault(g, i)
    order = {g: n for n, g in enumerate(first)}  # renumber by first appearance: deterministic, input-ordered
    inverse = torch.tensor([order[g] for g in inverse.tolist()], device=input_ids.device)
    return torch.tensor(list(first.values()), device=input_ids.device), inverse


def can_share(model) -> bool:
    """Whether prompt keys/values can be computed once per group and give the whole-sequence log-probs: a decoder
    family with full causal attention and rotary positions (PREFIX_SHARING_TYPES), no sliding window, called in
    this process alone (not under DDP/FSDP/DeepSpeed wrappers)."""
    if isinstance(model, torch.nn.parallel.DistributedDataParallel) or type(model).__name__.startswith(
        ("FullyShardedDataParallel", "FSDP", "DeepSpeedEngine")
    ):
        return False
    config = getattr(model, "config", None)
    if config is None or getattr(config, "model_type", None) not in PREFIX_SHARING_TYPES:
        return False
    window = getattr(config, "sliding_window", None)
    sliding = window is not None and getattr(config, "use_sliding_window", True)  # Qwen2 names a window it doesn't use
    layer_types = getattr(config, "layer_types", None) or []
    return (
        not getattr(config, "is_encoder_decoder", False)
        and not sliding
        and all(t == "full_attention" for t in layer_types)
    )


def checkpointed(model) -> bool:
    """Whether this forward runs under gradient checkpointing (training mode, grad on, a checkpointed layer): its
    layers then drop any cache, so a shared prompt cannot be attended to and TRL's path must run."""
    if not (torch.is_grad_enabled() and getattr(model, "training", False)):
        return False
    check = getattr(model, "is_activation_checkpointing", None)
    return bool(check() if callable(check) else check)


def segment_lengths(mask: torch.Tensor, prompt_width: int) -> list[int]:
    """Per row: its last prompt token and its completion up to its last real token (the positions both mechanisms
    forward after the shared prompt)."""
    return (1 + mask[:, prompt_width:].flip(1).cumsum(1).clamp(max=1).sum(1)).tolist()


def shared_prefix_logps(
    model, input_ids, attention_mask, logits_to_keep: int, compute_entropy: bool, lead_ok: bool, max_rows=None
):
    """(log-probs, entropies or None, positions computed) of the completion tokens (the last ``logits_to_keep``
    columns) of each row, as TRL's fused-head forward gives them for the whole rows, with each distinct prompt
    forwarded once.

    The prompt without its last token goes through the model once per group (a cache); every row then forwards its
    last prompt token and completion on its group's cache, so the positions that predict completion tokens are the
    same as in one whole-row forward. The rows' suffixes go in batches of similar length (length_batches, at most
    ``max_rows`` rows each), each as wide as its longest. Columns every row pads are dropped first (``trimmed_span``;
    leading ones only if ``lead_ok``, i.e. positions are shift invariant)."""
    from transformers import DynamicCache

    width = input_ids.size(1)
    lead, end, _ = trimmed_span(input_ids, attention_mask, logits_to_keep, lead_ok)
    ids, mask = input_ids[:, lead:end], attention_mask[:, lead:end]
    prompt_width = width - logits_to_keep - lead
    firsts, inverse = prompt_groups(ids, mask, prompt_width)
    prefix_ids, prefix_mask = ids[firsts, : prompt_width - 1], mask[firsts, : prompt_width - 1]
    # the prefix's keys/values (no LM head: logits of one position only, unused)
    kv = [
        (k, v)
        for k, v, *_ in model(input_ids=prefix_ids, attention_mask=prefix_mask, use_cache=True, logits_to_keep=1).cache
    ]
    positions = prefix_ids.numel()
    # each row: its last prompt token and its completion up to its last real token
    lengths = segment_lengths(mask, prompt_width)
    parts_lp, parts_ent, order = [], [], []
    for batch in length_batches(lengths):
        for start in range(0, len(batch), max_rows or len(batch)):
            rows = batch[start : start + (max_rows or len(batch))]
            w = max(lengths[i] for i in rows)
            idx = torch.tensor(rows, device=input_ids.device)
            suffix = ids[idx, prompt_width - 1 : prompt_width - 1 + w]
            suffix_mask = mask[idx, prompt_width - 1 : prompt_width - 1 + w]
            labels = suffix.masked_fill(suffix_mask == 0, -100)
            labels[:, 0] = -100  # the last prompt token is input only: the fused head scores labels[:, 1:]
            g = inverse[idx]
            out = model(
                input_ids=suffix,
                attention_mask=torch.cat([prefix_mask[g], suffix_mask], dim=1),
                cache=DynamicCache(ddp_cache_data=[(k[g], v[g]) for k, v in kv]),  # each row its group's prompt
                labels=labels,
                fused_lm_head=True,
            )
            positions += suffix.numel()
            parts_lp.append(F.pad(out.log_probs, (0, logits_to_keep - (w - 1))))
            if compute_entropy:
                parts_ent.append(F.pad(out.entropy, (0, logits_to_keep - (w - 1))))
            order += rows
    where = torch.argsort(torch.tensor(order, device=input_ids.device))  # back to the rows' order (keeps autograd)
    logps = torch.cat(parts_lp)[where]
    entropy = torch.cat(parts_ent)[where] if compute_entropy else None
    return logps, entropy, positions


PACKED_ATTENTION = ("sdpa", "eager")  # attention backends that take a custom 4D mask as it is


def packed_prefix_logps(
    model, input_ids, attention_mask, logits_to_keep: int, compute_entropy: bool, lead_ok: bool, max_rows=None
):
    """What ``shared_prefix_logps`` returns, with the other mechanism (Prefix Grouper's): one packed sequence per group
    instead of a cache. A group's row holds its prompt without the last token, then one segment per completion (the
    last prompt token and the completion up to its last real token); a 4D mask lets every segment attend to the
    prompt's real tokens and causally to itself, and each segment's positions continue from the prompt's, so every
    completion token is predicted from what TRL's whole-row forward gives it. One forward (and backward) per call, or
    per chunk of whole groups of at most ``max_rows`` rows (a larger group alone)."""
    if max_rows and input_ids.size(0) > max_rows:
        of = prompt_groups(input_ids, attention_mask, input_ids.size(1) - logits_to_keep)[1].tolist()
        chunks, rows = [], []
        for g in range(max(of) + 1):
            group = [i for i, x in enumerate(of) if x == g]
            if rows and len(rows) + len(group) > max_rows:
                chunks.append(rows)
                rows = []
            rows += group
        chunks.append(rows)
        parts = [
            packed_prefix_logps(model, input_ids[c], attention_mask[c], logits_to_keep, compute_entropy, lead_ok)
            for c in chunks
        ]
        device = input_ids.device
        logps = in_input_order([(c, p[0]) for c, p in zip(chunks, parts)], device)
        entropy = in_input_order([(c, p[1]) for c, p in zip(chunks, parts)], device) if compute_entropy else None
        return logps, entropy, sum(p[2] for p in parts)
    lead, end, keep = trimmed_span(input_ids, attention_mask, logits_to_keep, lead_ok)
    ids, mask = input_ids[:, lead:end], attention_mask[:, lead:end].bool()
    pw = end - lead - keep  # prompt columns
    firsts, inverse = prompt_groups(ids, mask.long(), pw)
    lengths = segment_lengths(mask, pw)
    of = inverse.tolist()
    groups = [[i for i in range(ids.size(0)) if of[i] == g] for g in range(len(firsts))]
    width = max(2, max(pw - 1 + sum(lengths[i] for i in rows) for rows in groups))  # >= 2: one label column
    device, n = ids.device, len(groups)
    packed = torch.full((n, width), 0, dtype=ids.dtype, device=device)
    valid = torch.zeros(n, width, dtype=torch.bool, device=device)  # a real token (attendable as a key)
    segment = torch.full((n, width), -1, device=device)  # -1: prompt; k: the k-th segment; -2: trailing padding
    positions = torch.zeros(n, width, dtype=torch.long, device=device)
    labels = torch.full((n, width), -100, dtype=ids.dtype, device=device)
    start = torch.zeros(ids.size(0), dtype=torch.long, device=device)  # each row's segment start in its packed row
    for g, rows in enumerate(groups):
        f = int(firsts[g])
        packed[g, : pw - 1], valid[g, : pw - 1] = ids[f, : pw - 1], mask[f, : pw - 1]
        positions[g, : pw - 1] = torch.arange(pw - 1, device=device)
        at = pw - 1
        for k, i in enumerate(rows):
            w = lengths[i]
            packed[g, at : at + w], valid[g, at : at + w] = ids[i, pw - 1 : pw - 1 + w], mask[i, pw - 1 : pw - 1 + w]
            segment[g, at : at + w] = k
            positions[g, at : at + w] = torch.arange(pw - 1, pw - 1 + w, device=device)
            labels[g, at + 1 : at + w] = ids[i, pw : pw - 1 + w].masked_fill(~mask[i, pw : pw - 1 + w], -100)
            start[i] = at
            at += w
        segment[g, at:] = -2
    q, k = segment[:, :, None], segment[:, None, :]
    causal = torch.ones(width, width, dtype=torch.bool, device=device).tril()
    allowed = causal & valid[:, None, :] & (((k == -1) & (q >= -1)) | ((q == k) & (q >= 0)))
    # a query with no key (padding) attends to itself: no NaN, and nothing reads its output
    allowed |= torch.eye(width, dtype=torch.bool, device=device) & ~allowed.any(-1, keepdim=True)
    attend = allowed[:, None]
    if getattr(model.config, "_attn_implementation", "sdpa") != "sdpa":  # eager and the like add a float mask
        attend = torch.zeros(attend.shape, dtype=model.dtype, device=device).masked_fill(
            ~attend, torch.finfo(model.dtype).min
        )
    out = model(input_ids=packed, attention_mask=attend, position_ids=positions, labels=labels, fused_lm_head=True)
    # row i's completion token j: predicted at packed index start_i + j of its group's row
    j = torch.arange(logits_to_keep, device=device)
    has = j[None, :] < (torch.tensor(lengths, device=device) - 1)[:, None]
    index = (start[:, None] + j[None, :]).clamp(max=width - 2)

    def rows_of(x):
        return torch.where(has, x[inverse].gather(1, index), torch.zeros((), dtype=x.dtype, device=device))

    entropy = rows_of(out.entropy) if compute_entropy else None
    return rows_of(out.log_probs), entropy, packed.numel()


MECHANISMS = ("auto", "cache", "packed")  # auto: cache, packed for a loss forward under gradient checkpointing


class SharedPrefix:
    """TRL's log-prob forwards with each group's prompt computed once (module doc). Counts: ``calls`` served shared,
    ``fallbacks`` sent to TRL's path, ``tokens`` = [positions computed, positions TRL would have computed]."""

    def __init__(self, trainer, mechanism: str = "auto"):
        if mechanism not in MECHANISMS:
            raise ValueError(f"shared_prefix_mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
        self.trainer = trainer
        self.mechanism = mechanism
        self.lead_ok = shift_invariant(trainer.model)
        self.calls = self.fallbacks = 0
        self.tokens = [0, 0]

    def wrap_logps(self, logps):
        """Wrap TRL's log-prob method (see the class doc)."""
        this = self

        @functools.wraps(logps)
        def logps_shared(*args, **kwargs):
            # auto: the cache mechanism (as fast on CPU: benchmarks/README.md) but where the loss forward runs under
            # gradient checkpointing, whose replayed layers would drop the cache: the packed one shares there
            ckpt = len(args) > 0 and checkpointed(args[0])
            want = this.mechanism == "packed" or (this.mechanism == "auto" and ckpt)
            packed = want and (
                getattr(getattr(args[0], "config", None), "_attn_implementation", None) in PACKED_ATTENTION
            )  # other backends (flash-attention) read a mask as padding: the cache mechanism there
            if (
                len(args) < 4
                or kwargs.get("compute_aux_loss")
                or any(v is not None for k, v in kwargs.items() if k not in TEXT_ONLY_KWARGS)
                or not can_share(args[0])
                or args[1].size(1) - args[3] < 2  # a one-token prompt leaves nothing to share
                or (ckpt and not packed)  # the cache mechanism's layers would drop the cache
            ):
                this.fallbacks += 1
                return logps(*args, **kwargs)
            model, input_ids, attention_mask, keep = args[:4]
            # one prefix forward for the whole call; the suffixes in batches of at most TRL's batch_size rows
            # without grad (TRL's memory bound there), all of a loss micro-batch's rows with grad
            max_rows = None if torch.is_grad_enabled() else kwargs.get("batch_size")
            entropy = bool(kwargs.get("compute_entropy"))
            with this.trainer.accelerator.autocast():  # as TRL's forward runs
                if packed:  # one forward of the call's groups (or chunks of them), each packed into one row
                    logp, ent, positions = packed_prefix_logps(
                        model, input_ids, attention_mask, keep, entropy, this.lead_ok, max_rows
                    )
                else:
                    logp, ent, positions = shared_prefix_logps(
                        model, input_ids, attention_mask, keep, entropy, this.lead_ok, max_rows
                    )
            this.calls += 1
            this.tokens[0] += positions
            this.tokens[1] += input_ids.numel()
            return logp, ent, None

        return logps_shared


def generation_positions(mask: torch.Tensor) -> torch.Tensor:
    """The position ids HF generate gives a left-padded prompt: real tokens count from 0, padding at 0."""
    return (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)


def shared_prefill(model, generate):
    """``generate`` with one prefill per distinct prompt: rows with equal prompts (ids and mask) share one forward of
    the prompt without its last token, whose cache is indexed out to the rows and handed to ``generate``, which then
    forwards each row's last prompt token and samples as before (the same positions as its own prefill: generate's,
    counted from each row's first real token). The prefill runs the model's backbone, not the model, so forward
    hooks on the model (SamplerLogprobs) see only generate's own steps. ``counts``: [calls shared, prompt rows,
    distinct prompts]."""
    from transformers import DynamicCache

    backbone = getattr(model, model.base_model_prefix)

    @functools.wraps(generate)
    def generate_shared(*args, **kwargs):
        ids, mask = kwargs.get("input_ids"), kwargs.get("attention_mask")
        if args or ids is None or mask is None or ids.size(1) < 2 or kwargs.get("cache") is not None:
            return generate(*args, **kwargs)
        firsts, inverse = prompt_groups(ids, mask, ids.size(1))
        if len(firsts) == ids.size(0):
            return generate(*args, **kwargs)  # no prompt twice: nothing to share
        p_ids, p_mask = ids[firsts, :-1], mask[firsts, :-1]
        with torch.no_grad():
            out = backbone(
                input_ids=p_ids, attention_mask=p_mask, position_ids=generation_positions(p_mask), use_cache=True
            )
        cache = DynamicCache(ddp_cache_data=[(k[inverse], v[inverse]) for k, v, *_ in out.cache])
        generate_shared.counts[0] += 1
        generate_shared.counts[1] += ids.size(0)
        generate_shared.counts[2] += len(firsts)
        return generate(*args, **kwargs, cache=cache)

    generate_shared.counts = [0, 0, 0]
    return generate_shared


def install_shared_prefill(trainer) -> list[int]:
    """Make ``trainer``'s HF-generate rollouts prefill each distinct prompt once (see shared_prefill); returns the
    counts list it updates. Install after the other rollout wrappers (it must run outermost: it hands the prompt's
    cache to whatever ``model.generate`` they set up)."""
    model = trainer.model
    counts = [0, 0, 0]

    def wrap(generate_phase):
        @functools.wraps(generate_phase)
        def phase(*args, **kwargs):
            previous = model.__dict__.get("generate")  # an instance attribute another wrapper set for this call
            inner = previous if previous is not None else model.generate
            owner = getattr(inner, "__self__", None)  # another model's generate (the bf16 rollout copy): its prefill
            shared = shared_prefill(owner if isinstance(owner, torch.nn.Module) else model, inner)
            shared.counts = counts
            model.generate = shared
            try:
                return generate_phase(*args, **kwargs)
            finally:
                if previous is not None:
                    model.generate = previous
                else:  # (an inner wrapper may have removed it already)
                    model.__dict__.pop("generate", None)

        return phase

    wrap_trainer_method(trainer, "generate", wrap)
    trainer._cooper_shared_prefill = counts
    return counts


_GROUPED: dict = {"size": None}  # G while a trainer with whole-group micro-batches prepares its inputs


def group_permutation(permutation: torch.Tensor, size: int) -> torch.Tensor:
    """A permutation of ``size``-row blocks (rows i*size ... i*size + size - 1 stay together and in order), the blocks in
    the order their first row comes in ``permutation``: TRL's random draw, applied to whole groups."""
    n = permutation.numel()
    rank = torch.empty(n, dtype=torch.long)
    rank[permutation] = torch.arange(n)
    order = torch.argsort(rank.view(-1, size).min(1).values)
    return (order[:, None] * size + torch.arange(size)).flatten()


def _whole_groups(seq_dict: dict, size: int) -> bool:
    """Whether the rows come in consecutive blocks of ``size`` with one prompt each (TRL's RepeatSampler order)."""
    ids, mask = seq_dict.get("prompt_ids"), seq_dict.get("prompt_mask")
    if not isinstance(ids, torch.Tensor) or not isinstance(mask, torch.Tensor) or ids.size(0) % size:
        return False
    key = torch.cat([ids, mask], dim=1).view(-1, size, ids.size(1) * 2)
    return bool((key == key[:, :1]).all())


def grouped_shuffle(original):
    """TRL's shuffle of a generation batch (``trl_internals.SHUFFLE``), drawing the same random permutation, that keeps
    each group's rows together while a trainer installed by ``install_group_microbatches`` prepares its inputs (then
    every micro-batch holds whole groups); TRL's own shuffle otherwise."""

    def shuffle(seq_dict):
        size = _GROUPED["size"]
        if not size:
            return original(seq_dict)
        n = len(next(v for v in seq_dict.values() if v is not None))
        permutation = torch.randperm(n)  # TRL's draw: the random streams stay those of the unshared path
        if _whole_groups(seq_dict, size):
            permutation = group_permutation(permutation, size)

        def permute(v):
            if v is None or (isinstance(v, torch.Tensor) and v.ndim == 0):
                return v
            if isinstance(v, torch.Tensor):
                return v[permutation.to(v.device)]
            return [v[i] for i in permutation.tolist()]

        return {k: permute(v) for k, v in seq_dict.items()}

    shuffle.cooper_grouped = True
    return shuffle


def install_group_microbatches(trainer, group_size: int) -> None:
    """Make ``trainer``'s micro-batches hold whole groups (its shared-prefix forwards then compute each prompt once per
    micro-batch, not once per row of it): the generation batch's groups are shuffled as TRL shuffles its rows. The
    same rows in other micro-batches of the same optimizer step: the same gradient where the loss of a step is the
    mean over equal micro-batches (loss types grpo, dr_grpo, dapo; build_trainer installs it only there)."""
    from cooper_rl.rl import trl_internals

    trl_internals.patch_shuffle(grouped_shuffle)

    def wrap(prepare):
        @functools.wraps(prepare)
        def prepare_grouped(*args, **kwargs):
            _GROUPED["size"] = group_size
            try:
                return prepare(*args, **kwargs)
            finally:
                _GROUPED["size"] = None

        return prepare_grouped

    wrap_trainer_method(trainer, "prepare_inputs", wrap)
    trainer._cooper_group_microbatches = group_size


def install_shared_prefix(trainer, mechanism: str = "auto") -> SharedPrefix:
    """Make ``trainer``'s log-prob forwards compute each group's prompt once (see SharedPrefix); in place of
    rollout_speed.install_padding_trimmer (it trims the same padding)."""
    shared = SharedPrefix(trainer, mechanism)
    wrap_trainer_method(trainer, "logps", shared.wrap_logps)
    trainer._cooper_shared_prefix = shared
    return shared
