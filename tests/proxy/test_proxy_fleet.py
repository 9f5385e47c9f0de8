"""A fleet: two `toolcap proxy --listen` replicas sharing one artifact store on S3.

An artifact one replica keeps is read back by `read_artifact` through the other,
so replicas behind any load balancer behave as one. The S3 server is moto's, on
loopback.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator

import pytest
from anyio.from_thread import BlockingPortal

from proxy.proxy_helpers import BIGSERVER, REF, base_env, text_of, write_config
from proxy.serve_helpers import HttpClient, Listener, raw

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from moto_s3 import BUCKET, env_with, moto_s3

UPSTREAM = ["--", sys.executable, str(BIGSERVER)]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Listener, Listener]]:
    home = tmp_path_factory.mktemp("fleet")
    config = write_config(home / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    store = f"s3://{BUCKET}/{uuid.uuid4().hex}/artifacts"
    with moto_s3() as s3:
        env = {
            **env_with(AWS_ENDPOINT_URL=s3["endpoint"]),
            **base_env(home / "unused", config),
            "TOOLCAP_ARTIFACTS": store,
        }
        argv = ["--listen", "127.0.0.1:0", *UPSTREAM]
        with (
            Listener(argv, env, home / "a.log") as first,
            Listener(argv, env, home / "b.log") as second,
        ):
            yield first, second


def test_an_artifact_kept_by_one_replica_is_read_back_through_another(
    portal: BlockingPortal, replicas: tuple[Listener, Listener]
) -> None:
    first, second = replicas
    assert first.url != second.url
    with HttpClient(portal, first.url) as client:
        (text,) = text_of(client.call("big_text", {"size": 2_000_000}))
    assert len(text.encode()) <= 32 * 1024
    (ref,) = REF.findall(text)
    with HttpClient(portal, second.url) as client:
        back = client.call("read_artifact", {"ref": ref, "offset": 0, "length": 20})
        assert text_of(back)[0] == "line 0000000 the qui"
        found = client.call("read_artifact", {"ref": ref, "pattern": "line 0012345 "})
        assert "line 0012345 " in text_of(found)[0]


def test_a_stateless_client_that_lists_on_one_replica_gets_a_valid_typed_result_from_another(
    portal: BlockingPortal, replicas: tuple[Listener, Listener]
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    first, second = replicas
    with HttpClient(portal, first.url, stateless=True) as client:
        assert client.session is not None
        (schema,) = [tool.output_schema for tool in portal.call(client.session.list_tools).tools
                     if tool.name == "listing"]
    assert schema is not None
    # The client's next request goes to the other replica, as a load balancer may send it.
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}}
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "listing", "arguments": {"count": 2000}, "_meta": meta}}
    reply = raw(second.url, "POST", json.dumps(call).encode(),
                {"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                 "Mcp-Name": "listing"})
    (data,) = [line[5:] for line in reply.text.splitlines() if line.startswith("data:")]
    result = json.loads(data)["result"]
    jsonschema.validate(result["structuredContent"], schema)
    assert len(json.dumps(result["structuredContent"], separators=(",", ":"))) <= 32 * 1024
