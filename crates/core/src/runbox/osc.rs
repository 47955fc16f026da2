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
//!
//! A string ends where a terminal ends it: at BEL (an OSC) or ST, and also at an ESC that
//! begins anything else (the new sequence is then filtered on its own: `ESC ]0;t ESC ]52;…`
//! passes the title and drops the rest) or at CAN and SUB. The 8-bit introducers (raw, or
//! UTF-8-encoded as U+0090, U+0098, U+009D-U+009F) are read as their `ESC` forms.

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
    /// In text: a 0xC2 held (it may encode an 8-bit introducer)...
    lead_c2: bool,
    /// ...and how many UTF-8 continuation bytes the last lead byte still expects.
    cont: u8,
}

/// The `ESC` form of an 8-bit string introducer: DCS, SOS, OSC, PM, APC.
fn c1_introducer(b: u8) -> Option<u8> {
    match b {
        0x90 => Some(b'P'),
        0x98 => Some(b'X'),
        0x9d => Some(b']'),
        0x9e => Some(b'^'),
        0x9f => Some(b'_'),
        _ => None,
    }
}

/// One byte read as UTF-8 (see [`OscFilter::utf8`]).
enum Utf8 {
    /// A 0xC2, held.
    Held,
    One(u8),
    /// The held 0xC2 and this byte: one character.
    Pair(u8),
    /// An 8-bit control (C1): raw, or encoded as U+0080 to U+009F.
    Control(u8),
}

/// CAN and SUB: a terminal abandons the string it is in.
fn aborts(b: u8) -> bool {
    b == 0x18 || b == 0x1a
}

impl OscFilter {
    /// Passes `input` on to `out`, dropped strings left out and requests pushed on `asked`.
    pub fn pass(&mut self, input: &[u8], out: &mut Vec<u8>, asked: &mut Vec<Vec<u8>>) {
        for &b in input {
            match self.state {
                State::Text => self.text_byte(b, out),
                State::Esc => self.after_esc(b, out),
                State::Head { dcs } => self.head_byte(b, dcs, out),
                State::Passing | State::Dropping | State::Request => self.string_byte(b, out, asked),
            }
        }
    }

    /// Reads `b` as UTF-8, telling text from 8-bit controls (a terminal may act on either
    /// form). A 0xC2 is held until the next byte says which it begins; one that begins
    /// nothing is invalid, and dropped.
    fn utf8(&mut self, b: u8) -> Utf8 {
        let continuation = (0x80..0xc0).contains(&b);
        if std::mem::take(&mut self.lead_c2) && continuation {
            return if b < 0xa0 { Utf8::Control(b) } else { Utf8::Pair(b) };
        }
        if continuation {
            if self.cont > 0 {
                self.cont -= 1;
                return Utf8::One(b);
            }
            return if b < 0xa0 { Utf8::Control(b) } else { Utf8::One(b) };
        }
        self.cont = match b {
            0xc2 => {
                self.lead_c2 = true;
                return Utf8::Held;
            }
            0xc0..=0xdf => 1,
            0xe0..=0xef => 2,
            0xf0..=0xf7 => 3,
            _ => 0,
        };
        Utf8::One(b)
    }

    fn text_byte(&mut self, b: u8, out: &mut Vec<u8>) {
        match self.utf8(b) {
            Utf8::Held => {}
            Utf8::One(0x1b) => self.state = State::Esc,
            Utf8::One(b) => out.push(b),
            Utf8::Pair(b) => out.extend_from_slice(&[0xc2, b]),
            // An 8-bit introducer is read as its ESC form; other 8-bit controls are dropped.
            Utf8::Control(c) => {
                if let Some(intro) = c1_introducer(c) {
                    self.after_esc(intro, out);
                }
            }
        }
    }

