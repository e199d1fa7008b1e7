"""The Cooper RM step: positives against the reference, masked pairs, and the three negative generators
(offline corruption, an OpenAI-compatible assistant on a real loopback server, a local HF model)."""

import math

import pytest

from cooper_rl import verify
from cooper_rl.cooper.negatives import ChatNegatives, CorruptNegatives, check_negative, make_negative_generator
from cooper_rl.cooper.reward_model import VerifyRM
from cooper_rl.cooper.step import cooper_step, select_positives
from cooper_rl.llm import LocalChat
from fake_openai import FakeOpenAI, Reply, last_user
from tiny import same, save_tiny_llama, tiny_rm, weights

GOOD = "3 + 4 = 7. The answer is \\boxed{7}."


@pytest.fixture
def rm(tmp_path):
    return tiny_rm(tmp_path / "rm")


def test_positives_are_correct_against_the_reference():
    questions = ["q1", "q1", "q1", "q2", "q2", "q3", "q3"]
    references = ["7", "7", "7", "9", "9", "5", "5"]
    completions = ["\\boxed{9}", "\\boxed{7}", "so \\boxed{7}", "\\boxed{7}", "\\boxed{9}", "\\boxed{4}", "no answer"]
    verdicts = verify.verify_batch(completions, references)
    # "\boxed{7}" (index 3) is the text of q1's positive, but it is wrong for q2 (reference 9): not picked
    assert select_positives(questions, references, completions, verdicts) == [1, 4]
    assert select_positives(questions, references, completions, verdicts, pairs_per_prompt=2) == [1, 2, 4]
    # identical texts count once
    dup = ["\\boxed{7}"] * 3
    assert select_positives(["q"] * 3, ["7"] * 3, dup, [True] * 3, pairs_per_prompt=2) == [0]


def test_check_negative():
    assert check_negative("3 + 4 = 8. The answer is \\boxed{8}.", "7") is None
    assert check_negative(GOOD, "7") == "still_correct"
    assert check_negative("lorem ipsum 8", "7") == "no_answer"  # strict: no final answer, not a negative
    assert check_negative("  ", "7") == "empty" and check_negative(None, "7") == "empty"


def test_corrupt_negatives_and_update(rm):
    gen = make_negative_generator("corrupt", seed=0)
    assert isinstance(gen, CorruptNegatives)
    negs, reasons = gen(["q", "q"], ["7", "x+1"], [GOOD, "The answer is \\boxed{x+1}."])
    assert negs[0] is not None and reasons[0] is None and not verify.verify(negs[0], "7")
    assert negs[1] is None and reasons[1] == "corrupt_failed"  # non-numeric: no offline negative

    before = weights(rm)
    out = cooper_step(
        rm,
        gen,
        ["q", "q", "p", "p"],
        ["7", "7", "3", "3"],
        [GOOD, "\\boxed{8}", "\\boxed{5}", "\\boxed{6}"],
        [True, False, False, False],
    )
    assert out["n_pairs"] == 1 and out["n_valid"] == 1 and out["valid_rate"] == 1.0
    assert out["positive_rate"] == 0.5 and out["invalid/no_positive"] == 1
    assert out["rm_loss"] is not None and out["neg_seconds"] >= 0
    assert not same(before, weights(rm))
    # the one valid pair is logged: its texts, its logits before the update and the loss they give
    (pair,) = out["pairs"]
    assert pair["positive"] == GOOD and pair["positive_source"] == "rollout" and pair["kind"] is None
    assert pair["question"] == "q" and pair["reference"] == "7" and not verify.verify(pair["negative"], "7")
    assert pair["loss"] == pytest.approx(math.log1p(math.exp(pair["logit_neg"] - pair["logit_pos"])))
    assert pair["loss"] == pytest.approx(out["rm_loss"], rel=1e-4)  # the step's mean over its one pair


