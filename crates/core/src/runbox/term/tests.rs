use super::{filtered, Filter, Profile, MAX_STRING};

/// `input` through a filter of `profile`, cut every `split` bytes.
fn run(profile: Profile, input: &[u8], split: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let (mut f, mut out) = (Filter::new(profile), Vec::new());
    for chunk in input.chunks(split) {
        f.pass(chunk, &mut out);
    }
    f.end(&mut out);
    (out, f.take_requests())
}

/// `input` gives `want` under `profile` however it is cut, and asks nothing.
fn check(name: &str, profile: Profile, input: &[u8], want: &[u8]) {
    for split in 1..=input.len().max(1) {
        let (out, asked) = run(profile, input, split);
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(want), "{name} ({profile:?}), cut every {split}");
        assert!(asked.is_empty(), "{name}: asked {asked:?}");
    }
}

/// Each class an attacker used (issue 48), and its neighbours: (name, input, what reaches an
/// interactive agent's terminal, what reaches anything else).
const CLASSES: &[(&str, &[u8], &[u8], &[u8])] = &[
    ("clipboard write", b"a\x1b]52;c;SU5KRUNU\x07b", b"ab", b"ab"),
    ("clipboard read", b"a\x1b]52;c;?\x1b\\b", b"ab", b"ab"),
    ("clipboard, number padded", b"a\x1b]052;c;eA==\x07b", b"ab", b"ab"),
    ("iTerm2 file", b"a\x1b]1337;File=name=eA==:AAAA\x07b", b"ab", b"ab"),
    ("tmux passthrough", b"a\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\b", b"ab", b"ab"),
    ("kitty remote control", b"a\x1bP@kitty-cmd{\"cmd\":\"launch\"}\x1b\\b", b"ab", b"ab"),
    ("kitty graphics (APC)", b"a\x1b_Gf=100;AAAA\x1b\\b", b"ab", b"ab"),
    ("PM and SOS", b"a\x1b^x\x1b\\\x1bXy\x1b\\b", b"ab", b"ab"),
    ("title report", b"a\x1b[21tb\x1b[20t", b"ab", b"ab"),
    ("window operations", b"a\x1b[1t\x1b[3;0;0t\x1b[8;1;1t\x1b[14t\x1b[18t\x1b[11tb", b"ab", b"ab"),
    ("title stack", b"\x1b[22;0t\x1b[23;0t", b"\x1b[22;0t\x1b[23;0t", b"\x1b[22;0t\x1b[23;0t"),
    ("DECRQSS", b"a\x1bP$qm\x1b\\\x1bP$q\"p\x1b\\b", b"ab", b"ab"),
    ("XTGETTCAP", b"a\x1bP+q544e\x1b\\b", b"ab", b"ab"),
    ("colour queries", b"a\x1b]4;1;?\x07\x1b]10;?\x07\x1b]11;?\x1b\\\x1b]12;?\x07\x1b]4;1;rgb:0/0/0;2;?\x07b", b"ab", b"ab"),
    ("colours set", b"\x1b]11;rgb:0/0/0\x07\x1b]112\x07", b"\x1b]11;rgb:0/0/0\x07\x1b]112\x07", b""),
    ("device attributes", b"a\x1b[c\x1b[0c\x1b[>c\x1b[=cb", b"a\x1b[c\x1b[0c\x1b[>cb", b"ab"),
    ("status reports", b"a\x1b[5n\x1b[6n\x1b[?6n\x1b[?15nb", b"a\x1b[5n\x1b[6n\x1b[?6nb", b"ab"),
    ("mode, version, keyboard reports", b"\x1b[?2026$p\x1b[>0q\x1b[?u", b"\x1b[?2026$p\x1b[>0q\x1b[?u", b""),
    ("screen checksum, parameters, printing", b"a\x1b[1;1;1;1;1;1*y\x1b[x\x1b[i\x1b[1$wb", b"ab", b"ab"),
    ("ENQ (answerback)", b"a\x05b", b"ab", b"ab"),
    ("DECID", b"a\x1bZb\x9a", b"ab", b"ab"),
    ("8-bit OSC, raw and UTF-8", b"a\x9d52;c;eA==\x07\xc2\x9d52;c;eA==\x07b", b"ab", b"ab"),
    ("8-bit CSI and DCS", b"a\x9b21t\xc2\x9b21t\x90+q544e\x9cb\x9b31m", b"ab\x1b[31m", b"ab\x1b[31m"),
    ("cut UTF-8 hides no C1", b"a\xe0\x9b21tb\xf0\x90\x9b6n", "a\u{fffd}b\u{fffd}6n".as_bytes(), "a\u{fffd}b\u{fffd}6n".as_bytes()),
    ("clipboard behind a title, cut by ESC", b"1\x1b]0;t\x1b]52;c;eA==\x072", b"1\x1b]0;t\x1b\\2", b"1\x1b]0;t\x1b\\2"),
    ("clipboard behind a title, cut by CAN", b"1\x1b]2;t\x18\x1b]52;c;eA==\x072", b"1\x1b]2;t\x1b\\2", b"1\x1b]2;t\x1b\\2"),
    ("clipboard behind a title, cut by C1", b"1\x1b]0;w\x9c\x9d52;c;x\x072", b"1\x1b]0;w\x1b\\2", b"1\x1b]0;w\x1b\\2"),
    ("an escape stays open across controls", b"A\x1b\x01]52;c;eA==\x07B\x1b\x7f]52;c;eA==\x07C\x1b\n]52;c;eA==\x07D", b"ABCD", b"ABCD"),
    ("a CSI stays open across controls", b"A\x1b[2\n1tB\x1b[3\x01m", b"AB\x1b[3m", b"AB\x1b[3m"),
    ("CAN abandons an escape", b"F\x1b\x18]52;c;eA==\x07G", b"F]52;c;eA==\x07G", b"F]52;c;eA==\x07G"),
    ("controls inside a title", b"\x1b]0;a\nb\x05c\x07", b"\x1b]0;abc\x07", b"\x1b]0;abc\x07"),
    ("text, colours, cursor, erase, links", b"caf\xc3\xa9 \x1b[38;2;1;2;3m\x1b[4:3m\x1b[2J\x1b[H\x1b[10;5H\x1b[K\x1b]8;;http://x\x1b\\L\x1b]8;;\x1b\\\t\r\n", b"caf\xc3\xa9 \x1b[38;2;1;2;3m\x1b[4:3m\x1b[2J\x1b[H\x1b[10;5H\x1b[K\x1b]8;;http://x\x1b\\L\x1b]8;;\x1b\\\t\r\n", b"caf\xc3\xa9 \x1b[38;2;1;2;3m\x1b[4:3m\x1b[2J\x1b[H\x1b[10;5H\x1b[K\x1b]8;;http://x\x1b\\L\x1b]8;;\x1b\\\t\r\n"),
    ("the alternate screen, the cursor", b"\x1b[?1049h\x1b[?25l\x1b[?2026h", b"\x1b[?1049h\x1b[?25l\x1b[?2026h", b"\x1b[?1049h\x1b[?25l\x1b[?2026h"),
    ("mouse, focus, paste, keys", b"\x1b[?1000;1006h\x1b[?1004h\x1b[?2004h\x1b[>1u\x1b[<u\x1b[>4;2m", b"\x1b[?1000;1006h\x1b[?1004h\x1b[?2004h\x1b[>1u\x1b[<u\x1b[>4;2m", b""),
    ("VT52, Tektronix, keyboard lock, local echo", b"a\x1b[?2l\x1b[?38h\x1b[?1049;38h\x1b[2h\x1b[12lb", b"ab", b"ab"),
    ("character sets, line sizes, never ISO 2022", b"\x1b(0q\x1b(B\x1b#8\x1b%@\x1b%G\x1b c\x1bc", b"\x1b(0q\x1b(B\x1b#8\x1bc", b"\x1b(0q\x1b(B\x1b#8\x1bc"),
    ("huge repeat", b"x\x1b[999999999b\x1b[3b", b"x\x1b[3b", b"x\x1b[3b"),
    ("notifications", b"\x1b]9;done\x07\x1b]9;4;1;50\x07\x1b]9;6;macro\x07\x1b]9;7;cmd\x07\x1b]777;notify;t;b\x07\x1b]777;x\x07", b"\x1b]9;done\x07\x1b]9;4;1;50\x07\x1b]777;notify;t;b\x07", b""),
    ("synchronized updates", b"\x1bP=1s\x1b\\x\x1bP=2s\x1b\\", b"\x1bP=1s\x1b\\x\x1bP=2s\x1b\\", b"x"),
    ("not UTF-8", b"a\xff\xc0\xafb\xed\xa0\x80", "a\u{fffd}\u{fffd}\u{fffd}b\u{fffd}\u{fffd}".as_bytes(), "a\u{fffd}\u{fffd}\u{fffd}b\u{fffd}\u{fffd}".as_bytes()),
    ("an unfinished sequence", b"a\x1b]0;title", b"a", b"a"),
];

