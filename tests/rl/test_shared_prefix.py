"""Shared-prefix GRPO (rl/shared_prefix.py) is exact: per-token log-probs, entropies and every parameter's gradient
equal TRL's whole-row forward in fp32, and a seeded `cooper rl` run trains the same with it as without.

Tolerance: fp32 rounding. The shared path computes the same positions with other matmul shapes (a prefix forward of
the distinct prompts, then the suffixes on a cache), so results differ in the last bits only. The bound used is the
spread TRL's own path shows when the same rows are forwarded in another batch composition, times 10 (measured in
``test_log_probs_and_gradients_equal_trls_whole_row_forward``: both are ~1e-7 on log-probs of magnitude ~10)."""

import random
from types import SimpleNamespace as NS

import pytest
import torch

from cooper_rl.rl.shared_prefix import can_share, packed_prefix_logps, prompt_groups, shared_prefix_logps
from tiny import QUESTIONS, tiny_llama


def _trl_logps(model, ids, mask, keep, batch_size=None, compute_entropy=True):
    """TRL's own log-prob method (GRPOTrainer's, unwrapped) on a bare model."""
    from accelerate import Accelerator
    from trl import GRPOTrainer

    me = NS(accelerator=Accelerator(cpu=True))
    return GRPOTrainer._get_per_token_logps_and_entropies(
        me, model, ids, mask, keep, batch_size=batch_size, compute_entropy=compute_entropy
    )


def _batch(tok, group_size, n_prompts=3, seed=0, shuffle=True):
    """Rows of n_prompts prompts of unequal length (left-padded) x group_size completions of 1 to 9 tokens (right-
    padded; the longest ones fill the width: truncated), in shuffled order; (ids, mask, completion width)."""
    rng = random.Random(seed)
    prompts = [tok(q + " Think step by step." * i, add_special_tokens=False)["input_ids"] for i, q in
               enumerate(QUESTIONS[:n_prompts])]  # fmt: skip
    rows = [
        (p, [rng.randrange(100, 5000) for _ in range(rng.randint(1, 9))]) for p in prompts for _ in range(group_size)
    ]
    if shuffle:
        rng.shuffle(rows)
    pw, cw = max(len(p) for p, _ in rows), max(len(c) for _, c in rows)
    pad = tok.pad_token_id
    ids = torch.tensor([[pad] * (pw - len(p)) + p + c + [pad] * (cw - len(c)) for p, c in rows])
    mask = torch.tensor([[0] * (pw - len(p)) + [1] * (len(p) + len(c)) + [0] * (cw - len(c)) for p, c in rows])
    return ids, mask, cw


@pytest.fixture(scope="module")
def fused():
    from trl.trainer.utils import add_fused_lm_head

    model, tok = tiny_llama(hidden_size=64, num_hidden_layers=2, seed=3)
    add_fused_lm_head(model, temperature=0.7, outputs=("log_probs", "entropy"))
    return model, tok


def test_prompt_groups_are_rows_with_equal_prompt_columns():
    ids = torch.tensor([[0, 5, 6, 1], [4, 5, 6, 2], [0, 5, 6, 3], [4, 5, 6, 1]])
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1]])
    firsts, inverse = prompt_groups(ids, mask, 3)
    assert firsts.tolist() == [0, 1] and inverse.tolist() == [0, 1, 0, 1]
    mask[2, 0] = 1  # same ids, another mask: another prompt
    assert prompt_groups(ids, mask, 3)[1].tolist() == [0, 1, 2, 1]


