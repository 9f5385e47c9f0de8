"""An error answer over a limit goes on as its code and its bounded message, whatever
shape it came in; one within every limit goes on as it came."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolcap import Policy
from toolcap._config import Config
from toolcap.proxy._contracts import PROXY_ERROR, dumps
from toolcap.proxy._hooks import ProxyHooks

KB = 1024
BIG = "x" * (10 * 1024 * KB)


def hooks() -> ProxyHooks:
    return ProxyHooks(Policy(Config.from_mapping({})), wire_budget=64 * KB)


def answer(**members: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, **members}


@pytest.mark.parametrize("message, code, said", [
    (answer(error={"code": -1, "message": BIG, "data": BIG}), -1, "xxx"),
    (answer(error={"code": -2, "data": BIG}), -2, "neither a result nor an error"),
    (answer(error={"code": -3, "message": {"text": BIG}}), -3, "neither a result"),
    (answer(error=BIG), PROXY_ERROR, "neither a result"),
    (answer(result=BIG), PROXY_ERROR, "neither a result"),
    (answer(error={"code": True, "message": "short", "extra": BIG}), PROXY_ERROR, "short"),
])
def test_an_answer_over_the_limit_goes_on_as_its_code_and_its_bounded_message(
    message: dict[str, Any], code: int, said: str,
) -> None:
    out = hooks().error_answer(message, len(dumps(message)))
    assert len(dumps(out)) <= 65 * KB
    assert out["id"] == 7 and set(out) == {"jsonrpc", "id", "error"}
    assert set(out["error"]) == {"code", "message"} and out["error"]["code"] == code
    assert said in out["error"]["message"]


def test_an_error_within_every_limit_goes_on_as_it_came() -> None:
    message = answer(error={"code": -1, "message": "no", "data": {"why": [1, 2]}})
    assert hooks().error_answer(message, len(json.dumps(message))) is message
