"""A tiny random Llama with the embedded policy's tokenizer: a fast stand-in policy/assistant for tests."""

import torch

QUESTIONS = ["What is 3 + 4?", "What is 1 + 6?", "What is 10 - 3?", "What is 14 / 2?"]  # all answer 7


def tiny_llama(hidden_size=64, num_hidden_layers=2, seed=0):
    """A randomly initialised (seeded) tiny LlamaForCausalLM and the SmolLM2 tokenizer it is sized for."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from cooper_rl.models import load_tokenizer

    tok = load_tokenizer("smollm2-135m-instruct")
    torch.manual_seed(seed)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=hidden_size,
            intermediate_size=2 * hidden_size,
            num_hidden_layers=num_hidden_layers,
            num_attention_heads=2,
            num_key_value_heads=2,
            tie_word_embeddings=True,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
    )
    return model, tok


def save_tiny_llama(path, **kwargs):
    """Save a tiny_llama (weights + tokenizer) under path and return path as a string."""
    model, tok = tiny_llama(**kwargs)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def tiny_rm(path):
    """A fresh VerifyRM on a 1-layer random BERT (no dropout) with the MiniLM tokenizer (fast)."""
    from transformers import BertConfig, BertForSequenceClassification

    from cooper_rl.models import load_tokenizer

    tok = load_tokenizer("minilm-l6")
    torch.manual_seed(0)
    model = BertForSequenceClassification(
        BertConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            num_labels=1,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    )
    model.save_pretrained(path)
    tok.save_pretrained(path)
    from cooper_rl.cooper.reward_model import VerifyRM

    return VerifyRM.from_pretrained(str(path), device="cpu")


def weights(rm):
    """A detached copy of the RM's state dict."""
    return {k: v.detach().clone() for k, v in rm.model.state_dict().items()}


def same(a, b):
    """Whether two state dicts are bit-identical."""
    return all(torch.equal(a[k], b[k]) for k in a)
