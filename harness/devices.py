"""The GPUs this process sees (index, UUID, model), and the probe that tells whether one still works."""
from __future__ import annotations

from harness.records import Device


def visible_devices() -> list[Device]:
    import torch
    return [_device(i, torch.cuda.get_device_properties(i)) for i in range(torch.cuda.device_count())]


def _device(index: int, props) -> Device:
    uuid = str(props.uuid)
    # torch prints the bare UUID; CUDA_VISIBLE_DEVICES and NVML want it as nvidia-smi shows it.
    return Device(index, uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}", props.name)


def probe_worker(queue) -> None:
    """Spawned pinned to one device: does a fresh process still get a working CUDA context there?"""
    try:
        import torch
        torch.cuda.init()
        assert (torch.ones(1, device="cuda") + 1).item() == 2.0
        queue.put(("ok", None))
    except Exception as exc:  # whatever CUDA says is the reason the device is unusable
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        queue.put(("error", f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]))
