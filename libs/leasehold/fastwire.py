"""Protobuf messages encoded from domain objects, in cached pieces, by code generated from the
message descriptors.

The generated classes build one Python message object per element and fill it field by field.
For the few messages sent tens of thousands of times in one event (a broker failure's partition
states and etcd writes, a Metadata answer's partitions) that dominates, and most of those
messages share their field values with many others (the same topic, leader, ISR, replica
lists). A ``Layout`` declares, once per message, how its fields are grouped into *pieces*; a
piece is encoded once per distinct value and then reused, and a message is its pieces joined.

A layout is checked against the message's descriptor when it is declared (at import), and
raises ``LayoutError`` for any field that is not placed in a group (nor declared ``absent``),
for groups out of field-number order (protobuf writes fields in number order: the same bytes as
``SerializeToString`` need the same order), and for a field that the domain type has no
attribute to read it from. A field added to the .proto after every placed one joins the last
group of a layout declared ``open_end``, and is read from the domain attribute of the same name,
so adding one is the .proto edit plus the domain line that sets it.

Values are read from the domain object by attribute path (``tp.topic``); by default a field is
read from the attribute of its own name, or from the one component of the domain type that has
an attribute of that name (``leader_and_isr.leader``). ``convert`` turns a domain value into the
field's value (a bool into an enum); ``const`` fixes a field's value.

Wire rules (what ``SerializeToString`` does): proto3 defaults are left out, except for fields
with presence (oneof members, ``optional``, messages: written unless None); repeated varints are
packed; a singular message field's value is its encoding, a repeated message field's value its
entries already encoded (``MessageEncoder.entry``) and joined. Everyone that uses a layout tests
its bytes against the generated classes.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

VARINT, LEN = 0, 2
# A piece cache is emptied when it holds this many entries: the values pieces are keyed on
# (partition numbers, broker ids, epochs, distinct replica lists) are few in practice.
MAX_PIECES = 100_000

_F = FieldDescriptor
_VARINT_TYPES = frozenset(
    (_F.TYPE_INT32, _F.TYPE_INT64, _F.TYPE_UINT32, _F.TYPE_UINT64, _F.TYPE_ENUM, _F.TYPE_BOOL)
)


def varint(n: int) -> bytes:
    """Protobuf's base-128 varint; negative values as their 64-bit two's complement (ten
    bytes), as protobuf writes int32 and int64."""
    n &= 0xFFFF_FFFF_FFFF_FFFF
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# Varints of 0-127 are one byte: the lengths of small messages.
SMALL = tuple(varint(n) for n in range(128))


def tag(number: int, wire_type: int) -> bytes:
    """A field's key: ``number << 3 | wire_type`` as a varint."""
    return varint(number << 3 | wire_type)


def length_delimited(key: bytes, body: bytes) -> bytes:
    size = len(body)
    return key + (SMALL[size] if size < 128 else varint(size)) + body


def field_key(message: type[Message], name: str) -> bytes:
    """The key of field ``name`` of ``message``, for the wire type its values take."""
    return field_key_of(message.DESCRIPTOR.fields_by_name[name])


class LayoutError(Exception):
    """A layout that does not cover its message as protobuf would write it."""


@dataclass(frozen=True)
class Group:
    """Fields encoded together as one piece: ``cached`` pieces are kept per distinct value of
    the group's fields; the others (a value new every time, such as an etcd revision) are
    encoded afresh."""

    fields: tuple[str, ...]
    cached: bool = True


def group(*fields: str, cached: bool = True) -> Group:
    return Group(tuple(fields), cached)


@dataclass(frozen=True)
class _Field:
    fd: FieldDescriptor
    path: str | None  # None: a constant
    convert: Callable[[Any], Any] | None
    const: Any
    nested: Layout | None


