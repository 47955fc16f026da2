//! The allow-lists: which whole sequences reach the user's terminal, by [`Profile`]. What a
//! terminal only draws passes (text attributes, cursor movement, erasing, scrolling, titles,
//! links); what makes it act outside the screen (the clipboard, files, other programs, the
//! window) or answer as if typed is dropped. `Output` (pipes, `session exec`, checks' logs) has
//! no queries at all: nothing reads the answers but the user's shell. `Interactive` (the
//! agent's own pseudo-terminal, relayed) adds the modes and the fixed-form queries a TUI makes
//! (device attributes, cursor position, mode and version reports, the keyboard protocol),
//! whose answers come back to the agent as its input and hold nothing it chose; never one
//! that echoes what the command chose (the title report, DECRQSS, XTGETTCAP) nor a colour
//! query.

/// Who reads what passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The agent's own terminal, relayed to the user's: a TUI's modes and fixed-form queries
    /// pass, the answers reaching the agent as its input.
    Interactive,
    /// Output read later or by something else (a pipe, a file, a log, a tail shown once).
    Output,
}

/// Cairn's own OSC number: a request ([`super::Filter::take_requests`]).
pub(super) const OSC_REQUEST: u32 = 5379;
/// The largest numeric parameter passed (`CSI 999999999 b` repeats a character that often).
const MAX_PARAM: u32 = 65_535;

/// DEC private modes (`CSI ? N h/l`) every profile passes: reverse video, autowrap, the
/// cursor's blink and visibility, the alternate screen, synchronized output.
const DEC_MODES: &[u32] = &[5, 7, 12, 25, 47, 1047, 1048, 1049, 2026];
/// And those an interactive agent's terminal passes too: cursor keys, origin, autorepeat,
/// margins, mouse and focus reports, keys' encodings, bracketed paste, graphemes, colour
/// scheme and size notifications. Never VT52 (`?2`), 132 columns (`?3`) or Tektronix (`?38`).
const DEC_MODES_INTERACTIVE: &[u32] = &[1, 6, 8, 9, 45, 66, 67, 69, 1000, 1002, 1003, 1004, 1005, 1006, 1007, 1015, 1016, 1034, 1035, 1036, 1037, 1039, 1042, 2004, 2027, 2031, 2048];

/// `ESC` + intermediates + final, outside CSI and strings.
pub(super) fn esc(inter: &[u8], fin: u8) -> bool {
    match inter {
        // Save and restore the cursor, keypad modes, index, next line, tab set, reverse index, reset.
        [] => b"78=>DEHMc".contains(&fin),
        // Character sets.
        [b'(' | b')' | b'*' | b'+' | b'-' | b'.' | b'/'] => true,
        // Double-height and -width lines, the alignment test.
        [b'#'] => b"34568".contains(&fin),
        _ => false,
    }
}

/// A CSI's parts: `ESC [` (private marker) parameters (intermediates) final.
pub(super) struct Csi<'a> {
    private: Option<u8>,
    params: Vec<u32>,
    raw: &'a [u8],
    inter: &'a [u8],
    fin: u8,
}

