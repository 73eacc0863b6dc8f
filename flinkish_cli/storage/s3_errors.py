"""What went wrong talking to S3, in the user's terms: botocore's and boto3's errors as
:class:`~flinkish_cli.errors.StorageError`, each with a hint naming the Flink key to check.

Secrets never reach a message: every text taken from an error goes through the storage
settings' ``redact``.
"""

from __future__ import annotations

from collections.abc import Callable

from flinkish_cli.errors import StorageError
from flinkish_cli.storage.base import StorageNotFoundError
from flinkish_cli.storage.uri import parse_s3

CONF = "the Flink configuration (flink-conf.yaml or config.yaml)"
NOT_FOUND = {"NoSuchKey", "404", "NotFound"}
DENIED = {"AccessDenied", "403", "Forbidden", "AllAccessDisabled", "AccountProblem"}
REGION = {"AuthorizationHeaderMalformed", "PermanentRedirect", "301", "IllegalLocationConstraint"}
#: a conditional write that lost (``If-None-Match: *`` on a key that exists)
PRECONDITION_FAILED = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
#: a server that does not implement a request (conditional writes, on some)
NOT_IMPLEMENTED = {"NotImplemented", "501"}
BUSY = {"SlowDown", "503", "ServiceUnavailable", "InternalError", "500", "RequestTimeout"}


def translate(
    error: BaseException,
    action: str,
    path: str,
    *,
    where: str,
    redact: Callable[[str], str],
    attempts: int,
    no_bucket: Callable[[str], StorageError],
) -> StorageError | None:
    """The StorageError ``error`` means (None when it is not botocore's): ``where`` names
    the server, ``attempts`` the retries made, ``no_bucket`` builds the missing-bucket error."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        IncompleteReadError,
        NoCredentialsError,
        ParamValidationError,
        PartialCredentialsError,
        ProfileNotFound,
        ReadTimeoutError,
        ResponseStreamingError,
        SSLError,
    )

    cause = root_cause(error, (ClientError, BotoCoreError))
    if cause is None:
        return None
    bucket = bucket_of(path)

    if isinstance(cause, ClientError):
        code = error_code(cause)
        detail = redact(str(cause.response.get("Error", {}).get("Message") or code))
        if code == "NoSuchBucket":
            return no_bucket(bucket)
        if code in NOT_FOUND:
            return StorageNotFoundError(path)
        if code == "InvalidAccessKeyId":
            return StorageError(
                f"{where} does not know the access key flinkish used (to {action} {path}).",
                f"Check s3.access-key (and s3.endpoint) in {CONF}.",
            )
        if code == "SignatureDoesNotMatch":
            return StorageError(
                f"{where} rejected the request to {action} {path}: the secret key does not "
                "match the access key.",
                f"Check s3.secret-key in {CONF}.",
            )
        if code in ("InvalidToken", "ExpiredToken", "TokenRefreshRequired"):
            return StorageError(
                f"{where} rejected the session token (to {action} {path}): {detail}",
                "Renew the temporary AWS credentials.",
            )
        if code == "RequestTimeTooSkewed":
            return StorageError(
                f"{where} rejected the request to {action} {path}: this machine's clock is off.",
                "Synchronise the clock (NTP).",
            )
        if code in DENIED:
            return StorageError(
                f"Access denied: {where} does not allow flinkish to {action} {path}.",
                f"Check s3.access-key and s3.secret-key in {CONF}, and that this user may "
                f"{action} objects in the bucket '{bucket}'.",
            )
        if code in REGION:
            return StorageError(
                f"The S3 bucket '{bucket}' is in another region than flinkish used "
                f"(to {action} {path}): {detail}",
                f"Set s3.region in {CONF} to the bucket's region.",
            )
        if code == "InvalidBucketName":
            return StorageError(
                f"'{bucket}' is not a valid S3 bucket name ({path}).",
                "Write S3 paths as s3://bucket/path.",
            )
        if code in BUSY:
            return StorageError(
                f"{where} kept failing to {action} {path} ({code}: {detail}) after "
                f"{attempts} attempts.",
                "The server is overloaded or failing; try again later.",
            )
        return StorageError(f"{where} refused to {action} {path}: {code}: {detail}")

    text = redact(str(cause))
    if isinstance(cause, SSLError):
        return StorageError(
            f"TLS failed talking to {where} (to {action} {path}): {text}",
            f"Check s3.endpoint in {CONF} (http:// or https://) and the CA certificates.",
        )
    if isinstance(cause, (EndpointConnectionError, ConnectTimeoutError)):
        return StorageError(
            f"Cannot connect to {where} (to {action} {path}).",
            f"Check s3.endpoint in {CONF}, and that the server runs and is reachable "
            "from this machine.",
        )
    if isinstance(
        cause,
        (ReadTimeoutError, ConnectionClosedError, ResponseStreamingError, IncompleteReadError),
    ):
        return StorageError(
            f"{where} stopped answering (to {action} {path}): {text}",
            "Check the network and the server; try again.",
        )
    if isinstance(cause, NoCredentialsError):
        return StorageError(
            f"No S3 credentials to {action} {path}.",
            f"Set s3.access-key and s3.secret-key in {CONF}, or provide AWS credentials "
            "in the environment (AWS_ACCESS_KEY_ID...) or an instance role.",
        )
    if isinstance(cause, (PartialCredentialsError, ProfileNotFound)):
        return StorageError(
            f"The AWS credentials configuration is incomplete: {text}",
            f"Set s3.access-key and s3.secret-key in {CONF}, or fix the AWS profile.",
        )
    if isinstance(cause, ParamValidationError):
        return StorageError(f"Invalid S3 request to {action} {path}: {text}")
    return StorageError(f"S3 failed to {action} {path}: {text}")


def error_code(error: BaseException) -> str:
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def bucket_of(path: str) -> str:
    try:
        return parse_s3(path).bucket
    except StorageError:
        return "?"


def root_cause(error: BaseException, wanted: tuple[type, ...]) -> BaseException | None:
    """The first of ``wanted`` in ``error``'s chain (boto3 wraps transfer failures)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, wanted):
            return current
        seen.add(id(current))
        current = (
            getattr(current, "last_exception", None) or current.__cause__ or current.__context__
        )
    return None
