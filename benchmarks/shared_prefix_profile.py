"""Where shared-prefix GRPO's policy update spends its time (issue 105): the loss forwards + backward of one
optimizer step of real `configs/rl_cpu.yaml` rollouts (64 rows, 8 groups), TRL's whole-row forward (padding trimmed,
the `--shared_prefix false` path) against the shared path, by micro-batch size (whole groups per micro-batch) and by
how its suffixes are batched (length_batches' per-forward overhead: the default, or one padded batch), the other
mechanism (`packed`: one sequence per group with a prefix/suffix mask, Prefix Grouper's form), and the shared path's
top operators (torch.profiler).

  python benchmarks/shared_prefix_profile.py [--rollouts RUN/rollouts.jsonl] [--reps 2]
  python benchmarks/shared_prefix_profile.py --in_run     # the same inside `cooper rl`, by allocator setting

The rollouts are a benchmark run's (benchmarks/shared_prefix.py; step 2, its 64 rows as TRL generated them); the
model is the regime's warm-up policy (runs/sft-builtin100/policy) with TRL's fused LM head, fp32, as `cooper rl` runs
it. Each variant: seconds for the whole step's forwards + backwards (micro-batches of whole groups, loss = the
log-probs times fixed random weights), median over reps, variants interleaved per rep. Positions computed beside.
Writes benchmarks/results/shared_prefix_profile.json.

``--in_run``: the loss micro-batches of step 2 of a 2-step `cooper rl --config configs/rl_cpu.yaml` run (the last
three: the first one also generates), their wall seconds, user and system CPU seconds and minor page faults, with
glibc's allocator defaults and with `--keep_freed_memory` (freed memory reused), each variant a fresh process, the
order alternating per rep. Writes benchmarks/results/shared_prefix_in_run.json.
"""

from __future__ import annotations

import argparse
import functools
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace as NS

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402

ROOT = Path(__file__).parent.parent
ROLLOUTS = "runs/bench_shared_prefix/rl_cpu-r0-shared/rollouts.jsonl"
POLICY = "runs/sft-builtin100/policy"


