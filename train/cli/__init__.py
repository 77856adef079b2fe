"""The ``canasta`` command (``train.cli.main``) and one thin module per subcommand: each parses its
options, calls the library below it (``train.learning``, ``train.evaluation``, ``train.play``,
``train.bench``, ``train.web``) and prints."""
