//! Script files (`io`): Realm Crafter's `Script Files` folder, kept cluster-wide by the
//! gateway's script store so every node sees the same files and a restart keeps them.
//!
//! A file is fetched whole when it is opened (`ReadFile`, `OpenFile`, `AppendFile`: the
//! script waits for the store), read and written in memory, and stored back whole by
//! `CloseFile` (the script waits until it is stored, so a `FileType` right after sees it).
//! `FileType`, `FileSize`, `DeleteFile` and `CreateDir` ask the store too. Names are
//! confined to the store: see [`sandbox`].

use script::natives::Native;
use script::{RStr, RuntimeError, Value};
use shared::internal::{ScriptStoreOp, ScriptStoreResult};

use super::{Args, NResult, float, int, none, string};
use crate::sim::events::ZoneOutput;
use crate::sim::instances::{InstanceId, OpenFile, PendingIo, Wait};
use crate::sim::runtime::host::ZoneHost;
use crate::sim::script_table as table;
use crate::sim::state::ZoneState;

/// The largest script file (bytes).
pub const MAX_FILE: usize = 16 * 1024 * 1024;
/// Most files one instance may hold open.
pub const MAX_OPEN: usize = 64;

/// Confine a script's file name to the store: `\` and `/` separate folders, `.` parts are
/// dropped; absolute names, drive letters, `..`, control characters and `<>:"|?*` are
/// refused. Names are case-insensitive (as on Windows), so the result is lower case.
pub fn sandbox(name: &[u8]) -> Result<String, String> {
    if name.len() > 255 {
        return Err("file name longer than 255 bytes".into());
    }
    let text: String = name.iter().map(|&b| char::from(b)).collect();
    let text = text.trim();
    if text.is_empty() {
        return Err("empty file name".into());
    }
    if text.starts_with('/') || text.starts_with('\\') || text.get(1..2) == Some(":") {
        return Err(format!(
            "{text:?} is an absolute path: script files live in the script store"
        ));
    }
    let mut parts = Vec::new();
    for part in text.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => return Err(format!("{text:?} leaves the script files folder")),
            p if p.chars().any(|c| c < ' ' || "<>:\"|?*".contains(c)) => {
                return Err(format!("{text:?} has a character a file name cannot have"));
            }
            p => parts.push(p.to_ascii_lowercase()),
        }
    }
    if parts.is_empty() {
        return Err(format!("{text:?} names no file"));
    }
    Ok(parts.join("/"))
}

/// Send a request to the store; returns its id.
fn request(st: &mut ZoneState, op: ScriptStoreOp, waiter: Option<InstanceId>) -> u64 {
    // No waiter: request 0, no answer wanted.
    let req = match waiter {
        Some(id) => {
            let req = st.scripts.next_request;
            st.scripts.next_request += 1;
            st.scripts.requests.insert(req, id);
            req
        }
        None => 0,
    };
    st.outputs.push(ZoneOutput::ScriptStore { req, op });
    req
}

impl ZoneHost<'_> {
    /// Ask the store and suspend until it answers.
    fn ask(&mut self, op: ScriptStoreOp, pending: PendingIo) -> NResult {
        let req = request(self.st, op, Some(self.id));
        self.cx.pending_io = Some(pending);
        self.suspend(Wait::Store { req })
    }

    fn file(&mut self, h: i32) -> Option<&mut OpenFile> {
        self.cx.files.get_mut(&h)
    }

    fn new_handle(&mut self, f: OpenFile) -> Result<i32, RuntimeError> {
        if self.cx.files.len() >= MAX_OPEN {
            return Err(RuntimeError::Memory(format!(
                "more than {MAX_OPEN} files open"
            )));
        }
        let h = self.cx.next_file.max(1);
        self.cx.next_file = h.wrapping_add(1).max(1);
        self.cx.files.insert(h, f);
        Ok(h)
    }
}

