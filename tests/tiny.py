"""A tiny random Llama with the embedded policy's tokenizer: a fast stand-in policy/assistant for tests."""
import torch


def tiny_llama(hidden_size=64, num_hidden_layers=2, seed=0):
    """A randomly initialised (seeded) tiny LlamaForCausalLM and the SmolLM2 tokenizer it is sized for."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from cooper_rl.models import load_tokenizer

    tok = load_tokenizer("smollm2-135m-instruct")
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                                         num_hidden_layers=num_hidden_layers, num_attention_heads=2, num_key_value_heads=2,
                                         tie_word_embeddings=True, eos_token_id=tok.eos_token_id,
                                         pad_token_id=tok.pad_token_id))
    return model, tok


def save_tiny_llama(path, **kwargs):
    """Save a tiny_llama (weights + tokenizer) under path and return path as a string."""
    model, tok = tiny_llama(**kwargs)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)
