"""Checks of the shipped VerifyRM on text outside its suites' templates (issue 104 §2), built from what the project has:

- svamp_cots.jsonl: real worked solutions the project's models did not write: SVAMP's 10 solutions per problem of its
  132 held-out problems (rows 301-432 of ../shared/data/svamp/train.jsonl, never trained on: prepare.py), labelled 1,
  and each one with its final result replaced consistently (cooper.negatives.corrupt_solution), labelled 0;
- long_check.jsonl: long worked solutions (longform.py's `check` phrase bank, which shares no sentence with the one
  round 8 would train on) around the held-out LaTeX suite's and the robustness suite's rows, one per problem and label:
  competition-style length, LaTeX, intermediate values (right or wrong) before the final answer. Synthetic: a
  stand-in for other models' long chain-of-thought, which the project does not have.

  python experiments/verifyrm/shipped/outside_checks.py     # deterministic; writes both files beside this script
"""

import json
import random
import subprocess
import sys
from pathlib import Path

from cooper_rl.cooper.negatives import corrupt_solution
from cooper_rl.data import load_problems

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
from longform import make_long  # noqa: E402

SHARED = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT.parent / "shared" / "data")


def svamp_cots() -> list[dict]:
    """The held-out SVAMP problems' worked solutions (label 1) and their corruptions (label 0)."""
    path = ROOT / "experiments/verifyrm/data/svamp_heldout.jsonl"  # gitignored: prepare.py derives it in seconds
    if not path.is_file():
        subprocess.run([sys.executable, str(ROOT / "experiments/verifyrm/prepare.py"), str(SHARED)], check=True)
    held_out = {p.question for p in load_problems(str(path)).problems}
    rng = random.Random(104)
    rows = []
    for line in (SHARED / "svamp" / "train.jsonl").read_text().splitlines():
        raw = json.loads(line)
        if raw["question"] not in held_out:
            continue
        ref = raw["answer"].split("####")[-1].strip()
        for i, cot in enumerate(raw["cots"]):
            base = {"question": raw["question"], "reference": ref, "source": "svamp_heldout", "sample": i}
            rows.append({**base, "completion": cot, "label": 1, "answer_type": "svamp_cot"})
            wrong = corrupt_solution(cot, ref, rng)
            if wrong is not None:
                rows.append({**base, "completion": wrong, "label": 0, "answer_type": "svamp_cot_corrupted"})
    return rows


def long_check() -> list[dict]:
    """One long version per problem and label of the held-out LaTeX suite's and the robustness suite's rows."""
    rows = []
    for path in ("experiments/verifyrm/v4/latex_heldout.jsonl", "experiments/verifyrm/v3/robustness.jsonl"):
        rows += [json.loads(x) for x in (ROOT / path).read_text().splitlines()]
    return make_long(rows, bank="check", per_problem=1, seed=104)


if __name__ == "__main__":
    for name, rows in (("svamp_cots.jsonl", svamp_cots()), ("long_check.jsonl", long_check())):
        (HERE / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{HERE / name}: {len(rows)} rows, {sum(r['label'] for r in rows)} correct")
