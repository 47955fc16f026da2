//! OSC sequences in the command's output that the relay ([`super::pty`]) does not pass to
//! the user's terminal: OSC 52 (a program's way to set the user's clipboard) is dropped;
//! Cairn's own, `ESC ] 5379 ; PAYLOAD` (ended by BEL or `ESC \`), is taken out as a
//! *request* (a preview's Neovim asking for `:CairnAccept`, see `workspace.rs`). A request
//! is only a question: whoever takes it must confirm with the user on a channel the command
//! cannot reach before acting. Everything else passes as is; sequences may span reads.

/// The sequences, and what becomes of them.
const DROP: &[u8] = b"\x1b]52;";
const REQUEST: &[u8] = b"\x1b]5379;";
/// A longer request is dropped whole.
const MAX_REQUEST: usize = 4096;

#[derive(Default, PartialEq, Eq, Clone, Copy)]
enum Inside {
    #[default]
    No,
    Dropped,
    Request,
}

/// The filter of one output stream.
#[derive(Default)]
pub struct OscFilter {
    /// Bytes of a possible start seen so far.
    pending: Vec<u8>,
    inside: Inside,
    /// The last byte was ESC (a `\` ends the sequence).
    esc: bool,
    payload: Vec<u8>,
    too_long: bool,
}

impl OscFilter {
    /// Passes `input` on to `out`, dropped sequences left out and requests pushed on `asked`.
    pub fn pass(&mut self, input: &[u8], out: &mut Vec<u8>, asked: &mut Vec<Vec<u8>>) {
        for &b in input {
            if self.inside != Inside::No {
                self.inside_byte(b, asked);
                continue;
            }
            if !self.pending.is_empty() || b == 0x1b {
                self.pending.push(b);
                if DROP.starts_with(&self.pending) || REQUEST.starts_with(&self.pending) {
                    if self.pending == DROP || self.pending == REQUEST {
                        self.inside = if self.pending == DROP { Inside::Dropped } else { Inside::Request };
                        self.pending.clear();
                        self.payload.clear();
                        self.esc = false;
                        self.too_long = false;
                    }
                    continue;
                }
                let held = std::mem::take(&mut self.pending);
                // The last byte may begin a sequence of its own.
                let (keep, last) = held.split_at(held.len() - 1);
                out.extend_from_slice(keep);
                if last[0] == 0x1b {
                    self.pending.push(0x1b);
                } else {
                    out.push(last[0]);
                }
                continue;
            }
            out.push(b);
        }
    }

    fn inside_byte(&mut self, b: u8, asked: &mut Vec<Vec<u8>>) {
        let end = b == 0x07 || (self.esc && b == b'\\');
        self.esc = b == 0x1b;
        if end {
            if self.inside == Inside::Request && !self.too_long {
                // The ESC of an `ESC \` ending was kept: drop it.
                if self.payload.last() == Some(&0x1b) {
                    self.payload.pop();
                }
                asked.push(std::mem::take(&mut self.payload));
            }
            self.inside = Inside::No;
            return;
        }
        if self.inside == Inside::Request {
            if self.payload.len() >= MAX_REQUEST {
                self.too_long = true;
            } else {
                self.payload.push(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OscFilter;

    #[test]
    fn clipboard_writes_are_dropped_requests_taken_out_in_any_split_and_the_rest_passes() {
        let input = b"a\x1b[31mred\x1b]0;title\x07\x1b]52;c;SU5KRUNU\x07b\x1b]52;p;eA==\x1b\\c\x1b\x1b]52;c;x\x07d\x1b]5379;{\"action\":\"accept\"}\x07e\x1b]5379;two\x1b\\f";
        let want = b"a\x1b[31mred\x1b]0;title\x07bc\x1bdef".to_vec();
        for split in 1..input.len() {
            let (mut f, mut out, mut asked) = (OscFilter::default(), Vec::new(), Vec::new());
            for chunk in input.chunks(split) {
                f.pass(chunk, &mut out, &mut asked);
            }
            assert_eq!(out, want, "split every {split}");
            assert_eq!(asked, vec![b"{\"action\":\"accept\"}".to_vec(), b"two".to_vec()], "split every {split}");
        }
    }
}
