"""Running the user's main program (a script or a module) as ``__main__``, as Python would,
and forgetting the modules it imported before a restarted attempt runs it again."""

from __future__ import annotations

import os
import runpy
import sys
import zipfile

from flinkish_cli.errors import JobError
from flinkish_cli.plan.job import Entry


def run_program(entry: Entry) -> None:
    """Run the job's program; it raises what the program raises."""
    if entry.kind == "module":
        sys.argv = [entry.target, *entry.args]
        runpy.run_module(entry.target, run_name="__main__", alter_sys=True)
        return
    path = entry.target
    if os.path.isfile(path):
        sys.argv = [path, *entry.args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        runpy.run_path(path, run_name="__main__")
        return
    # On a cluster the script is not on the driver's disk: it travels in the job's zip.
    source, origin = _find_in_archives(entry.archive_name or os.path.basename(path))
    sys.argv = [origin, *entry.args]
    code = compile(source, origin, "exec")
    exec(code, {"__name__": "__main__", "__file__": origin, "__builtins__": __builtins__})


def _find_in_archives(name: str) -> tuple[str, str]:
    for entry in sys.path:
        if entry.endswith(".zip") and os.path.isfile(entry):
            with zipfile.ZipFile(entry) as archive:
                if name in archive.namelist():
                    return archive.read(name).decode("utf-8"), f"{entry}/{name}"
    raise JobError(f"The job's program {name} is not on the driver's path.")


#: Modules loaded before the job's program first ran (flinkish, pyspark, the standard library).
_BASE_MODULES = frozenset(sys.modules)


def forget_job_modules() -> None:
    """Drop the modules the job's program imported from its own code, so that a restarted
    attempt imports them afresh (module-level state starts over, as in a new process)."""
    prefixes = tuple({sys.prefix, sys.base_prefix, os.path.dirname(os.__file__)})
    for name, module in list(sys.modules.items()):
        if name in _BASE_MODULES or name.startswith(("pyspark", "py4j", "flinkish_cli")):
            continue
        path = getattr(module, "__file__", None) or ""
        if path and not path.startswith(prefixes):
            del sys.modules[name]