class Layout:
    """How one message is encoded from one domain type (module docstring). Checked when made;
    ``encoder()`` gives an encoder with its own piece caches."""

    def __init__(
        self,
        message: type[Message],
        groups: Sequence[Group],
        *,
        domain: type | None = None,
        read: Mapping[str, str] | None = None,
        convert: Mapping[str, Callable[[Any], Any]] | None = None,
        const: Mapping[str, Any] | None = None,
        nested: Mapping[str, Layout] | None = None,
        absent: Iterable[str] = (),
        open_end: bool = False,
        entry_of: tuple[type[Message], str] | None = None,
    ) -> None:
        self.message = message
        self.domain = domain
        self._declared = dict(
            groups=groups, domain=domain, read=read, convert=convert, const=const,
            nested=nested, absent=absent, open_end=open_end, entry_of=entry_of,
        )  # fmt: skip
        desc: Descriptor = message.DESCRIPTOR
        self.name = desc.full_name
        read, convert, const = dict(read or {}), dict(convert or {}), dict(const or {})
        nested = dict(nested or {})
        named = [n for g in groups for n in g.fields] + list(absent)
        mentioned = [*named, *read, *convert, *const, *nested]
        unknown = [n for n in mentioned if n not in desc.fields_by_name]
        if unknown:
            raise LayoutError(f"{self.name} has no field {unknown[0]!r}")
        if len(set(named)) != len(named):
            raise LayoutError(f"{self.name}: a field is placed twice")
        placed = [list(g.fields) for g in groups]
        last = max((desc.fields_by_name[n].number for n in named), default=0)
        for fd in sorted(desc.fields, key=lambda f: f.number):
            if fd.name in named:
                continue
            if open_end and placed and fd.number > last:
                placed[-1].append(fd.name)
                continue
            raise LayoutError(
                f"{self.name}.{fd.name} (field {fd.number}) is not placed in the layout for "
                f"{getattr(domain, '__name__', 'it')}: add it to a group, in field-number order"
            )
        numbers = [desc.fields_by_name[n].number for fields in placed for n in fields]
        if numbers != sorted(numbers):
            raise LayoutError(f"{self.name}: groups must list fields in field-number order")
        for fields, g in zip(placed, groups, strict=True):
            if g.cached and any(n in nested for n in fields):
                raise LayoutError(f"{self.name}: a nested message's group cannot be cached")
        self.groups = tuple(
            (
                tuple(
                    self._field(desc.fields_by_name[n], read, convert, const, nested)
                    for n in fields
                ),
                g.cached,
            )
            for fields, g in zip(placed, groups, strict=True)
        )
        self.entry_key = field_key(*entry_of) if entry_of is not None else None

    def _field(
        self,
        fd: FieldDescriptor,
        read: Mapping[str, str],
        convert: Mapping[str, Callable[[Any], Any]],
        const: Mapping[str, Any],
        nested: Mapping[str, Layout],
    ) -> _Field:
        supported = fd.type in _VARINT_TYPES or fd.type in (_F.TYPE_STRING, _F.TYPE_BYTES)
        if fd.type == _F.TYPE_MESSAGE:
            supported = not fd.message_type.GetOptions().map_entry
        elif fd.is_repeated and (fd.type not in _VARINT_TYPES or not fd.is_packed):
            supported = False  # repeated scalars are written packed only
        if not supported:
            raise LayoutError(f"{self.name}.{fd.name}: field type {fd.type} is not supported")
        if fd.name in const:
            return _Field(fd, None, None, const[fd.name], None)
        if fd.name in nested:  # the nested message is encoded from the same object
            return _Field(fd, "", None, None, nested[fd.name])
        path = read.get(fd.name) or _default_path(self.domain, fd.name)
        if self.domain is not None:
            _check_path(self.domain, path, f"{self.name}.{fd.name}")
        return _Field(fd, path, convert.get(fd.name), None, nested.get(fd.name))

    def encoder(self) -> MessageEncoder:
        return MessageEncoder(self)

    def redeclared(self, message: type[Message], domain: type | None) -> Layout:
        """The same declaration for another version of the message and the domain type (what
        a change to the .proto would meet: ``tests/unit/runtime/test_fastwire.py``)."""
        return Layout(message, **{**self._declared, "domain": domain})


def _attributes(cls: type) -> dict[str, object]:
    """The attributes a domain type's values carry, with their types where declared."""
    try:
        hints: dict[str, object] = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: names only
        hints = dict.fromkeys(getattr(cls, "__annotations__", {}))
    names = dict.fromkeys(getattr(cls, "_fields", ()), None)
    if dataclasses.is_dataclass(cls):
        names.update(dict.fromkeys(f.name for f in dataclasses.fields(cls)))
    names.update({n: v for n, v in vars(cls).items() if isinstance(v, property)})
    return {n: hints.get(n) for n in [*names, *hints]}


