"""The docs cannot drift: the CLI reference is what scripts/cli_reference.py writes from the config dataclasses, and
every relative link in the README, docs/ and the experiments' READMEs points at a file or folder that exists."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("**/*.md")),
    *sorted((ROOT / "experiments").glob("*/README.md")),
]
DOCS += [ROOT / "benchmarks" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|<img[^>]+src=\"([^\"]+)\"")


def test_cli_reference_matches_the_code():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts/cli_reference.py"), "--check"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("doc", [d for d in DOCS if d.is_file()], ids=lambda d: str(d.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)  # code blocks are not links
    broken = []
    for m in LINK.finditer(text):
        target = (m.group(1) or m.group(2)).split("#")[0]
        if not target or re.match(r"[a-z]+:", target):  # an anchor, or http:, mailto: ...
            continue
        if not (doc.parent / target).exists():
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)}: broken links {broken}"
