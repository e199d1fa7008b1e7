"""Score the same training rollouts with several reward models: does a Cooper-updated RM still reward the wrong
answers that fooled the frozen one?

usage: python experiments/first_comparison/rescore.py OUT.json ROLLOUTS.jsonl[,MORE.jsonl] NAME=RM_DIR [NAME=RM_DIR ...]
For each RM: on the rule-verified wrong rollouts, the share scored >= 0.5 and the mean score; on the right ones,
the share scored >= 0.5 (a good RM keeps these high); and the wrong rollouts the first RM scored >= 0.5, re-scored.
"""

import json
import os
import sys
from pathlib import Path

import torch

from cooper_rl.cooper.reward_model import VerifyRM
from cooper_rl.io import read_jsonl

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
out, files, rms = sys.argv[1], sys.argv[2].split(","), [a.split("=", 1) for a in sys.argv[3:]]
rows = [r for f in files for r in read_jsonl(Path(f))]
wrong = [r for r in rows if not r["verdict"]]
right = [r for r in rows if r["verdict"]]
result = {"rollouts": len(rows), "wrong": len(wrong), "right": len(right), "files": files, "rms": {}}
fooled_first = None
for name, path in rms:
    rm = VerifyRM.from_pretrained(path, device="cpu")
    sw, sr = (
        rm.score([r["question"] for r in rs], [r["reference"] for r in rs], [r["completion"] for r in rs])
        for rs in (wrong, right)
    )
    if fooled_first is None:  # the first RM's fooled set: its scores are already known
        fooled_first = [i for i, s in enumerate(sw) if s >= 0.5]
    sf = [sw[i] for i in fooled_first]
    result["rms"][name] = {
        "path": path,
        "wrong_scored_ge_0.5": sum(s >= 0.5 for s in sw) / max(1, len(sw)),
        "mean_wrong": sum(sw) / max(1, len(sw)),
        "right_scored_ge_0.5": sum(s >= 0.5 for s in sr) / max(1, len(sr)),
        "mean_right": sum(sr) / max(1, len(sr)),
        f"fooled_{rms[0][0]}_n": len(fooled_first),
        f"fooled_{rms[0][0]}_still_ge_0.5": sum(s >= 0.5 for s in sf),
        f"fooled_{rms[0][0]}_mean": sum(sf) / max(1, len(sf)),
    }
    print(name, json.dumps(result["rms"][name]))
with open(out, "w") as f:
    json.dump(result, f, indent=2)
