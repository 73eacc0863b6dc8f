"""The spark-submit command for every Flink target, including the ones that cannot run here."""

import importlib.util
from pathlib import Path

import pytest

from flinkish_cli.errors import UsageError
from flinkish_cli.submission.spark_submit import (
    Deployment,
    build_command,
    resolve_deployment,
)

SECRET = "s3cr3t-VALUE"


@pytest.mark.parametrize(
    ("target", "jobmanager", "master", "expected"),
    [
        (None, None, "local[2]", ("local", "local[2]", "client")),
        ("local", None, "local[4]", ("local", "local[4]", "client")),
        (None, "local[3]", "local[2]", ("local", "local[3]", "client")),
        (None, "spark://10.0.0.1:7077", "local[2]", ("remote", "spark://10.0.0.1:7077", "client")),
        ("remote", "spark://h:7077", "local[2]", ("remote", "spark://h:7077", "client")),
        ("remote", None, "spark://cfg:7077", ("remote", "spark://cfg:7077", "client")),
        # Flink's meaning of -m host:port: the cluster's REST endpoint (flinkish web, asked
        # for its session cluster: see test_a_bare_address_is_the_rest_endpoint...)
        (None, "h:15002", "local[2]", ("remote", "sc://h:15002", "session")),
        (None, "localhost:8081", "local[2]", ("remote", "sc://localhost:8081", "session")),
        (None, "sc://127.0.0.1:15002", "local[2]", ("remote", "sc://127.0.0.1:15002", "session")),
        ("remote", "10.1.2.3:8081", "local[2]", ("remote", "sc://10.1.2.3:8081", "session")),
        (None, "yarn-cluster", "local[2]", ("yarn-application", "yarn", "cluster")),
        (None, "yarn", "local[2]", ("yarn-application", "yarn", "cluster")),
        ("yarn-session", None, "local[2]", ("yarn-session", "yarn", "client")),
        ("yarn-application", None, "local[2]", ("yarn-application", "yarn", "cluster")),
        (
            None,
            "k8s://https://api:6443",
            "local[2]",
            ("kubernetes-application", "k8s://https://api:6443", "cluster"),
        ),
        (
            "kubernetes-session",
            "k8s://https://api:6443",
            "local[2]",
            ("kubernetes-session", "k8s://https://api:6443", "client"),
        ),
    ],
)
def test_resolve_deployment(target, jobmanager, master, expected) -> None:
    deployment = resolve_deployment(target, jobmanager, master, "local")
    assert (deployment.target, deployment.master, deployment.deploy_mode) == expected


def test_rest_address_names_the_endpoint_of_target_remotes_session_cluster() -> None:
    deployment = resolve_deployment(None, None, "local[2]", "remote", "cfg:8081")
    assert (deployment.endpoint, deployment.session) == ("cfg:8081", True)
    # -m wins over the configuration, and spark:// keeps its meaning
    deployment = resolve_deployment(None, "spark://m:7077", "local[2]", "remote", "cfg:1")
    assert (deployment.master, deployment.session) == ("spark://m:7077", False)


@pytest.mark.parametrize(
    ("jobmanager", "endpoint"),
    [
        ("h:8081", "h:8081"),  # Flink's -m: the REST endpoint, asked for the session cluster
        ("[::1]:8081", "[::1]:8081"),
        ("sc://h:15002", None),  # the Connect server itself: nobody is asked
    ],
)
def test_a_bare_address_is_the_rest_endpoint_sc_the_connect_server(jobmanager, endpoint) -> None:
    deployment = resolve_deployment(None, jobmanager, "local[2]", "local", "cfg:8081")
    assert (deployment.target, deployment.session, deployment.endpoint) == (
        "remote",
        True,
        endpoint,
    )


@pytest.mark.parametrize(
    ("target", "jobmanager", "master", "message"),
    [
        ("remote", None, "local[2]", "needs the address of a session cluster or a Spark master"),
        ("local", "spark://h:7077", "local[2]", "does not run on"),
        ("local", "h:15002", "local[2]", "does not run on"),
        ("kubernetes-application", None, "local[2]", "needs the Kubernetes API server"),
        ("mesos", None, "local[2]", "Unknown target"),
        (None, "http://nope", "local[2]", "is not the address of a session cluster"),
        (None, "h:port", "local[2]", "is not the address of a session cluster"),
    ],
)
def test_resolve_deployment_refuses_what_cannot_work(target, jobmanager, master, message) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_deployment(target, jobmanager, master, "local")


