//! What a confined command prints, on its way to the user: one filter for every path (the
//! wrap relay with a terminal and without one, a preview, `cairn session exec`, `run_command`,
//! checks' logs, the CPython child's stderr). A terminal acts on much of what it reads: OSC 52
//! sets or reads the clipboard, OSC 1337 and kitty's DCS `@kitty-cmd` run things, tmux's DCS
//! passthrough reaches the terminal outside tmux, and queries (the title report `CSI 21 t`,
//! DECRQSS, XTGETTCAP, colour queries, device attributes, `ENQ`) are answered as if the user
//! typed the answer, which the user's shell reads once the command is gone. So the filter is
//! an allow-list ([`rules`]): text, the C0 controls that move the cursor, and whole
//! sequences a terminal only draws; everything else is left out whole.
//!
//! The stream is read as a terminal reads it ([`decode`]): C1 controls (raw or UTF-8-encoded)
//! as their `ESC` forms; a string (OSC, DCS, APC, PM, SOS) ends at BEL (an OSC), ST, an ESC,
//! CAN, SUB or any C1 control; C0 controls inside an escape or a CSI are dropped and the
//! sequence goes on; sequences may span reads. What passes is re-made whole: only complete
//! sequences, held until their end (a string up to [`MAX_STRING`] bytes), with nothing but
//! printable text inside, ended by Cairn: so no reading of the stream, however a terminal
//! differs, finds a sequence in what passed that the filter did not pass. Text that is not
//! UTF-8 becomes U+FFFD. Cairn's own `ESC ] 5379 ; PAYLOAD` is taken out as a *request* (a
//! preview's Neovim asking for `:CairnAccept`, see `workspace.rs`), only on the agent's own
//! terminal: a question, which whoever takes it confirms with the user on a channel the
//! command cannot reach.

mod decode;
mod rules;

pub use rules::Profile;
use decode::{Decoder, Tok, REPLACEMENT};

/// The longest string (OSC payload) held: a longer one is dropped whole.
pub const MAX_STRING: usize = 4096;
/// The longest CSI or escape held: a longer one is dropped whole.
const MAX_CSI: usize = 64;
/// Requests held until taken: more are dropped, not queued.
const MAX_REQUESTS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Str {
    Osc,
    Dcs,
    /// APC, PM, SOS: never passed.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Ground,
    /// After ESC, intermediates held.
    Esc,
    /// After `ESC [`, parameters and intermediates held.
    Csi,
    /// Inside a string, its payload held.
    Str(Str),
    /// Inside a string, after ESC: `\` makes ST; anything else cuts the string short.
    StrEsc(Str),
}

/// An ASCII byte that passes as it is outside any sequence: printable, or one of the C0
/// controls that move the cursor or ring the bell, and the character set shifts.
fn plain(b: u8) -> bool {
    matches!(b, 0x07..=0x0f | 0x20..=0x7e)
}

/// The filter of one output stream.
pub struct Filter {
    profile: Profile,
    decoder: Decoder,
    state: State,
    held: Vec<u8>,
    /// What is held grew past its bound: the sequence is dropped at its end.
    too_long: bool,
    requests: Vec<Vec<u8>>,
}

/// `input`, whole, filtered.
pub fn filtered(input: &[u8], profile: Profile) -> Vec<u8> {
    let mut f = Filter::new(profile);
    let mut out = Vec::with_capacity(input.len());
    f.pass(input, &mut out);
    f.end(&mut out);
    out
}

impl Filter {
    pub fn new(profile: Profile) -> Filter {
        Filter { profile, decoder: Decoder::default(), state: State::Ground, held: Vec::new(), too_long: false, requests: Vec::new() }
    }

    /// Passes `input` on to `out`; what may span reads is held for the next call.
    pub fn pass(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut rest = input;
        while let Some((&b, after)) = rest.split_first() {
            // Outside any sequence and character, a run of plain text goes out whole: what
            // `ground` passes byte by byte, without the decoding (most output is that).
            if self.state == State::Ground && self.decoder.idle() {
                let run = rest.iter().position(|&b| !plain(b)).unwrap_or(rest.len());
                if run > 0 {
                    out.extend_from_slice(&rest[..run]);
                    rest = &rest[run..];
                    continue;
                }
            }
            for t in self.decoder.feed(b).into_iter().flatten() {
                self.token(t, out);
            }
            rest = after;
        }
    }

    /// The end of the stream: a character cut short shows as U+FFFD; an unfinished sequence
    /// is dropped.
    pub fn end(&mut self, out: &mut Vec<u8>) {
        if let Some(t) = self.decoder.end() {
            self.token(t, out);
        }
        self.state = State::Ground;
        self.held.clear();
    }