#[test]
fn every_class_is_held_and_what_draws_passes_however_it_is_cut() {
    for (name, input, interactive, output) in CLASSES {
        check(name, Profile::Interactive, input, interactive);
        check(name, Profile::Output, input, output);
    }
}

#[test]
fn requests_are_taken_out_whole_on_the_agents_terminal_only() {
    let input = b"a\x1b]5379;{\"action\":\"accept\"}\x07b\x1b]5379;two\x1b\\c\x1b]5379;cut\x1b]0;v\x07d\x9d5379;three\x9c";
    for split in 1..input.len() {
        let (out, asked) = run(Profile::Interactive, input, split);
        assert_eq!(String::from_utf8_lossy(&out), "abc\x1b]0;v\x07d", "cut every {split}");
        assert_eq!(asked, [&b"{\"action\":\"accept\"}"[..], b"two", b"three"], "cut every {split}");
    }
    let (out, asked) = run(Profile::Output, input, input.len());
    assert_eq!((out, asked), (b"abc\x1b]0;v\x07d".to_vec(), vec![]));
}

#[test]
fn long_strings_are_dropped_whole() {
    let title = |n: usize| [&b"\x1b]0;"[..], &vec![b'x'; n], b"\x07."].concat();
    assert_eq!(filtered(&title(MAX_STRING - 2), Profile::Output), title(MAX_STRING - 2));
    assert_eq!(filtered(&title(MAX_STRING + 1), Profile::Output), b".");
    let csi = [&b"\x1b["[..], &vec![b'1'; 100], b"m."].concat();
    assert_eq!(filtered(&csi, Profile::Output), b".");
}

