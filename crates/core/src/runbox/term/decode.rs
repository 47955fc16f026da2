//! Bytes read as a terminal reads them: UTF-8 characters, C0 controls, and C1 controls in
//! either form (a raw byte 0x80-0x9F, or U+0080-U+009F encoded): a terminal may act on
//! both. Whatever is not UTF-8 (a lone byte, an overlong or cut sequence) is one `Bad`, which
//! a UTF-8 terminal shows as U+FFFD; none of its bytes is ever passed on raw.

/// One unit of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok {
    /// 0x00-0x7F.
    Ascii(u8),
    /// A character from U+00A0 up, as its UTF-8 bytes (`len` of them).
    Char([u8; 4], u8),
    /// A C1 control, 0x80-0x9F.
    C1(u8),
    /// Not UTF-8.
    Bad,
}

/// U+FFFD, what a UTF-8 terminal shows for bytes that are not UTF-8.
pub(super) const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

/// The decoder's state: a character begun and the continuation bytes it still needs.
#[derive(Default)]
pub(super) struct Decoder {
    buf: [u8; 4],
    len: u8,
    need: u8,
    /// The range the next continuation byte must fall in (narrower after some lead bytes:
    /// no overlong forms, no surrogates, nothing past U+10FFFF).
    lo: u8,
    hi: u8,
}

impl Decoder {
    /// Feeds one byte: up to two units (a cut sequence, then what this byte is).
    pub(super) fn feed(&mut self, b: u8) -> [Option<Tok>; 2] {
        if self.need == 0 {
            return [self.start(b), None];
        }
        if !(self.lo..=self.hi).contains(&b) {
            self.need = 0;
            return [Some(Tok::Bad), self.start(b)];
        }
        self.buf[self.len as usize] = b;
        self.len += 1;
        self.need -= 1;
        (self.lo, self.hi) = (0x80, 0xbf);
        if self.need > 0 {
            return [None, None];
        }
        let len = std::mem::take(&mut self.len);
        if len == 2 && self.buf[0] == 0xc2 && self.buf[1] < 0xa0 {
            return [Some(Tok::C1(self.buf[1])), None];
        }
        [Some(Tok::Char(self.buf, len)), None]
    }

    fn start(&mut self, b: u8) -> Option<Tok> {
        let (need, lo, hi) = match b {
            0x00..=0x7f => return Some(Tok::Ascii(b)),
            0x80..=0x9f => return Some(Tok::C1(b)),
            0xc2..=0xdf => (1, 0x80, 0xbf),
            0xe0 => (2, 0xa0, 0xbf),
            0xe1..=0xec | 0xee | 0xef => (2, 0x80, 0xbf),
            0xed => (2, 0x80, 0x9f),
            0xf0 => (3, 0x90, 0xbf),
            0xf1..=0xf3 => (3, 0x80, 0xbf),
            0xf4 => (3, 0x80, 0x8f),
            _ => return Some(Tok::Bad),
        };
        (self.buf[0], self.len, self.need, self.lo, self.hi) = (b, 1, need, lo, hi);
        None
    }

    /// No character begun.
    pub(super) fn idle(&self) -> bool {
        self.need == 0
    }

    /// The end of the stream: a character still open is cut.
    pub(super) fn end(&mut self) -> Option<Tok> {
        (std::mem::take(&mut self.need) > 0).then_some(Tok::Bad)
    }
}
