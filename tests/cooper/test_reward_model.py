import copy
import json

import pytest
import torch

import cooper_rl.cooper.reward_model as rmod
from cooper_rl.cooper.reward_model import VerifyRM
from cooper_rl.cooper.rm_inputs import TEMPLATE_VERSION, format_rm_text
from cooper_rl.models import load_tokenizer

LONG_COMPLETION = " ".join(f"step{i % 97}" for i in range(5000)) + " so the final answer is \\boxed{12345}"
REFERENCE = "x = 42 and y = 17"
QUESTION = "Solve the system: x + y = 59 and x - y = 25. What are x and y?"


@pytest.fixture(scope="module")
def rm():
    return VerifyRM.from_pretrained("minilm-l6", device="cpu")


def test_training_and_scoring_use_the_same_ids(rm, monkeypatch):
    from cooper_rl.rm.train import build_rm_dataset

    calls = []
    real = rmod.encode_rm_inputs

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out)
        return out

    monkeypatch.setattr(rmod, "encode_rm_inputs", spy)
    rows = [
        {"question": QUESTION, "reference": REFERENCE, "completion": c, "label": 1}
        for c in ["x=42, y=17", LONG_COMPLETION]
    ]
    train_ids = [ex["input_ids"] for ex in build_rm_dataset(rm, rows)]
    rm.score([r["question"] for r in rows], [r["reference"] for r in rows], [r["completion"] for r in rows])
    assert len(calls) == 2 and calls[0] == calls[1] == train_ids


def test_score_probabilities_order_and_sorting(rm):
    rm = copy.copy(rm)  # same weights, shorter inputs: faster
    rm.max_length = 128
    qs = ["What is 2+3?", QUESTION, "Compute 7*8.", "What is 1/2 + 1/4?"]
    refs = ["5", REFERENCE, "56", "3/4"]
    comps = ["\\boxed{5}", LONG_COMPLETION, "7*8 = 56 " * 20 + "\\boxed{56}", "\\boxed{0.75}"]
    sorted_p = rm.score(qs, refs, comps, batch_size=2, sort_by_length=True)
    naive_p = rm.score(qs, refs, comps, batch_size=2, sort_by_length=False)
    assert all(0.0 < p < 1.0 for p in sorted_p)
    assert sorted_p == pytest.approx(naive_p, abs=1e-5)
    reversed_p = rm.score(qs[::-1], refs[::-1], comps[::-1], batch_size=3)
    assert reversed_p[::-1] == pytest.approx(sorted_p, abs=1e-5)
    single = [rm.score([q], [r], [c])[0] for q, r, c in zip(qs, refs, comps)]
    assert single == pytest.approx(sorted_p, abs=1e-5)
    rm.model.train()
    assert rm.score(qs, refs, comps) == pytest.approx(sorted_p, abs=1e-5)  # eval mode inside score...
    assert rm.model.training  # ...and the previous mode restored afterwards
    rm.model.eval()
    assert rm.logits(qs[:1], refs[:1], comps[:1]).requires_grad
    rm.offset = 0.5  # eval_logits: the logits minus the offset, batched by length, in the input order, without grad
    plain = rm.logits(qs, refs, comps).detach()
    batched = rm.eval_logits(qs, refs, comps, batch_size=3)
    assert not batched.requires_grad and batched.dtype == torch.float32
    assert batched.tolist() == pytest.approx(plain.tolist(), abs=1e-5)
    assert rm.score(qs, refs, comps) == pytest.approx(torch.sigmoid(batched).tolist(), abs=1e-6)


