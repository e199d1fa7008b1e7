"""TRL's private attributes are reached through one module, which names the supported TRL version when they
are gone."""

import re
from pathlib import Path

import pytest

from cooper_rl.rl import trl_internals
from cooper_rl.rl.trl_internals import ACCELERATE_ORIGINAL_FORWARD, TRAINER_METHODS, UnsupportedTRLError, check_trl

SRC = Path(trl_internals.__file__).resolve().parents[1]


def test_installed_trl_is_supported_and_pinned_alike():
    check_trl()
    pyproject = (SRC.parents[1] / "pyproject.toml").read_text()
    assert f'"trl{trl_internals.SUPPORTED_TRL}"' in pyproject


def test_missing_private_method_names_the_supported_version(monkeypatch):
    from trl import GRPOTrainer

    monkeypatch.delattr(GRPOTrainer, TRAINER_METHODS["generate"])
    with pytest.raises(UnsupportedTRLError, match=re.escape(f"trl{trl_internals.SUPPORTED_TRL}")):
        check_trl()


def test_no_other_module_touches_the_private_attributes():
    names = [*TRAINER_METHODS.values(), ACCELERATE_ORIGINAL_FORWARD]
    offenders = [
        f"{p.relative_to(SRC)}: {n}"
        for p in SRC.rglob("*.py")
        if p.name != "trl_internals.py"
        for n in names
        if re.search(rf"\b{n}\b", p.read_text())
    ]
    assert offenders == []
