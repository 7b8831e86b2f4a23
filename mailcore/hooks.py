"""Explicit extension points: the kernel names a moment (a mailbox's holder forgotten, a mailbox's
aliases changed, the queues an operator watches) and calls what feature apps registered for it in
their AppConfig.ready(). Never Django signals on our own models: every call site is in plain sight,
and the kernel imports no feature."""
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

    def __call__(self, **kwargs) -> list[Any]:
        """Run every registered function; returns their results in order."""
        return [function(**kwargs) for function in self._functions]

    def __repr__(self) -> str:
        return f"Hook({self.name!r}, {len(self._functions)} registered)"