def test_save_load_roundtrip(rm, tmp_path):
    small = copy.deepcopy(rm)
    small.max_length = 96
    args = (["What is 2+3?", QUESTION], ["5", REFERENCE], ["\\boxed{5}", LONG_COMPLETION])
    before = small.score(*args)
    out = tmp_path / "rm"
    small.save_pretrained(out, metadata={"note": "test"})
    small.save_pretrained(out)  # replacing an existing dir is fine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rm"]  # no temp dirs left behind
    assert (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    meta = json.loads((out / "cooper_rm.json").read_text())
    assert meta["template_version"] == TEMPLATE_VERSION and meta["max_length"] == 96 and meta["note"] == "test"
    loaded = VerifyRM.from_pretrained(str(out), device="cpu")
    assert loaded.max_length == 96 and loaded.backbone == "minilm-l6"
    assert loaded.score(*args) == pytest.approx(before, abs=1e-6)

    meta["template_version"] = "cooper-rm-v0"
    (out / "cooper_rm.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="template"):
        VerifyRM.from_pretrained(str(out), device="cpu")


def _pair_loss(rm, q, r, pos, neg):
    rm.model.eval()
    with torch.no_grad():
        s = rm.logits([q, q], [r, r], [pos, neg])
    return float(-torch.nn.functional.logsigmoid(s[0] - s[1]))


def test_pairwise_update_learns_and_masks(rm):
    m = copy.deepcopy(rm)
    m.configure_optimizer(lr=1e-4)
    q, r, pos, neg = "What is 6*7?", "42", "6*7 = 42, so \\boxed{42}", "6*7 = 48, so \\boxed{48}"
    w0 = m.model.classifier.weight.detach().clone()
    loss0 = _pair_loss(m, q, r, pos, neg)
    for _ in range(5):
        out = m.pairwise_update([q], [r], [pos], [neg])
        assert out["n_valid"] == 1 and out["rm_loss"] is not None and out["grad_norm"] > 0
    assert not torch.equal(w0, m.model.classifier.weight)
    assert _pair_loss(m, q, r, pos, neg) < loss0

    out = m.pairwise_update([q, q], [r, r], [pos, "junk"], [neg, "junk"], valid=[True, False])
    assert out["n_valid"] == 1 and out["pair_logits"][1] is None  # the masked pair has no logits
    s_pos, s_neg = out["pair_logits"][0]
    assert out["rm_loss"] == pytest.approx(
        -torch.nn.functional.logsigmoid(torch.tensor(s_pos - s_neg)).item(), rel=1e-5
    )
    assert out["pair_losses"][1] is None and out["pair_losses"][0] == pytest.approx(out["rm_loss"], rel=1e-6)

    # no valid pair: backward runs, but weights stay put even though AdamW has momentum by now
    state = {k: v.clone() for k, v in m.model.state_dict().items()}
    out = m.pairwise_update([q], [r], [pos], [neg], valid=[False])
    assert out == {"rm_loss": None, "n_valid": 0, "grad_norm": 0.0, "stepped": False, "pair_logits": [None], "pair_losses": [None]}  # fmt: skip
    assert all(torch.equal(state[k], v) for k, v in m.model.state_dict().items())


def test_decoder_backbone_gets_pad_token(tmp_path):
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from cooper_rl.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m-instruct"))
    tok.pad_token = None
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        pad_token_id=None,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    m = VerifyRM.from_pretrained(str(tmp_path), device="cpu")
    assert m.tokenizer.pad_token_id is not None and m.model.config.pad_token_id == m.tokenizer.pad_token_id
    assert m.max_length == 512
    qs, refs, comps = ["a?", "b?", "c?"], ["1", "2", "3"], ["\\boxed{1}", "long " * 50 + "\\boxed{5}", "3"]
    assert m.score(qs, refs, comps, batch_size=3) == pytest.approx(
        [m.score([q], [r], [c])[0] for q, r, c in zip(qs, refs, comps)], abs=1e-5
    )


def test_two_rank_rm_stays_in_sync_under_torchrun(tmp_path):
    """torchrun --nproc_per_node 2 (gloo): broadcast at start + gradient all-reduce keep the RM copies equal."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from tiny import save_tiny_bert

    tiny = save_tiny_bert(tmp_path / "tiny-bert")
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    worker = Path(__file__).parent / "dist" / "rm_sync_worker.py"
    env = {**os.environ, "RESULT_FILE": str(tmp_path / "out.json"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [torchrun, "--standalone", "--nproc_per_node", "2", str(worker), str(tiny)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:  # never leave ranks behind
            os.killpg(proc.pid, 9)
    assert proc.returncode == 0, err[-3000:]
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["moved"] > 0  # the RM did learn
    assert out["max_diff"] == 0.0  # and both copies are bit-identical


def test_plain_hf_qwen2_classifier_loads_with_the_papers_template(tmp_path):
    """A Hugging Face sequence-classification checkpoint without cooper_rm.json (the authors' format: a Qwen2
    classifier) loads; its score is sigmoid of the logit at the last token of the paper's template text."""
    from transformers import Qwen2Config, Qwen2ForSequenceClassification

    tok = load_tokenizer("smollm2-135m-instruct")
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_labels=1,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    Qwen2ForSequenceClassification(cfg).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    assert not (tmp_path / "cooper_rm.json").exists()
    m = VerifyRM.from_pretrained(str(tmp_path), device="cpu")
    assert type(m.model).__name__ == "Qwen2ForSequenceClassification" and m.meta == {}
    q, r, c = "What is 2 + 2?", "4", "2 + 2 = 4. The answer is \\boxed{4}."
    ids = tok(format_rm_text(q, r, c), add_special_tokens=True, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        expected = torch.sigmoid(m.model(input_ids=ids).logits[0, 0]).item()
    batch = m.score([q, q], [r, r], [c, c + " Let me explain at much greater length." * 5], batch_size=2)
    assert batch[0] == pytest.approx(expected, abs=1e-5)  # right padding: pooled at the last real token


def test_autocast_scores_match_fp32_and_updates_keep_fp32_weights(rm):
    rm = copy.deepcopy(rm)
    qs, refs = ["What is 2 + 2?"] * 4, ["4"] * 4
    comps = ["\\boxed{4}", "\\boxed{5}", "It is 4.", "Maybe 3"]
    fp32 = rm.score(qs, refs, comps)
    rm.autocast = True
    bf16 = rm.score(qs, refs, comps)
    assert bf16 == pytest.approx(fp32, abs=0.02) and bf16 != fp32  # bf16 rounding, not the same path
    out = rm.pairwise_update(qs[:2], refs[:2], comps[:2], comps[2:])
    assert out["n_valid"] == 2 and out["rm_loss"] is not None
    assert all(p.dtype == torch.float32 for p in rm.model.parameters())


def test_decoder_rm_shares_each_prompts_prefix_with_the_same_scores_and_gradients(tmp_path):
    """On a decoder backbone the rollouts of one prompt share the question + reference forward (KV cache); scores,
    logits and gradients equal those of whole-sequence forwards (groups of unequal lengths, a prompt with one
    rollout, a group split across score batches, a completion cut by max_length)."""
    from tiny import save_tiny_llama, tiny_rm

    rm = VerifyRM.from_pretrained(save_tiny_llama(tmp_path / "llama"), max_length=96, device="cpu")
    assert rm.share_prefix and not tiny_rm(tmp_path / "bert").share_prefix  # BERT attends both ways: no sharing
    qs = ["What is 3 + 4?"] * 3 + ["Tom has 12 apples and eats 5. How many are left?"] * 4 + ["What is 1 + 1?"]
    refs = ["7"] * 3 + ["7"] * 4 + ["2"]
    comps = ["3 + 4 = 7. \\boxed{7}", "\\boxed{8}", "It is seven.", "12 - 5 = 7\n#### 7", "7", "12 + 5 = 17"]
    comps += ["step " * 60 + "\\boxed{7}", "\\boxed{2}"]

    def run(share: bool, batch_size: int):
        rm.share_prefix = share
        scores = rm.score(qs, refs, comps, batch_size=batch_size)
        rm.model.zero_grad(set_to_none=True)
        logits = rm.logits(qs, refs, comps)
        (logits * torch.linspace(-1, 1, len(qs))).sum().backward()
        return scores, logits.detach(), [p.grad.clone() for p in rm.model.parameters()]

    calls = []
    forward_shared = rm._forward_shared
    rm._forward_shared = lambda p, s, o: calls.append(len(s)) or forward_shared(p, s, o)
    plain = run(False, 64)
    assert not calls
    for batch_size in (64, 5):
        shared = run(True, batch_size)
        assert calls and max(calls) > 1 and sum(calls) >= 7  # the shared path ran, on groups (all but the lone one)
        calls.clear()
        assert shared[0] == pytest.approx(plain[0], abs=1e-5)
        assert torch.allclose(shared[1], plain[1], atol=1e-5)
        assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(shared[2], plain[2]))
    assert len(set(plain[0])) == len(qs)  # the scores differ: the comparison is not between constants


def test_length_batches_keep_each_rows_logit_and_gradient(tmp_path):
    """Forwarding in batches of similar length (the default) gives every row the logit and gradient of one padded
    batch, with the rows in their input order (lengths deliberately unsorted), on an encoder and a decoder RM."""
    from tiny import save_tiny_llama, tiny_rm

    qs = ["What is 3 + 4?", "Tom has 12 apples and eats 5. How many are left?", "What is 1 + 1?", "What is 2 + 5?"]
    refs = ["7", "7", "2", "7"]
    comps = ["step " * 40 + "\\boxed{7}", "7", "1 + 1 = 2 so the answer is \\boxed{2}", "\\boxed{8}"]
    for rm in (tiny_rm(tmp_path / "bert"), VerifyRM.from_pretrained(save_tiny_llama(tmp_path / "llama"), device="cpu")):
        rm.share_prefix = False
        out = {}
        for overhead in (0, 10**9):  # 0: a batch per distinct length; 10**9: one padded batch
            rm.batch_overhead = overhead
            rm.model.zero_grad(set_to_none=True)
            logits = rm.logits(qs, refs, comps)
            (logits * torch.tensor([1.0, -2.0, 3.0, -4.0])).sum().backward()
            out[overhead] = (logits.detach(), [p.grad.clone() for p in rm.model.parameters() if p.grad is not None])
        assert torch.allclose(out[0][0], out[10**9][0], atol=1e-5)
        assert len(out[0][1]) == len(out[10**9][1]) > 0
        assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(out[0][1], out[10**9][1]))
        assert len(set(out[0][0].tolist())) == len(qs)
