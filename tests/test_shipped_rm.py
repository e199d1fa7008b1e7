"""The shipped VerifyRM (`verifyrm`, src/cooper_rl/assets/verifyrm): small, checked, carried by a (non-editable) wheel,
loaded offline from it, and right on a fixed labelled check set (issue 104: >= 95 %)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cooper_rl.io import file_sha256
from cooper_rl.models import VERIFYRM_FILES, verifyrm_path

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "tests" / "data" / "verifyrm_check.jsonl"  # 400 rows of the suites (check_set.py: provenance)


def test_the_shipped_files_are_whole_and_small():
    d = verifyrm_path()  # raises, naming the file, on a missing or changed one
    sums = dict(reversed(line.split()) for line in (d / "SHA256SUMS").read_text().splitlines())
    assert set(sums) == set(VERIFYRM_FILES) - {"SHA256SUMS"}
    assert all(file_sha256(d / n) == h for n, h in sums.items())
    assert sum((d / n).stat().st_size for n in sums) < 25e6  # issue 104: at most 25 MB in all
    meta = json.loads((d / "cooper_rm.json").read_text())
    assert meta["adapter"]["base"] == "smollm2-135m-instruct" and meta["template_version"] == "cooper-rm-v1"
    assert (d / "README.md").is_file()  # the model card


SCORE = """
import json, sys
import cooper_rl
from cooper_rl.cooper.reward_model import VerifyRM
from cooper_rl.io import file_sha256
from cooper_rl.models import resolve_model
rows = [json.loads(line) for line in open(sys.argv[1])]
rm = VerifyRM.from_pretrained("verifyrm", device="cpu")
p = rm.score([r["question"] for r in rows], [r["reference"] for r in rows], [r["completion"] for r in rows])
print(json.dumps({
    "package": cooper_rl.__file__,
    "sha256": file_sha256(resolve_model("verifyrm") + "/adapter_model.safetensors"),
    "accuracy": sum((x >= 0.5) == bool(r["label"]) for x, r in zip(p, rows)) / len(rows),
    "merged": not rm.is_adapter,
}))
"""


def test_a_wheel_install_loads_the_shipped_rm_offline_and_it_verifies(tmp_path):
    wheels, site, tree = tmp_path / "wheels", tmp_path / "site", tmp_path / "tree"
    # the wheel is built from a copy of what `pip install .` reads (setuptools writes build/ and *.egg-info beside
    # its sources: not into the checkout)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy(ROOT / name, tree / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(tree)], check=True)
    wheel = next(wheels.glob("cooper_rl-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True)
    env = {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", SCORE, str(CHECK)], env=env, capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["package"].startswith(str(site))  # the wheel's copy, not the source tree's
    shipped = dict(reversed(line.split()) for line in (verifyrm_path() / "SHA256SUMS").read_text().splitlines())
    assert got["sha256"] == shipped["adapter_model.safetensors"]
    assert got["merged"]  # static scoring: the adapter merged into the base
    assert got["accuracy"] >= 0.95, got


@pytest.mark.parametrize("damage", ["missing", "corrupted"])
def test_a_damaged_install_names_the_file_and_the_rebuild_command(tmp_path, damage):
    import shutil

    from cooper_rl.models import ModelNotAvailableError

    d = tmp_path / "verifyrm"
    shutil.copytree(verifyrm_path(), d)
    weights = d / "adapter_model.safetensors"
    if damage == "missing":
        weights.unlink()
    else:
        weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(ModelNotAvailableError, match=r"adapter_model\.safetensors .*shipped/round8\.sh"):
        verifyrm_path(d)


def test_every_entry_point_that_needs_an_rm_defaults_to_the_shipped_one():
    """Issue 104 §3: `cooper rl`, `cooper eval-rm`, `cooper demo`, the presets and the plain TRL example score with
    `verifyrm` when no RM is given (never a freshly initialised head)."""
    import ast
    import dataclasses

    import yaml

    from cooper_rl.demo import DemoConfig
    from cooper_rl.models import VERIFYRM
    from cooper_rl.rl.config import RLConfig
    from cooper_rl.rm.evaluate import EvalRMConfig

    for cls in (RLConfig, EvalRMConfig, DemoConfig):
        assert {f.name: f.default for f in dataclasses.fields(cls)}["rm"] == VERIFYRM, cls.__name__
    for preset in sorted((ROOT / "configs").glob("*.yaml")):
        assert yaml.safe_load(preset.read_text()).get("rm", VERIFYRM) == VERIFYRM, preset.name
    example = ast.parse((ROOT / "examples" / "trl_grpo_cooper.py").read_text())
    defaults = {
        call.args[0].value: kw.value.value
        for call in ast.walk(example)
        if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument"
        for kw in call.keywords
        if kw.arg == "default"
    }
    assert defaults["--rm"] == VERIFYRM
