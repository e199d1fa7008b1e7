"""Print the rows of the v3 held-out set that were checked by hand (issue 14): every real completion the lenient
rule labels correct, and 50 of those it labels wrong (a fixed random draw). Verdicts and the labels changed are in
experiments/verifyrm/v3/spotcheck.md; changed labels live in v3/heldout_hand_labels.jsonl (rm-data
--label_overrides).

usage: python experiments/verifyrm/spotcheck.py [experiments/verifyrm/v3/heldout.jsonl]
"""

import json
import random
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "experiments/verifyrm/v3/heldout.jsonl"
rows = [json.loads(line) for line in open(path)]
samples = [r for r in rows if r["label_source"] != "construction"]
positive = [r for r in samples if r.get("rule_label", r["label"]) == 1]
negative = [r for r in samples if r.get("rule_label", r["label"]) == 0]
random.Random(14).shuffle(negative)
for r in positive + negative[:50]:
    rule = r.get("rule_label", r["label"])
    print(f"===== {r['problem_id']} | {r['source']} | sample {r['sample']} | ref {r['reference']} | rule {rule}")
    print(r["completion"][-400:].replace("\n", " | "))
