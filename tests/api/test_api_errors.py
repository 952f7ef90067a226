"""The one error shape on every route: 401, 403, 404, 405, 422 and an unexpected 500."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from apihelpers import PROJECT, Api, document
from fastapi import FastAPI

METHODS = ("get", "post", "put", "patch", "delete")
VALID_PARAMS = {"project": PROJECT, "key": "kernel[n=64,variant=0]", "base": "main", "head": "main"}
# A value of the wrong type for each kind of parameter (FastAPI's own validation).
INVALID_PARAMS = {
    "limit": "many",
    "before": "yesterday",
    "since": "soon",
    "until": "later",
    "threshold": "big",
    "alpha": "2",
    "status": "maybe",
}


def _assert_shape(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, (response.request.url, response.text)
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message"}, body
    assert isinstance(body["error"]["code"], str) and body["error"]["code"]
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


def _operations(api: Api) -> list[tuple[str, str, dict[str, Any]]]:
    schema = api.client.get("/openapi.json").json()
    return [
        (path, method, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def _url(path: str) -> str:
    return path.replace("{run_id}", "00000000-0000-4000-8000-000000000000").replace(
        "{change_id}", "1"
    )


def _request(
    api: Api, method: str, path: str, params: dict[str, Any], headers: dict[str, str]
) -> httpx.Response:
    body: dict[str, Any] | None = None
    if method == "post":
        body = document()
    elif method == "patch":
        body = {"status": "acknowledged"}
    return api.client.request(method.upper(), _url(path), params=params, json=body, headers=headers)


def test_every_api_route_answers_401_403_405_422_in_one_shape(api: Api) -> None:
    operations = _operations(api)
    assert len(operations) >= 10
    api_routes = [op for op in operations if op[0].startswith("/api/v1/")]
    for path, method, operation in api_routes:
        names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        params = {n: VALID_PARAMS[n] for n in names if n in VALID_PARAMS}
        # No token at all.
        _assert_shape(_request(api, method, path, params, {}), 401)
        # A token of the wrong project (or the wrong scope) for this route.
        if path == "/api/v1/projects":
            continue  # lists what the token may see, never refuses a valid token
        token = api.read if method in ("post", "patch") else api.other_upload
        forbidden = _request(api, method, path, params, api.auth(token))
        if "{" in path and method == "get":
            _assert_shape(forbidden, 404)  # the run does not exist; nothing about others leaks
        else:
            _assert_shape(forbidden, 403)
        # A parameter of the wrong type.
        bad = {n: INVALID_PARAMS[n] for n in names if n in INVALID_PARAMS}
        if bad:
            _assert_shape(_request(api, method, path, {**params, **bad}, api.auth(api.upload)), 422)
    # A method no route has.
    for path, _, _ in operations:
        allowed = {m for p, m, _ in operations if p == path}
        missing = next(m for m in ("delete", "put", "patch", "post") if m not in allowed)
        _assert_shape(api.client.request(missing.upper(), _url(path)), 405)


def test_unknown_route_and_missing_parameter(api: Api) -> None:
    _assert_shape(api.client.get("/api/v1/nothing-here"), 404)
    _assert_shape(api.client.get("/nope", headers=api.auth(api.read)), 404)
    _assert_shape(api.get("/api/v1/benchmarks"), 422)  # project is required
    _assert_shape(api.get("/api/v1/series", project="acme/widgets"), 422)  # key is required
    patch = api.client.patch(
        "/api/v1/changes/1", json={"status": "gone"}, headers=api.auth(api.upload)
    )
    _assert_shape(patch, 422)
    not_json = api.client.patch(
        "/api/v1/changes/1",
        content=b"{",
        headers={**api.auth(api.upload), "Content-Type": "application/json"},
    )
    _assert_shape(not_json, 422)


def test_unexpected_exception_is_500_in_the_shape_with_no_details(
    db_url: str, start_api: Callable[..., Api]
) -> None:
    def add_broken_route(app: FastAPI) -> None:
        @app.get("/broken")
        def broken() -> None:
            raise RuntimeError("secret internals")

    api = start_api(db_url, app_hook=add_broken_route)
    response = api.client.get("/broken")
    _assert_shape(response, 500)
    assert "secret" not in response.text
    assert api.client.get("/healthz").status_code == 200


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/openapi.json"])
def test_probes_and_schema_need_no_token(api: Api, path: str) -> None:
    assert api.client.get(path).status_code == 200
