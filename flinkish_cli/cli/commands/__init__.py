"""One module per ``flinkish`` action, mirroring Flink's ``bin/flink`` actions.

The actions:

- :mod:`.cancel`: ``flinkish cancel [-s [dir]] <JobID>``.
- :mod:`.checkpoint`: ``flinkish checkpoint [-full] <JobID>``.
- :mod:`.config_cmd`: ``flinkish config``.
- :mod:`.info`: ``flinkish info <job.py>``.
- :mod:`.list_jobs`: ``flinkish list``.
- :mod:`.logs`: ``flinkish logs <JobID> [-f]``.
- :mod:`.run`: ``flinkish run``.
- :mod:`.savepoint`: ``flinkish savepoint``.
- :mod:`.state`: ``flinkish state ls|show|export``.
- :mod:`.stop`: ``flinkish stop [-p [dir]] [-d] [-detached] [-type t] <JobID>``.
- :mod:`.upgrade`: ``flinkish upgrade [options] <JobID> <job.py> [args]``.
- :mod:`.web`: ``flinkish web``.
"""
