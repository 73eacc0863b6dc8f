"""``docs/reference/cli.md``: every action and option of ``flinkish`` from its click
definitions, the exit statuses from :data:`flinkish_cli.cli.main.EXIT_STATUSES` and the error
classes of :mod:`flinkish_cli.errors`, and the ``--output json`` documents read from the
commands' own sources (the keys of the dictionaries they print)."""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap
from collections.abc import Iterator
from pathlib import Path

import click

from flinkish_cli import errors
from flinkish_cli.cli.main import ACTIONS, EXIT_STATUSES, cli
from scripts.docs.common import ROOT, cell, code, escape, header, prose, table

PAGE = "reference/cli.md"

_INTRO = """
Every action of `flinkish`, with its arguments and options, as `flinkish <action> --help`
shows them. The options Flink's `bin/flink` has keep Flink's names (`-p`, `-s`, `-d`,
`--fromSavepoint`...); `-D key=value` sets any key of the
[configuration reference](../configuration.md) on one command.
"""

#: How a ``print_json`` argument that is a method call is documented: the method whose
#: returned dictionary it prints (its keys are read from that method's source).
_DOCUMENTS = {
    "status.summary": "flinkish_cli.registry.status:JobStatus.summary",
    "record.summary": "flinkish_cli.registry.history:SavepointRecord.summary",
    "outcome.summary": "flinkish_cli.client.upgrade.outcome:UpgradeOutcome.summary",
    "done.to_result": "flinkish_cli.registry.protocol:CheckpointDone.to_result",
    "listing.summary": "flinkish_cli.state.model:StateListing.summary",
    "s.summary": "flinkish_cli.state.model:StoreRows.summary",
    "result.summary": "flinkish_cli.state.export:Export.summary",
    # a parameter of a function of the command's module: "<function>.<parameter>"; "+key",
    # a key the job client adds to the maker's document
    "_job_info.document": "flinkish_cli.registry.graph_view:job_summary",
    "_show_info.summary": "flinkish_cli.savepoints.inspect:describe+path",
}


def render() -> str:
    """The page's Markdown."""
    ctx = click.Context(cli, info_name="flinkish", help_option_names=["-h", "--help"])
    commands = {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}
    shared = _shared_options(list(_leaves(ctx, commands)))
    parts = [header("Command-line reference", _INTRO), _synopsis(ctx)]
    parts.append(_shared_section(shared))
    for name, command in commands.items():
        assert command is not None
        parts.append(_command(f"flinkish {name}", command, shared, ACTIONS[name][0]))
    parts.append(_exit_statuses())
    return "\n".join(parts)


def _synopsis(ctx: click.Context) -> str:
    rows = [[code(name), ACTIONS[name][1]] for name in cli.list_commands(ctx)]
    options = [
        [code(", ".join(p.opts)), _help(p)] for p in cli.params if isinstance(p, click.Option)
    ]
    options.append([code("-h, --help"), "Show the help of flinkish or of an action, and exit."])
    return (
        "## Synopsis\n\n"
        "```text\nflinkish [-v | --version] [-h | --help] <action> [OPTIONS] [ARGUMENTS]\n```\n\n"
        f"{_paragraphs(cli.help)}\n"
        + table(["Action", "What it does"], rows)
        + "\n"
        + table(["Option", "Meaning"], options)
    )


def _leaves(
    ctx: click.Context, commands: dict[str, click.Command | None]
) -> Iterator[click.Command]:
    for command in commands.values():
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    yield sub
        elif command is not None:
            yield command


def _shared_options(commands: list[click.Command]) -> list[click.Option]:
    """The options every action has, the same in each (the configuration and the target)."""
    first = [p for p in commands[0].params if isinstance(p, click.Option)]
    kept = []
    for option in first:
        if all(
            any(isinstance(p, click.Option) and p.opts == option.opts and p.help == option.help
                for p in c.params)
            for c in commands
        ):  # fmt: skip
            kept.append(option)
    return kept


def _shared_section(shared: list[click.Option]) -> str:
    visible = [o for o in shared if not o.hidden]
    hidden = [o for o in shared if o.hidden]
    text = "## Options of every action\n\n" + _options_table(visible)
    if hidden:
        text += "\nAccepted for compatibility with Flink's CLI, and not shown by `--help`:\n\n"
        text += _options_table(hidden)
    return text


