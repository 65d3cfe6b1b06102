//! The `rccontent` binary: `check` and `convert`, exit codes and one-line errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rccontent(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rccontent"))
        .args(args)
        .output()
        .unwrap()
}

fn sample_dir() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/rc-sample-data");
    if p.join("Misc.dat").is_file() {
        Some(p)
    } else {
        eprintln!(
            "skipping: Realm Crafter sample data not found at {}",
            p.display()
        );
        None
    }
}

#[test]
fn check_demo_world() {
    let demo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("worlds/demo");
    let out = rccontent(&[Path::new("check"), &demo]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("native world directory:"), "{text}");
    assert!(text.contains("Meadow"), "{text}");
    assert!(text.contains("warnings: 0"), "{text}");
}

#[test]
fn errors_exit_2_with_one_line() {
    let out = rccontent(&[Path::new("check"), Path::new("/nonexistent/world")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("rccontent: error: /nonexistent/world"),
        "{err}"
    );
}

#[test]
fn convert_then_check() {
    let Some(dir) = sample_dir() else { return };
    let out_dir = std::env::temp_dir().join(format!("rccontent-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = rccontent(&[Path::new("convert"), &dir, &out_dir]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = rccontent(&[Path::new("check"), &out_dir]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("areas: 4"), "{text}");
    assert!(text.contains("templates: 3 (1 playable)"), "{text}");
    // Converting a native world is refused: convert reads Realm Crafter data only.
    let again = out_dir.join("again");
    let out = rccontent(&[Path::new("convert"), &out_dir, &again]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn build_updates_from_a_data_folder() {
    use shared::content::updates;
    let Some(dir) = sample_dir() else { return };
    let out_dir = std::env::temp_dir().join(format!("rccontent-updates-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = rccontent(&[Path::new("build-updates"), &dir, &out_dir]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = updates::parse_files_dat(&std::fs::read(out_dir.join(updates::FILES_DAT)).unwrap())
        .unwrap();
    let names: Vec<String> = list.iter().map(|e| e.name.to_latin1()).collect();
    // Relative to the game folder, with the client's separators; Misc.dat is skipped as
    // Realm Crafter's editor skipped it.
    assert!(
        names.contains(&"Data\\Fixed Attributes.dat".to_owned()),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("Data\\Areas\\")),
        "{names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n.eq_ignore_ascii_case("Data\\Misc.dat"))
    );
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    for e in &list {
        let rel: PathBuf = e.name.to_latin1().split('\\').skip(1).collect();
        let original = std::fs::read(dir.join(&rel)).unwrap();
        assert_eq!(
            e.crc,
            updates::checksum(&original),
            "{}",
            e.name.to_latin1()
        );
        let download = shared::wire::RcString(updates::download_name(e.name.as_bytes()));
        let packed = std::fs::read(out_dir.join(download.to_latin1())).unwrap();
        assert_eq!(updates::decompress(&packed, 1 << 24).unwrap(), original);
    }
    assert!(out_dir.join("DATA!!FIXED!!!ATTRIBUTES.DAT.DAT").is_file());
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn a_world_reads_its_update_list_beside_it() {
    use shared::content::{fs, native, updates};
    let dir = std::env::temp_dir().join(format!("rccontent-files-dat-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let toml = dir.join("demo.toml");
    std::fs::write(
        &toml,
        native::to_single_toml(&shared::content::demo_world()).unwrap(),
    )
    .unwrap();
    assert!(fs::load_world(&toml).unwrap().0.update_files.is_empty());
    let list = vec![shared::proto::UpdateFileEntry {
        crc: 42,
        name: shared::wire::RcString::from("Data\\Game Data\\Hosts.dat"),
    }];
    std::fs::write(dir.join("Files.dat"), updates::write_files_dat(&list)).unwrap();
    assert_eq!(fs::load_world(&toml).unwrap().0.update_files, list);
    // A malformed list stops the load, naming the file and the entry.
    let mut bad = updates::write_files_dat(&list);
    bad.truncate(bad.len() - 1);
    std::fs::write(dir.join("Files.dat"), bad).unwrap();
    let e = fs::load_world(&toml).unwrap_err().to_string();
    assert!(e.contains("Files.dat") && e.contains("entry 0"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