MECHANISMS = {
    "cache": lambda model, ids, mask, keep: shared_prefix_logps(model, ids, mask, keep, True, lead_ok=True)[:2],
    "packed": lambda model, ids, mask, keep: packed_prefix_logps(model, ids, mask, keep, True, lead_ok=True)[:2],
}


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
@pytest.mark.parametrize("group_size,trailing", [(2, 0), (8, 0), (8, 3)])
def test_log_probs_and_gradients_equal_trls_whole_row_forward(fused, group_size, trailing, mechanism):
    """``trailing``: padding columns every row has after its completion (TRL pads a micro-batch to the generation
    batch's longest completion): they are trimmed, and the values stay in their columns."""
    model, tok = fused
    ids, mask, keep = _batch(tok, group_size)
    ids = torch.cat([ids, torch.full((ids.size(0), trailing), tok.pad_token_id)], dim=1)
    mask, keep = torch.cat([mask, torch.zeros(mask.size(0), trailing, dtype=mask.dtype)], dim=1), keep + trailing
    m = mask[:, -keep:].bool()
    weights = torch.randn(ids.shape[0], keep, generator=torch.Generator().manual_seed(1))

    def grads(fn):
        model.zero_grad()
        logps, entropy = fn()[:2]
        (logps * weights).sum().backward()
        return logps.detach(), entropy.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    want_lp, want_ent, want_g = grads(lambda: _trl_logps(model, ids, mask, keep))
    got_lp, got_ent, got_g = grads(lambda: MECHANISMS[mechanism](model, ids, mask, keep))
    # TRL's own spread: the same rows forwarded two at a time instead of all together
    with torch.no_grad():
        alone = _trl_logps(model, ids, mask, keep, batch_size=2)[0]
    noise = (alone - want_lp)[m].abs().max().item()
    tol = max(10 * noise, 1e-6)
    assert got_lp.shape == want_lp.shape and torch.equal(got_lp[~m], torch.zeros_like(got_lp[~m]))
    assert (got_lp - want_lp)[m].abs().max().item() <= tol
    assert (got_ent - want_ent)[m].abs().max().item() <= tol
    for name, g in want_g.items():  # every parameter, relative to its gradient's scale
        assert (got_g[name] - g).abs().max().item() <= 1e-4 * g.abs().max().item() + 1e-7, name


def test_chunked_no_grad_calls_and_fallbacks(fused):
    from cooper_rl.rl.shared_prefix import SharedPrefix

    model, tok = fused
    ids, mask, keep = _batch(tok, 4)
    calls = []
    trainer = NS(model=model, accelerator=NS(autocast=lambda: torch.autocast("cpu", enabled=False)))
    shared = SharedPrefix(trainer)
    wrapped = shared.wrap_logps(lambda *a, **k: calls.append(1) or "trl")
    with torch.no_grad():
        got = wrapped(model, ids, mask, keep, batch_size=5, compute_entropy=False)[0]  # suffixes: <= 5 rows a batch
        want = _trl_logps(model, ids, mask, keep, compute_entropy=False)[0]
    m = mask[:, -keep:].bool()
    assert torch.allclose(got[m], want[m], atol=1e-5) and not calls  # never TRL's path
    assert shared.calls == 1  # one prefix forward for the call
    assert shared.tokens[0] < shared.tokens[1]
    assert wrapped(model, ids, mask, keep, pixel_values=torch.zeros(1)) == "trl"  # multimodal: TRL's path
    assert calls == [1] and shared.fallbacks == 1


def test_can_share_only_where_a_cache_gives_the_whole_row_values(fused):
    model, _ = fused
    assert can_share(model)
    assert not can_share(NS(config=NS(model_type="gpt2")))  # learned absolute positions: fine, but not a listed family
    assert not can_share(NS(config=NS(model_type="mistral", sliding_window=16)))
    assert can_share(NS(config=NS(model_type="qwen2", sliding_window=4096, use_sliding_window=False)))  # unused window
    assert not can_share(NS(config=NS(model_type="qwen2", layer_types=["full_attention", "sliding_attention"])))


