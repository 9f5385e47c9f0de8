"""A moto S3 server on loopback with one bucket, shared by the store and fleet tests."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

REGION = "eu-west-1"  # not us-east-1: moto's CreateBucket needs a location constraint there
BUCKET = "toolcap-tests"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
}


@contextmanager
def moto_s3() -> Iterator[dict[str, str]]:
    """Run the server (port chosen by the OS); yield its endpoint, host and port."""
    from moto import server as moto_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        import boto3  # type: ignore[import-untyped]

        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        # moto keeps its state per process: a server started earlier may have made it.
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(
                Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION}
            )
        yield {"endpoint": endpoint, "host": host, "port": str(port)}
    finally:
        server.stop()


def env_with(**extra: str) -> dict[str, str]:
    """This process's environment with the test credentials and no other AWS setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FSSPEC_"))}
    return {**env, **CREDENTIALS, **extra}
