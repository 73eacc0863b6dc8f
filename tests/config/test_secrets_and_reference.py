"""Secret keys and redaction; the generated reference page matches the committed one."""

import subprocess
import sys
from pathlib import Path

import pytest

from flinkish_cli.config import is_secret, load_configuration, redact
from flinkish_cli.config import options as opts
from flinkish_cli.config.reference import render

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
    ],
)
def test_plain_keys(key: str) -> None:
    assert not is_secret(key)
    assert redact(key, "v") == "v"


def test_secret_options_are_flagged() -> None:
    secret = {o.key for o in opts.OPTIONS if o.secret}
    assert secret == {"s3.access-key", "s3.secret-key"}


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
