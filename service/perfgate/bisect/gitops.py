"""The git side of `perfgate bisect`: checking the range, temporary worktrees, `git bisect run`.

Both sides live in temporary worktrees of the user's repository: GOOD stays checked out in one,
and git bisect checks candidates out in the other, so the user's own checkout (its branch, its
uncommitted changes, a bisect of its own) is never touched. git keeps bisect state per worktree.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from perfgate.errors import UsageError

_FIRST_BAD = re.compile(r"^([0-9a-f]{40,64}) is the first bad commit$", re.MULTILINE)
_SKIPPED = "There are only 'skip'ped commits left to test."
_SHA = re.compile(r"^([0-9a-f]{40,64})\b")


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run one git command and return its stdout (stripped); UsageError with git's message."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise UsageError("perfgate bisect needs git on PATH") from None
    if check and done.returncode != 0:
        message = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise UsageError(f"git {' '.join(args)}: {message}")
    return done.stdout.strip()


@dataclass(frozen=True)
class Range:
    """The repository and the two commits of a bisect, resolved to full ids."""

    root: Path
    good: str
    bad: str
    dirty: bool


def resolve_range(cwd: Path, good: str, bad: str) -> Range:
    """Check GOOD and BAD: both commits, GOOD a proper ancestor of BAD (UsageError otherwise)."""
    inside = git(cwd, "rev-parse", "--is-inside-work-tree", check=False)
    if inside != "true":
        raise UsageError(
            f"{cwd}: not inside a git working tree; run perfgate bisect in the repository"
        )
    root = Path(git(cwd, "rev-parse", "--show-toplevel"))
    good_id, bad_id = _commit(root, good, "GOOD"), _commit(root, bad, "BAD")
    if good_id == bad_id:
        raise UsageError(f"GOOD {good} and BAD {bad} are the same commit {good_id[:12]}")
    ancestor = subprocess.run(
        ["git", "merge-base", "--is-ancestor", good_id, bad_id], cwd=root, check=False
    )
    if ancestor.returncode != 0:
        raise UsageError(
            f"GOOD {good} ({good_id[:12]}) is not an ancestor of BAD {bad} ({bad_id[:12]}); "
            "bisect needs GOOD to come before BAD in BAD's history"
        )
    dirty = bool(git(root, "status", "--porcelain", "--untracked-files=no"))
    return Range(root=root, good=good_id, bad=bad_id, dirty=dirty)


def _commit(root: Path, name: str, role: str) -> str:
    found = git(root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False)
    if not found:
        raise UsageError(f"{role} {name!r} is not a commit of the repository at {root}")
    return found


def commit_count(root: Path, good: str, bad: str) -> int:
    """How many commits git bisect chooses among: those in BAD's history but not GOOD's."""
    return int(git(root, "rev-list", "--count", f"{good}..{bad}"))


def subject(root: Path, commit: str) -> str:
    return git(root, "log", "-1", "--format=%s", commit)


@dataclass(frozen=True)
class Worktrees:
    """The two temporary checkouts (GOOD, fixed, and the one git bisect moves) and the
    temporary folder that holds them and the session's files."""

    folder: Path
    good: Path
    bisect: Path


@contextmanager
def temporary_worktrees(root: Path, good: str, bad: str) -> Iterator[Worktrees]:
    """GOOD and BAD checked out (detached) in a temporary folder, removed on every exit path."""
    folder = Path(tempfile.mkdtemp(prefix="perfgate-bisect-"))
    made: list[Path] = []
    try:
        for name, commit in (("good", good), ("bisect", bad)):
            path = folder / name
            git(root, "worktree", "add", "--detach", "--quiet", str(path), commit)
            made.append(path)
        yield Worktrees(folder=folder, good=made[0], bisect=made[1])
    finally:
        for path in made:
            # The bisect first: `reset` ends its state in that worktree's own git folder.
            if path.name == "bisect":
                git(path, "bisect", "reset", check=False)
            git(root, "worktree", "remove", "--force", str(path), check=False)
        git(root, "worktree", "prune", check=False)
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class BisectOutcome:
    """What `git bisect run` concluded: the first bad commit, or the candidates skips left."""

    first_bad: str | None
    candidates: tuple[str, ...]
    exit_code: int
    output: str