fn named(h: &mut ZoneHost<'_>, a: Args<'_>, i: usize) -> Option<String> {
    match sandbox(a.rstr(i).as_bytes()) {
        Ok(n) => Some(n),
        Err(e) => {
            let script = h.cx.script.clone();
            table::log(h.st, &script, format!("file refused: {e}"));
            None
        }
    }
}

fn write_bytes(f: &mut OpenFile, bytes: &[u8]) -> Result<(), RuntimeError> {
    let end = f.pos.saturating_add(bytes.len());
    if end > MAX_FILE {
        return Err(RuntimeError::Memory(format!(
            "a script file may hold at most {MAX_FILE} bytes"
        )));
    }
    if f.data.len() < end {
        f.data.resize(end, 0);
    }
    if let Some(dst) = f.data.get_mut(f.pos..end) {
        dst.copy_from_slice(bytes);
    }
    f.pos = end;
    f.dirty = true;
    Ok(())
}

fn read_bytes(f: &mut OpenFile, n: usize) -> Vec<u8> {
    let end = f.pos.saturating_add(n).min(f.data.len());
    let out = f
        .data
        .get(f.pos..end)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    f.pos = end;
    out
}

fn le_int(b: &[u8]) -> i32 {
    let mut v = [0u8; 4];
    for (d, s) in v.iter_mut().zip(b) {
        *d = *s;
    }
    i32::from_le_bytes(v)
}