@pytest.mark.parametrize(
    "kw",
    [
        dict(loss_type="grpo", beta=0.04, num_generations=4, gradient_accumulation_steps=2, steps_per_generation=2),
        dict(loss_type="dr_grpo", beta=0.0, num_generations=2, prompts_per_step=4),
        dict(reward="cooper", beta=0.04, num_generations=4, max_completion_length=6),  # truncated completions
        dict(
            shared_prefix_mechanism="packed",
            loss_type="grpo",
            beta=0.04,
            num_generations=4,
            gradient_accumulation_steps=2,
            steps_per_generation=2,
        ),  # fmt: skip
    ],
    ids=["grpo-beta-accum", "dr_grpo-beta0-G2", "cooper-truncated", "packed-grpo-beta-accum"],
)
def test_a_seeded_run_trains_the_same_with_and_without_shared_prefixes(assets, tmp_path, one_thread, kw):
    """Per-step losses, rewards and the final weights of `cooper rl` agree with the unshared path within float noise
    (the trimmed-padding test's bounds), for the loss types, beta = 0 and > 0, gradient accumulation, G = 2 and 4,
    truncated completions, and the Cooper reward (its RM pairs and updates untouched)."""
    import json

    from tests.rl.test_train import config, weights_of

    from cooper_rl.rl.train import build_trainer

    data = tmp_path / "mixed.jsonl"  # prompts of unequal length: micro-batches pad prompts on the left
    long = "Tom has 3 red apples in his bag and his friend at school gives him 4 more. How many apples now?"
    data.write_text("".join(json.dumps({"question": q, "answer": "7"}) + "\n" for q in [*QUESTIONS, long] * 2))
    reward = kw.pop("reward", "rule")

    def run(shared, out):
        cfg = config(assets, out, reward, max_steps=3, seed=5, shared_prefix=shared, sampler_logprobs=False, **kw)
        cfg.datasets = [str(data)]
        trainer, _, _ = build_trainer(cfg)
        trainer.train()
        logs = [h for h in trainer.state.log_history if "loss" in h]
        return trainer, logs

    shared, logs_s = run(True, tmp_path / "shared")
    plain, logs_p = run(False, tmp_path / "plain")
    counts = shared._cooper_shared_prefix
    assert shared._cooper_shared_prefill[0] > 0  # the rollouts' prefill was shared too, and sampled the same
    assert counts.calls > 0 and counts.fallbacks == 0 and counts.tokens[0] < counts.tokens[1]
    assert not hasattr(plain, "_cooper_shared_prefix")
    assert [h["loss"] for h in logs_s] == pytest.approx([h["loss"] for h in logs_p], abs=1e-5)
    # the same rollouts, the same rewards (logged at the steps that generate)
    assert [h.get("reward") for h in logs_s] == [h.get("reward") for h in logs_p]
    assert [h["entropy"] for h in logs_s] == pytest.approx([h["entropy"] for h in logs_p], abs=1e-5)
    if kw.get("beta"):
        assert [h["kl"] for h in logs_s] == pytest.approx([h["kl"] for h in logs_p], abs=1e-6)
    a, b = shared.model.state_dict(), plain.model.state_dict()
    start = weights_of(assets, shared.model.device)
    moved = sum((a[k] - start[k]).square().sum() for k in start).sqrt()
    apart = sum((a[k] - b[k]).square().sum() for k in start).sqrt()
    assert apart < 0.01 * moved


@pytest.mark.parametrize("sample", [False, True])
def test_shared_prefill_generates_the_same_tokens(fused, sample):
    """HF generate from a cache of each distinct prompt (computed once) samples the same tokens as its own prefill of
    every row: greedy and sampled at T = 0.7 from one seed, left-padded prompts of unequal length, G = 4."""
    from cooper_rl.rl.shared_prefix import shared_prefill

    model, tok = fused
    ids, mask, keep = _batch(tok, 4)
    ids, mask = ids[:, :-keep], mask[:, :-keep]  # the prompts only
    kw = dict(input_ids=ids, attention_mask=mask, max_new_tokens=8, do_sample=sample, temperature=0.7, top_k=0)
    kw.update(pad_token_id=tok.pad_token_id, output_scores=True, return_dict_in_generate=True)
    torch.manual_seed(0)
    plain = model.generate(**kw)
    shared = shared_prefill(model, model.generate)
    torch.manual_seed(0)
    got = shared(**kw)
    assert shared.counts == [1, 12, 3]  # one prefill of 3 prompts for 12 rows
    assert torch.equal(got.sequences, plain.sequences)
    for a, b in zip(got.scores, plain.scores):
        assert torch.allclose(a, b, atol=1e-4)


