import importlib.util
from pathlib import Path

REPRO = Path(__file__).resolve().parents[2] / "experiments/reproduce"


def load_script(name: str, folder: Path = REPRO):
    """experiments/reproduce/<name>.py (or folder/<name>.py) as a module (the experiment scripts are files, not a
    package)."""
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
