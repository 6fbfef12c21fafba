#!/usr/bin/env bash
# For the next session, call H (a fresh machine, ≈ 575 s): the final tree of 2026-12-07 (fifteenth) — GEMM1's latent
# by TMA stores (884fab0) — built with no GPU visible; the whole GPU suite (its last green run, caf761b, predates that
# epilogue); the issue-9 targets (3 rounds). callI follows on the warm machine.
#   KVBENCH_COMMIT=$(git rev-parse --short HEAD) KVBENCH_CUTLASS_DIR=third_party/cutlass-subset \
#     bash results/2026-12-07-fifteenth/callH.sh      (third_party/cutlass-subset carried)
. scripts/device_call_lib.sh callH
gpu_info
build_everything
pack
gpu_tests gpu-tests.log 330
pack
targets_run two_stage,two_stage_pp,cutlass_2gemm,fused_tiled
stamp done