def test_gradient_checkpointing_sends_the_cache_mechanisms_loss_forward_to_trls_path(fused):
    from cooper_rl.rl.shared_prefix import SharedPrefix, checkpointed

    model, tok = fused
    ids, mask, keep = _batch(tok, 2)
    shared = SharedPrefix(
        NS(model=model, accelerator=NS(autocast=lambda: torch.autocast("cpu", enabled=False))), mechanism="cache"
    )
    wrapped = shared.wrap_logps(lambda *a, **k: _trl_logps(*a, **k))
    model.activation_checkpointing_enable()
    model.train()
    try:
        assert checkpointed(model)
        logps = wrapped(model, ids, mask, keep, compute_entropy=False)[0]
        assert shared.fallbacks == 1 and shared.calls == 0 and logps.requires_grad
        with torch.no_grad():  # no backward to replay: the cache is kept, the reference pass shares
            assert not checkpointed(model)
            wrapped(model, ids, mask, keep, compute_entropy=False)
        assert shared.calls == 1
    finally:
        model.activation_checkpointing_disable()
        model.eval()


def test_the_packed_mechanism_shares_under_gradient_checkpointing(fused):
    from cooper_rl.rl.shared_prefix import SharedPrefix

    model, tok = fused
    ids, mask, keep = _batch(tok, 4)
    shared = SharedPrefix(
        NS(model=model, accelerator=NS(autocast=lambda: torch.autocast("cpu", enabled=False))), mechanism="packed"
    )
    wrapped = shared.wrap_logps(lambda *a, **k: _trl_logps(*a, **k))
    model.train()
    want = _trl_logps(model, ids, mask, keep, compute_entropy=False)[0]
    model.activation_checkpointing_enable()
    try:
        got = wrapped(model, ids, mask, keep, compute_entropy=False)[0]  # no cache to drop: it shares
        assert shared.calls == 1 and shared.fallbacks == 0 and got.requires_grad
        got.sum().backward()  # the checkpointed layers replay the packed forward
        m = mask[:, -keep:].bool()
        assert (got - want)[m].abs().max().item() < 1e-5
    finally:
        model.activation_checkpointing_disable()
        model.eval()
        model.zero_grad()
    with pytest.raises(ValueError, match="shared_prefix_mechanism"):
        SharedPrefix(NS(model=model), mechanism="tiles")


def test_the_auto_mechanism_packs_only_the_loss_forward_under_gradient_checkpointing(fused, monkeypatch):
    """auto (the default): the cache mechanism, and the packed one where the loss forward runs under gradient
    checkpointing, so that forward shares too (the cache mechanism would fall back to TRL's path there)."""
    from cooper_rl.rl import shared_prefix as sp

    model, tok = fused
    ids, mask, keep = _batch(tok, 4)
    used = []
    for name in ("shared_prefix_logps", "packed_prefix_logps"):
        real = getattr(sp, name)
        monkeypatch.setattr(sp, name, lambda *a, _real=real, _name=name: used.append(_name) or _real(*a))
    shared = sp.SharedPrefix(NS(model=model, accelerator=NS(autocast=lambda: torch.autocast("cpu", enabled=False))))
    assert shared.mechanism == "auto"
    wrapped = shared.wrap_logps(lambda *a, **k: _trl_logps(*a, **k))
    m = mask[:, -keep:].bool()
    try:
        model.train()
        want = _trl_logps(model, ids, mask, keep, compute_entropy=False)[0]
        assert (wrapped(model, ids, mask, keep, compute_entropy=False)[0] - want)[m].abs().max().item() < 1e-5
        model.activation_checkpointing_enable()
        got = wrapped(model, ids, mask, keep, compute_entropy=False)[0]
        assert got.requires_grad and (got - want)[m].abs().max().item() < 1e-5
        with torch.no_grad():  # the reference pass under checkpointing: nothing replayed, the cache mechanism
            wrapped(model, ids, mask, keep, compute_entropy=False)
    finally:
        model.activation_checkpointing_disable()
        model.eval()
    assert used == ["shared_prefix_logps", "packed_prefix_logps", "shared_prefix_logps"]
    assert shared.calls == 3 and shared.fallbacks == 0


