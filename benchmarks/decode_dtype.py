"""Rollout number format on CPU: HF generate in fp32, under bf16 autocast (fp32 weights), and with bf16 weights;
and how far bf16 autocast and bf16 weights move the policy's next-token distribution.

  python benchmarks/decode_dtype.py [--batches 8 32 64 128] [--new_tokens 64] [--repeats 2] [--name decode_dtype]

Sampling at T=1, every sequence forced to --new_tokens tokens; formats alternated inside each repeat (order
rotated), medians reported. Distribution: total variation between the fp32 next-token distribution and the bf16
autocast one / the bf16-weights one at every position of two worked solutions, next to the TV of a temperature change (1.0 -> 1.1) for
scale. Writes benchmarks/results/decode_dtype.json.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402

SOLUTIONS = (
    ("What is 3 + 4?", "3 + 4 = 7. The answer is \\boxed{7}."),
    ("Tom has 5 apples and eats 2. How many are left?", "5 - 2 = 3, so he has \\boxed{3} apples left."),
)


def main():
    import torch

    from cooper_rl.generation import build_prompt
    from cooper_rl.models import load_causal_lm
    from cooper_rl.tasks import generate_problems

    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 32, 64, 128])
    ap.add_argument("--new_tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--name", default="decode_dtype", help="results/NAME.json (one per machine kind)")
    args = ap.parse_args()
    model, tok = load_causal_lm("smollm2-135m-instruct", device="cpu")
    bf16_model = copy.deepcopy(model).to(torch.bfloat16)
    tok.padding_side = "left"
    prompts = [build_prompt(tok, p.question) for p in generate_problems(max(args.batches), split="test", seed=3)]
    formats = ("fp32", "bf16_autocast", "bf16_weights")

    def gen(batch: int, fmt: str, n: int) -> float:
        enc = tok(prompts[:batch], return_tensors="pt", padding=True, add_special_tokens=False)
        m = bf16_model if fmt == "bf16_weights" else model
        t = time.perf_counter()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=fmt == "bf16_autocast"):
            m.generate(
                **enc,
                do_sample=True,
                temperature=1.0,
                top_p=1.0,
                max_new_tokens=n,
                min_new_tokens=n,
                pad_token_id=tok.pad_token_id,
            )
        return batch * n / (time.perf_counter() - t)

    for f in formats:  # warm-up
        gen(8, f, 8)
    rates = {b: {f: [] for f in formats} for b in args.batches}
    for r in range(args.repeats):
        for b in args.batches:
            for f in formats[r % 3 :] + formats[: r % 3]:
                rates[b][f].append(gen(b, f, args.new_tokens))
                print(f"batch {b} {f}: {rates[b][f][-1]:.1f} tokens/s", flush=True)

    tv_bf16, tv_bf16w, tv_temp = [], [], []
    with torch.no_grad():
        for q, a in SOLUTIONS:
            ids = tok(build_prompt(tok, q) + a, return_tensors="pt", add_special_tokens=False)["input_ids"]
            logits = model(input_ids=ids).logits.float()
            p32, p_t = torch.softmax(logits, -1), torch.softmax(logits / 1.1, -1)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                p16 = torch.softmax(model(input_ids=ids).logits.float(), -1)
            p16w = torch.softmax(bf16_model(input_ids=ids).logits.float(), -1)
            tv_bf16 += (0.5 * (p32 - p16).abs().sum(-1)).flatten().tolist()
            tv_bf16w += (0.5 * (p32 - p16w).abs().sum(-1)).flatten().tolist()
            tv_temp += (0.5 * (p32 - p_t).abs().sum(-1)).flatten().tolist()
    result = {
        "new_tokens": args.new_tokens,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        "tokens_per_s": {str(b): {f: median(v) for f, v in d.items()} for b, d in rates.items()},
        "tv_bf16_autocast_vs_fp32": {"mean": sum(tv_bf16) / len(tv_bf16), "max": max(tv_bf16), "n": len(tv_bf16)},
        "tv_bf16_weights_vs_fp32": {"mean": sum(tv_bf16w) / len(tv_bf16w), "max": max(tv_bf16w), "n": len(tv_bf16w)},
        "tv_temperature_1.1_vs_1.0": {"mean": sum(tv_temp) / len(tv_temp), "max": max(tv_temp), "n": len(tv_temp)},
    }
    print(result)
    write_result(args.name, result)


if __name__ == "__main__":
    main()
