"""Translation of Flink keys to Spark settings (to_spark) and the per-entry Spark column."""

import ast
import sys
from pathlib import Path

import pytest

from flinkish_cli.config import SparkTranslation, load_configuration, to_spark
from flinkish_cli.config import options as opts
from flinkish_cli.config.mappings import FILE_SYSTEM_CHECKPOINTS, HDFS_PROVIDER, ROCKSDB_PROVIDER
from flinkish_cli.config.secrets import spark_redaction_regex

R = "spark.sql.streaming.stateStore.rocksdb."
PROM = {
    "spark.ui.prometheus.enabled": "true",
    "spark.metrics.conf.*.sink.prometheusServlet.class": (
        "org.apache.spark.metrics.sink.PrometheusServlet"
    ),
    "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus",
}


def spark(*dynamic: str) -> dict[str, str]:
    return to_spark(load_configuration(dynamic=list(dynamic))).conf


def test_defaults() -> None:
    translation = to_spark(load_configuration())
    assert isinstance(translation, SparkTranslation)
    assert translation.conf == {
        "spark.default.parallelism": "1",
        "spark.sql.shuffle.partitions": "1",
        # a parallelism is a count of tasks: adaptive execution merges no shuffle partitions
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.sql.streaming.minBatchesToRetain": "10",
        "spark.sql.streaming.stateStore.providerClass": HDFS_PROVIDER,
        # flinkish's 1 min, not Spark's 10 min, of old file source and sink log compactions
        "spark.sql.streaming.fileSource.log.cleanupDelay": "60000ms",
        "spark.sql.streaming.fileSink.log.cleanupDelay": "60000ms",
        # checkpoints on local disk (~/.flinkish/checkpoints): renamed without a process
        "spark.sql.streaming.checkpointFileManagerClass": FILE_SYSTEM_CHECKPOINTS,
        "spark.redaction.regex": spark_redaction_regex(),
    }
    assert translation.master == "local[1]"
    assert translation.secret_keys == frozenset()
    assert "execution.checkpointing.num-retained" in translation.approximate


def test_provider_classes_exist_in_pyspark_jars() -> None:
    import zipfile

    import flinkish_cli

    site = Path(flinkish_cli.__file__).resolve().parents[1]
    candidates = list(Path(sys.prefix).glob("lib/python3*/site-packages/pyspark/jars"))
    candidates += list(site.glob("pyspark/jars"))
    jars = [j for c in candidates for j in c.glob("spark-sql_*.jar")]
    if not jars:
        pytest.skip("pyspark's jars are not installed")
    names = set(zipfile.ZipFile(jars[0]).namelist())
    for provider in (HDFS_PROVIDER, ROCKSDB_PROVIDER, FILE_SYSTEM_CHECKPOINTS):
        assert provider.replace(".", "/") + ".class" in names


@pytest.mark.parametrize(
    ("directory", "local"),
    [
        ("/data/checkpoints", True),
        ("file:///data/checkpoints", True),
        ("relative/checkpoints", True),
        ("s3://bucket/checkpoints", False),
        ("s3a://bucket/checkpoints", False),
        ("hdfs://nn:8020/checkpoints", False),
    ],
)
def test_local_checkpoints_are_written_without_filecontext(directory: str, local: bool) -> None:
    conf = spark(f"execution.checkpointing.dir={directory}")
    manager = conf.get("spark.sql.streaming.checkpointFileManagerClass")
    assert manager == (FILE_SYSTEM_CHECKPOINTS if local else None)
    # the user's own Spark setting wins
    mine = spark(
        f"execution.checkpointing.dir={directory}",
        "spark.sql.streaming.checkpointFileManagerClass=my.Manager",
    )
    assert mine["spark.sql.streaming.checkpointFileManagerClass"] == "my.Manager"


