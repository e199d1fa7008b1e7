"""rm_inputs: the VerifyRM's template and its one input builder (truncation in tokens, special tokens, the exact
template for short inputs)."""

import pytest

from cooper_rl.cooper.rm_inputs import encode_rm_inputs, format_rm_text
from cooper_rl.models import load_tokenizer

LONG_COMPLETION = " ".join(f"step{i % 97}" for i in range(5000)) + " so the final answer is \\boxed{12345}"
REFERENCE = "x = 42 and y = 17"
QUESTION = "Solve the system: x + y = 59 and x - y = 25. What are x and y?"


def _contains(ids, sub):
    return any(ids[i : i + len(sub)] == sub for i in range(len(ids) - len(sub) + 1))


def test_template_is_exact():
    assert format_rm_text("Q?", "7", "so 7") == (
        "<question>Q?</question>\n<reference_answer>7</reference_answer>\n<completion>so 7</completion>"
    )


@pytest.mark.parametrize("name", ["minilm-l6", "smollm2-135m-instruct"])
@pytest.mark.parametrize("max_length", [96, 512])
def test_truncation_keeps_reference_question_and_final_answer(name, max_length):
    tok = load_tokenizer(name)
    plain = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    ids = encode_rm_inputs(tok, [QUESTION], [REFERENCE], [LONG_COMPLETION], max_length)[0]
    assert len(ids) <= max_length
    assert _contains(ids, plain(REFERENCE))  # whole reference
    assert _contains(ids, plain(QUESTION))  # the question fits, so it is whole
    text = tok.decode(ids).replace(" ", "")
    assert text.endswith("\\boxed{12345}</completion>[SEP]" if name == "minilm-l6" else "\\boxed{12345}</completion>")
    assert "..." in text  # marker between completion head and tail
    if name == "minilm-l6":
        assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id


@pytest.mark.parametrize("name", ["minilm-l6", "smollm2-135m-instruct"])
def test_truncation_shortens_question_before_reference(name):
    tok = load_tokenizer(name)
    long_q = "Consider " + " ".join(f"fact{i}" for i in range(2000)) + " What is x?"
    ids = encode_rm_inputs(tok, [long_q], [REFERENCE], [LONG_COMPLETION], 128)[0]
    assert len(ids) <= 128
    assert _contains(ids, tok(REFERENCE, add_special_tokens=False)["input_ids"])
    assert tok.decode(ids).replace(" ", "").count("...") == 2  # question and completion both cut in the middle
    assert "\\boxed{12345}" in tok.decode(ids).replace(" ", "")
    # a reference longer than the whole budget is the only case where it is cut; the length bound still holds
    huge_ref = " ".join(["7"] * 1000)
    assert len(encode_rm_inputs(tok, ["q"], [huge_ref], ["c"], 64)[0]) <= 64


def test_short_input_is_the_template_exactly_for_decoder_tokenizer():
    tok = load_tokenizer("smollm2-135m-instruct")
    ids = encode_rm_inputs(tok, ["What is 2+3?"], ["5"], ["2+3=5, so \\boxed{5}"], 512)[0]
    assert tok.decode(ids) == format_rm_text("What is 2+3?", "5", "2+3=5, so \\boxed{5}")
