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
import re
import sys
from pathlib import Path

from cooper_rl.data import load_problems
from cooper_rl.negatives import corrupt_solution, wrong_values
from cooper_rl.tasks import generate_problems

SHARED = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
N_BUILTIN = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
OUT = Path(__file__).parent / "data"
rng = random.Random(1)
STYLES = ("hash", "answer_is", "boxed", "plain")


def restyle(text: str, style: str, drop_calc: bool) -> str | None:
    """`text` (ending in '#### N') rewritten to end in answer style `style`; None if it has no #### line."""
    if "####" not in text:
        return None
    body, ans = text.rsplit("####", 1)
    body, ans = body.rstrip(), ans.strip()
    if drop_calc:
        body = re.sub(r"<<[^>]*>>", "", body)
    if style == "hash":
        return f"{body}\n#### {ans}"
    if style == "answer_is":
        return f"{body}\nThe answer is {ans}."
    if style == "boxed":
        return f"{body}\nThe answer is $\\boxed{{{ans}}}$."
    return body if ans in body[-40:] else f"{body}\nSo the result is {ans}."


def emit(rows, question, reference, solution, source, pid):
    """Append a restyled positive, its corruption and a wrong-reference copy (when each can be made)."""
    style, drop = rng.choice(STYLES), rng.random() < 0.5
    corrupted = corrupt_solution(solution, reference, rng)
    pos = restyle(solution, style, drop)
    if pos is None:
        return
    rows.append({"question": question, "reference": reference, "completion": pos, "source": f"{source}:{style}", "problem_id": pid})
    if corrupted is not None:
        neg = restyle(corrupted, style, drop)
        if neg is not None:
            rows.append({"question": question, "reference": reference, "completion": neg, "source": f"{source}-corrupted:{style}", "problem_id": pid})
    wrong = wrong_values(reference, rng, n=1)
    if wrong and rng.random() < 0.5:
        rows.append({"question": question, "reference": wrong[0], "completion": pos, "source": f"{source}-wrongref:{style}", "problem_id": pid})


rows: list[dict] = []
raw = {json.loads(line)["question"]: json.loads(line) for line in open(SHARED / "svamp" / "train.jsonl")}
svamp = load_problems(str(SHARED / "svamp" / "train.jsonl")).problems[:300]
for p in svamp:
    for cot in raw[p.question]["cots"]:
        emit(rows, p.question, p.answer, cot, "svamp-cots", p.id)
for p in generate_problems(N_BUILTIN, split="train", seed=7):
    emit(rows, p.question, p.answer, p.solution, "builtin-solution", p.id)
rng.shuffle(rows)
tmp = OUT / "augmented.jsonl.tmp"
tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
tmp.replace(OUT / "augmented.jsonl")
kinds = {}
for r in rows:
    k = r["source"].split(":")[0]
    kinds[k] = kinds.get(k, 0) + 1
print(json.dumps({"rows": len(rows), "by_source": kinds}))
