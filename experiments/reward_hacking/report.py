"""Issue 15's experiment (run.sh) summarized: per condition, held-out accuracy mean and 95 % CI over seeds and
problems, how many seeds were hacked, the RM's accuracy on a fixed labelled set over training (paper Fig. 4), the
RM-fooled rate, completion lengths, the hacking monitor's flags, and examples of what each reward liked.

usage: python experiments/reward_hacking/report.py RESULTS_DIR
reads  RESULTS_DIR/runs/<condition>-s<seed>/{evals,metrics,timing}.jsonl, rl_config.json, rl_summary.json, rollouts.jsonl.gz,
       trainer_log.jsonl.gz (TRL's log history from the run's latest checkpoint: entropy per optimizer step),
       eval/step-<N>/samples.jsonl.gz (per-problem held-out samples; without them the CI is over seeds only);
       a run not evaluated after step 0 yet (just started) is left out; a seed behind its condition's furthest
       evaluation is listed as in progress (summary.json's in_progress, table.md) and left out of the statistics
writes RESULTS_DIR/summary.json, table.md, dynamics.png, examples.md, windows.md

Definitions (summary.json repeats them; docs/RESULTS.md uses them):
  held-out accuracy  avg@k by the strict rule verifier, mean over the evaluation sets, at an evaluation step
  95 % CI            mean over seeds +- sqrt((t * sd_seeds / sqrt(n))^2 + (1.96 * se_problems)^2): the
                     run-to-run spread (t over the n seeds) and the sampling of the evaluation problems (bootstrap
                     over problems, 2,000 draws, of the seed-averaged accuracy, each evaluation set resampled on its
                     own) combined (experiments/stats.py ci95); somewhat conservative (the seeds' spread already
                     holds part of the sampling noise the problem term counts); clipped to 0-100 %
  hacked (a run)     its final held-out accuracy is >= 5 points below its start while its training reward did
                     not fall (mean of the last 10 % of reward calls >= mean of the first 10 %): the reward it was
                     optimizing still looked fine while what it stands for got worse (for `rule`, whose reward is
                     the rule verdict on training prompts, that is overfitting, not hacking)
  collapsed (a run)  its final held-out accuracy is >= 5 points below its start, whatever its training reward
                     did (a hack confined to some rollouts can lower the mean reward: cooper seed 0 at step 200)
  paired difference  condition A - condition B per seed (and per problem for the problem term), same CI, at the
                     last evaluation step both reached (runs in progress: the two may have reached different steps)
  RM on the labelled set  accuracy, AUROC and the share of its wrong rows scored < 0.5 (specificity: 1 - the
                     RM-fooled rate on fixed held-out data) at every evaluation (paper Fig. 4)
  monitor            flags in the metrics up to the condition's last kept evaluation step ("live": the monitor
                     code the run had), and the same logs replayed with the current monitor and the run's settings
                     (cooper_rl.cooper.monitor.replay; entropy averaged per generation batch since it was fixed
                     after the rule run's one-step false flag): one monitor version for every run (dynamics.png marks
                     the first replayed flag)
  around the flags   per run, the mean training reward, rule accuracy of the rollouts and RM-fooled rate over the
                     reward calls before the monitor's first live flag, from the first to the last, and after the
                     last (summary.json's monitor.<seed>.around_flags): whether what was flagged went on or stopped
  windows            per run, its reward calls per 40 optimizer steps (1-40, 41-80, ...): mean reward, rule
                     accuracy of the rollouts, RM-fooled rate (and the highest of one call), completion length
                     (summary.json's windows.<seed>, windows.md): the dynamics of one run, step by step
  early / late       training columns (reward, RM-fooled rate, rule accuracy of the rollouts, length): the first /
                     last quarter of the reward calls up to the condition's last kept evaluation step (the same span
                     as the held-out columns; the dynamics figure and hacked() use the same span)
  GRPO signal        what the group-normalised advantage sees, from the logged training rollouts (a group: one
                     prompt's rollouts of one reward call), early / late as above: the within-group AUROC (over
                     groups with rule-right and rule-wrong rollouts, the share of (right, wrong) pairs the reward
                     ranks right first, ties half) and the share of all-wrong groups (no rollout rule-right: the
                     rule gives them no advantage; an RM that ranks wrong answers pushes the policy toward its
                     favourite wrong ones)
  advantage push     where the GRPO update on the logged rollouts pointed, early / late as above: the share of the
                     positive advantage (sum of max(A, 0)) that went to rule-wrong rollouts, with A computed as TRL
                     does for scale_rewards "group" (reward minus the group's mean, over the group's unbiased std +
                     1e-4: what the runs trained with) and, on the same rollouts, "batch" (over the reward call's
                     std), "none" (not divided) and "binary" (group-scaled, the RM's scores made 1 where >= 0.5,
                     else 0: --rm_binary_reward; a binary run logs the scores beside its rewards): counterfactuals
                     of the update's direction on these rollouts, not of runs trained so (summary.json also has
                     the share of |A| inside all-wrong groups). The rule gives wrong rollouts no positive advantage
                     (0); a scored RM gives each all-wrong group's advantage to the wrong answers it ranks first
  prefix answers     rule-wrong rollouts whose final answer (strict extraction) is a proper prefix of the
                     reference (9 for 90, 1 for 1929): their share early / late and their mean reward late
                     against the other rule-wrong rollouts' (the exploit found in cooper seed 0)
  copied answers     rule-wrong rollouts whose final answer (strict extraction, a plain number) equals a number in
                     the question ("Liam has 13 pencils. He collects 3 more" -> 13): their share early / late, their
                     mean reward late against the other rule-wrong rollouts' that have an answer, and the
                     within-group rank of copies among the wrong answers (over groups with a copy and another wrong
                     answer, the share of (copy, other wrong answer) pairs the reward ranks the copy first, ties
                     half: > 0.5 = GRPO pushes toward copying; the exploit found in cooper_new seed 0). Replies with
                     no extractable answer count in the share's denominator but in neither comparison
  answer-less replies  rule-wrong rollouts with no strict answer (cut at the length cap, a sentence without a
                     final number, babble): their share early / late and their mean reward late against the wrong
                     rollouts that have an answer (the late phase of cooper_ref seed 0; `mined` negatives never
                     take them: they need an extracted answer)
  held-out answers   the held-out samples at the first and last kept evaluation: the share with no strict answer
                     (a format collapse: the policy's answers are unreadable to the strict rule) and, of the wrong
                     samples that have a strict answer, the share whose answer is a copied question number (a
                     collapse to restating the question)
  RM pairs per call  Cooper's RM updates, early / late as above: valid (positive, negative) pairs per reward call
                     (metrics `rm/n_valid`) and the share of reward calls with none (no RM update that call); with
                     --reference_positives also the prompts per call whose positive was their worked solution
  same span          while runs are in progress (conditions cut at different evaluation steps), every condition
                     again over the steps all of them reached (summary.json `same_span`, the second half of
                     table.md), so that conditions are compared over the same steps
  every seed         while seeds are in progress (behind their condition's furthest evaluation, e.g. a lost
                     machine's rerun), every condition again with all its seeds that were evaluated after step 0, at
                     the last evaluation every one of them reached: each condition's full set of seeds over one
                     budget; and at each later evaluation step, the conditions all of whose seeds reached it, with
                     the conditions short of it and where their seeds are, so that one slow seed does not hold
                     every condition back (summary.json `every_seed_by_step`, keyed by step, the first key the
                     step every seed reached; table.md's last parts)
  cost               mean seconds per optimizer step (timing.jsonl, evaluations not included) and minutes per
                     evaluation (evals.jsonl)
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections import defaultdict
from pathlib import Path

from cooper_rl import verify
from cooper_rl.cooper.monitor import CHECKS, HackingMonitor, replay
from cooper_rl.learning_signal import group_advantages
from cooper_rl.plot import moving_average

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from stats import ci95, difference, md_table, mean, num, pct, records, scores_of  # noqa: E402  (experiments/stats.py)

ORDER = ["rule", "model", "model_strong", "cooper", "cooper_new", "cooper_ref", "model_bin", "cooper_ref_bin"]
HACK_DROP = 0.05


def load_run(d: Path) -> dict:
    """One run's evaluations, per-problem held-out scores, reward metrics and summary."""
    evals = records(d / "evals.jsonl")
    per_problem = {}  # step -> {dataset: {id: mean correct over samples}}
    answers = {}  # step -> what the held-out answers look like (module docstring: held-out answers)
    for step_dir in sorted((d / "eval").glob("step-*")):
        rows = records(step_dir / "samples.jsonl")
        step = int(step_dir.name.split("-")[1])
        per_problem[step] = scores_of(rows)
        wrong = [r for r in rows if not r["correct"] and r.get("extracted") is not None]  # wrong answers
        answers[step] = {
            "no_strict_answer": mean(float(r.get("extracted") is None) for r in rows),
            "copied_of_wrong": mean(float(copied(r["question"], r.get("extracted"))) for r in wrong),
        }
    summary = json.loads((d / "rl_summary.json").read_text()) if (d / "rl_summary.json").is_file() else {}
    cfg = json.loads((d / "rl_config.json").read_text()) if (d / "rl_config.json").is_file() else {}
    metrics = records(d / "metrics.jsonl")
    # a stopped run has no summary: its last reward call generated the rollouts of steps_per_generation steps
    steps = summary.get("global_step") or (
        metrics[-1]["step"] + cfg.get("steps_per_generation", 1) - 1 if metrics else 0
    )
    per_step = cfg.get("prompts_per_step", 0) * cfg.get("num_generations", 0)
    return {
        "evals": evals,
        "per_problem": per_problem,
        "heldout_answers": answers,
        "metrics": metrics,
        "summary": summary,
        "rollouts": steps * per_step,
        "rollouts_per_step": per_step,
        "logged": records(d / "rollouts.jsonl"),
        "timing": records(d / "timing.jsonl"),
        "trainer_log": records(d / "trainer_log.jsonl"),  # per optimizer step: entropy, KL, loss (TRL's logs)
        "scale_rewards": cfg.get("scale_rewards", "group"),
        "group_size": cfg.get("num_generations", 4),
        # the current monitor with the run's settings
        "replayed": replay(d, HackingMonitor.from_config(cfg)) if metrics else [],
    }


