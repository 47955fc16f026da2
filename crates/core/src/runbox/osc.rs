//! The control strings in a confined command's output that the relay ([`super::pty`]) lets
//! reach the user's terminal: an allow-list, since a terminal acts on many of them (OSC 52
//! sets or reads the clipboard, OSC 1337 and kitty's DCS `@kitty-cmd` run things, tmux's DCS
//! passthrough reaches the terminal outside tmux, APC carries kitty's graphics and file
//! transfers). Passed: OSC 0/1/2 (titles), 4, 10-12, 104, 110-112 (colours), 7 (cwd), 8
//! (links), 9 and 777 (notifications), 133 (prompt marks), and the DCS queries TUIs make
//! (`+q`, `$q`) and synchronized updates (`=1s`, `=2s`). Dropped whole: every other OSC
//! (its number read as an integer: `052` is 52), DCS, APC, PM and SOS. Cairn's own
//! `ESC ] 5379 ; PAYLOAD` is taken out as a *request* (a preview's Neovim asking for
//! `:CairnAccept`, see `workspace.rs`): only a question, which whoever takes it must confirm
//! with the user on a channel the command cannot reach. Sequences may span reads.

/// OSC numbers passed to the terminal.
const OSC_PASSED: &[u32] = &[0, 1, 2, 4, 7, 8, 9, 10, 11, 12, 104, 110, 111, 112, 133, 777];
/// Cairn's request.
const OSC_REQUEST: u32 = 5379;
/// DCS payload starts passed to the terminal.
const DCS_PASSED: &[&[u8]] = &[b"+q", b"$q", b"=1s", b"=2s"];
/// A longer request is dropped whole; a longer head (the part that decides) is dropped too.
const MAX_REQUEST: usize = 4096;
const MAX_HEAD: usize = 16;

#[derive(Default, PartialEq, Eq, Clone, Copy, Debug)]
enum State {
    #[default]
    Text,
    /// After ESC.
    Esc,
    /// An OSC or DCS whose head (number, or first bytes) decides its fate.
    Head { dcs: bool },
    /// Passed on, to its end.
    Passing,
    /// Dropped, to its end.
    Dropping,
    /// Cairn's request, collected.
    Request,
}

/// The filter of one output stream.
#[derive(Default)]
pub struct OscFilter {
    state: State,
    /// The bytes held while the head decides (ESC and the introducer included).
    held: Vec<u8>,
    /// The last byte inside a string was ESC (a `\` ends it).
    esc: bool,
    /// The string is an OSC, which BEL ends too (DCS, APC, PM and SOS end at ST only).
    osc: bool,
    payload: Vec<u8>,
    too_long: bool,
}

impl OscFilter {
    /// Passes `input` on to `out`, dropped strings left out and requests pushed on `asked`.
    pub fn pass(&mut self, input: &[u8], out: &mut Vec<u8>, asked: &mut Vec<Vec<u8>>) {
        for &b in input {
            match self.state {
                State::Text if b == 0x1b => self.state = State::Esc,
                State::Text => out.push(b),
                State::Esc => self.after_esc(b, out),
                State::Head { dcs } => self.head_byte(b, dcs, out),
                State::Passing | State::Dropping | State::Request => self.string_byte(b, out, asked),
            }
        }
    }

    fn after_esc(&mut self, b: u8, out: &mut Vec<u8>) {
        self.held.clear();
        self.payload.clear();
        self.esc = false;
        self.too_long = false;
        self.osc = b == b']';
        self.state = match b {
            b']' => State::Head { dcs: false },
            b'P' => State::Head { dcs: true },
            b'_' | b'^' | b'X' => State::Dropping,
            // A second ESC: the first stands alone, the second may begin a string.
            0x1b => {
                out.push(0x1b);
                return;
            }
            _ => {
                out.extend_from_slice(&[0x1b, b]);
                State::Text
            }
        };
        self.held.extend_from_slice(&[0x1b, b]);
    }

