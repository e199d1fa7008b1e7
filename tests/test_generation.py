from cooper_rl.generation import build_prompt, chat_messages


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
