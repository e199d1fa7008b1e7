"""Build the offline VerifyRM data that needs no model: problem splits, worked solutions, corrupted ones.

Writes into experiments/verifyrm/data/:
  svamp_rm_train.jsonl   SVAMP train rows 1-300 (questions the RM may train on)
  svamp_heldout.jsonl    SVAMP train rows 301-432 (never used for the RM or RL training; evaluation only)
  builtin_train.jsonl    built-in train problems (seed 0)
  solutions.jsonl        collect-format rows: correct worked solutions (SVAMP `cots`, built-in solutions)
                         and their corruptions (final answer and the result it comes from changed)
  gsm8k_heldout_rm.jsonl held-out labelled set from GSM8K test questions (not used in training), with
                         answer_type: gold_solution / unmarked_gold (answer stated without ####) /
                         corrupted (label 0); policy samples are added by build_heldout.py
"""

import json
import random
import re
import sys
from pathlib import Path

from cooper_rl.cooper.negatives import corrupt_solution
from cooper_rl.data import load_problems, save_problems
from cooper_rl.io import write_jsonl

SHARED = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
OUT = Path(__file__).parent / "data"
OUT.mkdir(parents=True, exist_ok=True)
N_BUILTIN = 48
rng = random.Random(0)


write = write_jsonl


svamp = load_problems(str(SHARED / "svamp" / "train.jsonl")).problems
save_problems(svamp[:300], OUT / "svamp_rm_train.jsonl")
save_problems(svamp[300:], OUT / "svamp_heldout.jsonl")
builtin = load_problems(f"builtin:train:{N_BUILTIN}").problems
save_problems(builtin, OUT / "builtin_train.jsonl")

raw = {json.loads(line)["question"]: json.loads(line) for line in open(SHARED / "svamp" / "train.jsonl")}
rows = []
for p in svamp[:300]:
    for i, cot in enumerate(raw[p.question]["cots"][:3]):  # 3 of the 10 worked solutions per problem
        rows.append(
            {
                "question": p.question,
                "reference": p.answer,
                "completion": cot,
                "source": "svamp-cots",
                "problem_id": p.id,
                "sample": i,
            }
        )
        neg = corrupt_solution(cot, p.answer, rng)
        if neg is not None:
            rows.append(
                {
                    "question": p.question,
                    "reference": p.answer,
                    "completion": neg,
                    "source": "svamp-cots-corrupted",
                    "problem_id": p.id,
                    "sample": i,
                }
            )
for p in builtin:
    rows.append(
        {
            "question": p.question,
            "reference": p.answer,
            "completion": p.solution,
            "source": "builtin-solution",
            "problem_id": p.id,
            "sample": 0,
        }
    )
    neg = corrupt_solution(p.solution, p.answer, rng)
    if neg is not None:
        rows.append(
            {
                "question": p.question,
                "reference": p.answer,
                "completion": neg,
                "source": "builtin-solution-corrupted",
                "problem_id": p.id,
                "sample": 0,
            }
        )
write(OUT / "solutions.jsonl", rows)

# Held-out labelled set: GSM8K test questions 101-300 (the first 100 are kept for policy evaluation).
gsm = load_problems(str(SHARED / "gsm8k" / "test.jsonl")).problems[100:300]
held = []
for p in gsm:
    sol = p.solution
    held.append(
        {"question": p.question, "reference": p.answer, "completion": sol, "label": 1, "answer_type": "gold_solution"}
    )
    body = sol.rsplit("####", 1)[0].rstrip()
    body = re.sub(r"<<[^>]*>>", "", body)  # also drop GSM8K calculator annotations
    held.append(
        {
            "question": p.question,
            "reference": p.answer,
            "completion": f"{body}\nSo the result is {p.answer}.",
            "label": 1,
            "answer_type": "unmarked_gold",
        }
    )
    neg = corrupt_solution(sol, p.answer, rng)
    if neg is not None:
        held.append(
            {"question": p.question, "reference": p.answer, "completion": neg, "label": 0, "answer_type": "corrupted"}
        )
# the committed held-out set is evaluation data of committed results: never rewritten (corrupt_solution has changed
# since it was made, so a rebuild differs); delete it by hand to rebuild
if not (OUT / "gsm8k_heldout_rm.jsonl").is_file():
    write(OUT / "gsm8k_heldout_rm.jsonl", held)
print(
    json.dumps(
        {
            "svamp_rm_train": 300,
            "svamp_heldout": len(svamp) - 300,
            "builtin_train": len(builtin),
            "solutions_rows": len(rows),
            "gsm8k_heldout_rows": len(held),
        }
    )
)
