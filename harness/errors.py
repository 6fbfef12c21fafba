"""Errors a stage raises; the command line turns each family into one exit code."""


class UsageError(Exception):
    """Bad command line or bad input file: exit code 2, one line naming what was wrong."""


class HeaderError(UsageError):
    """A variant's `// key: value` header is malformed (names the file and line)."""


class ResultFileError(UsageError):
    """A result file is missing, unreadable, truncated or of another schema."""


class CompareRefused(UsageError):
    """Two result files cannot be compared (for example, different GPU models)."""


class MergeRefused(UsageError):
    """Result files that cannot be merged into one (other commit or settings, overlapping rows)."""


class ToolchainError(Exception):
    """nvcc or a CUDA build of torch is missing: the harness cannot build anything."""


class HeaderLibraryMissing(Exception):
    """A header library a variant includes (`// includes: cutlass`) is not on this machine: that
    variant's rows are build-failed with the message, which says how to install it."""
