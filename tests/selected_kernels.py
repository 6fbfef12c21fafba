"""Which kernels of `kernels/` the selected GPU tests use, so the session's build covers those alone."""


def kernels_used(items, kernel_names) -> set[str]:
    """A test uses the kernel it is parametrized with (`name`) and the kernel its own name starts with
    (`test_cutlass_2gemm_...`; the longest such name, since `two_stage` is a prefix of `two_stage_pp`). A run of
    a few tests (`-k two_stage`) on a fresh 16-core machine then builds two variants, not every one (≈ 150 s
    before the first test)."""
    used = set()
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("name") in kernel_names:
            used.add(callspec.params["name"])
        test_name = getattr(item, "originalname", item.name)
        named_for = [k for k in kernel_names if test_name.startswith(f"test_{k}_")]
        if named_for:
            used.add(max(named_for, key=len))
    return used
