"""One parser for a closed set of choices: a command-line string becomes the `Literal` value a setting is
typed with (`klue pretrain --algorithm`, `klue data download --version`, ...), or a DataError naming them."""

from __future__ import annotations

from typing import TypeVar

from klue.errors import DataError

C = TypeVar("C", bound=str)


def choice_of(value: str, choices: tuple[C, ...], option: str) -> C:
    """`value` as the one of `choices` it equals (typed as they are: a Literal's values), else a DataError
    saying `option` and the choices."""
    for choice in choices:
        if value == choice:
            return choice
    raise DataError(f"{option} {value!r}: one of {', '.join(choices)}")
