"""Deletion vectors in the bytes Delta stores them as.

Delta protocol, "Deletion Vector Format": a deletion vector (DV) is a set of 64-bit row indexes,
serialized as the magic number 1681511377 (u32 little endian) followed by the portable 64-bit
RoaringBitmap serialization ("RoaringTreemap"): the number of 32-bit buckets (u64 LE), then per
bucket in ascending key order its high 32 bits (u32 LE) and a standard portable 32-bit
RoaringBitmap. This module calls those bytes *bitmap data*; ``sizeInBytes`` of a descriptor is
their length.

"Deletion Vector File Storage Format": a DV file is the format version byte 1, then per vector
its size (u32 big endian), its bitmap data, and the CRC-32 of the bitmap data (u32 BE). A
descriptor's ``offset`` points at the size field.

"Deletion Vector Descriptor Schema": inline vectors (storage type ``i``) carry the Z85 text of
the bitmap data (zero-padded to a multiple of 4 bytes, as Delta does; ``sizeInBytes`` gives the
unpadded length); on-disk vectors with a relative path (storage type ``u``) carry an optional
random prefix followed by the 20-character Z85 text of the file's UUID, and live at
``<prefix>/deletion_vector_<uuid>.bin`` under the table root.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

__all__ = [
    "DV_FILE_FORMAT_VERSION",
    "MAGIC_NUMBER",
    "bitmap_data",
    "dv_file",
    "frame",
    "parse_bitmap_data",
    "read_from_dv_file",
    "relative_dv_path",
    "serialize_roaring32",
    "serialize_treemap",
    "uuid_from_z85",
    "uuid_to_z85",
    "z85_decode",
    "z85_encode",
]

#: "magicNumber" of the bitmap data.
MAGIC_NUMBER = 1681511377
#: The first byte of every DV file.
DV_FILE_FORMAT_VERSION = 1

Z85_ALPHABET = (
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)
_Z85_VALUES = {char: value for value, char in enumerate(Z85_ALPHABET)}

# Portable RoaringBitmap format (https://github.com/RoaringBitmap/RoaringFormatSpec).
_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE_RUN = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_CONTAINER_MAX = 4096
_BITMAP_CONTAINER_BYTES = 8192

RowIndexes = npt.NDArray[np.uint64]


def serialize_roaring32(values: npt.ArrayLike) -> bytes:
    """The portable 32-bit RoaringBitmap serialization of ``values`` (each < 2**32).

    Containers of up to 4096 values are array containers, larger ones bitmap containers; no
    run containers, so the header is the no-run cookie, the container count and the offsets.
    """
    ordered = np.unique(np.asarray(values, dtype=np.uint64)).astype(np.uint32)
    keys, starts = np.unique(ordered >> np.uint32(16), return_index=True)
    ends = [*starts[1:].tolist(), len(ordered)]
    containers = [
        _container_bytes(ordered[start:end] & np.uint32(0xFFFF))
        for start, end in zip(starts.tolist(), ends, strict=True)
    ]
    count = len(containers)
    header = struct.pack("<II", _SERIAL_COOKIE_NO_RUN, count)
    descriptions = b"".join(
        struct.pack("<HH", int(key), int(end - start) - 1)
        for key, start, end in zip(keys.tolist(), starts.tolist(), ends, strict=True)
    )
    offset = len(header) + len(descriptions) + 4 * count
    offsets = bytearray()
    for container in containers:
        offsets += struct.pack("<I", offset)
        offset += len(container)
    return header + descriptions + bytes(offsets) + b"".join(containers)


def serialize_treemap(values: npt.ArrayLike) -> bytes:
    """The portable 64-bit RoaringBitmap serialization of ``values`` (each < 2**63)."""
    ordered = np.unique(np.asarray(values, dtype=np.uint64))
    if len(ordered) and int(ordered[-1]) >= 1 << 63:
        raise ValueError("deletion vector row indexes must be below 2**63 (Delta requires it)")
    high = ordered >> np.uint64(32)
    keys, starts = np.unique(high, return_index=True)
    ends = [*starts[1:].tolist(), len(ordered)]
    parts = [struct.pack("<Q", len(keys))]
    for key, start, end in zip(keys.tolist(), starts.tolist(), ends, strict=True):
        parts.append(struct.pack("<I", int(key)))
        parts.append(serialize_roaring32(ordered[start:end] & np.uint64(0xFFFFFFFF)))
    return b"".join(parts)


def bitmap_data(values: npt.ArrayLike) -> bytes:
    """The bytes a descriptor's ``sizeInBytes`` counts: magic number + portable 64-bit bitmap."""
    return struct.pack("<I", MAGIC_NUMBER) + serialize_treemap(values)


def frame(data: bytes) -> bytes:
    """One vector as a DV file stores it: size (u32 BE), bitmap data, CRC-32 (u32 BE)."""
    return struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def dv_file(vectors: Iterable[bytes]) -> tuple[bytes, list[int]]:
    """A DV file holding ``vectors`` (bitmap data each) and the ``offset`` of each."""
    parts = [bytes([DV_FILE_FORMAT_VERSION])]
    offsets = []
    position = 1
    for data in vectors:
        offsets.append(position)
        framed = frame(data)
        parts.append(framed)
        position += len(framed)
    return b"".join(parts), offsets


