"""The import graph of src/cooper_rl runs one way: a module imports only from its own layer or a lower one.

Layers, low to high: foundations (files, text, the verifier, the method's pure pieces) < loaders and models <
the method (VerifyRM, negatives, the Cooper step, rewards) and evaluation < the RM pipeline (rm/) < RL training
(rl/) < the entry points (demo, cli). Imports inside functions count too.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src" / "cooper_rl"
LAYERS = [
    {
        "io",
        "tasks",
        "formats",
        "generation",
        "learning_signal",
        "verify",
        "verify.sandbox",
        "cooper.monitor",
        "cooper.rm_inputs",
        "cooper.batching",
    },
    {"models", "data", "trainer_hooks", "llm", "plot", "rl.trl_internals"},
    {"cooper", "cooper.reward_model", "cooper.negatives", "cooper.step", "cooper.rewards", "evaluate", "difficulty"},
    {"rm"},
    {"rl"},
    {"demo", "cli"},
]


def module_name(path: Path) -> str:
    """'rl.train' for src/cooper_rl/rl/train.py; packages by their folder."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(name: str) -> int | None:
    """The layer of a module: its own entry, else its package's (rm.*, rl.*); None for the package root."""
    for i, mods in enumerate(LAYERS):
        if name in mods:
            return i
    for i, mods in enumerate(LAYERS):
        if name.split(".")[0] in mods:
            return i
    return None


def imports(path: Path) -> set[str]:
    """The cooper_rl modules a file imports (from cooper_rl import x counts as module x where x is one)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cooper_rl"):
            base = node.module.removeprefix("cooper_rl").lstrip(".")
            for a in node.names:
                sub = f"{base}.{a.name}".lstrip(".")
                is_module = (SRC / sub.replace(".", "/")).with_suffix(".py").is_file() or (
                    SRC / sub.replace(".", "/")
                ).is_dir()
                out.add(sub if is_module else base)
        elif isinstance(node, ast.Import):
            out |= {a.name.removeprefix("cooper_rl.") for a in node.names if a.name.startswith("cooper_rl.")}
    return {m for m in out if m}


FILES = sorted(p for p in SRC.rglob("*.py"))


def test_every_module_has_a_layer():
    missing = [module_name(p) for p in FILES if module_name(p) and layer(module_name(p)) is None]
    assert not missing, f"add these modules to LAYERS: {missing}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: module_name(p) or "cooper_rl")
def test_no_import_goes_up(path):
    me = layer(module_name(path))
    if me is None:
        return
    up = sorted(m for m in imports(path) if (layer(m) or 0) > me)
    assert not up, f"{module_name(path)} (layer {me}) imports from higher layers: {up}"