@pytest.mark.parametrize("group_size", [4, 8])
def test_the_packed_mechanism_in_chunks_of_whole_groups_gives_the_same_values(fused, group_size):
    model, tok = fused
    ids, mask, keep = _batch(tok, group_size)  # 3 groups; at most 5 rows per chunk: one group each (8: alone)
    with torch.no_grad():
        whole = packed_prefix_logps(model, ids, mask, keep, True, lead_ok=True)
        chunked = packed_prefix_logps(model, ids, mask, keep, True, lead_ok=True, max_rows=5)
    m = mask[:, -keep:].bool()
    assert (whole[0] - chunked[0])[m].abs().max().item() < 1e-5
    assert (whole[1] - chunked[1])[m].abs().max().item() < 1e-5
    assert torch.equal(chunked[0][~m], torch.zeros_like(chunked[0][~m]))


def test_group_permutation_moves_whole_groups_in_the_draws_order():
    from cooper_rl.rl.shared_prefix import group_permutation

    perm = torch.tensor([5, 0, 3, 1, 4, 2])  # rows of groups (0,1), (2,3), (4,5): group 2 first, then 0, then 1
    assert group_permutation(perm, 2).tolist() == [4, 5, 0, 1, 2, 3]
    for seed in range(5):
        p = group_permutation(torch.randperm(24, generator=torch.Generator().manual_seed(seed)), 8)
        assert sorted(p.tolist()) == list(range(24)) and all(
            p[i : i + 8].tolist() == list(range(p[i], p[i] + 8)) for i in (0, 8, 16)
        )