def read_from_dv_file(content: bytes, offset: int, size_in_bytes: int) -> RowIndexes:
    """The row indexes of the vector at ``offset`` of a DV file, checking the format version,
    the stored size against ``size_in_bytes`` and the checksum."""
    if not content or content[0] != DV_FILE_FORMAT_VERSION:
        raise ValueError("not a DV file of format version 1")
    (stored_size,) = struct.unpack_from(">I", content, offset)
    if stored_size != size_in_bytes:
        raise ValueError(f"DV at offset {offset} has size {stored_size}, not {size_in_bytes}")
    data = content[offset + 4 : offset + 4 + stored_size]
    (checksum,) = struct.unpack_from(">I", content, offset + 4 + stored_size)
    if zlib.crc32(data) != checksum:
        raise ValueError(f"DV at offset {offset} fails its CRC-32 check")
    return parse_bitmap_data(data)


def parse_bitmap_data(data: bytes) -> RowIndexes:
    """The row indexes in bitmap data (magic number + portable 64-bit bitmap), ascending.

    Reads array, bitmap and run containers, so it also reads vectors Delta on Spark wrote.
    """
    (magic,) = struct.unpack_from("<I", data, 0)
    if magic != MAGIC_NUMBER:
        raise ValueError(f"bad deletion vector magic number {magic}")
    (buckets,) = struct.unpack_from("<Q", data, 4)
    position = 12
    chunks: list[RowIndexes] = []
    for _ in range(buckets):
        (key,) = struct.unpack_from("<I", data, position)
        low, position = _parse_roaring32(data, position + 4)
        chunks.append((np.uint64(key) << np.uint64(32)) | low.astype(np.uint64))
    return np.concatenate(chunks) if chunks else np.empty(0, dtype=np.uint64)


def z85_encode(data: bytes) -> str:
    """Z85 text of ``data``, zero-padded to a multiple of 4 bytes first (as Delta's codec)."""
    padded = data + b"\0" * (-len(data) % 4)
    out = bytearray()
    for (word,) in struct.iter_unpack(">I", padded):
        digits = []
        for _ in range(5):
            word, digit = divmod(word, 85)
            digits.append(Z85_ALPHABET[digit])
        out += bytes(reversed(digits))
    return out.decode("ascii")


def z85_decode(text: str, size: int | None = None) -> bytes:
    """The bytes of Z85 ``text``, cut to ``size`` when given (inline DVs are padded)."""
    raw = text.encode("ascii")
    if len(raw) % 5:
        raise ValueError(f"Z85 text of length {len(raw)} is not a multiple of 5")
    out = bytearray()
    for start in range(0, len(raw), 5):
        word = 0
        for char in raw[start : start + 5]:
            word = word * 85 + _Z85_VALUES[char]
        out += struct.pack(">I", word)
    return bytes(out if size is None else out[:size])


def uuid_to_z85(value: uuid.UUID) -> str:
    """The 20-character Z85 text of a UUID (its 16 bytes, most significant first)."""
    return z85_encode(value.bytes)


def uuid_from_z85(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=z85_decode(text))


def relative_dv_path(path_or_inline_dv: str) -> str:
    """Where a storage-type ``u`` vector lives, relative to the table root."""
    prefix, encoded = path_or_inline_dv[:-20], path_or_inline_dv[-20:]
    name = f"deletion_vector_{uuid_from_z85(encoded)}.bin"
    return f"{prefix}/{name}" if prefix else name


def _container_bytes(low: npt.NDArray[np.uint32]) -> bytes:
    if len(low) <= _ARRAY_CONTAINER_MAX:
        return low.astype("<u2").tobytes()
    bits = np.zeros(1 << 16, dtype=bool)
    bits[low] = True
    return np.packbits(bits, bitorder="little").tobytes()


def _parse_roaring32(data: bytes, start: int) -> tuple[npt.NDArray[np.uint32], int]:
    """The values of the 32-bit bitmap at ``start`` and the position just after it."""
    (cookie,) = struct.unpack_from("<I", data, start)
    position = start + 4
    if cookie & 0xFFFF == _SERIAL_COOKIE_RUN:
        count = (cookie >> 16) + 1
        run_flags = data[position : position + (count + 7) // 8]
        position += (count + 7) // 8
        is_run = [bool(run_flags[i // 8] >> (i % 8) & 1) for i in range(count)]
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        (count,) = struct.unpack_from("<I", data, position)
        position += 4
        is_run = [False] * count
    else:
        raise ValueError(f"bad RoaringBitmap cookie {cookie}")
    descriptions = struct.unpack_from(f"<{2 * count}H", data, position)
    position += 4 * count
    if not any(is_run) or count >= _NO_OFFSET_THRESHOLD:
        position += 4 * count
    values: list[npt.NDArray[np.uint32]] = []
    for index in range(count):
        key, cardinality = descriptions[2 * index], descriptions[2 * index + 1] + 1
        low, position = _parse_container(data, position, cardinality, is_run[index])
        values.append((np.uint32(key) << np.uint32(16)) | low)
    merged = np.concatenate(values) if values else np.empty(0, dtype=np.uint32)
    return merged, position


def _parse_container(
    data: bytes, position: int, cardinality: int, is_run: bool
) -> tuple[npt.NDArray[np.uint32], int]:
    if is_run:
        (runs,) = struct.unpack_from("<H", data, position)
        pairs = np.frombuffer(data, dtype="<u2", count=2 * runs, offset=position + 2)
        low = np.concatenate(
            [np.arange(s, s + n + 1, dtype=np.uint32) for s, n in pairs.reshape(-1, 2).tolist()]
        )
        return low, position + 2 + 4 * runs
    if cardinality <= _ARRAY_CONTAINER_MAX:
        low = np.frombuffer(data, dtype="<u2", count=cardinality, offset=position)
        return low.astype(np.uint32), position + 2 * cardinality
    raw = np.frombuffer(data, dtype=np.uint8, count=_BITMAP_CONTAINER_BYTES, offset=position)
    low = np.flatnonzero(np.unpackbits(raw, bitorder="little")).astype(np.uint32)
    return low, position + _BITMAP_CONTAINER_BYTES
