"""Generation on CPU: HF generate with the default dynamic KV cache vs a static cache (the biggest waste the
RL-step profile shows: generation reaches ~10% of the matmul peak, the policy update ~50%).

  python benchmarks/generation.py [--batch 8] [--new_tokens 128] [--repeats 3]

The policy (embedded SmolLM2-135M) generates --new_tokens tokens (EOS ignored, so every configuration does the
same work) for `batch` copies of a built-in prompt, greedy, in each configuration alternately; tokens/s
medians and the median per-repeat ratio are reported; outputs are checked to be identical.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402


def main():
    import torch

    from cooper_rl.generation import build_prompt
    from cooper_rl.models import load_causal_lm
    from cooper_rl.tasks import generate_problems

    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--new_tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--configs", nargs="+", default=["dynamic", "static"])
    args = ap.parse_args()
    model, tok = load_causal_lm("smollm2-135m-instruct", device="cpu")
    tok.padding_side = "left"
    probs = generate_problems(args.batch, split="test", seed=3)
    enc = tok(
        [build_prompt(tok, p.question) for p in probs], return_tensors="pt", padding=True, add_special_tokens=False
    )

    def gen(kind):
        kw = {} if kind == "dynamic" else {"cache_implementation": kind}
        with torch.no_grad():
            return model.generate(
                **enc,
                do_sample=False,
                max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens,
                pad_token_id=tok.pad_token_id,
                **kw,
            )

    outs = {k: gen(k) for k in args.configs}  # warm-up (and the static cache's allocation)
    rate = {k: [] for k in args.configs}
    for _ in range(args.repeats):
        for k in args.configs:
            t = time.perf_counter()
            outs[k] = gen(k)
            rate[k].append(args.batch * args.new_tokens / (time.perf_counter() - t))
    base = args.configs[0]
    result = {
        "batch": args.batch,
        "new_tokens": args.new_tokens,
        "repeats": args.repeats,
        "prompt_tokens": int(enc["input_ids"].shape[1]),
        "torch_threads": torch.get_num_threads(),
        "tokens_per_s": {k: median(v) for k, v in rate.items()},
        "ratio_vs_" + base: {k: median([b / a for a, b in zip(rate[base], rate[k])]) for k in args.configs},
        "identical_outputs": {k: bool(torch.equal(outs[k], outs[base])) for k in args.configs},
    }
    print(result)
    write_result("generation", result)


if __name__ == "__main__":
    main()