    fn after_esc(&mut self, b: u8, out: &mut Vec<u8>) {
        match b {
            // A terminal runs a C0 control met here and stays in the escape, and ignores DEL
            // and 8-bit bytes: what follows may still begin a string. Dropped.
            0x00..=0x17 | 0x19 | 0x1c..=0x1f | 0x7f..=0xff => return self.state = State::Esc,
            // CAN and SUB abandon the escape.
            0x18 | 0x1a => return self.state = State::Text,
            _ => {}
        }
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
                State::Esc
            }
            // ST with no string open ends nothing.
            b'\\' => State::Text,
            _ => {
                out.extend_from_slice(&[0x1b, b]);
                State::Text
            }
        };
        if self.state != State::Text && self.state != State::Esc {
            self.held.extend_from_slice(&[0x1b, b]);
        }
    }

    fn head_byte(&mut self, b: u8, dcs: bool, out: &mut Vec<u8>) {
        if aborts(b) {
            self.held.clear();
            self.state = State::Text;
            return;
        }
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
        if std::mem::take(&mut self.esc) {
            // ST ends the string; an ESC before anything else ends it too, and begins anew.
            self.finish(out, asked, b == b'\\');
            match b {
                b'\\' => {}
                // This ESC ended the string; the next one begins a sequence.
                0x1b => self.state = State::Esc,
                _ => self.after_esc(b, out),
            }
            return;
        }
        match b {
            0x1b => return self.esc = true,
            0x07 if self.osc => {
                if self.state == State::Passing {
                    out.push(0x07);
                    self.state = State::Text;
                    return;
                }
                return self.finish(out, asked, true);
            }
            _ if aborts(b) => return self.finish(out, asked, false),
            _ => {}
        }
        let bytes = match self.utf8(b) {
            Utf8::Held => return,
            Utf8::One(b) => vec![b],
            Utf8::Pair(b) => vec![0xc2, b],
            // 8-bit ST ends the string, an 8-bit introducer begins another, as ESC forms do.
            Utf8::Control(0x9c) => return self.finish(out, asked, true),
            Utf8::Control(c) => {
                if let Some(intro) = c1_introducer(c) {
                    self.finish(out, asked, false);
                    self.after_esc(intro, out);
                }
                return;
            }
        };
        match self.state {
            State::Passing => out.extend_from_slice(&bytes),
            State::Request if self.payload.len() + bytes.len() > MAX_REQUEST => self.too_long = true,
            State::Request => self.payload.extend_from_slice(&bytes),
            _ => {}
        }
    }

    /// Ends the string: a passed one with ST (however it ended), a request taken only when
    /// `whole` (ended by its terminator, not cut short).
    fn finish(&mut self, out: &mut Vec<u8>, asked: &mut Vec<Vec<u8>>, whole: bool) {
        match self.state {
            State::Passing => out.extend_from_slice(b"\x1b\\"),
            State::Request if whole && !self.too_long => asked.push(std::mem::take(&mut self.payload)),
            _ => {}
        }
        self.state = State::Text;
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
        passes_only(input, &want);
    }

    /// A terminal keeps an escape open across C0 controls, DEL and 8-bit bytes.
    #[test]
    fn an_escape_stays_open_across_controls() {
        let input: &[u8] = b"A\x1b\x01]52;c;eA==\x07B\x1b\x7f]52;c;eA==\x07C\x1b\x80]52;c;eA==\x07D\x1b\n]52;c;eA==\x07E\x1b\x01Ptmux;\x1b\x1b\x01]52;c;x\x07\x1b\\F\x1b\x18]52;c;eA==\x07G\x1b\x01[31mH";
        passes_only(input, b"ABCDEF]52;c;eA==\x07G\x1b[31mH");
    }

    /// A terminal ends a string at an ESC that begins anything but ST, and at CAN or SUB;
    /// 8-bit introducers (raw or UTF-8-encoded) begin strings as their ESC forms do.
    #[test]
    fn strings_end_where_a_terminal_ends_them() {
        let input: &[u8] = b"1\x1b]0;t\x1b]52;c;eA==\x072\x1b]2;t\x18\x1b]52;c;eA==\x073\x1b]52;c;x\x1b]0;u\x074\x1b]5379;{}\x1b]0;v\x075\xc2\x9d52;c;eA==\x076\x9d52;c;eA==\x077\x1b]0;w\x9c\x9d52;c;x\x078\x1bPtmux;\x18\x1b]52;c;x\x079 caf\xc3\xa9 \xc5\x9d \xc2\xa9\x1b]0;\xc5\x9d\x07";
        let want: Vec<u8> = [
            &b"1\x1b]0;t\x1b\\"[..],
            b"2\x1b]2;t\x1b\\",
            b"3\x1b]0;u\x07",
            b"4\x1b]0;v\x07",
            b"5",
            b"6",
            b"7\x1b]0;w\x1b\\",
            b"8",
            b"9 caf\xc3\xa9 \xc5\x9d \xc2\xa9\x1b]0;\xc5\x9d\x07",
        ]
        .concat();
        passes_only(input, &want);
    }

    /// `input`, cut anywhere, gives `want` and asks nothing (a request cut short is none).
    fn passes_only(input: &[u8], want: &[u8]) {
        for split in 1..input.len() {
            let (out, asked) = filtered(input, split);
            assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(want), "split every {split}");
            assert!(asked.is_empty());
        }
    }
}
