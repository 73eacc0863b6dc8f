"""The main file ``spark-submit`` runs for every flinkish job.

It lives alone in its directory because Python puts a script's directory first on
``sys.path``: nothing here may shadow a module of the job or of the standard library.
"""

from flinkish_cli.spark.install import prefer_installed_pyspark

prefer_installed_pyspark()  # before pyspark is imported: its installed copy, not the zip

from flinkish_cli.runtime.driver.driver import main  # noqa: E402

if __name__ == "__main__":
    main()
