"""The commit a result file records: the project's own, never an enclosing repository's."""
import shutil
import subprocess

import pytest

from harness import env

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def outer_repo(tmp_path):
    """A repository with the project copied into a subfolder of it (a vendored copy)."""
    git(tmp_path, "init", "-q")
    project = tmp_path / "vendor" / "kvbench"
    project.mkdir(parents=True)
    (project / "README.md").write_text("x\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "outer")
    return tmp_path, project


def test_enclosing_repository_commit_is_not_recorded(outer_repo, monkeypatch):
    monkeypatch.delenv("KVBENCH_COMMIT", raising=False)
    _, project = outer_repo
    assert env.git_commit(project) == (None, False)


def test_enclosing_repository_falls_back_to_kvbench_commit(outer_repo, monkeypatch):
    monkeypatch.setenv("KVBENCH_COMMIT", "abc123")
    monkeypatch.setenv("KVBENCH_DIRTY", "1")
    _, project = outer_repo
    assert env.git_commit(project) == ("abc123", True)


def test_project_repository_commit_is_recorded(outer_repo, monkeypatch):
    monkeypatch.delenv("KVBENCH_COMMIT", raising=False)
    _, project = outer_repo
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "project")
    head = git(project, "rev-parse", "HEAD")
    assert env.git_commit(project) == (head, False)
    (project / "README.md").write_text("changed\n")
    assert env.git_commit(project) == (head, True)
    # A copied tree can carry a .git whose HEAD is not the tree's: the commit its sender names wins.
    monkeypatch.setenv("KVBENCH_COMMIT", "the-copied-tree")
    assert env.git_commit(project) == ("the-copied-tree", False)


def test_no_repository_uses_kvbench_commit(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # do not find a repository above tmp
    monkeypatch.delenv("KVBENCH_COMMIT", raising=False)
    assert env.git_commit(tmp_path) == (None, False)
    monkeypatch.setenv("KVBENCH_COMMIT", "def456")
    assert env.git_commit(tmp_path) == ("def456", False)
