"""The one user-facing error type; caught only at the CLI boundary (exit code 2)."""


class UserError(Exception):
    """Something the user typed or pointed at is wrong. The message names the bad value and,
    where there is a fixed set, the valid ones."""
