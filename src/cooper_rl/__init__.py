"""cooper: RL for LLMs with a co-optimized, reference-based reward model (Cooper, arXiv 2508.05613)."""

__version__ = "0.1.0"
