from specialists.cli.main import entry

entry()
