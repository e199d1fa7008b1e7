"""Does a VerifyRM accept a final answer that is a prefix of the reference? Issue 15's `model_strong` policy found
that the rebuilt strong RM pays ~1.0 for answers like 2 for 20 or 8 for 828 (experiments/reward_hacking/README.md); the robustness suite
has no such category (its near misses are N +- 1 or +- 10 %). This writes a probe set from the suite's correct
`fmt:boxed` and `fmt:hash` rows (GSM8K test 101-200: evaluation data, never trained on) with integer references of
2+ digits, their final answer replaced (the reasoning above it untouched, as in trap:echo_reference) by:

    probe:prefix            the reference without its last digit (400 for 4000, 2 for 20)
    probe:first_digit       its first digit alone (references of 3+ digits: 8 for 828)
    probe:last_digit        same length, the last digit changed (4001 for 4000): a wrong answer sharing the prefix
    probe:first_digit_changed  same length, the first digit changed (5000 for 4000)
    probe:correct           the row as it is (label 1)

Score it with `cooper eval-rm` (errors_by_type = the share of each kind the RM gets wrong; for the wrong kinds, the
share it accepts):

    python experiments/verifyrm/prefix_probe.py [experiments/verifyrm/v3/robustness.jsonl] [OUT.jsonl]
    cooper eval-rm --rm runs/verifyrm-v3/smollm2-s0 --data experiments/verifyrm/v3/prefix_probe.jsonl \\
        --output experiments/verifyrm/results/v3/eval_prefix_probe_smollm2_s0_rebuilt.json
"""

import json
import re
import sys
from pathlib import Path

from cooper_rl.cooper.negatives import prefix_values
from cooper_rl.io import write_jsonl


def variants(reference: str) -> dict[str, str]:
    """Wrong final answers for an integer reference of 2+ digits, by probe kind (module docstring)."""
    prefixes = prefix_values(reference)  # longest first: what Cooper's `prefix` negatives answer
    out = {
        "probe:prefix": prefixes[0],
        "probe:last_digit": reference[:-1] + str((int(reference[-1]) + 1) % 10),
        "probe:first_digit_changed": str(int(reference[0]) % 9 + 1) + reference[1:],
    }
    if len(prefixes) >= 2:
        out["probe:first_digit"] = prefixes[-1]
    return out


def with_final_answer(completion: str, reference: str, answer: str) -> str | None:
    """The completion with its last occurrence of the reference (the final answer) replaced by answer."""
    hits = list(re.finditer(rf"(?<![\d.,]){re.escape(reference)}(?!\d|[.,]\d)", completion))
    if not hits:
        return None
    m = hits[-1]
    return completion[: m.start()] + answer + completion[m.end() :]


def main() -> None:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "experiments/verifyrm/v3/robustness.jsonl")
    dst = Path(sys.argv[2] if len(sys.argv) > 2 else "experiments/verifyrm/v3/prefix_probe.jsonl")
    rows = []
    for line_no, line in enumerate(src.open(), 1):
        r = json.loads(line)
        ref = r["reference"]
        if r["answer_type"] not in ("fmt:boxed", "fmt:hash") or not re.fullmatch(r"[1-9]\d+", ref):
            continue
        base = {k: r[k] for k in ("question", "reference", "problem_id")} | {"source": f"{src}:{line_no}"}
        rows.append(base | {"completion": r["completion"], "label": 1, "answer_type": "probe:correct"})
        for kind, answer in variants(ref).items():
            text = with_final_answer(r["completion"], ref, answer)
            if text is not None:
                rows.append(base | {"completion": text, "label": 0, "answer_type": kind})
    write_jsonl(dst, rows)
    counts = {k: sum(r["answer_type"] == k for r in rows) for k in sorted({r["answer_type"] for r in rows})}
    print(f"{len(rows)} rows -> {dst}: {counts}")


if __name__ == "__main__":
    main()
