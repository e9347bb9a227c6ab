"""The errors compilebench reports to its users, each a one-paragraph message."""


class UserError(ValueError):
    """Bad input from the user; the message is one paragraph naming the key or file."""


class ConfigError(UserError):
    """A config that cannot run."""


class Unsupported(Exception):
    """The mode cannot apply to this model; the message says why."""
