"""What a job's sources and sinks need beside Spark's own connectors, inside its driver.

- :mod:`.kafka_checks`   Kafka sources checked before their query starts (broker, topics,
                         offsets of the savepoint).
- :mod:`.kafka_offsets`  each committed batch's end offsets, committed to the source's
                         consumer group where Kafka's tools see them.
- :mod:`.kafka_sink`     exactly once into Kafka: transactions per sink partition, with the
                         marker of the last batch each committed.
- :mod:`.file_backlog`   a file source's backlog: the input it has not taken yet.
"""
