"""VerifyRM: a reference-based reward model (Cooper, arXiv 2508.05613).

A sequence classifier with one logit reads

    <question>{q}</question>
    <reference_answer>{a}</reference_answer>
    <completion>{c}</completion>

and reward = sigmoid(logit). It is trained offline with BCE (rm/train.py) and updated online during RL with
the pairwise loss -logsigmoid(s_pos - s_neg) (VerifyRM.pairwise_update).

Its input is built by rm_inputs.encode_rm_inputs (the one builder for training, scoring and RL updates); its forwards
batch by length and share one prompt's prefix (batching.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
import torch.nn.functional as F

from cooper_rl.cooper.batching import (
    BATCH_OVERHEAD,
    MIN_SHARED_PREFIX,
    can_share_prefix,
    common_prefix_length,
    in_input_order,
    length_batches,
)
from cooper_rl.cooper.rm_inputs import TEMPLATE_VERSION, encode_rm_inputs
from cooper_rl.io import atomic_dir
from cooper_rl.models import default_device, load_tokenizer, resolve_model

META_FILE = "cooper_rm.json"
DEFAULT_MAX_LENGTH = 512

ADAPTER_CONFIG = "adapter_config.json"  # PEFT's: an RM saved as a LoRA adapter + score head


def _load_adapter(model, path, trainable: bool):
    """``model`` (the base, a fresh head) with the PEFT adapter and score head in ``path`` applied: merged into the
    weights (a plain model, as fast as one), or kept as a trainable adapter."""
    from peft import PeftModel

    peft_model = PeftModel.from_pretrained(model, path, is_trainable=trainable)
    return peft_model if trainable else peft_model.merge_and_unload()


def _distributed() -> bool:
    """True inside an initialised torch.distributed group of more than one process."""
    return (
        torch.distributed.is_available()
        and torch.distributed.is_initialized()
        and torch.distributed.get_world_size() > 1
    )


def _all_reduce_sum(t: torch.Tensor) -> torch.Tensor:
    """In-place sum of ``t`` over all ranks; returns ``t``."""
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.SUM)
    return t


class VerifyRM:
    """Reference-based reward model: an AutoModelForSequenceClassification (1 logit) + tokenizer + max_length.

    Sequences are forwarded in batches of similar length (length_batches, ``batch_overhead``): rollouts range from
    a few tokens to the length cap, and one batch would pad them all to the longest.

    `optimizer` / `scheduler` (None until configure_optimizer or the first pairwise_update) are attributes so
    an RL loop can checkpoint them. `autocast` (default False): run forwards (and so backwards) under bf16
    autocast with fp32 master weights, ~2x faster on CPUs with bf16 matmul units.
    """

    def __init__(self, model, tokenizer, max_length: int, backbone: str, meta: dict | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.backbone = backbone
        self.meta = dict(meta or {})
        self.optimizer = None
        self.scheduler = None
        self.max_grad_norm = 1.0
        self.autocast = False
        self.new_parameters: list[str] = []  # names of weights initialised at load (a fresh classification head)
        # Rollouts of one prompt share the question + reference prefix: a decoder computes it once (KV cache)
        self.share_prefix = can_share_prefix(model, max_length)
        self.batch_overhead = BATCH_OVERHEAD  # length_batches: larger, fewer forwards; 10**9: one padded batch
        # subtracted from every logit: a threshold moved after training (cooper/recalibration.py), saved in META_FILE
        self.offset = float(self.meta.get("logit_offset", 0.0))

    @property
    def device(self) -> torch.device:
        """Device of the model's weights."""
        return next(self.model.parameters()).device

    @classmethod
    def from_pretrained(
        cls, name_or_path: str, max_length: int | None = None, device: str = "auto", trainable_adapter: bool = False
    ) -> VerifyRM:
        """Load a trained RM (a dir with cooper_rm.json) or build a fresh one on a backbone.

        A trained RM saved as a LoRA adapter + score head (train-rm --lora_rank) is applied to its base model and
        merged into it (scoring costs what a full model's does), or with trainable_adapter=True kept as an adapter
        whose weights and head alone train (the backbone frozen; saved again as an adapter).

        Backbones may be registry names (cooper_rl.models), local dirs or hub ids; the classification head of
        a fresh RM is newly initialised. A trained RM keeps its saved max_length unless max_length is given;
        one saved with another template version is refused.
        """
        from transformers import AutoModelForSequenceClassification

        path = resolve_model(name_or_path)
        meta = {}
        meta_file = Path(path) / META_FILE
        if meta_file.is_file():
            meta = json.loads(meta_file.read_text())
            version = meta.get("template_version")
            if version != TEMPLATE_VERSION:
                raise ValueError(
                    f"{path}: reward model was trained with input template {version!r}, but this code uses "
                    f"{TEMPLATE_VERSION!r}; retrain it or use the cooper_rl version that made it"
                )
        adapter = (Path(path) / ADAPTER_CONFIG).is_file()  # a LoRA adapter + score head over meta's base model
        if adapter and not (meta.get("adapter") or {}).get("base"):
            raise ValueError(f"{path}: {ADAPTER_CONFIG} without the base model's name in {META_FILE} ('adapter.base')")
        own_tokenizer = (Path(path) / "tokenizer_config.json").is_file()  # an adapter may go without: its base's
        tokenizer = load_tokenizer(path if own_tokenizer or not adapter else meta["adapter"]["base"])
        tokenizer.padding_side = "right"
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # the "newly initialized weights" report: one line of ours below instead
        try:
            model, info = AutoModelForSequenceClassification.from_pretrained(
                resolve_model(meta["adapter"]["base"]) if adapter else path,
                num_labels=1,
                trust_remote_code=False,
                use_safetensors=True,
                dtype=torch.float32,
                output_loading_info=True,
            )
        finally:
            hf_logging.set_verbosity(verbosity)
        if adapter:
            model = _load_adapter(model, path, trainable=trainable_adapter)
            info = {"missing_keys": []}  # the adapter file holds the score head (PEFT's modules_to_save)
        if info.get("missing_keys"):
            print(
                f"[rm] {name_or_path}: new 1-logit classification head ({len(info['missing_keys'])} tensors, randomly "
                "initialised, as intended for a fresh RM: training sets them)",
                flush=True,
            )
        if tokenizer.pad_token is None:  # decoder backbones (GPT-2, Llama, SmolLM2) have none
            tokenizer.pad_token = tokenizer.eos_token
        if model.config.pad_token_id is None:
            model.config.pad_token_id = tokenizer.pad_token_id
        if max_length is None:
            max_length = meta.get("max_length")
        if max_length is None:
            positions = getattr(model.config, "max_position_embeddings", None) or DEFAULT_MAX_LENGTH
            max_length = min(DEFAULT_MAX_LENGTH, tokenizer.model_max_length, positions)
        device = default_device() if device == "auto" else device
        backbone = meta.get("backbone", name_or_path)
        rm = cls(model.to(device), tokenizer, int(max_length), backbone, meta)
        rm.new_parameters = list(info.get("missing_keys") or [])  # a fresh head: train-rm gives it its own lr
        return rm

    @property
    def is_adapter(self) -> bool:
        """True while the model is a PEFT model (a LoRA adapter over a frozen base, not merged)."""
        return hasattr(self.model, "peft_config")

    def add_adapter(self, rank: int, alpha: float | None = None, targets: str = "all-linear") -> None:
        """Freeze the backbone and wrap it in a PEFT LoRA adapter of ``rank`` on ``targets`` ('all-linear' or
        comma-separated module names); the score head trains whole (modules_to_save). Only on a fresh or merged RM."""
        from peft import LoraConfig, get_peft_model

        if self.is_adapter:
            raise ValueError("this RM already has an adapter")
        modules = targets if targets == "all-linear" else [t.strip() for t in targets.split(",") if t.strip()]
        config = LoraConfig(
            task_type="SEQ_CLS",
            r=rank,
            lora_alpha=alpha if alpha is not None else 2 * rank,
            lora_dropout=0.0,
            target_modules=modules,
            modules_to_save=["score"],
        )
        self.model = get_peft_model(self.model, config)
        self.meta["adapter"] = self.adapter_info()

    def adapter_info(self) -> dict | None:
        """{base, rank, alpha, targets, trainable_parameters} of the adapter, or None for a plain model."""
        if not self.is_adapter:
            return None
        c = self.model.peft_config["default"]
        targets = c.target_modules if isinstance(c.target_modules, str) else sorted(c.target_modules)
        trainable = sum(p.numel() for p in self.model.parameters() if p.requires_grad)
        return {"base": self.backbone, "rank": c.r, "alpha": c.lora_alpha, "targets": targets, "trainable": trainable}

    def save_pretrained(self, path: str | os.PathLike, metadata: dict | None = None) -> None:
        """Write safetensors weights, tokenizer and cooper_rm.json (template version, max_length, backbone,
        self.meta updated with `metadata`) to `path`, atomically: a temp dir next to it is renamed into place,
        and an existing dir is only removed after the new one is in place."""
        with atomic_dir(path) as tmp:
            self.save_into(tmp, metadata)

    def save_into(self, directory: str | os.PathLike, metadata: dict | None = None) -> None:
        """save_pretrained's files written into an existing directory, not atomically (for callers that add
        files of their own inside one io.atomic_dir)."""
        directory = Path(directory)
        self.meta.update(metadata or {})
        meta = {
            **self.meta,
            "template_version": TEMPLATE_VERSION,
            "max_length": self.max_length,
            "backbone": self.backbone,
        }
        meta.pop("logit_offset", None)
        if self.offset:
            meta["logit_offset"] = self.offset
        self.model.save_pretrained(directory)
        if not self.is_adapter:  # an adapter reads its base's tokenizer
            self.tokenizer.save_pretrained(directory)
        (directory / META_FILE).write_text(json.dumps(meta, indent=2, default=str))

    def encode(self, questions, references, completions) -> list[list[int]]:
        """encode_rm_inputs with this RM's tokenizer and max_length."""
        return encode_rm_inputs(self.tokenizer, questions, references, completions, self.max_length)

    def _padded(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """(input_ids, attention_mask) of token id lists, right-padded to the longest."""
        width = max(len(x) for x in ids)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids], device=self.device)
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids], device=self.device)
        return input_ids, mask

    def _forward(self, ids: list[list[int]]) -> torch.Tensor:
        """One logit per sequence of token id lists, forwarded in right-padded batches of similar length
        (length_batches)."""
        if not ids:
            return torch.zeros(0, device=self.device)
        parts = []
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            for batch in length_batches([len(x) for x in ids], self.batch_overhead):
                input_ids, mask = self._padded([ids[i] for i in batch])
                parts.append((batch, self.model(input_ids=input_ids, attention_mask=mask).logits.squeeze(-1).float()))
        return in_input_order(parts, self.device)

    def _forward_shared(self, prefixes: list[list[int]], suffixes: list[list[int]], owner: list[int]) -> torch.Tensor:
        """One logit per sequence prefixes[owner[i]] + suffixes[i] (decoders only): one forward of the distinct
        prefixes, whose keys/values each suffix then attends to, and forwards of the suffixes in batches of similar
        length (length_batches). Positions continue after each prefix and padded prefix positions are masked, so the
        logits are those of the whole sequences."""
        from transformers import DynamicCache

        p_ids, p_mask = self._padded(prefixes)
        p_lengths = p_mask.sum(1)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            prefix = self.model(input_ids=p_ids, attention_mask=p_mask, use_cache=True)
            kv = [(k, v) for k, v, *_ in prefix.cache]
            logits = []
            for batch in length_batches([len(x) for x in suffixes], self.batch_overhead):
                rows = torch.tensor([owner[i] for i in batch], device=self.device)
                s_ids, s_mask = self._padded([suffixes[i] for i in batch])
                lengths = p_lengths[rows]
                positions = lengths[:, None] + torch.arange(s_ids.shape[1], device=self.device)[None, :]
                positions = torch.where(s_mask.bool(), positions, lengths[:, None])  # pads: a position the model has
                cache = DynamicCache(ddp_cache_data=[(k[rows], v[rows]) for k, v in kv])  # each suffix's prefix
                res = self.model(
                    input_ids=s_ids,
                    attention_mask=torch.cat([p_mask[rows], s_mask], dim=1),
                    position_ids=positions,
                    cache=cache,
                    use_cache=False,
                )  # the score is read at the last non-pad suffix token, as in one forward of the whole sequence
                logits.append((batch, res.logits.squeeze(-1).float()))
        return in_input_order(logits, self.device)

    def _forward_grouped(self, ids: list[list[int]], keys: list) -> torch.Tensor:
        """_forward, where sequences with equal key (e.g. one prompt's rollouts, which share the question and
        reference) have their common prefix computed once. Only on decoder backbones (share_prefix); sequences
        alone or with a short common prefix take the plain path."""
        if not ids or not self.share_prefix or len(set(keys)) == len(keys):
            return self._forward(ids)
        groups: dict = {}
        for i, k in enumerate(keys):
            groups.setdefault(k, []).append(i)
        prefixes, suffixes, owner, shared, alone = [], [], [], [], []
        for idx in groups.values():
            n = common_prefix_length([ids[i] for i in idx]) if len(idx) > 1 else 0
            if n < MIN_SHARED_PREFIX:
                alone.extend(idx)
                continue
            prefixes.append(ids[idx[0]][:n])
            for i in idx:
                suffixes.append(ids[i][n:])
                owner.append(len(prefixes) - 1)
                shared.append(i)
        out: list = [None] * len(ids)
        if shared:
            for i, v in zip(shared, self._forward_shared(prefixes, suffixes, owner)):
                out[i] = v
        if alone:
            for i, v in zip(alone, self._forward([ids[i] for i in alone])):
                out[i] = v
        return torch.stack(out)

    def logits(self, questions, references, completions) -> torch.Tensor:
        """Logits (one per triple, minus the RM's offset; with grad, in the model's current train/eval mode)."""
        ids = self.encode(questions, references, completions)
        return self._forward_grouped(ids, list(zip(questions, references))) - self.offset

    @torch.no_grad()
    def eval_logits(
        self, questions, references, completions, batch_size: int = 64, sort_by_length: bool = True
    ) -> torch.Tensor:
        """Logits minus the offset (float32, in the original order), computed in eval mode without grad.

        With sort_by_length, sequences are batched by encoded length (less padding); otherwise in input order.
        On a decoder backbone (share_prefix) the sequences of one (question, reference) are batched together and
        their common prefix is computed once.
        """
        ids = self.encode(questions, references, completions)
        keys = list(zip(questions, references))
        order = sorted(range(len(ids)), key=lambda i: len(ids[i])) if sort_by_length else list(range(len(ids)))
        if self.share_prefix:  # one prompt's rollouts next to each other (stable: by length within a prompt)
            first = {}
            for i in order:
                first.setdefault(keys[i], len(first))
            order = sorted(order, key=lambda i: first[keys[i]])
        out = torch.empty(len(ids), dtype=torch.float32)
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                s = self._forward_grouped([ids[i] for i in chunk], [keys[i] for i in chunk]) - self.offset
                out[torch.tensor(chunk)] = s.float().cpu()
        finally:
            self.model.train(was_training)
        return out

    def score(
        self, questions, references, completions, batch_size: int = 64, sort_by_length: bool = True
    ) -> list[float]:
        """Rewards sigmoid(logit - offset) in the original order, computed in eval mode without grad (eval_logits)."""
        return torch.sigmoid(self.eval_logits(questions, references, completions, batch_size, sort_by_length)).tolist()

    def configure_optimizer(
        self, lr: float = 1e-5, weight_decay: float = 0.0, warmup_steps: int = 0, max_grad_norm: float = 1.0
    ) -> None:
        """Create the AdamW optimizer and linear-warmup scheduler used by pairwise_update.

        Under torch.distributed the RM weights are first broadcast from rank 0, so all copies start equal.
        """
        if _distributed():
            for t in list(self.model.parameters()) + list(self.model.buffers()):
                torch.distributed.broadcast(t.data, src=0)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min(1.0, (step + 1) / warmup_steps) if warmup_steps > 0 else 1.0
        )
        self.max_grad_norm = max_grad_norm

    def pairwise_update(
        self, questions, references, pos_completions, neg_completions, valid=None, rehearsal=None, rehearsal_weight=1.0
    ) -> dict:
        """One optimizer step on mean over valid pairs of -logsigmoid(s_pos - s_neg) (Cooper's online RM update).

        `rehearsal` (optional {questions, references, completions, labels}, cooper/rehearsal.py): labelled rows whose
        mean BCE, times `rehearsal_weight`, joins the loss of a step that has valid pairs (their logits are forwarded
        with the pairs'); its metrics come back as rehearsal_loss and rehearsal_accuracy (before the step).

        `valid` (bools, default all True) masks pairs that have no real positive/negative. With no valid pair
        a zero loss is still backpropagated but no step is taken. Under torch.distributed the gradients are
        all-reduced every call (also on ranks with no valid pair), so every rank takes the same step on the
        mean over all ranks' valid pairs and the RM copies stay identical; the step is skipped only if no rank
        has a valid pair. A step with a non-finite gradient norm is skipped too.
        Returns {"rm_loss": float or None, "n_valid": int, "grad_norm": float, "stepped": whether the weights moved
        (on every rank alike), "pair_logits": per pair [s_pos, s_neg] before the step, "pair_losses": per pair
        -logsigmoid(s_pos - s_neg) before the step; None for a masked pair}.
        """
        n = len(questions)
        if not n == len(references) == len(pos_completions) == len(neg_completions):
            raise ValueError("questions, references, pos_completions and neg_completions must have equal lengths")
        valid = [True] * n if valid is None else [bool(v) for v in valid]
        if len(valid) != n:
            raise ValueError(f"valid has {len(valid)} entries for {n} pairs")
        if self.optimizer is None:
            self.configure_optimizer()
        self.model.train()
        keep = [i for i in range(n) if valid[i]]
        n_total = (
            _all_reduce_sum(torch.tensor([float(len(keep))], device=self.device)).item()
            if _distributed()
            else len(keep)
        )
        replay = {}
        if keep:
            qs, rs = [questions[i] for i in keep], [references[i] for i in keep]
            cs = [pos_completions[i] for i in keep] + [neg_completions[i] for i in keep]
            rq, rr, rc = (
                (rehearsal["questions"], rehearsal["references"], rehearsal["completions"])
                if rehearsal
                else ([], [], [])
            )
            s = self.logits(qs + qs + rq, rs + rs + rr, cs + rc)  # pairs and rehearsed rows in one forward
            s, s_rehearsed = s[: 2 * len(keep)], s[2 * len(keep) :]
            pair_losses = -F.logsigmoid(s[: len(keep)] - s[len(keep) :])
            local_mean = pair_losses.mean().item()
            scored = dict(zip(keep, s.detach().float().view(2, -1).T.tolist()))
            losses = dict(zip(keep, pair_losses.detach().float().tolist()))
            # sum / (valid pairs on all ranks): after the gradient all-reduce (SUM) every rank holds the
            # gradient of the mean over all valid pairs in the world
            loss = pair_losses.sum() / max(n_total, 1.0)
            if rehearsal:  # each rank its own rows: their mean over ranks after the all-reduce
                y = torch.tensor(rehearsal["labels"], device=self.device)
                bce = F.binary_cross_entropy_with_logits(s_rehearsed.float(), y)
                world = torch.distributed.get_world_size() if _distributed() else 1
                loss = loss + rehearsal_weight * bce / world
                right = ((s_rehearsed.detach() >= 0).float() == y).float().mean().item()
                replay = {"rehearsal_loss": bce.item(), "rehearsal_accuracy": right}
        else:  # zero loss through the graph: every parameter gets a (zero) gradient
            scored, losses = {}, {}
            q, r, c = (questions[0], references[0], pos_completions[0]) if n else ("", "", "")
            loss = self.logits([q], [r], [c]).sum() * 0.0
        loss.backward()
        if _distributed():  # identical gradients on every rank, even one without a valid pair
            for p in self.model.parameters():
                if p.requires_grad:
                    if p.grad is None:
                        p.grad = torch.zeros_like(p)
                    _all_reduce_sum(p.grad)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        stepped = bool(n_total > 0 and torch.isfinite(grad_norm))
        if stepped:  # a non-finite gradient would corrupt the weights: skip
            self.optimizer.step()
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return {
            "rm_loss": local_mean if keep else None,
            "n_valid": len(keep),
            "grad_norm": float(grad_norm),
            "stepped": stepped,
            "pair_logits": [scored.get(i) for i in range(n)],  # the logged pairs (cooper_step): which ones moved it
            "pair_losses": [losses.get(i) for i in range(n)],
            **replay,
        }