    fn head_byte(&mut self, b: u8, dcs: bool, out: &mut Vec<u8>) {
        self.held.push(b);
        let head = &self.held[2..];
        let ends = b == 0x07 || b == 0x1b;
        if dcs {
            if DCS_PASSED.iter().any(|p| head.starts_with(p)) {
                self.pass_held(out, State::Passing);
            } else if ends || head.len() >= MAX_HEAD || !DCS_PASSED.iter().any(|p| p.starts_with(head)) {
                self.drop_held(b);
            }
            return;
        }
        if b.is_ascii_digit() && head.len() < MAX_HEAD {
            return;
        }
        let number = std::str::from_utf8(&head[..head.len() - 1]).ok().and_then(|d| d.parse::<u32>().ok());
        match number {
            Some(OSC_REQUEST) if b == b';' => self.state = State::Request,
            Some(n) if OSC_PASSED.contains(&n) && (b == b';' || b == 0x07) => {
                let state = if b == 0x07 { State::Text } else { State::Passing };
                self.pass_held(out, state);
            }
            _ => self.drop_held(b),
        }
    }

    fn pass_held(&mut self, out: &mut Vec<u8>, next: State) {
        out.append(&mut self.held);
        self.state = next;
    }

    /// Drops what was held; `b` (the last byte) may already end the string.
    fn drop_held(&mut self, b: u8) {
        self.held.clear();
        self.state = if b == 0x07 && self.osc { State::Text } else { State::Dropping };
        self.esc = b == 0x1b;
    }

    fn string_byte(&mut self, b: u8, out: &mut Vec<u8>, asked: &mut Vec<Vec<u8>>) {
        let end = (b == 0x07 && self.osc) || (self.esc && b == b'\\');
        self.esc = b == 0x1b;
        match self.state {
            State::Passing => out.push(b),
            State::Request if !end => {
                if self.payload.len() >= MAX_REQUEST {
                    self.too_long = true;
                } else {
                    self.payload.push(b);
                }
            }
            _ => {}
        }
        if end {
            if self.state == State::Request && !self.too_long {
                // The ESC of an `ESC \` ending was kept: drop it.
                if self.payload.last() == Some(&0x1b) {
                    self.payload.pop();
                }
                asked.push(std::mem::take(&mut self.payload));
            }
            self.state = State::Text;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OscFilter;

    fn filtered(input: &[u8], split: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
        let (mut f, mut out, mut asked) = (OscFilter::default(), Vec::new(), Vec::new());
        for chunk in input.chunks(split) {
            f.pass(chunk, &mut out, &mut asked);
        }
        (out, asked)
    }

    #[test]
    fn clipboard_writes_are_dropped_requests_taken_out_in_any_split_and_the_rest_passes() {
        let input = b"a\x1b[31mred\x1b]0;title\x07\x1b]52;c;SU5KRUNU\x07b\x1b]52;p;eA==\x1b\\c\x1b\x1b]52;c;x\x07d\x1b]5379;{\"action\":\"accept\"}\x07e\x1b]5379;two\x1b\\f";
        let want = b"a\x1b[31mred\x1b]0;title\x07bc\x1bdef".to_vec();
        for split in 1..input.len() {
            let (out, asked) = filtered(input, split);
            assert_eq!(out, want, "split every {split}");
            assert_eq!(asked, vec![b"{\"action\":\"accept\"}".to_vec(), b"two".to_vec()], "split every {split}");
        }
    }

    #[test]
    fn only_listed_strings_reach_the_terminal() {
        let input: &[u8] = b"1\x1b]052;c;?\x072\x1b]1337;File=x\x073\x1bP@kitty-cmd{\"cmd\":\"launch\"}\x1b\\4\x1bPtmux;\x1b\x1b]52;c;x\x07\x1b\\5\x1b_Gf=100;AAAA\x1b\\6\x1b]8;;http://x\x1b\\L\x1b]8;;\x1b\\7\x1bP+q544e\x1b\\8\x1b]2;t\x1b\\9\x1b]133;A\x07";
        let want: Vec<u8> = [
            &b"1234"[..],
            b"5",
            b"6\x1b]8;;http://x\x1b\\L\x1b]8;;\x1b\\",
            b"7\x1bP+q544e\x1b\\",
            b"8\x1b]2;t\x1b\\",
            b"9\x1b]133;A\x07",
        ]
        .concat();
        for split in 1..input.len() {
            let (out, asked) = filtered(input, split);
            assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&want), "split every {split}");
            assert!(asked.is_empty());
        }
    }
}
