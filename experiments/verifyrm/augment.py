"""Round-2 VerifyRM data: many correct worked solutions, each with hard negatives, in varied answer formats.

Round 1 (docs/VERIFYRM.md) failed because the RM could separate its classes by style (`#### N` => correct).
Here every positive has negatives that share its exact text style, so only comparing the completion's final
answer with the reference separates the classes:

  positive            a correct worked solution, restyled          (label 1 by the rule verifier)
  corrupted           the same restyled text with its final result changed consistently      (label 0)
  wrong reference     the positive completion paired with a wrong reference answer           (label 0)

Restyles (same for a positive and its corruption): GSM8K `#### N`, `The answer is N.`, `\\boxed{N}`, or the
solution's last sentence with no marker; calculator annotations <<...>> kept or dropped at random.
Sources: SVAMP-train `cots` of questions 1-300 (all 10 per problem) and built-in train solutions. Never
GSM8K, never SVAMP questions 301-432. Output is collect-format (question, reference, completion, source);
labels come from `cooper label` like every other row.

usage: python experiments/verifyrm/augment.py [SHARED_DATA_DIR] [N_BUILTIN]
"""

import json
import random
import sys
from pathlib import Path

from cooper_rl.data import load_problems
from cooper_rl.io import write_jsonl
from cooper_rl.rm.data import verification_rows
from cooper_rl.tasks import generate_problems

SHARED = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
N_BUILTIN = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
OUT = Path(__file__).parent / "data"
rng = random.Random(1)


def emit(rows, question, reference, solution, source, pid):
    """Append the hard-negative rows of one correct solution (rm.data.verification_rows)."""
    rows.extend({**r, "problem_id": pid} for r in verification_rows(question, reference, solution, rng, source=source))


rows: list[dict] = []
raw = {json.loads(line)["question"]: json.loads(line) for line in open(SHARED / "svamp" / "train.jsonl")}
svamp = load_problems(str(SHARED / "svamp" / "train.jsonl")).problems[:300]
for p in svamp:
    for cot in raw[p.question]["cots"]:
        emit(rows, p.question, p.answer, cot, "svamp-cots", p.id)
for p in generate_problems(N_BUILTIN, split="train", seed=7):
    emit(rows, p.question, p.answer, p.solution, "builtin-solution", p.id)
rng.shuffle(rows)
write_jsonl(OUT / "augmented.jsonl", rows)
kinds = {}
for r in rows:
    k = r["source"].split(":")[0]
    kinds[k] = kinds.get(k, 0) + 1
print(json.dumps({"rows": len(rows), "by_source": kinds}))