impl<'a> Csi<'a> {
    /// `body` is what came between `ESC [` and the final byte; `None` when it is malformed (a
    /// marker after the start, a parameter after an intermediate, a value too large).
    pub(super) fn parse(body: &'a [u8], fin: u8) -> Option<Csi<'a>> {
        let (private, rest) = match body.first() {
            Some(&m @ (b'<' | b'=' | b'>' | b'?')) => (Some(m), &body[1..]),
            _ => (None, body),
        };
        let split = rest.iter().position(|b| (0x20..0x30).contains(b)).unwrap_or(rest.len());
        let (raw, inter) = rest.split_at(split);
        if !raw.iter().all(|b| b.is_ascii_digit() || *b == b';' || *b == b':') || !inter.iter().all(|b| (0x20..0x30).contains(b)) {
            return None;
        }
        let mut params = Vec::new();
        for p in raw.split(|b| *b == b';') {
            let head = p.split(|b| *b == b':').next().unwrap_or_default();
            let v = if head.is_empty() { 0 } else { std::str::from_utf8(head).ok()?.parse::<u32>().ok().filter(|v| *v <= MAX_PARAM)? };
            params.push(v);
        }
        if raw.split(|b| *b == b';').flat_map(|p| p.split(|b| *b == b':')).any(|s| s.len() > 5) {
            return None;
        }
        Some(Csi { private, params, raw, inter, fin })
    }

    fn first(&self) -> u32 {
        self.params.first().copied().unwrap_or(0)
    }
}

/// Does this CSI pass?
pub(super) fn csi(c: &Csi, profile: Profile) -> bool {
    let tty = profile == Profile::Interactive;
    let modes = |list: &[u32]| !c.raw.is_empty() && c.params.iter().all(|m| DEC_MODES.contains(m) || list.contains(m));
    match (c.private, c.inter, c.fin) {
        // Cursor movement, erasing, inserting and deleting, scrolling, tabs, attributes (SGR),
        // margins, saving and restoring the cursor.
        (None, [], b'@'..=b'M' | b'P' | b'S' | b'T' | b'X' | b'Z' | b'`' | b'a' | b'b' | b'd' | b'e' | b'f' | b'g' | b'm' | b'r' | b's' | b'u') => true,
        // Insert and newline modes (never the keyboard lock, 2, nor local echo, 12).
        (None, [], b'h' | b'l') => c.params.iter().all(|m| matches!(m, 4 | 20)),
        (Some(b'?'), [], b'h' | b'l') => modes(if tty { DEC_MODES_INTERACTIVE } else { &[] }),
        // Selective erase; the cursor's shape; a soft reset; the title stack (vim's).
        (Some(b'?'), [], b'J' | b'K') | (None, [b' '], b'q') | (None, [b'!'], b'p') => true,
        (None, [], b't') => matches!(c.first(), 22 | 23),
        _ if !tty => false,
        // Fixed-form queries: device attributes (primary, secondary), status and cursor
        // position, mode reports, the terminal's version, the keyboard protocol's flags and
        // the colour scheme.
        (None | Some(b'>'), [], b'c') | (Some(b'>'), [], b'q') => c.first() == 0,
        (None, [], b'n') => c.params == [5] || c.params == [6],
        (Some(b'?'), [], b'n') => c.params == [6] || c.params == [996],
        (None | Some(b'?'), [b'$'], b'p') | (Some(b'?'), [], b'u') => true,
        // The keyboard protocol pushed, popped, set; xterm's key modifiers; private modes
        // saved and restored.
        (Some(b'>' | b'<' | b'='), [], b'u') | (Some(b'>'), [], b'm') | (Some(b'?'), [], b'r' | b's') => true,
        _ => false,
    }
}

/// Does this whole OSC (its payload: number, `;`, the rest) pass?
pub(super) fn osc(payload: &[u8], profile: Profile) -> bool {
    let tty = profile == Profile::Interactive;
    let Some((n, rest)) = osc_number(payload) else { return false };
    // A colour query answers as typed input: `4;1;?`, `11;?`.
    let query = || rest.split(|b| *b == b';').any(|f| f == b"?");
    match n {
        // Titles, links.
        0 | 1 | 2 | 8 => true,
        _ if !tty => false,
        // The working directory, prompt marks; colours set and reset.
        7 | 133 | 104 | 110 | 111 | 112 => true,
        4 | 10 | 11 | 12 => !query(),
        // Notifications (iTerm2's text, or progress: never ConEmu's other numbered actions).
        9 => rest.starts_with(b"4;") || !rest.split(|b| *b == b';').next().is_some_and(|f| !f.is_empty() && f.iter().all(u8::is_ascii_digit)),
        777 => rest.starts_with(b"notify;"),
        _ => false,
    }
}

/// An OSC's number (read as an integer: `052` is 52) and what follows its `;`.
pub(super) fn osc_number(payload: &[u8]) -> Option<(u32, &[u8])> {
    let (num, rest) = match payload.iter().position(|b| *b == b';') {
        Some(i) => (&payload[..i], &payload[i + 1..]),
        None => (payload, &payload[payload.len()..]),
    };
    if num.is_empty() || num.len() > 8 || !num.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some((std::str::from_utf8(num).ok()?.parse().ok()?, rest))
}

/// Does this whole DCS pass? Only synchronized updates' begin and end, to a TUI's terminal
/// (never tmux's passthrough, DECRQSS, XTGETTCAP, sixel or kitty's commands).
pub(super) fn dcs(payload: &[u8], profile: Profile) -> bool {
    profile == Profile::Interactive && matches!(payload, b"=1s" | b"=2s")
}