    /// The requests made with Cairn's OSC sequence since the last call (the agent's own
    /// terminal only).
    pub fn take_requests(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.requests)
    }

    fn token(&mut self, t: Tok, out: &mut Vec<u8>) {
        // A C1 control is its ESC form, wherever it comes.
        if let Tok::C1(c) = t {
            self.token(Tok::Ascii(0x1b), out);
            return self.token(Tok::Ascii(c - 0x40), out);
        }
        match self.state {
            State::Ground => self.ground(t, out),
            State::Esc => self.escape(t, out),
            State::Csi => self.csi(t, out),
            State::Str(kind) => self.string(kind, t, out),
            State::StrEsc(kind) => {
                let st = t == Tok::Ascii(b'\\');
                self.finish(kind, st.then_some(b"\x1b\\"), out);
                if !st {
                    self.begin(State::Esc);
                    self.escape(t, out);
                }
            }
        }
    }

    /// Outside any sequence: text passes; of the C0 controls, those that move the cursor or
    /// ring the bell, and the character set shifts (never `ENQ`, which a terminal answers).
    fn ground(&mut self, t: Tok, out: &mut Vec<u8>) {
        match t {
            Tok::Ascii(0x1b) => self.begin(State::Esc),
            Tok::Ascii(b) if plain(b) => out.push(b),
            Tok::Char(bytes, len) => out.extend_from_slice(&bytes[..len as usize]),
            Tok::Bad => out.extend_from_slice(REPLACEMENT),
            _ => {}
        }
    }

    fn begin(&mut self, state: State) {
        self.state = state;
        self.held.clear();
        self.too_long = false;
    }

    fn hold(&mut self, bytes: &[u8], max: usize) {
        if self.held.len() + bytes.len() > max {
            self.too_long = true;
        } else if !self.too_long {
            self.held.extend_from_slice(bytes);
        }
    }

    fn escape(&mut self, t: Tok, out: &mut Vec<u8>) {
        let Tok::Ascii(b) = t else { return };
        match b {
            0x1b => self.begin(State::Esc),
            0x18 | 0x1a => self.state = State::Ground,
            0x20..=0x2f => self.hold(&[b], MAX_CSI),
            0x30..=0x7e if self.held.is_empty() => match b {
                b'[' => self.begin(State::Csi),
                b']' => self.begin(State::Str(Str::Osc)),
                b'P' => self.begin(State::Str(Str::Dcs)),
                b'X' | b'^' | b'_' => self.begin(State::Str(Str::Other)),
                _ => self.dispatch_esc(b, out),
            },
            0x30..=0x7e => self.dispatch_esc(b, out),
            // Other C0 controls (a terminal runs them and stays in the escape), DEL: dropped.
            _ => {}
        }
    }

    fn dispatch_esc(&mut self, fin: u8, out: &mut Vec<u8>) {
        if !self.too_long && rules::esc(&self.held, fin) {
            out.push(0x1b);
            out.extend_from_slice(&self.held);
            out.push(fin);
        }
        self.begin(State::Ground);
    }

    fn csi(&mut self, t: Tok, out: &mut Vec<u8>) {
        let Tok::Ascii(b) = t else { return };
        match b {
            0x1b => self.begin(State::Esc),
            0x18 | 0x1a => self.begin(State::Ground),
            0x20..=0x3f => self.hold(&[b], MAX_CSI),
            0x40..=0x7e => {
                let pass = !self.too_long && rules::Csi::parse(&self.held, b).is_some_and(|c| rules::csi(&c, self.profile));
                if pass {
                    out.extend_from_slice(b"\x1b[");
                    out.extend_from_slice(&self.held);
                    out.push(b);
                }
                self.begin(State::Ground);
            }
            // C0 controls inside (run by a terminal, the CSI going on) and DEL: dropped.
            _ => {}
        }
    }

    fn string(&mut self, kind: Str, t: Tok, out: &mut Vec<u8>) {
        let max = if kind == Str::Other { 0 } else { MAX_STRING };
        match t {
            Tok::Ascii(0x07) if kind == Str::Osc => self.finish(kind, Some(b"\x07"), out),
            Tok::Ascii(0x1b) => self.state = State::StrEsc(kind),
            // CAN and SUB abandon it.
            Tok::Ascii(0x18 | 0x1a) => self.finish(kind, None, out),
            Tok::Ascii(b @ 0x20..=0x7e) => self.hold(&[b], max),
            Tok::Char(bytes, len) => self.hold(&bytes[..len as usize], max),
            Tok::Bad => self.hold(REPLACEMENT, max),
            // Other C0 controls, DEL: a terminal ignores them inside a string.
            _ => {}
        }
    }

    /// The string has ended: by its terminator (`end`: BEL or ST), or cut short by an ESC
    /// that begins something else, CAN, SUB or another C1 control. A terminal acts on it
    /// either way: it passes when its rules allow it, ended by the same terminator, else by
    /// ST. A request is taken only when whole.
    fn finish(&mut self, kind: Str, end: Option<&[u8]>, out: &mut Vec<u8>) {
        self.state = State::Ground;
        if self.too_long {
            return;
        }
        let payload = &self.held;
        let pass = match kind {
            Str::Osc if rules::osc_number(payload).is_some_and(|(n, _)| n == rules::OSC_REQUEST) => {
                if end.is_some() && self.profile == Profile::Interactive && self.requests.len() < MAX_REQUESTS {
                    let asked = rules::osc_number(payload).map(|(_, rest)| rest.to_vec()).unwrap_or_default();
                    self.requests.push(asked);
                }
                false
            }
            Str::Osc => rules::osc(payload, self.profile),
            Str::Dcs => rules::dcs(payload, self.profile),
            Str::Other => false,
        };
        if pass {
            out.extend_from_slice(if kind == Str::Osc { b"\x1b]" } else { b"\x1bP" });
            out.extend_from_slice(payload);
            out.extend_from_slice(end.unwrap_or(b"\x1b\\"));
        }
    }
}

#[cfg(test)]
mod tests;
