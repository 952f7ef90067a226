"""A fake GitHub REST API on 127.0.0.1: the endpoints perfgate uses, answering as GitHub does.

Answers carry absolute URLs pointing back at this server (github3.py follows them), pages are
linked with `Link` headers on `/repositories/{id}/...` URLs like GitHub's, tokens are checked,
GitHub's validation limits are enforced (422), and failures can be planned per request: a status
code with headers and body, or a dropped connection. Who a token is: `GET /user` for a person's
token (installation tokens get GitHub's 403), GraphQL's `viewer` for any token, served where
GitHub has it (`/graphql`, or `/api/graphql` beside a GHES `/api/v3`).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

NOW = "2026-01-02T03:04:05Z"
BOT = "github-actions[bot]"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw_path: str = ""  # as sent, before the API prefix is taken off


@dataclass
class Failure:
    method: str
    path: re.Pattern[str]
    status: int = 502
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=lambda: {"message": "Server Error"})
    drop: bool = False  # close the connection without answering
    after: bool = False  # do the work, then answer with the failure (a write that "landed")


@dataclass
class Pull:
    number: int
    head_sha: str
    head_owner: str = "acme"
    head_branch: str = "feature"
    base_ref: str = "main"
    base_sha: str = "a" * 40
    state: str = "open"


@dataclass
class Issue:
    number: int
    title: str
    body: str
    user: str
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)


class FakeGitHub:
    """State of one fake GitHub: a repository, its PRs, issues, comments, statuses and check
    runs."""

    def __init__(self, *, owner: str = "acme", repo: str = "models", prefix: str = "") -> None:
        self.owner, self.repo, self.repo_id = owner, repo, 4242
        self.prefix = prefix  # "/api/v3" serves the API where GitHub Enterprise Server has it
        self.graphql_path = prefix.removesuffix("/v3") + "/graphql"
        self.tokens: dict[str, str] = {"ghs_actions": BOT, "ghp_personal": "octocat"}
        # Tokens that may not create check runs (GitHub answers 403 for them).
        self.no_checks: set[str] = {"ghp_personal"}
        self.pulls: dict[int, Pull] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.statuses: list[dict[str, Any]] = []
        self.check_runs: list[dict[str, Any]] = []
        self.issues: dict[int, Issue] = {}
        # Who may be assigned (GitHub answers 422 for anyone else), tokens without
        # `issues: write` (GitHub answers 403 to their writes), and tokens without push access
        # (GitHub silently drops the labels and assignees of the issues they open).
        self.assignable: set[str] = {"octocat", "perf-oncall"}
        self.no_issues: set[str] = set()
        self.no_push: set[str] = set()
        self.requests: list[Request] = []
        self.failures: list[Failure] = []
        self.next_id = 1000
        self.lock = threading.Lock()
        self.url = ""

    # --- test helpers -------------------------------------------------------------------------
    def add_pull(self, number: int, head_sha: str, **kw: Any) -> Pull:
        pull = Pull(number=number, head_sha=head_sha, **kw)
        self.pulls[number] = pull
        self.comments.setdefault(number, [])
        return pull

    def add_comment(self, number: int, body: str, *, user: str = "octocat") -> dict[str, Any]:
        with self.lock:
            comment = self._comment(number, body, user)
            self.comments[number].append(comment)
        return comment

    def add_issue(self, title: str, body: str, *, user: str = BOT, **kw: Any) -> Issue:
        with self.lock:
            issue = Issue(number=self._next_number(), title=title, body=body, user=user, **kw)
            self.issues[issue.number] = issue
            self.comments.setdefault(issue.number, [])
        return issue

    def _next_number(self) -> int:
        return max([*self.pulls, *self.issues, 0]) + 1

    def fail(self, method: str, path: str, **kw: Any) -> None:
        """Plan failures for requests whose path matches the regular expression `path`."""
        self.failures.append(Failure(method=method, path=re.compile(path), **kw))

    def calls(self, method: str, pattern: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    def perfgate_comments(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.comments[number] if c["body"].startswith("<!-- perfgate")]

    # --- JSON shapes (the fields github3.py reads) -------------------------------------------
    def _user(self, login: str) -> dict[str, Any]:
        u = f"{self.url}/users/{login}"
        return {
            "login": login,
            "id": abs(hash(login)) % 10**6,
            "avatar_url": f"{self.url}/avatars/{login}",
            "gravatar_id": "",
            "url": u,
            "html_url": f"{self.url}/{login}",
            "followers_url": f"{u}/followers",
            "following_url": f"{u}/following{{/other_user}}",
            "gists_url": f"{u}/gists{{/gist_id}}",
            "starred_url": f"{u}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{u}/subscriptions",
            "organizations_url": f"{u}/orgs",
            "repos_url": f"{u}/repos",
            "events_url": f"{u}/events{{/privacy}}",
            "received_events_url": f"{u}/received_events",
            "type": "Bot" if login.endswith("[bot]") else "User",
            "site_admin": False,
        }

    def _authenticated_user(self, login: str) -> dict[str, Any]:
        return {
            **self._user(login),
            "name": login,
            "company": None,
            "blog": "",
            "location": None,
            "email": None,
            "hireable": None,
            "bio": None,
            "public_repos": 1,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": NOW,
            "updated_at": NOW,
        }

    def _repo(self) -> dict[str, Any]:
        full = f"{self.owner}/{self.repo}"
        u = f"{self.url}/repos/{full}"
        data: dict[str, Any] = {
            "id": self.repo_id,
            "name": self.repo,
            "full_name": full,
            "owner": self._user(self.owner),
            "private": False,
            "html_url": f"{self.url}/{full}",
            "description": "models",
            "fork": False,
            "url": u,
            "homepage": None,
            "language": "Python",
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "size": 1,
            "default_branch": "main",
            "open_issues_count": len(self.pulls),
            "has_issues": True,
            "has_projects": True,
            "has_wiki": False,
            "has_pages": False,
            "has_downloads": True,
            "archived": False,
            "pushed_at": NOW,
            "created_at": NOW,
            "updated_at": NOW,
            "network_count": 0,
            "subscribers_count": 0,
            "mirror_url": None,
            "clone_url": f"{self.url}/{full}.git",
            "git_url": f"git://fake/{full}.git",
            "ssh_url": f"git@fake:{full}.git",
            "svn_url": f"{self.url}/{full}",
        }
        templates = {
            "archive_url": "/{archive_format}{/ref}",
            "assignees_url": "/assignees{/user}",
            "blobs_url": "/git/blobs{/sha}",
            "branches_url": "/branches{/branch}",
            "collaborators_url": "/collaborators{/collaborator}",
            "comments_url": "/comments{/number}",
            "commits_url": "/commits{/sha}",
            "compare_url": "/compare/{base}...{head}",
            "contents_url": "/contents/{+path}",
            "contributors_url": "/contributors",
            "deployments_url": "/deployments",
            "downloads_url": "/downloads",
            "events_url": "/events",
            "forks_url": "/forks",
            "git_commits_url": "/git/commits{/sha}",
            "git_refs_url": "/git/refs{/sha}",
            "git_tags_url": "/git/tags{/sha}",
            "hooks_url": "/hooks",
            "issue_comment_url": "/issues/comments{/number}",
            "issue_events_url": "/issues/events{/number}",
            "issues_url": "/issues{/number}",
            "keys_url": "/keys{/key_id}",
            "labels_url": "/labels{/name}",
            "languages_url": "/languages",
            "merges_url": "/merges",
            "milestones_url": "/milestones{/number}",
            "notifications_url": "/notifications{?since,all,participating}",
            "pulls_url": "/pulls{/number}",
            "releases_url": "/releases{/id}",
            "stargazers_url": "/stargazers",
            "statuses_url": "/statuses/{sha}",
            "subscribers_url": "/subscribers",
            "subscription_url": "/subscription",
            "tags_url": "/tags",
            "teams_url": "/teams",
            "trees_url": "/git/trees{/sha}",
        }
        data.update({k: u + v for k, v in templates.items()})
        return data

    def _pull(self, pull: Pull) -> dict[str, Any]:
        full = f"{self.owner}/{self.repo}"
        u = f"{self.url}/repos/{full}/pulls/{pull.number}"
        issue = f"{self.url}/repos/{full}/issues/{pull.number}"
        head_repo = self._repo()
        if pull.head_owner != self.owner:
            head_repo = {**head_repo, "full_name": f"{pull.head_owner}/{self.repo}", "fork": True}
            head_repo["owner"] = self._user(pull.head_owner)
        return {
            "url": u,
            "id": 90000 + pull.number,
            "html_url": f"{self.url}/{full}/pull/{pull.number}",
            "diff_url": f"{self.url}/{full}/pull/{pull.number}.diff",
            "patch_url": f"{self.url}/{full}/pull/{pull.number}.patch",
            "issue_url": issue,
            "commits_url": f"{u}/commits",
            "review_comments_url": f"{u}/comments",
            "review_comment_url": f"{self.url}/repos/{full}/pulls/comments{{/number}}",
            "comments_url": f"{issue}/comments",
            "statuses_url": f"{self.url}/repos/{full}/statuses/{pull.head_sha}",
            "number": pull.number,
            "state": pull.state,
            "locked": False,
            "active_lock_reason": None,
            "title": f"PR {pull.number}",
            "user": self._user(pull.head_owner),
            "body": "",
            "body_html": "",
            "body_text": "",
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "labels": [],
            "created_at": NOW,
            "updated_at": NOW,
            "closed_at": None,
            "merged_at": None,
            "merge_commit_sha": None,
            "head": {
                "label": f"{pull.head_owner}:{pull.head_branch}",
                "ref": pull.head_branch,
                "sha": pull.head_sha,
                "user": self._user(pull.head_owner),
                "repo": head_repo,
            },
            "base": {
                "label": f"{self.owner}:{pull.base_ref}",
                "ref": pull.base_ref,
                "sha": pull.base_sha,
                "user": self._user(self.owner),
                "repo": self._repo(),
            },
            "_links": {
                "self": {"href": u},
                "html": {"href": f"{self.url}/{full}/pull/{pull.number}"},
                "issue": {"href": issue},
                "comments": {"href": f"{issue}/comments"},
                "review_comments": {"href": f"{u}/comments"},
                "statuses": {"href": f"{self.url}/repos/{full}/statuses/{pull.head_sha}"},
            },
            "author_association": "CONTRIBUTOR",
            "draft": False,
            "merged": False,
            "mergeable": True,
            "mergeable_state": "clean",
            "merged_by": None,
            "comments": len(self.comments.get(pull.number, [])),
            "review_comments": 0,
            "commits": 1,
            "additions": 1,
            "deletions": 0,
            "changed_files": 1,
        }

    def _label(self, name: str) -> dict[str, Any]:
        full = f"{self.owner}/{self.repo}"
        return {
            "id": abs(hash(name)) % 10**6,
            "url": f"{self.url}/repos/{full}/labels/{quote(name, safe='')}",
            "name": name,
            "color": "ededed",
            "default": False,
            "description": None,
        }

    def _issue(self, issue: Issue) -> dict[str, Any]:
        full = f"{self.owner}/{self.repo}"
        u = f"{self.url}/repos/{full}/issues/{issue.number}"
        return {
            "url": u,
            "repository_url": f"{self.url}/repos/{full}",
            "labels_url": f"{u}/labels{{/name}}",
            "comments_url": f"{u}/comments",
            "events_url": f"{u}/events",
            "html_url": f"{self.url}/{full}/issues/{issue.number}",
            "id": 70000 + issue.number,
            "number": issue.number,
            "title": issue.title,
            "user": self._user(issue.user),
            "labels": [self._label(name) for name in issue.labels],
            "state": issue.state,
            "locked": False,
            "assignee": self._user(issue.assignees[0]) if issue.assignees else None,
            "assignees": [self._user(login) for login in issue.assignees],
            "milestone": None,
            "comments": len(self.comments.get(issue.number, [])),
            "created_at": NOW,
            "updated_at": NOW,
            "closed_at": NOW if issue.state == "closed" else None,
            "closed_by": None,
            "author_association": "NONE",
            "body": issue.body,
            "body_html": "",
            "body_text": issue.body,
        }

    def _issue_fields(self, data: dict[str, Any]) -> tuple[int, dict[str, str], Any] | None:
        """GitHub's 422 for what it refuses in an issue's fields, else None."""
        if "title" in data and not (data["title"] or "").strip():
            return 422, {}, _invalid("title can't be blank")
        if len(data.get("title") or "") > 256:
            return 422, {}, _invalid("title is too long (maximum is 256 characters)")
        if len(data.get("body") or "") > 65536:
            return 422, {}, _invalid("body is too long (maximum is 65536 characters)")
        if any(len(name) > 50 for name in data.get("labels") or []):
            return 422, {}, _invalid("name is too long (maximum is 50 characters)")
        if any(login not in self.assignable for login in data.get("assignees") or []):
            return 422, {}, _invalid("assignees are not valid")
        if data.get("state", "open") not in ("open", "closed"):
            return 422, {}, _invalid("state is not included in the list")
        return None

    def _issues_route(
        self, request: Request, rest: str, token: str
    ) -> tuple[int, dict[str, str], Any] | None:
        """The issues endpoints; None for a path that is not one of them."""
        method = request.method
        if method != "GET" and token in self.no_issues:
            return 403, {}, {"message": "Resource not accessible by integration"}
        if rest == "/issues" and method == "GET":
            state = request.query.get("state", "open")
            wanted = [x for x in request.query.get("labels", "").split(",") if x]
            found = [
                i
                for i in self.issues.values()
                if state in ("all", i.state) and all(label in i.labels for label in wanted)
            ]
            descending = request.query.get("direction", "desc") == "desc"
            found.sort(key=lambda i: i.number, reverse=descending)
            base = f"{self.url}/repositories/{self.repo_id}/issues"
            keep = {k: v for k, v in request.query.items() if k not in ("page", "per_page")}
            return self._paged(request, [self._issue(i) for i in found], base, keep)
        if rest == "/issues" and method == "POST":
            data = request.body or {}
            refused = self._issue_fields(data)
            if refused is not None or "title" not in data:
                return refused or (422, {}, _invalid("title can't be blank"))
            issue = Issue(
                number=self._next_number(),
                title=data["title"],
                body=data.get("body") or "",
                user=self.tokens[token],
                labels=[]
                if token in self.no_push
                else list(dict.fromkeys(data.get("labels") or [])),
                assignees=[]
                if token in self.no_push
                else list(dict.fromkeys(data.get("assignees") or [])),
            )
            self.issues[issue.number] = issue
            self.comments.setdefault(issue.number, [])
            return 201, {}, self._issue(issue)
        m = re.fullmatch(r"/issues/(\d+)(/labels)?", rest)
        if m is None or int(m.group(1)) not in self.issues:
            return None
        issue = self.issues[int(m.group(1))]
        if m.group(2) is None and method == "GET":
            return 200, {}, self._issue(issue)
        if m.group(2) is None and method == "PATCH":
            data = request.body or {}
            refused = self._issue_fields(data)
            if refused is not None:
                return refused
            for name in ("title", "body", "state", "labels", "assignees"):
                if name in data:
                    setattr(issue, name, data[name])
            return 200, {}, self._issue(issue)
        if m.group(2) is not None and method == "POST":
            data = request.body
            names = data.get("labels") if isinstance(data, dict) else data
            if not isinstance(names, list) or any(len(n) > 50 for n in names):
                return 422, {}, _invalid("labels are not valid")
            issue.labels = list(dict.fromkeys([*issue.labels, *names]))
            return 200, {}, [self._label(name) for name in issue.labels]
        return 404, {}, {"message": "Not Found"}

    def _comment(self, number: int, body: str, user: str) -> dict[str, Any]:
        self.next_id += 1
        full = f"{self.owner}/{self.repo}"
        return {
            "id": self.next_id,
            "url": f"{self.url}/repos/{full}/issues/comments/{self.next_id}",
            "html_url": f"{self.url}/{full}/pull/{number}#issuecomment-{self.next_id}",
            "issue_url": f"{self.url}/repos/{full}/issues/{number}",
            "body": body,
            "body_html": "",
            "body_text": body,
            "user": self._user(user),
            "created_at": NOW,
            "updated_at": NOW,
            "author_association": "NONE" if user.endswith("[bot]") else "MEMBER",
        }

    # --- the API ------------------------------------------------------------------------------
    def handle(self, request: Request) -> tuple[int, dict[str, str], Any]:
        with self.lock:
            self.requests.append(request)
            if request.path == self.graphql_path:
                request.path = "/graphql"
            elif request.path.startswith(self.prefix):
                request.path = request.path[len(self.prefix) :]
            else:
                return 404, {}, {"message": "Not Found"}
            planned = next(
                (
                    f
                    for f in self.failures
                    if f.times > 0 and f.method == request.method and f.path.search(request.path)
                ),
                None,
            )
            if planned is not None:
                planned.times -= 1
                if planned.after:
                    self._answer(request)
                if planned.drop:
                    return -1, {}, None
                return planned.status, dict(planned.headers), planned.body
            return self._answer(request)

    def _answer(self, request: Request) -> tuple[int, dict[str, str], Any]:
        auth = request.headers.get("authorization", "")
        token = auth.split(" ", 1)[1] if " " in auth else ""
        if token not in self.tokens:
            return 401, {}, {"message": "Bad credentials", "documentation_url": "x"}
        return self._route(request, token)

    def _route(self, request: Request, token: str) -> tuple[int, dict[str, str], Any]:
        path = re.sub(
            rf"^/repositories/{self.repo_id}", f"/repos/{self.owner}/{self.repo}", request.path
        )
        if path == "/user" and request.method == "GET":
            if token.startswith("ghs_"):
                return 403, {}, {"message": "Resource not accessible by integration"}
            return 200, {}, self._authenticated_user(self.tokens[token])
        if path == "/graphql" and request.method == "POST":
            return self._graphql(request.body or {}, token)
        prefix = f"/repos/{self.owner}/{self.repo}"
        if not path.startswith(prefix):
            return 404, {}, {"message": "Not Found"}
        rest = path[len(prefix) :]
        method = request.method
        if rest == "" and method == "GET":
            return 200, {}, self._repo()
        if rest == "/pulls" and method == "GET":
            head = request.query.get("head")
            pulls = [
                self._pull(p)
                for p in self.pulls.values()
                if p.state == request.query.get("state", "open")
                and (head is None or head == f"{p.head_owner}:{p.head_branch}")
            ]
            return 200, {}, pulls
        if m := re.fullmatch(r"/pulls/(\d+)", rest):
            pull = self.pulls.get(int(m.group(1)))
            if pull is None or method != "GET":
                return 404, {}, {"message": "Not Found"}
            return 200, {}, self._pull(pull)
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(m.group(1))
            if method == "POST" and number in self.issues and token in self.no_issues:
                return 403, {}, {"message": "Resource not accessible by integration"}
            if number not in self.pulls and number not in self.issues:
                return 404, {}, {"message": "Not Found"}
            if method == "GET":
                return self._page(request, number)
            if method == "POST":
                body = (request.body or {}).get("body", "")
                if len(body) > 65536:
                    return 422, {}, _invalid("body is too long (maximum is 65536 characters)")
                comment = self._comment(number, body, self.tokens[token])
                self.comments[number].append(comment)
                return 201, {}, comment
        if m := re.fullmatch(r"/issues/comments/(\d+)", rest):
            found = [c for cs in self.comments.values() for c in cs if c["id"] == int(m.group(1))]
            if not found or method != "PATCH":
                return 404, {}, {"message": "Not Found"}
            body = (request.body or {}).get("body", "")
            if len(body) > 65536:
                return 422, {}, _invalid("body is too long (maximum is 65536 characters)")
            found[0]["body"] = body
            found[0]["updated_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            return 200, {}, found[0]
        if (m := re.fullmatch(r"/statuses/([0-9a-f]{40})", rest)) and method == "POST":
            data = request.body or {}
            if data.get("state") not in ("error", "failure", "pending", "success"):
                return 422, {}, _invalid("state is not included in the list")
            if len(data.get("description") or "") > 140:
                return 422, {}, _invalid("description is too long (maximum is 140 characters)")
            self.next_id += 1
            status = {
                "url": f"{self.url}{prefix}/statuses/{m.group(1)}",
                "id": self.next_id,
                "state": data["state"],
                "description": data.get("description"),
                "target_url": data.get("target_url"),
                "context": data.get("context", "default"),
                "created_at": NOW,
                "updated_at": NOW,
                "creator": self._user(self.tokens[token]),
                "sha": m.group(1),
            }
            self.statuses.append(status)
            return 201, {}, status
        issues = self._issues_route(request, rest, token)
        if issues is not None:
            return issues
        if rest == "/check-runs" and method == "POST":
            if token in self.no_checks:
                return 403, {}, {"message": "Resource not accessible by integration"}
            return self._check_run(request.body or {})
        return 404, {}, {"message": "Not Found"}

    def _graphql(self, body: dict[str, Any], token: str) -> tuple[int, dict[str, str], Any]:
        # Only the query perfgate sends; GraphQL reports a bad query in a 200 answer.
        if re.fullmatch(r"query\s*\{\s*viewer\s*\{\s*login\s*\}\s*\}", body.get("query", "")):
            return 200, {}, {"data": {"viewer": {"login": self.tokens[token]}}}
        return 200, {}, {"errors": [{"message": "unsupported query"}]}

    def _page(self, request: Request, number: int) -> tuple[int, dict[str, str], Any]:
        base = f"{self.url}/repositories/{self.repo_id}/issues/{number}/comments"
        return self._paged(request, self.comments[number], base, {})

    def _paged(
        self, request: Request, items: list[Any], base: str, keep: dict[str, str]
    ) -> tuple[int, dict[str, str], Any]:
        """One page of `items`, with GitHub's `Link` header to the next and the last."""
        per_page = min(100, int(request.query.get("per_page", "30")))
        page = int(request.query.get("page", "1"))
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        links = []
        if page < last:
            for rel, number in (("next", page + 1), ("last", last)):
                query = urlencode({**keep, "per_page": per_page, "page": number})
                links.append(f'<{base}?{query}>; rel="{rel}"')
        return 200, ({"Link": ", ".join(links)} if links else {}), chunk

    def _check_run(self, data: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        output = data.get("output") or {}
        if len(output.get("summary") or "") > 65535:
            return 422, {}, _invalid("output.summary is too long (maximum is 65535 characters)")
        if data.get("status") == "completed" and not data.get("conclusion"):
            return 422, {}, _invalid("conclusion is required when status is completed")
        self.next_id += 1
        full = f"{self.owner}/{self.repo}"
        run = {
            "id": self.next_id,
            "url": f"{self.url}/repos/{full}/check-runs/{self.next_id}",
            "html_url": f"{self.url}/{full}/runs/{self.next_id}",
            "name": data.get("name"),
            "head_sha": data.get("head_sha"),
            "status": data.get("status", "queued"),
            "conclusion": data.get("conclusion"),
            "started_at": NOW,
            "completed_at": data.get("completed_at"),
            "external_id": data.get("external_id", ""),
            "details_url": data.get("details_url"),
            "output": {
                "title": output.get("title"),
                "summary": output.get("summary"),
                "text": output.get("text"),
                "annotations_count": 0,
                "annotations_url": f"{self.url}/repos/{full}/check-runs/{self.next_id}/annotations",
            },
            "check_suite": {"id": 7},
            "app": {
                "id": 15368,
                "name": "GitHub Actions",
                "description": "",
                "external_url": self.url,
                "html_url": f"{self.url}/apps/github-actions",
                "owner": self._user("github"),
            },
            "pull_requests": [],
        }
        self.check_runs.append(run)
        return 201, {}, run


def _invalid(message: str) -> dict[str, Any]:
    return {"message": "Validation Failed", "errors": [{"message": message}]}


def make_handler(fake: FakeGitHub) -> Callable[..., BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            request = Request(
                method=self.command,
                path=parts.path,
                query={k: v[0] for k, v in parse_qs(parts.query).items()},
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw_path=parts.path,
            )
            status, headers, payload = fake.handle(request)
            if status < 0:
                self.close_connection = True
                self.connection.close()
                return
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _serve  # noqa: N815 - http.server's naming

    return Handler


class FakeGitHubServer:
    """Serves a FakeGitHub on an ephemeral port of 127.0.0.1 until `stop()`."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(fake))
        self.httpd.daemon_threads = True
        fake.url = f"http://127.0.0.1:{self.httpd.server_address[1]}{fake.prefix}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> FakeGitHubServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
