"""Just enough of Apache Parquet to read one string column, with no pyarrow.

The GloVe package stores its 400k words as a one-column Parquet file
(`glove_6B_index.parquet`, written by pyarrow: Snappy pages, dictionary
encoding falling back to plain). Pulling in pyarrow (a 50 MB wheel, 157 MB
installed: docs/measurements.md) for one list of words is not worth it, so
this module reads exactly that layout: the Thrift compact footer and page
headers, Snappy, PLAIN and RLE_DICTIONARY BYTE_ARRAY pages, optional columns
without nulls. Anything else raises ParquetError.
"""
from __future__ import annotations

import gzip
import struct
import zlib

import numpy as np


class ParquetError(ValueError):
    """A Parquet feature this small reader does not support."""


# Parquet enums we need (parquet.thrift)
_PAGE_DATA, _PAGE_DICT = 0, 2
_ENC_PLAIN, _ENC_PLAIN_DICT, _ENC_RLE, _ENC_RLE_DICT = 0, 2, 3, 8
_CODEC_NONE, _CODEC_SNAPPY, _CODEC_GZIP = 0, 1, 2
_TYPE_BYTE_ARRAY = 6
_REP_OPTIONAL = 1


def read_string_column(path: str) -> list[str]:
    """All values of the single string column of a Parquet file, as a list of str."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"PAR1" or data[-4:] != b"PAR1":
        raise ParquetError(f"{path}: not a Parquet file")
    footer_len = struct.unpack("<I", data[-8:-4])[0]
    meta, _ = _read_struct(data, len(data) - 8 - footer_len)
    schema = meta[2]
    columns = schema[1:]
    if len(columns) != 1 or columns[0].get(1) != _TYPE_BYTE_ARRAY:
        raise ParquetError(f"{path}: expected one BYTE_ARRAY column, got schema {schema}")
    optional = columns[0].get(3) == _REP_OPTIONAL
    out: list[str] = []
    for row_group in meta[4]:
        for chunk in row_group[1]:
            cm = chunk[3]                    # ColumnMetaData
            codec, num_values = cm[4], cm[5]
            start = cm.get(11, cm[9])        # dictionary page offset if any, else first data page
            out.extend(_read_chunk(data, start, num_values, codec, optional))
    return out


def _read_chunk(data: bytes, pos: int, num_values: int, codec: int, optional: bool) -> list[str]:
    dictionary: list[str] | None = None
    values: list[str] = []
    while len(values) < num_values:
        header, pos = _read_struct(data, pos)
        page_type, size = header[1], header[3]
        page = _decompress(data[pos:pos + size], codec, header[2])
        pos += size
        if page_type == _PAGE_DICT:
            dictionary = _plain_byte_arrays(page, header[7][1])
        elif page_type == _PAGE_DATA:
            dph = header[5]                  # DataPageHeader
            n, encoding = dph[1], dph[2]
            body = 0
            if optional:                     # definition levels: 4-byte length + RLE; we require no nulls
                level_len = struct.unpack("<I", page[:4])[0]
                levels = _rle_hybrid(page[4:4 + level_len], 1, n)
                if not levels.all():
                    raise ParquetError("null values are not supported")
                body = 4 + level_len
            if encoding == _ENC_PLAIN:
                values.extend(_plain_byte_arrays(page[body:], n))
            elif encoding in (_ENC_RLE_DICT, _ENC_PLAIN_DICT):
                if dictionary is None:
                    raise ParquetError("dictionary-encoded page without a dictionary")
                bit_width = page[body]
                idx = _rle_hybrid(page[body + 1:], bit_width, n)
                values.extend(dictionary[i] for i in idx.tolist())
            else:
                raise ParquetError(f"page encoding {encoding} is not supported")
        else:
            raise ParquetError(f"page type {page_type} is not supported (only v1 data pages)")
    return values


def _decompress(raw: bytes, codec: int, uncompressed_size: int) -> bytes:
    if codec == _CODEC_NONE:
        return raw
    if codec == _CODEC_SNAPPY:
        return snappy_decompress(raw)
    if codec == _CODEC_GZIP:
        return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else zlib.decompress(raw)
    raise ParquetError(f"compression codec {codec} is not supported")


def _plain_byte_arrays(buf: bytes, n: int) -> list[str]:
    out, pos = [], 0
    for _ in range(n):
        length = struct.unpack_from("<I", buf, pos)[0]
        out.append(buf[pos + 4:pos + 4 + length].decode("utf-8"))
        pos += 4 + length
    return out


def _rle_hybrid(buf: bytes, bit_width: int, n: int) -> np.ndarray:
    """Decode Parquet's RLE / bit-packed hybrid encoding of `n` unsigned ints."""
    out = np.empty(n, dtype=np.int64)
    filled, pos = 0, 0
    byte_width = (bit_width + 7) // 8
    while filled < n:
        header, pos = _varint(buf, pos)
        if header & 1:                       # bit-packed run of (header >> 1) groups of 8 values
            count = (header >> 1) * 8
            nbytes = (header >> 1) * bit_width
            bits = np.unpackbits(np.frombuffer(buf, np.uint8, nbytes, pos), bitorder="little")
            vals = bits.reshape(-1, bit_width) @ (1 << np.arange(bit_width, dtype=np.int64)) if bit_width else \
                np.zeros(count, np.int64)
            take = min(count, n - filled)
            out[filled:filled + take] = vals[:take]
            pos += nbytes
        else:                                # RLE run: one value repeated (header >> 1) times
            count = header >> 1
            value = int.from_bytes(buf[pos:pos + byte_width], "little")
            pos += byte_width
            take = min(count, n - filled)
            out[filled:filled + take] = value
        filled += take
    return out


