//! The stdio framing in front of the SDK's transport: one JSON-RPC message
//! per line. A line the SDK would drop without a word (longer than
//! [`MAX_LINE`], not UTF-8, not JSON, or nested past serde_json's depth
//! limit) gets a JSON-RPC error reply here, with a null id (the request's
//! id cannot be read from it); every other line goes to the server as it
//! came. One writer owns stdout, so replies never split a server line.

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// The longest line read (bytes, newline excluded); longer ones are
/// skipped to their end and answered with an error.
pub(crate) const MAX_LINE: usize = 8 << 20;

/// JSON-RPC's "Parse error" and "Invalid Request" codes.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;

/// Start the framing tasks between `input`/`output` (stdin, stdout) and
/// the server's ends; returns the server's reader and writer, and the task
/// that ends once everything the server wrote is written out.
pub(crate) fn frame<R, W>(
    input: R,
    output: W,
) -> (DuplexStream, DuplexStream, tokio::task::JoinHandle<()>)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (server_in, feed) = tokio::io::duplex(1 << 16);
    let (server_out, from_server) = tokio::io::duplex(1 << 16);
    let (send, mut lines) = unbounded_channel::<Vec<u8>>();
    let replies = send.clone();
    tokio::spawn(read_requests(BufReader::new(input), feed, replies));
    tokio::spawn(forward(BufReader::new(from_server), send));
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = lines.recv().await {
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                return;
            }
        }
    });
    (server_in, server_out, writer)
}

/// Each line of `input` to `feed` when it is a JSON value, else an error
/// reply to the writer.
async fn read_requests<R: AsyncBufRead + Unpin>(
    mut input: R,
    mut feed: DuplexStream,
    replies: UnboundedSender<Vec<u8>>,
) {
    let mut line = Vec::new();
    while let Ok(Some(whole)) = next_line(&mut input, &mut line).await {
        let problem = if whole {
            problem(&line)
        } else {
            Some((
                INVALID_REQUEST,
                format!("Invalid Request: a line longer than {} MiB", MAX_LINE >> 20),
            ))
        };
        match problem {
            Some((code, message)) => {
                let reply = serde_json::json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": code, "message": message}});
                if replies.send(format!("{reply}\n").into_bytes()).is_err() {
                    return;
                }
            }
            None if line.iter().all(u8::is_ascii_whitespace) => {}
            None => {
                if feed.write_all(&line).await.is_err() || feed.write_all(b"\n").await.is_err() {
                    return;
                }
            }
        }
    }
}

/// What the server wrote, line by line, to the writer.
async fn forward(mut from_server: BufReader<DuplexStream>, send: UnboundedSender<Vec<u8>>) {
    loop {
        let mut line = Vec::new();
        match from_server.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if send.send(line).is_err() {
                    return;
                }
            }
        }
    }
}

/// The next line into `line` (without its newline): `Some(true)`, or
/// `Some(false)` when it was longer than [`MAX_LINE`] (then skipped to its
/// end and `line` left empty); `None` at the end of input.
async fn next_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut whole = true;
    let mut any = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(any.then_some(whole));
        }
        any = true;
        let end = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..end.unwrap_or(buf.len())];
        if whole && line.len() + chunk.len() <= MAX_LINE {
            line.extend_from_slice(chunk);
        } else {
            whole = false;
            line.clear();
        }
        let used = end.map_or(buf.len(), |i| i + 1);
        input.consume(used);
        if end.is_some() {
            return Ok(Some(whole));
        }
    }
}

/// Why the server could not read `line`, if it could not: not UTF-8, or
/// not JSON (nesting past serde_json's limit included).
fn problem(line: &[u8]) -> Option<(i32, String)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Ok(text) = std::str::from_utf8(line) else {
        return Some((PARSE_ERROR, "Parse error: the line is not UTF-8".into()));
    };
    if text.trim().is_empty() {
        return None;
    }
    serde_json::from_str::<Skip>(text)
        .err()
        .map(|e| (PARSE_ERROR, format!("Parse error: {e}")))
}

/// Any JSON value, read and dropped through `deserialize_any`, so that
/// serde_json's nesting limit applies (its `IgnoredAny` skips nesting
/// without one) and nothing is kept.
struct Skip;

impl<'de> serde::Deserialize<'de> for Skip {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(Skip)
    }
}

impl<'de> serde::de::Visitor<'de> for Skip {
    type Value = Skip;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<serde::de::IgnoredAny, Skip>()?.is_some() {}
        Ok(Skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_are_named_and_good_ones_pass() {
        assert_eq!(
            problem(br#"{"jsonrpc":"2.0","method":"ping","id":1}"#),
            None
        );
        assert!(problem(b"\xff\xfe{}").unwrap().1.contains("not UTF-8"));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let (code, why) = problem(deep.as_bytes()).unwrap();
        assert_eq!(code, PARSE_ERROR);
        assert!(why.contains("recursion limit"), "{why}");
        assert!(problem(b"{\"a\":").is_some());
        let fine = format!("{{\"a\":{}1{}}}", "[".repeat(100), "]".repeat(100));
        assert_eq!(problem(fine.as_bytes()), None);
    }
}
