"""The exit codes every ``sparkcdc`` command uses (docs/operations.md), in a module that imports
nothing: the command line reads them before it knows which command runs."""

EXIT_OK = 0
EXIT_DIFFERS = 1  # verify: a chunk differs or could not be shown to match
EXIT_USER_ERROR = 2  # an invalid manifest, or the input or environment stopped the command
EXIT_TABLES_FAILED = 4  # run: ended normally, but tables failed (each named on stderr)
EXIT_INTERRUPTED = 130  # Ctrl-C: rerun the same command to resume from the checkpoint