def _command(deployment: Deployment, conf: dict[str, str] | None = None):
    return build_command(
        deployment,
        name="orders",
        properties_file="/run/spark.properties",
        py_files=["/run/job.zip", "/run/extra.zip"],
        archives=["/tmp/venv.tar.gz#venv"],
        spark_conf={"spark.hadoop.fs.s3a.secret.key": SECRET, **(conf or {})},
        run_dir="/run",
    )


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_local_command_keeps_every_setting_off_the_command_line() -> None:
    command = _command(Deployment("local", "local[2]", "client"))
    argv = command.argv
    assert Path(argv[0]).name == "spark-submit" and Path(argv[0]).exists()
    assert _flag(argv, "--master") == "local[2]"
    assert _flag(argv, "--deploy-mode") == "client"
    assert _flag(argv, "--properties-file") == "/run/spark.properties"
    assert _flag(argv, "--py-files") == "/run/job.zip,/run/extra.zip"
    assert _flag(argv, "--archives") == "/tmp/venv.tar.gz#venv"
    assert argv[-1].endswith("runtime/entry/flinkish_driver.py")
    assert "--conf" not in argv
    assert not any(SECRET in a for a in argv)
    assert command.properties["spark.hadoop.fs.s3a.secret.key"] == SECRET
    assert command.properties["spark.ui.showConsoleProgress"] == "false"
    assert SECRET not in repr(command)


def test_a_client_mode_driver_keeps_its_run_directory_off_the_class_path(
    tmp_path, monkeypatch
) -> None:
    """A class-data sharing archive needs the same class path for every job, with no
    non-empty directory on it: the job's run directory is named by options instead."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    command = _command(Deployment("local", "local[2]", "client"))
    conf_dir = Path(command.env["SPARK_CONF_DIR"])
    assert conf_dir == tmp_path / "flinkish" / "spark-conf"
    assert conf_dir.is_dir() and not any(conf_dir.iterdir())
    options = command.properties["spark.driver.defaultJavaOptions"].split()
    assert "-Dlog4j.configurationFile=/run/log4j2.properties" in options
    assert "-Xlog:all=warning:stderr:uptime,level,tags" in options  # never on stdout


def test_a_cache_that_cannot_be_written_never_stops_a_job(tmp_path, monkeypatch) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")  # the cache's parent is a file: nothing can be made under it
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    command = build_command(
        Deployment("local", "local[2]", "client"),
        name="orders",
        properties_file=str(run_dir / "spark.properties"),
        py_files=[],
        archives=[],
        spark_conf={},
        run_dir=str(run_dir),
    )
    assert command.env["SPARK_CONF_DIR"] == str(run_dir / "spark-conf")  # empty, the job's own
    from flinkish_cli.spark import cds, install

    assert cds.archive_path(install.pyspark_home()) is None  # so: no archive, no build


def test_the_users_default_java_options_follow_flinkishs(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    mine = {"spark.driver.defaultJavaOptions": "-Dmy.flag=1 -XX:+UseG1GC"}
    command = _command(Deployment("local", "local[2]", "client"), mine)
    options = command.properties["spark.driver.defaultJavaOptions"]
    assert options.startswith("-Dlog4j.configurationFile=/run/log4j2.properties ")
    assert options.endswith(" -Dmy.flag=1 -XX:+UseG1GC")


def test_a_cluster_mode_submission_keeps_its_configuration_directory(monkeypatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/hadoop")
    command = _command(Deployment("yarn-application", "yarn", "cluster"))
    assert command.env["SPARK_CONF_DIR"] == "/run"
    assert "spark.driver.defaultJavaOptions" not in command.properties


def test_yarn_takes_sparks_jars_and_pyspark_from_this_installation(monkeypatch, tmp_path) -> None:
    """Nothing uploaded per job: ``local:`` jars and Python archives; on a ResourceManager of
    127.0.0.1 the driver, ApplicationMaster and executors bind 127.0.0.1."""
    from flinkish_cli.spark.install import pyspark_home

    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.address</name>"
        "<value>127.0.0.1:8032</value></property></configuration>"
    )
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)  # the suite's own (tests/conftest.py)
    command = _command(Deployment("yarn-application", "yarn", "cluster"))
    home = pyspark_home()
    assert command.properties["spark.yarn.jars"] == f"local:{home / 'jars'}/*"
    archives = command.env["PYSPARK_ARCHIVES_PATH"].split(",")
    assert archives and all(a.startswith(f"local:{home}/python/lib/") for a in archives)
    assert command.env["SPARK_LOCAL_IP"] == "127.0.0.1"
    for key in ("spark.yarn.appMasterEnv.SPARK_LOCAL_IP", "spark.executorEnv.SPARK_LOCAL_IP"):
        assert command.properties[key] == "127.0.0.1"
    # a YARN of other machines: their own addresses
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.hostname</name>"
        "<value>rm.example.com</value></property></configuration>"
    )
    command = _command(Deployment("yarn-application", "yarn", "cluster"))
    assert "SPARK_LOCAL_IP" not in command.env
    assert "spark.executorEnv.SPARK_LOCAL_IP" not in command.properties


def test_a_local_jobs_python_workers_come_from_flinkishs_daemon() -> None:
    """Local executors run this Python: their daemon imports the installed pyspark, not the
    zip (flinkish_cli/runtime/entry/pyspark_daemon.py); a Python or daemon of the user's own
    wins, and a cluster's executors keep Spark's daemon."""
    local = Deployment("local", "local[2]", "client")
    daemon = "spark.python.daemon.module"
    assert _command(local).properties[daemon] == "flinkish_cli.runtime.entry.pyspark_daemon"
    assert importlib.util.find_spec(_command(local).properties[daemon]) is not None
    assert daemon not in _command(local, {"spark.pyspark.python": "/opt/py/bin/python"}).properties
    assert _command(local, {daemon: "mine.daemon"}).properties[daemon] == "mine.daemon"
    standalone = Deployment("remote", "spark://127.0.0.1:7077", "client")
    assert daemon not in _command(standalone).properties


def test_standalone_uses_client_mode_and_local_python() -> None:
    command = _command(Deployment("remote", "spark://127.0.0.1:7077", "client"))
    assert _flag(command.argv, "--master") == "spark://127.0.0.1:7077"
    assert "spark.pyspark.python" in command.properties
    assert "spark.pyspark.driver.python" in command.properties


@pytest.mark.parametrize(
    ("flink_conf", "cores"),
    [
        ({"parallelism.default": "3", "taskmanager.numberOfTaskSlots": "2"}, "3"),
        ({"parallelism.default": "1", "taskmanager.numberOfTaskSlots": "2"}, "2"),
        ({"parallelism.default": "4"}, "4"),
        ({"parallelism.default": "4", "spark.cores.max": "6"}, "6"),  # the user's own wins
    ],
)
def test_on_a_standalone_cluster_the_parallelism_is_the_cores_the_job_holds(
    flink_conf: dict[str, str], cores: str
) -> None:
    """As ``run -p N`` reads it on Flink's cluster, and as a rescale sets it: without
    ``spark.cores.max`` Spark's standalone master gives a job every free core."""
    from flinkish_cli.config import Configuration
    from flinkish_cli.config.translate import to_spark

    conf = to_spark(Configuration.from_flat(flink_conf)).conf
    standalone = _command(Deployment("remote", "spark://127.0.0.1:7077", "client"), conf)
    assert standalone.properties["spark.cores.max"] == cores
    local = _command(Deployment("local", "local[4]", "client"), conf)
    assert local.properties.get("spark.cores.max") == flink_conf.get("spark.cores.max")