@pytest.mark.parametrize(
    ("dynamic", "expected"),
    [
        (
            ["state.backend.type=rocksdb"],
            {"spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER},
        ),
        (
            ["execution.checkpointing.incremental=true", "state.backend.type=rocksdb"],
            {R + "changelogCheckpointing.enabled": "true"},
        ),
        (["state.backend.rocksdb.memory.managed=false"], {R + "boundedMemoryUsage": "false"}),
        (
            ["state.backend.rocksdb.memory.fixed-per-tm=1gb"],
            {R + "boundedMemoryUsage": "true", R + "maxMemoryUsageMB": "1024"},
        ),
        (
            [
                "state.backend.rocksdb.memory.fixed-per-slot=300mb",
                "state.backend.rocksdb.memory.fixed-per-tm=1gb",
                "taskmanager.numberOfTaskSlots=2",
            ],
            {R + "boundedMemoryUsage": "true", R + "maxMemoryUsageMB": "600"},
        ),
        (["state.backend.rocksdb.block.cache-size=100mb"], {R + "blockCacheSizeMB": "100"}),
        (["state.backend.rocksdb.block.cache-size=1500kb"], {R + "blockCacheSizeMB": "2"}),
        (["state.backend.rocksdb.block.blocksize=16kb"], {R + "blockSizeKB": "16"}),
        (["state.backend.rocksdb.writebuffer.size=32mb"], {R + "writeBufferSizeMB": "32"}),
        (["state.backend.rocksdb.writebuffer.count=4"], {R + "maxWriteBufferNumber": "4"}),
        (["state.backend.rocksdb.files.open=512"], {R + "maxOpenFiles": "512"}),
        (
            ["state.backend.rocksdb.memory.write-buffer-ratio=0.25"],
            {R + "writeBufferCacheRatio": "0.25"},
        ),
        (
            ["state.backend.rocksdb.memory.high-prio-pool-ratio=0.2"],
            {R + "highPriorityPoolRatio": "0.2"},
        ),
        (["state.backend.rocksdb.localdir=/ssd/rocks"], {"spark.local.dir": "/ssd/rocks"}),
        (
            ["state.backend.rocksdb.localdir=/ssd/rocks", "io.tmp.dirs=/a:/b"],
            {"spark.local.dir": "/a,/b"},
        ),
        (["io.tmp.dirs=/a,/b"], {"spark.local.dir": "/a,/b"}),
        (
            ["execution.checkpointing.num-retained=50"],
            {"spark.sql.streaming.minBatchesToRetain": "50"},
        ),
        (
            ["execution.checkpointing.num-retained=3"],
            {"spark.sql.streaming.minBatchesToRetain": "10"},
        ),
        (
            ["parallelism.default=4"],
            {
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "4",
                "spark.sql.adaptive.coalescePartitions.enabled": "false",
            },
        ),
        (["taskmanager.numberOfTaskSlots=3"], {"spark.executor.cores": "3"}),
        (
            ["jobmanager.memory.process.size=1600m"],
            {"spark.driver.memory": "1216m", "spark.driver.memoryOverhead": "384m"},
        ),
        (
            ["taskmanager.memory.process.size=8g"],
            {"spark.executor.memory": "7372m", "spark.executor.memoryOverhead": "820m"},
        ),
        (
            ["taskmanager.memory.process.size=1g"],
            {"spark.executor.memory": "640m", "spark.executor.memoryOverhead": "384m"},
        ),
        (["taskmanager.memory.network.fraction=0.1"], {"spark.reducer.maxSizeInFlight": "64m"}),
        (["taskmanager.memory.network.fraction=0.2"], {"spark.reducer.maxSizeInFlight": "128m"}),
        (
            ["taskmanager.memory.network.min=256mb", "taskmanager.numberOfTaskSlots=2"],
            {"spark.reducer.maxSizeInFlight": "64m"},
        ),
        (
            ["taskmanager.memory.network.max=32mb", "taskmanager.memory.network.min=16mb"],
            {"spark.reducer.maxSizeInFlight": "16m"},
        ),
        (["taskmanager.memory.segment-size=64kb"], {"spark.shuffle.file.buffer": "64k"}),
        (["pipeline.name=orders"], {"spark.app.name": "orders"}),
        (["pipeline.jars=/a.jar;/b.jar"], {"spark.jars": "/a.jar,/b.jar"}),
        (["python.files=a.py,deps.zip"], {"spark.submit.pyFiles": "a.py,deps.zip"}),
        (["python.archives=venv.tar.gz#venv"], {"spark.archives": "venv.tar.gz#venv"}),
        (["python.executable=venv/bin/python"], {"spark.pyspark.python": "venv/bin/python"}),
        (
            ["python.client.executable=/usr/bin/python3"],
            {"spark.pyspark.driver.python": "/usr/bin/python3"},
        ),
        (["s3.endpoint=http://minio:9000"], {"spark.hadoop.fs.s3a.endpoint": "http://minio:9000"}),
        (["s3.access-key=AK"], {"spark.hadoop.fs.s3a.access.key": "AK"}),
        (["s3.secret-key=SK"], {"spark.hadoop.fs.s3a.secret.key": "SK"}),
        (["s3.path.style.access=TRUE"], {"spark.hadoop.fs.s3a.path.style.access": "true"}),
        (["s3.region=eu-west-1"], {"spark.hadoop.fs.s3a.endpoint.region": "eu-west-1"}),
        (
            ["s3.connection.maximum=50"],
            {"spark.hadoop.fs.s3a.connection.maximum": "50"},
        ),
        (["fs.s3a.fast.upload=true"], {"spark.hadoop.fs.s3a.fast.upload": "true"}),
        (["flink.hadoop.dfs.replication=2"], {"spark.hadoop.dfs.replication": "2"}),
        (
            [
                "metrics.reporter.prom.factory.class="
                "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
            ],
            PROM,
        ),
        (["metrics.reporter.prom.port=9250-9260"], {**PROM, "spark.ui.port": "9250"}),
        (["metrics.reporter.prom.filter.includes=*:*"], PROM),
        (
            ["env.java.opts.all=-Da=1"],
            {"spark.driver.extraJavaOptions": "-Da=1", "spark.executor.extraJavaOptions": "-Da=1"},
        ),
        (
            ["env.java.opts.all=-Da=1", "env.java.opts.jobmanager=-Db=2"],
            {
                "spark.driver.extraJavaOptions": "-Da=1 -Db=2",
                "spark.executor.extraJavaOptions": "-Da=1",
            },
        ),
        (["env.java.opts.taskmanager=-Dc=3"], {"spark.executor.extraJavaOptions": "-Dc=3"}),
        (["spark.sql.adaptive.enabled=false"], {"spark.sql.adaptive.enabled": "false"}),
    ],
)
def test_translation(dynamic: list[str], expected: dict[str, str]) -> None:
    conf = spark(*dynamic)
    for key, value in expected.items():
        assert conf.get(key) == value, key


def test_network_defaults_give_flinks_share() -> None:
    # 1728 MiB process - 256 MiB metaspace - 192 MiB overhead = 1280 MiB; x 0.1 = 128 MiB;
    # half of the slot's share for a task's inputs = 64 MiB.
    conf = spark("taskmanager.memory.process.size=1728m", "taskmanager.memory.network.min=1mb")
    assert conf["spark.reducer.maxSizeInFlight"] == "64m"
    bigger = spark(
        "taskmanager.memory.process.size=4g",
        "taskmanager.numberOfTaskSlots=2",
        "taskmanager.memory.network.fraction=0.1",
    )
    # 4096 - 256 - 409.6 = 3430.4 MiB x 0.1 = 343 MiB; / 2 slots / 2 = 85 MiB
    assert bigger["spark.reducer.maxSizeInFlight"] == "85m"


def test_spark_keys_win_over_translations() -> None:
    conf = spark("parallelism.default=4", "spark.sql.shuffle.partitions=200")
    assert conf["spark.sql.shuffle.partitions"] == "200"
    assert conf["spark.default.parallelism"] == "4"


def test_master() -> None:
    assert to_spark(load_configuration(dynamic=["parallelism.default=3"])).master == "local[3]"
    slots = load_configuration(dynamic=["taskmanager.numberOfTaskSlots=4", "parallelism.default=2"])
    assert to_spark(slots).master == "local[4]"
    explicit = load_configuration(dynamic=["spark.master=spark://h:7077"])
    translation = to_spark(explicit)
    assert translation.master == "spark://h:7077"
    assert translation.conf["spark.master"] == "spark://h:7077"


def test_secrets_are_real_in_conf_and_listed() -> None:
    translation = to_spark(
        load_configuration(
            dynamic=["s3.access-key=AK", "s3.secret-key=SK", "spark.ssl.keyPassword=pw"]
        )
    )
    assert translation.conf["spark.hadoop.fs.s3a.secret.key"] == "SK"
    assert translation.conf["spark.hadoop.fs.s3a.access.key"] == "AK"
    assert translation.secret_keys == {
        "spark.hadoop.fs.s3a.access.key",
        "spark.hadoop.fs.s3a.secret.key",
        "spark.ssl.keyPassword",
    }
    shown = translation.redacted()
    assert shown["spark.hadoop.fs.s3a.secret.key"] == "******"
    assert shown["spark.ssl.keyPassword"] == "******"


def test_approximations_are_explained() -> None:
    translation = to_spark(
        load_configuration(
            dynamic=["jobmanager.memory.process.size=2g", "taskmanager.memory.network.max=1gb"]
        )
    )
    assert "heap" in translation.approximate["jobmanager.memory.process.size"]
    assert "maxSizeInFlight" in translation.approximate["taskmanager.memory.network.max"]
    assert "pipeline.name" not in translation.approximate


def test_every_option_translates_without_conflict() -> None:
    """Setting every key at once gives one consistent Spark configuration."""
    values = {
        "duration": "5 s",
        "memory": "2g",
        "int": "2",
        "float": "0.5",
        "bool": "true",
        "str": "x",
        "uri": "/tmp/x",
        "list": "a,b",
        "duration or cron": "0 */6 * * *",
        "ports": "50100-50200",
    }
    dynamic = []
    for option in opts.OPTIONS:
        name = option.type.name
        value = option.type.values[-1] if name == "enum" else values[name]  # type: ignore[attr-defined]
        if option.key == "metrics.reporter.prom.port":
            value = "9249"
        if option.key == "flinkish.web.session-cluster":
            value = "sc://127.0.0.1:15002"
        if option.key in ("heartbeat.timeout", "restart-strategy.exponential-delay.max-backoff"):
            value = "1 min"
        if option.key == "execution.checkpointing.interval":
            value = "2 s"
        if option.key in ("pipeline.max-parallelism", "taskmanager.memory.network.max"):
            value = "4g" if name == "memory" else "128"
        if option.key == "taskmanager.memory.segment-size":
            value = "64kb"
        if option.key == "restart-strategy.exponential-delay.backoff-multiplier":
            value = "2"
        if option.key == "rest.server.max-content-length":
            value = "4096"
        if option.key in ("job.autoscaler.utilization.min", "job.autoscaler.utilization.max"):
            value = "0.3" if option.key.endswith("min") else "0.9"
        dynamic.append(f"{option.key}={value}")
    config = load_configuration(dynamic=dynamic)
    translation = to_spark(config)
    assert translation.conf
    for option in opts.OPTIONS:
        entry = config.entry(option.key)
        assert entry.source.kind == "dynamic"
        if option.spark is not None:
            assert entry.spark or option.key in (
                "state.backend.rocksdb.localdir",  # io.tmp.dirs wins
            ), option.key


def test_entry_spark_column_is_redacted() -> None:
    config = load_configuration(dynamic=["s3.secret-key=SK", "fs.s3a.bucket.b.secret.key=BK"])
    assert config.entry("s3.secret-key").spark == {"spark.hadoop.fs.s3a.secret.key": "******"}
    assert config.entry("fs.s3a.bucket.b.secret.key").spark == {
        "spark.hadoop.fs.s3a.bucket.b.secret.key": "******"
    }
    assert to_spark(config).conf["spark.hadoop.fs.s3a.bucket.b.secret.key"] == "BK"


def test_config_package_never_imports_pyspark() -> None:
    package = Path(__file__).resolve().parents[2] / "flinkish_cli" / "config"
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] in ("pyspark", "py4j") for n in names), path


def test_every_module_has_a_docstring() -> None:
    package = Path(__file__).resolve().parents[2] / "flinkish_cli" / "config"
    for path in package.glob("*.py"):
        assert ast.get_docstring(ast.parse(path.read_text())), path


def test_a_session_token_selects_s3as_temporary_credentials() -> None:
    conf = spark("s3.access-key=AKIA1", "s3.secret-key=s3cr3t", "s3.session.token=tok3n")
    assert conf["spark.hadoop.fs.s3a.session.token"] == "tok3n"
    provider = conf["spark.hadoop.fs.s3a.aws.credentials.provider"]
    assert provider == "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