def snappy_decompress(buf: bytes) -> bytes:
    """Decompress a raw Snappy block (the format Parquet pages use)."""
    length, pos = _varint(buf, 0)
    out = bytearray()
    while pos < len(buf):
        tag = buf[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:                        # literal
            n = tag >> 2
            if n >= 60:
                extra = n - 59
                n = int.from_bytes(buf[pos:pos + extra], "little")
                pos += extra
            n += 1
            out += buf[pos:pos + n]
            pos += n
            continue
        if kind == 1:                        # copy, 1-byte offset
            n = ((tag >> 2) & 7) + 4
            offset = ((tag >> 5) << 8) | buf[pos]
            pos += 1
        elif kind == 2:                      # copy, 2-byte offset
            n = (tag >> 2) + 1
            offset = int.from_bytes(buf[pos:pos + 2], "little")
            pos += 2
        else:                                # copy, 4-byte offset
            n = (tag >> 2) + 1
            offset = int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        if offset == 0 or offset > len(out):
            raise ParquetError("corrupt snappy data")
        start = len(out) - offset
        if n <= offset:
            out += out[start:start + n]
        else:                                # overlapping copy repeats the last `offset` bytes
            for i in range(n):
                out.append(out[start + i])
    if len(out) != length:
        raise ParquetError(f"snappy: expected {length} bytes, got {len(out)}")
    return bytes(out)


# ---------------------------------------------------------------- Thrift compact protocol

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _read_struct(buf: bytes, pos: int) -> tuple[dict, int]:
    """A Thrift struct as {field id: value}; nested structs become dicts, lists stay lists."""
    out: dict = {}
    last = 0
    while True:
        head = buf[pos]
        pos += 1
        if head == 0:                        # STOP
            return out, pos
        ftype, delta = head & 0x0F, head >> 4
        if delta:
            fid = last + delta
        else:
            raw, pos = _varint(buf, pos)
            fid = _zigzag(raw)
        last = fid
        out[fid], pos = _read_value(buf, pos, ftype)


def _read_value(buf: bytes, pos: int, ftype: int):
    if ftype in (1, 2):                      # bool true / false, packed in the type
        return ftype == 1, pos
    if ftype == 3:                           # byte
        return struct.unpack_from("b", buf, pos)[0], pos + 1
    if ftype in (4, 5, 6):                   # i16, i32, i64
        raw, pos = _varint(buf, pos)
        return _zigzag(raw), pos
    if ftype == 7:                           # double
        return struct.unpack_from("<d", buf, pos)[0], pos + 8
    if ftype == 8:                           # binary / string
        n, pos = _varint(buf, pos)
        return bytes(buf[pos:pos + n]), pos + n
    if ftype in (9, 10):                     # list / set
        head = buf[pos]
        pos += 1
        n, etype = head >> 4, head & 0x0F
        if n == 15:
            n, pos = _varint(buf, pos)
        items = []
        for _ in range(n):
            if etype in (1, 2):              # bools in lists take one byte each
                items.append(buf[pos] == 1)
                pos += 1
            else:
                item, pos = _read_value(buf, pos, etype)
                items.append(item)
        return items, pos
    if ftype == 12:
        return _read_struct(buf, pos)
    raise ParquetError(f"thrift type {ftype} is not supported")
