"""Rescaling a running job, from inside its driver.

- :mod:`.in_place`     an in-place rescale started from the running driver: refused,
                       recorded, stopped with a savepoint, handed to the supervisor.
- :mod:`.rescaling`    the next driver's side of an in-place rescale: done, or given up.
- :mod:`.autoscaling`  the autoscaler in the driver: evaluate, record, rescale (its decision
                       is :mod:`flinkish_cli.autoscaler`'s).
"""
