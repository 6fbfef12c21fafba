import shutil

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
HAS_NVCC = torch.version.cuda is not None and (shutil.which("nvcc") is not None or
                                               __import__("os").path.exists("/usr/local/cuda/bin/nvcc"))



def pytest_collection_modifyitems(config, items):
    no_gpu = pytest.mark.skip(reason="no CUDA device: GPU tests run on the H200 (see README)")
    no_nvcc = pytest.mark.skip(reason="needs nvcc and a CUDA build of torch to compile extensions")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(no_gpu)
        if "build" in item.keywords and not HAS_NVCC:
            item.add_marker(no_nvcc)