/// Whatever comes in, what passes is UTF-8 without C1 controls and passes again unchanged:
/// every sequence in it is one the filter made whole (random bytes, weighted to controls).
#[test]
fn what_passes_is_whole_and_passes_again_unchanged() {
    const PIECES: &[&[u8]] = &[b"\x1b", b"[", b"]", b"P", b"\\", b"\x07", b"\x18", b"\x9b", b"\x9c", b"\x9d", b"\xc2", b"\x90", b";", b"?", b"5", b"2", b"1", b"t", b"m", b"c", b"$q", b"+q", b"0;", b"\xe2\x82\xac", b"x", b"\n"];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..3000 {
        let mut input = Vec::new();
        for _ in 0..40 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let byte = [(seed >> 8) as u8];
            input.extend_from_slice(if seed % 5 == 0 { &byte } else { PIECES[(seed >> 16) as usize % PIECES.len()] });
        }
        for profile in [Profile::Interactive, Profile::Output] {
            let out = filtered(&input, profile);
            let text = std::str::from_utf8(&out).unwrap_or_else(|e| panic!("{input:?} gave {out:?}: {e}"));
            assert!(!text.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c)), "{input:?} gave {out:?}");
            assert_eq!(filtered(&out, profile), out, "{input:?}");
        }
    }
}
