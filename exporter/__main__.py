"""`python -m exporter`: the command line of exporter/cli.py."""

from exporter.cli import main

raise SystemExit(main())
