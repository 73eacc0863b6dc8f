#!/usr/bin/env bash
# Upgrade a running flinkish job to the program this CI run checked out, from a pipeline.
#
#   examples/ci/upgrade.sh <jobid-file> <job.py> [job arguments...]
#
# <jobid-file> holds the JobID of the job running now; it is rewritten with the JobID of the
# job running afterwards (the new program's, or the previous program's after a rollback).
# Upgrade options (readiness timeout, upgrade mode, rollback) come from the configuration
# (FLINK_CONF_DIR), e.g. flinkish.upgrade.readiness.timeout: 10 min.
# Exit status 0 only when the new program runs and is stable: anything else fails the pipeline.
set -u -o pipefail

jobid_file=$1
shift
job=$(cat "$jobid_file")

output=$(flinkish upgrade "$job" "$@")
status=$?
printf '%s\n' "$output"
# The last job submitted is the one that runs now: the new program's, or the rollback's.
running=$(sed -n 's/^Job has been submitted with JobID //p' <<<"$output" | tail -n 1)

if [ "$status" -eq 0 ]; then
  echo "$running" >"$jobid_file"
  echo "Deployed: job $running runs the new program."
  exit 0
fi
if grep -q "^Upgrade of job $job rolled back:" <<<"$output"; then
  echo "$running" >"$jobid_file"
  echo "Rolled back: job $running runs the previous program again; this deployment failed." >&2
elif grep -q "^Upgrade of job $job is not stable:" <<<"$output"; then
  echo "$running" >"$jobid_file"
  echo "Not stable: job $running runs the new program under its restart strategy." >&2
elif [ -n "$running" ]; then
  echo "Neither program runs: resume by hand as the line above says." >&2
else
  echo "Refused before anything was touched: job $job runs as it did." >&2
fi
exit 1
