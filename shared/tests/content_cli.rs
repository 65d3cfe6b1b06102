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
