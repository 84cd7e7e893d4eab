//! Byte source for the decoder: buffered, offset-tracking, and length-checked
//! against the bytes that are left, so no length field makes us allocate first.

use std::io::Read;

use super::DecodeError;
use crate::convert;

/// Bytes read from the source per refill.
const CHUNK: usize = 1 << 20;

/// A buffered reader that knows where it is and how much is left.
pub(crate) struct Reader<R: Read> {
    src: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// File offset of `buf[0]`.
    base: u64,
    /// Total length of the input when known (files); `None` for pipes.
    len: Option<u64>,
}

impl<R: Read> Reader<R> {
    pub(crate) fn new(src: R, len: Option<u64>) -> Self {
        Reader {
            src,
            buf: vec![0u8; CHUNK].into_boxed_slice(),
            pos: 0,
            end: 0,
            base: 0,
            len,
        }
    }

    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn remaining(&self) -> Option<u64> {
        self.len.map(|l| l.saturating_sub(self.offset()))
    }

    fn truncated(&self, at: u64, what: &str) -> DecodeError {
        DecodeError::Truncated {
            offset: at,
            what: what.to_string(),
        }
    }

    fn io(&self, e: std::io::Error) -> DecodeError {
        DecodeError::Io {
            offset: self.offset(),
            message: e.to_string(),
        }
    }

    /// Make at least `n` (≤ CHUNK) bytes available; false at the end of input.
    fn ensure(&mut self, n: usize) -> Result<bool, DecodeError> {
        if self.end - self.pos >= n {
            return Ok(true);
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        while self.end < n {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(k) => self.end += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
        Ok(true)
    }

    /// Up to `n` buffered bytes from the current position (fewer near the
    /// end of the input), without consuming them.
    pub(crate) fn window(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        if self.end - self.pos < n {
            self.ensure(n)?;
        }
        Ok(&self.buf[self.pos..self.end.min(self.pos + n)])
    }

    /// Consume `n` bytes that `window` showed.
    pub(crate) fn advance(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.pos);
        self.pos += n;
    }

    /// One byte, or `None` at the end of the input.
    #[inline]
    pub(crate) fn byte(&mut self) -> Result<Option<u8>, DecodeError> {
        if self.pos < self.end || self.ensure(1)? {
            let b = self.buf[self.pos];
            self.pos += 1;
            return Ok(Some(b));
        }
        Ok(None)
    }

    /// Exactly `N` bytes of an opcode argument.
    #[inline]
    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], DecodeError> {
        if self.end - self.pos < N && !self.ensure(N)? {
            return Err(self.truncated(self.offset(), what));
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    /// A short payload (a one-byte length), borrowed from the buffer.
    #[inline]
    pub(crate) fn short(&mut self, n: u8, what: &str) -> Result<&[u8], DecodeError> {
        let n = n as usize;
        if self.end - self.pos < n && !self.ensure(n)? {
            let offset = self.offset();
            return Err(match self.remaining() {
                Some(left) => DecodeError::LengthPastEnd {
                    offset,
                    what: what.to_string(),
                    length: n as u64,
                    left,
                },
                None => self.truncated(offset, what),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// `n` bytes of payload whose length came from the file itself: checked
    /// against what is left before a single byte is allocated.
    pub(crate) fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, DecodeError> {
        let start = self.offset();
        if let Some(left) = self.remaining() {
            if n > left {
                return Err(DecodeError::LengthPastEnd {
                    offset: start,
                    what: what.to_string(),
                    length: n,
                    left,
                });
            }
        }
        let have = (self.end - self.pos) as u64;
        if n <= have {
            // n ≤ have, a length of the in-memory buffer.
            let n = convert::index(n);
            let out = self.buf[self.pos..self.pos + n].to_vec();
            self.pos += n;
            return Ok(out);
        }
        // Larger than the buffer: take what is buffered, then read the rest,
        // growing only as bytes really arrive (a pipe has no known length).
        let mut out = Vec::with_capacity(if self.len.is_some() {
            convert::index(n)
        } else {
            CHUNK
        });
        out.extend_from_slice(&self.buf[self.pos..self.end]);
        self.base += self.end as u64;
        self.pos = 0;
        self.end = 0;
        let mut limited = (&mut self.src).take(n - have);
        let got = limited.read_to_end(&mut out).map_err(|e| self.io(e))?;
        self.base += got as u64;
        if (out.len() as u64) < n {
            return Err(self.truncated(start, what));
        }
        Ok(out)
    }

    /// A text line (protocol 0 arguments), without its `\n`.
    pub(crate) fn line(&mut self, what: &str) -> Result<Vec<u8>, DecodeError> {
        let start = self.offset();
        let mut out = Vec::new();
        loop {
            if self.pos == self.end && !self.ensure(1)? {
                return Err(self.truncated(start, what));
            }
            let avail = &self.buf[self.pos..self.end];
            if let Some(k) = avail.iter().position(|&b| b == b'\n') {
                out.extend_from_slice(&avail[..k]);
                self.pos += k + 1;
                return Ok(out);
            }
            out.extend_from_slice(avail);
            self.pos = self.end;
        }
    }
}
