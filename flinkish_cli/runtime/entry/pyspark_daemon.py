"""The Python daemon of a local job's executors (Spark's ``spark.python.daemon.module``).

Spark starts one daemon per executor and forks each Python worker (a UDF's, a Python data
source's) from it; the worker imports ``pyspark.worker`` after the fork. Both import pyspark
from the ``PYTHONPATH`` Spark gives them, which starts with pyspark's zips: every daemon and
every worker compiled pyspark's modules from source (zipimport keeps no bytecode), about a
second of CPU each. This daemon takes those zips off its path first
(:func:`~flinkish_cli.spark.install.prefer_installed_pyspark`), so it and the workers it
forks import the installed pyspark with its cached bytecode, then it is pyspark's own
daemon, unchanged. ``flinkish_cli.submission.spark_submit`` names it for local jobs whose
executors run flinkish's own Python; a ``spark.python.daemon.module`` of the user's wins.
"""

from flinkish_cli.spark.install import prefer_installed_pyspark

prefer_installed_pyspark()  # before pyspark is imported

from pyspark import daemon  # noqa: E402

if __name__ == "__main__":
    daemon.manager()
