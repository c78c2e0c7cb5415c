"""Thrift compact protocol, the encoding of Parquet's footer and page headers, both ways.

A struct decodes into a tree that re-encodes to the same bytes: a list of [field id, type,
value]; a list or set is (element type, [values]); a map is (key type, value type, [(key,
value)]); a boolean struct field carries its value in the type (TRUE or FALSE) and None as
value; a double is its 8 little-endian bytes. The writer builds the same trees.

The page headers take the other way through the same protocol: ``skip`` and
``skip_flat_struct`` move past a value without building it, for the one-pass walk of
kernels.parquet.headers, which reads the few fields it keeps in place. The type codes and the
varints are kernels.parquet.format's.

Standard library only. Errors are ThriftError (the caller names the file); the skips raise
IndexError where the bytes end inside a value, which their caller reports.
"""
from __future__ import annotations

from kernels.parquet.format import (BINARY, BYTE, DOUBLE, FALSE, I16, I32, I64, LIST, MAP, SET, STRUCT, TRUE,
                                    read_uleb128, uleb128, zigzag_decode, zigzag_encode)


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
        try:
            value, self.pos = read_uleb128(self.data, self.pos)
        except IndexError:
            raise ThriftError("the struct ends inside a value") from None
        return value

    def zigzag(self) -> int:
        return zigzag_decode(self.varint())

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
    _varint(out, zigzag_encode(n))


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


def skip(buf, pos: int, ftype: int) -> int:
    """Position after one value of compact type ``ftype`` starting at ``buf[pos]`` (``buf``
    indexes to ints), read no further than needed to find its end."""
    if ftype in (TRUE, FALSE):
        return pos  # a bool field's value is in its header's type nibble
    if ftype == BYTE:
        return pos + 1
    if ftype in (I16, I32, I64):
        while buf[pos] >= 0x80:
            pos += 1
        return pos + 1
    if ftype == DOUBLE:
        return pos + 8
    if ftype == BINARY:
        n, pos = read_uleb128(buf, pos)
        return pos + n
    if ftype in (LIST, SET):
        head = buf[pos]
        pos += 1
        n = head >> 4
        if n == 15:
            n, pos = read_uleb128(buf, pos)
        etype = head & 0x0F
        if n > len(buf) - pos:  # every element takes a byte at least: a damaged count, not a walk of 2**40
            raise IndexError("a list longer than the bytes left")
        for _ in range(n):
            pos = pos + 1 if etype in (TRUE, FALSE) else skip(buf, pos, etype)
        return pos
    if ftype == MAP:
        n, pos = read_uleb128(buf, pos)
        if n > len(buf) - pos:  # as for lists: a damaged count
            raise IndexError("a map longer than the bytes left")
        if n:
            kv = buf[pos]
            pos += 1
            for _ in range(n):
                pos = skip(buf, pos, kv >> 4)
                pos = skip(buf, pos, kv & 0x0F)
        return pos
    if ftype == STRUCT:
        while True:
            head = buf[pos]
            pos += 1
            if head == 0:
                return pos
            if head >> 4 == 0:
                _, pos = read_uleb128(buf, pos)  # long-form field id (i16 zigzag)
            pos = skip(buf, pos, head & 0x0F)
    raise ThriftError(f"Thrift compact type {ftype} unknown")


def skip_flat_struct(buf, pos: int) -> int:
    """Position after a struct of scalar and binary fields (a page's Statistics) starting at
    ``buf[pos]``, without recursion: ``skip`` of a STRUCT, faster where the fields are flat."""
    while True:
        head = buf[pos]
        pos += 1
        if head == 0:
            return pos
        if head < 0x10:
            while buf[pos] >= 0x80:  # long-form field id
                pos += 1
            pos += 1
        t = head & 0x0F
        if t == BINARY:
            b = buf[pos]
            if b < 0x80:
                pos += 1 + b
            else:
                n, pos = read_uleb128(buf, pos)
                pos += n
        elif I16 <= t <= I64:
            while buf[pos] >= 0x80:
                pos += 1
            pos += 1
        elif t > FALSE:
            pos = skip(buf, pos, t)