def _default_path(domain: type | None, name: str) -> str:
    """``name`` itself, or ``component.name`` for the one component type that has it."""
    if domain is None:
        return name
    attrs = _attributes(domain)
    if name in attrs:
        return name
    found = [
        f"{a}.{name}" for a, t in attrs.items() if isinstance(t, type) and name in _attributes(t)
    ]
    return found[0] if len(found) == 1 else name


def _check_path(domain: type, path: str, where: str) -> None:
    cls: object = domain
    for part in path.split("."):
        if not isinstance(cls, type):
            return  # a component of undeclared type: read as it comes
        attrs = _attributes(cls)
        if part not in attrs:
            raise LayoutError(
                f"{where} is read from {path!r}, but {cls.__name__} has no attribute {part!r}"
            )
        cls = attrs[part]


def _encode_value(fd: FieldDescriptor, key: bytes, value: Any) -> bytes:
    """One field as ``SerializeToString`` writes it (nothing for a default without presence)."""
    if fd.has_presence and not fd.is_repeated:
        if value is None:
            return b""
    elif not value:
        return b""
    if fd.type == _F.TYPE_MESSAGE:
        return value if fd.is_repeated else length_delimited(key, value)
    if fd.is_repeated:
        return length_delimited(key, b"".join([varint(int(v)) for v in value]))
    if fd.type in _VARINT_TYPES:
        return key + varint(int(value))
    return length_delimited(key, value.encode() if fd.type == _F.TYPE_STRING else value)


