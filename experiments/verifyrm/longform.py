"""Long-form VerifyRM rows (issue 104 §2): the short templated completions of `cooper rm-data` rewritten as long worked
solutions, the final answer (and so the label) unchanged.

The recipe's rows end a one-line preamble with the answer ("We work through the problem step by step.\\n\\boxed{2}");
the solutions other models write are long: several paragraphs or numbered steps, LaTeX restating the problem, several
intermediate results (some of them other values of the answer, a first attempt corrected later), the final answer in
`\\boxed{}` near the end. Here each row's preamble is replaced by such a body (built from the question's own math, its
numbers and the other answer forms of the same problem: intermediate values that are right or wrong), and the row's
own answer part ends it: a long row is labelled as its short row (its final answer decides), and a wrong final
answer may now follow the right value met on the way.

Two phrase banks with no sentence in common: `train` (the rows an RM trains on) and `check` (a held-out check of the
same kind, built on held-out problems: the LaTeX suite and the robustness suite), so a check score is not a score on
the training templates.

  python experiments/verifyrm/longform.py --rows TRAIN.jsonl --out LONG.jsonl [--bank train] [--per_problem 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import defaultdict
from pathlib import Path

BANKS = {
    "train": {
        "intro": [
            "Let's solve this step by step.",
            "We need to work this out carefully.",
            "To answer this, let me break the problem into parts.",
            "I'll go through the solution one step at a time.",
        ],
        "restate": ["We are asked: {task}", "The problem: {task}", "Our goal here. {task}"],
        "step": [
            "First, consider {m}.",
            "Next, we rewrite {m}.",
            "Looking at {m}, we can simplify it.",
            "Now substitute into {m}.",
            "From the given information, {m}.",
            "Expanding {m} term by term gives an intermediate expression.",
        ],
        "attempt": [
            "A first attempt gives {v}, but this does not check out, so let's redo this step.",
            "At this point one might write {v}; we continue simplifying.",
            "An intermediate result is {v}.",
        ],
        "numbers": ["The numbers involved are {ns}.", "We keep track of the quantities {ns}."],
        "close": ["", "", "This completes the solution.", "Double-checking the steps, everything is consistent."],
        "step_label": ["**Step {k}.** ", "{k}. ", "Step {k}: ", ""],
    },
    "check": {
        "intro": [
            "Here is a worked solution.",
            "Let us think about this problem.",
            "We approach the problem methodically.",
        ],
        "restate": ["Task: {task}", "What we want. {task}"],
        "step": [
            "We begin with {m}.",
            "Then we manipulate {m} algebraically.",
            "Applying the standard rules to {m}, we proceed.",
            "Consider the expression {m} again.",
        ],
        "attempt": [
            "Suppose the answer were {v}; checking it against the conditions shows a mistake, so we go on.",
            "Along the way we obtain {v}.",
        ],
        "numbers": ["The given values are {ns}."],
        "close": ["", "That is the result.", "We can verify this by substitution."],
        "step_label": ["### Step {k}\n", "({k}) ", ""],
    },
}
MATH = re.compile(r"\$[^$]{1,80}\$")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
ANNOTATION = re.compile(r"<<[^>]*>>")


def task_of(question: str) -> str:
    """The question's first sentence (at most 200 characters)."""
    return re.split(r"(?<=[.?!])\s", question.strip(), maxsplit=1)[0][:200]


def answer_part(completion: str) -> str:
    """The short row's answer: its lines after the generic first one (the whole text if it has one line)."""
    lines = completion.strip().split("\n")
    if len(lines) > 1:
        return "\n".join(lines[1:])
    # one line: 'Starting from $x$ and simplifying step by step, we obtain \\boxed{y}' -> the clause with the answer
    head, sep, tail = completion.partition(", ")
    return (tail[:1].upper() + tail[1:]) if sep and ("\\boxed" in tail or "$" in tail) else completion


