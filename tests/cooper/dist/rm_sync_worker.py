"""Run under torchrun (2 ranks, gloo): RM copies start different, get different pairs, must stay identical."""

import json
import os
import sys

import torch
import torch.distributed as dist

from cooper_rl.cooper.reward_model import VerifyRM

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)  # different init on each rank: the broadcast must fix it
rm = VerifyRM.from_pretrained(sys.argv[1], max_length=64, device="cpu")
rm.configure_optimizer(lr=1e-3)
q, r = ["What is 3 + 4?"] * 2, ["7"] * 2
pos = ["3 + 4 = 7. \\boxed{7}", "It is \\boxed{7}"]
neg = ["3 + 4 = 8. \\boxed{8}", "It is \\boxed{9}"]
before = torch.cat([p.detach().flatten() for p in rm.model.parameters()]).clone()
for step in range(3):
    # rank 1 has no valid pair at step 0, rank 0 none at step 1; both have pairs at step 2
    valid = [[True, True], [False, False]][rank] if step == 0 else [[False, False], [True, False]][rank] if step == 1 else [True, True]
    rm.pairwise_update(q, r, pos, neg, valid=valid)
flat = torch.cat([p.detach().flatten() for p in rm.model.parameters()])
gathered = [torch.zeros_like(flat) for _ in range(2)]
dist.all_gather(gathered, flat)
if rank == 0:
    out = {"max_diff": float((gathered[0] - gathered[1]).abs().max()), "moved": float((flat - before).abs().max())}
    with open(os.environ["RESULT_FILE"], "w") as f:
        json.dump(out, f)
dist.barrier()  # both ranks are done with gloo
# Leave without C++ teardown: gloo's worker threads, destroyed at interpreter exit, aborted rank 1 now and then
# ("terminate called without an active exception", SIGABRT) after all the work was done and written.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
