"""`python -m perfgate`: the same as the `perfgate` command."""

from perfgate.cli import main

main()
