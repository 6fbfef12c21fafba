"""A build killed mid-way must not hang the next build of the same extension (torch's FileBaton waits forever on
the `lock` file a killed build leaves: pytorch#189245), and two processes never build one folder at once."""
import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness import build

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def baton_torch(monkeypatch):
    monkeypatch.setattr(build, "torch_waits_on_lock_file", lambda: True)


def test_a_killed_builds_lock_file_is_removed(tmp_path, baton_torch):
    (tmp_path / build.TORCH_LOCK).write_text("")
    with build.exclusive_build_dir(tmp_path):
        assert not (tmp_path / build.TORCH_LOCK).exists()


def test_a_flock_torchs_lock_file_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "torch_waits_on_lock_file", lambda: False)
    (tmp_path / build.TORCH_LOCK).write_text("")
    with build.exclusive_build_dir(tmp_path):
        assert (tmp_path / build.TORCH_LOCK).exists()


def test_this_torch_is_classified():
    """The probe reads torch itself: FileBaton in cpp_extension (older torch) or not (pytorch#190543 on)."""
    from torch.utils import cpp_extension

    assert build.torch_waits_on_lock_file() == ("FileBaton" in vars(cpp_extension))


def test_the_folder_is_held_while_building(tmp_path):
    with build.exclusive_build_dir(tmp_path):
        fd = os.open(tmp_path / build.BUILD_LOCK, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    fd = os.open(tmp_path / build.BUILD_LOCK, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released on exit
    finally:
        os.close(fd)


def test_a_killed_holder_does_not_block_the_next_builder(tmp_path, baton_torch):
    """A process holding the folder (and torch's lock file, as a build does) is SIGKILLed: the next builder gets the
    folder at once and finds no lock file to wait on."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from harness import build\n"
         "d = Path(sys.argv[1])\n"
         "with build.exclusive_build_dir(d):\n"
         "    (d / build.TORCH_LOCK).write_text('')\n"
         "    print('held', flush=True); time.sleep(60)\n", str(tmp_path)],
        cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        got = threading.Event()

        def enter():
            with build.exclusive_build_dir(tmp_path):
                got.set()

        waiter = threading.Thread(target=enter, daemon=True)
        waiter.start()
        time.sleep(0.3)
        assert not got.is_set(), "the folder was entered while another process held it"
        holder.send_signal(signal.SIGKILL)
        assert got.wait(10), "the folder stayed locked after its holder died"
        assert not (tmp_path / build.TORCH_LOCK).exists()
    finally:
        holder.kill()
        holder.wait()
