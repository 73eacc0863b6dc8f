"""Helpers shared by flinkish's example jobs.

``schemas`` holds the input schemas, ``pricing`` the plain-Python functions that the jobs'
UDFs call (so executors must be able to import this package: flinkish ships the job's
directory to them), ``args`` the command-line conventions and ``streams`` the source and
sink helpers.
"""
