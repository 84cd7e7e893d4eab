//! Byte source for the decoder: buffered, offset-tracking, and length-checked
//! against the bytes that are left, so no length field makes us allocate first.

use std::io::{BufRead, BufReader, Read};

use super::DecodeError;

/// A buffered reader that knows where it is and how much is left.
pub(crate) struct Reader<R: Read> {
    inner: BufReader<R>,
    offset: u64,
    /// Total length of the input when known (files); `None` for pipes.
    len: Option<u64>,
}

impl<R: Read> Reader<R> {
    pub(crate) fn new(inner: R, len: Option<u64>) -> Self {
        Reader {
            inner: BufReader::with_capacity(256 * 1024, inner),
            offset: 0,
            len,
        }
    }

    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    fn remaining(&self) -> Option<u64> {
        self.len.map(|l| l.saturating_sub(self.offset))
    }

    fn truncated(&self, at: u64, what: &str) -> DecodeError {
        DecodeError::Truncated {
            offset: at,
            what: what.to_string(),
        }
    }

    /// One byte, or `None` at the end of the input.
    #[inline]
    pub(crate) fn byte(&mut self) -> Result<Option<u8>, DecodeError> {
        if let Some(&b) = self.inner.buffer().first() {
            self.inner.consume(1);
            self.offset += 1;
            return Ok(Some(b));
        }
        let buf = self.inner.fill_buf().map_err(|e| DecodeError::Io {
            offset: self.offset,
            message: e.to_string(),
        })?;
        match buf.first() {
            Some(&b) => {
                self.inner.consume(1);
                self.offset += 1;
                Ok(Some(b))
            }
            None => Ok(None),
        }
    }

    /// Exactly `N` bytes of an opcode argument.
    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        let start = self.offset;
        self.fill(&mut out)
            .map_err(|_| self.truncated(start, what))?;
        Ok(out)
    }

    fn fill(&mut self, out: &mut [u8]) -> Result<(), ()> {
        // Fast path: the whole argument is already in the buffer.
        let buf = self.inner.buffer();
        if buf.len() >= out.len() {
            out.copy_from_slice(&buf[..out.len()]);
            self.inner.consume(out.len());
            self.offset += out.len() as u64;
            return Ok(());
        }
        let mut done = 0;
        while done < out.len() {
            let n = self.inner.read(&mut out[done..]).map_err(|_| ())?;
            if n == 0 {
                return Err(());
            }
            done += n;
            self.offset += n as u64;
        }
        Ok(())
    }

    /// `n` bytes of payload whose length came from the file itself: checked
    /// against what is left before a single byte is allocated.
    pub(crate) fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, DecodeError> {
        let start = self.offset;
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
        if self.len.is_some() {
            // Checked against the bytes left above: safe to size up front.
            let mut out = vec![0u8; n as usize];
            self.fill(&mut out)
                .map_err(|_| self.truncated(start, what))?;
            return Ok(out);
        }
        // Without a known length (a pipe), grow as the bytes really arrive.
        let mut out = Vec::with_capacity(n.min(1 << 20) as usize);
        let mut limited = (&mut self.inner).take(n);
        let got = limited
            .read_to_end(&mut out)
            .map_err(|_| self.truncated(start, what))?;
        self.offset += got as u64;
        if (got as u64) < n {
            return Err(self.truncated(start, what));
        }
        Ok(out)
    }

    /// A short payload (≤ 255 bytes, a one-byte length) into a stack buffer.
    pub(crate) fn short<'b>(
        &mut self,
        n: u8,
        buf: &'b mut [u8; 256],
        what: &str,
    ) -> Result<&'b [u8], DecodeError> {
        let start = self.offset;
        let out = &mut buf[..n as usize];
        self.fill(out).map_err(|_| self.truncated(start, what))?;
        Ok(out)
    }

    /// A text line (protocol 0 arguments), without its `\n`.
    pub(crate) fn line(&mut self, what: &str) -> Result<Vec<u8>, DecodeError> {
        let start = self.offset;
        let mut out = Vec::new();
        loop {
            let buf = self.inner.fill_buf().map_err(|e| DecodeError::Io {
                offset: self.offset,
                message: e.to_string(),
            })?;
            if buf.is_empty() {
                return Err(self.truncated(start, what));
            }
            if let Some(pos) = buf.iter().position(|&b| b == b'\n') {
                out.extend_from_slice(&buf[..pos]);
                self.inner.consume(pos + 1);
                self.offset += pos as u64 + 1;
                return Ok(out);
            }
            let n = buf.len();
            out.extend_from_slice(buf);
            self.inner.consume(n);
            self.offset += n as u64;
        }
    }
}
