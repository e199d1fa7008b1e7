import re
from collections import Counter

from cooper_rl.tasks import TEMPLATES, generate_problems, normalize, split_of

EQ = re.compile(r"(\d+(?:\s*[-+*/]\s*\d+)+)\s*=\s*\$?(\d+)")


def test_deterministic_and_seeded():
    a, b = generate_problems(60, seed=3), generate_problems(60, seed=3)
    assert a == b
    assert [p.question for p in generate_problems(60, seed=4)] != [p.question for p in a]
    assert generate_problems(30, seed=3) == a[:30]  # prefix-stable


def test_train_test_disjoint():
    train, test = generate_problems(2000, "train"), generate_problems(2000, "test")
    tr, te = {normalize(p.question) for p in train}, {normalize(p.question) for p in test}
    assert len(tr) == len(te) == 2000  # distinct within a split
    assert not tr & te
    assert all(split_of(p.question) == "train" for p in train) and all(split_of(p.question) == "test" for p in test)
    assert len({p.id for p in train} | {p.id for p in test}) == 4000


def test_levels_sizes_round_robin():
    probs = generate_problems(6)
    assert [(p.level, p.size) for p in probs] == [
        (1, "small"),
        (1, "large"),
        (2, "small"),
        (2, "large"),
        (3, "small"),
        (3, "large"),
    ]
    assert probs[4].id == "builtin-train-L3-small-000004" and probs[4].source == "builtin"
    counts = Counter((p.level, p.size) for p in generate_problems(600, "test"))
    assert len(counts) == 6 and set(counts.values()) == {100}
    only = generate_problems(20, levels=(2,), sizes=("large",))
    assert all(p.level == 2 and p.size == "large" and "-L2-large-" in p.id for p in only)


def test_answers_are_integers_matching_solutions():
    probs = generate_problems(1500, seed=7)
    used = set()
    for p in probs:
        assert p.question.strip() and p.question.endswith("?")
        assert re.fullmatch(r"\d+", p.answer)
        lines = p.solution.split("\n")
        assert lines[-1] == f"#### {p.answer}"
        eqs = [EQ.search(line) for line in lines[:-1]]
        assert len(eqs) == p.level and all(eqs), p.solution  # one equation per operation
        for m in eqs:
            assert eval(m.group(1)) == int(m.group(2)), p.solution
        assert int(eqs[-1].group(2)) == int(p.answer)
        if p.size == "large":
            assert max(int(x) for x in re.findall(r"\d+", p.question)) >= 20
        used.add(p.question.split()[0])  # crude template-variety check
    assert len(used) > 30
    med = {sz: sorted(int(p.answer) for p in probs if p.size == sz)[len(probs) // 4] for sz in ("small", "large")}
    assert med["small"] * 10 < med["large"]
    assert sum(len(v) for v in TEMPLATES.values()) >= 30
