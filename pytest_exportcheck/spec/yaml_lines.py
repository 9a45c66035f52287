"""A safe YAML loader that remembers where every mapping and key came from.

PyYAML's ``SafeLoader`` forgets source positions and silently keeps the last of
two duplicate keys. Case files are written by hand, so both matter: every
message we print points at ``file:line``, and a duplicated case name must not
hide the first case.
"""

from __future__ import annotations

from typing import Any

import yaml


class LineDict(dict):
    """A ``dict`` from YAML that knows the line of itself and of each key (1-based)."""

    line: int
    key_lines: dict[Any, int]


class LineList(list):
    """A ``list`` from YAML that knows the line of itself and of each item (1-based)."""

    line: int
    item_lines: list[int]


class DuplicateKeyError(yaml.MarkedYAMLError):
    """Raised for a key that appears twice in one mapping."""


# A case file expanded through its aliases, and nested: bounds far above any real case
# file, far below what exhausts memory or the stack (an alias bomb of nine levels of
# nine aliases expands to 387 million values; JSON Schema recurses once per level).
MAX_VALUES = 1_000_000
MAX_DEPTH = 64


class TooLargeError(yaml.MarkedYAMLError):
    """A document that expands (through aliases) or nests beyond the bounds."""


class _LineConstruction:
    """What a loader needs to build :class:`LineDict` / :class:`LineList` with positions,
    within bounds: mixed into PyYAML's parser in Python and into libyaml's."""

    def get_single_node(self) -> Any:
        node = super().get_single_node()  # type: ignore[misc]
        if node is not None:
            _within_bounds(node)  # before anything is constructed from it
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # PyYAML's scalar constructors raise plain ValueError/KeyError/... for
        # text they cannot read (`2024-02-30`, `!!int x`); give them a position.
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except (ValueError, KeyError, AttributeError, TypeError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {node.value!r} as {node.tag}: {exc}", node.start_mark
            ) from None

    def construct_line_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineDict:
        merge_tag = "tag:yaml.org,2002:merge"
        explicit = {id(key) for key, _ in node.value if key.tag != merge_tag}
        self.flatten_mapping(node)
        mapping = LineDict()
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {}
        merged: set[Any] = set()  # keys brought in by `<<: *anchor`: explicit keys override
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found an unhashable key",
                    key_node.start_mark,
                ) from None
            if key in mapping and key not in merged:
                first = mapping.key_lines[key]
                raise DuplicateKeyError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r} (first defined on line {first})",
                    key_node.start_mark,
                )
            merged.discard(key)
            if id(key_node) not in explicit:
                merged.add(key)
            mapping[key] = self.construct_object(value_node, deep=True)
            mapping.key_lines[key] = key_node.start_mark.line + 1
        return mapping

    def construct_line_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> LineList:
        items = LineList(self.construct_object(child, deep=True) for child in node.value)
        items.line = node.start_mark.line + 1
        items.item_lines = [child.start_mark.line + 1 for child in node.value]
        return items


class LineLoader(_LineConstruction, yaml.SafeLoader):
    """``SafeLoader`` building :class:`LineDict` / :class:`LineList` with positions: its
    errors show the offending line, as libyaml's do not."""


# libyaml parses where PyYAML has it (its wheels bundle it): with our constructor on top,
# 5x faster than PyYAML's parser in Python (the bundled case files, 0.80 -> 0.17 s), paid
# by every process that collects them. Its nesting stops at 1000 levels with an error.
_FastLineLoader: type | None = None
if yaml.__with_libyaml__:

    class _FastLineLoader(_LineConstruction, yaml.CSafeLoader):  # type: ignore[no-redef]
        """``LineLoader`` over libyaml: the same documents, without the source shown in
        errors."""


for _loader in (LineLoader, _FastLineLoader):
    if _loader is not None:
        _loader.add_constructor(
            yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _loader.construct_line_mapping
        )
        _loader.add_constructor(
            yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _loader.construct_line_sequence
        )


def _within_bounds(root: yaml.Node) -> None:
    """Refuse a node graph that expands to over ``MAX_VALUES`` values, nests deeper than
    ``MAX_DEPTH``, or contains itself (an anchor used inside its own value).

    Aliases make the graph share nodes: sizes are summed per node once (iteratively,
    so a deep document cannot exhaust the stack here either).
    """
    done: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth) once expanded
    open_nodes: set[int] = set()  # on the current path: seeing one again is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children = _children(node)
        if children_done:
            values = 1 + sum(done[id(child)][0] for child in children)
            depth = 1 + max((done[id(child)][1] for child in children), default=0)
            open_nodes.discard(id(node))
            done[id(node)] = (values, depth)
            if values > MAX_VALUES:
                raise TooLargeError(
                    None, None,
                    f"the document expands through its aliases to over {MAX_VALUES} values "
                    "(an alias bomb?); a case file needs far fewer",
                    node.start_mark,
                )  # fmt: skip
            if depth > MAX_DEPTH:
                raise TooLargeError(
                    None, None, f"values nest deeper than {MAX_DEPTH} levels", node.start_mark
                )  # fmt: skip
            continue
        if id(node) in done:
            continue
        if id(node) in open_nodes:
            raise TooLargeError(
                None, None, "an alias refers to a value that contains it", node.start_mark
            )
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_yaml(text: str) -> Any:
    """Parse one YAML document safely, keeping line numbers. Raises ``yaml.YAMLError``."""
    if _FastLineLoader is not None:
        try:
            return yaml.load(text, Loader=_FastLineLoader)
        except yaml.YAMLError:
            pass  # said as PyYAML's parser says it, the offending line shown
    return yaml.load(text, Loader=LineLoader)


def line_of(document: Any, path: list[Any] | tuple[Any, ...]) -> int | None:
    """The line of the deepest node of ``document`` along ``path`` (keys / indexes)."""
    node = document
    line = getattr(node, "line", None)
    for step in path:
        if isinstance(node, LineDict) and step in node:
            line = node.key_lines.get(step, line)
            node = node[step]
        elif isinstance(node, LineList) and isinstance(step, int) and 0 <= step < len(node):
            line = node.item_lines[step]
            node = node[step]
        else:
            break
    return line
