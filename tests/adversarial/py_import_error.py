# summary: adversarial Python variant: imports a module that does not exist (expect build-failed, found without a GPU)

import kvbench_no_such_module  # noqa: F401


def forward(hidden, w_down, w_up_k, w_up_v, kv_heads):
    raise AssertionError("never reached")