def test_yarn_application_needs_hadoop_conf(monkeypatch) -> None:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    with pytest.raises(UsageError, match="HADOOP_CONF_DIR"):
        _command(Deployment("yarn-application", "yarn", "cluster"))


def test_yarn_application_runs_the_driver_in_the_cluster(monkeypatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/hadoop")
    command = _command(
        Deployment("yarn-application", "yarn", "cluster"),
        {"spark.pyspark.python": "./venv/bin/python"},
    )
    assert _flag(command.argv, "--master") == "yarn"
    assert _flag(command.argv, "--deploy-mode") == "cluster"
    assert "spark.pyspark.driver.python" not in command.properties
    assert command.properties["spark.yarn.appMasterEnv.PYSPARK_PYTHON"] == "./venv/bin/python"


def test_kubernetes_application_needs_image_and_upload_path() -> None:
    deployment = Deployment("kubernetes-application", "k8s://https://api:6443", "cluster")
    with pytest.raises(UsageError, match=r"spark\.kubernetes\.container\.image"):
        _command(deployment)
    with pytest.raises(UsageError, match=r"spark\.kubernetes\.file\.upload\.path"):
        _command(deployment, {"spark.kubernetes.container.image": "repo/spark-py:4"})
    command = _command(
        deployment,
        {
            "spark.kubernetes.container.image": "repo/spark-py:4",
            "spark.kubernetes.file.upload.path": "s3a://bucket/upload",
            "spark.pyspark.python": "python3",
        },
    )
    assert _flag(command.argv, "--deploy-mode") == "cluster"
    assert command.properties["spark.kubernetes.driverEnv.PYSPARK_PYTHON"] == "python3"


def test_kubernetes_session_is_client_mode() -> None:
    command = _command(Deployment("kubernetes-session", "k8s://https://api:6443", "client"))
    assert _flag(command.argv, "--deploy-mode") == "client"


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, {"spark.yarn.maxAppAttempts": "1"}),
        (
            {"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "3"},
            {"spark.yarn.maxAppAttempts": "4"},
        ),
        (
            {
                "restart-strategy.type": "failure-rate",
                "restart-strategy.failure-rate.max-failures-per-interval": "2",
                "restart-strategy.failure-rate.failure-rate-interval": "5 min",
            },
            {
                "spark.yarn.maxAppAttempts": "3",
                "spark.yarn.am.attemptFailuresValidityInterval": "300s",
            },
        ),
        (
            {"restart-strategy.type": "exponential-delay"},
            {
                "spark.yarn.maxAppAttempts": "100",
                "spark.yarn.am.attemptFailuresValidityInterval": "3600s",
            },
        ),
    ],
)
def test_yarn_application_restarts_follow_the_restart_strategy(settings, expected) -> None:
    from flinkish_cli.config import Configuration
    from flinkish_cli.submission.spark_submit import yarn_restarts

    assert yarn_restarts(Configuration.from_flat(settings)) == expected