def step_batch(tok, rollouts: Path, step: int):
    """(input ids, mask, completion width, group size) of one step's rollouts, laid out as TRL lays out a generation
    batch: prompts (chat template) left-padded to the longest, completions (+ EOS) right-padded to the longest."""
    from cooper_rl.generation import chat_messages, render_messages

    rows = [r for r in map(json.loads, rollouts.open()) if r["step"] == step]
    prompts = [
        tok(render_messages(tok, chat_messages(r["question"])), add_special_tokens=False)["input_ids"] for r in rows
    ]
    completions = [tok(r["completion"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for r in rows]
    pw, cw, pad = max(map(len, prompts)), max(map(len, completions)), tok.pad_token_id
    ids = [[pad] * (pw - len(p)) + p + c + [pad] * (cw - len(c)) for p, c in zip(prompts, completions)]
    mask = [[0] * (pw - len(p)) + [1] * (len(p) + len(c)) + [0] * (cw - len(c)) for p, c in zip(prompts, completions)]
    groups = sum(1 for i in range(len(rows)) if i == 0 or rows[i]["question"] != rows[i - 1]["question"])
    return torch.tensor(ids), torch.tensor(mask), cw, len(rows) // groups


def variants():
    """name -> f(model, ids, mask, keep) -> (log-probs, positions computed)."""
    from accelerate import Accelerator
    from trl import GRPOTrainer

    from cooper_rl.cooper import batching
    from cooper_rl.rl import shared_prefix
    from cooper_rl.rl.rollout_speed import trimmed_span

    me = NS(accelerator=Accelerator(cpu=True))  # all TRL's method reads of its trainer (its autocast context)

    def trl(model, ids, mask, keep):
        lead, end, new_keep = trimmed_span(ids, mask, keep, True)
        out = GRPOTrainer._get_per_token_logps_and_entropies(
            me, model, ids[:, lead:end], mask[:, lead:end], new_keep, compute_entropy=True
        )
        return torch.nn.functional.pad(out[0], (0, keep - new_keep)), ids.size(0) * (end - lead)

    def shared(overhead):
        def f(model, ids, mask, keep):
            original = shared_prefix.length_batches
            shared_prefix.length_batches = functools.partial(batching.length_batches, overhead=overhead)
            try:
                logp, _, positions = shared_prefix.shared_prefix_logps(model, ids, mask, keep, True, lead_ok=True)
            finally:
                shared_prefix.length_batches = original
            return logp, positions

        return f

    def packed(model, ids, mask, keep):
        logp, _, positions = shared_prefix.packed_prefix_logps(model, ids, mask, keep, True, lead_ok=True)
        return logp, positions

    return {
        "trl": trl,
        "shared": shared(batching.BATCH_OVERHEAD),
        "shared_one_batch": shared(10**9),
        "packed": packed,
    }


def one_step(fn, model, ids, mask, keep, micro: int, weights):
    """Seconds and positions of the step's loss forwards + backwards in micro-batches of ``micro`` rows."""
    model.zero_grad(set_to_none=True)
    positions, start = 0, time.perf_counter()
    for i in range(0, ids.size(0), micro):
        logp, n = fn(model, ids[i : i + micro], mask[i : i + micro], keep)
        (logp * weights[i : i + micro]).sum().backward()
        positions += n
    return time.perf_counter() - start, positions


PROBE_MICRO = (6, 8)  # training_step calls measured (step 2's micro-batches 2-4 at 4 per step)


def probe_run(keep: str, out: str, policy: str) -> None:
    """(a child process) one 2-step `cooper rl` run; prints one JSON line: the measured micro-batches' wall seconds,
    CPU seconds (user, system) and minor page faults."""
    from trl import GRPOTrainer

    from cooper_rl.cli import main as cli

    original, calls, at = GRPOTrainer.training_step, [0], {}

    def training_step(self, *a, **k):
        calls[0] += 1
        if calls[0] == PROBE_MICRO[0]:
            at["ru"], at["t"] = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        result = original(self, *a, **k)
        if calls[0] == PROBE_MICRO[1]:
            ru, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - at["t"]
            a0 = at["ru"]
            print("PROBE " + json.dumps({"wall": wall, "user": ru.ru_utime - a0.ru_utime,
                  "system": ru.ru_stime - a0.ru_stime, "minflt": ru.ru_minflt - a0.ru_minflt}), flush=True)  # fmt: skip
        return result

    GRPOTrainer.training_step = training_step
    sys.argv = ["cooper", "rl", "--config", "configs/rl_cpu.yaml", "--reward", "rule", "--policy", policy,
                "--datasets", "experiments/rl_learns/data/train_filtered.jsonl", "--max_steps", "2", "--save_steps",
                "100000", "--eval_steps", "0", "--output_dir", out, "--keep_freed_memory", keep]  # fmt: skip
    cli()


def in_run(args) -> None:
    """Both allocator settings inside `cooper rl` (see the module doc), ``args.reps`` rounds."""
    runs: dict[str, list[dict]] = {"default": [], "kept": []}
    for rep in range(args.reps):
        for name in ("default", "kept") if rep % 2 == 0 else ("kept", "default"):
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [sys.executable, __file__, "--probe", "true" if name == "kept" else "false", f"{tmp}/run"]
                out = subprocess.run([*cmd, "--policy", args.policy], cwd=ROOT, capture_output=True, text=True)
            line = next((x for x in out.stdout.splitlines() if x.startswith("PROBE ")), None)
            if line is None:
                raise SystemExit(f"probe run failed:\n{out.stderr[-3000:]}")
            runs[name].append(json.loads(line[6:]))
            print(name, runs[name][-1], flush=True)
    summary = {k: {m: median([r[m] for r in v]) for m in v[0]} for k, v in runs.items()}
    result = {
        "command": "python benchmarks/shared_prefix_profile.py --in_run " + " ".join(sys.argv[2:]),
        "measured": f"training_step calls {PROBE_MICRO[0]}-{PROBE_MICRO[1]} (step 2's loss micro-batches 2-4)",
        "runs": runs,
        "median": summary,
        "wall_ratio_default_over_kept": summary["default"]["wall"] / summary["kept"]["wall"],
    }
    write_result("shared_prefix_in_run", result)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rollouts", default=ROLLOUTS)
    ap.add_argument("--policy", default=POLICY)
    ap.add_argument("--step", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--groups_per_micro", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--in_run", action="store_true", help="measure inside `cooper rl`, by allocator setting")
    ap.add_argument("--probe", nargs=2, metavar=("KEEP", "OUT"), help=argparse.SUPPRESS)  # in_run's child process
    args = ap.parse_args()
    if args.probe:
        return probe_run(*args.probe, args.policy)
    if args.in_run:
        return in_run(args)
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.trainer.utils import add_fused_lm_head

    from cooper_rl.models import resolve_model
    from cooper_rl.rl.trl_internals import score_completions_only

    path = resolve_model(args.policy)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).train()
    add_fused_lm_head(model, temperature=0.7, outputs=("log_probs", "entropy"))
    score_completions_only()
    ids, mask, keep, g = step_batch(tok, ROOT / args.rollouts, args.step)
    weights = torch.randn(ids.size(0), keep, generator=torch.Generator().manual_seed(0))
    fns = variants()
    times: dict[str, list[float]] = {}
    positions: dict[str, int] = {}
    one_step(fns["shared"], model, ids, mask, keep, 2 * g, weights)  # warm-up (allocator, kernels)
    for _ in range(args.reps):
        for groups in args.groups_per_micro:
            for name, fn in fns.items():
                key = f"{name}/micro{groups * g}"
                s, n = one_step(fn, model, ids, mask, keep, groups * g, weights)
                times.setdefault(key, []).append(s)
                positions[key] = n
                print(f"{key:28s} {s:6.2f} s  {n} positions", flush=True)
    profiles = {}
    for name in ("trl", "shared"):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            one_step(fns[name], model, ids, mask, keep, 2 * g, weights)
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=40)
        profiles[f"{name}/micro{2 * g}"] = table
        print(table, flush=True)
    base = median(times[f"trl/micro{2 * g}"])
    result = {
        "command": "python benchmarks/shared_prefix_profile.py " + " ".join(sys.argv[1:]),
        "batch": {
            "rows": ids.size(0),
            "group_size": g,
            "width": ids.size(1),
            "completion_width": keep,
            "real_tokens": int(mask.sum()),
        },  # fmt: skip
        "seconds": {k: {"median": median(v), "reps": v, "positions": positions[k]} for k, v in times.items()},
        "speedup_vs_trl_micro16": {k: base / median(v) for k, v in times.items()},
        "profiles": profiles,
    }
    write_result("shared_prefix_profile", result)


if __name__ == "__main__":
    main()
