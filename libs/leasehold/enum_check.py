"""Unknown enum values in a request, found without walking what cannot hold one.

Protobuf keeps an enum number it does not know (proto3 enums are open), so a client built from
newer protos, or one that sends 99, would otherwise be read as if it had sent a value that means
something. :class:`EnumChecker` finds every enum field set to a number its enum does not define
and names it by its path in the request (``resources[0].resource.type``), for a BadRequest.

Which fields of a message type can lead to an enum is worked out once per type, so a request
type that holds none (Produce, with its thousands of records) costs one dictionary look-up.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

_ENUM = FieldDescriptor.TYPE_ENUM
_MESSAGE = FieldDescriptor.TYPE_MESSAGE


class EnumChecker:
    def __init__(self) -> None:
        # Message full name -> the fields of that type that are enums or lead to one.
        self._paths: dict[str, tuple[FieldDescriptor, ...]] = {}

    def _fields(
        self, descriptor: Descriptor, visiting: frozenset[str] = frozenset()
    ) -> tuple[FieldDescriptor, ...]:
        known = self._paths.get(descriptor.full_name)
        if known is not None:
            return known
        if descriptor.full_name in visiting:  # a recursive type: assume it may lead to one
            return tuple(f for f in descriptor.fields if f.type in (_ENUM, _MESSAGE))
        inner = visiting | {descriptor.full_name}
        found = tuple(
            field
            for field in descriptor.fields
            if field.type == _ENUM
            or (field.type == _MESSAGE and self._fields(field.message_type, inner))
        )
        if not visiting:  # a type inside a cycle is settled when the outermost one is
            self._paths[descriptor.full_name] = found
        return found

    def unknown(self, message: Message, prefix: str = "") -> Iterator[tuple[str, int]]:
        """(field path, value) for every enum field holding a number its enum lacks."""
        for field in self._fields(message.DESCRIPTOR):
            path = f"{prefix}{field.name}"
            value = getattr(message, field.name)
            if field.type == _ENUM:
                values = field.enum_type.values_by_number
                if field.is_repeated:
                    for i, v in enumerate(value):
                        if v not in values:
                            yield f"{path}[{i}]", v
                elif value not in values:
                    yield path, value
            elif field.message_type.GetOptions().map_entry:
                for key in value:
                    yield from self._check_value(field.message_type, value[key], f"{path}[{key}]")
            elif field.is_repeated:
                for i, item in enumerate(value):
                    yield from self.unknown(item, f"{path}[{i}].")
            elif message.HasField(field.name):
                yield from self.unknown(value, f"{path}.")

    def _check_value(self, entry: Descriptor, value, path: str) -> Iterator[tuple[str, int]]:
        field = entry.fields_by_name["value"]
        if field.type == _ENUM:
            if value not in field.enum_type.values_by_number:
                yield path, value
        elif field.type == _MESSAGE:
            yield from self.unknown(value, f"{path}.")
