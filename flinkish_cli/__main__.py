"""``python -m flinkish_cli`` runs the ``flinkish`` command."""

from flinkish_cli.cli.main import main

if __name__ == "__main__":
    main()
