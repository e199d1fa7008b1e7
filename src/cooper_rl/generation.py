"""How the policy is asked and sampled: the one prompt builder and the one sampling function.

Every command that prompts a policy (``cooper eval``, ``rl``, ``sft``, ``collect``, the local chat backend)
builds its messages with ``chat_messages`` and its text with ``build_prompt``, so a policy sees the same
prompt in training and evaluation. ``sample_completions`` is the batched HF ``generate`` call behind
evaluation and local chat models.
"""

from __future__ import annotations

PROMPT_TEMPLATE = "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}."


def chat_messages(question: str, template: str = PROMPT_TEMPLATE, system_prompt: str | None = None) -> list[dict]:
    """The chat messages that ask for a solution of ``question`` (optional system message first)."""
    user = {"role": "user", "content": template.format(question=question)}
    return ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [user]


def render_messages(tokenizer, messages: list[dict], use_chat_template: bool = True) -> str:
    """Prompt text of a message list: the tokenizer's chat template with the generation prompt, or, without
    one, the messages' contents separated by blank lines."""
    if use_chat_template and getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return "\n\n".join(m["content"] for m in messages)


def build_prompt(
    tokenizer,
    question: str,
    template: str = PROMPT_TEMPLATE,
    system_prompt: str | None = None,
    use_chat_template: bool = True,
) -> str:
    """The text fed to the model for one question (chat template applied for instruct models)."""
    return render_messages(tokenizer, chat_messages(question, template, system_prompt), use_chat_template)


def sample_completions(
    model, tokenizer, prompts: list[str], k: int, *, temperature: float, top_p: float, max_new_tokens: int
) -> list[list[tuple[str, int]]]:
    """k completions (text, number of new tokens) for each prompt text, in one batched ``generate``;
    sampled at ``temperature``/``top_p``, greedy when temperature is 0."""
    import torch

    tokenizer.padding_side = "left"
    enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    with torch.no_grad():
        out = model.generate(
            **enc,
            do_sample=temperature > 0,
            temperature=temperature if temperature > 0 else None,
            top_p=top_p if temperature > 0 else None,
            max_new_tokens=max_new_tokens,
            num_return_sequences=k,
            pad_token_id=tokenizer.pad_token_id,
        )
    new = out[:, enc["input_ids"].shape[1] :]
    texts = tokenizer.batch_decode(new, skip_special_tokens=True)
    lengths = (new != tokenizer.pad_token_id).sum(dim=1).tolist()  # padding after EOS is not counted
    return [list(zip(texts[i * k : (i + 1) * k], lengths[i * k : (i + 1) * k])) for i in range(len(prompts))]
