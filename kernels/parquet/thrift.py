"""Thrift compact protocol, the encoding of Parquet's footer and page headers, both ways.

A struct decodes into a tree that re-encodes to the same bytes: a list of [field id, type,
value]; a list or set is (element type, [values]); a map is (key type, value type, [(key,
value)]); a boolean struct field carries its value in the type (TRUE or FALSE) and None as
value; a double is its 8 little-endian bytes. The writer builds the same trees.

Standard library only. Errors are ThriftError (the caller names the file).
"""
from __future__ import annotations

from kernels.parquet.encode import uleb128

# Compact protocol type codes, as they appear in field headers and list headers
TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)


class ThriftError(ValueError):
    """The bytes are not a compact-protocol struct (cut short, or an unknown type)."""


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ThriftError("the struct ends inside a value")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, count: int) -> bytes:
        chunk = self.data[self.pos:self.pos + count]
        if len(chunk) != count:
            raise ThriftError("the struct ends inside a value")
        self.pos += count
        return chunk

    def value(self, kind: int):
        if kind in (I16, I32, I64):
            return self.zigzag()
        if kind == BINARY:
            return self.take(self.varint())
        if kind == STRUCT:
            return self.struct()
        if kind in (LIST, SET):
            head = self.byte()
            size, element = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            return element, [self.value(element) for _ in range(size)]
        if kind == MAP:
            size = self.varint()
            if size == 0:
                return 0, 0, []
            types = self.byte()
            key, val = types >> 4, types & 0x0F
            return key, val, [(self.value(key), self.value(val)) for _ in range(size)]
        if kind == DOUBLE:
            return self.take(8)
        if kind in (BYTE, TRUE, FALSE):  # a boolean inside a list is one byte too
            return self.byte()
        raise ThriftError(f"unknown Thrift type {kind}")

    def struct(self) -> list:
        fields, last = [], 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            kind, delta = head & 0x0F, head >> 4
            fid = last + delta if delta else self.zigzag()
            fields.append([fid, kind, None if kind in (TRUE, FALSE) else self.value(kind)])
            last = fid


def _varint(out: bytearray, n: int) -> None:
    out += uleb128(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63))


def _write_value(out: bytearray, kind: int, value) -> None:
    if kind in (I16, I32, I64):
        _zigzag(out, value)
    elif kind == BINARY:
        _varint(out, len(value))
        out += value
    elif kind == STRUCT:
        _write_struct(out, value)
    elif kind in (LIST, SET):
        element, items = value
        if len(items) < 15:
            out.append(len(items) << 4 | element)
        else:
            out.append(0xF0 | element)
            _varint(out, len(items))
        for item in items:
            _write_value(out, element, item)
    elif kind == MAP:
        key, val, items = value
        _varint(out, len(items))
        if items:
            out.append(key << 4 | val)
            for k, v in items:
                _write_value(out, key, k)
                _write_value(out, val, v)
    elif kind == DOUBLE:
        out += value
    else:  # BYTE, or a boolean inside a list
        out.append(value)


def _write_struct(out: bytearray, fields: list) -> None:
    last = 0
    for fid, kind, value in fields:
        if 0 < fid - last <= 15:
            out.append((fid - last) << 4 | kind)
        else:
            out.append(kind)
            _zigzag(out, fid)
        if kind not in (TRUE, FALSE):
            _write_value(out, kind, value)
        last = fid
    out.append(0)


def decode_struct(data: bytes) -> list:
    """The struct at the start of ``data``, as a tree (the module's docstring)."""
    return _Reader(data).struct()


def encode_struct(fields: list) -> bytes:
    """A tree's bytes; its fields must come in ascending id order."""
    out = bytearray()
    _write_struct(out, fields)
    return bytes(out)


def field(fields: list, fid: int):
    """The entry [fid, type, value] of a decoded struct, or None."""
    for entry in fields:
        if entry[0] == fid:
            return entry
    return None
