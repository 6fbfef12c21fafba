"""The GPUs this process sees (index, UUID, model); how a worker process is pinned to one; and the probe
that tells whether one still works."""
from __future__ import annotations

import os
import sys

from harness.records import Device

VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


def visible_devices() -> list[Device]:
    import torch
    return [_device(i, torch.cuda.get_device_properties(i)) for i in range(torch.cuda.device_count())]


def _device(index: int, props) -> Device:
    uuid = str(props.uuid)
    # torch prints the bare UUID; CUDA_VISIBLE_DEVICES and NVML want it as nvidia-smi shows it.
    return Device(index, uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}", props.name)


def pinned_call(uuid: str, fn, *args) -> None:
    """Entry point of a worker process pinned to one GPU: CUDA_VISIBLE_DEVICES=<its UUID>, then fn(*args).
    Set here, in the fresh process before anything in it initialises CUDA (a fork server's workers inherit
    the server's environment, not what the harness has when it starts them), so the process's CUDA sees that
    GPU alone, as device 0, and nothing it runs (torch, a variant's own cudaSetDevice, cuBLAS) can reach
    another. A UUID, not an index: indices depend on CUDA_DEVICE_ORDER and on the CUDA_VISIBLE_DEVICES the
    harness got. No other variable (NCCL_*, TORCH_*) is touched; this process exists for this one call."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():  # too late: the setting would not take
        raise RuntimeError(f"CUDA was initialised before this worker could be pinned to {uuid}")
    os.environ[VISIBLE_DEVICES] = uuid
    fn(*args)


def probe_worker(queue) -> None:
    """Pinned to one GPU: does a fresh process still get a working CUDA context there?"""
    try:
        import torch
        torch.cuda.init()
        assert (torch.ones(1, device="cuda") + 1).item() == 2.0
        queue.put(("ok", None))
    except Exception as exc:  # whatever CUDA says is the reason the device is unusable
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        queue.put(("error", f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]))
