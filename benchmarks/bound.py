"""The machine's physical bounds for the policy's two phases, and how close the policy gets to them.

  python benchmarks/bound.py [--batches 8 16 32 64 128] [--new_tokens 128] [--repeats 3]

- memory bandwidth: STREAM-like copy of a 512 MiB fp32 tensor, (bytes read + bytes written) / s;
- matmul peak: 2048^3 matmuls in fp32 and in bf16 (AMX on this CPU), GFLOP/s;
- decode bound: a decode step must read every weight once (the tied embedding as the LM head) and the KV
  cache of the context so far, and do ~2 FLOP per weight per sequence; its time is at least
  max(bytes / bandwidth, flops / fp32 peak), so tokens/s <= batch / that. Summed over the steps of one
  generate call (context grows from the prompt to prompt + new tokens);
- decode measured: HF generate (sampling at T=1, top-p 1, every sequence forced to --new_tokens tokens so
  all batch sizes do the same work per sequence), tokens/s per batch size, batch sizes alternated;
- policy update: one forward + backward of B x S tokens, fp32 and bf16 autocast, vs 6 FLOP per weight per
  token at the matching peak.

Writes benchmarks/results/bound.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402


def bandwidth_gbs(repeats: int) -> float:
    """Median copy bandwidth, GB/s counting bytes read and written."""
    import torch

    src = torch.ones(128 * 2**20)  # 512 MiB of fp32
    dst = torch.empty_like(src)
    dst.copy_(src)
    rates = []
    for _ in range(repeats):
        t = time.perf_counter()
        dst.copy_(src)
        rates.append(2 * src.numel() * 4 / (time.perf_counter() - t) / 1e9)
    return median(rates)


def matmul_gflops(dtype, repeats: int, n: int = 2048) -> float:
    """Median GFLOP/s of an n^3 matmul in `dtype`."""
    import torch

    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    rates = []
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        rates.append(2 * n**3 / (time.perf_counter() - t) / 1e9)
    return median(rates)


def model_shape(model) -> dict:
    """Bytes of all weights, FLOP-carrying weights (non-embedding + LM head) and KV bytes per token of context."""
    c = model.config
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    emb = model.get_input_embeddings().weight
    n_flop = sum(p.numel() for p in model.parameters()) - emb.numel() + model.get_output_embeddings().weight.numel()
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    kv_per_token = 2 * c.num_hidden_layers * c.num_key_value_heads * head_dim * emb.element_size()
    return {"weight_bytes": weight_bytes, "flop_params": n_flop, "kv_bytes_per_token": kv_per_token}


def decode_bound(shape: dict, batch: int, prompt_len: int, new_tokens: int, bw_gbs: float, peak_gflops: float) -> dict:
    """Lower bound on the time of one generate call of `batch` sequences, as tokens/s, and which limit binds."""
    t = t_mem = t_flop = 0.0
    for step in range(new_tokens):
        ctx = prompt_len + step
        mem = (shape["weight_bytes"] + batch * ctx * shape["kv_bytes_per_token"]) / (bw_gbs * 1e9)
        flop = 2 * shape["flop_params"] * batch / (peak_gflops * 1e9)
        t, t_mem, t_flop = t + max(mem, flop), t_mem + mem, t_flop + flop
    return {
        "tokens_per_s": batch * new_tokens / t,
        "memory_seconds": t_mem,
        "compute_seconds": t_flop,
        "bound_by": "memory" if t_mem >= t_flop else "compute",
    }


def main():
    import torch

    from cooper_rl.generation import build_prompt
    from cooper_rl.models import fast_bf16, load_causal_lm
    from cooper_rl.tasks import generate_problems

    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32, 64, 128])
    ap.add_argument("--new_tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--update_batch", type=int, default=8)
    ap.add_argument("--update_seq", type=int, default=256)
    ap.add_argument("--name", default="bound", help="results/NAME.json (one per kind of machine)")
    args = ap.parse_args()

    bw = bandwidth_gbs(5)
    # emulated bf16 (no AVX512-BF16/AMX) runs at well under 1 GFLOP/s: its 2048^3 matmuls alone would take minutes
    peak = {"fp32": matmul_gflops(torch.float32, 5), "bf16": matmul_gflops(torch.bfloat16, 5) if fast_bf16() else 0.0}
    print(f"bandwidth {bw:.1f} GB/s, matmul peak fp32 {peak['fp32']:.0f} / bf16 {peak['bf16']:.0f} GFLOP/s", flush=True)

    model, tok = load_causal_lm("smollm2-135m-instruct", device="cpu")
    shape = model_shape(model)
    tok.padding_side = "left"
    probs = generate_problems(max(args.batches), split="test", seed=3)
    prompts = [build_prompt(tok, p.question) for p in probs]

    def encode(batch):
        return tok(prompts[:batch], return_tensors="pt", padding=True, add_special_tokens=False)

    def gen(batch) -> float:
        enc = encode(batch)
        t = time.perf_counter()
        with torch.no_grad():
            model.generate(
                **enc,
                do_sample=True,
                temperature=1.0,
                top_p=1.0,
                max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens,
                pad_token_id=tok.pad_token_id,
            )
        return batch * args.new_tokens / (time.perf_counter() - t)

    gen(min(args.batches))  # warm-up
    rates = {b: [] for b in args.batches}
    for r in range(args.repeats):
        for b in args.batches[r % len(args.batches) :] + args.batches[: r % len(args.batches)]:  # rotate the order
            rates[b].append(gen(b))
            print(f"  batch {b}: {rates[b][-1]:.1f} tokens/s", flush=True)
    decode = {}
    for b in args.batches:
        bound = decode_bound(shape, b, int(encode(b)["input_ids"].shape[1]), args.new_tokens, bw, peak["fp32"])
        got = median(rates[b])
        decode[str(b)] = {
            "tokens_per_s": got,
            "bound_tokens_per_s": bound["tokens_per_s"],
            "fraction_of_bound": got / bound["tokens_per_s"],
            "bound_by": bound["bound_by"],
        }

    # policy update: forward + backward of B x S tokens, fp32 and bf16 autocast
    model.train()
    ids = torch.randint(100, len(tok) - 100, (args.update_batch, args.update_seq))

    def update(autocast: bool) -> float:
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - t

    # emulated bf16 (no AVX512-BF16/AMX) runs at a few GFLOP/s: one bf16 update would take most of an hour
    kinds = ["fp32", "bf16"] if fast_bf16() else ["fp32"]
    for k in kinds:
        update(k == "bf16")
    times = {k: [] for k in kinds}
    for _ in range(args.repeats):
        for k in kinds:
            times[k].append(update(k == "bf16"))
    flops = 6 * shape["flop_params"] * args.update_batch * args.update_seq
    policy_update = {
        k: {
            "seconds": median(v),
            "gflops": flops / median(v) / 1e9,
            "fraction_of_peak": flops / median(v) / 1e9 / peak[k],
        }
        for k, v in times.items()
    }

    result = {
        "new_tokens": args.new_tokens,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        "bandwidth_gbs": bw,
        "matmul_peak_gflops": peak,
        "model": shape,
        "decode": decode,
        "policy_update": {"batch": args.update_batch, "seq": args.update_seq, **policy_update},
    }
    print(result)
    write_result(args.name, result)


if __name__ == "__main__":
    main()
