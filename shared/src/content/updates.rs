//! Realm Crafter's update list (`Data\Server Data\Files.dat`) and the files its updater
//! downloads: pure functions over bytes, no file system (the walk of a client's `Data`
//! folder is `rccontent build-updates`, reading and writing is [`super::fs`]).
//!
//! What the original does (RydeTec/rcce2):
//! * **`Files.dat`** (`LoadUpdateFiles`, `UpdatesServer.bb`): records until the end of the
//!   file, each `name` as Blitz's `ReadString` (`len i32` little-endian, then the bytes)
//!   and `checksum i32` ([`parse_files_dat`], [`write_files_dat`]). The editor writes it
//!   with `WriteString`/`WriteInt` (`DoUpdates`, `GUE.bb`).
//! * **The checksum** (`CountChecksum`, `MainMenu.bb` and `GUE.bb`): the wrapping sum of
//!   the file read as little-endian 32-bit words; Blitz's `ReadInt` at a tail of fewer than
//!   4 bytes fills the rest of the word with zeros ([`checksum`]).
//! * **The download name** (`MainMenu.bb`): `UpdateHost$ + Upper$(name)` with `\` replaced
//!   by `!!`, then each space by `!!!`, then `.DAT` ([`download_name`]).
//! * **The download** is a bzip2 stream (`bz2(1, 0, "Temp.dat", "Temp2.dat")` through
//!   `libbz2w.dll`; the editor compressed with `bz2(0, 9, …)`, level 9): [`compress`],
//!   [`decompress`].
//!
//! Names are checked when the list is read ([`check_name`]): the original sends a name's
//! length as one byte and trusts the name as a path, so a longer name corrupts the list
//! and a name such as `..\x` or `C:\x` makes every client write outside its game folder.
//! Here such a list is refused at load, with the entry that is wrong (docs/operations.md,
//! "The update host").

use std::io::{Read as _, Write as _};

use crate::proto::UpdateFileEntry;
use crate::wire::RcString;

/// The update list's file name, in `Server Data` (or the update directory).
pub const FILES_DAT: &str = "Files.dat";

/// Longest name (bytes): the list's packet carries its length in one byte.
pub const MAX_NAME_LEN: usize = 255;

/// Most files in a list: the packet's total is a `u16`.
pub const MAX_FILES: usize = 65_535;

/// What is wrong with a `Files.dat`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateListError {
    /// The file ends inside a record.
    #[error("entry {index}: the file ends inside it (at byte {offset})")]
    Truncated {
        /// The record (0-based).
        index: usize,
        /// Where the file ended.
        offset: usize,
    },
    /// A name's length is negative or longer than [`MAX_NAME_LEN`].
    #[error("entry {index}: name length {len} is not 1..=255")]
    BadLength {
        /// The record (0-based).
        index: usize,
        /// The length read.
        len: i32,
    },
    /// A name that is not a safe relative path of the game folder.
    #[error("entry {index}: name {name:?} {why}")]
    BadName {
        /// The record (0-based).
        index: usize,
        /// The name (Latin-1).
        name: String,
        /// Why.
        why: &'static str,
    },
    /// More than [`MAX_FILES`] records.
    #[error("more than {MAX_FILES} files")]
    TooMany,
}

/// Whether `name` is a file the update list may name: 1..=255 bytes, a relative path of
/// the game folder with `\` separators (no empty, `.` or `..` part, no drive, no `/`), no
/// control characters, and none of `?`, `#`, `%` (the client puts the name in a URL as it
/// is, where those would end or escape the path). `Err` says why not.
pub fn check_name(name: &[u8]) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err("must be 1..=255 bytes");
    }
    if name.iter().any(|&b| b < 0x20 || b == 0x7F) {
        return Err("has a control character");
    }
    if name.iter().any(|b| b"/:?#%".contains(b)) {
        return Err("has one of / : ? # % (names are relative paths with \\ separators)");
    }
    for part in name.split(|&b| b == b'\\') {
        if part.is_empty() {
            return Err("has an empty path part (a leading, trailing or doubled \\)");
        }
        if part.iter().all(|&b| b == b'.') {
            return Err("has a . or .. part");
        }
    }
    Ok(())
}

/// Reads a `Files.dat` (Realm Crafter's `LoadUpdateFiles`): `name` (`len i32`, bytes),
/// `checksum i32`, repeated to the end. An empty file is an empty list. Never panics.
#[doc(alias = "LoadUpdateFiles")]
pub fn parse_files_dat(bytes: &[u8]) -> Result<Vec<UpdateFileEntry>, UpdateListError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let index = out.len();
        if index >= MAX_FILES {
            return Err(UpdateListError::TooMany);
        }
        let truncated = UpdateListError::Truncated {
            index,
            offset: bytes.len(),
        };
        let len = read_i32(bytes, at).ok_or_else(|| truncated.clone())?;
        let n = usize::try_from(len)
            .ok()
            .filter(|n| (1..=MAX_NAME_LEN).contains(n))
            .ok_or(UpdateListError::BadLength { index, len })?;
        let name_end = at + 4 + n;
        let name = bytes
            .get(at + 4..name_end)
            .ok_or_else(|| truncated.clone())?;
        let crc = read_i32(bytes, name_end).ok_or(truncated)?;
        check_name(name).map_err(|why| UpdateListError::BadName {
            index,
            name: RcString(name.to_vec()).to_latin1(),
            why,
        })?;
        out.push(UpdateFileEntry {
            crc: u32::from_le_bytes(crc.to_le_bytes()),
            name: RcString(name.to_vec()),
        });
        at = name_end + 4;
    }
    Ok(out)
}

