from cooper_rl.generation import build_prompt, chat_messages, sample_completions


def test_prompt_uses_chat_template_and_asks_for_box(policy):
    _, tok = policy
    p = build_prompt(tok, "What is 3 + 4?")
    assert "What is 3 + 4?" in p and "\\boxed{}" in p and "<|im_start|>assistant" in p


def test_chat_messages_and_plain_prompt_share_one_template():
    class NoTemplate:
        chat_template = None

    msgs = chat_messages("What is 3 + 4?", system_prompt="Be brief.")
    assert [m["role"] for m in msgs] == ["system", "user"] and msgs[1]["content"].startswith("What is 3 + 4?\n")
    assert (
        build_prompt(NoTemplate(), "What is 3 + 4?", system_prompt="Be brief.") == "Be brief.\n\n" + msgs[1]["content"]
    )


def test_batched_greedy_generation_equals_one_by_one():
    """A larger decode batch (left padding + attention mask) does the same math per sequence."""
    from tiny import tiny_llama

    model, tok = tiny_llama()
    prompts = [build_prompt(tok, q) for q in ("What is 3 + 4?", "How many legs do 12 spiders have in total?", "2+2?")]
    kw = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 12}
    batched = sample_completions(model, tok, prompts, 1, **kw)
    alone = [sample_completions(model, tok, [p], 1, **kw)[0] for p in prompts]
    assert batched == alone


def test_bf16_autocast_sampling_distribution_matches_fp32(policy):
    """Rollouts under bf16 autocast sample from the fp32 policy's next-token distribution up to rounding: total
    variation distance on the embedded policy at every position of two solutions; benchmarks/decode_dtype.py
    measures the same numbers next to those of a temperature change (results/decode_dtype.json)."""
    import torch

    model, tok = policy
    texts = [
        build_prompt(tok, q) + a
        for q, a in (
            ("What is 3 + 4?", "3 + 4 = 7. The answer is \\boxed{7}."),
            ("Tom has 5 apples and eats 2. How many are left?", "5 - 2 = 3, so he has \\boxed{3} apples left."),
        )
    ]
    tv = []
    with torch.no_grad():
        for t in texts:
            ids = tok(t, return_tensors="pt", add_special_tokens=False)["input_ids"]
            p32 = torch.softmax(model(input_ids=ids).logits.float(), -1)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                p16 = torch.softmax(model(input_ids=ids).logits.float(), -1)
            tv += (0.5 * (p32 - p16).abs().sum(-1)).flatten().tolist()
    assert sum(tv) / len(tv) < 0.025 and max(tv) < 0.1, (sum(tv) / len(tv), max(tv))