def _command(path: str, command: click.Command, shared: list[click.Option], where: str) -> str:
    level = "###" if path.count(" ") > 1 else "##"
    ctx = click.Context(command, info_name=path)
    usage = " ".join(command.collect_usage_pieces(ctx))
    text = f"{level} `{path}`\n\n```text\n{path} {usage}\n```\n\n{_paragraphs(command.help)}\n"
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    if arguments:
        rows = [[code(a.human_readable_name), _argument(a)] for a in arguments]
        text += table(["Argument", "Kind"], rows) + "\n"
    names = {tuple(o.opts) for o in shared}
    own = [p for p in command.params if isinstance(p, click.Option) and tuple(p.opts) not in names]
    visible = [o for o in own if not o.hidden]
    hidden = [o for o in own if o.hidden]
    if visible:
        text += _options_table(visible) + "\n"
    if hidden:
        text += "Accepted for compatibility with Flink's CLI, and not shown by `--help`:\n\n"
        text += _options_table(hidden) + "\n"
    text += "And the [options of every action](#options-of-every-action).\n"
    documents = list(_json_documents(where))
    if documents:
        text += (
            "\n**`--output json`** prints one JSON document on standard output, nothing else; "
            "its keys, by what was asked:\n\n"
        )
        for what, keys in dict.fromkeys(documents):
            text += f"- {what + ': ' if what else ''}{_shown_keys(keys)}\n"
    if isinstance(command, click.Group):
        sub_ctx = click.Context(command, info_name=path)
        for name in command.list_commands(sub_ctx):
            sub = command.get_command(sub_ctx, name)
            assert sub is not None
            sub_where = f"{where.split(':')[0]}:{sub.callback.__name__ if sub.callback else name}"
            text += "\n" + _command(f"{path} {name}", sub, shared, sub_where)
    return text


def _shown_keys(keys: tuple[str, ...]) -> str:
    """``a``, ``b``, ``c`` (a list, each item with ``x``, ``y``)."""
    shown = []
    for key in keys:
        if "[]." in key:
            continue
        items = [k.split("[].", 1)[1] for k in keys if k.startswith(f"{key}[].")]
        each = f" (a list, each with {', '.join(code(k) for k in items)})" if items else ""
        shown.append(code(key) + each)
    return ", ".join(shown)


def _argument(argument: click.Argument) -> str:
    count = argument.nargs
    if count == -1:
        return "any number" + ("" if argument.required else ", optional")
    return "required" if argument.required else "optional"


def _options_table(options: list[click.Option]) -> str:
    rows = [[code(", ".join(o.opts + o.secondary_opts)), _value(o), _default(o), _help(o)]
            for o in options]  # fmt: skip
    return table(["Option", "Value", "Default", "Meaning"], rows)


def _value(option: click.Option) -> str:
    if option.is_flag:
        return "flag"
    if isinstance(option.type, click.Choice):
        return " | ".join(str(c) for c in option.type.choices)
    name = code(option.metavar or option.type.name.upper())
    return name + (" (repeatable)" if option.multiple else "")


def _default(option: click.Option) -> str:
    value = option.default
    if option.is_flag or value is None or callable(value) or value == () or value is False:
        return ""
    if "UNSET" in repr(value):
        return ""
    return code(value)


def _help(parameter: click.Parameter) -> str:
    return cell(getattr(parameter, "help", "") or "")


def _paragraphs(text: str | None) -> str:
    """A command's docstring as Markdown: paragraphs kept, ``\\b`` blocks as text."""
    if not text:
        return ""
    blocks = inspect.cleandoc(text).split("\n\n")
    out = []
    for block in blocks:
        if block.startswith("\b\n"):
            out.append("```text\n" + block[2:] + "\n```")
        else:
            out.append(escape(" ".join(block.split())))
    return "\n\n".join(out) + "\n"


def _what(function: ast.FunctionDef, command: str) -> str:
    """What a helper of the command prints, as its docstring starts (a code span such as
    ``savepoint list``), or nothing."""
    doc = ast.get_docstring(function) or ""
    if function.name == command or not doc.startswith("``"):
        return ""
    return "`" + doc[2:].split("``")[0] + "`"


