"""Flink's documented ways of giving S3 credentials, with Spark's checkpoints on S3 through
S3A, against a moto server that checks every request's signature (``enable_authentication``):

- temporary credentials (an STS session: access key, secret key and session token) in
  S3A's own keys, ``fs.s3a.session.token`` with S3A's ``TemporaryAWSCredentialsProvider``;
- no keys in the configuration: the AWS credentials chain finds them, in the environment
  (``AWS_ACCESS_KEY_ID``...) or in a profile file (``AWS_SHARED_CREDENTIALS_FILE``).

Each job checkpoints to S3 and takes a savepoint there (S3A in the driver, boto3 in
flinkish): the server accepts only correctly signed requests of a known identity (a session
token must match its key), so a job that commits batches shows the credentials reached both.
The secrets are never in a process's arguments, a log or a status file.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures.cycle import Cycle, savepoint_path
from tests.fixtures.flinkish_env import FlinkishEnv
from tests.fixtures.s3_faults import MOTO_S3A
from tests.fixtures.s3server import S3Server, start_s3_server

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]

ALLOW_S3 = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
)
TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
    }
)


@dataclass
class Identities:
    """An authenticating server, its bucket, a user's keys and a role session's keys."""

    server: S3Server
    bucket: str
    user: dict[str, str]  # AccessKeyId, SecretAccessKey
    session: dict[str, str]  # AccessKeyId, SecretAccessKey, SessionToken

    def secrets(self) -> list[str]:
        return [
            self.user["SecretAccessKey"],
            self.session["SecretAccessKey"],
            self.session["SessionToken"],
        ]


@pytest.fixture(scope="module")
def identities() -> Iterator[Identities]:
    with start_s3_server() as server:
        iam = server.client("iam")
        iam.create_user(UserName="flinkish")
        iam.put_user_policy(UserName="flinkish", PolicyName="s3", PolicyDocument=ALLOW_S3)
        user = iam.create_access_key(UserName="flinkish")["AccessKey"]
        role = iam.create_role(RoleName="checkpoints", AssumeRolePolicyDocument=TRUST)["Role"]
        iam.put_role_policy(RoleName="checkpoints", PolicyName="s3", PolicyDocument=ALLOW_S3)
        session = server.client("sts").assume_role(
            RoleArn=role["Arn"], RoleSessionName="flinkish-job", DurationSeconds=3600
        )["Credentials"]
        bucket = server.bucket()
        server.enable_authentication()
        yield Identities(server, bucket, user, session)


def _conf(ids: Identities, prefix: str, **keys: str) -> dict[str, str]:
    server = ids.server
    return {
        "s3.endpoint": server.endpoint,
        "s3.path.style.access": "true",
        "s3.region": server.region,
        **MOTO_S3A,
        "execution.checkpointing.dir": f"{ids.bucket}/{prefix}/checkpoints",
        "execution.checkpointing.savepoint-dir": f"{ids.bucket}/{prefix}/savepoints",
        **keys,
    }


def _checkpoints_and_savepoint(env: FlinkishEnv, ids: Identities) -> None:
    """A job that checkpoints to S3 and takes a savepoint there, its secrets kept out of
    every process's arguments while it runs, then out of its logs and status files."""
    cycle = Cycle(env)
    cycle.add_input(2)
    try:
        job = cycle.start()
        cycle.wait_until_all_processed(timeout=300)
        for pid, command in _processes_of(env):
            for secret in ids.secrets():
                assert secret not in command, (pid, command[:300])
        path = savepoint_path(env.run("savepoint", job, check=True).stdout)
        env.run("cancel", job, check=True)
    finally:
        for listed in env.list_jobs():
            if listed["state"] not in ("FINISHED", "FAILED", "CANCELED"):
                env.run("cancel", listed["jid"], timeout=120)
        env.wait_until_processes_end()  # their registry goes with the module's server
    cycle.check_exactly_once()
    bucket = ids.bucket.removeprefix("s3://")
    client = ids.server.client(
        access_key=ids.user["AccessKeyId"], secret_key=ids.user["SecretAccessKey"]
    )
    keys = [
        entry["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        for entry in page.get("Contents", ())
    ]
    prefix = path.removeprefix(ids.bucket + "/")
    assert f"{prefix}/_metadata" in keys, keys
    assert any(f"/checkpoints/{job}/counts/commits/" in f"/{k}" for k in keys), keys
    status_files = [k for k in keys if "/_flinkish/" in k]
    assert status_files, keys
    texts = [client.get_object(Bucket=bucket, Key=k)["Body"].read() for k in status_files]
    texts += [p.read_bytes() for p in env.root.rglob("*") if _readable(p)]
    for secret in ids.secrets():
        assert not any(secret.encode() in text for text in texts)


def _readable(path: Path) -> bool:
    """A file of the test's own directory worth reading for secrets: logs, status, conf
    aside (the configuration file holds the keys the test gave it, by design)."""
    return path.is_file() and path.suffix not in (".parquet", ".jar") and "conf" not in path.parts


def _processes_of(env: FlinkishEnv) -> list[tuple[int, str]]:
    """Every process of the test's jobs (the supervisor, spark-submit's JVM, the Python
    driver) with its command line."""
    found = []
    for pid in env.processes():
        with contextlib.suppress(OSError):
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            found.append((pid, command.decode(errors="replace")))
    assert any("java" in command for _, command in found), found  # Spark's JVM was there
    return found


def test_temporary_credentials_in_s3as_keys(flinkish_env: FlinkishEnv, identities) -> None:  # type: ignore[no-untyped-def]
    """An STS session's keys as S3A spells them, with S3A's temporary-credentials provider
    named, as Hadoop's S3A documentation (and Flink's, for flink-s3-fs-hadoop) has them."""
    ids, session = identities, identities.session
    flinkish_env.write_conf(
        _conf(
            ids,
            "temporary",
            **{
                "fs.s3a.access.key": session["AccessKeyId"],
                "fs.s3a.secret.key": session["SecretAccessKey"],
                "fs.s3a.session.token": session["SessionToken"],
                "fs.s3a.aws.credentials.provider": (
                    "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
                ),
            },
        )
    )
    _checkpoints_and_savepoint(flinkish_env, ids)


def test_no_keys_given_the_credentials_chain_finds_them(  # type: ignore[no-untyped-def]
    flinkish_env: FlinkishEnv, identities, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No keys in the configuration: flinkish (boto3) and S3A find them where the AWS SDKs
    look, here a profile file (``AWS_SHARED_CREDENTIALS_FILE``); then the environment's
    ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, which come first."""
    ids, user = identities, identities.user
    profile = flinkish_env.conf_dir / "aws-credentials"
    profile.write_text(
        "[default]\n"
        f"aws_access_key_id = {user['AccessKeyId']}\n"
        f"aws_secret_access_key = {user['SecretAccessKey']}\n"
    )
    profile.chmod(0o600)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(profile))
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    flinkish_env.write_conf(_conf(ids, "profile"))
    _checkpoints_and_savepoint(flinkish_env, ids)

    profile.write_text("[default]\n")  # the environment's keys now, and only them
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", user["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", user["SecretAccessKey"])
    (flinkish_env.root / "environment").mkdir()
    env = FlinkishEnv.under(flinkish_env.root / "environment", conf=False)
    env.write_conf(_conf(ids, "environment"))
    _checkpoints_and_savepoint(env, ids)
