"""``python -m flinkish_cli.runtime.supervisor``: the command line a live supervisor's process
shows (:data:`flinkish_cli.plan.rundir.SUPERVISOR_MODULE`)."""

from flinkish_cli.runtime.supervisor.supervisor import main

main()