fn read_i32(bytes: &[u8], at: usize) -> Option<i32> {
    let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(i32::from_le_bytes(b))
}

/// Writes a `Files.dat` as Realm Crafter's editor does (`WriteString` name, `WriteInt`
/// checksum, per file). [`parse_files_dat`] reads it back when every name passes
/// [`check_name`].
pub fn write_files_dat(files: &[UpdateFileEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(files.iter().map(|f| 8 + f.name.len()).sum());
    for f in files {
        let len = u32::try_from(f.name.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(f.name.as_bytes());
        out.extend_from_slice(&f.crc.to_le_bytes());
    }
    out
}

/// Realm Crafter's file checksum (`CountChecksum`): the wrapping sum of the bytes read as
/// little-endian 32-bit words, a last partial word padded with zeros (Blitz's `ReadInt`
/// reads what is left into a zeroed int).
#[doc(alias = "CountChecksum")]
pub fn checksum(bytes: &[u8]) -> u32 {
    bytes.chunks(4).fold(0u32, |sum, c| {
        let mut w = [0u8; 4];
        for (d, s) in w.iter_mut().zip(c) {
            *d = *s;
        }
        sum.wrapping_add(u32::from_le_bytes(w))
    })
}

/// The name the client downloads a file as, below its update host: the name with `\`
/// replaced by `!!`, then each space by `!!!`, upper-cased (ASCII, as Blitz's `Upper$`),
/// then `.DAT`. `Data\Game Data\Hosts.dat` → `DATA!!GAME!!!DATA!!HOSTS.DAT.DAT`.
pub fn download_name(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 8);
    for &b in name {
        match b {
            b'\\' => out.extend_from_slice(b"!!"),
            b' ' => out.extend_from_slice(b"!!!"),
            b => out.push(b.to_ascii_uppercase()),
        }
    }
    out.extend_from_slice(b".DAT");
    out
}

/// The list name of a file of the client's game folder from its path parts (folders, then
/// the file), joined with `\` as the client reads names: `["Data", "Textures", "a.png"]` →
/// `Data\Textures\a.png`. `Err` when a part is not Latin-1 or the name fails
/// [`check_name`].
pub fn client_name<'a>(parts: impl IntoIterator<Item = &'a str>) -> Result<RcString, String> {
    let joined = parts.into_iter().collect::<Vec<_>>().join("\\");
    let name = RcString::from_latin1(&joined)
        .ok_or_else(|| format!("{joined:?}: a character the client cannot name (not Latin-1)"))?;
    check_name(name.as_bytes()).map_err(|why| format!("{joined:?} {why}"))?;
    Ok(name)
}

/// Compresses a file as the client downloads it: one bzip2 stream, block size 900k
/// (level 9, as Realm Crafter's editor made them).
pub fn compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut e = bzip2::write::BzEncoder::new(
        Vec::with_capacity(bytes.len() / 2 + 64),
        bzip2::Compression::best(),
    );
    e.write_all(bytes)?;
    e.finish()
}

