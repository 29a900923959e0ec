//! Text for a terminal: names irqlens prints come from the machine or from a recording
//! (threads name themselves, cgroups are named by whoever makes them), and one named with
//! terminal escapes must not rewrite the screen (erase a FAIL line, fake a table).

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
        if !buf.iter().copied().any(acts_on_terminal) {
            return self.0.write(buf);
        }
        let clean: Vec<u8> = buf
            .iter()
            .map(|&byte| if acts_on_terminal(byte) { b'?' } else { byte })
            .collect();
        self.0.write_all(&clean)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// `text` as [`Printable`] writes it, for a line on stderr.
pub fn printable(text: impl fmt::Display) -> String {
    text.to_string()
        .chars()
        .map(|c| match u8::try_from(c) {
            Ok(byte) if acts_on_terminal(byte) => '?',
            _ => c,
        })
        .collect()
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
    }
}
