"""scripts/sm_placement.py: its tile orders, its GPC grouping (union-find) and its spread count, on made-up
placements; bad arguments are refused; its kernel builds (the placement itself needs the GPU: the script says so)."""
import pytest
import torch

import script_module


@pytest.fixture(scope="module")
def sp():
    return script_module.load("sm_placement")


def test_tile_orders(sp):
    # 4 x 2 tiles: row tile fastest deals (0,0) (1,0) (2,0) (3,0) (0,1) ...; column tile fastest (0,0) (0,1) (1,0) ...
    assert [sp.tile_of(b, 4, 2, False) for b in range(8)] == [(0, 0), (1, 0), (2, 0), (3, 0),
                                                              (0, 1), (1, 1), (2, 1), (3, 1)]
    assert [sp.tile_of(b, 4, 2, True) for b in range(8)] == [(0, 0), (0, 1), (1, 0), (1, 1),
                                                             (2, 0), (2, 1), (3, 0), (3, 1)]


def test_groups_join_what_one_cluster_saw(sp):
    g = sp.Groups()
    g.join([5, 7])
    g.join([7, 9])
    g.join([2, 4])
    g.join([11])
    label = g.label()
    assert label[5] == label[7] == label[9]
    assert label[2] == label[4] != label[5]
    assert len(set(label.values())) == 3


def test_spread_counts_the_groups_each_operand_sharer_set_spans(sp):
    # 2 x 2 tiles on SMs 0..3; SMs 0, 1 in group 0 and 2, 3 in group 1. Row tile fastest: blocks 0, 1 are column
    # tile 0 (SMs 0, 1: one group), blocks 2, 3 column tile 1 (one group); row tile 0 = blocks 0, 2 (two groups).
    group = {0: 0, 1: 0, 2: 1, 3: 1}
    got = sp.spread([0, 1, 2, 3], group, 2, 2, n_fastest=False)
    assert got == {"a_sharers_groups": 2.0, "b_sharers_groups": 1.0}
    got = sp.spread([0, 1, 2, 3], group, 2, 2, n_fastest=True)
    assert got == {"a_sharers_groups": 1.0, "b_sharers_groups": 2.0}
    # an SM no cluster ever saw counts as a group of its own
    got = sp.spread([0, 1, 8, 9], group, 2, 2, n_fastest=False)
    assert got["b_sharers_groups"] == 1.5


@pytest.mark.parametrize("argv", [["--tiles-m", "0"], ["--tiles-n", "-1"]])
def test_bad_arguments_are_refused(sp, capsys, argv):
    with pytest.raises(SystemExit) as exc:
        sp.parse(argv)
    assert exc.value.code == 2
    assert "must be positive" in capsys.readouterr().err


@pytest.mark.build
@pytest.mark.skipif(torch.cuda.is_available(), reason="the no-device exit is for machines without a GPU")
def test_without_a_gpu_it_builds_and_says_so(sp, capsys):
    assert sp.main([]) == 3
    assert "no CUDA device: its kernel is built" in capsys.readouterr().err
