//! Lean wire codecs: requests are written straight into the connection's
//! buffer from fixed pieces plus the key and value bytes; replies are parsed
//! in place and reported as ranges of the read buffer. No allocation, no
//! I/O, no clock.

pub mod handlersocket;
pub mod memcache_binary;
pub mod memcache_text;
pub mod mysql;
pub mod mysql_fields;
pub mod postgres;
pub mod postgres_fields;
pub mod resp;
pub mod resp_fields;

/// Largest length a reply may declare (1 GiB): beyond it the stream is
/// treated as garbage rather than growing the read buffer without bound.
pub(crate) const MAX_DECLARED_LEN: usize = 1 << 30;

/// Appends the decimal digits of `n` to `out` without allocating.
#[inline]
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Position of the first `\r\n` in `buf`.
#[inline]
pub(crate) fn find_crlf(buf: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = buf[from..].iter().position(|&b| b == b'\r') {
        let i = from + p;
        if i + 1 >= buf.len() {
            return None;
        }
        if buf[i + 1] == b'\n' {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

/// Parses a non-negative decimal integer.
#[inline]
pub(crate) fn parse_decimal(b: &[u8]) -> Option<usize> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    let mut n = 0usize;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (c - b'0') as usize;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_roundtrip() {
        for n in [0usize, 7, 10, 12345, usize::MAX / 10] {
            let mut v = Vec::new();
            push_decimal(&mut v, n);
            assert_eq!(parse_decimal(&v), Some(n));
        }
        assert_eq!(parse_decimal(b"-1"), None);
        assert_eq!(parse_decimal(b""), None);
    }

    #[test]
    fn crlf() {
        assert_eq!(find_crlf(b"ab\r\n"), Some(2));
        assert_eq!(find_crlf(b"a\rb\r\n"), Some(3));
        assert_eq!(find_crlf(b"ab\r"), None);
    }
}
