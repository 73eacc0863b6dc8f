"""One module per ``flinkish`` action, mirroring Flink's ``bin/flink`` actions."""