def test_micro_batches_hold_whole_groups_and_train_the_same(assets, tmp_path, one_thread):
    """One optimizer step per generation batch in 2 micro-batches (G = 4, 4 prompts): with shared prefixes each
    micro-batch holds 2 whole groups (2 prompt forwards), and the run's losses and weights are the unshared run's.
    TRL's entropy and KL metrics are means of per-micro-batch means, so they depend on which rows share a
    micro-batch: the unshared path given the same whole-group micro-batches logs the shared run's values."""
    import json

    from tests.rl.test_train import config, weights_of

    from cooper_rl.rl.shared_prefix import install_group_microbatches
    from cooper_rl.rl.train import build_trainer
    from cooper_rl.rl.trl_internals import wrap_trainer_method

    data = tmp_path / "mixed.jsonl"
    long = "Tom has 3 red apples in his bag and his friend at school gives him 4 more. How many apples now?"
    data.write_text("".join(json.dumps({"question": q, "answer": "7"}) + "\n" for q in [*QUESTIONS, long] * 2))

    def run(shared, out, grouped=False):
        cfg = config(assets, out, "rule", max_steps=2, seed=5, shared_prefix=shared, sampler_logprobs=False, beta=0.04,
                     num_generations=4, prompts_per_step=4, gradient_accumulation_steps=2)  # fmt: skip
        cfg.datasets = [str(data)]
        trainer, _, _ = build_trainer(cfg)
        if grouped:  # whole-group micro-batches without sharing
            install_group_microbatches(trainer, 4)
        groups = []

        def spy(logps):
            def spied(*args, **kwargs):
                if torch.is_grad_enabled():  # the loss's micro-batch: how many prompts in its rows
                    ids, keep = args[1], args[3]
                    groups.append((ids.size(0), len(torch.unique(ids[:, :-keep], dim=0))))
                return logps(*args, **kwargs)

            return spied

        wrap_trainer_method(trainer, "logps", spy)
        trainer.train()
        return trainer, [h for h in trainer.state.log_history if "loss" in h], groups

    shared, logs_s, groups_s = run(True, tmp_path / "shared")
    plain, logs_p, groups_p = run(False, tmp_path / "plain")
    _, logs_g, groups_g = run(False, tmp_path / "grouped", grouped=True)
    assert groups_g == groups_s  # the same micro-batches, each prompt forwarded once per row
    for key, tol in (("entropy", 1e-6), ("kl", 1e-7), ("loss", 1e-6)):
        assert [h[key] for h in logs_g] == pytest.approx([h[key] for h in logs_s], abs=tol), key
    # TRL's random micro-batches: the same gradient (below) but other per-micro-batch means
    assert [h["entropy"] for h in logs_p] != pytest.approx([h["entropy"] for h in logs_s], abs=1e-6)
    assert shared._cooper_group_microbatches == 4 and not hasattr(plain, "_cooper_group_microbatches")
    assert groups_s and all(n == 8 and g <= 2 for n, g in groups_s)  # whole groups (a question may repeat)
    assert any(g > 2 for _, g in groups_p)  # TRL's row shuffle mixes them
    assert [h["loss"] for h in logs_s] == pytest.approx([h["loss"] for h in logs_p], abs=1e-5)
    assert [h.get("reward") for h in logs_s] == [h.get("reward") for h in logs_p]
    a, b = shared.model.state_dict(), plain.model.state_dict()
    start = weights_of(assets, shared.model.device)
    moved = sum((a[k] - start[k]).square().sum() for k in start).sqrt()
    apart = sum((a[k] - b[k]).square().sum() for k in start).sqrt()
    assert apart < 0.01 * moved


def test_the_benchmarks_cost_model_counts_positions_per_stage_and_the_readme_shows_the_committed_one():
    """benchmarks/shared_prefix.py's cost model on a hand-made result (G from the shared prefill, a log-prob pass =
    the run's positions over its steps, warm-up included, and its 2 passes), and its table in benchmarks/README.md is
    the committed first benchmark's, as the script prints it now."""
    import json
    from pathlib import Path

    from tests.experiments import load_script

    root = Path(__file__).resolve().parents[2]
    bench = load_script("shared_prefix", root / "benchmarks")
    stage = {"generation": 10.0, "ref_logprobs": 4.0, "old_logprobs": 0.0, "policy_update": 8.0}
    run = {"prompt_tokens_per_step": 800, "completion_tokens_per_step": 300, "per_stage_seconds": stage}
    result = {
        "steps": 3,  # + 1 warm-up step = 4 steps of 2 passes each
        "settings": {
            "x": {
                "runs": {
                    "unshared": [run | {"positions": [8000, 9600]}],
                    "shared": [run | {"positions": [3200, 9600], "shared_prefill": {"rows": 64, "prompts": 16}}],
                },
                "speedup": {"generation": 1.25, "ref_logprobs": 2.0, "policy_update": 2.5},
            }
        },
    }
    c = bench.cost_model(result)["x"]
    assert c["G"] == 4 and c["prefill"] == [800, 200] and c["decode"] == [300, 300]
    assert c["logprob_pass"] == [1000, 400] and c["trl_padded_pass"] == 1200
    assert "| x | 4 | 800 → 200 (4.0x) | 300 (same) | 1.25x | 1,000 → 400 (2.50x) | 2.00x | 2.50x |" in bench.cost_table(result)  # fmt: skip
    committed = json.loads((root / "benchmarks/results/shared_prefix.json").read_text())
    readme = (root / "benchmarks/README.md").read_text()
    for line in bench.cost_table(committed).splitlines():
        assert line in readme, f"benchmarks/README.md lacks the cost model's row: {line}"
