"""A real S3-compatible server on the loopback interface for the object storage tests.

``s3_server`` starts moto's server mode (``ThreadedMotoServer``) on a free port of
127.0.0.1, creates two IAM users while authentication is still off — ``reader`` may do
anything in S3, ``lister`` may only list buckets — then turns moto's IAM authentication
on through its own ``/moto-api/reset-auth`` endpoint, so a wrong secret or a user without
``s3:GetObject`` is refused by the server itself. Stopped (and reset) after the module.
"""

from __future__ import annotations

import json
import socket
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["S3Server", "free_port", "s3_server"]

REGION = "us-east-1"


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on (just now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    """The running server: its endpoint, two users' keys and a boto3 client as ``reader``."""

    endpoint: str
    access_key_id: str
    secret_access_key: str
    denied_key_id: str
    denied_secret: str
    client: Any

    def options(self, **changes: str) -> dict[str, str]:
        """``enb.open(s3=...)`` settings for ``reader`` (``changes`` override)."""
        base = {
            "endpoint_url": self.endpoint,
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "region": REGION,
        }
        return {**base, **changes}

    def bucket(self, name: str) -> str:
        self.client.create_bucket(Bucket=name)
        return name

    def put(self, bucket: str, key: str, path: Path) -> str:
        """Upload one file; returns its ``s3://`` URL."""
        self.client.upload_file(str(path), bucket, key)
        return f"s3://{bucket}/{key}"

    def put_tree(self, bucket: str, prefix: str, folder: Path) -> str:
        """Upload every file under ``folder`` below ``prefix``; returns the prefix URL."""
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                rel = path.relative_to(folder).as_posix()
                self.client.upload_file(str(path), bucket, f"{prefix}/{rel}")
        return f"s3://{bucket}/{prefix}/"


def _post(url: str, data: bytes) -> None:
    headers = {"Content-Type": "text/plain"}  # a form body would hide the data from moto
    with urllib.request.urlopen(urllib.request.Request(url, data, headers, method="POST")) as r:
        r.read()


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port, with IAM authentication enforced."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        setup = {"endpoint_url": endpoint, "region_name": REGION}
        iam = boto3.client("iam", aws_access_key_id="setup", aws_secret_access_key="setup", **setup)
        keys = {}
        # lister may list, not read. AWS names listing and HeadBucket "s3:ListBucket"; moto
        # 5.2.6 checks the operation's own name instead, so the policy grants both spellings.
        listing = ["s3:ListBucket", "s3:ListObjectsV2", "s3:ListObjects", "s3:HeadBucket"]
        for user, action in (("reader", "s3:*"), ("lister", listing)):
            iam.create_user(UserName=user)
            keys[user] = iam.create_access_key(UserName=user)["AccessKey"]
            policy = {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": action, "Resource": "*"}]}  # fmt: skip
            iam.put_user_policy(UserName=user, PolicyName=user, PolicyDocument=json.dumps(policy))
        _post(f"{endpoint}/moto-api/reset-auth", b"0")  # from now on every request is checked
        reader, lister = keys["reader"], keys["lister"]
        client = boto3.client(
            "s3",
            aws_access_key_id=reader["AccessKeyId"],
            aws_secret_access_key=reader["SecretAccessKey"],
            **setup,
        )
        yield S3Server(
            endpoint,
            reader["AccessKeyId"],
            reader["SecretAccessKey"],
            lister["AccessKeyId"],
            lister["SecretAccessKey"],
            client,
        )
    finally:
        _post(f"{endpoint}/moto-api/reset-auth", b"inf")
        _post(f"{endpoint}/moto-api/reset", b"")
        server.stop()
