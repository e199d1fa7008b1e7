"""Built-in, seeded generator of GSM8K/SVAMP-style arithmetic word problems.

Level = number of arithmetic operations (1, 2 or 3); size = "small" (numbers 2..20) or "large" (20..1000).
Every answer is an exact non-negative integer and every problem carries a worked solution ending in `#### N`.
Train and test are disjoint by construction: a question's split is a stable hash of its normalized text.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass

TEST_PERCENT = 20  # share of the question space assigned to the test split


@dataclass
class Problem:
    """One math problem: question text, exact reference answer, id, origin, optional worked solution."""

    question: str
    answer: str
    id: str
    source: str
    solution: str | None = None
    level: int | None = None  # number of operations (built-in tasks only)
    size: str | None = None  # "small" / "large" (built-in tasks only)


# (quantity range, multiplier/count range) per size
SIZES = {"small": ((2, 20), (2, 10)), "large": ((20, 1000), (3, 40))}

# word lists: a row per line reads better than a word per line
# fmt: off
NAMES = [("Tom", "he"), ("Maria", "she"), ("Liam", "he"), ("Aisha", "she"), ("Ben", "he"), ("Chen", "he"),
         ("Diego", "he"), ("Emma", "she"), ("Fatima", "she"), ("George", "he"), ("Hana", "she"), ("Ivan", "he"),
         ("Jada", "she"), ("Kofi", "he"), ("Lucy", "she"), ("Mateo", "he"), ("Nina", "she"), ("Omar", "he"),
         ("Priya", "she"), ("Rosa", "she"), ("Sam", "he"), ("Tara", "she"), ("Wei", "he"), ("Yuki", "she"),
         ("Zoe", "she"), ("Carlos", "he"), ("Mia", "she"), ("Noah", "he"), ("Olivia", "she"), ("Raj", "he")]
PRON = {"he": ("he", "him", "his"), "she": ("she", "her", "her")}
OBJECTS = ["apples", "books", "marbles", "stickers", "pencils", "cookies", "coins", "stamps", "baseball cards",
           "seashells", "toy cars", "balloons", "oranges", "cupcakes", "comic books", "eggs", "flowers", "crayons"]
CONTAINERS = [("box", "boxes"), ("bag", "bags"), ("basket", "baskets"), ("jar", "jars"), ("crate", "crates"),
              ("pack", "packs"), ("tray", "trays")]
ITEMS = [("notebook", "notebooks"), ("sandwich", "sandwiches"), ("movie ticket", "movie tickets"), ("T-shirt", "T-shirts"),
         ("toy robot", "toy robots"), ("backpack", "backpacks"), ("board game", "board games"), ("lamp", "lamps"),
         ("pair of shoes", "pairs of shoes"), ("video game", "video games"), ("jacket", "jackets"), ("bicycle helmet", "bicycle helmets")]
RATES = [("reads", "read", "pages"), ("swims", "swim", "laps"), ("bakes", "bake", "cookies"),
         ("folds", "fold", "paper cranes"), ("writes", "write", "words"), ("plants", "plant", "seeds")]
# fmt: on
GETS = ["buys", "finds", "is given", "collects", "wins"]
PLACES = ["store", "shop", "market", "bakery", "library sale", "school fair"]


def _ctx(r: random.Random) -> dict:
    """Random names, pronouns, objects and items to fill a template."""
    (a, g), (b, _) = r.sample(NAMES, 2)
    he, him, his = PRON[g]
    cont, conts = r.choice(CONTAINERS)
    (it1, its1), (it2, its2) = r.sample(ITEMS, 2)
    return dict(
        A=a,
        B=b,
        he=he,
        He=he.capitalize(),
        him=him,
        his=his,
        obj=r.choice(OBJECTS),
        cont=cont,
        conts=conts,
        it1=it1,
        its1=its1,
        it2=it2,
        its2=its2,
        place=r.choice(PLACES),
    )


def _bill(cost: int) -> int:
    """Smallest 'round' bill amount strictly above cost (next multiple of 10, or of 100 for large costs)."""
    unit = 10 if cost < 100 else 100
    return (cost // unit + 1) * unit


# Each template: (r, N, M) -> (question, solution steps, answer) or None if the drawn numbers don't fit.
# N() draws a quantity, M() a multiplier/count. Steps contain equations in GSM8K style (a op b = c).


def l1_add(r, N, M):
    c, x, y = _ctx(r), N(), N()
    q = f"{c['A']} has {x} {c['obj']}. {c['He']} {r.choice(GETS)} {y} more. How many {c['obj']} does {c['A']} have now?"
    return q, [f"{c['A']} has {x} + {y} = {x + y} {c['obj']} now."], x + y


def l1_give(r, N, M):
    c, x, y = _ctx(r), N(), N()
    if x <= y:
        return None
    q = f"{c['A']} had {x} {c['obj']} and gave {y} of them to {c['B']}. How many {c['obj']} does {c['A']} have left?"
    return q, [f"{c['A']} has {x} - {y} = {x - y} {c['obj']} left."], x - y


def l1_containers(r, N, M):
    c, x, k = _ctx(r), N(), M()
    q = f"There are {k} {c['conts']} and each {c['cont']} holds {x} {c['obj']}. How many {c['obj']} are there altogether?"
    return q, [f"There are {k} * {x} = {k * x} {c['obj']}."], k * x


def l1_share(r, N, M):
    c, each, k = _ctx(r), N(), M()
    q = (
        f"{c['A']} has {each * k} {c['obj']} and wants to share them equally among {k} friends. "
        f"How many {c['obj']} will each friend get?"
    )
    return q, [f"Each friend gets {each * k} / {k} = {each} {c['obj']}."], each


def l1_spend(r, N, M):
    c, x, y = _ctx(r), N(), N()
    q = f"{c['A']} bought a {c['it1']} for ${x} and a {c['it2']} for ${y}. How much money did {c['A']} spend in all?"
    return q, [f"{c['A']} spent {x} + {y} = ${x + y}."], x + y


def l1_train(r, N, M):
    x, y = N(), N()
    if x <= y:
        return None
    q = (
        f"A train left the station with {x} passengers. At the next stop, {y} passengers got off and nobody got on. "
        "How many passengers are on the train now?"
    )
    return q, [f"There are {x} - {y} = {x - y} passengers on the train."], x - y


def l1_rate(r, N, M):
    c, x, d = _ctx(r), N(), M()
    verb, base, unit = r.choice(RATES)
    q = f"{c['A']} {verb} {x} {unit} every day. How many {unit} does {c['he']} {base} in {d} days?"
    return q, [f"In {d} days {c['he']} {verb} {x} * {d} = {x * d} {unit}."], x * d


def l1_fewer(r, N, M):
    c, x, y = _ctx(r), N(), N()
    if x <= y:
        return None
    q = f"{c['A']} has {x} {c['obj']}. {c['B']} has {y} fewer {c['obj']} than {c['A']}. How many {c['obj']} does {c['B']} have?"
    return q, [f"{c['B']} has {x} - {y} = {x - y} {c['obj']}."], x - y


def l1_more(r, N, M):
    c, x, y = _ctx(r), N(), N()
    q = f"{c['A']} scored {x} points in a game. {c['B']} scored {y} more points than {c['A']}. How many points did {c['B']} score?"
    return q, [f"{c['B']} scored {x} + {y} = {x + y} points."], x + y


def l1_change(r, N, M):
    c, x = _ctx(r), N()
    bill = _bill(x)
    q = f"{c['A']} pays for a {c['it1']} that costs ${x} with ${bill}. How much change does {c['he']} get back?"
    return q, [f"The change is {bill} - {x} = ${bill - x}."], bill - x


def l1_groups(r, N, M):
    size, groups = M(), N()
    q = f"A teacher splits {size * groups} students into groups of {size}. How many groups are there?"
    return q, [f"There are {size * groups} / {size} = {groups} groups."], groups


def l2_buy_give(r, N, M):
    c, x, y, z = _ctx(r), N(), N(), N()
    if z >= x + y:
        return None
    q = (
        f"{c['A']} has {x} {c['obj']}. {c['He']} {r.choice(GETS)} {y} more and then gives {z} to {c['B']}. "
        f"How many {c['obj']} does {c['A']} have now?"
    )
    return (
        q,
        [
            f"After getting more, {c['A']} has {x} + {y} = {x + y} {c['obj']}.",
            f"After giving some away, {c['he']} has {x + y} - {z} = {x + y - z} {c['obj']}.",
        ],
        x + y - z,
    )


def l2_containers_sell(r, N, M):
    c, x, k, z = _ctx(r), N(), M(), N()
    if z >= x * k:
        return None
    q = (
        f"A {c['place']} has {k} {c['conts']} with {x} {c['obj']} in each {c['cont']}. It sells {z} {c['obj']}. "
        f"How many {c['obj']} are left?"
    )
    return (
        q,
        [
            f"The {c['place']} has {k} * {x} = {k * x} {c['obj']}.",
            f"After selling, {k * x} - {z} = {k * x - z} {c['obj']} are left.",
        ],
        k * x - z,
    )


def l2_change(r, N, M):
    c, k, p = _ctx(r), M(), N()
    cost = k * p
    bill = _bill(cost)
    q = f"{c['A']} buys {k} {c['obj']} at ${p} each and pays with ${bill}. How much change does {c['he']} receive?"
    return (
        q,
        [f"The {c['obj']} cost {k} * {p} = ${cost}.", f"The change is {bill} - {cost} = ${bill - cost}."],
        bill - cost,
    )


def l2_keep_share(r, N, M):
    c, each, k, keep = _ctx(r), N(), M(), N()
    rest = each * k
    total = rest + keep
    q = (
        f"{c['A']} has {total} {c['obj']}. {c['He']} keeps {keep} for {c['him']}self and shares the rest equally "
        f"among {k} friends. How many {c['obj']} does each friend get?"
    )
    return (
        q,
        [
            f"{c['A']} shares {total} - {keep} = {rest} {c['obj']}.",
            f"Each friend gets {rest} / {k} = {each} {c['obj']}.",
        ],
        each,
    )


def l2_rate_extra(r, N, M):
    c, x, d, y = _ctx(r), N(), M(), N()
    verb, base, unit = r.choice(RATES)
    q = (
        f"{c['A']} {verb} {x} {unit} each day for {d} days, and then {y} more {unit} on the last weekend. "
        f"How many {unit} does {c['he']} {base} in total?"
    )
    return (
        q,
        [
            f"In {d} days {c['he']} {verb} {x} * {d} = {x * d} {unit}.",
            f"In total that is {x * d} + {y} = {x * d + y} {unit}.",
        ],
        x * d + y,
    )


def l2_train(r, N, M):
    x, y, z = N(), N(), N()
    if y >= x:
        return None
    q = (
        f"A bus had {x} passengers. At the first stop {y} people got off and {z} people got on. "
        "How many passengers are on the bus now?"
    )
    return (
        q,
        [
            f"After {y} got off there were {x} - {y} = {x - y} passengers.",
            f"After {z} got on there are {x - y} + {z} = {x - y + z} passengers.",
        ],
        x - y + z,
    )


def l2_times_together(r, N, M):
    c, x, k = _ctx(r), N(), M()
    q = (
        f"{c['A']} has {x} {c['obj']}. {c['B']} has {k} times as many {c['obj']} as {c['A']}. "
        f"How many {c['obj']} do they have together?"
    )
    return (
        q,
        [
            f"{c['B']} has {x} * {k} = {x * k} {c['obj']}.",
            f"Together they have {x} + {x * k} = {x + x * k} {c['obj']}.",
        ],
        x + x * k,
    )


def l2_save_spend(r, N, M):
    c, x, w, z = _ctx(r), N(), M(), N()
    if z >= x * w:
        return None
    q = (
        f"{c['A']} saves ${x} every week for {w} weeks. Then {c['he']} spends ${z} on a {c['it1']}. "
        f"How much money does {c['A']} have left?"
    )
    return q, [f"{c['A']} saves {x} * {w} = ${x * w}.", f"{c['He']} has {x * w} - {z} = ${x * w - z} left."], x * w - z


def l2_bake_bags(r, N, M):
    trays, per = M(), N()
    total = trays * per
    divisors = [k for k in range(3, 13) if total % k == 0]
    if not divisors:
        return None
    d = r.choice(divisors)
    q = (
        f"A baker makes {trays} trays of muffins with {per} muffins on each tray. She packs them into bags of {d}. "
        "How many bags does she fill?"
    )
    return (
        q,
        [f"She makes {trays} * {per} = {total} muffins.", f"She fills {total} / {d} = {total // d} bags."],
        total // d,
    )


def l2_tickets(r, N, M):
    c, a, p, q_ = _ctx(r), M(), N(), N()
    q = (
        f"At the zoo, adult tickets cost ${p} each and a child ticket costs ${q_}. {c['A']} buys {a} adult tickets "
        "and one child ticket. How much does " + c["he"] + " pay in total?"
    )
    return (
        q,
        [f"The adult tickets cost {a} * {p} = ${a * p}.", f"In total {c['he']} pays {a * p} + {q_} = ${a * p + q_}."],
        a * p + q_,
    )


def l2_two_purchases(r, N, M):
    c, y, z, extra = _ctx(r), N(), N(), N()
    x = y + z + extra
    q = (
        f"{c['A']} had ${x}. {c['He']} spent ${y} on a {c['it1']} and ${z} on a {c['it2']}. "
        f"How much money does {c['he']} have left?"
    )
    return (
        q,
        [
            f"After the {c['it1']}, {c['he']} has {x} - {y} = ${x - y}.",
            f"After the {c['it2']}, {c['he']} has {x - y} - {z} = ${extra}.",
        ],
        extra,
    )


def l3_packs(r, N, M):
    c, k, n_, h, g = _ctx(r), M(), N(), N(), N()
    got = k * n_
    if g >= got + h:
        return None
    q = (
        f"{c['A']} already had {h} {c['obj']}. {c['He']} buys {k} {c['conts']} with {n_} {c['obj']} in each "
        f"{c['cont']}, and then gives {g} {c['obj']} to {c['B']}. How many {c['obj']} does {c['A']} have now?"
    )
    return (
        q,
        [
            f"{c['He']} buys {k} * {n_} = {got} {c['obj']}.",
            f"Then {c['he']} has {h} + {got} = {h + got} {c['obj']}.",
            f"After giving some away, {c['he']} has {h + got} - {g} = {h + got - g} {c['obj']}.",
        ],
        h + got - g,
    )


def l3_two_items(r, N, M):
    c, a, p, b, s = _ctx(r), M(), N(), M(), N()
    q = (
        f"{c['A']} buys {a} {c['its1']} for ${p} each and {b} {c['its2']} for ${s} each. "
        f"How much does {c['he']} spend altogether?"
    )
    return (
        q,
        [
            f"The {c['its1']} cost {a} * {p} = ${a * p}.",
            f"The {c['its2']} cost {b} * {s} = ${b * s}.",
            f"Altogether {c['he']} spends {a * p} + {b * s} = ${a * p + b * s}.",
        ],
        a * p + b * s,
    )


def l3_train(r, N, M):
    x, y, z, w = N(), N(), N(), N()
    if y >= x or w >= x - y + z:
        return None
    q = (
        f"A train left the city with {x} passengers. At the first station {y} passengers got off and {z} got on. "
        f"At the second station {w} passengers got off. How many passengers are still on the train?"
    )
    return (
        q,
        [
            f"After {y} got off: {x} - {y} = {x - y} passengers.",
            f"After {z} got on: {x - y} + {z} = {x - y + z} passengers.",
            f"After {w} got off: {x - y + z} - {w} = {x - y + z - w} passengers.",
        ],
        x - y + z - w,
    )


def l3_earn_split(r, N, M):
    c, x, h, k = _ctx(r), N(), M(), M()
    earned = x * h
    if earned <= k + 1:
        return None
    rest = k * r.randint(max(1, (earned // 2) // k), (earned - 1) // k)
    s = earned - rest
    q = (
        f"{c['A']} earns ${x} per hour and works {h} hours. {c['He']} spends ${s} on a {c['it1']} and splits the rest "
        f"equally into {k} savings jars. How many dollars go into each jar?"
    )
    return (
        q,
        [
            f"{c['A']} earns {x} * {h} = ${earned}.",
            f"After shopping, {c['he']} has {earned} - {s} = ${rest}.",
            f"Each jar gets {rest} / {k} = ${rest // k}.",
        ],
        rest // k,
    )


def l3_orchard(r, N, M):
    rows, trees, fruit = M(), r.randint(2, 12), N()
    total = rows * trees * fruit
    sold = r.randint(1, total - 1)
    kind = r.choice(["apples", "oranges", "peaches", "lemons", "pears"])
    q = (
        f"An orchard has {rows} rows with {trees} trees in each row. Each tree gives {fruit} {kind}. "
        f"The farmer sells {sold} {kind}. How many {kind} are left?"
    )
    return (
        q,
        [
            f"There are {rows} * {trees} = {rows * trees} trees.",
            f"They give {rows * trees} * {fruit} = {total} {kind}.",
            f"After selling, {total} - {sold} = {total - sold} {kind} are left.",
        ],
        total - sold,
    )


def l3_chain(r, N, M):
    c, x, y, k = _ctx(r), N(), N(), r.randint(2, 5)
    b = x + y
    third = r.choice([n for n, _ in NAMES if n not in (c["A"], c["B"])])
    q = (
        f"{c['A']} has {x} {c['obj']}. {c['B']} has {y} more {c['obj']} than {c['A']}. {third} has {k} times as many "
        f"{c['obj']} as {c['B']}. How many {c['obj']} do {c['A']} and {third} have together?"
    )
    return (
        q,
        [
            f"{c['B']} has {x} + {y} = {b} {c['obj']}.",
            f"{third} has {b} * {k} = {b * k} {c['obj']}.",
            f"Together {c['A']} and {third} have {x} + {b * k} = {x + b * k} {c['obj']}.",
        ],
        x + b * k,
    )


def l3_book(r, N, M):
    c, x, d, e, each = _ctx(r), N(), M(), M(), N()
    read, rest = x * d, e * each
    pages = read + rest
    q = (
        f"A book has {pages} pages. {c['A']} reads {x} pages a day for {d} days. {c['He']} wants to finish the rest "
        f"in {e} days, reading the same number of pages each day. How many pages a day must {c['he']} read?"
    )
    return (
        q,
        [
            f"{c['He']} reads {x} * {d} = {read} pages.",
            f"There are {pages} - {read} = {rest} pages left.",
            f"{c['He']} must read {rest} / {e} = {each} pages a day.",
        ],
        each,
    )


def l3_party(r, N, M):
    c, b, n_, g, f = _ctx(r), M(), N(), r.randint(2, 10), r.randint(2, 10)
    total, given = b * n_, g * f
    if given >= total:
        return None
    q = (
        f"{c['A']} buys {b} {c['conts']} of {c['obj']} with {n_} in each {c['cont']}. {c['He']} gives {g} {c['obj']} "
        f"to each of {f} friends. How many {c['obj']} does {c['he']} have left?"
    )
    return (
        q,
        [
            f"{c['He']} buys {b} * {n_} = {total} {c['obj']}.",
            f"{c['He']} gives away {g} * {f} = {given} {c['obj']}.",
            f"{c['He']} has {total} - {given} = {total - given} {c['obj']} left.",
        ],
        total - given,
    )


def l3_store(r, N, M):
    c, x, y, z, w = _ctx(r), N(), N(), N(), N()
    if y + z >= x:
        return None
    q = (
        f"A {c['place']} had {x} {c['obj']}. It sold {y} in the morning and {z} in the afternoon. In the evening a "
        f"delivery of {w} more {c['obj']} arrived. How many {c['obj']} does the {c['place']} have now?"
    )
    return (
        q,
        [
            f"After the morning: {x} - {y} = {x - y} {c['obj']}.",
            f"After the afternoon: {x - y} - {z} = {x - y - z} {c['obj']}.",
            f"After the delivery: {x - y - z} + {w} = {x - y - z + w} {c['obj']}.",
        ],
        x - y - z + w,
    )


def l3_change(r, N, M):
    c, a, p, s = _ctx(r), M(), N(), N()
    cost = a * p + s
    bill = _bill(cost)
    q = (
        f"{c['A']} buys {a} {c['obj']} at ${p} each and a {c['it1']} for ${s}. {c['He']} pays with ${bill}. "
        f"How much change does {c['he']} get?"
    )
    return (
        q,
        [
            f"The {c['obj']} cost {a} * {p} = ${a * p}.",
            f"Everything costs {a * p} + {s} = ${cost}.",
            f"The change is {bill} - {cost} = ${bill - cost}.",
        ],
        bill - cost,
    )


TEMPLATES = {
    1: [l1_add, l1_give, l1_containers, l1_share, l1_spend, l1_train, l1_rate, l1_fewer, l1_more, l1_change, l1_groups],
    2: [
        l2_buy_give,
        l2_containers_sell,
        l2_change,
        l2_keep_share,
        l2_rate_extra,
        l2_train,
        l2_times_together,
        l2_save_spend,
        l2_bake_bags,
        l2_tickets,
        l2_two_purchases,
    ],
    3: [l3_packs, l3_two_items, l3_train, l3_earn_split, l3_orchard, l3_chain, l3_book, l3_party, l3_store, l3_change],
}


def normalize(text: str) -> str:
    """Lower-case, whitespace-collapsed question text (used for dedupe and split hashing)."""
    return re.sub(r"\s+", " ", text.strip().lower())


def split_of(question: str) -> str:
    """Split ('train' or 'test') a question belongs to, from a stable sha256 hash of its normalized text."""
    h = int(hashlib.sha256(normalize(question).encode()).hexdigest()[:8], 16)
    return "test" if h % 100 < TEST_PERCENT else "train"


def _make(r: random.Random, level: int, size: str):
    """Draw one (question, solution, answer) at a given level and size, retrying templates whose numbers don't fit."""
    (nlo, nhi), (mlo, mhi) = SIZES[size]
    N, M = (lambda: r.randint(nlo, nhi)), (lambda: r.randint(mlo, mhi))
    while True:
        out = r.choice(TEMPLATES[level])(r, N, M)
        if out is not None:
            q, steps, ans = out
            assert isinstance(ans, int) and ans >= 0, (q, ans)
            return q, "\n".join(steps) + f"\n#### {ans}", ans


