from types import SimpleNamespace

from selected_kernels import kernels_used

KERNELS = ["cutlass_2gemm", "two_stage", "two_stage_pp", "fused_tiled"]


def item(test, **params):
    callspec = SimpleNamespace(params=params) if params else None
    return SimpleNamespace(name=f"{test}[x]" if params else test, originalname=test, callspec=callspec)


def test_a_parametrized_test_uses_its_kernel_only():
    items = [item("test_variant_correct_everywhere", name="two_stage_pp")]
    assert kernels_used(items, KERNELS) == {"two_stage_pp"}


def test_a_test_named_for_a_kernel_uses_that_kernel():
    items = [item("test_cutlass_2gemm_misaligned_inputs_fall_back", dtype="bfloat16")]
    assert kernels_used(items, KERNELS) == {"cutlass_2gemm"}


def test_tests_of_the_harness_alone_use_no_kernel():
    items = [item("test_floor_row_through_the_runner"), item("test_variant_correct_everywhere", name="not_a_kernel")]
    assert kernels_used(items, KERNELS) == set()


def test_the_union_over_the_selection():
    items = [item("test_variant_correct_everywhere", name=k) for k in ("two_stage", "fused_tiled")]
    items.append(item("test_variant_correct_on_each_dispatch_path", name="fused_tiled"))
    assert kernels_used(items, KERNELS) == {"two_stage", "fused_tiled"}


def test_a_test_named_for_the_longer_of_two_prefixed_kernels_uses_that_one_alone():
    # two_stage is a prefix of two_stage_pp: a two_stage_pp test must not build two_stage as well
    items = [item("test_two_stage_pp_stages_hold_across_shapes", dtype="bfloat16")]
    assert kernels_used(items, KERNELS) == {"two_stage_pp"}
