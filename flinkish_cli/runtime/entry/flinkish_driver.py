"""The main file ``spark-submit`` runs for every flinkish job.

It lives alone in its directory because Python puts a script's directory first on
``sys.path``: nothing here may shadow a module of the job or of the standard library.
"""

from flinkish_cli.runtime.driver import main

if __name__ == "__main__":
    main()