def generate_problems(
    n: int, split: str = "train", seed: int = 0, levels=(1, 2, 3), sizes=("small", "large")
) -> list[Problem]:
    """Generate n distinct word problems of one split, cycling round-robin over (level, size); deterministic in all args.

    A generated question is kept only if its text hashes to `split` (so train/test never overlap) and is new.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    bad = [x for x in levels if x not in TEMPLATES] + [s for s in sizes if s not in SIZES]
    if bad or not levels or not sizes:
        raise ValueError(
            f"unknown levels/sizes {bad}; choose levels from {list(TEMPLATES)} and sizes from {list(SIZES)}"
        )
    combos = [(lv, sz) for lv in levels for sz in sizes]
    r = random.Random(f"cooper-builtin:{seed}:{split}")
    seen, out = set(), []
    while len(out) < n:
        level, size = combos[len(out) % len(combos)]
        for _ in range(100_000):
            q, sol, ans = _make(r, level, size)
            key = normalize(q)
            if key not in seen and split_of(q) == split:
                break
        else:
            raise RuntimeError(
                f"could not find a new {split} problem for level {level}, size {size} (space exhausted?)"
            )
        seen.add(key)
        out.append(Problem(q, str(ans), f"builtin-{split}-L{level}-{size}-{len(out):06d}", "builtin", sol, level, size))
    return out


if __name__ == "__main__":
    for p in generate_problems(6, seed=1):
        print(p.id, "|", p.question, "|", p.answer, "\n", p.solution, "\n")
