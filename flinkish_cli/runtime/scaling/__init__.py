"""Rescaling a running job, from inside its driver.

- :mod:`.rescaling`    the driver's side of an in-place rescale: done, or given up.
- :mod:`.autoscaling`  the autoscaler in the driver: evaluate, record, rescale (its decision
                       is :mod:`flinkish_cli.autoscaler`'s).
"""
