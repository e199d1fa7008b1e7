"""VerifyRM as a LoRA adapter + score head (train-rm --lora_rank, the shipped `verifyrm`): what it trains, saves and
loads, merged or trainable, and the shipped files' checks."""

import json

import pytest
import torch

from cooper_rl.cooper.reward_model import VerifyRM
from cooper_rl.models import ModelNotAvailableError, verifyrm_path
from tiny import save_tiny_llama

Q = ["What is 3 + 4?", "What is 3 + 4?", "What is 10 - 2?"]
R = ["7", "7", "8"]
C = ["3 + 4 = 7. \\boxed{7}", "The answer is 8.", "10 - 2 = 8, so \\boxed{8}"]


@pytest.fixture
def adapter_rm(tmp_path):
    """A trainable LoRA RM over a tiny random Llama, its adapter moved off zero (a fresh one is the identity)."""
    rm = VerifyRM.from_pretrained(save_tiny_llama(tmp_path / "base"), device="cpu", max_length=64)
    rm.add_adapter(rank=4, targets="q_proj,v_proj")
    torch.manual_seed(1)
    with torch.no_grad():
        for n, p in rm.model.named_parameters():
            if "lora_B" in n:
                p.normal_(std=0.5)
    return rm


def test_only_the_adapter_and_score_head_train(adapter_rm):
    trainable = [n for n, p in adapter_rm.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n or ".score." in n for n in trainable)
    assert any(".score." in n for n in trainable)  # the head trains whole (modules_to_save)
    assert adapter_rm.adapter_info()["targets"] == ["q_proj", "v_proj"]
    frozen = {n: p.detach().clone() for n, p in adapter_rm.model.named_parameters() if not p.requires_grad}
    moved = {n: p.detach().clone() for n, p in adapter_rm.model.named_parameters() if p.requires_grad}
    adapter_rm.configure_optimizer(lr=1e-2)
    out = adapter_rm.pairwise_update(Q[:1], R[:1], C[:1], C[1:2])
    assert out["n_valid"] == 1
    params = dict(adapter_rm.model.named_parameters())
    assert all(torch.equal(params[n], v) for n, v in frozen.items())
    assert any(not torch.equal(params[n], v) for n, v in moved.items())


def test_saved_as_adapter_loads_merged_and_trainable_with_the_same_scores(adapter_rm, tmp_path):
    before = adapter_rm.score(Q, R, C)
    adapter_rm.save_pretrained(tmp_path / "rm")
    names = sorted(p.name for p in (tmp_path / "rm").iterdir())
    assert "adapter_model.safetensors" in names and "model.safetensors" not in names
    assert "tokenizer.json" not in names  # the base's tokenizer is read
    meta = json.loads((tmp_path / "rm" / "cooper_rm.json").read_text())
    assert meta["adapter"]["base"] == str(tmp_path / "base") and meta["adapter"]["rank"] == 4
    merged = VerifyRM.from_pretrained(str(tmp_path / "rm"), device="cpu")
    trainable = VerifyRM.from_pretrained(str(tmp_path / "rm"), device="cpu", trainable_adapter=True)
    assert not merged.is_adapter and trainable.is_adapter and merged.max_length == 64
    assert merged.score(Q, R, C) == pytest.approx(before, abs=1e-5)
    assert trainable.score(Q, R, C) == pytest.approx(before, abs=1e-6)
    assert max(abs(a - 0.5) for a in before) > 1e-3  # not a head at zero: the score head was saved and read back


def test_adapter_without_its_base_name_is_refused(adapter_rm, tmp_path):
    adapter_rm.save_pretrained(tmp_path / "rm")
    meta_file = tmp_path / "rm" / "cooper_rm.json"
    meta = json.loads(meta_file.read_text())
    del meta["adapter"]
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="adapter.base"):
        VerifyRM.from_pretrained(str(tmp_path / "rm"), device="cpu")


def _shipped_copy(adapter_rm, tmp_path):
    d = tmp_path / "verifyrm"
    adapter_rm.save_pretrained(d)
    from cooper_rl.io import file_sha256

    names = ("adapter_config.json", "adapter_model.safetensors", "cooper_rm.json")
    (d / "SHA256SUMS").write_text("".join(f"{file_sha256(d / n)}  {n}\n" for n in names))
    return d


def test_shipped_files_are_checked_and_a_bad_one_is_named_with_the_rebuild_command(adapter_rm, tmp_path):
    d = _shipped_copy(adapter_rm, tmp_path)
    assert verifyrm_path(d) == d
    weights = d / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one flipped bit in the last weight
    weights.write_bytes(bytes(data))
    with pytest.raises(ModelNotAvailableError, match=r"adapter_model\.safetensors has sha256 .*shipped/round8\.sh"):
        verifyrm_path(d)
    weights.unlink()
    with pytest.raises(ModelNotAvailableError, match=r"adapter_model\.safetensors is missing.*shipped/round8\.sh"):
        verifyrm_path(d)


def test_an_adapter_stored_in_fp16_loads_into_fp32_with_scores_within_rounding(adapter_rm, tmp_path):
    """experiments/verifyrm/shipped/half.py: the adapter file's tensors in fp16 (about half the bytes); the RM loads
    merged and trainable with fp32 parameters, and its scores move by fp16 rounding only (predictions.md, rank 32)."""
    from tests.experiments import EXPERIMENTS, load_script

    half = load_script("half", EXPERIMENTS / "verifyrm" / "shipped")
    adapter_rm.save_pretrained(tmp_path / "rm")
    sizes = half.half(tmp_path / "rm", tmp_path / "rm16")
    assert sizes["fp16_bytes"] < 0.6 * sizes["fp32_bytes"]
    from safetensors.torch import load_file

    assert {v.dtype for v in load_file(tmp_path / "rm16" / "adapter_model.safetensors").values()} == {torch.float16}
    for trainable in (False, True):
        rm = VerifyRM.from_pretrained(str(tmp_path / "rm16"), device="cpu", trainable_adapter=trainable)
        assert {p.dtype for p in rm.model.parameters()} == {torch.float32}
    rows = [{"question": q, "reference": r, "completion": c} for q, r, c in zip(Q, R, C)]
    change = half.max_score_change(tmp_path / "rm", tmp_path / "rm16", rows)
    spread = max(abs(s - 0.5) for s in adapter_rm.score(Q, R, C))
    assert 0 < change < 0.1 * spread  # rounded, not dropped: a head read back at zero would move them all to 0.5
    fp32, fp16 = (load_file(tmp_path / d / "adapter_model.safetensors") for d in ("rm", "rm16"))
    assert fp32.keys() == fp16.keys() and any("score" in k for k in fp16)  # the head is in the file
    assert all(torch.equal(fp32[k].half(), fp16[k]) for k in fp32)
    with pytest.raises(SystemExit, match="not a LoRA RM"):
        VerifyRM.from_pretrained(save_tiny_llama(tmp_path / "full"), device="cpu").save_pretrained(tmp_path / "full_rm")
        half.half(tmp_path / "full_rm", tmp_path / "x")
