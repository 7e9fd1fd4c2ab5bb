"""Where an option's value comes from: the command line, else its environment
variables (the rule's name and its aliases, which must agree), else its declared
default; each text parsed by the option's parser, and every refusal kept so that
all of them are reported at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from exporter.errors import ConfigError, InvalidSettings
from exporter.options import Option, Refused


class OptionReading:
    """The options' texts (flag, then environment, then default), parsed; every refusal kept.

    `options` are the declared options by name; `values` the command line's (None
    where not given); `names` the options to read."""

    def __init__(
        self,
        options: Mapping[str, Option[Any]],
        values: Mapping[str, Any],
        env: Mapping[str, str],
        names: Iterable[str],
    ) -> None:
        self.options = options
        self.env = env
        self.errors: list[ConfigError] = []
        self.values: dict[str, Any] = {}
        unknown = set(values) - set(options)
        if unknown:
            # A caller's misspelt option would otherwise be read as not given.
            raise KeyError(f"not options: {', '.join(sorted(unknown))}")
        for name in names:
            self.values[name] = self._parse(options[name], values.get(name))

    def refuse(self, name: str, problem: str) -> None:
        self.errors.append(ConfigError(self.options[name].describe(), problem))

    def _text(self, item: Option[Any], given: Any) -> str | None:
        if isinstance(given, list | tuple):
            if len(given) > 1:
                # The values are not repeated: one of them may be a URL with its password.
                self.refuse(item.name, f"given {len(given)} times: give it once")
                return None
            given = given[0] if given else None
        if given is not None:
            return str(given)
        present = [name for name in item.envs if name in self.env]
        # An empty variable (a template left blank) does not disagree with a set one.
        found = {name: self.env[name] for name in present if self.env[name] != ""}
        if len(set(found.values())) > 1:
            self.refuse(item.name, f"{' and '.join(found)} disagree: set one of them")
            return None
        if found:
            return next(iter(found.values()))
        return "" if present else item.default

    def _parse(self, item: Option[Any], given: Any) -> Any:
        text = self._text(item, given)
        # Given empty: unset, unless the option has a default (then it is refused as it stands).
        if text is None or (text == "" and item.default is None):
            return None
        try:
            return item.parse(text, self.env)
        except Refused as exc:
            self.refuse(item.name, exc.problem)
        except ConfigError as exc:
            self.errors.append(exc)
        return None

    def check(self, name: str, check: Callable[[], Any]) -> Any:
        """check(), a ConfigError or Refused kept as a refusal of option `name`."""
        try:
            return check()
        except Refused as exc:
            self.refuse(name, exc.problem)
        except ConfigError as exc:
            self.errors.append(exc)
        return None

    def done(self) -> None:
        if self.errors:
            raise InvalidSettings(tuple(self.errors))