def run_bisect(
    worktree: Path,
    *,
    good: str,
    bad: str,
    step: Sequence[str],
    echo: Callable[[str], None],
    interrupts: Interrupts | None = None,
) -> BisectOutcome:
    """`git bisect start BAD GOOD` and `git bisect run STEP...` in `worktree`, git's output echoed.

    The caller resets the bisect (temporary_worktrees does, on every exit path).
    """
    git(worktree, "bisect", "start", bad, good)
    code, lines = stream(
        ["git", "bisect", "run", *step], cwd=worktree, echo=echo, interrupts=interrupts
    )
    output = "\n".join(lines)
    return BisectOutcome(
        first_bad=parse_first_bad(output),
        candidates=parse_candidates(output),
        exit_code=code,
        output=output,
    )


class Interrupts:
    """Ctrl-C and SIGTERM for a session, handled without raising at an arbitrary point.

    `handle` (installed as the signal handler by the command) records the request and ends the
    process group `stream` is running, if any; `stream` then raises KeyboardInterrupt once that
    group is gone. Raising from the handler instead could land between the start of a child
    and the moment its id is known, and leave it running in a worktree about to be removed.
    """

    def __init__(self) -> None:
        self.requested = False
        self._group: int | None = None

    def handle(self, signum: int, frame: object) -> None:
        self.requested = True
        if self._group is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._group, signal.SIGTERM)

    def check(self) -> None:
        """Raise KeyboardInterrupt if an interrupt was asked for."""
        if self.requested:
            raise KeyboardInterrupt


def stream(
    command: Sequence[str],
    *,
    cwd: Path,
    echo: Callable[[str], None],
    interrupts: Interrupts | None = None,
) -> tuple[int, list[str]]:
    """Run `command`, echoing each line of its output; returns its exit status and the lines.

    It runs in a process group of its own, which an interrupt ends (SIGTERM, then SIGKILL),
    waiting until none of its processes is left: git bisect run does not pass a signal on to
    the step, nor the step to its workers, and none of them may outlive the worktrees they run
    in. Raises KeyboardInterrupt after an interrupt.
    """
    interrupts = interrupts or Interrupts()
    interrupts.check()
    lines: list[str] = []
    with subprocess.Popen(
        list(command),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        start_new_session=True,
    ) as proc:
        interrupts._group = proc.pid
        assert proc.stdout is not None
        try:
            if interrupts.requested:  # asked for while the child was starting
                interrupts.handle(signal.SIGTERM, None)
            for line in proc.stdout:
                lines.append(line.rstrip("\n"))
                echo(lines[-1])
        except BaseException:
            _end_group(proc)
            raise
        finally:
            interrupts._group = None
        if interrupts.requested:
            _end_group(proc)
            raise KeyboardInterrupt
        return proc.wait(), lines


def _end_group(proc: subprocess.Popen[str], *, grace_s: float = 10.0) -> None:
    """SIGTERM to the whole group, SIGKILL to what is left after `grace_s`; returns when no
    process of the group is left, or after twice `grace_s`."""
    group = proc.pid
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return
    started = time.monotonic()
    killed = False
    # A zombie nobody reaps (a container whose PID 1 does not) still counts as a member of the
    # group: give up waiting after twice the grace rather than hang.
    while _group_alive(group, proc) and time.monotonic() - started < 2 * grace_s:
        if not killed and time.monotonic() - started > grace_s:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            killed = True
        time.sleep(0.05)
    proc.wait()


def _group_alive(group: int, proc: subprocess.Popen[str]) -> bool:
    proc.poll()  # reaps the leader once it exits, so it does not count as alive
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def parse_first_bad(output: str) -> str | None:
    """The commit git names in `<sha> is the first bad commit`, if it named one."""
    found = _FIRST_BAD.findall(output)
    return found[-1] if found else None


def parse_candidates(output: str) -> tuple[str, ...]:
    """After "only 'skip'ped commits left", the commits git lists as possibly first bad."""
    if _SKIPPED not in output:
        return ()
    after = output.split(_SKIPPED, 1)[1].splitlines()
    return tuple(m.group(1) for line in after if (m := _SHA.match(line.strip())))
