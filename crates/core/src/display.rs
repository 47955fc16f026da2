//! Agent-controlled text made safe for a human's terminal or editor: control characters
//! (C0 but `\n` and `\t`, DEL, C1), bidirectional formatting and invisible (zero-width,
//! format) characters become visible escapes (`\x1b`, `\u{202e}`), so an agent cannot hide a line, rewrite the screen or set
//! the clipboard (OSC 52) through a summary, a path, an error or file content.

use std::borrow::Cow;

/// Is `c` shown as an escape? Controls, and characters that print as nothing or move text
/// around: bidirectional marks and overrides, zero-width and other format characters, line
/// and paragraph separators, fillers, variation selectors, tags (so `x\u{200b}.txt` never
/// reads as `x.txt`).
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c as u32, 0xAD | 0x34F | 0x61C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF9..=0xFFFB | 0x1D173..=0x1D17A | 0xE0000..=0xE0FFF)
}

/// `text` with every hidden character escaped (unchanged text is borrowed).
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !hidden(c) => out.push(c),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Bytes that may not be UTF-8 (a file or a name an agent made), as text that hides none of
/// them: what decodes is kept, each byte that does not becomes `\xNN`, and a backslash in such
/// bytes becomes `\\` (so `\xff` written as text never reads as the byte). Text that decodes
/// whole is returned as it is. Control characters are left to [`escape`].
pub fn escape_bytes(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => Cow::Owned(bytes_escaped(bytes)),
    }
}

/// [`escape_bytes`]'s escaping whether or not `bytes` decode (so that two versions of a file,
/// one of them not UTF-8, are shown alike).
pub fn bytes_escaped(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 16);
    for chunk in bytes.utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// One line for a one-line field (a summary, a task): newlines escaped too.
pub fn escape_line(text: &str) -> String {
    escape(text).replace('\n', "\\n")
}

/// One line for tmux to show (a prompt, a message): escaped as [`escape_line`], each `#` and
/// `%` doubled, since tmux expands formats there (`#(cmd)` would run `cmd`) and then the
/// time (`%H`).
pub fn tmux_literal(text: &str) -> String {
    escape_line(text).replace('#', "##").replace('%', "%%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(escape("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(escape("\u{1b}[2K\u{1b}]52;c;aGk=\u{7}"), "\\x1b[2K\\x1b]52;c;aGk=\\x07");
        assert_eq!(escape("a\0b\r\n"), "a\\0b\\r\n");
        assert_eq!(escape("x\u{202e}y\u{9b}"), "x\\u{202e}y\\u{9b}");
        assert_eq!(escape_line("a\nb"), "a\\nb");
        assert_eq!(escape("x\u{200b}.txt .git\u{2060}/config \u{feff}"), "x\\u{200b}.txt .git\\u{2060}/config \\u{feff}");
        assert_eq!(escape("caf\u{e9} \u{4e2d} \u{1f600}"), "caf\u{e9} \u{4e2d} \u{1f600}", "visible text is kept");
        assert_eq!(escape_bytes(b"plain \\x41"), "plain \\x41", "text stays as it is");
        assert_eq!(escape_bytes(b"a\xff\\xff\xc3"), "a\\xff\\\\xff\\xc3", "an undecodable byte never reads as text");
        assert_eq!(tmux_literal("#(id>x) #{pane_id} ##[fg=red] %H\n"), "##(id>x) ##{pane_id} ####[fg=red] %%H\\n");
    }
}
