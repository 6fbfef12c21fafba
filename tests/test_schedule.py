"""Who runs what where, without a GPU: shards are deterministic and cover every group once; device shares
are balanced whole groups; bad --shard / --devices values are one-line usage errors."""
import random

import pytest

from harness import schedule
from harness.errors import UsageError
from harness.records import Device, Task
from harness.schedule import Shard
from harness.shapes import parse_shapes, parse_tokens

SHAPES = [s for spec in ("seed,deepseek-v2-lite,deepseek-v3,kimi-k2,minicpm3", "b=3,s=37,d=129,rank=33,heads=3,head_dim=24")
          for s in parse_shapes(spec, parse_tokens("512,4096"))]
TASKS = [Task(s, d) for s in SHAPES for d in ("float32", "bfloat16", "float16")]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, len(TASKS), len(TASKS) + 3])
def test_shards_hold_every_group_exactly_once_and_about_equally(count):
    shards = [schedule.shard_tasks(TASKS, Shard(i, count)) for i in range(1, count + 1)]
    held = [t for shard in shards for t in shard]
    assert sorted(map(schedule.group_key, held)) == sorted(map(schedule.group_key, TASKS))
    assert len(held) == len(set(held))
    sizes = [len(shard) for shard in shards]
    assert max(sizes) - min(sizes) <= 1


def test_a_shard_depends_on_the_set_of_groups_alone():
    """Hosts may list shapes and dtypes in another order: each must still pick the same groups."""
    shuffled = TASKS[:]
    random.Random(4).shuffle(shuffled)
    for i in (1, 2, 3):
        assert set(schedule.shard_tasks(TASKS, Shard(i, 3))) == set(schedule.shard_tasks(shuffled, Shard(i, 3)))
    assert schedule.sweep_id(TASKS) == schedule.sweep_id(shuffled)
    assert schedule.sweep_id(TASKS) != schedule.sweep_id(TASKS[1:])


def test_a_shard_keeps_the_order_it_was_asked_in():
    shard = schedule.shard_tasks(TASKS, Shard(2, 3))
    assert shard == [t for t in TASKS if t in set(shard)]


def test_two_shards_of_two_dtypes_mix_dtypes():
    """Kernels often support one dtype only: a shard of only float32 groups would hold most of the rows."""
    tasks = [Task(s, d) for s in SHAPES[:3] for d in ("float32", "bfloat16")]
    for i in (1, 2):
        assert {t.dtype for t in schedule.shard_tasks(tasks, Shard(i, 2))} == {"float32", "bfloat16"}


@pytest.mark.parametrize("text, message", [
    ("3/2", "--shard 3/2: I must be between 1 and N"),
    ("0/2", "--shard 0/2: I must be between 1 and N"),
    ("1/0", "--shard 1/0: I must be between 1 and N"),
    ("2", "--shard '2': expected I/N"),
    ("a/b", "--shard 'a/b': expected I/N"),
])
def test_bad_shards_are_usage_errors(text, message):
    with pytest.raises(UsageError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        schedule.parse_shard(text)


def test_shard_parses():
    assert schedule.parse_shard(" 2/5 ") == Shard(2, 5) and str(Shard(2, 5)) == "2/5"


def test_split_balances_weight_keeps_order_and_one_part_is_everything():
    weight = {t: (3 if t.dtype == "float32" else 1) for t in TASKS}
    parts = schedule.split(TASKS, 2, weight.get)
    loads = [sum(weight[t] for t in part) for part in parts]
    assert abs(loads[0] - loads[1]) <= max(weight.values())
    for part in parts:
        assert part == [t for t in TASKS if t in set(part)]
    assert sorted(map(schedule.group_key, parts[0] + parts[1])) == sorted(map(schedule.group_key, TASKS))
    assert schedule.split(TASKS, 1, weight.get) == [TASKS]


def test_split_gives_idle_parts_when_groups_are_few():
    assert [len(p) for p in schedule.split(TASKS[:2], 4, lambda t: 1)] == [1, 1, 0, 0]


GPUS = [Device(0, "GPU-a", "NVIDIA H200"), Device(1, "GPU-b", "NVIDIA H200"), Device(2, "GPU-c", "NVIDIA H100")]


def test_devices_select():
    assert schedule.select_devices("0,1", GPUS) == GPUS[:2]
    assert schedule.select_devices("1, 0,1", GPUS) == [GPUS[1], GPUS[0]]
    assert schedule.select_devices("all", GPUS[:2]) == GPUS[:2]
    assert schedule.select_devices("all", []) == []


@pytest.mark.parametrize("spec, available, message", [
    ("3", GPUS, "--devices 3: no GPU 3 here (this process sees GPUs 0-2)"),
    ("0", [], "--devices 0: no GPU 0 here (this process sees no GPU)"),
    ("x", GPUS, "--devices 'x': expected 'all' or a comma list of GPU indices"),
    ("-1", GPUS, "--devices '-1': expected 'all' or a comma list of GPU indices"),
    ("", GPUS, "--devices '': expected 'all' or a comma list of GPU indices"),
    ("all", GPUS, "--devices all: GPUs of different models (NVIDIA H200, NVIDIA H100)"),
])
def test_bad_devices_are_usage_errors(spec, available, message):
    with pytest.raises(UsageError) as error:
        schedule.select_devices(spec, available)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)
