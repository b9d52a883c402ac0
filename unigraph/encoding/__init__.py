"""Bytes: protobuf wire primitives, TFRecord framing and CRC32C, the 64-bit hashes."""
