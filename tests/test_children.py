"""Child processes started while another thread changes os.environ (a build does) must still start."""
import os
import threading

from harness import children


def test_children_start_while_another_thread_changes_the_environment():
    """With env=None a child execs with the live C environ array; a setenv in another thread can free it
    mid-exec ("[Errno 14] Bad address"; here ~half of 300 starts failed that way). children.run copies it."""
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            for k in range(50):
                os.environ[f"KVBENCH_TEST_CHURN_{k}"] = "x"
            for k in range(50):
                os.environ.pop(f"KVBENCH_TEST_CHURN_{k}", None)

    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    failures = []
    try:
        for _ in range(300):
            try:
                children.run(["/bin/true"], check=True)
            except OSError as exc:
                failures.append(str(exc))
    finally:
        stop.set()
        thread.join()
    assert not failures, f"{len(failures)} of 300 starts failed, e.g. {failures[0]}"
