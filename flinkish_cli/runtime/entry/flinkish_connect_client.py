"""The main file of a job's client process in a session cluster (Spark Connect).

It lives alone in its directory because Python puts a script's directory first on
``sys.path``: nothing here may shadow a module of the job or of the standard library.
"""

from flinkish_cli.runtime.driver.driver import main_connect

if __name__ == "__main__":
    main_connect()
