"""A stand-in model class that records the keyword arguments a runner builds its model with, then stops it."""


class Built(Exception):
    """Raised by a recording model class once the runner has built its model."""


def recording(monkeypatch, module, name):
    """Replaces `module.name` by a class that records its keyword arguments and raises `Built`."""
    seen = []

    def record(*args, **kwargs):
        seen.append(kwargs)
        raise Built()

    monkeypatch.setattr(module, name, record)
    return seen
