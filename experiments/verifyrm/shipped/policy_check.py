"""The shipped VerifyRM on policies' own solutions (issue 104 §2: "the policy's own samples ... labelled by the CAS and
spot-checked by hand"), two checks beside outside_checks.py's:

- policy_samples.jsonl: GSM8K-style solutions written by the issue-67 policies (SmolLM2-135M after SFT, before and
  after RL, hacked ones included) on held-out problems, from the committed evaluation samples of every rl_learns run
  (experiments/rl_learns/results/runs/*/eval/step-*/samples.jsonl.gz): per set (built-in test, held-out SVAMP,
  GSM8K test) a seeded draw of PER_LABEL solutions the strict rule accepts (label 1) and PER_LABEL that neither the
  strict nor the lenient rule accepts (label 0); solutions the two rules disagree on are left out (the paper's
  hybrid labels keep what two judges agree on); SOURCES pins the runs. Never trained on: the RM's rows come from
  training questions.
- policy_college.jsonl (--college N): the embedded SmolLM2-135M-Instruct's own solutions of N held-out college-math
  problems of the LaTeX suite (`cooper eval`, k = 4, T = 0.7, 512 tokens), labelled by the strict rule with the CAS
  (Math-Verify in the sandbox); needs the cores (~30 min for N = 150), writes runs/verifyrm-policy-college first.

  python experiments/verifyrm/shipped/policy_check.py                # policy_samples.jsonl (seconds)
  python experiments/verifyrm/shipped/policy_check.py --college 150  # + policy_college.jsonl (generation)
  python experiments/verifyrm/shipped/policy_check.py --hand         # the hand spot-check against the labels

Both are scored by build.sh (EXTRA=1) like the other checks; predictions.md holds what was expected of them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RUNS = ROOT / "experiments" / "rl_learns" / "results" / "runs"
PER_LABEL = 250  # per set and label
# the evaluations drawn from: those committed on 2026-12-07 at 17:34 UTC (every evaluation of these runs, and the
# step-0 one of the two then running, STEP0_ONLY); a later evaluation would change the pools and so the draw
STEP0_ONLY = ("cooper_recal-s2", "cooper_rehearsal-s2")
SOURCES = STEP0_ONLY + (
    "b32_g8-s0", "b64-s0", "b64_beta0-s0", "b64_drgrpo-s0", "b64_g16-s0", "b64_long-s0", "b64_lr3e-5-s0",
    "b64_lr3e-6-s0", "b64_t07-s0", "b64_t07-s1", "b64_t07-s2", "b64_unfiltered-s0", "cooper_paper-s0",
    "cooper_paper-s1", "cooper_paper-s2", "cooper_paper_noscale-s0", "cooper_paper_noscale-s1",
    "cooper_paper_noscale-s2", "cooper_recal-s0", "cooper_recal-s1", "cooper_ref_bin-s0", "cooper_ref_bin-s1",
    "cooper_ref_bin-s2", "cooper_rehearsal-s0", "cooper_rehearsal-s1", "i15_filter-s0", "model-s0", "model-s1",
    "model-s2", "model_strong-s0", "model_strong-s1", "model_strong-s2",
)  # fmt: skip
SETS = {
    "builtin:test:300:1,2": "builtin test",
    "svamp_heldout.jsonl": "SVAMP held-out",
    "gsm8k_test.jsonl": "GSM8K test",
}
HAND = HERE / "policy_hand.jsonl"  # {"set", "row", "label", "note"}: rows read by hand (--hand)


def set_of(dataset: str) -> str | None:
    return next((name for key, name in SETS.items() if dataset.endswith(key)), None)


def policy_samples(seed: int = 104) -> list[dict]:
    """The draw described in the module doc (deterministic: files in sorted order, one seeded shuffle per pool)."""
    pools: dict[tuple[str, int], dict[tuple[str, str], dict]] = {}
    for path in sorted(RUNS.glob("*/eval/step-*/samples.jsonl.gz")):
        if path.parts[-4] not in SOURCES or path.parts[-4] in STEP0_ONLY and path.parts[-2] != "step-0":
            continue
        with gzip.open(path, "rt") as f:
            for line in f:
                s = json.loads(line)
                name = set_of(s["dataset"])
                if name is None or s["correct"] != s["correct_lenient"]:
                    continue  # the strict and the lenient rule disagree
                label = int(bool(s["correct"]))
                row = {
                    "question": s["question"],
                    "reference": s["reference"],
                    "completion": s["completion"],
                    "label": label,
                    "answer_type": f"{name}: {'correct' if label else 'wrong'}",
                    "source": str(path.parent.relative_to(ROOT)),
                }
                pools.setdefault((name, label), {}).setdefault((s["question"], s["completion"]), row)
    rows = []
    for key in sorted(pools):
        pool = list(pools[key].values())
        random.Random(f"{seed}:{key}").shuffle(pool)
        rows += pool[:PER_LABEL]
    return rows


def college(n: int, seed: int = 104) -> list[dict]:
    """The embedded policy's solutions of n held-out LaTeX-suite problems, labelled by the strict rule + CAS."""
    suite = [json.loads(x) for x in (ROOT / "experiments/verifyrm/v4/latex_heldout.jsonl").read_text().splitlines()]
    problems = sorted({(r["question"], r["reference"]) for r in suite})
    random.Random(seed).shuffle(problems)
    out = ROOT / "runs" / "verifyrm-policy-college"
    out.mkdir(parents=True, exist_ok=True)
    data, text = (
        out / "problems.jsonl",
        "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in problems[:n]),
    )
    if data.is_file() and data.read_text() != text:  # `cooper eval` would resume another draw's samples
        raise SystemExit(f"{out} holds another draw of problems (not N = {n}): remove it, or ask for its N")
    data.write_text(text)
    cmd = [sys.executable, "-m", "cooper_rl.cli", "eval", "--model", "smollm2-135m-instruct", "--datasets", str(data)]
    cmd += ["--k", "4", "--max_new_tokens", "512", "--batch_size", "32", "--seed", str(seed), "--output_dir", str(out)]
    subprocess.run(cmd, check=True, cwd=ROOT)  # resumes where it stopped
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    rows = []
    for s in samples:
        label = int(bool(s["correct"]))
        kind = (
            "correct" if label else ("wrong, an answer read" if s["extracted"] is not None else "wrong, no answer read")
        )
        rows.append(
            {
                "question": s["question"],
                "reference": s["reference"],
                "completion": s["completion"],
                "label": label,
                "answer_type": f"college-math policy: {kind}",
                "sample": s["sample"],
            }
        )
    return rows


def hand() -> None:
    """The hand labels (policy_hand.jsonl: rows of policy_samples.jsonl read by a person) against the rule's."""
    rows = [json.loads(x) for x in (HERE / "policy_samples.jsonl").read_text().splitlines()]
    marks = [json.loads(x) for x in HAND.read_text().splitlines()]
    agree = [m for m in marks if rows[m["row"]]["label"] == m["label"]]
    print(f"{len(agree)} of {len(marks)} hand labels agree with the rule's")
    for m in marks:
        if m not in agree:
            print(f"  row {m['row']}: rule {rows[m['row']]['label']}, by hand {m['label']}: {m['note']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--college", type=int, default=0, help="Also generate and label N college-math problems.")
    ap.add_argument("--hand", action="store_true", help="Compare the hand spot-check with the labels, only.")
    args = ap.parse_args()
    if args.hand:
        return hand()
    outputs = {"policy_samples.jsonl": policy_samples()}
    if args.college:
        outputs["policy_college.jsonl"] = college(args.college)
    for name, rows in outputs.items():
        (HERE / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{HERE / name}: {len(rows)} rows, {sum(r['label'] for r in rows)} correct")


if __name__ == "__main__":
    main()
