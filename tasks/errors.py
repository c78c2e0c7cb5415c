"""Errors a user can act on. Their message is the one line the CLI prints and the message of
the Failed flow state, so each names the file, column, row or vertex at fault."""


class InputError(ValueError):
    """The input (file, columns, values or parameters) cannot be processed."""


class OutputError(OSError):
    """The output location cannot be written."""


class ValidationFailed(RuntimeError):
    """A computed result failed its independent verification; nothing was published."""


class DeviceMemoryError(RuntimeError):
    """The graph does not fit in the GPU's free memory."""


class HostMemoryError(RuntimeError):
    """The graph does not fit in the host memory a NumPy run may take."""
