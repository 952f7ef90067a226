"""github3.py behind a small interface for the change-point issues: list, open, edit, close.

perfgate finds its issues by one fixed label, `TRACKING_LABEL`, which every issue it opens
carries next to the policy's labels (so changing the policy's labels never loses track of an
issue), and by the marker on the body's first line (`report/change_issue.py`). Only issues the
token's own identity opened count: anyone can open an issue with perfgate's label and marker,
and adopting it would let them choose what perfgate overwrites (the same rule as the PR comment,
`github/client.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from perfgate.github.client import GitHub3API

TRACKING_LABEL = "perfgate:change-point"


@dataclass
class IssueInfo:
    number: int
    title: str
    body: str
    state: str  # open or closed
    html_url: str
    labels: tuple[str, ...] = ()
    handle: Any = field(default=None, repr=False)  # the github3 object, for editing


class IssueAPI(Protocol):
    """What the change-point sync asks of GitHub; `GitHub3Issues` is the real thing."""

    def own_issues(self) -> list[IssueInfo]: ...

    def create_issue(
        self, *, title: str, body: str, labels: list[str], assignees: list[str]
    ) -> IssueInfo: ...

    def edit_issue(self, issue: IssueInfo, *, title: str, body: str) -> None: ...

    def add_labels(self, issue: IssueInfo, labels: list[str]) -> None: ...

    def comment_issue(self, issue: IssueInfo, body: str) -> None: ...

    def close_issue(self, issue: IssueInfo) -> None: ...


class GitHub3Issues(GitHub3API):
    """The real GitHub's issues of one repository, through github3.py (retries, errors and
    authentication as for the PR comment)."""

    @staticmethod
    def _issue(issue: Any) -> IssueInfo:
        labels = tuple(str(label.name) for label in (issue.original_labels or []))
        return IssueInfo(
            number=int(issue.number),
            title=str(issue.title or ""),
            body=str(issue.body or ""),
            state=str(issue.state),
            html_url=str(issue.html_url),
            labels=labels,
            handle=issue,
        )

    def own_issues(self) -> list[IssueInfo]:
        """Every issue, open or closed, with the tracking label that this token's identity
        opened, newest first (pull requests, which GitHub lists with issues, left out)."""
        repo = self._repository()
        me = self.own_login().lower()
        found = []
        with self._calling("issue list"):
            # github3 asks for GitHub's largest page (100) when iterating everything.
            listed = repo.issues(
                state="all", labels=TRACKING_LABEL, sort="created", direction="desc"
            )
            for issue in listed:
                author = issue.user.login if issue.user is not None else ""
                if issue.pull_request_urls or str(author).lower() != me:
                    continue
                found.append(self._issue(issue))
        return found

    def create_issue(
        self, *, title: str, body: str, labels: list[str], assignees: list[str]
    ) -> IssueInfo:
        repo = self._repository()
        with self._calling("issue"):
            issue = repo.create_issue(title, body=body, labels=labels, assignees=assignees or None)
        return self._issue(issue)

    def edit_issue(self, issue: IssueInfo, *, title: str, body: str) -> None:
        with self._calling(f"issue #{issue.number}"):
            issue.handle.edit(title=title, body=body)
        issue.title, issue.body = title, body

    def add_labels(self, issue: IssueInfo, labels: list[str]) -> None:
        with self._calling(f"issue #{issue.number}"):
            issue.handle.add_labels(*labels)
        issue.labels = tuple(dict.fromkeys([*issue.labels, *labels]))

    def comment_issue(self, issue: IssueInfo, body: str) -> None:
        with self._calling(f"issue #{issue.number}"):
            issue.handle.create_comment(body)

    def close_issue(self, issue: IssueInfo) -> None:
        # Only the state: github3's close() re-sends title, labels and assignee as it read them,
        # which would undo what a person changed in the meantime.
        with self._calling(f"issue #{issue.number}"):
            issue.handle.edit(state="closed")
        issue.state = "closed"
