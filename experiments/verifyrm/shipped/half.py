"""A LoRA VerifyRM's adapter and score head stored in fp16: half the file, for an adapter whose fp32 file is above the
package's 25 MB (rank 32: 39 MB; predictions.md, "Rank 32"). Loading casts the weights back to the fp32 model's
(PEFT copies them into its fp32 parameters), so the RM computes in fp32 from fp16-rounded weights; how much a score
moves is measured on the check set, and the rounded RM is what gets evaluated and shipped.

  python experiments/verifyrm/shipped/half.py --rm runs/verifyrm-r8/r32-s0 --out runs/verifyrm-r8/r32-s0-fp16
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parents[3]
CHECK = ROOT / "tests" / "data" / "verifyrm_check.jsonl"  # the shipped RM's check set (check_set.py)
ADAPTER = "adapter_model.safetensors"


def half(src: Path, out: Path) -> dict:
    """Copy the RM dir `src` to `out` with its adapter file's floating tensors in fp16 (the rest as is); the sizes."""
    meta = json.loads((src / "cooper_rm.json").read_text())
    if not meta.get("adapter"):
        raise SystemExit(f"{src} is not a LoRA RM (no 'adapter' in cooper_rm.json)")
    out.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.name != ADAPTER:
            shutil.copyfile(f, out / f.name)
    tensors = load_file(src / ADAPTER)
    save_file({k: v.half() if v.is_floating_point() else v for k, v in tensors.items()}, out / ADAPTER)
    return {"fp32_bytes": (src / ADAPTER).stat().st_size, "fp16_bytes": (out / ADAPTER).stat().st_size}


def max_score_change(src: Path, out: Path, rows: list[dict]) -> float:
    """The largest |score| difference between the RM in `src` and its fp16 copy in `out` over `rows`."""
    from cooper_rl.cooper.reward_model import VerifyRM

    cols = [[r[k] for r in rows] for k in ("question", "reference", "completion")]
    a, b = (VerifyRM.from_pretrained(str(d), device="cpu").score(*cols) for d in (src, out))
    return max(abs(x - y) for x, y in zip(a, b))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rm", required=True, help="A LoRA RM dir (train-rm --lora_rank).")
    ap.add_argument("--out", required=True, help="Where its fp16 copy goes.")
    ap.add_argument("--check", type=int, default=400, help="Rows of the check set to compare scores on (0: none).")
    args = ap.parse_args()
    src, out = Path(args.rm), Path(args.out)
    sizes = half(src, out)
    report = sizes
    if args.check:
        rows = [json.loads(line) for line in CHECK.open()][: args.check]
        report |= {"check_rows": len(rows), "max_score_change": max_score_change(src, out, rows)}
    (out / "half.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"[half] {out}: {json.dumps(report)}")


if __name__ == "__main__":
    main()
