"""Secret keys and redaction (here and in Spark's UI); the reference page is up to date."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flinkish_cli.config import is_secret, load_configuration, redact, to_spark
from flinkish_cli.config import options as opts
from flinkish_cli.config.reference import render
from flinkish_cli.config.secrets import SPARK_DEFAULT_REDACTION, spark_redaction_regex

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


@pytest.mark.parametrize(
    "key",
    [
        "s3.secret-key",
        "s3.access-key",
        "s3.access.key",
        "fs.s3a.access.key",
        "fs.s3a.secret.key",
        "fs.s3a.bucket.logs.secret.key",
        "fs.s3a.encryption.key",
        "spark.hadoop.fs.s3a.secret.key",
        "spark.ssl.keyPassword",
        "security.ssl.rest.truststore-password",
        "metrics.reporter.x.token",
        "gcs.credentials",
        "spark.authenticate.secret",
        "api-key",
        "fs.azure.account.key.acct.blob.core.windows.net",
        "s3.encryption.key",
        "fs.s3a.encryption.key",
        "fs.s3a.bucket.logs.encryption.key",
        "fs.s3a.server-side-encryption.key",
        "spark.hadoop.fs.s3a.session.token",
        "s3.session.token",
        "spark.executorEnv.API_KEY",
        "spark.executorEnv.AWS_SECRET_ACCESS_KEY",
        "spark.hadoop.fs.gs.auth.service.account.private.key",
        "encryptionKey",
        "security.ssl.rest.keystore-password",
        "security.ssl.internal.key-password",
        "kafka.ssl.key.passphrase",
        "db.pwd",
        "fs.azure.sas.container.account.blob.core.windows.net",
        "sasl.jaas.config",
        "gcp.credentials-file",
        "spark.kubernetes.authenticate.oauthToken",
    ],
)
def test_secret_keys(key: str) -> None:
    assert is_secret(key)
    assert redact(key, "v") == "******"


@pytest.mark.parametrize(
    "key",
    [
        "s3.endpoint",
        "s3.path.style.access",
        "fs.s3a.endpoint",
        "parallelism.default",
        "state.backend.type",
        "spark.master",
        "pipeline.name",
        "pipeline.auto-generate-uids",
        "table.exec.state.ttl",
        "state.backend.latency-track.keyed-state-enabled",
        "spark.io.encryption.keySizeBits",
        "spark.io.encryption.keygen.algorithm",
        "spark.network.crypto.keyLength",
        "security.ssl.rest.key-alias",
        "security.ssl.rest.keystore",
        "security.kerberos.login.keytab",
        "spark.authenticate.enableSaslEncryption",
        "spark.sql.streaming.stateStore.providerClass",
        "execution.checkpointing.savepoint-dir",
        "s3.path-style-access",
    ],
)
def test_plain_keys(key: str) -> None:
    assert not is_secret(key)
    assert redact(key, "v") == "v"


def test_secret_options_are_flagged() -> None:
    secret = {o.key for o in opts.OPTIONS if o.secret}
    assert secret == {
        "s3.access-key",
        "s3.secret-key",
        "s3.session.token",
        "flinkish.web.auth-token",
    }


def test_secret_entries_are_redacted() -> None:
    config = load_configuration(dynamic=["s3.secret-key=hunter2", "spark.x.password=hunter3"])
    for key in ("s3.secret-key", "spark.x.password"):
        entry = config.entry(key)
        assert entry.secret
        assert entry.text == "******"
        assert "hunter" not in repr(entry.spark)
    assert config.get("s3.secret-key") == "hunter2"  # the typed value is real


def test_reference_page_is_up_to_date() -> None:
    assert DOCS.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is stale: run "
        "'python -m flinkish_cli.config.reference > docs/configuration.md'"
    )


def test_reference_module_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flinkish_cli.config.reference"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == render()


def test_reference_lists_every_key_and_the_precedence() -> None:
    page = render()
    for option in opts.OPTIONS:
        assert f"| `{option.key}` |" in page
        for alias in option.aliases:
            assert f"`{alias}`" in page
    assert "### Precedence" in page
    assert "registry default" in page


# -- the rule, both ways (hypothesis) ------------------------------------------------------------

ORDINARY = [
    "state", "backend", "type", "pipeline", "auto", "generate", "uids", "table", "exec", "ttl",
    "execution", "checkpointing", "interval", "parallelism", "default", "spark", "sql",
    "shuffle", "partitions", "memory", "size", "rocksdb", "dir", "mode", "enabled", "max",
    "timeout", "name", "jars", "retained", "num", "network", "fraction", "metrics", "reporter",
    "port", "keyed", "keystore", "keytab", "monkey", "hotkeys", "alias", "region", "endpoint",
    "path", "style", "encryption", "session", "sasl", "pass", "cred",
]  # fmt: skip
SEPARATORS = [".", "-", "_"]


def _join(words: list[str], separators: list[str], camel: list[bool]) -> str:
    key = words[0]
    for word, separator, hump in zip(words[1:], separators, camel, strict=False):
        key += word.capitalize() if hump else separator + word
    return key


_ordinary_keys = st.builds(
    _join,
    st.lists(st.sampled_from(ORDINARY), min_size=1, max_size=6),
    st.lists(st.sampled_from(SEPARATORS), min_size=6, max_size=6),
    st.lists(st.booleans(), min_size=6, max_size=6),
)

SENSITIVE_ENDINGS = [
    ".key", "-key", "_key", "Key", ".keys", "_KEY", ".password", "Password", ".secret",
    "-secret-key", ".access.key", "AccessKey", ".token", "Token", ".credentials",
    "-passphrase", ".pwd", "_PWD", ".sas", "-api-key", ".apikey", ".keystore-password",
]  # fmt: skip

_redaction = re.compile(spark_redaction_regex())


@given(_ordinary_keys)
def test_ordinary_keys_are_not_secret(key: str) -> None:
    assert not is_secret(key)
    assert _redaction.search(key) is None, "Spark's UI would hide an ordinary key"


@given(_ordinary_keys, st.sampled_from(SENSITIVE_ENDINGS), _ordinary_keys, st.booleans())
def test_keys_named_like_secrets_are_secret(
    head: str, ending: str, tail: str, at_end: bool
) -> None:
    key = head + ending if at_end else head + ending + "." + tail
    if not at_end and ending.lower().lstrip(".-_").startswith("key"):
        key = head + ending  # "key" counts only as the last word
    assert is_secret(key)
    assert _redaction.search(key) is not None


@given(st.text(alphabet="aeKkEeYySsPpWwDdTtoO.-_0z", min_size=1, max_size=24))
def test_spark_redaction_covers_every_secret(key: str) -> None:
    if is_secret(key):
        assert _redaction.search(key) is not None, key


def test_redaction_regex_keeps_sparks_default_first() -> None:
    assert SPARK_DEFAULT_REDACTION == "(?i)secret|password|token|access[.]?key|credential"
    assert spark_redaction_regex().startswith(SPARK_DEFAULT_REDACTION + "|")
    mine = spark_redaction_regex("(?i)corp-internal", ["spark.x.y"])
    assert mine.startswith("(?i)corp-internal|")
    assert mine.endswith(r"|^spark\.x\.y$)")
    assert SPARK_DEFAULT_REDACTION not in mine  # the user's regex takes the default's place


KEYS_FOR_JAVA = {
    "spark.hadoop.fs.s3a.access.key": True,
    "spark.hadoop.fs.s3a.secret.key": True,
    "spark.hadoop.fs.s3a.session.token": True,
    "spark.hadoop.fs.s3a.encryption.key": True,
    "spark.hadoop.fs.s3a.bucket.b.encryption.key": True,
    "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net": True,
    "spark.hadoop.fs.azure.sas.c.acct.blob.core.windows.net": True,
    "spark.executorEnv.API_KEY": True,
    "spark.ssl.keyPassword": True,
    "spark.x.encryptionKey": True,
    "spark.x.dbPwd": True,
    "spark.sql.shuffle.partitions": False,
    "spark.io.encryption.keySizeBits": False,
    "spark.authenticate.enableSaslEncryption": False,
    "spark.sql.streaming.stateStore.providerClass": False,
    "spark.hadoop.fs.s3a.endpoint": False,
    "spark.hadoop.fs.s3a.path.style.access": False,
}


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK")
def test_redaction_regex_in_javas_regex_engine(tmp_path: Path) -> None:
    """Spark compiles the pattern with java.util.regex: check it there, key by key."""
    (tmp_path / "Find.java").write_text(
        "import java.util.regex.Pattern;\n"
        "public class Find { public static void main(String[] a) {\n"
        "  Pattern p = Pattern.compile(a[0]);\n"
        "  for (int i = 1; i < a.length; i++) System.out.println(p.matcher(a[i]).find());\n"
        "}}\n"
    )
    subprocess.run(["javac", "Find.java"], cwd=tmp_path, check=True, timeout=120)
    keys = list(KEYS_FOR_JAVA)
    regex = to_spark(load_configuration(dynamic=["s3.secret-key=x"])).conf["spark.redaction.regex"]
    result = subprocess.run(
        ["java", "-cp", str(tmp_path), "Find", regex, *keys],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = dict(zip(keys, (line == "true" for line in result.stdout.split()), strict=True))
    assert found == KEYS_FOR_JAVA
    assert {k: is_secret(k) for k in keys} == KEYS_FOR_JAVA


# -- the translation carries the redaction to Spark ----------------------------------------------


def test_translation_redacts_every_secret_in_sparks_ui() -> None:
    translation = to_spark(
        load_configuration(
            dynamic=[
                "s3.access-key=AK",
                "s3.secret-key=SK",
                "s3.session.token=TOK",
                "s3.encryption.key=ENC",
                "flink.hadoop.fs.azure.account.key.acct.dfs.core.windows.net=AZ",
                "spark.hadoop.my.custom.credential=C",
                "s3.endpoint=http://minio:9000",
            ]
        )
    )
    regex = re.compile(translation.conf["spark.redaction.regex"])
    secrets = {k for k, v in translation.conf.items() if v in ("AK", "SK", "TOK", "ENC", "AZ", "C")}
    # the token brings S3A's credentials provider, named like a secret (Spark's own default
    # regex hides it too): one key more, never one less
    provider = "spark.hadoop.fs.s3a.aws.credentials.provider"
    assert secrets | {provider} == translation.secret_keys
    assert len(secrets) == 6
    for key in secrets:
        assert regex.search(key), key
        assert f"^{re.escape(key)}$" in regex.pattern, key
    assert not regex.search("spark.hadoop.fs.s3a.endpoint")
    assert set(translation.redacted().values()) & {"AK", "SK", "TOK", "ENC", "AZ", "C"} == set()


def test_users_redaction_regex_is_extended_not_replaced() -> None:
    translation = to_spark(
        load_configuration(dynamic=["spark.redaction.regex=(?i)internal", "s3.encryption.key=E"])
    )
    regex = translation.conf["spark.redaction.regex"]
    assert regex.startswith("(?i)internal|")
    assert re.search(regex, "spark.hadoop.fs.s3a.encryption.key")
    assert re.search(regex, "spark.internal.thing")
    assert "spark.redaction.regex" not in translation.secret_keys


def test_secret_options_in_the_reference_page() -> None:
    assert "s3.encryption.key" in render()
