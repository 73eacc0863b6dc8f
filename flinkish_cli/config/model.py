"""The effective configuration: where each value came from, its typed value, its validation.

A :class:`Configuration` is built from raw :class:`Setting` s (key and text as written, and
their :class:`Source`) in precedence order. Resolving them:

1. classifies every key (:func:`~flinkish_cli.config.options.classify`): deprecated names map
   to the current key with a warning, keys without meaning on Spark warn, unknown keys fail;
2. picks one setting per key: a later layer wins (default < file < ``-D`` < flags); within a
   layer a later line wins over an earlier one of the same key; two names of one key (a
   deprecated alias and the current name, ``s3.access.key`` and ``s3.access-key``) in one
   layer must agree: the same value is a warning (the current name wins), different values
   are an error naming both and where they were set;
3. parses and range-checks each winning value, then checks the rules between keys and that
   no two keys translate to different values of one Spark setting.

Any problem raises one :class:`~flinkish_cli.errors.ConfigError` naming where the value came
from (``file:line``, ``-D`` or the flag), the key, the value and the expected form. A value is
never shown when its key is secret or when it came from a ``${env:...}``/``${file:...}``
reference (see :mod:`.references`): it shows as ``******``. Warnings are collected by a
:class:`~flinkish_cli.config.notices.WarningLog` (linear time, each text once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import flinkish_cli.config.options as opts
from flinkish_cli.config.notices import WarningLog, shown_value
from flinkish_cli.config.secrets import REDACTED, is_secret
from flinkish_cli.config.sources import DEFAULT, ConfigEntry, Setting, Source, fix_hint
from flinkish_cli.config.units import ValueProblem
from flinkish_cli.config.valuetypes import Enum, List, Raw, nested_item, raw_text
from flinkish_cli.errors import ConfigError

__all__ = ["ConfigEntry", "Configuration", "Setting", "Source"]

_LAYER = {"file": 0, "dynamic": 1, "flag": 2}


@dataclass(frozen=True)
class _Resolved:
    key: str
    info: opts.KeyInfo
    setting: Setting
    rank: tuple[int, int, int]
    text: str = ""
    value: Any = None


def _separator(option: opts.Option | None) -> str:
    if option is not None and isinstance(option.type, List):
        return option.type.separators[0]
    return ","


def _secret_option(info: opts.KeyInfo, key: str) -> bool:
    """Whether ``key`` (resolving to ``info``) is secret by its name."""
    return (
        is_secret(key)
        or is_secret(info.canonical)
        or (info.option is not None and info.option.secret)
    )


def _same_value(a: Raw, b: Raw, option: opts.Option | None) -> bool:
    """Whether two values of one key mean the same (as written, or once parsed)."""
    separator = _separator(option)
    if raw_text(a, separator).strip() == raw_text(b, separator).strip():
        return True
    if option is None:
        return False
    try:
        return bool(option.type.parse(a) == option.type.parse(b))
    except ValueProblem:
        return False


class Configuration:
    """The effective Flink configuration (see the module docstring)."""

    def __init__(
        self,
        settings: Sequence[Setting] = (),
        *,
        conf_dir: Path | None = None,
        source_file: Path | None = None,
        warnings: Sequence[str] | WarningLog = (),
    ) -> None:
        self._settings: tuple[Setting, ...] = tuple(settings)
        loaded = WarningLog()
        if isinstance(warnings, WarningLog):
            loaded.extend(warnings)
        else:
            for warning in warnings:
                loaded.add(warning)
        self._load_warnings = loaded
        self.conf_dir = conf_dir
        self.source_file = source_file
        self._log = WarningLog()
        self._log.extend(loaded)
        self._resolved: dict[str, _Resolved] = {}
        self._resolve()
        self.warnings: list[str] = self._log.messages()

    # -- building ------------------------------------------------------------------------

    def _warn(self, message: str, where: object = None) -> None:
        self._log.add(message, where)

    def _resolve(self) -> None:
        winners: dict[str, _Resolved] = {}
        for index, setting in enumerate(self._settings):
            info = self._classify(setting)
            if info.deprecated:
                self._warn(
                    f"{setting.key} is deprecated; use {info.canonical} instead.", setting.source
                )
            if info.status == opts.NOT_APPLICABLE:
                self._warn(f"{setting.key} has no meaning on Spark and is ignored.", setting.source)
            layer = _LAYER.get(setting.source.kind, 0)
            rank = (layer, 0 if info.deprecated else 1, index)
            current = winners.get(info.canonical)
            if current is not None and current.rank[0] == layer and current.key != setting.key:
                self._two_names(current, setting, info, rank)
            if current is None or current.rank < rank:
                winners[info.canonical] = _Resolved(setting.key, info, setting, rank)
        for canonical, winner in sorted(winners.items(), key=lambda item: item[1].rank[2]):
            self._resolved[canonical] = self._parse(winner)
        self._check_across()
        self._check_spark_targets()
        self._check_combinations()

    def _two_names(
        self, current: _Resolved, setting: Setting, info: opts.KeyInfo, rank: tuple[int, int, int]
    ) -> None:
        """Two names of one key in one layer: the same value warns, different values fail."""
        earlier = current.setting
        if _same_value(earlier.value, setting.value, info.option):
            loser = earlier if current.rank < rank else setting
            self._warn(f"{loser.key} is ignored: {info.canonical} is also set.", loser.source)
            return
        hidden = (
            _secret_option(info, setting.key)
            or earlier.source.reference is not None
            or setting.source.reference is not None
        )
        separator = _separator(info.option)

        def value(item: Setting) -> str:
            return "" if hidden else f" '{shown_value(raw_text(item.value, separator))}'"

        deprecated = [k for k in (earlier.key, setting.key) if k in self._aliases(info)]
        names = [k for k in (earlier.key, setting.key) if k != info.canonical]
        if len(names) == 1 and deprecated:
            relation = f"{names[0]} is the deprecated name of {info.canonical}"
        elif len(names) == 1:
            relation = f"{names[0]} is another name of {info.canonical}"
        else:
            relation = f"both are names of {info.canonical}"
        raise ConfigError(
            f"{setting.source}: {setting.key}{value(setting)} and {earlier.key}{value(earlier)} "
            f"({earlier.source}) set one key to different values ({relation}).",
            f"Keep one of them, preferably {info.canonical}.",
        )

    @staticmethod
    def _aliases(info: opts.KeyInfo) -> tuple[str, ...]:
        return info.option.aliases if info.option is not None else ()

    @staticmethod
    def _classify(setting: Setting) -> opts.KeyInfo:
        try:
            return opts.classify(setting.key)
        except opts.UnknownKey as unknown:
            if unknown.reason:
                raise ConfigError(
                    f"{setting.source}: {setting.key}: {unknown.reason}.",
                    "Give the key one value; 'flinkish config' lists the keys in effect and "
                    "docs/configuration.md every supported key.",
                ) from None
            guess = f"; did you mean {unknown.suggestion}?" if unknown.suggestion else ""
            raise ConfigError(
                f"{setting.source}: {setting.key}: unknown configuration key{guess}",
                "Check the spelling; 'flinkish config' lists the keys in effect and "
                "docs/configuration.md every supported key.",
            ) from None

    def _hidden(self, setting: Setting, info: opts.KeyInfo) -> bool:
        """Whether the value of ``setting`` must never be shown."""
        return _secret_option(info, setting.key) or setting.source.reference is not None

    def _parse(self, winner: _Resolved) -> _Resolved:
        setting, info = winner.setting, winner.info
        option = info.option
        text = raw_text(setting.value, _separator(option))
        nested = nested_item(setting.value)
        if nested is not None and info.status != opts.NOT_APPLICABLE:
            index, item = nested
            shown = REDACTED if self._hidden(setting, info) else shown_value(item)
            raise ConfigError(
                f"{setting.source}: {setting.key}: item {index} is {item.kind} ('{shown}'); "
                "expected plain values",
                "Write the list as plain values, e.g. [a.jar, b.jar].",
            )
        if option is None:
            return _Resolved(info.canonical, info, setting, winner.rank, text, text)
        try:
            value = option.type.parse(setting.value)
        except ValueProblem as problem:
            raise self._value_error(
                setting, info, text, problem.problem, problem.expected
            ) from None
        if option.check is not None and not option.check.test(value):
            raise self._value_error(setting, info, text, "is out of range", option.check.expected)
        if isinstance(option.type, Enum):
            replacement = option.type.deprecated_spelling(setting.value)
            if replacement is not None:
                shown = REDACTED if self._hidden(setting, info) else shown_value(text)
                self._warn(
                    f"{setting.key}: '{shown}' is deprecated; use {replacement} instead.",
                    setting.source,
                )
        return _Resolved(info.canonical, info, setting, winner.rank, text, value)

    def _value_error(
        self, setting: Setting, info: opts.KeyInfo, text: str, problem: str, expected: str
    ) -> ConfigError:
        shown = REDACTED if self._hidden(setting, info) else shown_value(text)
        return ConfigError(
            f"{setting.source}: {setting.key}: '{shown}' {problem}; expected {expected}",
            fix_hint(setting.source, setting.key),
        )

    def _check_across(self) -> None:
        for rule in opts.CROSS_CHECKS:
            if not (self.is_set(rule.a) or self.is_set(rule.b)):
                continue
            if rule.when_set is not None and not self.is_set(rule.when_set):
                continue
            a, b = self.get(rule.a), self.get(rule.b)
            if rule.test(a, b):
                continue
            sources = [self._resolved[k] for k in (rule.a, rule.b) if k in self._resolved]
            where = max(sources, key=lambda r: r.rank).setting.source
            raise ConfigError(
                f"{where}: {rule.a} ({self._written(rule.a)}, {self._source(rule.a)}) "
                f"{rule.relation} {rule.b} ({self._written(rule.b)}, {self._source(rule.b)}); "
                f"expected {rule.expected}",
                fix_hint(where, rule.a),
            )

    def _check_spark_targets(self) -> None:
        """Two keys set to values that translate to different values of one Spark setting
        (``s3.x`` and ``flink.hadoop.fs.s3a.x``, say) are an error naming both."""
        targets: dict[str, tuple[str, str]] = {}
        for canonical, resolved in self._resolved.items():
            if resolved.info.status in (opts.PASSTHROUGH, opts.NOT_APPLICABLE):
                continue
            for spark_key, value in self.spark_settings(canonical).items():
                seen = targets.get(spark_key)
                if seen is None:
                    targets[spark_key] = (canonical, value)
                    continue
                other, other_value = seen
                if other_value == value:
                    continue
                first, second = self._resolved[other], resolved
                hidden = (
                    self._hidden(first.setting, first.info)
                    or self._hidden(second.setting, second.info)
                    or is_secret(spark_key)
                )

                def shown(item: _Resolved, hidden: bool = hidden) -> str:
                    return "" if hidden else f" '{shown_value(item.text)}'"

                raise ConfigError(
                    f"{second.setting.source}: {second.setting.key}{shown(second)} and "
                    f"{first.setting.key}{shown(first)} ({first.setting.source}) set the same "
                    f"Spark setting {spark_key} to different values.",
                    "Keep one of them.",
                )

    def _check_combinations(self) -> None:
        incremental = "execution.checkpointing.incremental"
        enabled = self.is_set(incremental) and self.get(incremental)
        if enabled and self.get("state.backend.type") != "rocksdb":
            self._warn(
                f"{incremental} has no effect with the hashmap state backend; "
                "set state.backend.type: rocksdb."
            )
        access, secret = self.is_set("s3.access-key"), self.is_set("s3.secret-key")
        if access != secret:
            given, missing = ("s3.access-key", "s3.secret-key")[:: 1 if access else -1]
            self._warn(
                f"{given} is set but {missing} is not: S3 needs both, or neither to use "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) from the "
                "environment.",
                self._source(given),
            )

    # -- reading -------------------------------------------------------------------------

    def _info(self, key: str) -> opts.KeyInfo:
        try:
            return opts.classify(key)
        except opts.UnknownKey:
            raise KeyError(key) from None

    def is_set(self, key: str) -> bool:
        """Whether ``key`` (or one of its aliases) is set by a file, ``-D`` or a flag."""
        try:
            return self._info(key).canonical in self._resolved
        except KeyError:
            return False

    def get(self, key: str) -> Any:
        """The typed value of ``key`` (current or deprecated name); None when unset.

        Durations are ``timedelta``, memory sizes ``int`` bytes, lists ``list[str]``, enums
        their canonical spelling. Raises KeyError for a key flinkish does not know.
        """
        info = self._info(key)
        resolved = self._resolved.get(info.canonical)
        if resolved is not None:
            return resolved.value
        if info.option is not None:
            return info.option.default_value(self)
        if info.status == opts.NOT_APPLICABLE:
            raise KeyError(key)
        return None

    def _display(self, key: str) -> str:
        """The value of ``key`` as display text, redacted when secret ("" when unset)."""
        info = self._info(key)
        value = self.get(key)
        if value is None:
            return ""
        if _secret_option(info, info.canonical) or self.is_referenced(info.canonical):
            return REDACTED
        if info.option is not None:
            return info.option.type.format(value)
        return str(value)

    def _written(self, key: str) -> str:
        """The value of ``key`` as the user wrote it (or its default), redacted when secret."""
        resolved = self._resolved.get(self._info(key).canonical)
        if resolved is None:
            return self._display(key)
        if self._hidden(resolved.setting, resolved.info):
            return REDACTED
        return shown_value(resolved.text)

    def is_referenced(self, key: str) -> bool:
        """Whether the value of ``key`` came from a ``${env:...}``/``${file:...}`` reference
        (then it is never shown, like a secret's)."""
        try:
            resolved = self._resolved.get(self._info(key).canonical)
        except KeyError:
            return False
        return resolved is not None and resolved.setting.source.reference is not None

    def referenced_keys(self) -> list[str]:
        """The canonical keys whose values came from references, sorted."""
        return sorted(
            key
            for key, resolved in self._resolved.items()
            if resolved.setting.source.reference is not None
        )

    def is_hidden(self, key: str) -> bool:
        """Whether the value of ``key`` is never shown: a secret, or from a reference."""
        try:
            info = self._info(key)
        except KeyError:
            return is_secret(key)
        return _secret_option(info, key) or self.is_referenced(key)

    def _source(self, key: str) -> Source:
        resolved = self._resolved.get(self._info(key).canonical)
        return resolved.setting.source if resolved else DEFAULT

    def spark_settings(self, key: str) -> dict[str, str]:
        """The Spark settings ``key`` translates to, unredacted ({} when none)."""
        info = self._info(key)
        resolved = self._resolved.get(info.canonical)
        if info.family is not None:
            return info.family.spark(info.canonical, resolved.text) if resolved else {}
        option = info.option
        if option is None or option.spark is None:
            return {}
        if resolved is None and not option.emit_default:
            return {}
        value = self.get(info.canonical)
        return option.spark(value, self) if value is not None else {}

    def entry(self, key: str) -> ConfigEntry:
        """The display entry of one key (current or deprecated name), even when unset."""
        info = self._info(key)
        if info.status == opts.NOT_APPLICABLE and info.canonical not in self._resolved:
            raise KeyError(key)
        option = info.option
        secret = _secret_option(info, info.canonical) or self.is_referenced(info.canonical)
        spark = self.spark_settings(info.canonical)
        if secret:
            spark = {k: REDACTED for k in spark}
        else:
            spark = {k: REDACTED if is_secret(k) else v for k, v in spark.items()}
        if option is not None:
            description = option.description
        elif info.family is not None:
            description = info.family.description
        else:
            description = "Flink setting with no meaning on Spark (ignored)."
        return ConfigEntry(
            key=info.canonical,
            value=self.get(info.canonical),
            text=self._display(info.canonical),
            source=self._source(info.canonical),
            status=info.status,
            spark=spark,
            description=description,
            secret=secret,
        )

    def entries(self) -> list[ConfigEntry]:
        """One entry per key that is set or has a default, sorted by key."""
        keys = set(self._resolved)
        keys.update(o.key for o in opts.OPTIONS if o.default is not None or o.default_fn)
        return [self.entry(key) for key in sorted(keys)]

    def keys(self) -> list[str]:
        """The canonical keys that are set (file, ``-D`` or flags), sorted."""
        return sorted(self._resolved)

    def to_flat(self, include_secrets: bool = False) -> dict[str, str]:
        """Canonical key -> value (references resolved), for every key set (not-applicable
        keys omitted).

        Secrets (by their key's name) are left out unless ``include_secrets``; a value read
        from a reference for a key that is not secret stays in (a job's driver needs it).
        :meth:`from_flat` reverses it.
        """
        flat: dict[str, str] = {}
        for key in sorted(self._resolved):
            resolved = self._resolved[key]
            if resolved.info.status == opts.NOT_APPLICABLE:
                continue
            secret = _secret_option(resolved.info, resolved.key)
            if secret and not include_secrets:
                continue
            flat[key] = resolved.text
        return flat

    @classmethod
    def from_flat(cls, flat: Mapping[str, str]) -> Configuration:
        """A configuration from :meth:`to_flat`'s output (e.g. in a job's driver)."""
        source = Source("file")
        return cls([Setting(str(k), str(v), source) for k, v in flat.items()])

    def with_overrides(self, flags: Mapping[str, str]) -> Configuration:
        """A new configuration with ``flags`` (Flink key -> value) on top of everything."""
        extra = [
            Setting(k, str(v), Source("flag", flag=opts.FLAG_OF.get(k))) for k, v in flags.items()
        ]
        return Configuration(
            self._settings + tuple(extra),
            conf_dir=self.conf_dir,
            source_file=self.source_file,
            warnings=self._load_warnings,
        )

    def __repr__(self) -> str:
        return f"Configuration(source_file={self.source_file}, keys={self.keys()})"