/// Run a file native.
pub fn call(h: &mut ZoneHost<'_>, n: Native, a: Args<'_>) -> NResult {
    match n {
        Native::ReadFile | Native::OpenFile | Native::AppendFile => {
            let Some(name) = named(h, a, 0) else {
                return int(0);
            };
            let append = n == Native::AppendFile;
            h.ask(
                ScriptStoreOp::ReadFile { name: name.clone() },
                PendingIo::Open { name, append },
            )
        }
        Native::WriteFile => {
            let Some(name) = named(h, a, 0) else {
                return int(0);
            };
            let handle = h.new_handle(OpenFile {
                name,
                data: Vec::new(),
                pos: 0,
                dirty: true,
            })?;
            int(handle)
        }
        Native::CloseFile => {
            let Some(f) = h.cx.files.remove(&a.int(0)) else {
                return none();
            };
            if f.dirty {
                h.ask(
                    ScriptStoreOp::WriteFile {
                        name: f.name,
                        data: f.data,
                    },
                    PendingIo::Done,
                )
            } else {
                none()
            }
        }
        Native::DeleteFile => {
            let Some(name) = named(h, a, 0) else {
                return none();
            };
            h.ask(ScriptStoreOp::DeleteFile { name }, PendingIo::Done)
        }
        Native::CreateDir => {
            let Some(name) = named(h, a, 0) else {
                return int(0);
            };
            h.ask(ScriptStoreOp::CreateDir { name }, PendingIo::Done)
        }
        Native::FileType | Native::FileSize => {
            let Some(name) = named(h, a, 0) else {
                return int(0);
            };
            let p = if n == Native::FileType {
                PendingIo::FileType
            } else {
                PendingIo::FileSize
            };
            h.ask(ScriptStoreOp::FileInfo { name }, p)
        }
        Native::CopyFile => {
            let (Some(from), Some(to)) = (named(h, a, 0), named(h, a, 1)) else {
                return none();
            };
            h.ask(
                ScriptStoreOp::ReadFile { name: from },
                PendingIo::CopyTo { to },
            )
        }
        Native::CloseDir => none(),
        Native::CurrentDir => string(RStr::EMPTY),
        Native::Eof => {
            let v = h.file(a.int(0)).is_none_or(|f| f.pos >= f.data.len());
            int(i32::from(v))
        }
        Native::FilePos => int(h
            .file(a.int(0))
            .map_or(0, |f| i32::try_from(f.pos).unwrap_or(i32::MAX))),
        Native::SeekFile => {
            let to = usize::try_from(a.int(1).max(0)).unwrap_or(0);
            let v = h.file(a.int(0)).map_or(0, |f| {
                f.pos = to.min(f.data.len());
                i32::try_from(f.pos).unwrap_or(i32::MAX)
            });
            int(v)
        }
        Native::ReadAvail => int(0),
        Native::ReadByte => int(h
            .file(a.int(0))
            .map_or(0, |f| read_bytes(f, 1).first().map_or(0, |&b| i32::from(b)))),
        Native::ReadShort => int(h.file(a.int(0)).map_or(0, |f| {
            let b = read_bytes(f, 2);
            i32::from(u16::from_le_bytes([
                b.first().copied().unwrap_or(0),
                b.get(1).copied().unwrap_or(0),
            ]))
        })),
        Native::ReadInt => int(h.file(a.int(0)).map_or(0, |f| le_int(&read_bytes(f, 4)))),
        Native::ReadFloat => float(
            h.file(a.int(0))
                .map_or(0.0, |f| f32::from_bits(le_int(&read_bytes(f, 4)) as u32)),
        ),
        Native::ReadString => {
            let v = h.file(a.int(0)).map_or_else(Vec::new, |f| {
                let n = le_int(&read_bytes(f, 4));
                read_bytes(f, usize::try_from(n.max(0)).unwrap_or(0))
            });
            string(RStr::from_vec(v))
        }
        Native::ReadLine => {
            let v = h.file(a.int(0)).map_or_else(Vec::new, |f| {
                let rest = f.data.get(f.pos..).unwrap_or(&[]);
                let (line_len, used) = match rest.iter().position(|&b| b == b'\n') {
                    Some(i) => (i, i + 1),
                    None => (rest.len(), rest.len()),
                };
                let line: Vec<u8> = rest
                    .get(..line_len)
                    .unwrap_or(&[])
                    .iter()
                    .copied()
                    .filter(|&b| b != b'\r')
                    .collect();
                f.pos += used;
                line
            });
            string(RStr::from_vec(v))
        }
        Native::WriteByte | Native::WriteShort | Native::WriteInt | Native::WriteFloat => {
            let v = a.int(1);
            let bytes: Vec<u8> = match n {
                Native::WriteByte => vec![v as u8],
                Native::WriteShort => (v as u16).to_le_bytes().to_vec(),
                Native::WriteInt => v.to_le_bytes().to_vec(),
                _ => a.float(1).to_le_bytes().to_vec(),
            };
            if let Some(f) = h.file(a.int(0)) {
                write_bytes(f, &bytes)?;
            }
            none()
        }
        Native::WriteString | Native::WriteLine => {
            let s = a.rstr(1);
            let mut bytes = Vec::with_capacity(s.len() + 4);
            if n == Native::WriteString {
                bytes.extend_from_slice(&i32::try_from(s.len()).unwrap_or(i32::MAX).to_le_bytes());
                bytes.extend_from_slice(s.as_bytes());
            } else {
                bytes.extend_from_slice(s.as_bytes());
                bytes.extend_from_slice(b"\r\n");
            }
            if let Some(f) = h.file(a.int(0)) {
                write_bytes(f, &bytes)?;
            }
            none()
        }
        _ => super::not_supported(n),
    }
}

