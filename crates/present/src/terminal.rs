//! Text for a terminal: names irqlens prints come from the machine or from a recording
//! (threads name themselves, cgroups are named by whoever makes them), and one named with
//! terminal escapes must not rewrite the screen (move the cursor over a FAIL line, clear
//! it, retitle the window). A line break or tab in a name still breaks its line: the
//! tables are made of them (check's own texts show those as `?` too).

use std::fmt;
use std::io::{self, Write};

/// Whether `byte` is a control character a terminal acts on (C0 and DEL), other than the
/// line breaks and tabs the tables are made of.
fn acts_on_terminal(byte: u8) -> bool {
    (byte < 0x20 && byte != b'\n' && byte != b'\t') || byte == 0x7f
}

/// A writer that shows every such control character as `?`: what the driver writes text
/// through (JSON escapes them itself, HTML shows them as nothing).
pub struct Printable<W: Write>(pub W);

impl<W: Write> Write for Printable<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // C1 is two bytes in UTF-8 (0xC2 0x80..0x9F): found within one write, which is
        // how the tables are written (a line or a cell at a time)
        let c1 = |pair: &[u8]| pair[0] == 0xc2 && (0x80..=0x9f).contains(&pair[1]);
        if !buf.iter().copied().any(acts_on_terminal) && !buf.windows(2).any(c1) {
            return self.0.write(buf);
        }
        let mut clean = Vec::with_capacity(buf.len());
        let mut bytes = buf.iter().copied().peekable();
        while let Some(byte) = bytes.next() {
            match (byte, bytes.peek()) {
                (0xc2, Some(&next)) if (0x80..=0x9f).contains(&next) => {
                    bytes.next();
                    clean.push(b'?');
                }
                (byte, _) if acts_on_terminal(byte) => clean.push(b'?'),
                (byte, _) => clean.push(byte),
            }
        }
        self.0.write_all(&clean)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// `text` as [`Printable`] writes it, for a line on stderr.
pub fn printable(text: impl fmt::Display) -> String {
    let mut out = Printable(Vec::new());
    // writing to memory cannot fail, and what comes out is UTF-8: a control character
    // (one byte, or C1's two) becomes `?`, the rest is copied
    let _ = write!(out, "{text}");
    String::from_utf8_lossy(&out.0).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_and_lines_and_tabs_kept() {
        let mut out = Printable(Vec::new());
        write!(out, "a\x1b[2J\tb\nc\x07\x7fd\r").unwrap();
        assert_eq!(String::from_utf8(out.0).unwrap(), "a?[2J\tb\nc??d?");
        let mut out = Printable(Vec::new());
        write!(out, "µs ✓").unwrap();
        assert_eq!(String::from_utf8(out.0).unwrap(), "µs ✓");
        assert_eq!(printable("kworker\x1b]0;x\x07"), "kworker?]0;x?");
        // C1: U+009B is CSI to some terminals; U+00A0 and beyond are text
        let mut out = Printable(Vec::new());
        write!(out, "a\u{9b}2Jb\u{a0}µ").unwrap();
        assert_eq!(String::from_utf8(out.0).unwrap(), "a?2Jb\u{a0}µ");
        assert_eq!(printable("a\u{9b}2J"), "a?2J");
    }
}
