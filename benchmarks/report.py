"""Write benchmarks/results/table.md: one table of every target next to its measured value, from results/*.json.
benchmarks/RESULTS.md is the written report of these numbers (question, setup, result, meaning per benchmark).

python benchmarks/report.py
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent
R = HERE / "results"


def load(name):
    p = R / f"{name}.json"
    return json.loads(p.read_text()) if p.is_file() else None


def main():
    rows, notes = [], []
    v = load("verifier")
    if v:
        n, lx, adv = v["sets"]["numeric"], v["sets"]["latex"], v["adversarial"]
        rows += [
            (
                "verifier",
                "numeric checks/s, 1 process",
                "≥ 1,000",
                f"{n['checks_per_s_workers1']:,.0f}",
                n["checks_per_s_workers1"] >= 1000,
            ),
            (
                "verifier",
                "numeric p50 / p99 latency",
                "",
                f"{n['latency_p50_ms']:.3f} / {n['latency_p99_ms']:.3f} ms",
                None,
            ),
            (
                "verifier",
                "LaTeX checks/s, 1 → 2 sandboxes",
                "",
                f"{lx['checks_per_s_workers1']:.0f} → {lx['checks_per_s_workers2']:.0f} ({lx['pool_speedup']:.2f}×)",
                None,
            ),
            (
                "verifier",
                "LaTeX p50 / p99 latency",
                "",
                f"{lx['latency_p50_ms']:.1f} / {lx['latency_p99_ms']:.1f} ms",
                None,
            ),
            (
                "verifier",
                f"adversarial ({adv['n']} inputs): slowest check",
                f"≤ timeout ({v['timeout_s']} s) + grace",
                f"{adv['max_s']:.2f} s (p99 {adv['p99_ms']:.0f} ms)",
                adv["bounded_by_timeout"],
            ),
        ]
        notes.append(
            f"verifier: {v['machine']['date']}, {v['machine'].get('cpu', '?')}, {v['machine']['cpu_count']} cores"
        )
    s = load("rm_scoring")
    if s:
        rows.append(
            (
                "RM scoring",
                f"length-sorted vs naive batches ({s['n']} inputs, batch {s['batch_size']})",
                "≥ 1.5×",
                f"{s['speedup']:.2f}× ({s['examples_per_s_sorted']:.1f} vs {s['examples_per_s_naive']:.1f} ex/s; padding {s['padded_over_real_tokens']['sorted']:.2f} vs {s['padded_over_real_tokens']['naive']:.2f}× real tokens)",
                s["speedup"] >= 1.5,
            )
        )
        notes.append(f"rm_scoring: {s['machine']['date']}")
    rl = load("rl_step")
    if rl:
        pm = rl["per_mode"]
        rows.append(
            (
                "RL step",
                "cooper / rule step time (small-batch CPU preset)",
                "≤ 1.05",
                f"{rl['ratio_vs_rule']['cooper']:.3f} (per generated token {rl['ratio_vs_rule_per_completion_token']['cooper']:.3f})",
                rl["ratio_vs_rule"]["cooper"] <= 1.05,
            )
        )
        over = (pm["cooper"]["reward_median"] - pm["rule"]["reward_median"]) / pm["rule"]["step_seconds_median"]
        rows.append(
            (
                "RL step",
                "cooper reward phase (RM scoring + negatives + RM update) / rule step",
                "",
                f"{100 * over:.2f}% of a step",
                None,
            )
        )
        rows.append(("RL step", "model / rule step time", "", f"{rl['ratio_vs_rule']['model']:.3f}", None))
        for m, x in pm.items():
            rows.append(
                (
                    "RL step",
                    f"{m}: median step and breakdown (s)",
                    "",
                    f"{x['step_seconds_median']:.1f} = gen {x['generation_median']:.1f} + ref {x['ref_logprobs_median']:.1f} + update {x['policy_update_median']:.1f} + reward {x['reward_median']:.2f} (RM score {x['reward/rm_score_median']:.2f}, negatives {x['reward/negatives_median']:.4f}, RM update {x['reward/rm_update_median']:.2f}) + other {x['other_median']:.2f}",
                    None,
                )
            )
        for m, fix in rl.get("speedup_of_variant", {}).items():
            rows.append(
                (
                    "RL step",
                    f"fix: {m} vs {m.partition('+')[0]} (bf16 autocast for log-prob forwards + backward, fp32 generation), speed-up",
                    "",
                    f"step {fix['step_seconds']:.2f}× (generation {fix['generation']:.2f}×, ref log-probs {fix['ref_logprobs']:.2f}×, policy update {fix['policy_update']:.2f}×)",
                    None,
                )
            )
        f = rl["flops"]
        rows.append(
            ("physical limit", "fp32 matmul peak (2048², torch)", "", f"{f['matmul_peak_gflops']:.0f} GFLOP/s", None)
        )
        rows.append(
            (
                "physical limit",
                "policy update achieved (6·N·padded tokens)",
                "",
                f"{f['policy_update_gflops']:.1f} GFLOP/s = {100 * f['policy_update_utilisation']:.0f}% of peak",
                None,
            )
        )
        rows.append(
            (
                "physical limit",
                "generation achieved (2·N·tokens)",
                "",
                f"{f['generation_gflops']:.1f} GFLOP/s = {100 * f['generation_utilisation']:.0f}% of peak",
                None,
            )
        )
        notes.append(
            f"rl_step: {rl['machine']['date']}, {rl['rounds']} rounds x {rl['steps_per_run']} steps per mode (first dropped)"
        )
    if s and "pairwise_update_seconds" in s:
        rows.append(
            (
                "RM update",
                f"pairwise_update with {s['pairwise_pairs']} valid pairs (policy-length completions)",
                "",
                f"{s['pairwise_update_seconds']:.2f} s (median)",
                None,
            )
        )
    pu = load("policy_update")
    if pu:
        rows.append(
            (
                "policy update",
                f"forward+backward {pu['batch']}×{pu['seq']} tokens: fp32 → bf16 autocast (AMX)",
                "",
                f"{pu['seconds']['fp32']:.1f} → {pu['seconds']['bf16_autocast']:.1f} s ({pu['speedup_bf16_autocast']:.2f}×; loss rel. diff {pu['loss_rel_diff']:.1e})",
                None,
            )
        )
        notes.append(f"policy_update: {pu['machine']['date']}")
    g = load("generation")
    if g:
        base = next(iter(g["tokens_per_s"]))
        for k, tps in g["tokens_per_s"].items():
            rows.append(
                (
                    "generation",
                    f"HF generate, {k} KV cache (batch {g['batch']}, {g['new_tokens']} tokens)",
                    "",
                    f"{tps:.1f} tok/s ({g['ratio_vs_' + base][k]:.2f}× {base}; identical output: {g['identical_outputs'][k]})",
                    None,
                )
            )
        notes.append(f"generation: {g['machine']['date']}")
    for bname in ("bound", "bound_avx2"):
        b = load(bname)
        if not b:
            continue
        m = b["machine"]
        host = f" ({m.get('cpu', '')}, {', '.join(m.get('cpu_vector_flags', [])) or 'bf16 native, flags not recorded'})"
        rows.append(
            (
                "physical limit",
                f"memory bandwidth (512 MiB copy) / matmul peak fp32, bf16 (2048³){host}",
                "",
                f"{b['bandwidth_gbs']:.0f} GB/s / {b['matmul_peak_gflops']['fp32']:.0f}, "
                + (f"{b['matmul_peak_gflops']['bf16']:.0f}" if b["matmul_peak_gflops"]["bf16"] >= 1 else "(emulated)")
                + " GFLOP/s",
                None,
            )
        )
        for batch, d in b["decode"].items():
            rows.append(
                (
                    "decode (fp32 HF generate)",
                    f"batch {batch}: tokens/s vs bound ({d['bound_by']}-bound){host}",
                    "",
                    f"{d['tokens_per_s']:.0f} / {d['bound_tokens_per_s']:.0f} = {100 * d['fraction_of_bound']:.0f}%",
                    None,
                )
            )
        pu2 = b["policy_update"]
        parts = [f"fp32 {100 * pu2['fp32']['fraction_of_peak']:.0f}% ({pu2['fp32']['seconds']:.1f} s)"]
        if "bf16" in pu2:  # measured only where bf16 is native
            parts.append(f"bf16 autocast {100 * pu2['bf16']['fraction_of_peak']:.0f}% ({pu2['bf16']['seconds']:.1f} s)")
        rows.append(
            (
                "policy update",
                f"forward+backward {pu2['batch']}×{pu2['seq']}: fraction of the matching matmul peak{host}",
                "",
                ", ".join(parts),
                None,
            )
        )
        notes.append(f"{bname}: {m['date']}")
    for t in (load("throughput"), load("throughput_confirm"), load("throughput_avx2")):
        if not t:
            continue
        native = t["machine"].get("bf16_native", "yes (bf16 matmul 4x fp32 in bound.json)")
        where = f"{t['machine'].get('cpu', '')}, bf16 native: {native}"
        rows.append(
            (
                "throughput",
                f"rollouts per hour of `cooper rl --reward {t['reward']}`, small-batch CPU preset: old → new ({', '.join(t['variants'])} alternated; {where})",
                "≥ 2.5×",
                f"{t['rollouts_per_hour_old']:.0f} → {t['rollouts_per_hour_new']:.0f} ({t['rollouts_per_hour_speedup']:.2f}×)",
                t["rollouts_per_hour_speedup"] >= 2.5,
            )
        )
        for name, v in t["variants"].items():
            ph = v["runs"][-1]["phase_seconds_per_step"]
            rows.append(
                (
                    "throughput",
                    f"{name} ({v['flags']}): s per optimizer step (last round)",
                    "",
                    f"{v['rollouts_per_hour_median']:.0f} rollouts/h, {v['speedup_vs_old']:.2f}×; gen {ph['generation']:.1f} + old log-probs {ph['old_logprobs']:.1f} + ref {ph['ref_logprobs']:.1f} + update {ph['policy_update']:.1f} + reward {ph['reward']:.2f}",
                    None,
                )
            )
        if "decode_bound_tokens_per_s" in t:
            rows.append(
                (
                    "throughput",
                    "decode tokens/s in RL vs its bound: old (fp32, batch 8) → new ("
                    + ("fp32" if t["variants"]["new"]["runs"][0].get("rollout_dtype") == "fp32" else "bf16 matmuls")
                    + ", batch 32)",
                    "",
                    f"{t['decode_tokens_per_s_old']:.0f} ({100 * t['decode_fraction_of_bound_old']:.0f}% of {t['decode_bound_tokens_per_s_old']:.0f}) → {t['decode_tokens_per_s_new']:.0f} ({100 * t['decode_fraction_of_bound']:.0f}% of {t['decode_bound_tokens_per_s']:.0f})",
                    None,
                )
            )
        notes.append(f"throughput ({', '.join(t['variants'])}): {t['machine']['date']}, {t['rounds']} rounds")
    pr = load("parallel_runs")
    if pr:
        st, m = pr["settings"], pr["machine"]
        solo, side = pr["solo"], pr["side_by_side"]
        rows.append(
            (
                "experiment runs",
                f"{st['jobs']} `cooper rl` runs side by side, 1 torch thread each, vs one with {m['torch_threads']} "
                f"(issue-15 settings, fp32, {st['steps']} steps + a step-0 evaluation; {m.get('cpu', '')})",
                "",
                f"steps/h {pr['steps_ratio']:.2f}× (rounds {', '.join(f'{x:.2f}' for x in pr['steps_ratio_by_round'])}; "
                f"{statistics.median([r['steps_per_hour'] for r in solo]):.0f} → {statistics.median([r['steps_per_hour'] for r in side]):.0f}); "
                f"evaluation {pr['eval_ratio']:.2f}× (rounds {', '.join(f'{x:.2f}' for x in pr['eval_ratio_by_round'])})",
                None,
            )
        )
        notes.append(f"parallel_runs: {m['date']}, {st['rounds']} rounds")
    for name, label in (("cooper_overhead", ""), ("cooper_overhead_prefix", ", decoder RM sharing prefixes")):
        o = load(name)
        if not o:
            continue
        for v, d in o["variants"].items():
            if v == "rule":
                continue
            rows.append(
                (
                    "Cooper overhead",
                    f"{v} / rule step time with RM updates (RM {d['rm']}, SFT warm start, small-batch CPU preset{label})",
                    "≤ 1.05",
                    f"{d['over_rule']:.3f} (rounds {', '.join(f'{x:.2f}' for x in d.get('over_rule_by_round', []))}; "
                    f"per generated token {d.get('over_rule_per_token', float('nan')):.3f}; reward phase alone "
                    f"{d.get('over_rule_reward_phase', float('nan')):.3f}; "
                    f"{d['seconds_per_step_median']:.1f} vs {o['variants']['rule']['seconds_per_step_median']:.1f} s/step; "
                    f"{d['rm_updates_with_valid_pairs']}/{d['rm_updates']} RM updates with valid pairs, median {d['valid_pairs_per_update_median']:g} pairs)",
                    d["over_rule"] <= 1.05,
                )
            )
            ph = [r["phase_seconds_per_step"] for r in d["runs"]]
            rule_ph = [r["phase_seconds_per_step"] for r in o["variants"]["rule"]["runs"]]
            rows.append(
                (
                    "Cooper overhead",
                    f"{v}: reward phase (RM scoring + negatives + RM update) vs rule's, s per optimizer step (median over rounds)",
                    "",
                    f"{statistics.median(p['reward'] for p in ph):.2f} vs {statistics.median(p['reward'] for p in rule_ph):.2f}",
                    None,
                )
            )
        notes.append(
            f"{name}: {o['machine']['date']}, {o['machine'].get('cpu')} (bf16 native: {o['machine'].get('bf16_native')}), "
            f"{o['rounds']} rounds × {o['generations_per_run']} generation batches, policy {o['policy']}"
        )
    x = load("rm_prefix")
    if x:
        for name, what in (("sft_svamp", "SFT policy's SVAMP rollouts"), ("gsm8k", "SmolLM2's GSM8K completions")):
            d = x[name]
            sec, upd = d["score_seconds"], d["update_seconds"]
            if "plain_one_batch" not in sec:  # the first version: plain and shared, each one padded batch
                sec = {"plain_one_batch": sec["plain"], "shared_one_batch": sec["shared"]}
                upd = {"plain_one_batch": upd["plain"], "shared_one_batch": upd["shared"]}
            steps = [f"whole sequences {sec['plain_one_batch']:.1f}"]
            steps += [
                f"{label} {sec[k]:.1f}"
                for k, label in (("shared_one_batch", "prefix once"), ("shared", "+ length batches"))
                if k in sec
            ]
            tok = d["rm_tokens_per_rollout"]
            fwd = d.get("forwarded_tokens_per_rollout")
            padding = (
                f"; suffix positions per rollout: real {fwd['real']:.0f}, one batch {fwd['one_batch']:.0f}, "
                f"length batches {fwd['length_batches']:.0f}"
                if fwd
                else ""
            )
            last = "shared" if "shared" in upd else "shared_one_batch"
            rows.append(
                (
                    "Cooper overhead",
                    f"decoder RM ({x['rm']}) in one reward call, {d['rollouts']} rollouts ({what}): scoring seconds",
                    "",
                    f"{' → '.join(steps)} s ({d['score_speedup']:.2f}× in all"
                    + (
                        f", length batches {d['length_batches_score_speedup']:.2f}×"
                        if "length_batches_score_speedup" in d
                        else ""
                    )
                    + f"; RM tokens per rollout {tok['plain']:.0f} → {tok['shared']:.0f}{padding}); update on 2 pairs "
                    f"{upd['plain_one_batch']:.1f} → {upd[last]:.1f} s; scores differ ≤ {d['max_score_difference']:.0e}",
                    None,
                )
            )
        notes.append(
            f"rm_prefix: {x['machine']['date']}, {x['machine'].get('cpu')}, medians of {x.get('repeats', 5)} "
            "repeats, paths alternated"
        )
    pin = load("pinning")
    if pin:
        med, r = pin["median_seconds"], pin["native_over_pinned"]
        rows.append(
            (
                "kernel pinning",
                f"median step time, native / pinned: {pin['what']} "
                f"({pin['machine'].get('cpu', '')}, {pin['rounds']} rounds x {pin['steps_per_run']} steps)",
                "",
                f"{r['step_seconds']:.2f} ({med['native']['step_seconds']:.1f} vs {med['pinned']['step_seconds']:.1f} s; "
                f"generation {r['generation']:.2f}, policy update {r['policy_update']:.2f})",
                None,
            )
        )
        notes.append(f"pinning: {pin['machine']['date']}, {pin['machine'].get('cpu')}")
    lines = ["| stage | what | target | measured | met |", "|---|---|---|---|---|"]
    for stage, what, target, measured, met in rows:
        lines.append(
            f"| {stage} | {what} | {target} | {measured} | {'' if met is None else ('yes' if met else '**no**')} |"
        )
    text = (
        "# Benchmark numbers (generated by `python benchmarks/report.py`; the report: ../RESULTS.md)\n\n"
        + "\n".join(lines)
        + "\n\nRuns: "
        + "; ".join(notes)
        + "\n"
    )
    (R / "table.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