class MessageEncoder:
    """``encode(obj)``: the message's bytes; ``entry(obj)``: the same as one element of the
    repeated field that the layout's ``entry_of`` names. Both are generated from the layout
    (``source`` holds the code), with piece caches of their own."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.caches: list[dict] = []
        ns: dict[str, Any] = {"varint": varint, "SMALL": SMALL, "EK": layout.entry_key}
        params = getattr(layout.domain, "_fields", None)
        heads: dict[str, str] = {}  # attribute paths read more than once, as locals
        body: list[str] = []
        pieces: list[str] = []
        for i, (fields, cached) in enumerate(layout.groups):
            if cached and any(f.path is not None for f in fields):
                body += self._cached(i, fields, ns, heads, params)
                pieces.append(f"p{i}")
            else:
                for j, f in enumerate(fields):
                    lines = _inline(f"{i}_{j}", f, ns, heads, params)
                    if lines:
                        body += lines
                        pieces.append(f"p{i}_{j}")
        # A named tuple is unpacked into its fields (``fields`` takes them as arguments).
        local = [f"    {name} = {_read(path, {}, params)}" for path, name in heads.items()]
        joined = f"b''.join(({', '.join(pieces)},))" if pieces else "b''"
        unpack = [f"    {', '.join(f'a_{n}' for n in params)}, = obj"] if params else []
        # ``fields`` has no ``obj`` to give a nested message: it reads the fields only.
        nested = any(f.nested is not None for fields, _ in layout.groups for f in fields)
        args = ", ".join(f"a_{n}" for n in params or ()) if not nested else "*_"
        self.source = "\n".join(
            [
                "def encode(obj):",
                *unpack,
                *local,
                *body,
                f"    return {joined}",
                "",
                f"def fields({args}):",
                *(local + body if not nested else ["    raise TypeError('a nested message')"]),
                *([f"    return {joined}"] if not nested else []),
                "",
                "def entry(obj):",
                *unpack,
                *local,
                *body,
                f"    body = {joined}",
                "    n = len(body)",
                "    return EK + (SMALL[n] if n < 128 else varint(n)) + body",
            ]
        )
        exec(compile(self.source, f"<fastwire {layout.name}>", "exec"), ns)
        self.encode: Callable[[Any], bytes] = ns["encode"]
        self.entry: Callable[[Any], bytes] = ns["entry"]
        # ``encode`` of a named tuple from its fields, without making the tuple.
        self.fields: Callable[..., bytes] = ns["fields"]

    def _cached(
        self,
        i: int,
        fields: tuple[_Field, ...],
        ns: dict[str, Any],
        heads: dict[str, str],
        params: Sequence[str] | None,
    ) -> list[str]:
        cache: dict = {}
        self.caches.append(cache)
        reads = [_read(f.path, heads, params) for f in fields if f.path is not None]
        ns[f"get{i}"] = cache.get
        ns[f"m{i}"] = _piece_maker(fields, cache, single=len(reads) == 1)
        key = reads[0] if len(reads) == 1 else f"({', '.join(reads)})"
        return [
            f"    k = {key}",
            f"    p{i} = get{i}(k)",
            f"    if p{i} is None:",
            f"        p{i} = m{i}(k)",
        ]

    def clear(self) -> None:
        """Forget every cached piece."""
        for cache in self.caches:
            cache.clear()


def _read(path: str, heads: dict[str, str], params: Sequence[str] | None) -> str:
    """Source reading ``path`` from ``obj`` (a named tuple's fields are locals ``a_<name>``);
    a head object read more than once is read once, into a local."""
    if "." not in path:
        return f"a_{path}" if params and path in params else f"obj.{path}"
    head, rest = path.rsplit(".", 1)
    if params and head in params:
        return f"a_{head}.{rest}"
    name = heads.setdefault(head, f"o{len(heads)}")
    return f"{name}.{rest}"


def _inline(
    name: str,
    f: _Field,
    ns: dict[str, Any],
    heads: dict[str, str],
    params: Sequence[str] | None,
) -> list[str]:
    """Source that sets ``p<name>`` to one field, encoded afresh (no lines: nothing to write)."""
    fd = f.fd
    p = f"p{name}"
    ns[f"K{name}"] = key = field_key_of(fd)
    if f.path is None:
        piece = _encode_value(fd, key, f.const)
        ns[f"C{name}"] = piece
        return [f"    {p} = C{name}"] if piece else []
    if f.nested is not None:
        ns[f"N{name}"] = f.nested.encoder().encode
        return [
            f"    v = N{name}(obj)",
            "    n = len(v)",
            f"    {p} = K{name} + (SMALL[n] if n < 128 else varint(n)) + v",
        ]
    out = [f"    v = {_read(f.path, heads, params)}"]
    if f.convert is not None:
        ns[f"V{name}"] = f.convert
        out.append(f"    v = V{name}(v)")
    test = "v is not None" if fd.has_presence and not fd.is_repeated else "v"
    if fd.type == _F.TYPE_MESSAGE and fd.is_repeated:
        return [*out, f"    {p} = v"]
    if fd.type in _VARINT_TYPES and not fd.is_repeated:
        return [*out, f"    {p} = K{name} + varint(int(v)) if {test} else b''"]
    out += [f"    if {test}:"]
    if fd.is_repeated:
        out.append("        v = b''.join([varint(int(x)) for x in v])")
    elif fd.type == _F.TYPE_STRING:
        out.append("        v = v.encode()")
    return [
        *out,
        "        n = len(v)",
        f"        {p} = K{name} + (SMALL[n] if n < 128 else varint(n)) + v",
        "    else:",
        f"        {p} = b''",
    ]


def field_key_of(fd: FieldDescriptor) -> bytes:
    packed = fd.is_repeated and fd.type in _VARINT_TYPES
    return tag(fd.number, VARINT if fd.type in _VARINT_TYPES and not packed else LEN)


def _piece_maker(
    fields: tuple[_Field, ...], cache: dict, *, single: bool
) -> Callable[[Any], bytes]:
    """A cached group's piece for a key (the group's values, one value if only one), kept."""
    encoders = [(f.fd, field_key_of(f.fd), f.convert, f.path is None, f.const) for f in fields]

    def make(values: Any) -> bytes:
        given = iter((values,) if single else values)
        parts = []
        for fd, key, conv, is_const, const in encoders:
            value = const if is_const else next(given)
            if conv is not None and not is_const:
                value = conv(value)
            parts.append(_encode_value(fd, key, value))
        piece = b"".join(parts)
        if len(cache) >= MAX_PIECES:
            cache.clear()
        cache[values] = piece
        return piece

    return make