/// The store answered the request an instance waits on.
pub fn answer(st: &mut ZoneState, id: InstanceId, result: ScriptStoreResult) {
    let pending = st
        .scripts
        .instances
        .get_mut(&id)
        .and_then(|i| i.cx.pending_io.take());
    let Some(pending) = pending else {
        table::wake(st, id, Value::Int(0));
        return;
    };
    if let ScriptStoreResult::Error(e) = &result {
        let script = st
            .scripts
            .instances
            .get(&id)
            .map(|i| i.cx.script.clone())
            .unwrap_or_default();
        table::log(st, &script, format!("script store: {e}"));
    }
    let value = match (pending, result) {
        (PendingIo::Walk, result) => {
            let handles = match result {
                ScriptStoreResult::Handles(mut v) => {
                    v.truncate(shared::internal::MAX_ZONE_ACTORS);
                    v
                }
                _ => Vec::new(),
            };
            let first = handles.first().copied().unwrap_or(0);
            if let Some(inst) = st.scripts.instances.get_mut(&id) {
                inst.cx.walk = handles;
            }
            first
        }
        (PendingIo::Open { name, append }, ScriptStoreResult::File(Some(data))) => {
            let pos = if append { data.len() } else { 0 };
            let Some(inst) = st.scripts.instances.get_mut(&id) else {
                return;
            };
            let f = OpenFile {
                name,
                data,
                pos,
                dirty: false,
            };
            if inst.cx.files.len() >= MAX_OPEN {
                0
            } else {
                let h = inst.cx.next_file.max(1);
                inst.cx.next_file = h.wrapping_add(1).max(1);
                inst.cx.files.insert(h, f);
                h
            }
        }
        (PendingIo::FileType, ScriptStoreResult::Info { kind, .. }) => i32::from(kind),
        (PendingIo::FileSize, ScriptStoreResult::Info { size, .. }) => {
            i32::try_from(size).unwrap_or(i32::MAX)
        }
        (PendingIo::CopyTo { to }, ScriptStoreResult::File(Some(data))) => {
            let req = request(st, ScriptStoreOp::WriteFile { name: to, data }, Some(id));
            if let Some(inst) = st.scripts.instances.get_mut(&id) {
                inst.cx.pending_io = Some(PendingIo::Done);
                inst.wait = Wait::Store { req };
            }
            return;
        }
        (PendingIo::Int, ScriptStoreResult::Int(v)) => v,
        (PendingIo::Int, ScriptStoreResult::Value(shared::internal::ValueDto::Int(v))) => v,
        (PendingIo::Value { .. }, ScriptStoreResult::Value(v)) => {
            table::wake(st, id, crate::sim::runtime::remote::from_dto(&v));
            return;
        }
        (PendingIo::Value { text: true }, _) => {
            table::wake(st, id, Value::Str(RStr::EMPTY));
            return;
        }
        _ => 0,
    };
    table::wake(st, id, Value::Int(value));
}

/// `ReadBytes(bank, file, offset, count)` / `WriteBytes(...)`: between a bank and a file;
/// the bytes moved.
pub fn bank_io(
    h: &mut ZoneHost<'_>,
    n: Native,
    a: Args<'_>,
    cx: &mut script::vm::NativeCx<'_>,
) -> NResult {
    let (bank, file, off, count) = (a.int(0), a.int(1), a.int(2), a.int(3));
    let (Ok(off), Ok(count)) = (usize::try_from(off), usize::try_from(count)) else {
        return int(0);
    };
    let Some(b) = cx.banks.bank_mut(bank) else {
        return int(0);
    };
    let Some(end) = off.checked_add(count).filter(|&e| e <= b.len()) else {
        return int(0);
    };
    let Some(f) = h.cx.files.get_mut(&file) else {
        return int(0);
    };
    let moved = if n == Native::ReadBytes {
        let data = read_bytes(f, count);
        if let Some(dst) = b.get_mut(off..off + data.len()) {
            dst.copy_from_slice(&data);
        }
        data.len()
    } else {
        let src = b.get(off..end).map(<[u8]>::to_vec).unwrap_or_default();
        write_bytes(f, &src)?;
        src.len()
    };
    int(i32::try_from(moved).unwrap_or(i32::MAX))
}

#[cfg(test)]
mod tests {
    use super::sandbox;

    #[test]
    fn names_stay_inside_the_store() {
        assert_eq!(sandbox(b"League1.DATA").as_deref(), Ok("league1.data"));
        assert_eq!(sandbox(b"Mail\\Bob.txt").as_deref(), Ok("mail/bob.txt"));
        assert_eq!(sandbox(b"./a//b").as_deref(), Ok("a/b"));
        for bad in [
            &b"..\\..\\boot.ini"[..],
            b"C:\\x",
            b"/etc/passwd",
            b"\\x",
            b"a/../b",
            b"",
            b"  ",
            b"a\x01b",
            b"a|b",
            b".",
        ] {
            assert!(sandbox(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
