"""The one error that stops a whole grading run (imported by the preflight checks and the gradebook alike)."""


class GradingError(RuntimeError):
    """Grading cannot run at all (no assignment in the gradebook, no source, unreadable config)."""