def test_invalid_pairs_do_not_move_the_rm(rm):
    def broken(questions, references, positives):
        return [None] * len(positives), ["server_error"] * len(positives)

    before = weights(rm)
    out = cooper_step(rm, broken, ["q", "q"], ["7", "7"], [GOOD, "\\boxed{8}"], [True, False])
    assert out["n_valid"] == 0 and out["rm_loss"] is None and out["invalid/server_error"] == 1
    assert same(before, weights(rm)) and out["pairs"] == []  # masked pairs are not logged as learnt from
    # masked pairs next to valid ones give the same update as the valid pairs alone
    rm2 = VerifyRM(type(rm.model)(rm.model.config), rm.tokenizer, rm.max_length, rm.backbone)
    rm2.model.load_state_dict(rm.model.state_dict())
    neg = "3 + 4 = 8. The answer is \\boxed{8}."
    rm.pairwise_update(["q", "q"], ["7", "7"], [GOOD, GOOD], [neg, "garbage"], valid=[True, False])
    rm2.pairwise_update(["q"], ["7"], [GOOD], [neg])
    assert same(weights(rm), weights(rm2))


def respond(body, i):
    """The assistant's behaviour is chosen by the problem text in the request."""
    text = last_user(body)
    assert GOOD.replace("7", "") in text.replace("7", "")  # the positive solution is in the prompt
    if "SLOW" in text:
        return Reply(delay=3.0, text="3 + 4 = 8. The answer is \\boxed{8}.")
    if "FAIL" in text:
        return Reply(status=500)
    if "HTML" in text:
        return Reply(raw=b"<html>not json</html>")
    if "GARBAGE" in text:
        return "as an AI model I cannot"
    if "LONG" in text:
        return "3 + 4 = 8, " * 40 + "The answer is \\boxed{8}."
    if "CORRECT" in text:
        return "3 + 4 = 7, so the answer is \\boxed{7}."
    return "3 + 4 = 8. The answer is \\boxed{8}."


def test_api_negatives_against_a_real_server(rm):
    kinds = ["GOOD", "SLOW", "FAIL", "HTML", "GARBAGE", "CORRECT", "LONG"]
    with FakeOpenAI(respond) as srv:
        gen = make_negative_generator("api", f"openai:assistant@{srv.url}", timeout=0.5, max_retries=0)
        gen.chat.backoff = 0.01
        assert isinstance(gen, ChatNegatives)
        negs, reasons = gen([f"{k}: what is 3 + 4?" for k in kinds], ["7"] * 7, [GOOD] * 7)
        assert negs[0] == "3 + 4 = 8. The answer is \\boxed{8}." and reasons[0] is None
        assert negs[1:] == [None] * 6
        assert reasons[1:] == ["timeout", "server_error", "bad_response", "no_answer", "still_correct", "length"]

        before = weights(rm)
        out = cooper_step(rm, gen, [f"{k}: what is 3 + 4?" for k in kinds], ["7"] * 7, [GOOD] * 7, [True] * 7)
        assert out["n_pairs"] == 7 and out["n_valid"] == 1 and out["valid_rate"] == pytest.approx(1 / 7)
        assert out["invalid/timeout"] == 1 and out["invalid/still_correct"] == 1
        assert not same(before, weights(rm))
        url = srv.url
    # the assistant is gone (connection refused): the step still runs, with every pair masked
    gen = make_negative_generator("api", f"openai:assistant@{url}", timeout=0.5, max_retries=0)
    before = weights(rm)
    out = cooper_step(rm, gen, ["q"], ["7"], [GOOD], [True])
    assert out["n_valid"] == 0 and out["invalid/connection"] == 1 and same(before, weights(rm))


def test_make_negative_generator_checks_its_spec():
    with pytest.raises(ValueError, match="assistant"):
        make_negative_generator("api")
    with pytest.raises(ValueError, match="does not match"):
        make_negative_generator("local", "openai:m@http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="unknown"):
        make_negative_generator("magic")


def test_local_negatives_mask_garbage(tmp_path, rm, one_thread):
    """A tiny random local model writes garbage: every pair is masked, nothing breaks."""
    save_tiny_llama(tmp_path / "assistant", hidden_size=32, num_hidden_layers=1)
    gen = make_negative_generator("local", f"hf:{tmp_path / 'assistant'}", max_tokens=12)
    assert isinstance(gen.chat, LocalChat)
    before = weights(rm)
    out = cooper_step(rm, gen, ["q1", "q2"], ["7", "9"], [GOOD, "4 + 5 = 9. \\boxed{9}"], [True, True])
    assert out["n_pairs"] == 2 and out["n_valid"] == 0
    assert out.get("invalid/no_answer", 0) + out.get("invalid/empty", 0) == 2
    assert same(before, weights(rm))