def _json_documents(where: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Each ``print_json(...)`` of the command's function, of the functions of its module it
    calls and of the classes of its module it uses (a presenter), with the keys of what it
    prints."""
    module_name, _, function = where.partition(":")
    path = ROOT / (module_name.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions: dict[str, ast.FunctionDef] = {}
    classes: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            methods = [n for n in node.body if isinstance(n, ast.FunctionDef)]
            classes[node.name] = [f"{node.name}.{m.name}" for m in methods]
            functions.update({f"{node.name}.{m.name}": m for m in methods})
    seen: set[str] = set()
    todo = [function]
    while todo:
        name = todo.pop(0)
        if name in seen or name not in functions:
            continue
        seen.add(name)
        for node in ast.walk(functions[name]):
            if isinstance(node, ast.Name) and node.id in classes:
                todo.extend(classes[node.id])
            if not isinstance(node, ast.Call):
                continue
            called = _name(node.func) or ""
            if called == "print_json":
                yield (
                    _what(functions[name], function),
                    _document(node.args[0], path, name, functions[name]),
                )
            elif called in functions:
                todo.append(called)
    if any(_name(n.func) == "print_trigger" for n in ast.walk(tree) if isinstance(n, ast.Call)):
        yield "with `-detached`", ("jid", "trigger-id")


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return None


def _document(node: ast.expr, path: Path, function: str, scope: ast.FunctionDef) -> tuple[str, ...]:
    return tuple(_keys(node, path, function, scope))


def _keys(
    node: ast.expr, path: Path, function: str, scope: ast.FunctionDef | None = None
) -> list[str]:
    """The keys of the document ``node`` is, as its source says; a key holding a list of
    documents made in ``scope`` (the function printing it) is followed by ``key[].<key>``
    for each key of its items."""
    if isinstance(node, ast.Dict):
        keys: list[str] = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:  # **spread
                keys += _call_keys(value, path, function)
            elif isinstance(key, ast.Constant):
                keys.append(str(key.value))
                keys += [f"{key.value}[].{k}" for k in _items(value, path, function, scope)]
        return keys
    if isinstance(node, ast.ListComp):  # a list of documents: the keys of each
        return _call_keys(node.elt, path, function)
    return _call_keys(node, path, function)


def _items(node: ast.expr, path: Path, function: str, scope: ast.FunctionDef | None) -> list[str]:
    """The keys of each item of the list ``node`` makes: a list comprehension of
    documents, a name assigned one in ``scope``, or a sum of lists (the first that tells)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _items(node.left, path, function, scope) or _items(node.right, path, function, scope)
    if isinstance(node, ast.Name) and scope is not None:
        for item in ast.walk(scope):
            if isinstance(item, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == node.id for t in item.targets
            ):
                return _items(item.value, path, function, None)
        return []
    if isinstance(node, ast.ListComp):
        with contextlib.suppress(LookupError):
            return _call_keys(node.elt, path, function)
    return []


def _call_keys(node: ast.expr, path: Path, function: str) -> list[str]:
    """The keys of the dictionary a call returns, or a parameter holds (as
    :data:`_DOCUMENTS` names its maker, or a function of the command's module), read from
    its source."""
    if isinstance(node, ast.Name):
        called = f"{function}.{node.id}"
    elif isinstance(node, ast.Call):
        called = _name(node.func) or ""
    else:
        called = ast.unparse(node)
    if called in _DOCUMENTS:
        maker, *extra = _DOCUMENTS[called].split("+")
        module_name, _, qualified = maker.partition(":")
        source = ROOT / (module_name.replace(".", "/") + ".py")
        cls, _, method = qualified.rpartition(".")
        tree = ast.parse(source.read_text(encoding="utf-8"))
        scope: list[ast.stmt] = tree.body
        for item in tree.body:
            if isinstance(item, ast.ClassDef) and item.name == cls:
                scope = item.body
        for item in scope:
            if isinstance(item, ast.FunctionDef) and item.name == method:
                fields = []  # asdict(self): every field of the dataclass, then its changes
                if "asdict(self)" in ast.unparse(item):
                    fields = [
                        f.target.id
                        for f in scope
                        if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)
                    ]
                return list(dict.fromkeys(fields + _returned_keys(item) + extra))
        raise LookupError(f"{_DOCUMENTS[called]} is not in {source}")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for item in tree.body:
        if isinstance(item, ast.FunctionDef) and item.name == called:
            return _returned_keys(item, path)
    raise LookupError(
        f"scripts/docs/cli.py cannot tell what {called}() prints: name its method in _DOCUMENTS"
    )


def _returned_keys(function: ast.FunctionDef, path: Path | None = None) -> list[str]:
    """The keys of the dictionary ``function`` returns: a dictionary display (its spreads
    resolved), or a name assigned one, with the keys set on it by subscript or ``update``."""
    keys: list[str] = []
    returned = {n.value.id for n in ast.walk(function)
                if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}  # fmt: skip
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            keys += _display_keys(node.value, path, function.name)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in returned:
                if isinstance(node.value, ast.Dict):
                    keys += _display_keys(node.value, path, function.name)
            elif (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id in returned
                and isinstance(target.slice, ast.Constant)
            ):
                keys.append(str(target.slice.value))
        elif isinstance(node, ast.Call) and _name(node.func) in ("data.update", "dict"):
            keys += [k.arg for k in node.keywords if k.arg]
    return list(dict.fromkeys(keys))


def _display_keys(node: ast.Dict, path: Path | None, function: str) -> list[str]:
    keys: list[str] = []
    for key, value in zip(node.keys, node.values, strict=True):
        if key is None and path is not None:
            with contextlib.suppress(LookupError):
                keys += _call_keys(value, path, function)
        elif isinstance(key, ast.Constant):
            keys.append(str(key.value))
    return keys


def _exit_statuses() -> str:
    rows = [[code(status), meaning] for status, meaning in EXIT_STATUSES.items()]
    text = "## Exit statuses\n\n" + table(["Status", "When"], rows)
    text += (
        "\nAn error prints one line, `ERROR: <what is wrong>`, and usually a second line "
        "saying how to fix it, on standard error; a Python traceback only with `--verbose` "
        "(or `FLINKISH_VERBOSE=1`). The kinds of error, and their exit statuses:\n\n"
    )
    rows = []
    for cls in _error_classes():
        doc = " ".join(prose(textwrap.dedent(cls.__doc__ or "")).split())
        rows.append([code(cls.__name__), code(cls.exit_code), doc])
    return text + table(["Error", "Status", "Meaning"], rows)


def _error_classes() -> list[type[errors.FlinkishError]]:
    found = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.FlinkishError)
    ]
    return found
