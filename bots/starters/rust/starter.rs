//! Starter bot for every tablebots game (protocol v1, see protocol.md), in Rust with only std.
//!
//! Build:  rustc --edition 2021 -O -o starter starter.rs      (or `cargo build --release`: no dependencies)
//! Run:    harness check-bot crisps ./starter
//!
//! It answers hello with ready and every request with a random offered action (by index).
//! Write your strategy in `choose`. Debug output goes to stderr (eprintln!), never to stdout.
//! Rust's std has no JSON, so a small reader is below (`Json::parse`); a bot that may use crates
//! would take serde_json instead.

use std::io::{self, BufRead, Write};

/// A JSON value. Objects keep their keys in order.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn parse(text: &str) -> Result<Json, String> {
        let mut p = Parser { s: text.as_bytes(), i: 0 };
        let v = p.value()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("trailing text at byte {}", p.i));
        }
        Ok(v)
    }

    /// The member `key` of an object (Null if absent or not an object).
    fn get(&self, key: &str) -> &Json {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v).unwrap_or(&Json::Null),
            _ => &Json::Null,
        }
    }

    fn as_str(&self) -> &str {
        if let Json::Str(s) = self { s } else { "" }
    }

    fn as_array(&self) -> &[Json] {
        if let Json::Arr(a) = self { a } else { &[] }
    }

    /// Compact JSON text.
    fn dump(&self) -> String {
        match self {
            Json::Null => "null".into(),
            Json::Bool(b) => b.to_string(),
            Json::Num(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", *n as i64),
            Json::Num(n) => n.to_string(),
            Json::Str(s) => quote(s),
            Json::Arr(a) => format!("[{}]", a.iter().map(Json::dump).collect::<Vec<_>>().join(",")),
            Json::Obj(m) => format!(
                "{{{}}}",
                m.iter().map(|(k, v)| format!("{}:{}", quote(k), v.dump())).collect::<Vec<_>>().join(",")
            ),
        }
    }
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, word: &str) -> bool {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.ws();
        match self.s.get(self.i) {
            None => Err("unexpected end".into()),
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.eat("}") {
                    return Ok(Json::Obj(members));
                }
                loop {
                    self.ws();
                    let key = match self.value()? {
                        Json::Str(k) => k,
                        _ => return Err(format!("object key expected at byte {}", self.i)),
                    };
                    self.ws();
                    if !self.eat(":") {
                        return Err(format!("':' expected at byte {}", self.i));
                    }
                    members.push((key, self.value()?));
                    self.ws();
                    if self.eat("}") {
                        return Ok(Json::Obj(members));
                    }
                    if !self.eat(",") {
                        return Err(format!("',' or '}}' expected at byte {}", self.i));
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat("]") {
                    return Ok(Json::Arr(items));
                }
                loop {
                    items.push(self.value()?);
                    self.ws();
                    if self.eat("]") {
                        return Ok(Json::Arr(items));
                    }
                    if !self.eat(",") {
                        return Err(format!("',' or ']' expected at byte {}", self.i));
                    }
                }
            }
            Some(b'"') => self.string().map(Json::Str),
            Some(_) if self.eat("true") => Ok(Json::Bool(true)),
            Some(_) if self.eat("false") => Ok(Json::Bool(false)),
            Some(_) if self.eat("null") => Ok(Json::Null),
            Some(_) => {
                let start = self.i;
                while self.i < self.s.len() && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                text.parse().map(Json::Num).map_err(|_| format!("unexpected text at byte {}", start))
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1; // the opening quote
        let mut out: Vec<u8> = Vec::new();
        while let Some(&b) = self.s.get(self.i) {
            self.i += 1;
            match b {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'\\' => {
                    let esc = *self.s.get(self.i).ok_or("unexpected end")?;
                    self.i += 1;
                    let c = match esc {
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'u' => {
                            let hex = std::str::from_utf8(self.s.get(self.i..self.i + 4).ok_or("bad \\u")?)
                                .map_err(|e| e.to_string())?;
                            self.i += 4;
                            let mut code = u32::from_str_radix(hex, 16).map_err(|e| e.to_string())?;
                            if (0xD800..0xDC00).contains(&code) && self.eat("\\u") {
                                let low = std::str::from_utf8(self.s.get(self.i..self.i + 4).ok_or("bad \\u")?)
                                    .map_err(|e| e.to_string())?;
                                self.i += 4;
                                let low = u32::from_str_radix(low, 16).map_err(|e| e.to_string())?;
                                code = 0x10000 + ((code - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF);
                            }
                            char::from_u32(code).unwrap_or('\u{fffd}')
                        }
                        other => other as char, // \" \\ \/
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                _ => out.push(b),
            }
        }
        Err("unterminated string".into())
    }
}

/// A small seeded generator (xorshift64*), std having none.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 33) as usize % n
    }
}

/// Your strategy: the seat's observation and the offered actions; return the index of one of them.
fn choose(_observation: &Json, actions: &[Json], rng: &mut Rng) -> usize {
    // e.g. _observation.get("hand"), see docs/rules/<game>.md
    rng.below(actions.len())
}

/// One message, one line, flushed: an unflushed answer is a timeout.
fn send(out: &mut impl Write, msg: &str) {
    writeln!(out, "{}", msg).and_then(|_| out.flush()).expect("stdout closed");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seed = match args.iter().position(|a| a == "--seed") {
        Some(i) => args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(1),
        None => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1),
    };
    let mut rng = Rng(seed | 1);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for line in io::stdin().lock().lines() {
        let line = line.expect("stdin");
        if line.trim().is_empty() {
            continue;
        }
        let msg = Json::parse(&line).unwrap_or_else(|e| panic!("unreadable line from the referee: {e}"));
        match msg.get("type").as_str() {
            "hello" => {
                eprintln!("playing {} in seat {}", msg.get("game").as_str(), msg.get("seat").dump());
                send(&mut out, r#"{"type":"ready","name":"rust-starter"}"#);
            }
            "request" => {
                let actions = msg.get("actions").as_array();
                let index = choose(msg.get("observation"), actions, &mut rng);
                eprintln!("request {}: {}", msg.get("id").dump(), actions[index].dump());
                send(&mut out, &format!(r#"{{"type":"action","id":{},"index":{}}}"#, msg.get("id").dump(), index));
            }
            "bye" => break,
            _ => {} // start and result need no answer
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Json;

    #[test]
    fn reads_and_writes_json() {
        let v = Json::parse(r#"{"a":[1,-2.5,true,null],"s":"x\"\u00e9\ud83d\ude00"}"#).unwrap();
        assert_eq!(v.get("s").as_str(), "x\"é😀");
        assert_eq!(v.get("a").dump(), "[1,-2.5,true,null]");
        assert!(Json::parse("{\"a\":}").is_err());
    }
}
