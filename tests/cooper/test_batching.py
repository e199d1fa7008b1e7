"""batching: forward batches by similar length, and where a decoder's prefix can be shared."""


def test_length_batches_pad_little_and_cover_every_sequence_once():
    from itertools import combinations

    from cooper_rl.cooper.batching import length_batches

    def cost(lengths, batches, overhead):
        return sum(len(b) * max(lengths[i] for i in b) + overhead for b in batches)

    assert length_batches([40, 41, 39, 40]) == [[2, 0, 3, 1]]  # similar lengths: one batch
    lengths = [5, 128, 7, 6, 120, 9, 8, 125]  # rollouts that stopped early and ones cut at the cap
    batches = length_batches(lengths, overhead=64)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert [sorted(lengths[i] for i in b) for b in batches] == [[5, 6, 7, 8, 9], [120, 125, 128]]
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for overhead in (0, 64, 1000):  # no contiguous split of the sorted lengths costs less
        got = cost(lengths, length_batches(lengths, overhead), overhead)
        for k in range(len(lengths)):
            for cuts in combinations(range(1, len(lengths)), k):
                edges = [0, *cuts, len(lengths)]
                split = [order[a:b] for a, b in zip(edges, edges[1:])]
                assert got <= cost(lengths, split, overhead)
    assert len(length_batches(lengths, overhead=10**6)) == 1 and length_batches([], 64) == []


def test_prefix_sharing_only_where_it_gives_the_whole_sequence_scores():
    from types import SimpleNamespace as NS

    from cooper_rl.cooper.batching import can_share_prefix

    def ok(max_length=512, **config):
        return can_share_prefix(NS(config=NS(**config)), max_length)

    assert ok(model_type="llama") and ok(model_type="mistral", sliding_window=4096)
    assert not ok(model_type="mistral", sliding_window=256)  # the window would cut a padded prefix differently
    assert ok(model_type="qwen2", sliding_window=256, use_sliding_window=False)
    assert not ok(model_type="bert") and not ok(model_type="falcon") and not ok(model_type="jamba")
