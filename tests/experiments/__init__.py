import importlib.util
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
HACKING = EXPERIMENTS / "reward_hacking"  # issue 15's experiment
FIRST = EXPERIMENTS / "first_comparison"  # issue 5's


def load_script(name: str, folder: Path = HACKING):
    """experiments/reward_hacking/<name>.py (or folder/<name>.py) as a module (the experiment scripts are files, not
    a package)."""
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def md_tables(text: str) -> list[list[str]]:
    """The markdown tables of a text, each as its lines (a table indented under a list item without its indent)."""
    out, cur = [], []
    for line in text.splitlines() + [""]:
        if line.lstrip().startswith("|"):
            cur.append(line.strip())
        elif cur:
            out.append(cur)
            cur = []
    return out


def md_cells(line: str) -> list[str]:
    """The cells of one markdown table line, stripped."""
    return [c.strip() for c in line.strip().strip("|").split("|")]