/// Decompresses a downloaded file (a bzip2 stream), refusing one that would be larger than
/// `limit` bytes.
pub fn decompress(bytes: &[u8], limit: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    bzip2::read::BzDecoder::new(bytes)
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)?;
    if u64::try_from(out.len()).unwrap_or(u64::MAX) > limit {
        return Err(std::io::Error::other(format!(
            "decompresses to more than {limit} bytes"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(name: &str, crc: u32) -> UpdateFileEntry {
        UpdateFileEntry {
            crc,
            name: RcString::from(name),
        }
    }

    #[test]
    fn the_checksum_sums_little_endian_words_and_pads_the_tail() {
        assert_eq!(checksum(b""), 0);
        assert_eq!(checksum(&[1, 0, 0, 0, 2, 0, 0, 0]), 3);
        // A tail of 1..3 bytes is the low bytes of a zeroed word.
        assert_eq!(checksum(&[1, 0, 0, 0, 0x05]), 6);
        assert_eq!(checksum(&[0, 0, 0, 0, 0x34, 0x12]), 0x1234);
        // Wrapping, as Blitz's 32-bit int.
        assert_eq!(checksum(&[0xFF, 0xFF, 0xFF, 0xFF, 2, 0, 0, 0]), 1);
    }

    #[test]
    fn download_names_are_mangled_as_the_client_does() {
        assert_eq!(
            download_name(b"Data\\Game Data\\Hosts.dat"),
            b"DATA!!GAME!!!DATA!!HOSTS.DAT.DAT"
        );
        assert_eq!(download_name(b"game.exe"), b"GAME.EXE.DAT");
        // Only ASCII letters change case.
        assert_eq!(
            download_name(&[b'a', 0xE9]),
            vec![b'A', 0xE9, b'.', b'D', b'A', b'T']
        );
    }

    #[test]
    fn files_dat_reads_what_the_editor_writes() {
        let files = vec![
            entry("Data\\Textures\\Menu\\Updates.PNG", 0xDEAD_BEEF),
            entry("Data\\Game Data\\Hosts.dat", 7),
        ];
        let bytes = write_files_dat(&files);
        assert_eq!(&bytes[..4], &30u32.to_le_bytes());
        assert_eq!(parse_files_dat(&bytes).unwrap(), files);
        assert_eq!(parse_files_dat(&[]).unwrap(), vec![]);
    }

    #[test]
    fn a_bad_files_dat_names_the_entry() {
        let good = write_files_dat(&[entry("a", 1)]);
        let mut cut = good.clone();
        cut.pop();
        assert_eq!(
            parse_files_dat(&cut),
            Err(UpdateListError::Truncated {
                index: 0,
                offset: 8
            })
        );
        let mut neg = good.clone();
        neg.extend_from_slice(&(-5i32).to_le_bytes());
        assert_eq!(
            parse_files_dat(&neg),
            Err(UpdateListError::BadLength { index: 1, len: -5 })
        );
        for (name, why) in [
            ("..\\evil.exe", "has a . or .. part"),
            ("C:\\x", "has one of"),
            ("\\x", "empty path part"),
            ("a\\\\b", "empty path part"),
            ("a/b", "has one of"),
            ("a?b", "has one of"),
        ] {
            let e = parse_files_dat(&write_files_dat(&[entry(name, 1)]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "{name}: {e}");
        }
        let long = write_files_dat(&[entry(&"x".repeat(256), 1)]);
        assert!(matches!(
            parse_files_dat(&long),
            Err(UpdateListError::BadLength { len: 256, .. })
        ));
    }

    #[test]
    fn client_names_join_with_backslashes() {
        assert_eq!(
            client_name(["Data", "Game Data", "Hosts.dat"]).unwrap(),
            RcString::from("Data\\Game Data\\Hosts.dat")
        );
        assert!(client_name(["Data", "日本.txt"]).is_err());
        assert!(client_name(["Data", "a?.txt"]).is_err());
    }

    #[test]
    fn bzip2_round_trips_and_is_bounded() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let z = compress(&data).unwrap();
        assert_eq!(&z[..3], b"BZh");
        assert_eq!(z[3], b'9');
        assert_eq!(decompress(&z, 10_000).unwrap(), data);
        assert!(decompress(&z, 9_999).is_err());
        assert!(decompress(b"not bzip2", 100).is_err());
    }

    fn name_strategy() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            proptest::collection::vec(
                prop_oneof![
                    b'a'..=b'z',
                    b'A'..=b'Z',
                    Just(b' '),
                    Just(b'.'),
                    0xC0u8..=0xFF
                ],
                1..12,
            )
            .prop_filter("not all dots", |p| !p.iter().all(|&b| b == b'.')),
            1..5,
        )
        .prop_map(|parts| parts.join(&b'\\'))
        .prop_filter("fits", |n| n.len() <= MAX_NAME_LEN)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = parse_files_dat(&bytes);
        }

        #[test]
        fn files_dat_round_trips(
            files in proptest::collection::vec((name_strategy(), any::<u32>()), 0..20)
        ) {
            let files: Vec<UpdateFileEntry> = files
                .into_iter()
                .map(|(n, crc)| UpdateFileEntry { crc, name: RcString(n) })
                .collect();
            let bytes = write_files_dat(&files);
            prop_assert_eq!(parse_files_dat(&bytes).unwrap(), files);
        }

        #[test]
        fn the_checksum_is_additive_over_whole_words(
            a in proptest::collection::vec(any::<u8>(), 0..64),
            b in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut a = a;
            a.truncate(a.len() / 4 * 4);
            let mut ab = a.clone();
            ab.extend_from_slice(&b);
            prop_assert_eq!(checksum(&ab), checksum(&a).wrapping_add(checksum(&b)));
        }

        #[test]
        fn download_names_have_no_separators_or_spaces(name in name_strategy()) {
            let d = download_name(&name);
            prop_assert!(!d.contains(&b'\\') && !d.contains(&b' '));
            prop_assert!(d.ends_with(b".DAT"));
            prop_assert!(!d.iter().any(u8::is_ascii_lowercase));
        }
    }
}
