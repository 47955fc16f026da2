//! What the user types into a wrapped agent's terminal, read back as lines: the relay's keys
//! (raw bytes, as the user's terminal sends them) replayed on a minimal line editor, so that the
//! first line the user submits can name the session (`crate::wrap::name`). Pure: bytes in,
//! lines out.
//!
//! Kept: printable text (UTF-8), a bracketed paste's text (its line breaks as spaces).
//! Acted on: Backspace and DEL (one character back), Ctrl-U and Ctrl-C (the line is gone),
//! Ctrl-W (one word back), Enter (CR or LF: the line is submitted). Left out: escape sequences
//! (cursor keys, function keys, focus and mouse reports) and every other control. A TUI's own
//! editing (cursor moves inside the line, history) is not replayed: the line is what was typed.

/// The longest line kept (what is typed beyond it is dropped).
const MAX_LINE: usize = 4096;

/// Where the editor is in an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Esc {
    #[default]
    None,
    /// After ESC.
    Start,
    /// Inside `ESC [ ...` until its final byte; the parameters so far (a paste's start or end).
    Csi,
    /// `ESC O x`, `ESC ] ... BEL/ST` and the like: the next byte (or up to a terminator) ends it.
    Ss3,
    Osc,
}

/// A line editor fed the user's keys.
#[derive(Debug, Default)]
pub struct Lines {
    line: Vec<u8>,
    esc: Esc,
    params: Vec<u8>,
    /// Inside a bracketed paste (`ESC [ 200 ~` ... `ESC [ 201 ~`).
    paste: bool,
}

impl Lines {
    /// Feeds `keys`; returns the lines submitted in them (trimmed, possibly empty).
    pub fn feed(&mut self, keys: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in keys {
            match self.esc {
                Esc::Start => {
                    self.esc = match b {
                        b'[' => Esc::Csi,
                        b']' | b'P' | b'_' | b'^' => Esc::Osc,
                        b'O' => Esc::Ss3,
                        _ => Esc::None,
                    };
                    self.params.clear();
                    continue;
                }
                Esc::Csi => {
                    if (0x40..=0x7e).contains(&b) {
                        self.esc = Esc::None;
                        if b == b'~' {
                            match self.params.as_slice() {
                                b"200" => self.paste = true,
                                b"201" => self.paste = false,
                                _ => {}
                            }
                        }
                    } else if self.params.len() < 16 {
                        self.params.push(b);
                    }
                    continue;
                }
                Esc::Ss3 => {
                    self.esc = Esc::None;
                    continue;
                }
                Esc::Osc => {
                    if b == 0x07 || b == 0x1b {
                        self.esc = if b == 0x1b { Esc::Start } else { Esc::None };
                    }
                    continue;
                }
                Esc::None => {}
            }
            match b {
                0x1b => self.esc = Esc::Start,
                b'\r' | b'\n' if self.paste => self.push(b' '),
                b'\r' | b'\n' => out.push(self.submit()),
                0x7f | 0x08 => self.back_char(),
                0x15 | 0x03 => self.line.clear(),
                0x17 => self.back_word(),
                b'\t' => self.push(b' '),
                b if b < 0x20 => {}
                b => self.push(b),
            }
        }
        out
    }

    fn push(&mut self, b: u8) {
        if self.line.len() < MAX_LINE {
            self.line.push(b);
        }
    }

    /// One character back (a UTF-8 sequence whole).
    fn back_char(&mut self) {
        while let Some(b) = self.line.pop() {
            if b & 0xc0 != 0x80 {
                break;
            }
        }
    }

    fn back_word(&mut self) {
        while self.line.last().is_some_and(|b| *b == b' ') {
            self.line.pop();
        }
        while self.line.last().is_some_and(|b| *b != b' ') {
            self.line.pop();
        }
    }

    fn submit(&mut self) -> String {
        let line = String::from_utf8_lossy(&std::mem::take(&mut self.line)).trim().to_string();
        self.paste = false;
        line
    }
}

#[cfg(test)]
mod tests {
    use super::Lines;

    fn lines(keys: &[&[u8]]) -> Vec<String> {
        let mut l = Lines::default();
        keys.iter().flat_map(|k| l.feed(k)).collect()
    }

    #[test]
    fn typed_lines_as_a_terminal_sends_them() {
        let cases: &[(&[&[u8]], &[&str])] = &[
            (&[b"fix the tests\r"], &["fix the tests"]),
            // Split across reads, and the next line after it.
            (&[b"fix t", b"he tests\r", b"and more\r"], &["fix the tests", "and more"]),
            // Backspace, DEL, a UTF-8 character taken back whole.
            (&[b"fixx\x7f the t\x08tests\r"], &["fix the tests"]),
            (&[b"caf\xc3\xa9\x7fe\r"], &["cafe"]),
            // Ctrl-U and Ctrl-C drop the line; Ctrl-W a word.
            (&[b"wrong\x15right one\x17two\r"], &["right two"]),
            (&[b"abandoned\x03kept\r"], &["kept"]),
            // Cursor keys, a focus report and an OSC answer are no text.
            (&[b"\x1b[Aup\x1bOB\x1b[I\x1b]11;rgb:0000/0000/0000\x07 arrow\r"], &["up arrow"]),
            // A bracketed paste: its line breaks are spaces, its Enter is not a submit.
            (&[b"\x1b[200~one\rtwo\x1b[201~ three\r"], &["one two three"]),
            // An empty Enter (a confirmation) is an empty line.
            (&[b"\r  \r"], &["", ""]),
        ];
        for (keys, want) in cases {
            assert_eq!(lines(keys), want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{keys:?}");
        }
    }

    #[test]
    fn a_line_is_bounded() {
        let long = vec![b'a'; 10_000];
        let got = lines(&[&long, b"\r"]);
        assert_eq!(got[0].len(), super::MAX_LINE);
    }
}
