from specialists.fronts.cli.main import entry

entry()
