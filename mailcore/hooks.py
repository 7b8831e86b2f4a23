"""Explicit extension points: the kernel names a moment (a mailbox's holder forgotten, a send's
outcome known, the queues an operator watches) and calls what feature apps registered for it in
their AppConfig.ready(). Never Django signals on our own models: every call site is in plain sight,
and the kernel imports no feature. A lower floor of the kernel may offer one to a higher floor the
same way (the delivery rules hear of alias changes)."""
from collections.abc import Callable
from typing import Any


class Hook:
    """Functions called in the order they registered, with the keyword arguments the kernel passes."""

    def __init__(self, name: str):
        self.name = name
        self._functions: list[Callable[..., Any]] = []

    def register(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """Once per function, however often an app's ready() runs (tests may run it again)."""
        if function not in self._functions:
            self._functions.append(function)
        return function

    @property
    def functions(self) -> tuple[Callable[..., Any], ...]:
        """For a caller that runs each one its own way (each in a savepoint, say)."""
        return tuple(self._functions)

    def __call__(self, **kwargs) -> list[Any]:
        """Run every registered function; returns their results in order."""
        return [function(**kwargs) for function in self._functions]

    def answer(self, default: Any, **kwargs) -> Any:
        """The answer of the one function that owns the moment, or `default` when no app registered."""
        if len(self._functions) > 1:
            raise RuntimeError(f"{self.name}: one function answers, {len(self._functions)} registered")
        return self._functions[0](**kwargs) if self._functions else default

    def __repr__(self) -> str:
        return f"Hook({self.name!r}, {len(self._functions)} registered)"
