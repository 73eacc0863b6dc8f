"""The workload whose classes make the driver's class-data sharing archive.

``flinkish_cli.spark.cds`` runs it once under ``spark-submit`` with
``-XX:ArchiveClassesAtExit``: every JVM class it loads (session, UI, streaming sources and
sinks, file writes from a stream and from ``foreachBatch``, state stores, a Python UDF and
its Arrow runner, the Python callback server of ``foreachBatch`` and listeners) is in the
archive, so a job's driver maps them instead of loading (and verifying) them. What a typical
PySpark streaming job does is here: each class left out is loaded from its jar by every
driver (about a thousand were, before the UDF and the file writes were added). It touches
nothing outside a temporary directory it removes. It lives here, alone with the driver's
entry, so that nothing in its directory shadows a module.
"""

import os
import shutil
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener


class _Listener(StreamingQueryListener):
    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        pass

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        pass


def main() -> None:
    work = tempfile.mkdtemp(prefix="flinkish-cds-")
    try:
        spark = (
            SparkSession.builder.appName("flinkish-cds")
            .config("spark.sql.shuffle.partitions", "2")  # the classes, not 200 state stores
            .getOrCreate()
        )
        spark.streams.addListener(_Listener())
        source = os.path.join(work, "in")
        os.makedirs(source)
        with open(os.path.join(source, "part-0.json"), "w") as handle:
            handle.write('{"key": "a", "value": 1}\n{"key": "b", "value": 2}\n')
        events = spark.readStream.schema("key string, value long").json(source)
        tagged = events.withColumn("tag", F.udf(lambda key: key.upper(), "string")("key"))
        counts = (
            tagged.groupBy("key")
            .agg(F.count("*").alias("count"), F.first("tag").alias("tag"))
            .writeStream.outputMode("update")
            .foreachBatch(
                lambda batch, batch_id: batch.write.mode("overwrite").json(
                    os.path.join(work, "counts-out", str(batch_id))
                )
            )
            .option("checkpointLocation", os.path.join(work, "counts"))
            .start()
        )
        raw = (
            tagged.writeStream.format("json")
            .option("path", os.path.join(work, "raw"))
            .option("checkpointLocation", os.path.join(work, "raw-checkpoint"))
            .start()
        )
        spark.conf.set(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        deduped = (
            events.dropDuplicates(["key"])
            .writeStream.format("parquet")
            .option("path", os.path.join(work, "out"))
            .option("checkpointLocation", os.path.join(work, "deduped"))
            .start()
        )
        rate = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 10)
            .load()
            .writeStream.format("memory")
            .queryName("rate")
            .option("checkpointLocation", os.path.join(work, "rate"))
            .start()
        )
        for query in (counts, raw, deduped, rate):
            query.processAllAvailable()
            query.stop()
        spark.read.parquet(os.path.join(work, "out")).count()
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