def long_latex(row: dict, siblings: list[str], bank: dict, rng: random.Random) -> str:
    """A long solution ending in the row's own answer part: intro, the task, 2-5 steps on the question's math and
    numbers, maybe an intermediate value (another form of this problem's answer, right or wrong), then the answer."""
    maths = MATH.findall(row["question"]) or [f"${row['reference']}$"]
    numbers = NUMBER.findall(row["question"])
    label_style = rng.choice(bank["step_label"])
    steps = []
    for _ in range(rng.randint(2, 5)):
        m = rng.choice(maths)
        step = rng.choice(bank["step"]).format(m=m)
        if rng.random() < 0.3:  # a display line, as long solutions write them
            step += "\n\n$$" + m.strip("$") + "$$"
        steps.append(step)
    if numbers and rng.random() < 0.5:
        steps.insert(rng.randint(0, len(steps)), rng.choice(bank["numbers"]).format(ns=", ".join(numbers[:5])))
    if siblings and rng.random() < 0.6:  # an intermediate value met on the way: the final answer decides
        steps.insert(rng.randint(1, len(steps)), rng.choice(bank["attempt"]).format(v=f"${rng.choice(siblings)}$"))
    body = [label_style.format(k=k + 1) + s for k, s in enumerate(steps)]
    parts = [rng.choice(bank["intro"]), rng.choice(bank["restate"]).format(task=task_of(row["question"])), *body]
    parts += [answer_part(row["completion"]), rng.choice(bank["close"])]
    return "\n\n".join(p for p in parts if p)


def long_worked(row: dict, bank: dict, rng: random.Random) -> str:
    """A GSM8K-style worked solution as long chat models write it: an intro, the task, the solution's lines as
    numbered steps (their calculator annotations dropped), the row's last line (its answer) unchanged."""
    lines = [x for x in row["completion"].strip().split("\n") if x.strip()]
    if len(lines) < 2:
        return ""
    label_style = rng.choice(bank["step_label"])
    steps = [label_style.format(k=k + 1) + ANNOTATION.sub("", x) for k, x in enumerate(lines[:-1])]
    parts = [rng.choice(bank["intro"]), rng.choice(bank["restate"]).format(task=task_of(row["question"])), *steps]
    parts += [lines[-1], rng.choice(bank["close"])]
    return "\n\n".join(p for p in parts if p)


def answer_value(completion: str) -> str | None:
    """The answer a short LaTeX row states last (inside \\boxed{} or $...$), for use as another row's intermediate."""
    boxed = re.findall(r"\\boxed\{(.+)\}", completion)
    if boxed:
        return boxed[-1]
    maths = MATH.findall(completion)
    return maths[-1].strip("$") if maths else None


def make_long(rows: list[dict], bank: str = "train", per_problem: int = 2, seed: int = 0) -> list[dict]:
    """Long versions of up to ``per_problem`` rows per (problem, label) of ``rows`` (LaTeX rows and GSM8K-style worked
    solutions; real policy samples are left as they are), each marked answer_type 'long:<its type>'."""
    rng = random.Random(seed)
    phrases = BANKS[bank]
    by_problem = defaultdict(list)
    for r in rows:
        by_problem[(r.get("source"), r.get("problem_id"), r["question"])].append(r)
    out = []
    for group in by_problem.values():
        values = [
            v for v in (answer_value(r["completion"]) for r in group if r["answer_type"].startswith("latex")) if v
        ]
        for label in (0, 1):
            candidates = [r for r in group if r["label"] == label and not r["answer_type"].startswith("sample")]
            for r in rng.sample(candidates, min(per_problem, len(candidates))):
                if r["answer_type"].startswith("latex"):
                    own = answer_value(r["completion"])
                    text = long_latex(r, [v for v in values if v != own], phrases, rng)
                else:
                    text = long_worked(r, phrases, rng)
                if text:
                    out.append({**r, "completion": text, "answer_type": f"long:{r['answer_type']}", "sample": "long"})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", nargs="+", required=True, help="Labelled rm-data rows (.jsonl).")
    ap.add_argument("--out", required=True, help="Where the long rows go (.jsonl).")
    ap.add_argument("--bank", default="train", choices=list(BANKS), help="Phrase bank: train, or check (held out).")
    ap.add_argument("--per_problem", type=int, default=2, help="Long rows per problem and label.")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = [json.loads(x) for f in args.rows for x in Path(f).read_text().splitlines() if x.strip()]
    out = make_long(rows, args.bank, args.per_problem, args.seed)
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in out))
    print(f"[longform] {len(out)} long rows ({sum(r['label'] for r in out)} correct) from {len(rows)} -> {args.out}")


if __name__ == "__main__":
    main()