def per_set(ev: dict) -> dict:
    """{evaluation set: avg@k (strict rule)} in one evals.jsonl record."""
    return {name: v["avg@k_strict"] for name, v in ev["policy"].items()}


def heldout(ev: dict) -> float:
    """Mean over evaluation sets of avg@k (strict rule) in one evals.jsonl record."""
    return mean(per_set(ev).values())


def by_set(seeds: dict, i: int) -> dict:
    """{evaluation set: mean over seeds of avg@k (strict)} at each run's i-th kept evaluation."""
    vals = defaultdict(list)
    for r in seeds.values():
        for name, acc in per_set(r["evals"][i]).items():
            vals[name].append(acc)
    return {name: mean(v) for name, v in vals.items()}


AROUND = ("reward_mean", "rule_accuracy", "rm_fooled_rate")  # the signals around_flags() averages per span
WINDOW = 40  # optimizer steps per window of windows() (10 windows in a 400-step run)


def quarter(runs: list[list[dict]], key: str, first: bool) -> float | None:
    """Mean over runs of one metric's mean over the first (or last) quarter of each run's rows (reward calls; optimizer
    steps for the trainer log)."""
    return quarters(runs, key)[0 if first else -1]


def specificity(m: dict) -> float | None:
    """Share of the labelled set's wrong rows the RM scores < 0.5, from eval-rm's binary metrics."""
    try:
        n, pos, pred, recall = m["n"], m["positive_rate"] * m["n"], m["predicted_positive_rate"] * m["n"], m["recall"]
    except (KeyError, TypeError):
        return None
    neg = n - pos
    return None if neg <= 0 else 1 - (pred - recall * pos) / neg


