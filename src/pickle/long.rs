//! Python's `LONG1` / `LONG4` payload: a little-endian two's complement
//! integer of any width. Shared by the general decoder and the flat-dict
//! fast path, so both read a long the same way.

/// Little-endian two's complement of any width, if it fits in `i128`.
pub(crate) fn long_to_i128(bytes: &[u8]) -> Option<i128> {
    let Some(&last) = bytes.last() else {
        return Some(0);
    };
    let negative = last & 0x80 != 0;
    let fill = if negative { 0xff } else { 0x00 };
    if bytes.len() > 16 {
        // Wider than i128 is fine as long as the extra bytes are only sign.
        if bytes[16..].iter().any(|&b| b != fill) {
            return None;
        }
        if (bytes[15] & 0x80 != 0) != negative {
            return None;
        }
    }
    let mut buf = [fill; 16];
    let n = bytes.len().min(16);
    buf[..n].copy_from_slice(&bytes[..n]);
    Some(i128::from_le_bytes(buf))
}
