"""cooper: RL for LLMs with a co-optimized, reference-based reward model (Cooper, arXiv 2508.05613).

The public names, imported on first use (so `import cooper_rl` stays light; submodules such as cooper_rl.verify and
cooper_rl.learning_signal are imported as modules):

    VerifyRM                  the reference-based reward model (score, pairwise_update, save/load)
    RuleReward, ModelReward, CooperReward   TRL reward callables: rule verifier, frozen RM, co-optimized RM
    make_negative_generator   negatives for Cooper's RM update: corrupt, api (an OpenAI-compatible assistant), ...
    cooper_step               one Cooper RM update on a batch of rollouts
    HackingMonitor            flags a reward that rises while rule accuracy falls
    extract_answer            the rule verifier's answer extraction (cooper_rl.verify: verify, verify_batch)
    load_problems             problems from the built-in generator, files or HF datasets
    chat_messages             the prompt every command asks a policy with
    resolve_model             registry names (the embedded offline models) -> local paths
    RLConfig, run_rl          `cooper rl` as a function
"""

import importlib
import os

__version__ = "0.1.0"


def hub_kernels_off_by_default() -> None:
    """Keep transformers' Hub kernels off unless the user asks for them (USE_HUB_KERNELS=YES).

    transformers >= 5.25 loads every model with `use_kernels=True` by default and, on a GPU, downloads compiled
    kernels from the Hugging Face Hub (kernels-community/rotary, .../activation) into it: code from the Hub, which
    cooper keeps off as it keeps `trust_remote_code` off, and a load that fails offline. Set here, before any model is
    loaded, so it covers the models TRL loads and child processes too."""
    os.environ.setdefault("USE_HUB_KERNELS", "NO")


hub_kernels_off_by_default()

_EXPORTS = {
    "VerifyRM": "cooper_rl.cooper.reward_model",
    "RuleReward": "cooper_rl.cooper.rewards",
    "ModelReward": "cooper_rl.cooper.rewards",
    "CooperReward": "cooper_rl.cooper.rewards",
    "make_negative_generator": "cooper_rl.cooper.negatives",
    "cooper_step": "cooper_rl.cooper.step",
    "HackingMonitor": "cooper_rl.cooper.monitor",
    "extract_answer": "cooper_rl.verify",
    "load_problems": "cooper_rl.data",
    "chat_messages": "cooper_rl.generation",
    "resolve_model": "cooper_rl.models",
    "RLConfig": "cooper_rl.rl.config",
    "run_rl": "cooper_rl.rl.train",
}
__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    """The public names of __all__, imported from their modules on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'cooper_rl' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