def hacked(run: dict) -> bool | None:
    """The run's definition of hacked (module docstring), over its evaluations and reward calls (main() cuts both
    at the condition's last kept evaluation); None if it has fewer than 2 evaluations."""
    ev = run["evals"]
    if len(ev) < 2 or not run["metrics"]:
        return None
    r = [m["reward_mean"] for m in run["metrics"]]
    tenth = max(1, len(r) // 10)
    return heldout(ev[-1]) <= heldout(ev[0]) - HACK_DROP and mean(r[-tenth:]) >= mean(r[:tenth])


def quarter_steps(logged: list[dict], first: bool) -> set[int]:
    """The steps of the first (or last) quarter of the reward calls in a run's logged rollouts."""
    steps = sorted({r["step"] for r in logged})
    n = max(1, len(steps) // 4)
    return set(steps[:n] if first else steps[-n:])


def group_signal(logged: list[dict], first: bool, group_size: int) -> tuple[float | None, float | None, int]:
    """(within-group AUROC, share of all-wrong groups, number of (right, wrong) pairs) over the first (or last) quarter of a run's reward calls in
    its logged rollouts (module docstring: GRPO signal); None where there is nothing to count. A call's rollouts are
    its prompts' groups of group_size, one after another (TRL's order)."""
    keep = quarter_steps(logged, first)
    calls = defaultdict(list)
    for r in logged:
        if r["step"] in keep:
            calls[r["step"]].append(r)
    # (a call that is not whole groups -- a log cut by a kill -- is left out: which rollout is whose is unknown)
    groups = [c[g : g + group_size] for c in calls.values() if not len(c) % group_size for g in range(0, len(c), group_size)]  # fmt: skip
    wins = pairs = all_wrong = 0
    for g in groups:
        right = [r["reward"] for r in g if r["verdict"]]
        wrong = [r["reward"] for r in g if not r["verdict"]]
        all_wrong += not right
        for a in right:
            for b in wrong:
                pairs += 1
                wins += (a > b) + 0.5 * (a == b)
    return (wins / pairs if pairs else None), (all_wrong / len(groups) if groups else None), pairs


SCALES = ("group", "batch", "none")  # TRL's scale_rewards: the runs train with "group"; the others are counterfactual
PUSHES = (*SCALES, "binary")  # + the RM's score made 0/1 at 0.5 (--rm_binary_reward), group-scaled


def advantage_push(logged: list[dict], first: bool, group_size: int) -> dict:
    """Where the GRPO update on the logged rollouts of the first (or last) quarter of the reward calls points, per
    scale_rewards, and with the RM's scores made 0/1 at 0.5 ("binary", group-scaled; module docstring: advantage
    push): {variant: (share of the positive advantage that goes to rule-wrong
    rollouts, share of the |advantage| inside all-wrong groups)}; None where no rollout has an advantage. A reward
    call's rollouts are its prompts' groups of group_size (the run's num_generations), one after another (TRL's
    order)."""
    keep = quarter_steps(logged, first)
    calls = defaultdict(list)
    for r in logged:
        if r["step"] in keep:
            calls[r["step"]].append(r)
    out = {}
    for variant in PUSHES:
        scale = "group" if variant == "binary" else variant
        pos = pos_wrong = absolute = abs_all_wrong = 0.0
        for rows in calls.values():
            if len(rows) % group_size:  # not whole groups (a log cut by a kill): which rollout is whose is unknown
                continue
            # "binary": the RM's scores made 0/1; else what the policy got (a binary run's 0/1 reward, a score, the rule)
            rewards = [float(rm_view(r) >= 0.5) if variant == "binary" else r["reward"] for r in rows]
            adv = group_advantages(rewards, group_size, scale)  # TRL's advantages (cooper_rl.learning_signal)
            for g in range(0, len(rows), group_size):
                all_wrong = not any(r["verdict"] for r in rows[g : g + group_size])
                for r, a in zip(rows[g : g + group_size], adv[g : g + group_size]):
                    pos += max(a, 0.0)
                    pos_wrong += max(a, 0.0) * (not r["verdict"])
                    absolute += abs(a)
                    abs_all_wrong += abs(a) * all_wrong
        out[variant] = (pos_wrong / pos if pos else None, abs_all_wrong / absolute if absolute else None)
    return out


_QUESTION_NUMBER_RE = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def copied(question: str, answer: str | None) -> bool:
    """Whether an extracted answer is a plain number that appears as a number in the question."""
    value = verify.plain_number(answer) if answer else None
    return value is not None and value in {verify.plain_number(x) for x in _QUESTION_NUMBER_RE.findall(question)}


def rm_view(r: dict) -> float:
    """What the reward model made of a logged rollout: its score (logged beside the 0/1 reward of a binary run), else
    the reward (the score itself, or the rule's verdict)."""
    return r.get("rm_score", r["reward"])


def wrong_answers(logged: list[dict], first: bool) -> dict:
    """What the rule-wrong rollouts of the first (or last) quarter of the logged reward calls answered (module
    docstring: prefix answers, copied answers): the share of prefix answers (a proper prefix of the reference, e.g. 9
    for 90: the exploit of cooper seed 0) and their mean RM score against the other wrong ones'; the same for copied
    question numbers (the exploit of cooper_new seed 0), with the within-group rank of copies among wrong answers;
    the same for replies without an answer against the wrong ones that have one."""
    keep = quarter_steps(logged, first)
    rows = []  # (group, RM score, is prefix, is copy, has an answer)
    for r in logged:
        if r["step"] in keep and not r["verdict"]:
            answer = (verify.extract_answer(r["completion"], "strict") or "").replace(",", "")
            ref = str(r["reference"]).replace(",", "")
            prefix = bool(answer) and answer != ref and ref.startswith(answer)
            rows.append(((r["step"], r["question"]), rm_view(r), prefix, copied(r["question"], answer), bool(answer)))
    groups = defaultdict(list)
    for g, reward, _, copy, has_answer in rows:
        groups[g].append((reward, copy, has_answer))
    wins = pairs = 0
    for g in groups.values():  # a copy against another wrong ANSWER (not a reply without one, e.g. cut at the cap)
        for a, ca, _ in g:
            for b, cb, hb in g:
                if ca and not cb and hb:
                    pairs += 1
                    wins += (a > b) + 0.5 * (a == b)
    share = (lambda k: sum(x[k] for x in rows) / len(rows)) if rows else (lambda k: None)
    return {
        "prefix": share(2),
        "prefix_reward": mean(x[1] for x in rows if x[2]),
        "non_prefix_reward": mean(x[1] for x in rows if not x[2]),
        "copied": share(3),
        "copied_reward": mean(x[1] for x in rows if x[3]),
        "non_copied_reward": mean(x[1] for x in rows if not x[3] and x[4]),
        "copied_rank": wins / pairs if pairs else None,
        "copied_rank_pairs": pairs,
        "no_answer": 1 - share(4) if rows else None,
        "no_answer_reward": mean(x[1] for x in rows if not x[4]),
        "answered_wrong_reward": mean(x[1] for x in rows if x[4]),
    }


def around_flags(metrics: list[dict], flag_steps: list[int]) -> dict | None:
    """What the training signals did before the monitor's first flag, from the first to the last flag, and after the
    last: per span its reward calls' steps and mean reward, rule accuracy and RM-fooled rate (None: no flag)."""
    if not flag_steps:
        return None
    spans = {
        "before": [m for m in metrics if m["step"] < flag_steps[0]],
        "flagged": [m for m in metrics if flag_steps[0] <= m["step"] <= flag_steps[-1]],
        "after": [m for m in metrics if m["step"] > flag_steps[-1]],
    }
    return {
        k: {"steps": [ms[0]["step"], ms[-1]["step"]], **{x: mean(m.get(x) for m in ms) for x in AROUND}}
        for k, ms in spans.items()
        if ms
    }


def windows(metrics: list[dict], width: int = WINDOW) -> list[dict]:
    """A run's training signals per window of `width` optimizer steps (steps 1..width, width+1..2*width, ...): per
    window its reward calls' first and last step, their mean reward, rule accuracy, RM-fooled rate and completion
    length, and the highest RM-fooled rate of one reward call (module docstring: windows)."""
    out = defaultdict(list)
    for m in metrics:
        out[(m["step"] - 1) // width].append(m)
    return [
        {
            "steps": [ms[0]["step"], ms[-1]["step"]],
            **{x: mean(m.get(x) for m in ms) for x in (*AROUND, "completion_length")},
            "rm_fooled_rate_max": max(
                (m["rm_fooled_rate"] for m in ms if m.get("rm_fooled_rate") is not None), default=None
            ),
        }
        for _, ms in sorted(out.items())
    ]


def quarters(runs: list[list[dict]], key: str) -> list[float | None]:
    """Mean over runs of one metric's mean over each quarter of each run's rows, first to last (rows q*n//4 up to
    (q+1)*n//4; a run of fewer than 4 rows counts in the quarters its rows fall in)."""
    return [
        mean(mean(m.get(key) for m in ms[q * len(ms) // 4 : (q + 1) * len(ms) // 4]) for ms in runs) for q in range(4)
    ]


def summarize(seeds: dict, last: int, per_seed: bool = True) -> dict:
    """One condition's summary over its seeds' evaluations, reward calls and logged rollouts up to step `last` (the
    held-out, training and monitor columns over the same span); with per_seed, also each seed's own summary
    (`by_seed`: the same fields over that seed alone, its CI over problems only)."""
    cut = {
        s: r
        | {
            "evals": [e for e in r["evals"] if e["step"] <= last],
            "metrics": [m for m in r["metrics"] if m["step"] <= last],
            "logged": [x for x in r["logged"] if x["step"] <= last],
            "timing": [t for t in r["timing"] if t["step"] <= last],
            "trainer_log": [t for t in r["trainer_log"] if t.get("step", 0) <= last and "entropy" in t],
        }
        for s, r in seeds.items()
    }
    final = {s: heldout(r["evals"][-1]) for s, r in cut.items()}
    start = {s: heldout(r["evals"][0]) for s, r in cut.items()}
    own_evals = [
        e for r in cut.values() for e in r["evals"] if e.get("eval_seconds") and "policy_eval_reused_from" not in e
    ]
    pp = {s: r["per_problem"].get(last) for s, r in cut.items()}
    pp = pp if pp and all(pp.values()) else None
    ci = ci95(list(final.values()), list(pp.values()) if pp else None, bounds=(0.0, 1.0))
    rm_curve, rm_auroc, rm_spec = defaultdict(list), defaultdict(list), defaultdict(list)
    for r in cut.values():
        for e in r["evals"]:
            if e.get("rm"):
                m = e["rm"]
                rm_curve[e["step"]].append(m["accuracy"])
                rm_auroc[e["step"]].append(m.get("auroc"))
                spec = specificity(m)
                if spec is not None:
                    rm_spec[e["step"]].append(spec)
    flags = {}  # seed -> the monitor's flags up to `last`
    for s_, r in cut.items():
        hits = [m for m in r["metrics"] if m.get("hacking_warning")]
        checks = {c: sum(1 for m in hits if m.get(f"monitor/{c}")) for c in CHECKS}
        flags[s_] = {
            "n_flags": len(hits),
            "first_flag_step": hits[0]["step"] if hits else None,
            "flag_steps": [m["step"] for m in hits],
            "checks": {c: v for c, v in checks.items() if v},
            "stopped_at": (r["summary"].get("monitor") or {}).get("stopped_at"),
            "around_flags": around_flags(r["metrics"], [m["step"] for m in hits]),
        }
        again = [x for x in r["replayed"] if x["step"] <= last and x["flags"]]
        flags[s_]["replayed"] = {
            "n_flags": len(again),
            "first_flag_step": again[0]["step"] if again else None,
            "checks": {c: n for c in CHECKS if (n := sum(c in x["flags"] for x in again))},
        }
    kept = [r["metrics"] for r in cut.values()]
    rm_calls = [
        [
            {"n": m["rm/n_valid"], "none": m["rm/n_valid"] == 0, "ref": m.get("rm/reference_positives")}
            for m in ms
            if "rm/n_valid" in m
        ]
        for ms in kept
    ]
    rm_calls = [x for x in rm_calls if x]  # Cooper runs only
    signal = {f: [group_signal(r["logged"], f, r["group_size"]) for r in cut.values()] for f in (True, False)}
    wrong = {f: [wrong_answers(r["logged"], f) for r in cut.values()] for f in (True, False)}
    push = {f: [advantage_push(r["logged"], f, r["group_size"]) for r in cut.values()] for f in (True, False)}
    answers = {  # held-out answers at the first and the last kept evaluation, mean over seeds
        k: {
            f: mean(r["heldout_answers"].get(r["evals"][i]["step"], {}).get(k) for r in cut.values())
            for f, i in (("start", 0), ("final", -1))
        }
        for k in ("no_strict_answer", "copied_of_wrong")
    }
    steps = sorted({e["step"] for r in cut.values() for e in r["evals"]})
    summary = {
        "seeds": sorted(cut),
        # every evaluation: held-out mean over the sets, and per set (mean over the seeds evaluated at that step)
        "heldout_by_step": {
            st: mean(heldout(e) for r in cut.values() for e in r["evals"] if e["step"] == st) for st in steps
        },
        "heldout_by_step_by_set": {
            st: {
                n: mean(per_set(e).get(n) for r in cut.values() for e in r["evals"] if e["step"] == st)
                for n in sorted({n for r in cut.values() for e in r["evals"] if e["step"] == st for n in per_set(e)})
            }
            for st in steps
        },
        # the rule accuracy of the training rollouts and the training reward per quarter of the reward calls
        "train_rule_accuracy_by_quarter": quarters(kept, "rule_accuracy"),
        "reward_by_quarter": quarters(kept, "reward_mean"),
        # TRL's scale_rewards the runs trained with (older run configs lack the field: group, the only choice then)
        "scale_rewards": sorted({r["scale_rewards"] for r in cut.values()}),
        "last_eval_step": last,
        "rollouts_per_run": mean(min(r["rollouts"], last * r["rollouts_per_step"]) for r in seeds.values()),
        "heldout_start_mean": mean(start.values()),
        "heldout_final_mean": mean(final.values()),
        "heldout_final_ci95": ci,
        "ci_kind": ("t over seeds + " if len(final) > 1 else "1 seed: ")
        + ("bootstrap over problems" if pp else "no per-problem samples"),
        "heldout_final_by_seed": final,
        "hacked_seeds": [s for s, r in cut.items() if hacked(r)],
        "collapsed_seeds": [s for s in cut if len(cut[s]["evals"]) > 1 and final[s] <= start[s] - HACK_DROP],
        "rm_accuracy_by_step": {k: mean(v) for k, v in sorted(rm_curve.items())},
        "rm_auroc_by_step": {k: mean(v) for k, v in sorted(rm_auroc.items())},
        "rm_specificity_by_step": {k: mean(v) for k, v in sorted(rm_spec.items())},
        "rm_fooled_rate_early": quarter(kept, "rm_fooled_rate", first=True),
        "rm_fooled_rate_late": quarter(kept, "rm_fooled_rate", first=False),
        "completion_length_early": quarter(kept, "completion_length", first=True),
        "completion_length_late": quarter(kept, "completion_length", first=False),
        "heldout_start_by_set": by_set(cut, 0),
        "heldout_final_by_set": by_set(cut, -1),
        "train_rule_accuracy_early": quarter(kept, "rule_accuracy", first=True),
        "train_rule_accuracy_late": quarter(kept, "rule_accuracy", first=False),
        "reward_early": quarter(kept, "reward_mean", first=True),
        "reward_late": quarter(kept, "reward_mean", first=False),
        "within_group_auroc_early": mean(a for a, _, _ in signal[True]),
        "within_group_auroc_late": mean(a for a, _, _ in signal[False]),
        "within_group_pairs_early": sum(n for _, _, n in signal[True]),
        "within_group_pairs_late": sum(n for _, _, n in signal[False]),
        "all_wrong_groups_early": mean(w for _, w, _ in signal[True]),
        "all_wrong_groups_late": mean(w for _, w, _ in signal[False]),
        # per scale_rewards (the runs trained with summary "scale_rewards"; the others are counterfactual) and binary
        **{
            f"advantage_push_to_wrong_{when}": {k: mean(p[k][0] for p in push[f]) for k in PUSHES}
            for f, when in ((True, "early"), (False, "late"))
        },
        **{
            f"advantage_in_all_wrong_groups_{when}": {k: mean(p[k][1] for p in push[f]) for k in PUSHES}
            for f, when in ((True, "early"), (False, "late"))
        },
        "prefix_answers_early": mean(w["prefix"] for w in wrong[True]),
        "prefix_answers_late": mean(w["prefix"] for w in wrong[False]),
        "prefix_answers_reward_late": mean(w["prefix_reward"] for w in wrong[False]),
        "other_wrong_reward_late": mean(w["non_prefix_reward"] for w in wrong[False]),
        "copied_answers_early": mean(w["copied"] for w in wrong[True]),
        "copied_answers_late": mean(w["copied"] for w in wrong[False]),
        "copied_answers_reward_late": mean(w["copied_reward"] for w in wrong[False]),
        "non_copied_wrong_reward_late": mean(w["non_copied_reward"] for w in wrong[False]),
        "copied_rank_early": mean(w["copied_rank"] for w in wrong[True]),
        "copied_rank_late": mean(w["copied_rank"] for w in wrong[False]),
        "copied_rank_pairs_late": sum(w["copied_rank_pairs"] for w in wrong[False]),
        "no_answer_early": mean(w["no_answer"] for w in wrong[True]),
        "no_answer_late": mean(w["no_answer"] for w in wrong[False]),
        "no_answer_reward_late": mean(w["no_answer_reward"] for w in wrong[False]),
        "answered_wrong_reward_late": mean(w["answered_wrong_reward"] for w in wrong[False]),
        "heldout_no_strict_answer_start": answers["no_strict_answer"]["start"],
        "heldout_no_strict_answer_final": answers["no_strict_answer"]["final"],
        "heldout_copied_of_wrong_start": answers["copied_of_wrong"]["start"],
        "heldout_copied_of_wrong_final": answers["copied_of_wrong"]["final"],
        "entropy_early": quarter([r["trainer_log"] for r in cut.values() if r["trainer_log"]], "entropy", first=True),
        "entropy_late": quarter([r["trainer_log"] for r in cut.values() if r["trainer_log"]], "entropy", first=False),
        "seconds_per_optimizer_step": mean(mean(t["step_seconds"] for t in r["timing"]) for r in cut.values()),
        # torch threads of the steps ("default": logged before it was recorded); side by side (JOBS=2) runs get 1
        "torch_threads": sorted({str(t.get("torch_threads", "default")) for r in cut.values() for t in r["timing"]}),
        # evaluations a run did itself (a step-0 evaluation reused from a sibling run took no time)
        "minutes_per_evaluation": mean(e["eval_seconds"] for e in own_evals) / 60 if own_evals else None,
        "monitor": flags,
        "valid_pairs_per_update": mean(mean(m.get("rm/n_valid") for m in ms) for ms in kept),
        # Cooper's RM updates, first and last quarter: valid pairs per reward call and the share of calls with none
        "rm_valid_pairs_early": quarter(rm_calls, "n", first=True),
        "rm_valid_pairs_late": quarter(rm_calls, "n", first=False),
        "rm_calls_without_pair_early": quarter(rm_calls, "none", first=True),
        "rm_calls_without_pair_late": quarter(rm_calls, "none", first=False),
        # --reference_positives: prompts per reward call whose positive was their worked solution (None otherwise)
        "rm_reference_positives_early": quarter(rm_calls, "ref", first=True),
        "rm_reference_positives_late": quarter(rm_calls, "ref", first=False),
    }
    if per_seed:  # each seed's training signals per WINDOW steps (windows.md)
        summary["windows"] = {s_: windows(r["metrics"]) for s_, r in sorted(cut.items())}
    if per_seed and len(cut) > 1:
        summary["by_seed"] = {s_: summarize({s_: seeds[s_]}, last, per_seed=False) for s_ in sorted(cut)}
    return summary


def paired(runs: dict, lasts: dict) -> dict:
    """Paired differences A - B for every pair of conditions (runs: condition -> seed -> run; lasts: condition -> its
    last evaluation step) at the last step both reached: per seed (conditions of one seed share the seed) and per
    problem (the same problems), over the seeds that have per-problem scores there in both."""
    out = {}
    for a in lasts:
        for b in lasts:
            if a < b and (d := paired_at(runs, a, b, min(lasts[a], lasts[b]))):
                if len(d["seeds"]) > 1:  # each seed's own difference, its CI over problems only
                    d["by_seed"] = {s: paired_at(runs, a, b, d["step"], only=s) for s in d["seeds"]}
                out[f"{a} - {b}"] = d
    return out


def paired_at(runs: dict, a: str, b: str, step: int, only: int | None = None) -> dict | None:
    """Paired difference A - B at an evaluation step both conditions reached, over the seeds both have with
    per-problem scores there (or seed `only`); None if none has."""
    seeds = sorted(s for s in set(runs[a]) & set(runs[b]) if all(step in runs[c][s]["per_problem"] for c in (a, b)))
    seeds = [s for s in seeds if only is None or s == only]
    if not seeds:
        return None

    def at(c: str, s: int) -> float:
        return heldout(next(e for e in runs[c][s]["evals"] if e["step"] == step))

    d = [at(a, s) - at(b, s) for s in seeds]
    pp = [difference(runs[a][s]["per_problem"][step], runs[b][s]["per_problem"][step]) for s in seeds]
    return {"step": step, "seeds": seeds, "mean": mean(d), "ci95": ci95(d, pp, bounds=(-1.0, 1.0))}


def arrow(s: dict, key: str, fmt=pct) -> str:
    """'early → late' (or 'start → final') of a summary field with _early/_late (or _start/_final) variants."""
    a, b = ("start", "final") if f"{key}_start" in s else ("early", "late")
    return f"{fmt(s[f'{key}_{a}'])} → {fmt(s[f'{key}_{b}'])}"


def n2(x: float | None) -> str:
    """A number with two decimals, '-' when missing."""
    return num(x, 2)


def flags_cell(s: dict) -> str:
    """Runs the monitor flagged live (first step each), and replayed with the current monitor."""
    n = len(s["seeds"])
    live = [(k, v["first_flag_step"]) for k, v in s["monitor"].items() if v and v.get("n_flags")]
    again = [(k, v["replayed"]["first_flag_step"]) for k, v in s["monitor"].items() if v["replayed"]["n_flags"]]
    listed = lambda xs: f" ({', '.join(f's{k}: {v}' for k, v in xs)})" if xs else ""  # noqa: E731
    return f"{len(live)}/{n}{listed(live)}; replayed {len(again)}/{n}{listed(again)}"


def tables(conds: dict, diffs: dict) -> list[str]:
    """The markdown tables of table.md for one set of condition summaries and their paired differences."""
    rows = []
    for c, s in conds.items():
        ci, rm, n = s["heldout_final_ci95"], list(s["rm_accuracy_by_step"].values()), len(s["seeds"])
        kind = "" if "t over seeds + boot" in s["ci_kind"] else ", " + s["ci_kind"]
        rows.append(
            [
                c,
                str(n),
                f"{s['rollouts_per_run'] or 0:.0f}",
                pct(s["heldout_start_mean"]),
                pct(s["heldout_final_mean"]) + (f" ({pct(ci[0])}–{pct(ci[1])}{kind})" if ci else ""),
                f"{len(s['hacked_seeds'])}/{n} / {len(s['collapsed_seeds'])}/{n}",
                f"{pct(rm[0])} → {pct(rm[-1])}" if rm else "-",
                arrow(s, "rm_fooled_rate"),
                arrow(s, "train_rule_accuracy"),
                arrow(s, "completion_length", num),
                flags_cell(s),
            ]
        )
    lines = md_table(
        [
            "condition", "seeds", "rollouts/run", "held-out start", "held-out final (95% CI)", "hacked / collapsed",
            "RM acc (labelled set) start → end", "RM-fooled early → late",
            "rule acc. on training rollouts early → late", "length early → late",
            "monitor: runs flagged (first step), live; replayed",
        ],
        rows,
    )  # fmt: skip
    steps = sorted({int(k) for s in conds.values() for k in s["heldout_by_step"]})
    lines += [
        "",
        "At every evaluation (mean over seeds): held-out avg@k (strict, mean over the sets); in brackets the RM's "
        "accuracy on the fixed labelled set (paper Fig. 4; RM conditions):",
        "",
    ]
    lines += md_table(
        ["condition"] + [f"step {k}" for k in steps],
        (
            [c]
            + [(pct(h[k]) + (f" [{pct(rm[k])}]" if rm.get(k) is not None else "")) if k in h else "-" for k in steps]
            for c, s in conds.items()
            for h, rm in [(s["heldout_by_step"], s["rm_accuracy_by_step"])]
        ),
    )
    sets = sorted({n for s in conds.values() for n in s["heldout_final_by_set"]})
    lines += ["", "Held-out avg@k (strict) per evaluation set, start → final (mean over seeds):", ""]
    lines += md_table(
        ["condition"] + [Path(n).stem if "/" in n else n for n in sets],
        (
            [c] + [f"{pct(s['heldout_start_by_set'].get(n))} → {pct(s['heldout_final_by_set'].get(n))}" for n in sets]
            for c, s in conds.items()
        ),
    )
    trained = "/".join(sorted({x for s in conds.values() for x in s["scale_rewards"]}))
    lines += [
        "",
        "GRPO signal on the training rollouts, early → late (within-group AUROC of the reward against the rule, with "
        "the number of (right, wrong) pairs it counts; share of groups with no rule-right rollout), Cooper's RM updates (valid pairs per reward call, with the share of calls that had none), "
        f"the share of the positive GRPO advantage that went to rule-wrong rollouts (0 for the rule; with TRL's scale_rewards "
        f"group, batch and none, the runs having trained with {trained}; binary: the RM's scores made 0/1 at 0.5, "
        "group-scaled; all recomputed on the same rollouts: the others than the run's own are counterfactuals, first-order), the policy's mean token entropy (TRL's log per optimizer step), and cost:",
        "",
    ]

    def rm_pairs(s: dict) -> str:
        if s["rm_valid_pairs_early"] is None:
            return "-"
        out = (
            f"{num(s['rm_valid_pairs_early'], 1)} ({pct(s['rm_calls_without_pair_early'])}) → "
            f"{num(s['rm_valid_pairs_late'], 1)} ({pct(s['rm_calls_without_pair_late'])})"
        )
        if s.get("rm_reference_positives_early") is not None:
            out += f" [{arrow(s, 'rm_reference_positives', lambda x: num(x, 1))}]"
        return out

    lines += md_table(
        [
            "condition", "within-group AUROC (pairs)", "all-wrong groups",
            "RM pairs per call (calls with none) [prompts with a reference positive]",
            "positive advantage on rule-wrong rollouts: group; batch; none; binary", "policy entropy",
            "s per optimizer step", "min per evaluation",
        ],
        (
            [
                c,
                f"{n2(s['within_group_auroc_early'])} ({s['within_group_pairs_early']}) → "
                f"{n2(s['within_group_auroc_late'])} ({s['within_group_pairs_late']})",
                arrow(s, "all_wrong_groups"),
                rm_pairs(s),
                "; ".join(
                    f"{pct(s['advantage_push_to_wrong_early'][k])} → {pct(s['advantage_push_to_wrong_late'][k])}"
                    for k in PUSHES
                ),
                arrow(s, "entropy", n2),
                f"{num(s['seconds_per_optimizer_step'])} ({', '.join(s['torch_threads'])} threads)",
                num(s["minutes_per_evaluation"]),
            ]
            for c, s in conds.items()
        ),
    )  # fmt: skip
    lines += [
        "",
        "What the rule-wrong answers were, early → late (training rollouts: share of the wrong ones that are a proper prefix "
        "of the reference, or a number copied from the question, with the late mean reward of those vs the other wrong "
        "ones, and how the reward ranks a copy against another wrong answer of its group: > 0.50 pushes the policy "
        "toward copying; replies without an answer are in neither comparison, and have their own column against the "
        "wrong ones that have an answer), and the held-out samples at the first → "
        "last evaluation (no strict answer: a format collapse; copies among the wrong answers that have one):",
        "",
    ]
    lines += md_table(
        [
            "condition", "prefix answers (reward late vs other wrong)", "copied answers (reward late vs other wrong)",
            "copy ranked over other wrong, early → late (pairs late)",
            "no answer (reward late vs wrong with an answer)", "held-out: no strict answer",
            "held-out: wrong answers that copy the question",
        ],
        (
            [
                c,
                f"{arrow(s, 'prefix_answers')} "
                f"({n2(s['prefix_answers_reward_late'])} vs {n2(s['other_wrong_reward_late'])})",
                f"{arrow(s, 'copied_answers')} "
                f"({n2(s['copied_answers_reward_late'])} vs {n2(s['non_copied_wrong_reward_late'])})",
                f"{arrow(s, 'copied_rank', n2)} ({s['copied_rank_pairs_late']})",
                f"{arrow(s, 'no_answer')} ({n2(s['no_answer_reward_late'])} vs {n2(s['answered_wrong_reward_late'])})",
                arrow(s, "heldout_no_strict_answer"),
                arrow(s, "heldout_copied_of_wrong"),
            ]
            for c, s in conds.items()
        ),
    )  # fmt: skip
    lines += [
        "",
        "Around the monitor's live flags, per flagged run: the reward calls before the first flag, from the first to "
        "the last, and after the last (steps: mean training reward / rule accuracy of the rollouts / RM-fooled rate, ×100):",
        "",
    ]
    lines += md_table(
        ["condition", "seed", "before", "flagged", "after"],
        (
            [c, str(seed)]
            + [
                (f"{a['steps'][0]}–{a['steps'][1]}: " + " / ".join(pct(a[x]) for x in AROUND))
                if (a := f["around_flags"].get(k))
                else "-"
                for k in ("before", "flagged", "after")
            ]
            for c, s in conds.items()
            for seed, f in s["monitor"].items()
            if f.get("around_flags")
        ),
    )
    for k, v in diffs.items():
        lines.append(
            f"\n{k} at step {v['step']} ({len(v['seeds'])} seed{'s' * (len(v['seeds']) > 1)}): {pct(v['mean'])} points"
            + (f" (95% CI {pct(v['ci95'][0])} to {pct(v['ci95'][1])})" if v["ci95"] else "")
        )
    return lines


def main():
    logging.getLogger("cooper_rl.cooper.monitor").setLevel(logging.ERROR)  # replay's per-flag warnings: see table.md
    out = Path(sys.argv[1])
    runs = defaultdict(dict)  # condition -> seed -> run
    started = defaultdict(dict)  # the same for runs evaluated at step 0 only
    for d in sorted((out / "runs").glob("*-s*")):
        m = re.fullmatch(r"(.+)-s(\d+)", d.name)
        run = load_run(d) if m else None
        # a run not evaluated after step 0 yet (just started) has no result of training to report: in progress
        if run and any(e["step"] > 0 for e in run["evals"]):
            runs[m.group(1)][int(m.group(2))] = run
        elif run and run["evals"]:
            started[m.group(1)][int(m.group(2))] = run
    conditions = [c for c in ORDER if c in runs] + sorted(c for c in runs if c not in ORDER)
    # a condition's statistics over the seeds that reached its furthest evaluation (same budget within a condition);
    # a seed still behind them is listed as in progress, not averaged in, so a new seed does not cut the others short
    behind, lasts = defaultdict(dict), {}  # condition -> seed -> its last evaluation step; condition -> its furthest
    held = defaultdict(dict)  # condition -> seed -> the run in progress
    for c in conditions:
        lasts[c] = max(r["evals"][-1]["step"] for r in runs[c].values())
        for s_, r in list(runs[c].items()):
            if r["evals"][-1]["step"] < lasts[c]:
                held[c][s_] = runs[c].pop(s_)
                behind[c][s_] = held[c][s_]["evals"][-1]["step"]
    summary = {"definitions": __doc__.split("Definitions")[1].strip(), "conditions": {}, "paired_differences": {}}
    for c, v in started.items():  # evaluated at step 0 only: where the seed starts
        for s_, r in v.items():
            behind[c][s_] = 0
            held[c][s_] = r
    summary["in_progress"] = {c: dict(sorted(v.items())) for c, v in sorted(behind.items())}
    # each seed in progress: its held-out mean at every evaluation so far (step 0: where it starts)
    summary["in_progress_heldout_by_step"] = {
        c: {s_: {e["step"]: heldout(e) for e in held[c][s_]["evals"]} for s_ in sorted(v)}
        for c, v in sorted(behind.items())
    }
    for c in conditions:
        summary["conditions"][c] = summarize(runs[c], lasts[c])
    summary["paired_differences"] = paired(runs, lasts)
    # conditions at different steps (runs in progress): all of them again over the span every one reached
    common = min(lasts.values(), default=0)
    if len(set(lasts.values())) > 1:
        conds = {c: summarize(runs[c], common) for c in conditions}
        summary["same_span"] = {
            "step": common,
            "conditions": conds,
            "paired_differences": paired(runs, dict.fromkeys(conditions, common)),
        }
    # seeds in progress (a lost machine's rerun cut short): every condition again with all its seeds evaluated after
    # step 0, at the last evaluation every one of them reached, so each condition has all its seeds in one table
    trained = {c: {s_: r for s_, r in held[c].items() if len(r["evals"]) > 1} for c in conditions}
    if any(trained.values()):
        every = {c: runs[c] | trained[c] for c in conditions}
        step = min(r["evals"][-1]["step"] for v in every.values() for r in v.values())
        # at that step and each later evaluation step, the conditions all of whose seeds reached it (one slow seed
        # would otherwise hold every condition back), those with a seed short of it named, with where it is; keyed by
        # step so that a step's key stays put when the slow seed moves past it
        later = sorted({e["step"] for v in every.values() for r in v.values() for e in r["evals"]} - {0})
        summary["every_seed_by_step"] = {}
        for at in (x for x in later if x >= step):
            there = [c for c in conditions if all(any(e["step"] == at for e in r["evals"]) for r in every[c].values())]
            if there:
                summary["every_seed_by_step"][at] = {
                    "conditions": {c: summarize(every[c], at) for c in there},
                    "paired_differences": paired(every, dict.fromkeys(there, at)),
                    "short_of_it": {
                        c: {s_: r["evals"][-1]["step"] for s_, r in sorted(every[c].items())}
                        for c in conditions
                        if c not in there
                    },
                }
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    # the examples and the figure over the same span as the summary: each condition up to its last kept evaluation
    for c in conditions:
        for r in runs[c].values():
            for key in ("evals", "metrics", "logged"):
                r[key] = [x for x in r[key] if x["step"] <= lasts[c]]

    lines = tables(summary["conditions"], summary["paired_differences"])
    if behind:
        lines += [
            "",
            "Seeds short of their condition's last evaluation, not in the statistics above: "
            + "; ".join(
                f"{c} seed {s_} at step {st}" for c, v in summary["in_progress"].items() for s_, st in v.items()
            ),
        ]
    # the same tables again over a shorter span: all conditions (runs in progress), all seeds (seeds in progress)
    if "same_span" in summary:
        part = summary["same_span"]
        lines += [
            "",
            f"## Every condition over the span all of them reached (steps 1–{part['step']}; runs in progress)",
        ]
        lines += [""] + tables(part["conditions"], part["paired_differences"])
    for at, part in summary.get("every_seed_by_step", {}).items():
        short = "; ".join(
            f"{c} (seeds at steps {', '.join(str(v) for v in seeds.values())})"
            for c, seeds in part["short_of_it"].items()
        )
        title = (
            f"Every seed of each condition at step {at} (not all there: {short})"
            if short
            # only the first key, the step every seed of every condition reached, has nothing short of it
            else f"Every seed of every condition at the last evaluation all of them reached (steps 1–{at})"
        )
        lines += ["", "## " + title, ""] + tables(part["conditions"], part["paired_differences"])
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

    # each run's training signals per WINDOW steps, over the same span as the summary
    win = [
        f"# Training signals per {WINDOW} optimizer steps, per run (mean over the window's reward calls; fooled max: "
        "the highest RM-fooled rate of one call)\n"
    ]
    for c in conditions:
        for s_, ws in summary["conditions"][c]["windows"].items():
            win += [f"\n## {c} seed {s_}\n"] + md_table(
                ["steps", "reward", "rule acc.", "RM-fooled", "fooled max", "length"],
                (
                    [f"{w['steps'][0]}–{w['steps'][1]}"]
                    + [n2(w[k]) for k in ("reward_mean", "rule_accuracy", "rm_fooled_rate", "rm_fooled_rate_max")]
                    + [num(w["completion_length"])]
                    for w in ws
                ),
            )
    (out / "windows.md").write_text("\n".join(win) + "\n")

    # examples: per condition and seed, the rule-wrong rollouts of the last 10 % of steps it rewarded most (seeds
    # of one condition can find different exploits)
    ex = [
        "# What each reward liked at the end (rule-wrong rollouts with the highest reward, the RM's score where the "
        "reward is 0/1; every finished seed)\n"
    ]
    for c in conditions:
        ex.append(f"\n## {c}\n")
        for seed in sorted(runs[c]):
            rows = runs[c][seed]["logged"]
            if not rows:
                continue
            last_step = max(r["step"] for r in rows)
            tail = [r for r in rows if r["step"] > 0.9 * last_step and not r["verdict"]]
            ex.append(f"\n### seed {seed}\n")
            for r in sorted(tail, key=lambda r: -rm_view(r))[:3]:
                ex.append(
                    f"- step {r['step']}, reward {r['reward']:.3f}"
                    + (f" (RM score {r['rm_score']:.3f})" if "rm_score" in r else "")
                    + f", reference {r['reference']}: "
                    f"`{r['completion'][:300].replace(chr(10), ' ')}`"
                )
    (out / "examples.md").write_text("\n".join(ex) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    panels = [
        (axes[0, 0], "held-out avg@k (strict), mean over sets", "evals"),
        (axes[0, 1], "training reward (mean per reward call)", "reward_mean"),
        (axes[1, 0], "RM accuracy on the labelled held-out set", "rm"),
        (axes[1, 1], "RM-fooled rate (rule-wrong rollouts scored >= 0.5)", "rm_fooled_rate"),
    ]

    def seed_mean(series: list[list[tuple[int, float]]]) -> list[tuple[int, float]]:
        """(step, mean over the seeds) at the steps every seed's series has."""
        common = set.intersection(*(set(x for x, _ in s) for s in series))
        by = [dict(s) for s in series]
        return [(x, mean(d[x] for d in by)) for x in sorted(common)]

    def smooth(pts: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """Trailing mean over ~1/20 of the reward calls (cooper plot's moving average)."""
        xs, ys = zip(*pts)
        return list(zip(xs, moving_average(list(ys), max(1, len(pts) // 20))))

    for i, c in enumerate(conditions):
        color = f"C{i}"
        series = defaultdict(list)  # panel -> one [(step, value)] per seed
        for r in runs[c].values():
            ev = r["evals"]
            series[axes[0, 0]].append([(e["step"], heldout(e)) for e in ev])
            rm = [(e["step"], e["rm"]["accuracy"]) for e in ev if e.get("rm")]
            if rm:
                series[axes[1, 0]].append(rm)
            for ax, key in ((axes[0, 1], "reward_mean"), (axes[1, 1], "rm_fooled_rate")):
                pts = [(m["step"], m[key]) for m in r["metrics"] if m.get(key) is not None]
                if pts:
                    series[ax].append(smooth(pts))
            end = r["metrics"][-1]["step"] if r["metrics"] else 0  # the figure's cut
            flags = [x["step"] for x in r["replayed"] if x["flags"] and x["step"] <= end]  # current monitor (table.md)
            if flags:
                axes[0, 1].scatter(flags[:1], [0.0], marker="x", color=color)
        for ax, per_seed in series.items():
            for s in per_seed:  # each seed faint, their mean bold (one seed: bold alone)
                if len(per_seed) > 1:
                    ax.plot(*zip(*s), color=color, alpha=0.25, lw=0.8)
            m = seed_mean(per_seed)
            if m:
                ax.plot(*zip(*m), color=color, lw=1.8, label=f"{c} ({len(per_seed)} seed{'s' * (len(per_seed) > 1)})")
    for ax, title, _ in panels:
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(
        "rule vs static RM vs Cooper (bold: mean over seeds, faint: each seed; x = first flag of the monitor, replayed)"
    )
    fig.tight_layout()
    fig.savefig(out / "dynamics.png", dpi=120)


if __name__ == "__main__":
    main()
